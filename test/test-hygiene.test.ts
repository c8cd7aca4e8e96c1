// The suite itself: a test passes on a fresh machine in any order, so none names a fixed path in the temp folder
// (another test, or an earlier run, may have left it, or may find what this one leaves). Each test makes its own
// folder (mkdtemp) and removes it.
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/cli.js';

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) return files(p);
    return /\.(ts|mjs|js)$/.test(p) ? [p] : [];
  });
}

/** Every place in test/ and bench/ (but this file) that `find` finds, as FILE:LINE: TEXT. */
function offendersOf(find: (text: string) => string[]): string[] {
  return [...files(path.join(REPO_ROOT, 'test')), ...files(path.join(REPO_ROOT, 'bench'))]
    .filter((f) => f !== path.join(REPO_ROOT, 'test', 'test-hygiene.test.ts'))
    .flatMap((f) => find(readFileSync(f, 'utf8')).map((hit) => `${path.relative(REPO_ROOT, f)}:${hit}`));
}

/** Places where a path in the temp folder is named by a fixed string rather than made fresh. */
export function fixedTempPaths(text: string): string[] {
  const found: string[] = [];
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    // tmpdir() joined with a plain string literal (no template with a pid or random part): the same path every run.
    if (/tmpdir\(\)\s*,\s*'[^']*'\s*\)/.test(line) && !/mkdtemp/.test(line)) found.push(`${i + 1}: ${line.trim()}`);
    // A literal /tmp/ path in code (not a comment).
    if (/['"`]\/tmp\//.test(line) && !/^\s*(\/\/|\*)/.test(line)) found.push(`${i + 1}: ${line.trim()}`);
  });
  return found;
}

describe('the test suite', () => {
  it('names no fixed path in the temp folder: every test makes its own', () => {
    expect(offendersOf(fixedTempPaths)).toEqual([]);
  });

  it('finds what it is looking for (a fixed name is caught, a fresh one is not)', () => {
    expect(fixedTempPaths("const home = path.join(os.tmpdir(), 'dnc-test-no-home');")).toHaveLength(1);
    expect(fixedTempPaths("const f = '/tmp/dnc-x.csv';")).toHaveLength(1);
    expect(fixedTempPaths("const d = mkdtempSync(path.join(os.tmpdir(), 'dnc-x-'));")).toEqual([]);
    expect(fixedTempPaths('const d = path.join(os.tmpdir(), `dnc-${process.pid}-${random}`);')).toEqual([]);
  });
});

/**
 * Folders of test/ that test no one src/ folder but the whole: attacks on the CLI, the contract every store keeps,
 * the docs, end-to-end runs, shared helpers, the suite's global setup, and the team's shared store end to end.
 */
const CROSS_CUTTING = new Set(['attacks', 'contract', 'docs', 'e2e', 'helpers', 'setup', 'team']);
/** Test files at the root of test/ about the suite or the code as a whole, not one src/ file. */
const ROOT_TESTS = new Set(['architecture.test.ts', 'test-hygiene.test.ts']);
/** Folders that hold data a test reads, not tests. */
const DATA_FOLDERS = new Set(['fixtures']);

/** Where the test tree leaves src/'s shape: folders (and root test files) that name nothing in src/. */
export function strayTestPaths(testDir: string, srcDir: string): string[] {
  const stray: string[] = [];
  const walk = (rel: string) => {
    for (const name of readdirSync(path.join(testDir, rel))) {
      const relName = path.join(rel, name);
      if (statSync(path.join(testDir, relName)).isDirectory()) {
        if (DATA_FOLDERS.has(name) || (rel === '' && CROSS_CUTTING.has(name))) continue;
        if (!existsSync(path.join(srcDir, relName))) stray.push(`test/${relName}/`);
        walk(relName);
      } else if (rel === '' && name.endsWith('.test.ts') && !ROOT_TESTS.has(name)) {
        if (!existsSync(path.join(srcDir, name.replace(/\.test\.ts$/, '.ts')))) stray.push(`test/${name}`);
      }
    }
  };
  walk('');
  return stray;
}

describe('the test tree', () => {
  it('mirrors src/: each folder names a src/ folder (but the cross-cutting ones), each root test a src/ file', () => {
    expect(strayTestPaths(path.join(REPO_ROOT, 'test'), path.join(REPO_ROOT, 'src'))).toEqual([]);
  });

  it('finds a folder or root test that names nothing in src/', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'dnc-test-tree-'));
    try {
      for (const d of [
        'src/batch',
        'src/stores/postgres',
        'test/batch',
        'test/evidence',
        'test/e2e',
        'test/stores/pg',
      ]) {
        mkdirSync(path.join(root, d), { recursive: true });
      }
      for (const f of ['src/config.ts', 'test/config.test.ts', 'test/clock.test.ts', 'test/architecture.test.ts']) {
        writeFileSync(path.join(root, f), '');
      }
      expect(strayTestPaths(path.join(root, 'test'), path.join(root, 'src')).sort()).toEqual([
        'test/clock.test.ts',
        'test/evidence/',
        'test/stores/pg/',
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

/**
 * Fixed sleeps in a test: a promise a timer resolves after a set time (`new Promise((r) => setTimeout(r, ms))`,
 * `setTimeout(resolve, ms)`), or node:timers/promises. Waiting for the event itself (test/helpers/wait.ts) is
 * neither too short on a loaded machine nor too long on a quiet one; the injected clock (a sandbox's timers, a `now`)
 * steps time.
 */
export function fixedSleeps(text: string): string[] {
  const found: string[] = [];
  text.split('\n').forEach((line, i) => {
    if (/^\s*(\/\/|\*)/.test(line)) return;
    if (/setTimeout\(\s*(r|res|resolve|done|wake)\s*,/.test(line) || /['"]node:timers\/promises['"]/.test(line))
      found.push(`${i + 1}: ${line.trim()}`);
  });
  return found;
}

/**
 * The fixed sleeps left, each deliberate (time passing is what its test is about, or what it simulates), with its
 * comment saying why. A new one is a test that waits for time instead of an event: wait for the event instead.
 */
const DELIBERATE_SLEEPS: Record<string, number> = {
  'test/helpers/wait.ts': 1, // the suite's one poll, every few milliseconds until a deadline
  'test/helpers/service-proxy.ts': 1, // a service slow to answer
  'test/listen/session.test.ts': 2, // a render that takes time; pushes spread over seconds for the throttle
  'test/attacks/resources.test.ts': 1, // a connection is stalled once it has been for stalledMs of real time
  'test/team/machines.test.ts': 1, // a colleague's start, shorter than the answers a killed member awaits
  'test/team/store-restart.test.ts': 1, // how long the server is down: a restart, shorter than the bound
  'test/team/server-crash.test.ts': 1, // how long the server is down after a crash, shorter than the bound
};

describe('fixed sleeps', () => {
  const deliberate = Object.values(DELIBERATE_SLEEPS).reduce((a, b) => a + b) - 1;
  it(`are the ${deliberate} deliberate ones (and the one poll) at most`, () => {
    const counts: Record<string, number> = {};
    for (const f of files(path.join(REPO_ROOT, 'test'))) {
      const rel = path.relative(REPO_ROOT, f).split(path.sep).join('/');
      if (rel === 'test/test-hygiene.test.ts') continue;
      const n = fixedSleeps(readFileSync(f, 'utf8')).length;
      if (n > (DELIBERATE_SLEEPS[rel] ?? 0)) counts[rel] = n;
    }
    expect(counts, 'files with more fixed sleeps than allowed: wait for the event (test/helpers/wait.ts)').toEqual({});
  });

  it('are found in the forms tests write them', () => {
    expect(fixedSleeps('    await new Promise((r) => setTimeout(r, 200));')).toHaveLength(1);
    expect(fixedSleeps('await new Promise<void>((resolve) => setTimeout(resolve, 50));')).toHaveLength(1);
    expect(fixedSleeps("import { setTimeout as sleep } from 'node:timers/promises';")).toHaveLength(1);
    expect(fixedSleeps('const t = setTimeout(() => child.kill(), 20_000); // a deadline')).toEqual([]);
    expect(fixedSleeps('// await new Promise((r) => setTimeout(r, 200));')).toEqual([]);
  });
});

/**
 * Places where a test runs a Python of its own choosing ('python3', '/usr/bin/python3') instead of the one
 * test/helpers/python.ts finds: on a machine whose PATH's python3 is not Debian's, that one may lack openpyxl while
 * the check in .ci/run found it in the other (issue 53).
 */
export function barePythons(text: string): string[] {
  return text
    .split('\n')
    .flatMap((line, i) =>
      !/^\s*(\/\/|\*)/.test(line) && /['"`](\/usr\/bin\/)?python3?['"`]/.test(line) ? [`${i + 1}: ${line.trim()}`] : [],
    );
}

describe('the independent readers', () => {
  it('are reached one way: no test or bench names a Python itself (test/helpers/python.ts does)', () => {
    expect(offendersOf(barePythons)).toEqual([]);
  });

  it('finds a bare Python in the forms tests write it', () => {
    // (The bare form is built, so that a scan of the suite's own text does not take this line for one.)
    const bare = ['python', '3'].join('');
    expect(barePythons(`execFileSync('${bare}', ['-c', py]);`)).toHaveLength(1);
    expect(barePythons("    '/usr/bin/python3',")).toHaveLength(1);
    expect(barePythons('spawn("python", [script])')).toHaveLength(1);
    expect(barePythons("execFileSync(pythonWithOpenpyxl(), ['-c', py]);")).toEqual([]);
    expect(barePythons("// a bare 'python3' may lack openpyxl")).toEqual([]);
  });

  it('scripts/oracles.mjs asks each candidate itself: one without openpyxl is passed over, none found says so', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-oracles-'));
    try {
      // A PATH whose python3 cannot import openpyxl, and a candidate named by DNC_TEST_PYTHON that can't run at all.
      const fake = path.join(dir, 'python3');
      writeFileSync(fake, '#!/bin/sh\nexit 1\n', { mode: 0o755 });
      const script = path.join(REPO_ROOT, 'scripts', 'oracles.mjs');
      const env = { ...process.env, PATH: `${dir}:${process.env.PATH}`, DNC_TEST_PYTHON: path.join(dir, 'none') };
      const r = spawnSync(process.execPath, [script, 'python'], { encoding: 'utf8', env });
      const debianHasIt = spawnSync('/usr/bin/python3', ['-c', 'import openpyxl'], { stdio: 'ignore' }).status === 0;
      if (debianHasIt) {
        expect(r.status, r.stderr).toBe(0);
        expect(r.stdout.trim()).toBe('/usr/bin/python3');
      } else {
        expect(r.status).toBe(1);
        expect(r.stderr).toMatch(/no Python here can import openpyxl .*apt-get install -y python3-openpyxl/);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the benches and scripts', () => {
  // Plain JavaScript that no type check reads: a syntax error would show only when the bench or soak runs.
  it('parse: node --check accepts every .mjs of bench/ and scripts/', () => {
    const broken = [...files(path.join(REPO_ROOT, 'bench')), ...files(path.join(REPO_ROOT, 'scripts'))]
      .filter((f) => f.endsWith('.mjs'))
      .flatMap((f) => {
        const r = spawnSync(process.execPath, ['--check', f], { encoding: 'utf8' });
        return r.status === 0 ? [] : [`${path.relative(REPO_ROOT, f)}: ${r.stderr.split('\n').slice(0, 4).join(' ')}`];
      });
    expect(broken).toEqual([]);
  });
});
