// `startSandbox()`: the service emulator on a loopback port, plus its introspection API (in-process and under
// /_sandbox/).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  SandboxEngine,
  type AccountInfo,
  type Answer,
  type LookupRecord,
  type RecordedRequest,
  type SandboxOptions,
} from './engine.js';
import type { PortalTokenOptions } from './portal.js';
import type { PushAttempt } from './webhooks.js';
import { WebhookHosts } from './webhook-hosts.js';

export type { AccountSpec, HistoryPeriodSpec, Plan } from './accounts.js';
export { validateAccountSpecs } from './accounts.js';
export type { SandboxTimers } from './clock.js';
export { DEFAULT_COSTS, DEFAULT_CREDIT_LIMIT, DEFAULT_KEY } from './engine.js';
export type { AccountInfo, LookupRecord, RecordedRequest, SandboxOptions } from './engine.js';
export type { PushAttempt } from './webhooks.js';
export type { PortalTokenOptions } from './portal.js';

export interface Sandbox {
  /** http://127.0.0.1:PORT */
  baseUrl: string;
  port: number;
  /** The default account's key. */
  apiKey: string;
  requests(): RecordedRequest[];
  lookups(): LookupRecord[];
  pushes(): PushAttempt[];
  /** Lookups in webhook mode whose result has not been pushed yet. */
  pending(): number;
  account(key?: string): AccountInfo;
  accounts(): AccountInfo[];
  setCreditLimit(limit: number, key?: string): void;
  setUsageFailure(on: boolean): void;
  /**
   * Holds every lookup's answer from now on (each request is received, judged and charged as usual; only its
   * answer waits) until the function returned is called: a test makes "this lookup is still in flight" a fact
   * rather than a timing. Closing the sandbox lets held answers go.
   */
  holdAnswers(): () => void;
  /** A portal JWT (section 5) for the account of `key` (default: the first); only /v2/usage_stats accepts it. */
  portalToken(options?: PortalTokenOptions & { key?: string }): string;
  reset(): void;
  close(): Promise<void>;
}

const JSON_TYPE = 'application/json';

export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const engine = new SandboxEngine(options);
  const latency = options.latencyMs ?? 0;
  /** Answers waiting for a test's release (holdAnswers), or null while none is held. */
  let held: Array<() => void> | null = null;
  const releaseHeld = () => {
    const waiting = held ?? [];
    held = null;
    for (const send of waiting) send();
  };

  const server = http.createServer({ keepAlive: true, keepAliveTimeout: 65_000 }, (req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const query = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
    if (path.startsWith('/_sandbox/')) {
      introspect(engine, req, res, path, query);
      return;
    }
    const entry: RecordedRequest = {
      method: req.method ?? 'GET',
      path,
      query: Object.fromEntries(query),
      headers: redactHeaders(req.headers),
      status: 0,
      receivedAt: engine.now().toISOString(),
    };
    engine.logRequest(entry);
    // A name in a webhook URL is resolved first (once a minute at most), so the lookup can be judged synchronously.
    const webhookUrl = path === '/check_phone_number' ? query.get('webhook_url') : null;
    const name = webhookUrl === null ? null : WebhookHosts.nameIn(webhookUrl);
    if (name !== null && engine.webhookHosts.stale(name)) {
      void engine.webhookHosts.refresh(name).then(() => answerRequest(req, res, path, query, entry));
    } else answerRequest(req, res, path, query, entry);
  });

  const answerRequest = (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    path: string,
    query: URLSearchParams,
    entry: RecordedRequest,
  ) => {
    let answer: Answer;
    try {
      answer = route(engine, req, path, query);
    } catch (err) {
      // A bug in the emulator must show as a 500 in the test that hit it, not stop the server.
      answer = {
        status: 500,
        body: { error: `sandbox internal error: ${err instanceof Error ? err.message : String(err)}` },
      };
    }
    entry.status = answer.status;
    if (answer.account !== undefined) entry.account = answer.account;
    options.onRequest?.(entry);
    const send = () => {
      const body = JSON.stringify(answer.body);
      res.writeHead(answer.status, {
        'content-type': JSON_TYPE,
        'content-length': Buffer.byteLength(body),
        // The emulator's clock, as a service's Date is its own (dnc judges answers' timestamps by it).
        date: engine.now().toUTCString(),
        ...answer.headers,
      });
      res.end(body);
    };
    // The request body (GET: none expected) is drained so keep-alive connections stay usable.
    req.resume();
    const deliver = () => {
      if (latency > 0) engine.scheduler.afterReal(latency, send);
      else send();
    };
    if (held !== null && path === '/check_phone_number') held.push(deliver);
    else deliver();
  };
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  let closing: Promise<void> | undefined;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    port,
    get apiKey() {
      return engine.defaultKey;
    },
    requests: () => engine.requestLog,
    lookups: () => engine.lookupLog,
    pushes: () => engine.pushLog(),
    pending: () => engine.pendingCount(),
    account: (key) => engine.accountInfo(key),
    accounts: () => engine.allAccounts(),
    setCreditLimit: (limit, key) => engine.setCreditLimit(limit, key),
    setUsageFailure: (on) => {
      engine.usageFailure = on;
    },
    portalToken: ({ key, ...rest } = {}) => engine.portalToken(key, rest),
    holdAnswers: () => {
      held ??= [];
      return releaseHeld;
    },
    reset: () => engine.reset(),
    close() {
      releaseHeld();
      closing ??= new Promise<void>((resolve) => {
        engine.close();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

function route(engine: SandboxEngine, req: http.IncomingMessage, path: string, query: URLSearchParams): Answer {
  const known = path === '/check_phone_number' || path === '/v2/usage_stats' || path === '/usage_stats';
  if (!known) return { status: 404, body: { error: `no such endpoint: ${path}` } };
  if (req.method !== 'GET')
    return { status: 405, body: { error: `${path} accepts GET only` }, headers: { allow: 'GET' } };
  const auth = engine.authenticate(
    req.headers.authorization,
    header(req.headers['x-forwarded-host']),
    path === '/v2/usage_stats',
  );
  if ('status' in auth) return auth;
  if (path === '/check_phone_number') return engine.lookup(auth, query);
  if (path === '/v2/usage_stats') return engine.usageV2(auth, query);
  return engine.usageLegacy(auth);
}

function header(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** Request headers for the log: the key never kept, its form (Bearer or bare) kept. */
function redactHeaders(h: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k in h) {
    const v = h[k];
    if (v === undefined) continue;
    out[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  if (out.authorization !== undefined)
    out.authorization = /^Bearer\s/i.test(out.authorization)
      ? 'Bearer ***'
      : out.authorization.trim() === ''
        ? ''
        : '***';
  return out;
}

/**
 * /_sandbox/…: GET requests | lookups | pushes | account | accounts;
 * POST reset | credit-limit?limit=N | usage-failure?on=true|false |
 * portal-token?expires_in=S&verified=false&membership=false. An Authorization header (the
 * service's form) selects the account for account, credit-limit and portal-token; default: the first.
 */
function introspect(
  engine: SandboxEngine,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  path: string,
  query: URLSearchParams,
): void {
  const reply = (status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };
  req.resume();
  const name = path.slice('/_sandbox/'.length);
  const raw = (req.headers.authorization ?? '').trim();
  const key = raw === '' ? undefined : raw.replace(/^Bearer\s+/i, '');
  try {
    const get = req.method === 'GET';
    const post = req.method === 'POST';
    if (get && name === 'requests') return reply(200, engine.requestLog);
    if (get && name === 'lookups') return reply(200, engine.lookupLog);
    if (get && name === 'pushes') return reply(200, engine.pushLog());
    if (get && name === 'account') return reply(200, engine.accountInfo(key));
    if (get && name === 'accounts') return reply(200, engine.allAccounts());
    if (post && name === 'reset') {
      engine.reset();
      return reply(200, { ok: true });
    }
    if (post && name === 'credit-limit') {
      // Number(null) is 0: a forgotten ?limit= must not silently set the limit to nothing.
      const raw = query.get('limit');
      if (raw === null || !/^\d+$/.test(raw)) return reply(400, { error: 'give ?limit=N, a whole number ≥ 0' });
      const limit = Number(raw);
      engine.setCreditLimit(limit, key);
      return reply(200, engine.accountInfo(key));
    }
    if (post && name === 'portal-token') {
      const expires = query.get('expires_in');
      const token = engine.portalToken(key, {
        expiresIn: expires === null ? undefined : Number(expires),
        verified: query.get('verified') !== 'false',
        membership: query.get('membership') !== 'false',
      });
      return reply(200, { token });
    }
    if (post && name === 'usage-failure') {
      const on = query.get('on');
      if (on !== 'true' && on !== 'false') return reply(400, { error: 'on must be true or false' });
      engine.usageFailure = on === 'true';
      return reply(200, { usageFailure: engine.usageFailure });
    }
    return reply(404, { error: `no such sandbox endpoint: ${req.method} ${path}` });
  } catch (err) {
    return reply(400, { error: err instanceof Error ? err.message : String(err) });
  }
}
