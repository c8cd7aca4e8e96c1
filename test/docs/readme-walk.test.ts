// The README's walk calls `dnc`: it says where that comes from, and the line it gives for a clone that is not
// installed makes a working `dnc` in a shell that has none. The install time it states is the one measured.
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { assertBuilt, REPO_ROOT } from '../helpers/cli.js';
import { VERSION } from '../../src/version.js';

const readme = readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
const walk = readme.slice(readme.indexOf('## A five-minute walk'));
const beforeFirstCommand = walk.slice(0, walk.indexOf('```console'));
const bin = mkdtempSync(path.join(os.tmpdir(), 'dnc-readme-walk-'));
afterAll(() => rmSync(bin, { recursive: true, force: true }));

describe("the README's five-minute walk", () => {
  it('says, before its first command, that `dnc` is the installed one, or how to get it from the clone', () => {
    expect(beforeFirstCommand).toContain('npm install -g .');
    expect(beforeFirstCommand).toMatch(/```sh\nalias dnc=/);
  });

  it('its line for a clone makes `dnc` run the clone in a shell without one (bash)', () => {
    assertBuilt();
    const line = /```sh\n(alias dnc=[^\n]*)\n```/.exec(beforeFirstCommand)![1]!;
    // A PATH with node and the system's tools, and no dnc on it.
    symlinkSync(process.execPath, path.join(bin, 'node'));
    const env = { PATH: `${bin}:/usr/bin:/bin`, HOME: bin };
    const script = `shopt -s expand_aliases\ncommand -v dnc && exit 9\n${line}\ndnc --version`;
    const out = execFileSync('bash', ['-c', script], { cwd: REPO_ROOT, env, encoding: 'utf8' });
    expect(out.trim()).toBe(VERSION);
  });

  it('states the install time as measured: 1 to 5 minutes for npm ci', () => {
    expect(readme).toMatch(/npm ci {2,}# installs the dependencies \(better-sqlite3 compiles: 1 to 5 minutes\)/);
    expect(readme).not.toContain('about 2 minutes');
  });
});
