// Issue 17, "one voice": a count or an amount of credits that people read is written the same way in
// every command (9,560 / 10,000), piped or not; only the tab-separated tables and --json carry plain
// integers, for scripts. Run as processes against a sandbox, with a list long enough to need a separator.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { assertBuilt, spawnDnc, type SpawnResult } from '../helpers/cli.js';

const KEY = 'sbx_e2e_one_voice_5c1d9a';
let sb: Sandbox;
let dir: string;
const suffixes: number[] = [];

beforeAll(async () => {
  assertBuilt();
  sb = await startSandbox({ port: 0, key: KEY, creditLimit: 12_345, seed: 17 });
  dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-one-voice-'));
  // 1,200 distinct US numbers, none ending 990-999 (the sandbox's failures): every lookup succeeds, half callable.
  for (let n = 0; suffixes.length < 1200; n++) if (n % 1000 < 990) suffixes.push(n);
  const rows = suffixes.map((n, i) => `n${i},+1202555${String(n).padStart(4, '0')}`);
  writeFileSync(path.join(dir, 'big.csv'), `name,phone\n${rows.join('\n')}\n`);
});

afterAll(async () => {
  await sb.close();
  rmSync(dir, { recursive: true, force: true });
});

function dnc(argv: string[]): Promise<SpawnResult> {
  return spawnDnc(argv, {
    cwd: dir,
    timeoutMs: 120_000,
    env: {
      DNC_BASE_URL: sb.baseUrl,
      DNC_API_KEY: KEY,
      XDG_STATE_HOME: path.join(dir, 'state'),
      XDG_CACHE_HOME: path.join(dir, 'cache'),
    },
  });
}

describe('numbers for people carry thousands separators in every command, piped as on a terminal', () => {
  it(
    'check, batch --dry-run, batch and verify write 1,200 and 12,345 alike; the tables stay plain',
    { timeout: 180_000 },
    async () => {
      const check = await dnc(['check', '+12025550101']);
      expect(check.code).toBe(0);
      expect(check.stdout).toContain('balance 12,344 / 12,345');

      const dry = await dnc(['batch', 'big.csv', '--dry-run']);
      expect(dry.code, dry.stderr).toBe(0);
      expect(dry.stdout).toContain('rows: 1,200   distinct numbers: 1,200   rows with an invalid number: 0');
      // The balance in the words and form `dnc check` uses.
      expect(dry.stdout).toContain('balance: 12,344 / 12,345');
      expect(dry.stdout).toMatch(
        /credit guard: 1,200 number\(s\) to look up, (about|at least) 1,200 credit\(s\).*; 12,344 credit\(s\) remain/,
      );
      expect(dry.stdout).toContain('US\t1200\t');

      const run = await dnc(['batch', 'big.csv', '-o', 'big.results.csv']);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toContain(
        '1,200 row(s), 1,200 distinct number(s) to look up, 0 row(s) with a number that cannot be valid (not sent)',
      );
      expect(run.stdout).toContain('rows: 1,200   distinct numbers: 1,200   lookups sent this run: 1,200');
      expect(run.stdout).toMatch(/^credits used: 1,200 for this batch, 1,200 in this run/m);
      // The tab-separated tables, for scripts: plain integers.
      expect(run.stdout).toMatch(/^US\t1200\t600\t600\t0$/m);

      // check's closing line over many numbers (read from stdin).
      const many = await spawnDnc(['check', '-'], {
        cwd: dir,
        timeoutMs: 120_000,
        stdin: `${suffixes
          .slice(0, 1001)
          .map((n) => `+1202555${String(n).padStart(4, '0')}`)
          .join('\n')}\n`,
        env: {
          DNC_BASE_URL: sb.baseUrl,
          DNC_API_KEY: KEY,
          XDG_STATE_HOME: path.join(dir, 'state'),
          XDG_CACHE_HOME: path.join(dir, 'cache'),
        },
      });
      expect(many.code, many.stderr).toBe(0);
      expect(many.stderr).toContain('1,001 numbers: 501 callable, 500 on a register; 1,001 credit(s) charged');

      const verify = await dnc(['verify', 'big.results.csv']);
      expect(verify.code, verify.stderr).toBe(0);
      expect(verify.stdout).toContain('rows       1,200 (600 callable, 600 do_not_call); 1,200 distinct number(s)');

      // The lines of a rerun that reuses verdicts, and of the internal list, in the same voice.
      const reuse = await dnc(['batch', 'big.csv', '-o', 'again.csv', '--reuse-within', '1d']);
      expect(reuse.code, reuse.stderr).toBe(0);
      expect(reuse.stderr).toContain('1,200 number(s) reused from earlier lookups');
      const imported = await dnc(['suppress', 'import', 'big.csv', '--reason', 'asked us']);
      expect(imported.code, imported.stderr).toBe(0);
      expect(imported.stderr).toMatch(/^1,200 number\(s\) /m);
      const scrubbed = await dnc(['batch', 'big.csv', '-o', 'internal.csv']);
      expect(scrubbed.code, scrubbed.stderr).toBe(0);
      expect(scrubbed.stderr).toContain('1,200 number(s) on the internal do-not-call list');
    },
  );
});

describe("dnc listen's status line", () => {
  it('writes its counts with separators, as every other command does', async () => {
    const { statusLine } = await import('../../src/commands/listen.js');
    const status = {
      received: 1500,
      stored: 1234,
      duplicates: 1001,
      orphans: 0,
      reconciled: 0,
      conflicts: 0,
      rejected: 0,
      storeFailures: 0,
      overCapacity: 0,
      pending: 2500,
      unsent: 1200,
      oldest: null,
      lost: 1000,
      renders: 3,
      uptimeMs: 1000,
    };
    expect(statusLine(status, new Date())).toBe(
      'received 1,234 · duplicates 1,001 · orphans 0 · pending 2,500 · not sent yet 1,200 · lost 1,000',
    );
  });
});
