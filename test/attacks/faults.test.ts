// Faults: a full disk mid-batch, a stale lock whose pid now belongs to another process, timeouts of any size.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchJournal } from '../../src/journal/journal.js';
import { processStartTime } from '../../src/context.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { createServiceClient } from '../../src/service/client.js';
import { BIN, NO_HOME, runDnc, spawnDnc, type RunResult } from '../helpers/cli.js';

let sb: Sandbox;
beforeAll(async () => {
  sb = await startSandbox({ port: 0, creditLimit: 1_000_000, seed: 4 });
});
afterAll(async () => {
  await sb.close();
});

const env = () => ({ DNC_BASE_URL: sb.baseUrl, DNC_API_KEY: sb.apiKey });

function callList(dir: string, n: number): void {
  const rows = ['name,phone'];
  // Last three digits never 990–999 (the sandbox's invalid and failing numbers): every row gets a verdict.
  for (let i = 0; i < n; i++)
    rows.push(`n${i},+1202555${String(Math.floor(i / 990) * 1000 + (i % 990)).padStart(4, '0')}`);
  writeFileSync(path.join(dir, 'calls.csv'), `${rows.join('\n')}\n`);
}

/** A small filesystem of its own (a tmpfs) where the platform lets us mount one; null where it does not. */
function smallDisk(): string | null {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-full-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', dir], { stdio: 'ignore' });
    return dir;
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return null;
  }
}

function integrity(journal: string): string {
  const db = new Database(journal, { readonly: true });
  try {
    return (db.pragma('integrity_check', { simple: true }) as string) ?? '';
  } finally {
    db.close();
  }
}

function expectDiskFullReport(r: RunResult, journal: string): void {
  expect(r.code, r.stderr).toBe(3);
  expect(r.stderr).toContain(`dnc: error [E_DISK_FULL]: the disk is full: cannot write the batch journal ${journal}`);
  expect(r.stderr).toMatch(/\d+ lookup\(s\) answered \(and maybe charged\) could not be stored/);
  expect(r.stderr).not.toMatch(/SqliteError|at .*\.js:\d+|internal error/);
}

describe('a full disk during lookups', () => {
  it('ends with a clear error naming the journal (exit 3), the numbers in flight reported, the journal consistent and resumable', async () => {
    const disk = smallDisk();
    if (disk) {
      // The real thing: an 8 MB tmpfs, mostly taken by ballast.
      try {
        callList(disk, 1500);
        writeFileSync(path.join(disk, 'ballast'), Buffer.alloc(6_700_000));
        const journal = path.join(disk, 'out.csv.journal.sqlite');
        const full = await spawnDnc(['batch', 'calls.csv', '-o', 'out.csv'], {
          cwd: disk,
          env: env(),
          timeoutMs: 60_000,
        });
        expectDiskFullReport(full, journal);
        expect(integrity(journal)).toBe('ok');
        // Space is given back (the write-ahead log needs room to grow: a journal is not compacted until it is checkpointed).
        rmSync(path.join(disk, 'ballast'));
        execFileSync('mount', ['-o', 'remount,size=96m', disk]);
        const resumed = await spawnDnc(['batch', 'calls.csv', '-o', 'out.csv'], {
          cwd: disk,
          env: env(),
          timeoutMs: 60_000,
        });
        // The answers that could not be stored may have been charged: not sent again unless asked (exit 7 until then).
        expect(resumed.code, resumed.stderr).toBe(7);
        expect(resumed.stderr).toMatch(
          /\d+ number\(s\) were sent by the last run, which stopped before their answers came: they may have been charged and are not sent again/,
        );
        expect(integrity(journal)).toBe('ok');
        // Finished with a verdict on every row (the list holds none of the sandbox's failing numbers).
        const resent = await spawnDnc(['batch', 'calls.csv', '-o', 'out.csv', '--resend-unanswered'], {
          cwd: disk,
          env: env(),
          timeoutMs: 60_000,
        });
        expect(resent.code, resent.stderr).toBe(0);
        expect(integrity(journal)).toBe('ok');
      } finally {
        execFileSync('umount', [disk]);
        rmSync(disk, { recursive: true, force: true });
      }
      return;
    }
    // No mount here: the same run in-process, with the journal's commits failing as SQLite fails on a full disk.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-full-'));
    const original = BatchJournal.prototype.atomically;
    let commits = 0;
    BatchJournal.prototype.atomically = function <T>(this: BatchJournal, fn: () => T): T {
      if (++commits > 20) throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
      return original.call(this, fn) as T;
    };
    try {
      callList(dir, 300);
      const journal = path.join(dir, 'out.csv.journal.sqlite');
      const full = await runDnc(['batch', 'calls.csv', '-o', 'out.csv'], { cwd: dir, env: env() });
      expectDiskFullReport(full, journal);
      BatchJournal.prototype.atomically = original;
      expect(integrity(journal)).toBe('ok');
      const resumed = await runDnc(['batch', 'calls.csv', '-o', 'out.csv'], { cwd: dir, env: env() });
      expect(resumed.code, resumed.stderr).toBe(7);
      expect(resumed.stderr).toContain('add --resend-unanswered to send them again');
      const resent = await runDnc(['batch', 'calls.csv', '-o', 'out.csv', '--resend-unanswered'], {
        cwd: dir,
        env: env(),
      });
      expect(resent.code, resent.stderr).toBe(0);
    } finally {
      BatchJournal.prototype.atomically = original;
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('a stale lock', () => {
  it('whose pid now names another process is taken over, even when the lock predates start times', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-lock-'));
    // Another live process (not dnc) that got the pid of a killed batch.
    const other = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      callList(dir, 3);
      const first = await spawnDnc(['batch', 'calls.csv', '-o', 'out.csv'], { cwd: dir, env: env() });
      expect(first.code, first.stderr).toBe(0);
      const lock = path.join(dir, 'out.csv.journal.sqlite.lock');
      // A lock recording the pid and another start time.
      writeFileSync(lock, `${other.pid}\n${(processStartTime(other.pid!) ?? Date.now()) - 3_600_000}\n`);
      const stale = await spawnDnc(['batch', 'calls.csv', '-o', 'out.csv', '--restart'], { cwd: dir, env: env() });
      expect(stale.code, stale.stderr).toBe(0);
      // A lock from before start times were recorded (pid only), written before that process started.
      writeFileSync(lock, `${other.pid}\n`);
      const hourAgo = new Date(Date.now() - 3_600_000);
      utimesSync(lock, hourAgo, hourAgo);
      const old = await spawnDnc(['batch', 'calls.csv', '-o', 'out.csv', '--restart'], { cwd: dir, env: env() });
      expect(old.code, old.stderr).toBe(0);
      // A lock of a live holder (this process, its real start) still refuses.
      writeFileSync(lock, `${process.pid}\n${processStartTime(process.pid) ?? ''}\n`);
      const held = await spawnDnc(['batch', 'calls.csv', '-o', 'out.csv'], { cwd: dir, env: env() });
      expect(held.code).toBe(2);
      expect(held.stderr).toContain(`another dnc batch (pid ${process.pid}) is using`);
    } finally {
      other.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('records the holder start time beside its pid', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-lock-'));
    try {
      mkdirSync(dir, { recursive: true });
      const { acquireJournalLock } = await import('../../src/journal/journal.js');
      const { readFileSync } = await import('node:fs');
      const journal = path.join(dir, 'x.journal.sqlite');
      const lock = acquireJournalLock(journal, { pid: 4242, isAlive: () => false, startTime: () => 1_700_000_000_000 });
      expect(readFileSync(`${journal}.lock`, 'utf8')).toBe('4242\n1700000000000\n');
      lock.release();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('timeouts of any size', () => {
  it('gives up after --timeout even below undici’s one-second timer resolution', async () => {
    const slow = await startSandbox({ port: 0, latencyMs: 3_000 });
    try {
      const errors: Array<string | undefined> = [];
      const client = createServiceClient({
        baseUrl: slow.baseUrl,
        apiKey: slow.apiKey,
        timeoutMs: 20,
        retries: 0,
        onExchange: (e) => errors.push(e.error),
      });
      const started = performance.now();
      await expect(client.usage()).rejects.toMatchObject({ code: 'E_TIMEOUT' });
      // A correctness bound, not a speed target: 20 ms used to wait a full second or more.
      expect(performance.now() - started).toBeLessThan(800);
      // What --verbose prints for the attempt: words, not the abort's DOMException code (it said "✗ 23").
      expect(errors).toEqual(['timed out (--timeout 20 ms)']);
      await client.close?.();
    } finally {
      await slow.close();
    }
  });
});

describe('a reader that has gone', () => {
  it('is no error (dnc … | head): exit 0 and nothing on stderr, whether stdout was a stream yet or not', async () => {
    // stdout is written straight to its descriptor until a command needs the stream (src/io.ts processIO): a write
    // that fails there (EPIPE) goes on through the stream, whose EPIPE listener ends dnc quietly.
    for (const argv of [['--help'], ['check', '--help'], ['completion', 'bash'], ['help', 'exit-codes']]) {
      const child = spawn(process.execPath, [BIN, ...argv], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { PATH: process.env.PATH ?? '', HOME: NO_HOME },
      });
      child.stdout.destroy(); // before dnc has written anything: its first write meets a closed pipe
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const code = await new Promise((resolve) => child.on('close', resolve));
      expect({ argv, code, stderr }).toEqual({ argv, code: 0, stderr: '' });
    }
  });
});
