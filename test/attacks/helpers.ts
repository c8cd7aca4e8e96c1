// Shared by the attack tests: a webhook batch waiting for its pushes, forged pushes, and a listener run in-process.
import { mkdtempSync, readdirSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import { createTestIO, type TestIO } from '../../src/io.js';
import { main } from '../../src/main.js';
import { testInterrupts, type TestInterrupts } from '../helpers/interrupts.js';
import { readCsv, type CsvRecord } from '../listen/helpers.js';
import { waitFor } from '../helpers/wait.js';

export { readCsv, readJournal, waitFor, webhookBatch, PUSH_PATH, type WebhookBatch } from '../listen/helpers.js';

/** Every file under `dir`, at any depth. */
export function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

/** A home of its own (results cache, history, registry), so a test can read what listen leaves there. */
export function scratchHome(): string {
  return mkdtempSync(path.join(os.tmpdir(), 'dnc-attack-home-'));
}

export interface Listening {
  io: TestIO;
  exit: Promise<number>;
  interrupts: TestInterrupts;
  url: Promise<string>;
}

/** `dnc listen ...argv` in this process, with its own home. */
export function listen(
  argv: string[],
  options: { cwd: string; home: string; env?: Record<string, string> },
): Listening {
  const io = createTestIO();
  const interrupts = testInterrupts();
  const exit = main(['listen', ...argv], {
    io,
    env: options.env ?? {},
    homedir: options.home,
    cwd: options.cwd,
    interrupts,
  });
  let exited = false;
  void exit.then(
    () => (exited = true),
    () => (exited = true),
  );
  const url = (async () => {
    const found = () => /listening on (\S+)/.exec(io.err())?.[1];
    await waitFor(() => found() !== undefined || exited, { ms: 10_000, what: 'dnc listen to listen' }).catch(() => {});
    const m = found();
    if (m) return m;
    throw new Error(`dnc listen did not start:\n${io.err()}`);
  })();
  url.catch(() => undefined);
  return { io, exit, interrupts, url };
}

/** A push as the service would send it for a row of OUTPUT.csv (section 2.2), with fields overridden. */
export function succeededPush(row: CsvRecord, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    status: 'succeeded',
    error_code: null,
    correlation_id: row.dnc_correlation_id,
    phone_number: row.dnc_phone_e164,
    country: row.dnc_country ?? 'AU',
    do_not_call: false,
    timestamp: new Date().toISOString().replace('Z', '123+00:00'),
    dnc_list_source: `https://sandbox.dnc.invalid/registers/${row.dnc_country ?? 'AU'}`,
    cost: { credits_used_for_query: 3, total_credits_used: 3, credit_limit: 10000 },
    ...overrides,
  };
}

/** POSTs a push (JSON) with the service's headers for its body; returns the status and the body text. */
export async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string; headers: Record<string, string | string[] | undefined> }> {
  const b = body as { correlation_id?: string; phone_number?: string; country?: string };
  const res = await request(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'user-agent': 'Service-Webhooks/1.0',
      ...(b.correlation_id ? { 'x-service-correlation-id': b.correlation_id } : {}),
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.statusCode, text: await res.body.text(), headers: res.headers };
}

export const rowsOf = (output: string) => readCsv(output);
