// Runs dnc for tests: in-process through main() with test streams, or as the built binary (bin/dnc.js → dist/).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { DncError } from '../../src/errors.js';
import { createTestIO } from '../../src/io.js';
import { main } from '../../src/main.js';
import type { Interrupts } from '../../src/io.js';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BIN = path.join(REPO_ROOT, 'bin', 'dnc.js');

/**
 * A home folder that does not exist, so no test reads the developer's ~/.config/dnc. Its name is new for each test
 * process: a folder another run (or a program a test starts with this HOME) left behind can never make it exist,
 * and whatever makes it during this process is removed when the process ends.
 */
export const NO_HOME = path.join(os.tmpdir(), `dnc-test-no-home-${process.pid}-${randomBytes(6).toString('hex')}`);
process.once('exit', () => rmSync(NO_HOME, { recursive: true, force: true }));

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** The whole environment dnc sees (nothing is inherited in-process). */
  env?: Record<string, string | undefined>;
  stdin?: string;
  /** Pretend stdout/stderr are terminals. */
  tty?: boolean;
  homedir?: string;
  cwd?: string;
  interrupts?: Interrupts;
}

/** The DncError `promise` rejects with (failing the test if it resolves or throws anything else). */
export async function dncErrorOf(promise: Promise<unknown>): Promise<DncError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(DncError);
  return err as DncError;
}

/** `dnc ...argv` in this process: main() with buffered streams. */
export async function runDnc(argv: string[], options: RunOptions = {}): Promise<RunResult> {
  const io = createTestIO({ stdin: options.stdin, tty: options.tty });
  const code = await main(argv, {
    io,
    env: options.env ?? {},
    homedir: options.homedir ?? NO_HOME,
    cwd: options.cwd,
    interrupts: options.interrupts,
  });
  return { code, stdout: io.out(), stderr: io.err() };
}

export interface SpawnOptions {
  /** Added to a minimal environment (PATH, and HOME pointing nowhere); undefined removes a variable. */
  env?: Record<string, string | undefined>;
  /** Written to stdin, which is then closed (stdin is closed at once when absent). */
  stdin?: string;
  cwd?: string;
  timeoutMs?: number;
  /** Hears the child's stderr as it comes, for a test that waits for a line before acting. */
  onStderr?: (text: string) => void;
  /** A program dnc runs under, with its arguments (`/usr/bin/time -v -o FILE` measures its peak memory). */
  under?: string[];
}

export interface SpawnResult extends RunResult {
  signal: NodeJS.Signals | null;
}

/** Throws a clear message when dist/ has not been built (spawned tests run the compiled code). */
export function assertBuilt(): void {
  if (!existsSync(path.join(REPO_ROOT, 'dist', 'bundle', 'dnc.js'))) {
    throw new Error('dist/ is missing: run `npm run build` (npm test does it) before the spawned tests');
  }
}

/** `node bin/dnc.js ...argv` as a child process. */
export function spawnDnc(argv: string[], options: SpawnOptions = {}): Promise<SpawnResult> {
  assertBuilt();
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: NO_HOME };
  for (const [k, v] of Object.entries(options.env ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return new Promise((resolve, reject) => {
    const [program, ...args] = [...(options.under ?? []), process.execPath, BIN, ...argv];
    const child = spawn(program!, args, { cwd: options.cwd ?? REPO_ROOT, env, stdio: 'pipe' });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      options.onStderr?.(stderr);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 20_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, signal, stdout, stderr });
    });
    child.stdin.end(options.stdin ?? '');
  });
}
