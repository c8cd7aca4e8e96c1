// The judge of webhook pushes (sections 2.2, 2.3, 6, 7): a push's shape, the service's rules, and the lookup it is
// about.
// A push is unsigned (6): what it says counts only after these checks, and only about the number dnc sent under its
// correlation id. Shared rules (timestamps, costs, error codes) are src/service/answers.ts's.
import { type LookupResult, PUSH_HEADERS } from '../wire/types.js';
import {
  type AnswerHeaders,
  DEFAULT_CLOCK_SKEW_MS,
  failureProblem,
  judgeCost,
  type Judgement,
  listSourceProblem,
  NEVER_PUSHED,
  serviceTimestampMs,
  shown,
  timestampProblem,
  verdictOfResult,
} from './answers.js';
import { repeatedKey, repeatedKeyProblem } from './repeated-keys.js';
import { ALPHA2, E164, UUID } from './shapes.js';

/** Why a push body was refused: the field at fault (dotted for nested ones) and what is wrong with it. */
export interface PushProblem {
  field: string;
  message: string;
}

export type PushCheck = { ok: true; result: LookupResult } | { ok: false; problem: PushProblem };

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function describe(v: unknown): string {
  if (v === undefined) return 'missing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return `a ${typeof v}`;
}

// 'text': any string, empty included; 'optional-text': that, null or absent. A refused push is lost for good (a 400 is
// not retried), so fields dnc only shows, never decides on, are not held to more than their type.
type Expect = 'string' | 'text' | 'optional-text' | 'boolean' | 'integer' | 'null' | 'object';

function typeProblem(obj: Json, field: string, expect: Expect, prefix = ''): PushProblem | null {
  const v = obj[field];
  const ok =
    expect === 'null'
      ? v === null
      : expect === 'text'
        ? typeof v === 'string'
        : expect === 'optional-text'
          ? v === undefined || v === null || typeof v === 'string'
          : expect === 'integer'
            ? Number.isInteger(v)
            : expect === 'object'
              ? isObject(v)
              : typeof v === expect && (expect !== 'string' || (v as string) !== '');
  if (ok) return null;
  const name = `${prefix}${field}`;
  if (v === undefined) return { field: name, message: `field "${name}" is missing` };
  const wanted =
    expect === 'string'
      ? 'a non-empty string'
      : expect === 'text' || expect === 'optional-text'
        ? 'a string'
        : expect === 'null'
          ? 'null'
          : expect === 'integer'
            ? 'an integer'
            : `a ${expect}`;
  return {
    field: name,
    message: `field "${name}" must be ${wanted}, got ${v === '' ? 'an empty string' : describe(v)}`,
  };
}

function firstProblem(obj: Json, fields: Array<[string, Expect]>, prefix = ''): PushProblem | null {
  for (const [field, expect] of fields) {
    const p = typeProblem(obj, field, expect, prefix);
    if (p) return p;
  }
  return null;
}

/** Fields every push carries (section 6: status, error_code, correlation_id, phone_number, country). */
const COMMON: Array<[string, Expect]> = [
  ['correlation_id', 'string'],
  ['phone_number', 'string'],
  ['country', 'string'],
];
const SUCCEEDED: Array<[string, Expect]> = [
  ['error_code', 'null'],
  ['do_not_call', 'boolean'],
  ['timestamp', 'string'],
  // "URL of the register that matched": a number on no register may have none.
  ['dnc_list_source', 'optional-text'],
  ['cost', 'object'],
];
const FAILED: Array<[string, Expect]> = [
  ['error_code', 'string'],
  ['error', 'text'],
  ['charged', 'boolean'],
];
const COST: Array<[string, Expect]> = [
  ['credits_used_for_query', 'integer'],
  ['total_credits_used', 'integer'],
  ['credit_limit', 'integer'],
];

/**
 * Checks a parsed push body. Extra fields are allowed (the service may add some); the described
 * ones must be present and of their type. error_code values outside section 7 are accepted as
 * strings, so a code added later is stored rather than refused (a refusal is permanent).
 */
export function checkPushBody(body: unknown): PushCheck {
  if (!isObject(body))
    return {
      ok: false,
      problem: { field: '(body)', message: `the body must be a JSON object, got ${describe(body)}` },
    };
  const status = body.status;
  if (status !== 'succeeded' && status !== 'failed') {
    const got = typeof status === 'string' ? `"${status}"` : describe(status);
    return {
      ok: false,
      problem: { field: 'status', message: `field "status" must be "succeeded" or "failed", got ${got}` },
    };
  }
  const problem =
    firstProblem(body, COMMON) ??
    firstProblem(body, status === 'succeeded' ? SUCCEEDED : FAILED) ??
    (status === 'succeeded' ? firstProblem(body.cost as Json, COST, 'cost.') : null);
  if (problem) return { ok: false, problem };
  return { ok: true, result: body as unknown as LookupResult };
}

/** Headers of a push that repeat body fields (section 6). */
export interface PushHeaders {
  phoneNumber?: string;
  country?: string;
  serviceStatus?: number | null;
}

/** Section 7: the HTTP status the synchronous call would have returned (X-Service-Status), by outcome. */
const PUSHED_STATUS: Record<string, number> = {
  succeeded: 200,
  invalid_phone_number: 400,
  lookup_expired: 502,
  billing_error: 500,
};

/**
 * Why a push (already of the shape of 2.2 or 2.3) contradicts the service's own rules, or null. Independent of the
 * journal: a push failing here is refused whoever it claims to be about.
 */
export function pushRuleProblem(
  body: PushBody,
  headers: PushHeaders,
  receivedAt: Date,
  skewMs = DEFAULT_CLOCK_SKEW_MS,
): string | null {
  if (!E164.test(body.phone_number)) return `phone_number ${shown(body.phone_number)} is not E.164`;
  if (!ALPHA2.test(body.country)) return `country ${shown(body.country)} is not an ISO 3166-1 alpha-2 code`;
  if (headers.phoneNumber !== undefined && headers.phoneNumber !== body.phone_number) {
    return (
      `header X-Service-Phone-Number (${headers.phoneNumber}) differs from the body's phone_number ` +
      `(${body.phone_number})`
    );
  }
  if (headers.country !== undefined && headers.country !== body.country) {
    return `header X-Service-Country (${headers.country}) differs from the body's country (${body.country})`;
  }
  const noHeaders: AnswerHeaders = { creditCost: null, rateLimitLimit: null, correlationId: null };
  const cost = judgeCost(body, noHeaders);
  if ('problem' in cost) return cost.problem;
  if (!UUID.test(body.correlation_id)) return `correlation_id must be a UUID, got ${shown(body.correlation_id)}`;
  if (body.status === 'succeeded') {
    if ('charged' in body && body.charged !== true)
      return 'a succeeded lookup is charged (section 3), but the push says charged is not true';
    const p = timestampProblem(body.timestamp, receivedAt, skewMs, 'push') ?? listSourceProblem(body.dnc_list_source);
    if (p) return p;
  } else {
    const p = failureProblem(body, null);
    if (p) return p.replace('the answer says', 'the push says');
    if (NEVER_PUSHED.has(body.error_code))
      return `error_code ${body.error_code} is retried by the service and never pushed (section 7)`;
    const ts = (body as Json).timestamp;
    if (ts !== undefined && ts !== null) {
      const tp = timestampProblem(ts, receivedAt, skewMs, 'push');
      if (tp) return tp;
    }
  }
  const expected = PUSHED_STATUS[body.status === 'succeeded' ? 'succeeded' : body.error_code];
  if (headers.serviceStatus != null && expected !== undefined && headers.serviceStatus !== expected) {
    return (
      `header X-Service-Status ${headers.serviceStatus} does not fit ` +
      `${body.status === 'succeeded' ? 'a succeeded lookup' : body.error_code} (${expected})`
    );
  }
  return null;
}

/** What the journal sent for one correlation id. */
export interface SentLookup {
  e164: string;
  country: string;
  /** When the request was sent (or its receipt recorded), ISO 8601; null when the journal does not know. */
  requestedAt: string | null;
}

/** Why a push does not belong to the lookup dnc sent under its correlation id, or null. */
function pushMatchProblem(body: PushBody, sent: SentLookup, skewMs = DEFAULT_CLOCK_SKEW_MS): string | null {
  if (body.phone_number !== sent.e164)
    return `phone_number ${body.phone_number} is not the number sent under this correlation id`;
  if (body.country !== sent.country)
    return `country ${body.country} is not the country of the number sent under this correlation id (${sent.country})`;
  const ts = body.timestamp;
  if (typeof ts === 'string' && sent.requestedAt) {
    const sentAt = Date.parse(sent.requestedAt);
    const at = serviceTimestampMs(ts);
    if (Number.isFinite(sentAt) && Number.isFinite(at) && at < sentAt - skewMs)
      return `timestamp ${ts} is earlier than the request (${sent.requestedAt})`;
  }
  return null;
}

/**
 * What a push says about the number, for telling a repeat (same verdict: a late or lost 2xx, section 6) from a
 * conflict. Timestamp and cost are left out: they describe the delivery, not the verdict.
 */
export function pushVerdictKey(body: PushBody): string {
  return JSON.stringify([
    body.status,
    body.error_code ?? null,
    body.phone_number,
    body.country,
    body.status === 'succeeded' ? body.do_not_call === true : null,
    body.status === 'succeeded' ? (body.dnc_list_source ?? null) || null : null,
    body.status === 'failed' ? body.charged === true : null,
  ]);
}

/**
 * The verdict of a push read by readPush and matched by pushMatchProblem: credits as its cost says, else what the
 * receipt held (`heldCredits`), 0 when it says it was not charged.
 */
function pushVerdict(body: LookupResult, heldCredits: number): Judgement {
  const cost = (body as { cost?: { credits_used_for_query?: unknown } }).cost?.credits_used_for_query;
  return verdictOfResult(body, typeof cost === 'number' ? cost : heldCredits);
}

/** A push's body as read at the edge: of the shape of 2.2 or 2.3, with whatever fields the service added. */
export type PushBody = LookupResult & Json;

/**
 * A push read once where it arrives (readPush), the typed value every later step works on: its body (checked by
 * checkPushBody), its correlation id (the body's, which the header repeats) and X-Service-Status.
 */
export interface Push {
  correlationId: string;
  result: PushBody;
  /** X-Service-Status: what the synchronous call would have returned (section 6); null when absent. */
  serviceStatus: number | null;
}

/**
 * A push read, or why it was refused: 400 when it is not a push at all (not JSON, not of the shape of 2.2 or 2.3,
 * its correlation id header missing or different), 422 when it breaks the service's own rules (pushRuleProblem).
 * `result` and `correlationId` are what the refused push said, when it said them in a readable shape.
 */
export type PushReading =
  | { ok: true; push: Push }
  | { ok: false; status: 400 | 422; reason: string; result: PushBody | null; correlationId?: string };

const headerText = (v: string | string[] | undefined): string | undefined => (typeof v === 'string' ? v : undefined);

/**
 * Reads a push's body (`raw`, UTF-8) and headers (lower-case names, as node gives them) into a Push: the one parse of
 * a push, at the edge. Independent of the journal: what fails here is refused whoever it claims to be about.
 */
export function readPush(
  raw: string,
  headers: Readonly<Record<string, string | string[] | undefined>>,
  receivedAt: Date,
  skewMs = DEFAULT_CLOCK_SKEW_MS,
): PushReading {
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch (err) {
    return { ok: false, status: 400, reason: `the body is not valid JSON: ${(err as Error).message}`, result: null };
  }
  const checked = checkPushBody(body);
  if (!checked.ok) return { ok: false, status: 400, reason: checked.problem.message, result: null };
  const result = checked.result as PushBody;
  const correlationId = result.correlation_id;
  const refused = (status: 400 | 422, reason: string): PushReading => ({
    ok: false,
    status,
    reason,
    result: status === 422 ? result : null,
    correlationId,
  });
  // JSON.parse kept the last of a repeated field: `"do_not_call":true,"do_not_call":false` would read as callable.
  const twice = repeatedKey(raw);
  if (twice !== null) return refused(422, repeatedKeyProblem(twice));
  const header = headerText(headers[PUSH_HEADERS.correlationId]);
  if (header === undefined || header === '') return refused(400, 'header X-Service-Correlation-Id is missing');
  if (header !== correlationId) {
    return refused(
      400,
      `header X-Service-Correlation-Id (${header}) differs from the body's correlation_id (${correlationId})`,
    );
  }
  const status = headerText(headers[PUSH_HEADERS.status]);
  const serviceStatus = status !== undefined && /^\d{3}$/.test(status) ? Number(status) : null;
  const phoneNumber = headerText(headers[PUSH_HEADERS.phoneNumber]);
  const country = headerText(headers[PUSH_HEADERS.country]);
  const rule = pushRuleProblem(result, { phoneNumber, country, serviceStatus }, receivedAt, skewMs);
  if (rule) return refused(422, rule);
  return { ok: true, push: { correlationId, result, serviceStatus } };
}

/** A push judged against the lookup sent under its correlation id: refused (why), or the verdict it gives. */
export type PushJudgement = { refused: string } | { verdict: Judgement };

/**
 * The one judgment of a push (read by readPush) against what dnc sent under its correlation id (`sent`, whose
 * receipt held `heldCredits`): a push that does not belong to it is refused, one that does gives its verdict.
 */
export function judgePush(
  body: PushBody,
  sent: SentLookup,
  heldCredits: number,
  skewMs = DEFAULT_CLOCK_SKEW_MS,
): PushJudgement {
  const problem = pushMatchProblem(body, sent, skewMs);
  return problem === null ? { verdict: pushVerdict(body, heldCredits) } : { refused: problem };
}

/**
 * A push's body read back from the journal's text (kept when it arrived, after readPush), or null when that text is
 * not a JSON object (an old journal's orphan, or a record stored by a tool).
 */
export function storedPushBody(text: string): PushBody | null {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return null;
  }
  return isObject(body) ? (body as PushBody) : null;
}
