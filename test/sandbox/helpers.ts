// Test helpers for the sandbox: plain loopback HTTP calls and a small webhook receiver.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Sandbox } from '../../src/sandbox/index.js';

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
  const waiters: Array<() => void> = [];
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
      for (const w of waiters.splice(0)) w();
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
      const deadline = Date.now() + ms;
      while (pushes.length < n) {
        if (Date.now() > deadline) throw new Error(`expected ${n} pushes, got ${pushes.length}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 50);
        });
      }
      return pushes;
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** Polls `check` until it returns true (or fails after `ms`). */
export async function until(check: () => boolean, ms = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export const US = '+12025550123'; // odd last digit: on a register
export const US_EVEN = '+12025550124';
export const GB = '+442079460123';
export const AU = '+61412345603'; // tens digit 0: result 30 s after the receipt
export const FR = '+33612345678';
export const DE = '+4930123456';
