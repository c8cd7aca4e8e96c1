// Issue 38: an attacker who can write the results folder (not the state folder) plants links where dnc writes.
// Every output path that exists as a symbolic link is refused (exit 2, E_OUTPUT_LINK) before anything is sent, and the
// file it names is left as it was; results replacing a readable file are private (0600) all the same.
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.js';
import { assertBuilt, spawnDnc } from '../helpers/cli.js';
import { lookedUp, sandbox, scratch } from '../batch/helpers.js';

let sb: Sandbox;
let env: Record<string, string>;
const tmp = scratch();
const LIST = 'name,phone\nAnn,+12025550100\nBob,+12025550101\n';
const VICTIM_TEXT = "the user's own file\n";
const mode = (p: string) => statSync(p).mode & 0o777;

beforeAll(async () => {
  assertBuilt();
  ({ sb, env } = await sandbox());
  env = {
    ...env,
    HOME: path.join(tmp.dir, 'home'),
    XDG_STATE_HOME: path.join(tmp.dir, 'state'),
    XDG_CACHE_HOME: path.join(tmp.dir, 'cache'),
  };
});
afterAll(async () => {
  await sb.close();
  tmp.remove();
});

let n = 0;
/** A results folder with the list, and a file of the user's (0644) elsewhere that a link will name. */
function folder(): { d: string; victim: string } {
  const d = path.join(tmp.dir, `case-${n++}`);
  mkdirSync(path.join(d, 'mine'), { recursive: true });
  writeFileSync(path.join(d, 'in.csv'), LIST);
  const victim = path.join(d, 'mine', 'notes.txt');
  writeFileSync(victim, VICTIM_TEXT);
  chmodSync(victim, 0o644);
  return { d, victim };
}

describe('planted links: refused, the file they name untouched, nothing sent', () => {
  const cases: Array<{ name: string; link: string; argv: string[] }> = [
    { name: 'the default results path', link: 'in.results.csv', argv: ['batch', 'in.csv'] },
    { name: '-o', link: 'o.csv', argv: ['batch', 'in.csv', '-o', 'o.csv'] },
    {
      name: '--callable-out',
      link: 'call.csv',
      argv: ['batch', 'in.csv', '-o', 'o.csv', '--callable-out', 'call.csv'],
    },
    { name: '--suppressed-out', link: 's.csv', argv: ['batch', 'in.csv', '-o', 'o.csv', '--suppressed-out', 's.csv'] },
    { name: '--review-out', link: 'r.csv', argv: ['batch', 'in.csv', '-o', 'o.csv', '--review-out', 'r.csv'] },
    { name: '--dial-out', link: 'dial.txt', argv: ['batch', 'in.csv', '-o', 'o.csv', '--dial-out', 'dial.txt'] },
    { name: 'the journal beside -o', link: 'o.csv.journal.sqlite', argv: ['batch', 'in.csv', '-o', 'o.csv'] },
    { name: 'the manifest beside -o', link: 'o.manifest.json', argv: ['batch', 'in.csv', '-o', 'o.csv'] },
  ];
  for (const c of cases) {
    it(`${c.name}`, async () => {
      const { d, victim } = folder();
      symlinkSync(victim, path.join(d, c.link));
      sb.reset();
      const r = await spawnDnc(c.argv, { env, cwd: d });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain('[E_OUTPUT_LINK]');
      expect(r.stderr).toContain('symbolic link');
      expect(readFileSync(victim, 'utf8')).toBe(VICTIM_TEXT);
      expect(mode(victim)).toBe(0o644);
      expect(lstatSync(path.join(d, c.link)).isSymbolicLink()).toBe(true);
      expect(lookedUp(sb)).toEqual([]);
    });
  }

  it('a link to nowhere is refused too, and nothing is created where it points', async () => {
    const { d } = folder();
    const planted = path.join(d, 'mine', 'planted.csv');
    symlinkSync(planted, path.join(d, 'o.csv.journal.sqlite'));
    const r = await spawnDnc(['batch', 'in.csv', '-o', 'o.csv'], { env, cwd: d });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('[E_OUTPUT_LINK]');
    expect(existsSync(planted)).toBe(false);
  });

  it('dnc report -o and dnc suppress export -o refuse a link as well', async () => {
    const { d, victim } = folder();
    const ok = await spawnDnc(['batch', 'in.csv', '-o', 'o.csv', '--quiet'], { env, cwd: d });
    expect(ok.code, ok.stderr).toBe(0);
    symlinkSync(victim, path.join(d, 'report.html'));
    const report = await spawnDnc(['report', 'o.csv', '-o', 'report.html'], { env, cwd: d });
    expect(report.code, report.stderr).toBe(2);
    expect(report.stderr).toContain('[E_OUTPUT_LINK]');
    symlinkSync(victim, path.join(d, 'export.csv'));
    const exported = await spawnDnc(['suppress', 'export', '-o', 'export.csv'], { env, cwd: d });
    expect(exported.code, exported.stderr).toBe(2);
    expect(exported.stderr).toContain('[E_OUTPUT_LINK]');
    expect(readFileSync(victim, 'utf8')).toBe(VICTIM_TEXT);
  });
});

describe('outputs holding numbers are private', () => {
  it('results, lists and the dial list replacing 0644 files come out 0600', async () => {
    const { d } = folder();
    const outs = ['o.csv', 'call.csv', 'dial.txt'];
    for (const f of outs) {
      writeFileSync(path.join(d, f), 'old\n');
      chmodSync(path.join(d, f), 0o644);
    }
    const r = await spawnDnc(
      ['batch', 'in.csv', '-o', 'o.csv', '--callable-out', 'call.csv', '--dial-out', 'dial.txt', '--quiet'],
      { env, cwd: d },
    );
    expect(r.code, r.stderr).toBe(0);
    for (const f of outs) expect(mode(path.join(d, f)), f).toBe(0o600);
  });
});
