// Pipes, special paths and collisions, as a shell uses them: the built binary, spawned, with real FIFOs and files.
import { execFile, execFileSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  statSync,
  symlinkSync,
  linkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CALLING_COLUMNS, DNC_COLUMNS } from '../../src/results/columns.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import { assertBuilt, BIN, spawnDnc } from '../helpers/cli.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { lookedUp, sandbox, scratch, sha256 } from '../batch/helpers.js';

let sb: Sandbox;
let env: Record<string, string>;
const tmp = scratch();
const LIST = 'name,phone\nAnn,+12025550100\nBob,+12025550101\n';

beforeAll(async () => {
  assertBuilt();
  ({ sb, env } = await sandbox());
  // A scratch home: journals of `-o -` go to the state folder.
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

/** A shell command line (for redirections spawnDnc cannot make: `>>`, `< /dev/null`), with the tests' environment. */
function shell(command: string, cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      'sh',
      ['-c', command],
      { cwd, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 20_000 },
      (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? -1) : 0, stdout, stderr });
      },
    );
  });
}

/** A FIFO made in `d`, and what `cat` reads from it (it opens it for reading, as a dialler's import would). */
function fifoRead(d: string, name: string): { fifo: string; reader: Promise<string> } {
  const fifo = path.join(d, name);
  execFileSync('mkfifo', [fifo]);
  const reader = new Promise<string>((resolve, reject) =>
    execFile('cat', [fifo], (err, out) => (err ? reject(err) : resolve(out))),
  );
  return { fifo, reader };
}

function dir(name: string): string {
  const d = path.join(tmp.dir, name);
  mkdirSync(d, { recursive: true });
  return d;
}

describe('dnc batch: standard input and standard output', () => {
  it('`dnc batch -` reads the list from stdin and, with no -o, writes the results to stdout and the summary to stderr', async () => {
    const d = dir('stdin');
    sb.reset();
    const r = await spawnDnc(['batch', '-', '--quiet'], { env, cwd: d, stdin: LIST });
    expect(r.code, r.stderr).toBe(0);
    writeFileSync(path.join(d, 'got.csv'), r.stdout);
    const rows = readCsvIndependently(path.join(d, 'got.csv'));
    expect(rows.map((x) => [x[0], x[1], x[4]])).toEqual([
      ['name', 'phone', 'dnc_result'],
      ['Ann', '+12025550100', 'callable'],
      ['Bob', '+12025550101', 'do_not_call'],
    ]);
    expect(lookedUp(sb).sort()).toEqual(['+12025550100', '+12025550101']);
    // Running it again resumes from the journal in the state folder: nothing is sent twice.
    sb.reset();
    const again = await spawnDnc(['batch', '-', '-o', '-', '--quiet'], { env, cwd: d, stdin: LIST });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe(r.stdout);
    expect(lookedUp(sb)).toEqual([]);
  });

  it('`-o -` with --json keeps stdout for the CSV: the summary object goes to stderr', async () => {
    const d = dir('json');
    const input = path.join(d, 'in.csv');
    writeFileSync(input, LIST);
    const r = await spawnDnc(['batch', input, '-o', '-', '--json'], { env, cwd: d });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.split('\n')[0]).toBe(['name', 'phone', ...DNC_COLUMNS, ...CALLING_COLUMNS].join(','));
    const summary = JSON.parse(r.stderr.trim().split('\n').pop()!) as { rows: number; output: string };
    expect(summary.rows).toBe(2);
    expect(existsSync(path.join(d, '-'))).toBe(false);
    expect(existsSync(path.join(d, '-.journal.sqlite'))).toBe(false);
  });

  it('stdin into a file output spools the list beside the journal; a different list on a rerun is refused', async () => {
    const d = dir('spool');
    const out = path.join(d, 'out.csv');
    const r = await spawnDnc(['batch', '-', '-o', out, '--quiet'], { env, cwd: d, stdin: LIST });
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(path.join(d, 'out.csv.journal.input.csv'), 'utf8')).toBe(LIST);
    expect(statSync(path.join(d, 'out.csv.journal.input.csv')).mode & 0o777).toBe(0o600);
    const other = await spawnDnc(['batch', '-', '-o', out], { env, cwd: d, stdin: `${LIST}Cy,+12025550102\n` });
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('E_JOURNAL_MISMATCH');
    expect(readFileSync(path.join(d, 'out.csv.journal.input.csv'), 'utf8')).toBe(LIST);
  });
});

describe('dnc batch: outputs that are not plain files', () => {
  it('writes through a FIFO (never replacing it) and keeps the journal out of /dev', async () => {
    const d = dir('fifo');
    const input = path.join(d, 'in.csv');
    writeFileSync(input, LIST);
    const { fifo, reader } = fifoRead(d, 'results.fifo');
    const r = await spawnDnc(['batch', input, '-o', fifo, '--quiet'], { env, cwd: d });
    expect(r.code, r.stderr).toBe(0);
    const text = await reader;
    expect(text.split('\n')[1]).toMatch(/^Ann,\+12025550100,\+12025550100,US,callable,/);
    expect(lstatSync(fifo).isFIFO()).toBe(true);
    expect(existsSync(`${fifo}.journal.sqlite`)).toBe(false);
  });

  it('a list written through a FIFO: the output verifies, without waiting on the FIFO for a writer', async () => {
    const d = dir('fifo-list');
    const input = path.join(d, 'in.csv');
    writeFileSync(input, LIST);
    const { fifo, reader } = fifoRead(d, 'callable.fifo');
    const r = await spawnDnc(['batch', input, '-o', 'out.csv', '--callable-out', fifo, '--quiet'], { env, cwd: d });
    expect(r.code, r.stderr).toBe(0);
    expect(await reader).toBe('name,phone\nAnn,+12025550100\n');
    const v = await spawnDnc(['verify', 'out.csv'], { env, cwd: d, timeoutMs: 10_000 });
    expect(v.signal, 'dnc verify hung on the FIFO').toBeNull();
    expect(v.code, v.stderr).toBe(0);
    expect(v.stdout).toContain('fit to dial');
  });

  it('-o /dev/stdout writes to the pipe and never replaces the device node', async () => {
    const d = dir('devstdout');
    const input = path.join(d, 'in.csv');
    writeFileSync(input, LIST);
    const before = lstatSync('/dev/stdout');
    const r = await spawnDnc(['batch', input, '-o', '/dev/stdout', '--quiet'], { env, cwd: d });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.split('\n')[2]).toMatch(/^Bob,\+12025550101,/);
    const after = lstatSync('/dev/stdout');
    expect([after.isSymbolicLink(), after.ino]).toEqual([before.isSymbolicLink(), before.ino]);
    expect(existsSync('/dev/stdout.journal.sqlite')).toBe(false);
  });

  it('-o /dev/stdout into a file the shell appends to (>>) appends: the file is neither replaced nor given a journal', async () => {
    const d = dir('devstdout-append');
    writeFileSync(path.join(d, 'in.csv'), LIST);
    writeFileSync(path.join(d, 'log.csv'), 'kept,from before\n');
    const r = await shell(`"${process.execPath}" "${BIN}" batch in.csv -o /dev/stdout --quiet >> log.csv`, d);
    expect(r.code, r.stderr).toBe(0);
    const log = readFileSync(path.join(d, 'log.csv'), 'utf8').split('\n');
    expect(log[0]).toBe('kept,from before');
    expect(log[1]).toBe(['name', 'phone', ...DNC_COLUMNS, ...CALLING_COLUMNS].join(','));
    expect(log[3]).toMatch(/^Bob,\+12025550101,/);
    expect(readdirSync(d).sort()).toEqual(['in.csv', 'log.csv']);
  });

  it('-o /dev/stderr or a list there (stderr appended to a file) is refused before anything is read: the file behind it is neither replaced nor given a journal', async () => {
    const d = dir('devstderr');
    writeFileSync(path.join(d, 'in.csv'), LIST);
    writeFileSync(path.join(d, 'err.log'), 'kept from before\n');
    for (const args of ['-o /dev/stderr', '-o out.csv --callable-out /dev/stderr']) {
      const r = await shell(`"${process.execPath}" "${BIN}" batch in.csv ${args} 2>> err.log`, d);
      expect(r.code, args).toBe(2);
      const log = readFileSync(path.join(d, 'err.log'), 'utf8');
      expect(log.startsWith('kept from before\n'), args).toBe(true);
      expect(log).toContain('is standard error, where dnc writes its progress and summary');
    }
    expect(readdirSync(d).sort()).toEqual(['err.log', 'in.csv']);
    // Cron's shape, everything to /dev/null but the lists: /dev/null as -o and as stderr is the same device, and is fine.
    const cron = await shell(
      `"${process.execPath}" "${BIN}" batch in.csv -o /dev/null --callable-out callable.csv > /dev/null 2>&1`,
      d,
    );
    expect(cron.code).toBe(0);
    expect(readCsvIndependently(path.join(d, 'callable.csv'))).toEqual([
      ['name', 'phone'],
      ['Ann', '+12025550100'],
    ]);
  });

  it('a named list with standard input on /dev/null (as in cron) may write -o /dev/null: only a list read from stdin is guarded', async () => {
    const d = dir('devnull');
    writeFileSync(path.join(d, 'in.csv'), LIST);
    const r = await shell(
      `"${process.execPath}" "${BIN}" batch in.csv -o /dev/null --callable-out callable.csv --quiet < /dev/null`,
      d,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(readCsvIndependently(path.join(d, 'callable.csv'))).toEqual([
      ['name', 'phone'],
      ['Ann', '+12025550100'],
    ]);
    expect(lstatSync('/dev/null').isCharacterDevice()).toBe(true);
    // Read from standard input, the list is guarded: -o may not be the file standard input comes from.
    const guarded = await shell(`"${process.execPath}" "${BIN}" batch - -o in.csv < in.csv`, d);
    expect(guarded.code).toBe(2);
    expect(guarded.stderr).toContain('[E_PATH_COLLISION]');
    expect(readFileSync(path.join(d, 'in.csv'), 'utf8')).toBe(LIST);
  });

  it('refuses a symbolic link as -o, to a file or to nothing (E_OUTPUT_LINK): the file it names is left alone', async () => {
    const d = dir('symlink');
    const input = path.join(d, 'in.csv');
    writeFileSync(input, LIST);
    writeFileSync(path.join(d, 'real.csv'), 'old\n');
    symlinkSync('real.csv', path.join(d, 'link.csv'));
    const r = await spawnDnc(['batch', input, '-o', 'link.csv', '--quiet'], { env, cwd: d });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('[E_OUTPUT_LINK]');
    expect(r.stderr).toContain(`name the file itself (${path.join(realpathSync(d), 'real.csv')})`);
    expect(readlinkSync(path.join(d, 'link.csv'))).toBe('real.csv');
    expect(readFileSync(path.join(d, 'real.csv'), 'utf8')).toBe('old\n');
    // Named itself, the file is replaced.
    const real = await spawnDnc(['batch', input, '-o', 'real.csv', '--quiet'], { env, cwd: d });
    expect(real.code, real.stderr).toBe(0);
    expect(readCsvIndependently(path.join(d, 'real.csv'))).toHaveLength(3);
    symlinkSync('nowhere.csv', path.join(d, 'dangling.csv'));
    const dangling = await spawnDnc(['batch', input, '-o', 'dangling.csv'], { env, cwd: d });
    expect(dangling.code).toBe(2);
    expect(dangling.stderr).toContain('[E_OUTPUT_LINK]');
    expect(existsSync(path.join(d, 'nowhere.csv'))).toBe(false);
  });
});

describe('dnc batch: collisions and unwritable folders are refused before anything is read or sent', () => {
  const cases: Array<{ name: string; files: Record<string, string>; argv: string[]; says: string }> = [
    {
      name: 'the input named as the manifest of -o',
      files: { 'calls.manifest.json': LIST },
      argv: ['calls.manifest.json', '-o', 'calls.csv'],
      says: 'the input and the manifest',
    },
    {
      name: 'the input named as the journal of -o (with --restart)',
      files: { 'o.csv.journal.sqlite': LIST },
      argv: ['o.csv.journal.sqlite', '-o', 'o.csv', '--restart'],
      says: 'the input and the journal',
    },
    {
      name: 'a list named as the manifest',
      files: { 'in.csv': LIST },
      argv: ['in.csv', '-o', 'r.csv', '--callable-out', 'r.manifest.json'],
      says: '--callable-out and the manifest',
    },
    {
      name: 'the output as a hard link of the input',
      files: { 'in.csv': LIST },
      argv: ['in.csv', '-o', 'hard.csv'],
      says: 'the input and -o',
    },
    {
      name: 'both lists on one file',
      files: { 'in.csv': LIST },
      argv: ['in.csv', '--callable-out', 'l.csv', '--suppressed-out', './l.csv'],
      says: '--callable-out and --suppressed-out',
    },
    // Results to stdout (journal not yet known): the files named are still checked before the list is read (read, its NUL would be exit 3).
    {
      name: 'a list named as the input, results to stdout',
      files: { 'in.csv': 'name,phone\nAnn,\0\n' },
      argv: ['in.csv', '-o', '-', '--callable-out', 'in.csv'],
      says: 'the input and --callable-out',
    },
  ];
  for (const c of cases) {
    it(`${c.name}: exit 2, the file untouched, nothing sent`, async () => {
      const d = dir(`collide-${c.name.replace(/\W+/g, '-')}`);
      for (const [name, text] of Object.entries(c.files)) writeFileSync(path.join(d, name), text);
      if (c.argv.includes('hard.csv')) linkSync(path.join(d, 'in.csv'), path.join(d, 'hard.csv'));
      const hashes = Object.keys(c.files).map((n) => sha256(path.join(d, n)));
      sb.reset();
      const r = await spawnDnc(['batch', ...c.argv], { env, cwd: d });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain('[E_PATH_COLLISION]');
      expect(r.stderr).toContain(c.says);
      expect(Object.keys(c.files).map((n) => sha256(path.join(d, n)))).toEqual(hashes);
      expect(lookedUp(sb)).toEqual([]);
    });
  }

  it('a full output folder is found before the first lookup: exit 3 naming the folder, nothing sent', async () => {
    const d = dir('full');
    writeFileSync(path.join(d, 'in.csv'), LIST);
    const mount = path.join(d, 'small');
    mkdirSync(mount);
    let mounted = false;
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16k', 'tmpfs', mount], { stdio: 'ignore' });
      mounted = true;
    } catch {
      // Not allowed to mount here: /proc refuses new files just as surely (the probe is the same code).
    }
    const folder = mounted ? mount : '/proc';
    try {
      sb.reset();
      const r = await spawnDnc(['batch', 'in.csv', '-o', path.join(folder, 'out.csv')], { env, cwd: d });
      expect(r.code, r.stderr).toBe(3);
      expect(r.stderr).toContain('[E_OUTPUT_UNWRITABLE]');
      expect(r.stderr).toContain(mounted ? `in ${mount}: no space left on the disk` : 'in /proc:');
      expect(lookedUp(sb)).toEqual([]);
    } finally {
      if (mounted) execFileSync('umount', [mount]);
    }
  });
});
