// The webhook receiver: an HTTP(S) server that checks each push, stores it durably, then acknowledges it.
import { internalError } from '../errors.js';
import { EventEmitter } from 'node:events';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import { MAX_ANSWER_BYTES } from '../service/answer-bytes.js';
import { DEFAULT_CLOCK_SKEW_MS } from '../service/answers.js';
import { readPush, type PushReading } from '../service/push-answers.js';
import { keysIn } from '../key-trace.js';
import { MAX_JSON_DEPTH, maskSecrets, maskSecretsInBody, nestsDeeperThan } from '../secrets.js';
import type {
  Connection,
  IncomingPush,
  ListeningAddress,
  PushStore,
  ReceiverEvents,
  ReceiverOptions,
  ReceiverStats,
  RefusedPush,
  StoreOutcome,
} from './receiver-types.js';

/** Section 6 caps nothing, but no push comes near this; a larger one is refused (413): every answer's limit. */
export const MAX_PUSH_BYTES = MAX_ANSWER_BYTES;

export const DEFAULT_HOST = '127.0.0.1';

export const HEALTH_PATH = '/healthz';

export const DEFAULT_MAX_CONNECTIONS = 256;

/** A request still arriving after this long is slower than any push (a few hundred bytes): at the cap, it makes way. */
export const DEFAULT_STALLED_MS = 1_000;

/** A fresh unguessable push path: /hooks/ and 22 url-safe characters (128 random bits). */
export function randomPushPath(random: (size: number) => Buffer = randomBytes): string {
  return `/hooks/${random(16).toString('base64url')}`;
}

interface Waiting {
  push: IncomingPush;
  settle(outcome: StoreOutcome | Error): void;
}

class RequestRefused extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

function pathnameOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/** application/json, with or without parameters (charset). */
function isJsonContentType(value: string | undefined): boolean {
  if (!value) return false;
  return value.split(';', 1)[0]!.trim().toLowerCase() === 'application/json';
}

export class Receiver extends EventEmitter<ReceiverEvents> {
  readonly stats: ReceiverStats = {
    received: 0,
    stored: 0,
    duplicates: 0,
    orphans: 0,
    conflicts: 0,
    rejected: 0,
    storeFailures: 0,
    overCapacity: 0,
  };
  private readonly server: http.Server;
  private readonly store: PushStore;
  private readonly now: () => Date;
  private readonly maxBody: number;
  /** Keys of the batch found by their traces in pushes so far (see secretsOf). */
  private readonly learned: string[] = [];
  private readonly storeTimeoutMs: number;
  private readonly maxBatch: number;
  private readonly pushPath: string | undefined;
  private readonly skewMs: number;
  private queue: Waiting[] = [];
  private flushScheduled = false;
  private draining: Promise<void> | undefined;
  /** Requests being read, stored or answered, with their socket and when they began. */
  private readonly inFlight = new Map<Promise<unknown>, { socket: Socket; startedAt: number }>();
  private closing = false;
  /** Open connections by their TCP socket (under TLS, a request's socket is the TLS one; its _parent is this). */
  private readonly connections = new Map<Socket, Connection>();
  private readonly maxConnections: number;
  private readonly stalledMs: number;

  constructor(private readonly options: ReceiverOptions) {
    super();
    this.store = options.store;
    this.now = options.now ?? (() => new Date());
    this.maxBody = options.maxBodyBytes ?? MAX_PUSH_BYTES;
    this.storeTimeoutMs = options.storeTimeoutMs ?? 5_000;
    this.maxBatch = options.maxBatch ?? 256;
    this.pushPath = options.path;
    this.skewMs = options.skewMs ?? DEFAULT_CLOCK_SKEW_MS;
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => this.handle(req, res);
    // Timeouts are checked every second (node's default, 30 s, lets a slow client hold a connection far longer).
    const serverOptions = { connectionsCheckingInterval: 1_000 };
    this.server = options.tls
      ? https.createServer({ ...serverOptions, cert: options.tls.cert, key: options.tls.key }, handler)
      : http.createServer(serverOptions, handler);
    // A push must be answered within 10 s (section 6); a client that trickles its request is cut off, and one
    // that opens connections without end finds the door shut beyond the cap (each holds a descriptor).
    this.server.headersTimeout = options.headersTimeoutMs ?? 10_000;
    this.server.requestTimeout = options.requestTimeoutMs ?? 15_000;
    this.server.keepAliveTimeout = 5_000;
    // Not server.maxConnections: node then shuts every new connection while the slots are held, so a peer that opens
    // them and sends half a request each kept every push and /healthz out until the header timeout, and again after.
    this.maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
    this.stalledMs = options.stalledMs ?? DEFAULT_STALLED_MS;
    this.server.on('connection', (socket: Socket) => this.admit(socket));
    this.server.maxHeadersCount = 100;
    this.server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
      // A peer that went away (reset, killed) is not a request to report or answer.
      if (error.code === 'ECONNRESET' || error.code === 'EPIPE' || !socket.writable) {
        socket.destroy();
        return;
      }
      // A request too slow to arrive gets 408, which the service retries; an unparseable one 400 (431: headers too
      // large).
      const status = error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : error.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
      const text =
        status === 408 ? 'Request Timeout' : status === 431 ? 'Request Header Fields Too Large' : 'Bad Request';
      this.emit('client-error', { error, status, remoteAddress: (socket as Partial<Socket>).remoteAddress });
      // end() alone half-closes: a peer that never closes its side keeps the descriptor. Destroyed once written.
      socket.write(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`, () =>
        socket.destroy(),
      );
      (socket as Partial<Socket>).setTimeout?.(1_000, () => socket.destroy());
    });
  }

  /** Starts listening; rejects with the socket error (EADDRINUSE, EACCES …). */
  async listen(): Promise<ListeningAddress> {
    const host = this.options.host ?? DEFAULT_HOST;
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      this.server.once('error', onError);
      this.server.listen(this.options.port ?? 0, host, () => {
        this.server.off('error', onError);
        resolve();
      });
    });
    const port = (this.server.address() as AddressInfo).port;
    const urlHost = host.includes(':') ? `[${host}]` : host;
    const scheme = this.options.tls ? 'https' : 'http';
    return { host, port, url: `${scheme}://${urlHost}:${port}${this.pushPath ?? '/'}` };
  }

  /**
   * Keeps a new connection within the cap: at the cap it replaces the idle or stalled connection that has been so
   * longest (closed at once), else another address's newest (fair share), else the one reading its request longest.
   * Only when every connection is a request being stored and answered is the newcomer closed itself.
   */
  private admit(socket: Socket): void {
    const now = performance.now();
    if (this.connections.size >= this.maxConnections) {
      let idle: [Socket, number] | undefined;
      let reading: [Socket, number] | undefined;
      for (const [s, c] of this.connections) {
        if (c.phase === 'idle' && c.since < (idle?.[1] ?? Infinity)) idle = [s, c.since];
        if (c.phase === 'reading' && c.since < (reading?.[1] ?? Infinity)) reading = [s, c.since];
      }
      // Idle ones first (they owe nothing), then the longest stalled; a request being stored is never cut. Last, the
      // request arriving longest: refusing the newcomer shut /healthz and every push out for `stalledMs` after a burst
      // of half-open connections. A push is read in a moment: only `maxConnections` newer ones can displace it.
      const stalled = reading && now - reading[1] >= this.stalledMs ? reading[0] : undefined;
      const victim = idle?.[0] ?? stalled ?? this.fairShareVictim(socket.remoteAddress) ?? reading?.[0];
      if (!victim) {
        socket.destroy();
        return;
      }
      this.connections.delete(victim);
      victim.destroy();
    }
    this.connections.set(socket, { phase: 'reading', since: now });
    socket.once('close', () => this.connections.delete(socket));
  }

  /**
   * When every slot is busy with a fresh request: a peer opening connection after connection (each younger than
   * the stalled limit) must not shut everyone else out. A newcomer from an address that holds fewer slots than the
   * address holding the most takes the place of that address's newest connection still reading its request.
   */
  private fairShareVictim(address: string | undefined): Socket | undefined {
    const held = new Map<string | undefined, number>();
    for (const s of this.connections.keys()) held.set(s.remoteAddress, (held.get(s.remoteAddress) ?? 0) + 1);
    let top: string | undefined;
    let most = 0;
    for (const [a, n] of held) {
      if (n > most) {
        most = n;
        top = a;
      }
    }
    if (top === address || most <= (held.get(address) ?? 0) + 1) return undefined;
    let newest: Socket | undefined;
    let since = -Infinity;
    for (const [s, c] of this.connections) {
      if (s.remoteAddress === top && c.phase === 'reading' && c.since > since) {
        since = c.since;
        newest = s;
      }
    }
    return newest;
  }

  /** The bookkeeping of the connection a request came on. */
  private connectionOf(socket: Socket): Connection | undefined {
    return (
      this.connections.get(socket) ?? this.connections.get((socket as Socket & { _parent?: Socket })._parent as Socket)
    );
  }

  /** Connections open now (each holds a descriptor): what the cap and the timeouts keep bounded. */
  openConnections(): Promise<number> {
    return new Promise((resolve, reject) => this.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
  }

  /**
   * Stops accepting connections, lets requests already read finish storing and be answered,
   * then closes idle keep-alive connections. `force` also cuts connections still mid-request.
   */
  /** Drops every connection at once (a second Ctrl-C during close()): pushes not yet stored were not acknowledged. */
  cutConnections(): void {
    this.server.closeAllConnections();
  }

  async close(options: { force?: boolean } = {}): Promise<void> {
    this.closing = true;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
    if (options.force) this.server.closeAllConnections();
    // node stops enforcing requestTimeout once the server is closed: the limit is kept here, so that a client
    // trickling a body cannot hold the listener open (a stored push is answered long before it).
    while (this.inFlight.size > 0) {
      const now = performance.now();
      let next = Infinity;
      for (const [work, r] of this.inFlight) {
        const due = r.startedAt + this.server.requestTimeout;
        if (due <= now) {
          r.socket.destroy();
          // Cut off and still not settled a second later: given up on (its push, if any, was not acknowledged).
          if (due + 1_000 <= now) this.inFlight.delete(work);
        }
        next = Math.min(next, due > now ? due : now + 1_000);
      }
      if (this.inFlight.size === 0) break;
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, next - now + 1)));
      await Promise.race([Promise.allSettled([...this.inFlight.keys()]), late]);
      clearTimeout(timer);
    }
    this.server.closeIdleConnections();
    // Connections that are still reading a request after the stores settled are not pushes we owe.
    const grace = setTimeout(() => this.server.closeAllConnections(), options.force ? 0 : 2_000);
    await closed;
    clearTimeout(grace);
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const started = performance.now();
    const connection = this.connectionOf(req.socket);
    if (connection) {
      // A request whose headers came may still trickle its body: it is 'reading' (and so may be replaced) until read.
      connection.phase = 'reading';
      connection.since = started;
      res.once('finish', () => {
        connection.phase = 'idle';
        connection.since = performance.now();
      });
    }
    const work = this.respond(req, res, started).catch((err: unknown) => {
      // Nothing above should throw; if it does, the push was not acknowledged, so the service retries.
      this.reply(res, 503, { error: `internal error: ${String(err)}` });
    });
    this.inFlight.set(work, { socket: req.socket, startedAt: started });
    void work.finally(() => this.inFlight.delete(work));
  }

  private async respond(req: http.IncomingMessage, res: http.ServerResponse, started: number): Promise<void> {
    const path = pathnameOf(req.url ?? '/');
    const method = req.method ?? 'GET';
    let correlationId: string | undefined;
    try {
      if (path === HEALTH_PATH && this.pushPath !== HEALTH_PATH) {
        if (method !== 'GET' && method !== 'HEAD')
          throw new RequestRefused(405, `${method} is not allowed on ${HEALTH_PATH}`, { Allow: 'GET, HEAD' });
        this.reply(res, 200, { status: 'ok' });
        return;
      }
      if (this.pushPath !== undefined && path !== this.pushPath)
        throw new RequestRefused(404, 'no pushes are received on this path');
      if (method !== 'POST')
        throw new RequestRefused(405, `pushes are POSTed; ${method} is not allowed`, { Allow: 'POST' });
      const contentType = req.headers['content-type'];
      if (!isJsonContentType(contentType)) {
        throw new RequestRefused(
          415,
          `Content-Type must be application/json, got ${contentType ? JSON.stringify(contentType) : 'none'}`,
        );
      }
      // Whatever a push echoes of the key is masked where it enters: the journal, the results and the report never see
      // it. The batch's key, which this listener may not hold, is found by its trace (then masked in every form).
      const body = await this.readBody(req);
      const secrets = this.secretsOf(body, req.headers);
      const { text: raw, json } = maskPushBody(body, secrets);
      const connection = this.connectionOf(req.socket);
      if (connection) connection.phase = 'handling';
      const receivedAt = this.now();
      const evidence = {
        raw,
        receivedAt,
        headers: evidenceHeaders(req, secrets),
        peer: req.socket.remoteAddress,
      };
      // The one reading of the push; its judgment against what was sent is the journal's, when it is stored. A body
      // nested deeper than any push (a bomb for whatever walks it later: trace, report) is refused first, and kept.
      const read: PushReading =
        json !== undefined && nestsDeeperThan(json, MAX_JSON_DEPTH)
          ? { ok: false, status: 400, reason: `the body nests deeper than ${MAX_JSON_DEPTH} levels`, result: null }
          : readPush(raw, req.headers, receivedAt, this.skewMs);
      if (!read.ok) {
        correlationId = read.correlationId;
        // A reason quotes what the peer sent (a header, a parse error): masked like the body it came with.
        const reason = maskSecrets(read.reason, secrets);
        // Refused, it is kept (within a cap) as evidence, durably before the answer: it was aimed at the secret path.
        const kept = await this.keepRefused({
          ...evidence,
          correlationId: correlationId ?? '',
          result: read.result,
          serviceStatus: null,
          refusedReason: reason,
        });
        if (!kept) {
          this.reply(res, 503, { error: 'the push could not be stored; retry later' }, { 'Retry-After': '30' });
          return;
        }
        throw new RequestRefused(read.status, reason);
      }
      correlationId = read.push.correlationId;
      this.stats.received++;
      const push: IncomingPush = { ...read.push, ...evidence };
      const outcome = await this.enqueue(push);
      if (outcome instanceof Error) {
        this.reply(res, 503, { error: 'the push could not be stored; retry later' }, { 'Retry-After': '30' });
        return;
      }
      if (outcome.refused !== undefined) throw new RequestRefused(422, outcome.refused);
      if (outcome.overCapacity) {
        this.stats.overCapacity++;
        throw new RequestRefused(
          503,
          'too many pushes with unknown correlation ids are kept already; this one was not stored (the service ' +
            'retries it)',
          {
            'Retry-After': '600',
          },
        );
      }
      this.stats.stored++;
      if (outcome.duplicate) this.stats.duplicates++;
      if (outcome.orphan && !outcome.duplicate) this.stats.orphans++;
      if (outcome.conflict) this.stats.conflicts++;
      this.reply(res, 200, { received: true, duplicate: outcome.duplicate });
      this.emit('push', {
        correlationId,
        status: push.result.status,
        errorCode: push.result.error_code,
        phoneNumber: push.result.phone_number,
        duplicate: outcome.duplicate,
        orphan: outcome.orphan,
        conflict: outcome.conflict === true,
        latencyMs: performance.now() - started,
      });
    } catch (err) {
      if (!(err instanceof RequestRefused)) throw err;
      this.stats.rejected++;
      this.reply(res, err.status, { error: err.message }, err.headers);
      // A refused body may still be arriving (413): the socket is closed for good, not left half-open.
      if (err.status === 413 || err.status === 408) res.once('finish', () => req.socket.destroy());
      this.emit('rejected', {
        status: err.status,
        reason: err.message,
        method,
        path,
        remoteAddress: req.socket.remoteAddress,
        correlationId,
      });
    }
  }

  /**
   * The secrets to mask in a push: those given, and every key of the batch's traces that its body or headers hold
   * (learned then, for the pushes after it and for the refusal reasons that quote it).
   */
  private secretsOf(body: string, headers: http.IncomingHttpHeaders): readonly string[] {
    const given = this.options.secrets ?? [];
    const traces = this.options.keyTraces ?? [];
    if (traces.length === 0) return given;
    const text = [body, ...Object.values(headers).flat()].join('\n');
    for (const key of keysIn(text, traces)) if (!this.learned.includes(key)) this.learned.push(key);
    return this.learned.length === 0 ? given : [...given, ...this.learned];
  }

  /**
   * Keeps the evidence of a refused push; false (told as a store failure) when it could not be kept: the push is then
   * answered 503, so that the service sends it again rather than its evidence being lost.
   */
  private async keepRefused(push: RefusedPush): Promise<boolean> {
    try {
      await this.store.keepRefused?.(push);
      return true;
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      this.stats.storeFailures++;
      this.emit('store-failed', { count: 1, correlationIds: push.correlationId ? [push.correlationId] : [], error });
      return false;
    }
  }

  private readBody(req: http.IncomingMessage): Promise<string> {
    const declared = Number(req.headers['content-length']);
    const tooLarge = () =>
      new RequestRefused(413, `the body is larger than ${this.maxBody} bytes`, { Connection: 'close' });
    if (Number.isFinite(declared) && declared > this.maxBody) return Promise.reject(tooLarge());
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const onData = (chunk: Buffer) => {
        size += chunk.length;
        if (size > this.maxBody) {
          req.off('data', onData);
          req.pause();
          reject(tooLarge());
          return;
        }
        chunks.push(chunk);
      };
      req.on('data', onData);
      req.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      req.once('error', reject);
      req.once('aborted', () => reject(new Error('the request was aborted')));
    });
  }

  private reply(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    if (res.headersSent || res.destroyed) return;
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'Content-Type': 'application/json',
      'Content-Length': Buffer.byteLength(text),
      'Cache-Control': 'no-store',
      ...(this.closing ? { Connection: 'close' } : {}),
      ...headers,
    });
    res.end(text);
  }

  private enqueue(push: IncomingPush): Promise<StoreOutcome | Error> {
    return new Promise((resolve) => {
      this.queue.push({ push, settle: resolve });
      if (this.flushScheduled || this.draining) return;
      this.flushScheduled = true;
      // Pushes parsed in the same turn of the event loop share one transaction (one fsync).
      setImmediate(() => {
        this.flushScheduled = false;
        this.draining = this.drain();
      });
    });
  }

  /** The one loop that hands pushes to the store, a batch at a time, so stores never overlap. */
  private async drain(): Promise<void> {
    while (this.queue.length > 0) await this.storeBatch(this.queue.splice(0, this.maxBatch));
    this.draining = undefined;
  }

  private async storeBatch(batch: Waiting[]): Promise<void> {
    let outcomes: StoreOutcome[];
    try {
      const pending = this.store.store(batch.map((w) => w.push));
      outcomes = Array.isArray(pending) ? pending : await withTimeout(pending, this.storeTimeoutMs);
      if (outcomes.length !== batch.length)
        throw internalError(`the store answered ${outcomes.length} outcomes for ${batch.length} pushes`);
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      this.stats.storeFailures += batch.length;
      this.emit('store-failed', { count: batch.length, correlationIds: batch.map((w) => w.push.correlationId), error });
      for (const w of batch) w.settle(error);
      return;
    }
    batch.forEach((w, i) => w.settle(outcomes[i]!));
  }
}

/** Headers that carry credentials (a proxy may add them) are not kept. */
const SECRET_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie']);

function evidenceHeaders(req: http.IncomingMessage, secrets: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined || SECRET_HEADERS.has(k)) continue;
    out[k] = maskSecrets(Array.isArray(v) ? v.join(', ') : v, secrets);
  }
  return out;
}

/**
 * A push's body with the secrets it carries masked (in the text, and in JSON strings written with escapes), and the
 * JSON it holds (undefined when it holds none).
 */
function maskPushBody(raw: string, secrets: readonly string[]): { text: string; json: unknown } {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    json = undefined;
  }
  return maskSecretsInBody(raw, json, secrets);
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the store did not answer within ${ms} ms`)), ms);
    promise.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}

export function createReceiver(options: ReceiverOptions): Receiver {
  return new Receiver(options);
}
