// A webhook push's body, checked field by field against sections 2.2 and 2.3 before it may be stored.
import type { LookupResult } from '../wire/types.js';

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
  return { field: name, message: `field "${name}" must be ${wanted}, got ${v === '' ? 'an empty string' : describe(v)}` };
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
  if (!isObject(body)) return { ok: false, problem: { field: '(body)', message: `the body must be a JSON object, got ${describe(body)}` } };
  const status = body.status;
  if (status !== 'succeeded' && status !== 'failed') {
    const got = typeof status === 'string' ? `"${status}"` : describe(status);
    return { ok: false, problem: { field: 'status', message: `field "status" must be "succeeded" or "failed", got ${got}` } };
  }
  const problem =
    firstProblem(body, COMMON) ??
    firstProblem(body, status === 'succeeded' ? SUCCEEDED : FAILED) ??
    (status === 'succeeded' ? firstProblem(body.cost as Json, COST, 'cost.') : null);
  if (problem) return { ok: false, problem };
  return { ok: true, result: body as unknown as LookupResult };
}
