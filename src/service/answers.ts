// The one judge of the service's answers (sections 2.1–2.4, 6, 7): what an answer must be before it counts.
//
// Every answer that reaches dnc, a synchronous lookup answer, a 202 receipt, a webhook push or a verdict read back
// from the results cache, is judged here before anything believes it. A verdict needs a boolean `do_not_call`
// about the very number sent; an answer about the request (authentication, a reseller header, a parameter) is never
// a verdict about a number. Nothing here prints, throws for a bad answer, or reads the clock: callers pass `now`.
import { type DncError, serviceError } from '../errors.js';
import type { LookupFailed, LookupReceipt, LookupResult, LookupSucceeded } from '../wire/types.js';
import { type BodyRead, cutProblem, keptAnswerText } from './answer-bytes.js';
import {
  type AnswerClock,
  clockSkewError,
  DEFAULT_CLOCK_SKEW_MS,
  latestOf,
  MAX_BELIEVED_OFFSET_MS,
  offsetOf,
} from './clocks.js';
import { refusalOf, refusalText } from './refusals.js';
import { repeatedKey, repeatedKeyProblem } from './repeated-keys.js';
import { ALPHA2, isObject, UUID, type Json } from './shapes.js';

export { DEFAULT_CLOCK_SKEW_MS } from './clocks.js';

/** 2.5: credit_limit is an int32; no cost can be larger, whatever the answer says the limit is. */
const INT32_MAX = 2 ** 31 - 1;

/** Section 7: the lookup error codes, their HTTP status and whether they are charged (null: either). */
const ERROR_RULES: Readonly<Record<string, { status: number; charged: boolean | null }>> = {
  invalid_phone_number: { status: 400, charged: true },
  upstream_timeout: { status: 504, charged: false },
  upstream_error: { status: 502, charged: false },
  lookup_expired: { status: 502, charged: false },
  billing_error: { status: 500, charged: null },
};

/** Section 7: codes retried inside the service and never pushed. */
export const NEVER_PUSHED = new Set(['upstream_timeout', 'upstream_error']);

/** Codes the description says were not charged, so a lookup that got one may be sent again. */
export const UNCHARGED_RETRYABLE_CODES: ReadonlySet<string> = new Set(['upstream_timeout', 'upstream_error']);

/** A code section 7 does not list is kept (a newer service may add one) only if it has the shape of one. */
const ERROR_CODE_SHAPE = /^[a-z][a-z0-9_]{0,63}$/;

/** 2.2: "ISO 8601 date-time with microseconds and UTC offset" (a fraction of 1 to 9 digits is read). */
const SERVICE_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{1,9})(Z|([+-])(\d{2}):(\d{2}))$/;

export function shown(v: unknown): string {
  if (v === undefined) return 'nothing';
  const text = JSON.stringify(v) ?? String(v);
  return text.length > 80 ? `${text.slice(0, 77)}…` : text;
}

/** Milliseconds since the epoch of a timestamp of the service's shape, or NaN (a day the month has not, hour 24 …). */
export function serviceTimestampMs(text: string): number {
  const m = SERVICE_TIMESTAMP.exec(text);
  if (!m) return NaN;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (mo < 1 || mo > 12 || d < 1 || d > new Date(Date.UTC(y, mo, 0)).getUTCDate() || h > 23 || mi > 59 || s > 59)
    return NaN;
  const offsetMinutes = m[8] === 'Z' ? 0 : (m[9] === '-' ? -1 : 1) * (Number(m[10]) * 60 + Number(m[11]));
  if (m[8] !== 'Z' && (Number(m[10]) > 23 || Number(m[11]) > 59)) return NaN;
  // Microseconds are cut to milliseconds (never rounded), as parseServiceTime reads them.
  const ms = Number(m[7]!.slice(0, 3).padEnd(3, '0'));
  return Date.UTC(y, mo - 1, d, h, mi, s, ms) - offsetMinutes * 60_000;
}

/**
 * Why a timestamp is not of the service's shape, or is later than an answer arriving at `latest` can carry (allowing
 * `skewMs` of clock disagreement), or null. An early one is not refused here: a verdict only grows stale, and
 * `verify` judges its age (a push's is held to its request by pushMatchProblem).
 */
export function timestampProblem(
  ts: unknown,
  latest: Date,
  skewMs = DEFAULT_CLOCK_SKEW_MS,
  what = 'answer',
): string | null {
  if (typeof ts !== 'string') return `field "timestamp" must be a string, got ${shown(ts)}`;
  const ms = serviceTimestampMs(ts);
  if (!Number.isFinite(ms))
    return `timestamp ${shown(ts)} is not an ISO 8601 date-time with microseconds and a UTC offset`;
  if (ms > latest.getTime() + skewMs)
    return `timestamp ${ts} is later than the ${what}'s arrival (${latest.toISOString()})`;
  return null;
}

/** Why a credit amount (a cost, a header) is not an integer from 0 to the credit limit, or null. */
export function creditAmountProblem(what: string, v: unknown, limit: number | null): string | null {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
    return `${what} must be a whole number of credits from 0, got ${shown(v)}`;
  const max = Math.min(limit ?? INT32_MAX, INT32_MAX);
  if (v > max) return `${what} ${v} is more than the credit limit (${max})`;
  return null;
}

/** A header's text as a number when it is an integer, else the text itself (judged as a credit amount). */
function headerAmount(text: string | null): unknown {
  if (text === null) return undefined;
  return /^\s*-?\d+\s*$/.test(text) ? Number(text) : text;
}

/** The headers of section 4.1 a caller needs, parsed. */
export interface ResponseMeta {
  status: number;
  creditCost: number | null;
  rateLimitLimit: number | null;
  rateLimitRemaining: number | null;
  correlationId: string | null;
  /** How many HTTP attempts this answer took (1 = no retry). */
  attempts: number;
}

/**
 * What a lookup came to, judged (src/service/answers.ts). Failures of the lookup itself (section 7's error codes)
 * are results, not exceptions: `invalid_phone_number` is charged and is an answer about the number. An answer that
 * breaks the description's rules is `bad_response`: failed, never callable, never cached. `meta.creditCost` is the
 * cost the judge believed (null when none was given or it was refused).
 */
export type LookupOutcome =
  | { kind: 'succeeded'; body: LookupSucceeded; verdict: Judgement; raw: unknown; meta: ResponseMeta; text?: string }
  | { kind: 'started'; body: LookupReceipt; raw: unknown; meta: ResponseMeta; text?: string }
  | { kind: 'failed'; body: LookupFailed; verdict: Judgement; raw: unknown; meta: ResponseMeta; text?: string }
  | {
      kind: 'bad_response';
      verdict: Judgement;
      /** The body as received (parsed when it is JSON, else the text). */
      raw: unknown;
      meta: ResponseMeta;
      text?: string;
      /**
       * Set when no later answer of this service can be trusted either (not JSON at all: a proxy, a captive portal).
       */
      stop?: DncError;
    };
// `text`: the body exactly as received, so that a caller storing it need not serialise `raw` again.

/** What the headers of section 4.1 say, as received. */
export interface AnswerHeaders {
  creditCost: string | null;
  rateLimitLimit: string | null;
  correlationId: string | null;
}

/**
 * The credits an answer reports (X-Credit-Cost and `cost.credits_used_for_query`): both integers from 0 to the
 * credit limit, equal when both are there. null when neither is; a problem when they break the rule.
 */
export function judgeCost(body: Json | null, headers: AnswerHeaders): { credits: number | null } | { problem: string } {
  const cost = body?.cost;
  if (cost !== undefined && cost !== null && !isObject(cost))
    return { problem: `field "cost" must be an object, got ${shown(cost)}` };
  const c = (cost ?? {}) as Json;
  const headerLimit = headerAmount(headers.rateLimitLimit);
  const limit =
    typeof c.credit_limit === 'number' ? c.credit_limit : typeof headerLimit === 'number' ? headerLimit : null;
  if (c.credit_limit !== undefined) {
    const p = creditAmountProblem('cost.credit_limit', c.credit_limit, null);
    if (p) return { problem: p };
  }
  if (
    c.total_credits_used !== undefined &&
    (typeof c.total_credits_used !== 'number' ||
      !Number.isSafeInteger(c.total_credits_used) ||
      c.total_credits_used < 0)
  ) {
    return { problem: `cost.total_credits_used must be a whole number from 0, got ${shown(c.total_credits_used)}` };
  }
  const fromBody = c.credits_used_for_query;
  const fromHeader = headerAmount(headers.creditCost);
  if (fromBody !== undefined) {
    const p = creditAmountProblem('cost.credits_used_for_query', fromBody, limit);
    if (p) return { problem: p };
  }
  if (fromHeader !== undefined) {
    const p = creditAmountProblem('header X-Credit-Cost', fromHeader, limit);
    if (p) return { problem: p };
  }
  if (fromBody !== undefined && fromHeader !== undefined && fromBody !== fromHeader) {
    return {
      problem:
        `header X-Credit-Cost (${String(fromHeader)}) differs from cost.credits_used_for_query ` +
        `(${String(fromBody)})`,
    };
  }
  const credits = (fromHeader ?? fromBody) as number | undefined;
  return { credits: credits ?? null };
}

function correlationProblem(body: Json, headers: AnswerHeaders): string | null {
  const id = body.correlation_id;
  if (typeof id !== 'string' || !UUID.test(id)) return `correlation_id must be a UUID, got ${shown(id)}`;
  if (headers.correlationId !== null && headers.correlationId !== id) {
    return (
      `header X-Service-Correlation-Id (${shown(headers.correlationId)}) differs from the body's ` +
      `correlation_id (${id})`
    );
  }
  return null;
}

/**
 * Whether an answer's country may be the country of the number sent: a region of the number's calling code (a +44
 * number libphonenumber places in GG or JE is the one the service calls GB; +1 answered GB is another register's).
 */
export type CountryFits = (country: string, sentE164: string) => boolean;

/** What an answer must be about: the number sent, and a country its calling code allows (when `fits` is given). */
export interface AboutTheNumber {
  sentE164: string;
  countryFits?: CountryFits | undefined;
}

function aboutProblem(body: Json, about: AboutTheNumber): string | null {
  const { sentE164, countryFits } = about;
  if (body.phone_number !== sentE164)
    return `the answer is about ${shown(body.phone_number)}, not the number sent (${sentE164})`;
  if (typeof body.country !== 'string' || !ALPHA2.test(body.country))
    return `country ${shown(body.country)} is not an ISO 3166-1 alpha-2 code`;
  if (countryFits && !countryFits(body.country, sentE164))
    return `the answer is about the ${body.country} register, not the country of ${sentE164}`;
  return null;
}

export function listSourceProblem(source: unknown): string | null {
  if (source === undefined || source === null || source === '') return null;
  if (typeof source !== 'string') return `dnc_list_source must be a string, got ${shown(source)}`;
  let url: URL | null = null;
  try {
    url = new URL(source);
  } catch {
    url = null;
  }
  // The URL parser drops or encodes control characters and spaces; a register URL never has them.
  if (!url || url.protocol !== 'https:' || /[\s\u0000-\u001f\u007f-\u009f]/.test(source))
    return `dnc_list_source ${shown(source)} is not an https URL`;
  return null;
}

/** Why a failure body's code, charge and status contradict section 7, or null. */
export function failureProblem(body: Json, httpStatus: number | null): string | null {
  const code = body.error_code;
  if (typeof code !== 'string' || !ERROR_CODE_SHAPE.test(code))
    return `error_code ${shown(code)} is not an error code (section 7: lower-case words joined by _)`;
  if (typeof body.charged !== 'boolean') return `field "charged" must be true or false, got ${shown(body.charged)}`;
  if (body.error !== undefined && typeof body.error !== 'string')
    return `field "error" must be a string, got ${shown(body.error)}`;
  const rule = ERROR_RULES[code];
  if (rule && rule.charged !== null && body.charged !== rule.charged) {
    const rule_ = rule.charged ? 'always charged' : code === 'lookup_expired' ? 'always refunded' : 'never charged';
    return `${code} is ${rule_} (section 7), but the answer says charged is ${String(body.charged)}`;
  }
  if (httpStatus !== null && rule && httpStatus !== rule.status)
    return `${code} comes with HTTP ${rule.status} (section 7), not ${httpStatus}`;
  if (httpStatus !== null && !rule && httpStatus < 400)
    return `a failure (${code}) cannot come with HTTP ${httpStatus}`;
  return null;
}

/** What a judged answer says about the number that was sent. */
export interface Judgement {
  /** callable/do_not_call: a verdict; invalid: the register rejected the number; failed: no verdict. */
  result: 'callable' | 'do_not_call' | 'invalid' | 'failed';
  doNotCall: boolean | null;
  listSource: string | null;
  checkedAt: string | null;
  correlationId: string | null;
  /** The service's error_code, or `bad_response` for an answer the judge refused. */
  errorCode: string | null;
  error: string | null;
  /** Whether credits were spent: null when the answer does not say in a way that can be believed. */
  charged: boolean | null;
  /** Credits the answer reports (valid ones only); null when unknown (count the highest cost known). */
  credits: number | null;
}

export const BAD_RESPONSE = 'bad_response';

/** The verdict fields of an answer that gives none: not on or off any list, so never callable. */
export const NO_VERDICT = { doNotCall: null, listSource: null, checkedAt: null } as const;

/** The verdict of an answer the judge refused: failed, never callable, never cached. */
export function badResponse(
  problem: string,
  correlationId: string | null,
  charged: boolean | null,
  credits: number | null,
): Judgement {
  return {
    result: 'failed',
    ...NO_VERDICT,
    correlationId,
    errorCode: BAD_RESPONSE,
    error: `the service's answer was refused: ${problem}; no verdict`,
    charged,
    credits,
  };
}

const looseCorrelationId = (body: Json | null): string | null => {
  const id = body?.correlation_id;
  return typeof id === 'string' && UUID.test(id) ? id : null;
};

/**
 * The verdict of a succeeded or failed result (a synchronous answer's body or a push) about `sentE164`, judged:
 * anything that breaks the rules is a bad_response. `charged` of a bad answer: a succeeded one is charged (3), a
 * failed one as it says when that is a boolean.
 */
export function judgeResult(
  body: unknown,
  o: AboutTheNumber & {
    headers: AnswerHeaders;
    httpStatus: number | null;
    latest: Date;
    skewMs?: number;
    /** A field the body's JSON gives twice (repeatedKey), which refuses it. */
    repeatedKey?: string | null;
  },
): Judgement {
  if (!isObject(body)) return badResponse(`the body is not a JSON object (${shown(body)})`, null, null, null);
  const correlationId = looseCorrelationId(body);
  const cost = judgeCost(body, o.headers);
  const credits = 'credits' in cost ? cost.credits : null;
  const chargedSaid = body.status === 'succeeded' ? true : typeof body.charged === 'boolean' ? body.charged : null;
  const bad = (problem: string) =>
    badResponse(problem, correlationId, chargedSaid, chargedSaid === false ? 0 : credits);
  if (body.status !== 'succeeded' && body.status !== 'failed')
    return bad(`field "status" must be "succeeded" or "failed", got ${shown(body.status)}`);
  const problem =
    (o.repeatedKey ? repeatedKeyProblem(o.repeatedKey) : null) ??
    correlationProblem(body, o.headers) ??
    aboutProblem(body, o) ??
    ('problem' in cost ? cost.problem : null) ??
    (body.status === 'succeeded' ? succeededProblem(body, o) : failureProblem(body, o.httpStatus));
  if (problem) return bad(problem);
  return verdictOfResult(body as unknown as LookupResult, credits);
}

/**
 * The verdict of a result (2.2 or 2.3) that broke no rule: a succeeded one is a verdict, charged; a failed one says
 * what it was charged. `credits`: what the answer reports, null when it does not.
 */
export function verdictOfResult(body: LookupResult, credits: number | null): Judgement {
  const correlationId = body.correlation_id;
  if (body.status === 'succeeded') {
    return {
      result: body.do_not_call ? 'do_not_call' : 'callable',
      doNotCall: body.do_not_call,
      listSource: typeof body.dnc_list_source === 'string' && body.dnc_list_source !== '' ? body.dnc_list_source : null,
      checkedAt: body.timestamp,
      correlationId,
      errorCode: null,
      error: null,
      charged: true,
      credits,
    };
  }
  const ts = (body as { timestamp?: unknown }).timestamp;
  return {
    result: body.error_code === 'invalid_phone_number' ? 'invalid' : 'failed',
    doNotCall: null,
    listSource: null,
    checkedAt: typeof ts === 'string' && Number.isFinite(serviceTimestampMs(ts)) ? ts : null,
    correlationId,
    errorCode: body.error_code,
    error: typeof body.error === 'string' ? body.error : null,
    charged: body.charged,
    credits: body.charged ? credits : 0,
  };
}

function succeededProblem(body: Json, o: { httpStatus: number | null; latest: Date; skewMs?: number }): string | null {
  if (o.httpStatus !== null && o.httpStatus !== 200)
    return `a succeeded lookup comes with HTTP 200, not ${o.httpStatus}`;
  if (body.error_code !== null && body.error_code !== undefined)
    return `a succeeded lookup has no error_code, got ${shown(body.error_code)}`;
  if (typeof body.do_not_call !== 'boolean')
    return `the answer has no do_not_call verdict (true or false), got ${shown(body.do_not_call)}`;
  if ('charged' in body && body.charged !== true)
    return 'a succeeded lookup is charged (section 3), but the answer says charged is not true';
  return timestampProblem(body.timestamp, o.latest, o.skewMs) ?? listSourceProblem(body.dnc_list_source);
}

/** A 202 receipt (2.1) about `sentE164`, judged: the receipt, or why it cannot be believed. */
export function judgeReceipt(
  body: unknown,
  o: AboutTheNumber & { headers: AnswerHeaders; repeatedKey?: string | null },
): { ok: true; receipt: LookupReceipt; creditsHeld: number | null } | { ok: false; verdict: Judgement } {
  const json = isObject(body) ? body : null;
  const cost = judgeCost(json, o.headers);
  const held = 'credits' in cost ? cost.credits : null;
  const problem = !json
    ? `the body is not a JSON object (${shown(body)})`
    : json.status !== 'started'
      ? `a 202 receipt has status "started", got ${shown(json.status)}`
      : ((o.repeatedKey ? repeatedKeyProblem(o.repeatedKey) : null) ??
        correlationProblem(json, o.headers) ??
        aboutProblem(json, o) ??
        ('problem' in cost ? cost.problem : null));
  // A receipt holds credits (3): spent until the push says otherwise.
  if (problem) return { ok: false, verdict: badResponse(problem, looseCorrelationId(json), null, held) };
  return { ok: true, receipt: json as unknown as LookupReceipt, creditsHeld: held };
}

/**
 * A verdict kept for reuse (the results cache), judged again as it is read: its stored answer must be a succeeded
 * answer about that number whose do_not_call says what the cached result says, with the same correlation id and
 * timestamp. A row written or edited by anything else is never reused.
 */
export function storedVerdictProblem(v: {
  e164: string;
  result: string;
  correlationId: string;
  checkedAt: string;
  body: string | null;
}): string | null {
  if (v.body === null) return 'no answer is kept with it';
  let body: unknown;
  try {
    body = JSON.parse(v.body);
  } catch {
    return 'its answer is not JSON';
  }
  if (!isObject(body) || body.status !== 'succeeded') return 'its answer is not a succeeded lookup';
  // Edited to say callable last: JSON.parse would read the second of two do_not_call as the verdict.
  const twice = repeatedKey(v.body);
  if (twice !== null) return `its answer gives the field "${twice}" twice`;
  if (body.phone_number !== v.e164) return `its answer is about ${shown(body.phone_number)}`;
  if (typeof body.do_not_call !== 'boolean' || (body.do_not_call ? 'do_not_call' : 'callable') !== v.result)
    return 'its answer does not say what the cache says';
  if (body.correlation_id !== v.correlationId || body.timestamp !== v.checkedAt)
    return 'its answer is of another lookup';
  if (!UUID.test(v.correlationId) || !Number.isFinite(serviceTimestampMs(v.checkedAt)))
    return "its correlation id or timestamp is not of the service's shape";
  return null;
}

/** An answer to a lookup as the client received it. */
export interface ReceivedAnswer {
  status: number;
  /** The body parsed, or undefined when it is not JSON (or was cut at the limit). */
  json: unknown;
  text: string;
  /** Bytes read, and whether reading stopped at the limit (answer-bytes.ts). */
  bytes: number;
  cut: BodyRead['cut'];
  /** A field the body's JSON gives twice, or null. */
  repeatedKey: string | null;
  meta: ResponseMeta;
  headers: AnswerHeaders;
}

/** The lookup an answer is to. */
export interface SentRequest {
  e164: string;
  webhook: boolean;
  forwardedHost: string | null;
  countryFits?: CountryFits;
}

/** A lookup's failure body (2.3) may be a result with any status the description gives results with. */
const mayBeResult = (status: number) =>
  status === 200 || status === 202 || (status >= 400 && ![401, 403, 422, 429].includes(status));

const looksFailed = (json: unknown) => isObject(json) && json.status === 'failed';

/**
 * Judges a lookup's answer: a verdict, a receipt, a section-7 failure, or a bad response; an answer about the request
 * is thrown as a typed error (refusalOf). `meta.creditCost` of the outcome is the cost the judge believed. Its
 * timestamp is judged by `clock` (clocks.ts): the service's `Date` when this machine's clock is behind it.
 */
export function judgeLookupAnswer(answer: ReceivedAnswer, sent: SentRequest, clock: AnswerClock): LookupOutcome {
  const { status, json, text, headers } = answer;
  const refuse = () =>
    refusalOf(
      { status, json, text, details: { meta: answer.meta } },
      { what: 'lookup', webhook: sent.webhook, forwardedHost: sent.forwardedHost },
    );
  // The number was checked before it was sent: a 400 is about it only with the register's invalid_phone_number.
  if (status === 400 && !(looksFailed(json) && (json as Json).error_code === 'invalid_phone_number')) throw refuse();
  // Too long to be read whole: refused unread, like any answer that breaks the rules (a 2xx may have been charged).
  if (answer.cut && status < 300) return badAnswer(answer, badResponse(cutProblem(answer.cut), null, null, null), null);
  if (!mayBeResult(status) || (status >= 400 && !looksFailed(json))) throw refuse();
  const withCost = (credits: number | null): ResponseMeta => ({ ...answer.meta, creditCost: credits });
  const raw = json === undefined ? text : json;
  const about = { sentE164: sent.e164, countryFits: sent.countryFits, headers, repeatedKey: answer.repeatedKey };
  if (status === 202) {
    const r = judgeReceipt(json, about);
    if (r.ok) return { kind: 'started', body: r.receipt, raw: json, meta: withCost(r.creditsHeld), text };
    return badAnswer(answer, r.verdict, raw);
  }
  const latest = latestOf(clock);
  const verdict = judgeResult(json, { ...about, httpStatus: status, latest });
  if (verdict.errorCode === BAD_RESPONSE) return badAnswer(answer, verdict, raw, clockStop(json, latest, clock));
  const meta = withCost(verdict.credits);
  return verdict.result === 'callable' || verdict.result === 'do_not_call'
    ? { kind: 'succeeded', body: json as LookupSucceeded, verdict, raw: json, meta, text }
    : { kind: 'failed', body: json as LookupFailed, verdict, raw: json, meta, text };
}

/**
 * The stop of a refused answer dated later than `latest` allows when the clocks may be the cause: the service sent no
 * `Date`, or one further ahead of this machine's clock than it is believed (clocks.ts). Every later answer would be
 * refused as well, each paid for. When its `Date` was believed, the answer is dated beyond the service's own clock
 * and is wrong alone: no stop.
 */
function clockStop(json: unknown, latest: Date, clock: AnswerClock): DncError | undefined {
  const ts = isObject(json) ? json.timestamp : undefined;
  const ms = typeof ts === 'string' ? serviceTimestampMs(ts) : NaN;
  if (!(ms > latest.getTime() + DEFAULT_CLOCK_SKEW_MS)) return undefined;
  const offset = offsetOf(clock);
  return offset === null || offset > MAX_BELIEVED_OFFSET_MS ? clockSkewError(clock, ts as string, ms) : undefined;
}

function badAnswer(answer: ReceivedAnswer, verdict: Judgement, raw: unknown, clockStop?: DncError): LookupOutcome {
  // Not JSON at all: no later answer of this "service" can be believed either (a proxy or captive portal answering).
  // One cut at the limit is not known to be anything: it is refused alone.
  const stop =
    clockStop ??
    (answer.json === undefined && !answer.cut
      ? serviceError(
          'E_BAD_RESPONSE',
          `the service answered a lookup with HTTP ${answer.status} and ${refusalText(answer)}: not the ` +
            `service's answer`,
          {
            hint:
              'check --base-url (a proxy or captive portal may be answering); the lookup may have been ' +
              'charged (`dnc usage` shows the balance)',
            details: { status: answer.status, body: keptAnswerText(answer), meta: answer.meta },
          },
        )
      : undefined);
  return {
    kind: 'bad_response',
    verdict,
    raw,
    meta: { ...answer.meta, creditCost: null },
    // What is kept of it (the journal, the check history) is bounded, whatever its size.
    text: keptAnswerText(answer),
    ...(stop ? { stop } : {}),
  };
}
