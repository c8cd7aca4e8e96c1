// What a webhook push must be to be believed: consistent with sections 2.2, 2.3, 6 and 7, and with the lookup dnc sent.
import type { LookupResult } from '../wire/types.js';

/**
 * How far the service's clock and ours may disagree. A push's timestamp outside [request − skew, receipt + skew]
 * is refused; five minutes covers any NTP-kept clock and still refuses a verdict dated in 2099.
 */
export const DEFAULT_CLOCK_SKEW_MS = 5 * 60_000;

/** Section 7: the HTTP status the synchronous call would have returned (X-Service-Status), by outcome. */
const SERVICE_STATUS: Record<string, number> = {
  succeeded: 200,
  invalid_phone_number: 400,
  lookup_expired: 502,
  billing_error: 500,
};

/** Section 7: codes retried inside the service and never pushed. */
const NEVER_PUSHED = new Set(['upstream_timeout', 'upstream_error']);

/** Headers of the push request that repeat body fields (section 6). */
export interface PushHeaders {
  phoneNumber?: string;
  country?: string;
  serviceStatus?: number | null;
}

type Body = LookupResult & Record<string, unknown>;

const parseTime = (text: string): number => Date.parse(text.replace(/(\.\d{3})\d+/, '$1'));

/** Section 2.2: "ISO 8601 date-time with microseconds and UTC offset" (fractions of any length are accepted). */
const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

function costProblem(cost: unknown): string | null {
  if (cost === undefined || cost === null) return null;
  if (typeof cost !== 'object' || Array.isArray(cost)) return 'field "cost" must be an object';
  for (const [k, v] of Object.entries(cost as Record<string, unknown>)) {
    if (typeof v === 'number' && (!Number.isSafeInteger(v) || v < 0)) return `field "cost.${k}" must be a non-negative integer, got ${v}`;
  }
  return null;
}

/**
 * Why a push (already of the right shape) contradicts the service's own rules, or null. Independent of the
 * journal: a push failing here is refused whoever it claims to be about.
 */
export function pushRuleProblem(body: Body, headers: PushHeaders, receivedAt: Date, skewMs = DEFAULT_CLOCK_SKEW_MS): string | null {
  if (!/^\+[1-9]\d{3,14}$/.test(body.phone_number)) return `phone_number ${JSON.stringify(body.phone_number)} is not E.164`;
  if (!/^[A-Z]{2}$/.test(body.country)) return `country ${JSON.stringify(body.country)} is not an ISO 3166-1 alpha-2 code`;
  if (headers.phoneNumber !== undefined && headers.phoneNumber !== body.phone_number) {
    return `header X-Service-Phone-Number (${headers.phoneNumber}) differs from the body's phone_number (${body.phone_number})`;
  }
  if (headers.country !== undefined && headers.country !== body.country) {
    return `header X-Service-Country (${headers.country}) differs from the body's country (${body.country})`;
  }
  const cost = costProblem(body.cost);
  if (cost) return cost;
  if (body.status === 'succeeded') {
    if ('charged' in body && body.charged !== true) return 'a succeeded lookup is charged (section 3), but the push says charged is not true';
    const source = body.dnc_list_source;
    if (typeof source === 'string' && source !== '') {
      let url: URL | null = null;
      try {
        url = new URL(source);
      } catch {
        url = null;
      }
      // The URL parser drops or encodes control characters and spaces; a register URL never has them.
      if (!url || url.protocol !== 'https:' || /[\s\u0000-\u001f\u007f-\u009f]/.test(source)) {
        return `dnc_list_source ${JSON.stringify(source)} is not an https URL`;
      }
    }
  } else {
    const code = body.error_code;
    // A code section 7 does not list is kept (a newer service may add one; the row is failed, never callable), but
    // only if it has the shape of one: anything else is no error code, and would reach files and terminals.
    if (typeof code !== 'string' || !/^[a-z][a-z0-9_]{0,63}$/.test(code)) return `error_code ${JSON.stringify(code)} is not an error code (section 7: lower-case words joined by _)`;
    if (NEVER_PUSHED.has(code)) return `error_code ${code} is retried by the service and never pushed (section 7)`;
    if (code === 'invalid_phone_number' && body.charged !== true) return 'invalid_phone_number is always charged (section 7), but the push says charged is false';
    if (code === 'lookup_expired' && body.charged !== false) return 'lookup_expired is always refunded (section 7), but the push says charged is true';
  }
  const expected = SERVICE_STATUS[body.status === 'succeeded' ? 'succeeded' : body.error_code];
  if (headers.serviceStatus != null && expected !== undefined && headers.serviceStatus !== expected) {
    return `header X-Service-Status ${headers.serviceStatus} does not fit ${body.status === 'succeeded' ? 'a succeeded lookup' : body.error_code} (${expected})`;
  }
  const ts = body.timestamp;
  if (ts !== undefined && ts !== null) {
    if (typeof ts !== 'string' || !ISO_WITH_OFFSET.test(ts) || !Number.isFinite(parseTime(ts))) return `timestamp ${JSON.stringify(ts)} is not an ISO 8601 date-time with a UTC offset`;
    if (parseTime(ts) > receivedAt.getTime() + skewMs) return `timestamp ${ts} is later than the push's arrival (${receivedAt.toISOString()})`;
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
export function pushMatchProblem(body: Body, sent: SentLookup, skewMs = DEFAULT_CLOCK_SKEW_MS): string | null {
  if (body.phone_number !== sent.e164) return `phone_number ${body.phone_number} is not the number sent under this correlation id`;
  if (body.country !== sent.country) return `country ${body.country} is not the country of the number sent under this correlation id (${sent.country})`;
  const ts = body.timestamp;
  if (typeof ts === 'string' && sent.requestedAt) {
    const sentAt = Date.parse(sent.requestedAt);
    if (Number.isFinite(sentAt) && parseTime(ts) < sentAt - skewMs) return `timestamp ${ts} is earlier than the request (${sent.requestedAt})`;
  }
  return null;
}

/**
 * What a push says about the number, for telling a repeat (same verdict: a late or lost 2xx, section 6) from a
 * conflict. Timestamp and cost are left out: they describe the delivery, not the verdict.
 */
export function pushVerdictKey(body: Body): string {
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
