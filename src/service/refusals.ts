// What the service's refusals of a request mean: the key, a reseller header, webhooks turned off, a country it
// does not support. An answer about the request, never a verdict about a number.
import { authError, creditError, type DncError, inputError, serviceError, usageError } from '../errors.js';
import { terminalSafe } from '../text/terminal-safe.js';
import { ALPHA2, isObject } from './shapes.js';

/** An answer that is not a lookup's result, as the client read it. */
export interface RefusedAnswer {
  status: number;
  /** The body parsed, or undefined when it is not JSON. */
  json: unknown;
  text: string;
  details: Record<string, unknown>;
}

/** What the request was, to tell what a refusal is about. */
export interface RefusalContext {
  /** 'lookup', 'usage query', 'lifetime usage query'. */
  what: string;
  /** A lookup sent with webhook_url. */
  webhook: boolean;
  /** The X-Forwarded-Host sent, if any (resellers). */
  forwardedHost: string | null;
}

function snippet(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 120 ? `${flat.slice(0, 117)}…` : flat;
}

/**
 * The service's error text of a refusal (2.10), or what the body is when it has none: quoted with its control
 * characters escaped, line breaks included, so that no text of the service's can start a line of dnc's own.
 */
export function refusalText(a: Pick<RefusedAnswer, 'json' | 'text'>): string {
  const body = a.json as { error?: unknown } | undefined;
  if (isObject(body) && typeof body.error === 'string')
    return terminalSafe(body.error.length > 500 ? `${body.error.slice(0, 497)}…` : body.error);
  return a.text ? `non-JSON body: ${terminalSafe(snippet(a.text))}` : 'empty body';
}

const NAMES_RESELLER_HEADER = /x-forwarded-host|forwarded[ _-]?host/i;

const SAYS_WEBHOOKS_OFF = /webhook/i;

const SAYS_DISABLED = /disabled|not enabled|turned off|not available for (this|the|your) account/i;

/**
 * The typed error of an answer about the request rather than the number (section 5, 7: 400 other than a lookup's
 * `invalid_phone_number`, 401, 403, 422, 429), or of an answer no rule covers. Never a verdict: the caller stops
 * or reports it; nothing of it is written as a number's result.
 */
export function refusalOf(a: RefusedAnswer, c: RefusalContext): DncError {
  const text = refusalText(a);
  const details = { ...a.details, status: a.status, body: a.json ?? a.text };
  const sent = c.forwardedHost !== null ? ` (sent: X-Forwarded-Host ${c.forwardedHost})` : '';
  if ((a.status === 400 || a.status === 401 || a.status === 403) && NAMES_RESELLER_HEADER.test(text)) {
    return authError(
      'E_RESELLER_HEADER',
      `the service refused the request for its X-Forwarded-Host header (${a.status})${sent}: ${text}`,
      {
        hint:
          c.forwardedHost === null
            ? 'a reseller key must name the end customer on every request: set --forwarded-host HOST, ' +
              'DNC_FORWARDED_HOST, or "forwarded_host" in the config file; nothing was charged'
            : 'check the host given with --forwarded-host / DNC_FORWARDED_HOST ("forwarded_host" in the config ' +
              'file); nothing was charged',
        details,
      },
    );
  }
  if (c.webhook && (a.status === 400 || a.status === 403) && SAYS_WEBHOOKS_OFF.test(text) && SAYS_DISABLED.test(text)) {
    return authError('E_WEBHOOKS_DISABLED', `webhook lookups are disabled for this account (${a.status}): ${text}`, {
      hint:
        'ask the provider to enable webhook lookups for the account; until then leave out --webhook-url ' +
        '(webhook-only countries such as AU cannot be looked up); nothing was charged',
      details,
    });
  }
  switch (a.status) {
    case 400:
      if (c.webhook && SAYS_WEBHOOKS_OFF.test(text)) {
        return usageError('E_WEBHOOK_URL', `the service refused --webhook-url (400): ${text}`, {
          hint:
            'nothing was charged; give a webhook URL the service accepts (https, a public host, no ' +
            'credentials, at most 2048 characters)',
          details,
        });
      }
      return usageError('E_BAD_REQUEST', `the service refused the ${c.what} itself (400): ${text}`, {
        hint:
          `nothing was charged; this is about the request, not ` +
          `${c.what === 'lookup' ? 'the number (which dnc checked before sending it)' : 'your data'}: check ` +
          `--base-url${c.webhook ? ', --webhook-url' : ''} and --forwarded-host, and report it with --verbose ` +
          `output if they are right`,
        details,
      });
    case 401:
      return authError('E_AUTH_MISSING', `the service refused the request (401): ${text}`, {
        hint: 'the API key is missing or not accepted; check --api-key / DNC_API_KEY',
        details,
      });
    case 403:
      return authError('E_AUTH_FORBIDDEN', `the service refused the API key (403): ${text}`, {
        hint: 'check that the key is current and belongs to an active account',
        details,
      });
    case 422: {
      const body = isObject(a.json) ? a.json : {};
      const country = typeof body.country === 'string' && ALPHA2.test(body.country) ? body.country : null;
      const supported = Array.isArray(body.supported_countries)
        ? body.supported_countries.filter((s): s is string => typeof s === 'string' && ALPHA2.test(s)).slice(0, 300)
        : [];
      return inputError('E_UNSUPPORTED_COUNTRY', unsupportedCountryText(country, supported), {
        hint: c.what === 'lookup' ? 'nothing was charged (a 422 is free)' : undefined,
        details: { ...details, country, supportedCountries: supported },
      });
    }
    case 429:
      return creditError('E_CREDIT_LIMIT', `credit limit reached (429): ${text}`, {
        hint: 'lookups resume at the next billing period or after a credit top-up; `dnc usage` shows the balance',
        details,
      });
    default: {
      const nonJson = a.json === undefined && a.text !== '';
      return serviceError(nonJson ? 'E_BAD_RESPONSE' : 'E_SERVICE', `${c.what} failed: HTTP ${a.status}, ${text}`, {
        hint:
          a.status >= 500
            ? 'the service failed; try again later'
            : 'this answer was not expected; report it with --verbose output',
        details,
      });
    }
  }
}

/** The one wording of an unsupported country, from a 422 or for a number refused locally after one. */
export function unsupportedCountryText(country: string | null, supported: readonly string[]): string {
  const list =
    supported.length > 0 ? `supported: ${supported.join(', ')}` : 'the service did not list the countries it supports';
  return `the service does not cover ${country ?? "this number's country"} (422; ${list})`;
}
