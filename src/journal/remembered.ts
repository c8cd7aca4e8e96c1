// What a journal remembers of a batch's options, judged before a rerun takes it: the journal is a file anything with
// the user's rights can change, and a remembered option becomes the rerun's (its budget, where its lists are written).
// A value dnc never writes is refused by name, never taken (a budget that is not a number would be no budget).
import path from 'node:path';
import { MAX_CONCURRENCY } from '../config.js';
import { TEXT_ENCODINGS } from '../tables/encoding-names.js';
import type { RememberedRun } from './types.js';

type Check = (v: unknown) => boolean;

const nullable =
  (check: Check): Check =>
  (v) =>
    v === null || check(v);
const text: Check = (v) => typeof v === 'string';
const flag: Check = (v) => typeof v === 'boolean';
const whole =
  (min: number, max = Number.MAX_SAFE_INTEGER): Check =>
  (v) =>
    Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= max;
/** The lists' paths are kept resolved (a rerun from another folder finds them). */
const absolutePath: Check = (v) => typeof v === 'string' && v !== '' && path.isAbsolute(v);
const encoding: Check = (v) => (TEXT_ENCODINGS as readonly unknown[]).includes(v);
const COMPLIANCE_KEYS = new Set(['suppressionList', 'seller', 'san', 'campaign']);

const CHECKS: { readonly [K in keyof RememberedRun]-?: Check } = {
  // A string in journals from before several phone columns were read.
  column: nullable((v) => typeof v === 'string' || (Array.isArray(v) && v.length > 0 && v.every(text))),
  countryColumn: nullable(text),
  country: nullable(text),
  delimiter: nullable(text),
  header: flag,
  concurrency: whole(1, MAX_CONCURRENCY),
  webhookUrl: nullable(text),
  webhookAll: flag,
  allowInsecureWebhookUrl: flag,
  maxCredits: nullable(whole(0)),
  callableOut: nullable(absolutePath),
  suppressedOut: nullable(absolutePath),
  reviewOut: nullable(absolutePath),
  dialOut: nullable(absolutePath),
  reuseWithinMs: nullable((v) => typeof v === 'number' && Number.isFinite(v) && v >= 0),
  noReuse: flag,
  escapeFormulas: flag,
  format: nullable((v) => v === 'csv' || v === 'xlsx'),
  sheet: nullable(text),
  skipRows: nullable(whole(0)),
  encoding: nullable(encoding),
  outputEncoding: nullable(encoding),
  compliance: (v) =>
    typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    Object.entries(v).every(([k, s]) => COMPLIANCE_KEYS.has(k) && (s === undefined || typeof s === 'string')),
};

/** Whether `value` is one a journal written by dnc holds for the remembered option `name`. */
export function isRememberedValue(name: keyof RememberedRun, value: unknown): boolean {
  return CHECKS[name](value);
}
