// How an error is stated with --json: one shape for every command, `{"error": {code, exit_status, message, hint}}`,
// the service's own words (when it answered) kept under `error.service`.
import { DncError, ExitCode } from '../errors.js';

/** What the service said, when the error is about its answer: the HTTP status, its error text and error_code. */
export interface JsonServiceError {
  status: number | null;
  /** The body's `error` member as received; the body itself when it is not JSON (cut at 1,000 characters). */
  error?: unknown;
  /** The body's `error_code` (a failed lookup's: billing_error, invalid_phone_number …). */
  error_code?: unknown;
}

/** An error as --json states it: what a script matches on (code, exit_status), and what a person reads. */
export interface JsonError {
  code: string;
  exit_status: number;
  message: string;
  hint: string | null;
  service?: JsonServiceError;
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The service's part of an error: from the status and body the error carries (service/refusals.ts puts them there). */
export function serviceOf(status: unknown, body: unknown): JsonServiceError | undefined {
  if (typeof status !== 'number') return undefined;
  const out: JsonServiceError = { status };
  if (isRecord(body)) {
    if ('error' in body) out.error = body.error;
    if ('error_code' in body) out.error_code = body.error_code;
  } else if (typeof body === 'string' && body !== '') {
    out.error = body.length > 1000 ? `${body.slice(0, 999)}…` : body;
  }
  return out;
}

/** A DncError as --json states it; `service` given, or read from the error's details (status, body). */
export function jsonErrorOf(err: DncError, service?: JsonServiceError | null): JsonError {
  const json: JsonError = { code: err.code, exit_status: err.exitCode, message: err.message, hint: err.hint ?? null };
  const said = service === undefined ? serviceOf(err.details.status, err.details.body) : service;
  if (said) json.service = said;
  return json;
}

/**
 * The --json line of a number that got no verdict: the service's body as received (an object's members unchanged,
 * its own `error` text included; other text under `body`), then dnc's fields beside it: `http_status`,
 * `credit_cost`, and dnc's error object as `dnc_error`. The CLI contract promises the body as received; a script
 * reads `.dnc_error.code`, null on a verdict (`dnc check` adds `dnc_phone_number` to every line).
 */
export function failureLine(
  body: unknown,
  meta: { status: number | null; creditCost: number | null },
  err: DncError,
  extra: object = {},
): string {
  const received = isRecord(body) ? body : typeof body === 'string' && body !== '' ? { body } : {};
  return JSON.stringify({
    ...received,
    ...extra,
    http_status: meta.status,
    credit_cost: meta.creditCost,
    dnc_error: jsonErrorOf(err, null),
  });
}

/** Where a command's usage is read: the hint of a usage error that gives none of its own. */
export function usageHint(command: string): string {
  return `see 'dnc ${command ? `${command} ` : ''}--help' for the usage`;
}

/**
 * The error as shown, on stderr and with --json alike: a usage error (exit 2) without a hint of its own (an option's
 * value refused, two options in conflict) gets the pointer to the command's usage.
 */
export function withUsageHint(err: DncError, command: string): DncError {
  if (err.hint !== undefined || err.exitCode !== ExitCode.USAGE) return err;
  return new DncError(err.code, err.message, { hint: usageHint(command), cause: err.cause, details: err.details });
}
