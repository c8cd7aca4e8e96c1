// Test helpers for the sandbox: plain loopback HTTP calls and a small webhook receiver.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Sandbox, SandboxTimers } from '../../src/sandbox/index.js';
import { waitFor } from '../helpers/wait.js';

export interface Reply {
  status: number;
  headers: Record<string, string>;
  body: any;
}

/** GET `path` on the sandbox; `auth` is the full Authorization value (default: Bearer <default key>), null for none. */
export async function get(
  sb: Sandbox,
  path: string,
  auth: string | null = `Bearer ${sb.apiKey}`,
  extra: Record<string, string> = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...extra };
  if (auth !== null) headers.authorization = auth;
  const res = await fetch(sb.baseUrl + path, { headers });
  const text = await res.text();
  const out: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    out[k] = v;
  });
  return { status: res.status, headers: out, body: text === '' ? null : JSON.parse(text) };
}

/** /check_phone_number for `phone` (URL-encoded here), optionally in webhook mode. */
export function lookup(sb: Sandbox, phone: string, webhookUrl?: string, auth?: string | null): Promise<Reply> {
  let path = `/check_phone_number?phone_number=${encodeURIComponent(phone)}`;
  if (webhookUrl !== undefined) path += `&webhook_url=${encodeURIComponent(webhookUrl)}`;
  return get(sb, path, auth === undefined ? `Bearer ${sb.apiKey}` : auth);
}

export interface ReceivedPush {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
  at: number;
}

export interface Receiver {
  url: string;
  pushes: ReceivedPush[];
  /** Resolves once `n` pushes have arrived (or rejects after `ms`). */
  waitFor(n: number, ms?: number): Promise<ReceivedPush[]>;
  close(): Promise<void>;
}

/**
 * A webhook receiver on loopback. `answer(n)` gives the status for the n-th push (1-based),
 * 'hang' to never answer, or a [status, headers] pair (e.g. a redirect).
 */
export async function startReceiver(
  answer: (n: number, push: ReceivedPush) => number | 'hang' | [number, Record<string, string>] = () => 200,
): Promise<Receiver> {
  const pushes: ReceivedPush[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const push: ReceivedPush = {
        path: req.url ?? '/',
        headers: req.headers,
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
        at: Date.now(),
      };
      pushes.push(push);
      const a = answer(pushes.length, push);
      if (a === 'hang') return;
      const [status, headers] = Array.isArray(a) ? a : [a, {}];
      res.writeHead(status, headers);
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    pushes,
    async waitFor(n, ms = 10_000) {
      await waitFor(() => pushes.length >= n, { ms, what: `${n} pushes` });
      return pushes;
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** Polls `check` until it returns true (or fails after `ms`). */
export function until(check: () => boolean, ms = 10_000, what = 'condition'): Promise<void> {
  return waitFor(check, { ms, what });
}

export const US = '+12025550123'; // odd last digit: on a register
export const US_EVEN = '+12025550124';
export const GB = '+442079460123';
export const AU = '+61412345603'; // tens digit 0: result 30 s after the receipt
export const FR = '+33612345678';
export const DE = '+4930123456';

/** Real timers that count the ones still to fire: none left, and the sandbox will never act again on its own. */
export interface WatchedTimers extends SandboxTimers {
  /** Timers scheduled and neither fired nor cancelled (a push's result, retry, duplicate, reply limit). */
  pending(): number;
}

export function watchedTimers(): WatchedTimers {
  const pending = new Set<NodeJS.Timeout>();
  return {
    setTimeout(fn, ms) {
      const t = setTimeout(() => {
        pending.delete(t);
        fn();
      }, ms);
      t.unref();
      pending.add(t);
      return t;
    },
    clearTimeout(handle) {
      pending.delete(handle as NodeJS.Timeout);
      clearTimeout(handle as NodeJS.Timeout);
    },
    pending: () => pending.size,
  };
}

/**
 * Timers the test holds: nothing the sandbox schedules happens until the test fires it, however slow the machine
 * (a push's reply limit, held and never fired, cannot cut off a slow answer). With time scale 1 each delay is the
 * service's own.
 */
export interface HeldTimers extends SandboxTimers {
  /** The delays of the timers held now (neither fired nor cancelled), in the order they were set. */
  held(): number[];
  /** Fires the first timer held with this delay, once one is (a push may still be on its way to being answered). */
  fire(ms: number, what?: string): Promise<void>;
}

export function heldTimers(): HeldTimers {
  const held: Array<{ fn: () => void; ms: number }> = [];
  const take = (t: unknown) => {
    const i = held.indexOf(t as (typeof held)[number]);
    if (i >= 0) held.splice(i, 1);
  };
  return {
    setTimeout(fn, ms) {
      const t = { fn, ms };
      held.push(t);
      return t;
    },
    clearTimeout: take,
    held: () => held.map((t) => t.ms),
    async fire(ms, what = `a timer of ${ms} ms`) {
      await waitFor(() => held.some((t) => t.ms === ms), { what });
      const t = held.find((h) => h.ms === ms)!;
      take(t);
      t.fn();
    },
  };
}
