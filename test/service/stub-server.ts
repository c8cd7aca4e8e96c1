// A tiny HTTP server for answers the sandbox never gives (HTML from a proxy, odd statuses); records raw requests.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StubRequest {
  method: string;
  /** The raw request target, exactly as sent (e.g. `/check_phone_number?phone_number=%2B1…`). */
  url: string;
  headers: http.IncomingHttpHeaders;
}

export interface StubReply {
  status: number;
  body?: unknown;
  /** Sent as is, instead of JSON (e.g. a proxy's HTML page). */
  text?: string;
  headers?: Record<string, string>;
}

export interface StubServer {
  baseUrl: string;
  port: number;
  requests: StubRequest[];
  /** Replies to each request; `n` counts requests from 1. */
  reply: (req: StubRequest, n: number) => StubReply;
  close(): Promise<void>;
}

export async function startStub(reply: StubServer['reply'], port = 0): Promise<StubServer> {
  const requests: StubRequest[] = [];
  const stub = { requests, reply } as StubServer;
  const server = http.createServer((req, res) => {
    const recorded = { method: req.method ?? '', url: req.url ?? '', headers: req.headers };
    requests.push(recorded);
    const r = stub.reply(recorded, requests.length);
    const isText = r.text !== undefined;
    const payload = isText ? r.text! : r.body === undefined ? '' : JSON.stringify(r.body);
    res.writeHead(r.status, {
      'content-type': isText ? 'text/html' : 'application/json',
      ...r.headers,
    });
    res.end(payload);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const actual = (server.address() as AddressInfo).port;
  stub.port = actual;
  stub.baseUrl = `http://127.0.0.1:${actual}`;
  stub.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return stub;
}

/** A loopback port nothing listens on (found by listening, then closing). */
export async function closedPort(): Promise<number> {
  const probe = await startStub(() => ({ status: 200 }));
  await probe.close();
  return probe.port;
}

/** Lookup answer headers as section 4.1 describes them. */
export function lookupHeaders(
  cost: number,
  remaining: number,
  limit: number,
  correlationId?: string,
): Record<string, string> {
  const h: Record<string, string> = {
    'x-credit-cost': String(cost),
    'x-ratelimit-limit': String(limit),
    'x-ratelimit-remaining': String(remaining),
  };
  if (correlationId) h['x-service-correlation-id'] = correlationId;
  return h;
}
