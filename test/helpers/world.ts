// Shared by the tests that run dnc in-process (verify, batch, compliance, stores, listen): a scratch folder with its
// own state and cache folders, a sandbox, dnc run in-process with a clock.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestIO } from '../../src/io.js';
import { main } from '../../src/main.js';
import { startSandbox, type Sandbox, type SandboxOptions } from '../../src/sandbox/index.js';
import { NO_HOME } from './cli.js';
import { testInterrupts } from './interrupts.js';
import { waitFor } from './wait.js';

export interface World {
  dir: string;
  sb: Sandbox;
  /** DNC_BASE_URL, DNC_API_KEY, and XDG_STATE_HOME / XDG_CACHE_HOME inside the scratch folder (never the real home). */
  env: Record<string, string>;
  stateDir: string;
  cacheDir: string;
  file(name: string, lines: string[]): string;
  cleanup(): Promise<void>;
}

export async function world(options: SandboxOptions = {}): Promise<World> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-evidence-'));
  const sb = await startSandbox({ port: 0, seed: 7, ...options });
  const env = {
    DNC_BASE_URL: sb.baseUrl,
    DNC_API_KEY: sb.apiKey,
    XDG_STATE_HOME: path.join(dir, 'state'),
    XDG_CACHE_HOME: path.join(dir, 'cache'),
  };
  return {
    dir,
    sb,
    env,
    stateDir: path.join(dir, 'state', 'dnc'),
    cacheDir: path.join(dir, 'cache', 'dnc'),
    file(name, lines) {
      const p = path.join(dir, name);
      writeFileSync(p, lines.join('\n') + '\n');
      return p;
    },
    async cleanup() {
      await sb.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `dnc ...argv` in this process with `env` only, and an injected clock when given. */
export async function dnc(
  argv: string[],
  env: Record<string, string>,
  options: { now?: () => Date; cwd?: string } = {},
): Promise<Run> {
  const io = createTestIO();
  // Interrupts that never fire (`dnc listen --exit-when-done` subscribes to them).
  const code = await main(argv, {
    io,
    env,
    homedir: NO_HOME,
    now: options.now,
    cwd: options.cwd,
    interrupts: testInterrupts(),
  });
  return { code, stdout: io.out(), stderr: io.err() };
}

export const DAY = 86_400_000;

/** A clock `days` days from now (for ages and windows). */
export function later(days: number): () => Date {
  const at = Date.now() + days * DAY;
  return () => new Date(at);
}

/** The lookups the sandbox received (phone numbers, in order). */
export function lookedUp(sb: Sandbox): string[] {
  return sb
    .requests()
    .filter((r) => r.path === '/check_phone_number')
    .map((r) => r.query.phone_number!);
}

/** Once the sandbox has been sent at least `n` lookups; fails after `ms`. */
export function lookedUpAtLeast(sb: Sandbox, n: number, ms = 20_000): Promise<void> {
  return waitFor(() => lookedUp(sb).length >= n, { ms, what: `${n} lookups sent to the sandbox` });
}

/**
 * Once the sandbox has taken in, and charged, every lookup a run that has ended (stopped, or killed) wrote. On
 * loopback what it wrote is at the sandbox's sockets once it has ended, but a request written just before the end may
 * not be read yet: requests of our own, answered, show the sandbox has read what was there before them (it runs in
 * this process). Then each request logged is routed (the sandbox charges a lookup as it routes it; --latency-ms
 * delays only the answer).
 */
export async function sandboxSettled(sb: Sandbox): Promise<void> {
  for (let i = 0; i < 2; i++) await (await fetch(`${sb.baseUrl}/_sandbox/accounts`)).text();
  await waitFor(() => sb.requests().every((r) => r.status !== 0), { what: 'every request routed' });
}

/** A small US call list: 3 distinct callable/do_not_call numbers over 5 rows. */
export const US_LIST = [
  'name,phone',
  'a,+12025550100',
  'b,+12025550101',
  'c,+1 202 555 0100',
  'd,+12025550102',
  'e,+12025550101',
];

/** The last line of a command's stdout as JSON (the summary line of --json output). */
export const json = (s: string) => JSON.parse(s.trim().split('\n').at(-1)!) as Record<string, any>;

/** `n` distinct US numbers in E.164 from +1202555FROM on. */
export const usNumbers = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => `+1202555${String(from + i).padStart(4, '0')}`);

/**
 * This machine without the service's configuration (verify, status and report need none): its state folder, where dnc
 * anchored what it wrote, and nothing else.
 */
export function sameMachine(w: World): Record<string, string> {
  return { XDG_STATE_HOME: w.env.XDG_STATE_HOME! };
}
