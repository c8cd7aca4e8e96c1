// The service's API client: requests, headers, status mapping, and retry of failures known to be uncharged.
import { type Dispatcher, errors as undiciErrors, Pool } from 'undici';
import { DncError, serviceError, usageError } from '../errors.js';
import { maskSecrets, maskSecretsInBody } from '../secrets.js';
import { type LegacyUsage, LOOKUP_HEADERS, type UsagePage } from '../wire/types.js';
import { isRegionOfCallingCode } from '../phone/normalize.js';
import { type BodyRead, cutProblem, MAX_ANSWER_BYTES, MAX_USAGE_BYTES, readBounded } from './answer-bytes.js';
import { answerClock, type AnswerClock, type ClockSkew, latestOf, MAX_BELIEVED_OFFSET_MS, skewOf } from './clocks.js';
import { firstLookupsOnTheWire } from './first-lookups.js';
import { repeatedKey, repeatedKeyProblem } from './repeated-keys.js';
import {
  type AnswerHeaders,
  judgeLookupAnswer,
  judgeResult,
  type LookupOutcome,
  type ResponseMeta,
  UNCHARGED_RETRYABLE_CODES,
} from './answers.js';

/** What a use case asks of the client it is given: its connections, and where the clocks' disagreement is told. */
export interface ClientRequest {
  connections?: number;
  onClockSkew?: ((skew: ClockSkew) => void) | undefined;
}

export interface ServiceClientOptions {
  baseUrl: string;
  apiKey: string;
  forwardedHost?: string | undefined;
  /** Per-request timeout (headers and body), ms. */
  timeoutMs?: number;
  /** How many times an uncharged failure is retried (default 3). */
  retries?: number;
  /** Keep-alive connections to the service: size it to the concurrency the command runs at. */
  connections?: number;
  userAgent?: string;
  /** Called once per HTTP exchange (for --verbose); never given the key. */
  onExchange?: (event: ExchangeEvent) => void;
  /** Injected for tests: waiting between retries, and jitter. */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
  /** Base delay of the exponential backoff, ms (default 250). */
  retryBaseMs?: number;
  /**
   * This machine's clock: an answer dated later than it (or than the service's `Date`, when that is ahead) + 5
   * minutes is refused (clocks.ts).
   */
  now?: () => Date;
  /** Told once, at the first answer whose `Date` is more than 5 minutes from `now` (the commands say it). */
  onClockSkew?: (skew: ClockSkew) => void;
  /** Secrets besides the key that an answer must never carry on into dnc's files (masked where they enter). */
  secrets?: readonly string[];
}

export interface ExchangeEvent {
  method: string;
  /** Path and query as sent (no key is ever in a URL). */
  path: string;
  attempt: number;
  /** Request headers as sent, Authorization redacted. */
  requestHeaders: Record<string, string>;
  status?: number;
  responseHeaders?: Record<string, string>;
  error?: string;
  durationMs: number;
}

import { refusalOf, refusalText } from './refusals.js';
export type { LookupOutcome, ResponseMeta } from './answers.js';

export interface LookupRequest {
  /** E.164 (the client URL-encodes it: `+` → `%2B`). */
  phoneNumber: string;
  webhookUrl?: string | undefined;
}

export interface UsageRequest {
  numBillingPeriods?: number | undefined;
  /** An int64 (2.5): a bigint or decimal text keeps ids above 2^53 exact. */
  id?: number | bigint | string | undefined;
  cursor?: string | undefined;
}

/** Body and meta of a free (usage) endpoint. */
export interface FreeAnswer<T> {
  body: T;
  raw: unknown;
  /** The body exactly as received (int64 values a double would round stay exact in it). */
  text: string;
  meta: ResponseMeta;
}

export interface ServiceClient {
  lookup(request: LookupRequest): Promise<LookupOutcome>;
  usage(request?: UsageRequest): Promise<FreeAnswer<UsagePage>>;
  legacyUsage(): Promise<FreeAnswer<LegacyUsage>>;
  close(): Promise<void>;
  /** Drops every connection at once, failing requests in flight (a second Ctrl-C); close() waits for them. */
  destroy?(): Promise<void>;
  /**
   * Resolves once the first lookups are on the wire (their headers written to a socket) or over: every lookup asked
   * for from the first one until none is left waiting to be written. Work that would compete with them for the one
   * thread waits for it.
   */
  firstLookupsSent?(): Promise<void>;
}

/** Codes of errors thrown by the client (DncError.code). */
export const ClientErrorCode = {
  badRequest: 'E_BAD_REQUEST',
  missingKey: 'E_AUTH_MISSING',
  forbidden: 'E_AUTH_FORBIDDEN',
  notFound: 'E_NOT_FOUND',
  usageQueryRejected: 'E_USAGE_QUERY_REJECTED',
  unsupportedCountry: 'E_UNSUPPORTED_COUNTRY',
  creditLimit: 'E_CREDIT_LIMIT',
  service: 'E_SERVICE',
  badResponse: 'E_BAD_RESPONSE',
  network: 'E_NETWORK',
  timeout: 'E_TIMEOUT',
} as const;

// Errors raised before any byte of the request can have reached the service: always safe to retry.
export const NOT_SENT_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

const E164_ONLY = /^\+?\d+$/;
/** The reason a request's deadline aborts it with: AbortSignal.timeout's own words and name. */
const TIMED_OUT = 'The operation was aborted due to timeout';

/** The key as sent after `Bearer ` (section 5): a key given with the prefix already is not prefixed twice. */
export function bearerToken(apiKey: string): string {
  return apiKey
    .trim()
    .replace(/^bearer\s+/i, '')
    .trim();
}

function headerValue(headers: Record<string, string | string[] | undefined>, name: string): string | null {
  const v = headers[name];
  if (v === undefined) return null;
  return Array.isArray(v) ? (v[0] ?? null) : v;
}

function headerNumber(headers: Record<string, string | string[] | undefined>, name: string): number | null {
  const v = headerValue(headers, name);
  if (v === null || v.trim() === '') return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

function flatHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

function errnoCode(err: unknown): string | undefined {
  let e: unknown = err;
  for (let depth = 0; e && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'UND_ERR_SOCKET') return code;
    e = (e as { cause?: unknown }).cause;
  }
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

interface RawAnswer extends BodyRead {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The clocks at its arrival: this machine's, and the service's `Date`. */
  clock: AnswerClock;
}

/** One exchange's answer, parsed; `json` is undefined when the body is not JSON, or was cut at the limit. */
interface ParsedAnswer extends RawAnswer {
  json: unknown;
  /** A field the body gives twice (repeated-keys.ts), or null. */
  repeatedKey: string | null;
  meta: ResponseMeta;
}

/** The query of a lookup: E.164 (the batch's every number) encodes the same either way; URLSearchParams otherwise. */
function lookupPath(request: LookupRequest): string {
  let query = E164_ONLY.test(request.phoneNumber)
    ? `phone_number=${encodeURIComponent(request.phoneNumber)}`
    : new URLSearchParams({ phone_number: request.phoneNumber }).toString();
  if (request.webhookUrl !== undefined)
    query += `&${new URLSearchParams({ webhook_url: request.webhookUrl }).toString()}`;
  return `/check_phone_number?${query}`;
}

/** The path and query of a usage page. */
function usagePath(request: UsageRequest): string {
  const query = new URLSearchParams();
  if (request.numBillingPeriods !== undefined) query.set('num_billing_periods', String(request.numBillingPeriods));
  // An int64 id as given (a bigint or its digits), never through a double: 2^53 + 1 stays 2^53 + 1.
  if (request.id !== undefined) query.set('id', String(request.id));
  if (request.cursor !== undefined) query.set('cursor', request.cursor);
  const qs = query.toString();
  return `/v2/usage_stats${qs ? `?${qs}` : ''}`;
}

/** One exchange's answer, parsed; the service's text masked where it enters (secrets: the key and the others). */
function parseAnswer(answer: RawAnswer, attempts: number, secrets: readonly string[]): ParsedAnswer {
  let parsed: unknown;
  try {
    parsed = answer.text === '' || answer.cut ? undefined : JSON.parse(answer.text);
  } catch {
    parsed = undefined;
  }
  // Only an object can repeat a name; a scalar or a text that is not JSON has nothing to scan.
  const repeated = typeof parsed === 'object' && parsed !== null ? repeatedKey(answer.text) : null;
  // A service that echoes the key (in an error text, a register URL) never gets it into a journal, a cache or a
  // results file: what it said is masked here, where it enters, and kept so as evidence.
  const { text, json } = maskSecretsInBody(answer.text, parsed, secrets);
  const headers = Object.fromEntries(
    Object.entries(answer.headers).map(([k, v]) => [
      k,
      typeof v === 'string' ? maskSecrets(v, secrets) : Array.isArray(v) ? v.map((x) => maskSecrets(x, secrets)) : v,
    ]),
  );
  return {
    ...answer,
    headers,
    text,
    json,
    repeatedKey: repeated,
    meta: {
      status: answer.status,
      creditCost: headerNumber(headers, LOOKUP_HEADERS.creditCost),
      rateLimitLimit: headerNumber(headers, LOOKUP_HEADERS.rateLimitLimit),
      rateLimitRemaining: headerNumber(headers, LOOKUP_HEADERS.rateLimitRemaining),
      correlationId: headerValue(headers, LOOKUP_HEADERS.correlationId),
      attempts,
    },
  };
}

/** What the headers of section 4.1 said, as received, for the judge. */
function answerHeaders(answer: ParsedAnswer): AnswerHeaders {
  return {
    creditCost: headerValue(answer.headers, LOOKUP_HEADERS.creditCost),
    rateLimitLimit: headerValue(answer.headers, LOOKUP_HEADERS.rateLimitLimit),
    correlationId: answer.meta.correlationId,
  };
}

/** A typed error for an answer about the request (or one no rule covers): never a verdict about a number. */
function refusal(answer: ParsedAnswer, what: string, forwardedHost: string | null, webhook = false): DncError {
  return refusalOf(
    { status: answer.status, json: answer.json, text: answer.text, details: { meta: answer.meta } },
    { what, webhook, forwardedHost },
  );
}

/** The service's regions of a number's calling code: what a lookup's answer may name as its country. */
const countryFits = (country: string, e164: string) => isRegionOfCallingCode(country, e164);

/** Section 7: a failure the service says was not charged and is worth asking again. */
function retryableLookup(answer: ParsedAnswer, e164: string, latest: Date): boolean {
  if (answer.status < 500 || (answer.json as { status?: unknown } | undefined)?.status !== 'failed') return false;
  const v = judgeResult(answer.json, {
    sentE164: e164,
    countryFits,
    headers: answerHeaders(answer),
    httpStatus: answer.status,
    latest,
    repeatedKey: answer.repeatedKey,
  });
  return v.errorCode !== null && UNCHARGED_RETRYABLE_CODES.has(v.errorCode) && v.charged === false;
}

/** A free (usage) endpoint's answer: its body, or the typed error its status says. */
function judgeFreeAnswer<T>(answer: ParsedAnswer, what: string, forwardedHost: string | null): FreeAnswer<T> {
  const unread = answer.cut ? cutProblem(answer.cut) : null;
  if (answer.status === 200 && (unread || answer.repeatedKey)) {
    throw serviceError(
      ClientErrorCode.badResponse,
      `the service's answer to the ${what} was refused: ${unread ?? repeatedKeyProblem(answer.repeatedKey!)}`,
      { hint: 'report it with --verbose output; nothing was charged (usage is free)', details: { meta: answer.meta } },
    );
  }
  if (answer.status === 200 && answer.json !== undefined && typeof answer.json === 'object') {
    return { body: answer.json as T, raw: answer.json, text: answer.text, meta: answer.meta };
  }
  if (answer.status === 400 || answer.status === 404) {
    const refused = refusal(answer, what, forwardedHost);
    // A refusal about the reseller header is said as such; any other 400 is about the query's parameters.
    if (refused.code === 'E_RESELLER_HEADER') throw refused;
    if (answer.status === 400) {
      throw usageError(
        ClientErrorCode.usageQueryRejected,
        `the service rejected the ${what} (400): ${refusalText(answer)}`,
        {
          details: { status: 400, body: answer.json ?? answer.text },
        },
      );
    }
    throw usageError(ClientErrorCode.notFound, `billing period not found (404): ${refusalText(answer)}`, {
      hint: 'the id is unknown or belongs to another account; `dnc usage --all` lists the periods you can see',
      details: { status: 404, body: answer.json ?? answer.text },
    });
  }
  throw refusal(answer, what, forwardedHost);
}

/** Always retried: a failure of a free endpoint's service itself costs nothing. */
const serverFailure = (a: ParsedAnswer) => a.status >= 500;

/**
 * The client's transport: its pool and headers, one exchange with its deadline and --verbose event, and the retry
 * policy over exchanges.
 */
class Exchanges {
  readonly base: URL;
  readonly prefix: string;
  readonly timeoutMs: number;
  readonly now: () => Date;
  readonly secrets: readonly string[];
  readonly forwardedHost: string | null;
  /** The lookups' connections: as many as the caller has lookups in flight. */
  readonly pool: Dispatcher;
  /**
   * The free endpoints' connection, apart: a batch asks for the balance beside its first lookups, and on the lookups'
   * pool it would hold one of their connections for a round trip (the last of the first lookups left that much
   * later, and the run ended as much later: docs/BENCHMARKS.md, item 8). Opened by the first free request.
   */
  private freePool: Dispatcher | null = null;
  private readonly retries: number;
  private readonly retryBaseMs: number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;
  private readonly baseHeaders: Record<string, string>;
  private readonly loggedHeaders: Record<string, string>;
  private readonly onExchange: ((event: ExchangeEvent) => void) | undefined;
  private onClockSkew: ((skew: ClockSkew) => void) | undefined;

  constructor(options: ServiceClientOptions) {
    this.base = new URL(options.baseUrl);
    this.prefix = this.base.pathname.replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.retries = options.retries ?? 3;
    this.retryBaseMs = options.retryBaseMs ?? 250;
    this.now = options.now ?? (() => new Date());
    this.secrets = [options.apiKey, ...(options.secrets ?? [])];
    this.forwardedHost = options.forwardedHost ? options.forwardedHost : null;
    this.sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
    this.random = options.random ?? Math.random;
    this.onExchange = options.onExchange;
    this.onClockSkew = options.onClockSkew;
    this.pool = this.newPool(Math.max(1, options.connections ?? 4));
    this.baseHeaders = {
      authorization: `Bearer ${bearerToken(options.apiKey)}`,
      accept: 'application/json',
      'user-agent': options.userAgent ?? 'dnc',
    };
    if (options.forwardedHost) this.baseHeaders['x-forwarded-host'] = options.forwardedHost;
    this.loggedHeaders = { ...this.baseHeaders, authorization: 'Bearer ***' };
  }

  private newPool(connections: number): Dispatcher {
    return new Pool(this.base.origin, {
      connections,
      keepAliveTimeout: 30_000,
      headersTimeout: this.timeoutMs,
      bodyTimeout: this.timeoutMs,
      connect: { timeout: Math.min(this.timeoutMs, 10_000) },
    });
  }

  /** The first answer whose clock disagrees with this machine's by more than the skew: told once, then no more. */
  private noticeClock(clock: AnswerClock): void {
    const skew = this.onClockSkew ? skewOf(clock) : null;
    // Further ahead than its Date is believed: the answers are refused, and the run's stop names the clock.
    if (skew === null || skew.offsetMs > MAX_BELIEVED_OFFSET_MS) return;
    const tell = this.onClockSkew!;
    this.onClockSkew = undefined;
    tell(skew);
  }

  /** Every connection the client has opened. */
  get pools(): Dispatcher[] {
    return this.freePool ? [this.pool, this.freePool] : [this.pool];
  }

  private backoff(attempt: number): number {
    // Full jitter over an exponential ceiling, capped so a retry never waits more than 8 s.
    const ceiling = Math.min(8_000, this.retryBaseMs * 2 ** (attempt - 1));
    return Math.round(ceiling / 2 + (this.random() * ceiling) / 2);
  }

  private async exchange(pathAndQuery: string, attempt: number, free: boolean): Promise<RawAnswer> {
    const started = performance.now();
    const timeoutMs = this.timeoutMs;
    // undici's own header and body timeouts tick on a 1 s clock (a 10 ms --timeout waited 1.4 s): a signal is exact.
    // undici listens to it until the body is read, so it bounds the wait in the pool's queue, the headers and the body.
    // A controller whose timer is cleared when the request ends, rather than AbortSignal.timeout, whose timer stays
    // pending for the whole --timeout after every answer until its signal is collected (in a batch, tens of
    // thousands of them): ≈ 10 µs less CPU per lookup (docs/BENCHMARKS.md).
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new DOMException(TIMED_OUT, 'TimeoutError')), timeoutMs);
    try {
      const pool = free ? (this.freePool ??= this.newPool(1)) : this.pool;
      const res = await pool.request({
        method: 'GET',
        path: pathAndQuery,
        headers: this.baseHeaders,
        signal: deadline.signal,
      });
      const declared = Number(res.headers['content-length']);
      const read = await readBounded(
        res.body,
        free ? MAX_USAGE_BYTES : MAX_ANSWER_BYTES,
        Number.isSafeInteger(declared) ? declared : null,
      );
      const clock = answerClock(headerValue(res.headers, 'date'), this.now());
      this.noticeClock(clock);
      this.onExchange?.({
        method: 'GET',
        path: pathAndQuery,
        attempt,
        requestHeaders: this.loggedHeaders,
        status: res.statusCode,
        responseHeaders: flatHeaders(res.headers),
        durationMs: performance.now() - started,
      });
      return { status: res.statusCode, headers: res.headers, ...read, clock };
    } catch (err) {
      this.onExchange?.({
        method: 'GET',
        path: pathAndQuery,
        attempt,
        requestHeaders: this.loggedHeaders,
        // Aborted by its deadline: said in words (the abort's own code is a DOMException number, 23).
        error: deadline.signal.aborted
          ? `timed out (--timeout ${timeoutMs} ms)`
          : (errnoCode(err) ?? (err as Error).message),
        durationMs: performance.now() - started,
      });
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  private networkError(err: unknown, pathAndQuery: string, free: boolean): DncError {
    const code = errnoCode(err);
    const origin = this.base.origin;
    const where = `${origin}${this.prefix}${pathAndQuery.split('?')[0]}`;
    if (
      err instanceof undiciErrors.HeadersTimeoutError ||
      err instanceof undiciErrors.BodyTimeoutError ||
      (err as Error | null)?.name === 'TimeoutError' ||
      code === 'UND_ERR_CONNECT_TIMEOUT'
    ) {
      return serviceError(
        ClientErrorCode.timeout,
        `the service did not answer within ${this.timeoutMs} ms (${where})`,
        {
          // Not retried for a lookup: the request was sent, so it may have been charged.
          hint: free
            ? 'try again later, or raise --timeout'
            : 'the lookup was sent and may have been charged (`dnc usage` shows the balance); try again later, or ' +
              'raise --timeout',
          cause: err,
          details: { errno: code },
        },
      );
    }
    return serviceError(
      ClientErrorCode.network,
      // A transport error may quote what the peer sent: masked like an answer, since it is kept as a row's error.
      `cannot reach the service at ${origin}: ${code ?? maskSecrets((err as Error).message, this.secrets)}`,
      {
        hint: 'check --base-url / DNC_BASE_URL and your network',
        cause: err,
        details: { errno: code },
      },
    );
  }

  /**
   * Sends a GET, retrying only what `retryable` says is safe (given `arg`, so that a caller need make no closure).
   * Transport errors are retried only when the request cannot have reached the service (connection refused, DNS),
   * or always when `free` (usage endpoints cost nothing).
   */
  async send<A>(
    pathAndQuery: string,
    retryable: (answer: ParsedAnswer, arg: A) => boolean,
    arg: A,
    free: boolean,
  ): Promise<ParsedAnswer> {
    for (let attempt = 1; ; attempt++) {
      let answer: ParsedAnswer;
      try {
        answer = parseAnswer(
          await this.exchange(`${this.prefix}${pathAndQuery}`, attempt, free),
          attempt,
          this.secrets,
        );
      } catch (err) {
        const code = errnoCode(err);
        const safe = free || (code !== undefined && NOT_SENT_CODES.has(code));
        if (safe && attempt <= this.retries) {
          await this.sleep(this.backoff(attempt));
          continue;
        }
        throw this.networkError(err, pathAndQuery, free);
      }
      if (attempt <= this.retries && retryable(answer, arg)) {
        await this.sleep(this.backoff(attempt));
        continue;
      }
      return answer;
    }
  }

  /** A free (usage) endpoint: a failure of the service itself can be retried without cost. */
  async free<T>(pathAndQuery: string, what: string): Promise<FreeAnswer<T>> {
    const answer = await this.send(pathAndQuery, serverFailure, undefined, true);
    return judgeFreeAnswer<T>(answer, what, this.forwardedHost);
  }
}

export function createServiceClient(options: ServiceClientOptions): ServiceClient {
  const calls = new Exchanges(options);
  const { forwardedHost } = calls;
  let destroyed = false;
  const firstSent = firstLookupsOnTheWire(calls.base.origin);
  // Whether a lookup's answer is worth asking again, judged by the clock at each answer.
  const retryable = (answer: ParsedAnswer, e164: string) => retryableLookup(answer, e164, latestOf(answer.clock));

  return {
    async lookup(request) {
      const path = lookupPath(request);
      const webhook = request.webhookUrl !== undefined;
      const onTheWire = `${calls.prefix}${path}`;
      firstSent.watch(onTheWire);
      // Over (answered, or failed before or after it was written): the first lookups wait no longer.
      const answer = await calls.send(path, retryable, request.phoneNumber, false).finally(firstSent.close);
      return judgeLookupAnswer(
        { ...answer, headers: answerHeaders(answer) },
        { e164: request.phoneNumber, webhook, forwardedHost, countryFits },
        answer.clock,
      );
    },

    async usage(request = {}) {
      return calls.free<UsagePage>(usagePath(request), 'usage query');
    },

    async legacyUsage() {
      return calls.free<LegacyUsage>('/usage_stats', 'lifetime usage query');
    },

    firstLookupsSent: () => firstSent.promise,

    async close() {
      firstSent.close();
      // After destroy() there is nothing left to wait for (and undici refuses close() on a destroyed pool).
      if (destroyed) return;
      await Promise.all(calls.pools.map((pool) => pool.close()));
    },

    async destroy() {
      destroyed = true;
      await Promise.all(calls.pools.map((pool) => pool.destroy()));
    },
  };
}
