// Shared by the listen tests: a webhook batch against the sandbox, a listener run in-process, journal reads.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { parse } from 'csv-parse/sync';
import { expect } from 'vitest';
import { createTestIO, type TestIO } from '../../src/io.js';
import { main } from '../../src/main.js';
import { startSandbox, type Sandbox, type SandboxOptions } from '../../src/sandbox/index.js';
import { JournalChain } from '../../src/journal/chain.js';
import { NO_HOME, runDnc } from '../helpers/cli.js';
import { testInterrupts } from '../helpers/interrupts.js';
import { waitFor as waitUntil } from '../helpers/wait.js';

export const PUSH_PATH = '/hooks/Jr6tQm2yVb0sXw9LkPz3dA';

/** A port that was free a moment ago (the batch needs the listener's URL before the listener runs). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface WebhookBatch {
  dir: string;
  input: string;
  output: string;
  journal: string;
  port: number;
  url: string;
  sandbox: Sandbox;
  env: Record<string, string>;
  batch: { code: number; stdout: string; stderr: string };
  cleanup(): Promise<void>;
}

/** Writes `rows` (name, phone) as a CSV and runs `dnc batch` in webhook mode against a fresh sandbox. */
export async function webhookBatch(
  rows: Array<[string, string]>,
  options: { sandbox?: SandboxOptions; webhookAll?: boolean; port?: number; output?: string; pushPath?: string } = {},
): Promise<WebhookBatch> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-listen-'));
  const input = path.join(dir, 'calls.csv');
  const output = path.join(dir, options.output ?? 'calls.results.csv');
  writeFileSync(input, ['name,phone', ...rows.map(([n, p]) => `${n},${p}`)].join('\n') + '\n');
  const sandbox = await startSandbox({
    port: 0,
    allowInsecureWebhooks: true,
    timeScale: 0.01,
    seed: 7,
    ...options.sandbox,
  });
  const port = options.port ?? (await freePort());
  const url = `http://127.0.0.1:${port}${options.pushPath ?? PUSH_PATH}`;
  const env = { DNC_BASE_URL: sandbox.baseUrl, DNC_API_KEY: sandbox.apiKey };
  const argv = ['batch', input, '-o', output, '--webhook-url', url, '--allow-insecure-webhook-url'];
  if (options.webhookAll !== false) argv.push('--webhook-all');
  const batch = await runDnc(argv, { env, cwd: dir });
  return {
    dir,
    input,
    output,
    journal: `${output}.journal.sqlite`,
    port,
    url,
    sandbox,
    env,
    batch,
    async cleanup() {
      await sandbox.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export { testInterrupts };

export interface RunningListen {
  io: TestIO;
  exit: Promise<number>;
  interrupts: ReturnType<typeof testInterrupts>;
  /** Resolves with the listening URL once it is printed. */
  listening: Promise<string>;
}

/** `dnc listen ...argv` in this process, running until it exits or is interrupted. */
export function listenInProcess(
  argv: string[],
  options: { cwd?: string; now?: () => Date; tty?: boolean } = {},
): RunningListen {
  const io = createTestIO({ tty: options.tty });
  const interrupts = testInterrupts();
  const exit = main(['listen', ...argv], {
    io,
    env: {},
    homedir: NO_HOME,
    cwd: options.cwd,
    interrupts,
    now: options.now,
  });
  let exited = false;
  void exit.then(
    () => (exited = true),
    () => (exited = true),
  );
  const listening = (async () => {
    const url = () => /listening on (\S+)/.exec(io.err())?.[1];
    await waitUntil(() => url() !== undefined || exited, { ms: 5_000, what: 'dnc listen to listen' }).catch(() => {});
    const found = url();
    if (found) return found;
    throw new Error(`dnc listen did not start:\n${io.err()}`);
  })();
  // A run that is expected to fail before listening must not leave an unhandled rejection.
  listening.catch(() => undefined);
  return { io, exit, interrupts, listening };
}

export interface CsvRecord {
  name: string;
  phone: string;
  dnc_phone_e164: string;
  dnc_result: string;
  dnc_do_not_call: string;
  dnc_correlation_id: string;
  dnc_error_code: string;
  dnc_credits: string;
  [k: string]: string;
}

export function readCsv(file: string, text?: string): CsvRecord[] {
  return parse(text ?? readFileSync(file, 'utf8'), { columns: true }) as CsvRecord[];
}

export interface PushRow {
  correlation_id: string;
  outcome: string;
  duplicates: number;
  body: string;
}

/** What the journal holds (read through a separate connection, as another process would). */
export function readJournal(file: string): { pushes: PushRow[]; states: Record<string, number> } {
  const db = new Database(file, { readonly: true });
  try {
    const pushes = db
      .prepare('SELECT correlation_id, outcome, duplicates, body FROM pushes ORDER BY id')
      .all() as PushRow[];
    const states: Record<string, number> = {};
    for (const r of db.prepare('SELECT state, COUNT(*) AS n FROM numbers GROUP BY state').all() as Array<{
      state: string;
      n: number;
    }>)
      states[r.state] = r.n;
    return { pushes, states };
  } finally {
    db.close();
  }
}

/** The verdict the sandbox's number rules give a number (shared/preamble), as a dnc_result. */
export function expectedResult(e164: string): string {
  const tail = e164.slice(-3);
  if (tail === '990') return 'invalid';
  if (tail === '995' || tail === '996' || tail === '997' || tail === '993' || tail === '994') return 'failed';
  return Number(e164.at(-1)) % 2 === 1 ? 'do_not_call' : 'callable';
}

/** Polls `check` until it returns true (or fails the test after `ms`). */
export async function waitFor(what: string, check: () => boolean, ms = 15_000): Promise<void> {
  await waitUntil(check, { ms, what, everyMs: 20 }).catch((err: Error) => expect.fail(err.message));
}

/**
 * A change of one number's row committed as the batch itself commits it, its chain extended (src/journal/chain.ts):
 * stands in for a race between `dnc batch` and `dnc listen` that no test can time. Anything else that edits the
 * journal is an edit behind dnc's back, refused by both.
 */
export function asTheBatch(journal: string, e164: string, sql: string, ...params: unknown[]): void {
  const db = new Database(journal);
  try {
    const chain = new JournalChain(db, null);
    db.transaction(() => {
      chain.writing = true;
      db.prepare(sql).run(...params);
      chain.number(db.prepare<[string], number>('SELECT id FROM numbers WHERE e164 = ?').pluck().get(e164)!);
      chain.beforeCommit();
    })();
  } finally {
    db.close();
  }
}
