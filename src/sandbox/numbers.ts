// The sandbox's number rules: which numbers are well-formed, their country, and the outcome their last three digits
// select.
import metadata from 'libphonenumber-js/metadata.max.json';
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';

const E164 = /^\+[1-9]\d{6,14}$/;

/** `e164`: the number the register looks up (the one given, or a national-format one matched to E.164). */
export type NumberCheck = { ok: true; country: string; e164: string } | { ok: false; error: string };

/** Parsing is the only heavy work of a lookup: each number is parsed once and remembered. */
const cache = new Map<string, NumberCheck>();
const CACHE_LIMIT = 200_000;

/** Is `phone` (already URL-decoded) a number the service can match, which one, and whose country is it? */
export function checkNumber(phone: string): NumberCheck {
  let hit = cache.get(phone);
  if (hit === undefined) {
    hit = classify(phone);
    // Bounded so a long-running sandbox fed endless distinct numbers cannot grow without limit.
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(phone, hit);
  }
  return hit;
}

function classify(phone: string): NumberCheck {
  if (E164.test(phone)) {
    const parsed = parsePhoneNumberFromString(phone);
    if (!parsed) return { ok: false, error: `phone_number '${phone}' is not a phone number` };
    const country = registerCountry(parsed.country ?? mainCountryOf(parsed.countryCallingCode));
    if (!country) return { ok: false, error: `phone_number '${phone}' has no country` };
    return { ok: true, country, e164: phone };
  }
  // An unencoded '+' arrives as a space: not a national number, a client bug worth a 400 (the caller says why).
  if (/^ /.test(phone))
    return { ok: false, error: `phone_number '${phone}' is not in E.164 format (+ then 7 to 15 digits, no spaces)` };
  // National format (4.1: "matched on a best-effort basis"): separators dropped, 00 read as +, then the digits
  // tried as an international number and as a North American one; the first valid reading is looked up.
  const digits = phone.replace(/[\s().\-/]/g, '');
  if (/^\d{6,17}$/.test(digits)) {
    const international = digits.startsWith('00') ? digits.slice(2) : digits;
    for (const candidate of [`+${international}`, `+1${digits}`]) {
      const parsed = parsePhoneNumberFromString(candidate);
      if (parsed?.isValid()) {
        const country = registerCountry(parsed.country ?? mainCountryOf(parsed.countryCallingCode));
        if (country) return { ok: true, country, e164: parsed.number };
      }
    }
  }
  return {
    ok: false,
    error:
      `phone_number '${phone}' is neither E.164 (+ then 7 to 15 digits) nor a national number the service ` +
      `could match`,
  };
}

/**
 * Regions the service files under another country's register, as the real service answers: Guernsey, Jersey and
 * the Isle of Man share +44, and their numbers come back as GB, checked against the GB register. (The client has
 * its own copy in src/phone/countries.ts: the emulator shares only wire types with it.)
 */
const REGISTER_COUNTRY: Readonly<Record<string, string>> = { GG: 'GB', JE: 'GB', IM: 'GB' };

function registerCountry(region: string | undefined): string | undefined {
  return region === undefined ? undefined : (REGISTER_COUNTRY[region] ?? region);
}

function mainCountryOf(callingCode: string): string | undefined {
  const codes = (metadata as unknown as { country_calling_codes: Record<string, string[]> }).country_calling_codes;
  return codes[callingCode]?.[0];
}

/** What the register does with a number, decided by its last three digits (docs/sandbox.md, "Number rules"). */
export type Verdict =
  | { kind: 'succeeded'; doNotCall: boolean }
  | { kind: 'invalid_phone_number' }
  | { kind: 'upstream_timeout' }
  | { kind: 'upstream_error' }
  | { kind: 'billing_error'; charged: boolean }
  | { kind: 'lookup_expired' };

/**
 * The register's answer to attempt number `attempt` (1-based, counted per account and number).
 * `transientFailures`: how many first attempts of a …991/…992 number fail; `billingErrors`: of a …995/…996 number
 * (every one when not given).
 */
export function verdictFor(
  phone: string,
  attempt: number,
  transientFailures: number,
  billingErrors: number = Infinity,
): Verdict {
  const tail = phone.slice(-3);
  switch (tail) {
    case '990':
      return { kind: 'invalid_phone_number' };
    case '991':
      if (attempt <= transientFailures) return { kind: 'upstream_timeout' };
      break;
    case '992':
      if (attempt <= transientFailures) return { kind: 'upstream_error' };
      break;
    case '993':
      return { kind: 'upstream_timeout' };
    case '994':
      return { kind: 'upstream_error' };
    case '995':
      if (attempt <= billingErrors) return { kind: 'billing_error', charged: true };
      break;
    case '996':
      if (attempt <= billingErrors) return { kind: 'billing_error', charged: false };
      break;
    case '997':
      return { kind: 'lookup_expired' };
  }
  const last = phone.charCodeAt(phone.length - 1) - 48;
  return { kind: 'succeeded', doNotCall: last % 2 === 1 };
}

/**
 * Does this number's outcome depend on attempts (so a lookup bumps its per-number attempt count)? A …995/…996
 * number's does when billing errors are limited (`--billing-errors`).
 */
export function isTransientNumber(phone: string, billingErrorsLimited = false): boolean {
  const tail = phone.slice(-3);
  return tail === '991' || tail === '992' || (billingErrorsLimited && (tail === '995' || tail === '996'));
}

const SECOND = 1000;
const HOUR = 3600 * SECOND;
export const AU_MIN_DELAY_MS = 30 * SECOND;
export const LOOKUP_WINDOW_MS = 24 * HOUR;
/** Receipt to push for countries answered "in a few seconds". */
export const FEW_SECONDS_MS = 2 * SECOND;

/**
 * Receipt-to-result time in service milliseconds. Webhook-only countries (AU) take
 * 30 s × 2^d, d being the number's tens digit: 30 s (…0x), 1 min (…1x) … 4 h 16 min (…9x),
 * always inside the described 30 s to 24 h. Every other country answers in 2 s.
 */
export function resultDelayMs(phone: string, webhookOnly: boolean): number {
  if (!webhookOnly) return FEW_SECONDS_MS;
  const tens = phone.charCodeAt(phone.length - 2) - 48;
  return AU_MIN_DELAY_MS * 2 ** tens;
}
