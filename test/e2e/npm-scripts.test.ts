// The package's npm scripts as a user and CI run them: `npm install -g .` from the clone, `npm test`'s closing summary line.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { assertBuilt, REPO_ROOT } from '../helpers/cli.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'dnc-npm-scripts-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** `npm ARGS` in the clone, with a minimal environment; its exit status and output. */
function npm(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; out: string }> {
  const child = spawn('npm', ['--no-update-notifier', ...args], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: scratch, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, out })));
}

describe("npm install -g . (the README's install, from a built clone)", () => {
  it('is quiet: no install-scripts warning (dnc runs no script at install), and installs a dnc that runs with its man page', async () => {
    assertBuilt();
    // npm 11 warns of every install script (preinstall, install, postinstall, and prepare of a folder) that no
    // allowScripts covers, and a package's own allowScripts does not count in a global install.
    const scripts = (
      JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
    ).scripts;
    expect(Object.keys(scripts).filter((s) => ['preinstall', 'install', 'postinstall', 'prepare'].includes(s))).toEqual(
      [],
    );
    const prefix = path.join(scratch, 'prefix');
    const r = await npm(['install', '-g', '--prefix', prefix, '.', '--no-audit', '--no-fund']);
    expect(r.code, r.out).toBe(0);
    expect(r.out).not.toMatch(/install-scripts|allowScripts|allow-scripts/);
    const version = spawn(path.join(prefix, 'bin', 'dnc'), ['--version'], { env: { PATH: process.env.PATH ?? '' } });
    let out = '';
    version.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    expect(await new Promise((resolve) => version.on('close', resolve))).toBe(0);
    expect(out.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    expect(existsSync(path.join(prefix, 'share', 'man', 'man1', 'dnc.1'))).toBe(true);
  }, 120_000);
});

describe('npm test', () => {
  it("prints the summary line when tests fail too, and exits with vitest's status", async () => {
    // A suite of its own (one test passing, one failing), so the run is short and the clone's report untouched.
    const suite = path.join(scratch, 'suite');
    mkdirSync(suite);
    writeFileSync(
      path.join(suite, 'a.test.mjs'),
      "test('passes', () => {});\ntest('fails', () => { throw new Error('on purpose'); });\n",
    );
    // --ignore-scripts: not pretest's build, which other test files' spawned dnc reads meanwhile.
    const failing = await npm(['test', '--ignore-scripts', '--', '--root', suite, '--globals'], {
      DNC_TEST_REPORT: path.join(scratch, 'report.json'),
    });
    expect(failing.out).toMatch(/^vitest: 1 passed, 1 failed, 0 skipped$/m);
    expect(failing.code, failing.out).toBe(1);
    writeFileSync(path.join(suite, 'a.test.mjs'), "test('passes', () => {});\n");
    const passing = await npm(['test', '--ignore-scripts', '--', '--root', suite, '--globals'], {
      DNC_TEST_REPORT: path.join(scratch, 'report.json'),
    });
    expect(passing.out).toMatch(/^vitest: 1 passed, 0 failed, 0 skipped$/m);
    expect(passing.code, passing.out).toBe(0);
  }, 120_000);

  it('says plainly that the PostgreSQL half was skipped; in CI (CI=true) that skip fails the run', async () => {
    const suite = path.join(scratch, 'pg-suite');
    mkdirSync(suite);
    // What test/helpers/postgres.ts leaves without a server: a skipped "[postgres] …" test.
    writeFileSync(
      path.join(suite, 'a.test.mjs'),
      "test('passes', () => {});\ntest.skip('[postgres] the contract: skipped', () => {});\n",
    );
    const args = ['test', '--ignore-scripts', '--', '--root', suite, '--globals'];
    const report = { DNC_TEST_REPORT: path.join(scratch, 'pg-report.json') };
    const here = await npm(args, report);
    expect(here.out).toMatch(
      /^vitest: 1 passed, 0 failed, 1 skipped\nvitest: the PostgreSQL half was SKIPPED \(1 file\(s\)\): no server;/m,
    );
    expect(here.code, here.out).toBe(0);
    const ci = await npm(args, { ...report, CI: 'true' });
    expect(ci.out).toContain('the PostgreSQL half was SKIPPED');
    expect(ci.code, ci.out).toBe(1);
  }, 120_000);
});
