// What `dnc check` shows: for each number a human block (verdict, register, credits, correlation id, calling window)
// or a JSON line, and the errors on stderr; then the tally of several numbers.
import type { CheckEvent, CheckResult } from '../check/run.js';
import type * as CheckRecords from './check-records.js';
import type { SaidEvent } from '../context.js';
import type { Judgement } from '../service/answers.js';
import { callingLines } from './calling.js';
import { field } from './field.js';
import { failureLine } from './error.js';
import { paint, type Style } from '../text/colour.js';
import { terminalSafe } from '../text/terminal-safe.js';
import { formatInteger } from '../text/numbers.js';
import { DncError } from '../errors.js';
import type { LookupOutcome, ResponseMeta } from '../service/client.js';
import type { Cost, LookupFailed } from '../wire/types.js';
import type { CallingAnswer } from '../calling/index.js';

export interface CheckRenderOptions {
  /** Symbols (✓ ✗ …) on a terminal; plain words when piped. */
  unicode: boolean;
  color: boolean;
  /** Where a webhook-mode result will be pushed. */
  webhookUrl?: string | undefined;
}

function credits(n: number): string {
  return `${formatInteger(n)} credit${n === 1 ? '' : 's'}`;
}

/** "999 / 1000" from X-RateLimit-Remaining / X-RateLimit-Limit, else from the body's cost object. */
export function balanceText(meta: ResponseMeta, cost?: Cost): string {
  const limit = meta.rateLimitLimit ?? cost?.credit_limit ?? null;
  const remaining = meta.rateLimitRemaining ?? (cost ? cost.credit_limit - cost.total_credits_used : null);
  if (limit === null || remaining === null) return 'balance not reported';
  return `balance ${formatInteger(remaining)} / ${formatInteger(limit)}`;
}

/** Credits this answer charged (or held, for a receipt): X-Credit-Cost, else the body's cost. */
export function creditCost(meta: ResponseMeta, cost?: Cost): number | null {
  return meta.creditCost ?? cost?.credits_used_for_query ?? null;
}

/** Lines for one lookup's outcome; `number` is the number as the user should read it (international format). */
export function renderOutcome(outcome: LookupOutcome, number: string, o: CheckRenderOptions): string[] {
  // Padded so that numbers line up down a list of verdicts.
  const mark = (symbol: string, word: string, colour: Style) =>
    paint(o.color, colour, o.unicode ? `${symbol} ${word.padEnd(11)}` : word.padEnd(11));
  // Every string of the answer came from outside: shown with its control characters escaped.
  const id = terminalSafe(
    (outcome.kind === 'bad_response' ? outcome.verdict.correlationId : outcome.body.correlation_id) ??
      outcome.meta.correlationId ??
      'none',
  );
  const safe = (v: unknown, fallback: string) =>
    typeof v === 'string' ? terminalSafe(v) : v === null || v === undefined ? fallback : terminalSafe(String(v));
  switch (outcome.kind) {
    case 'succeeded': {
      const b = outcome.body;
      const verdict = b.do_not_call ? mark('✗', 'DO NOT CALL', 'red') : mark('✓', 'callable', 'green');
      const country = safe(b.country, '?');
      const where = b.do_not_call
        ? `on the ${country} do-not-call register`
        : `not on the ${country} do-not-call register`;
      const cost = creditCost(outcome.meta, b.cost);
      return [
        `${verdict}  ${number}  ${where}`,
        field('register', safe(b.dnc_list_source, 'not reported')),
        field('checked at', safe(b.timestamp, 'not reported')),
        field(
          'credits',
          `${cost === null ? 'cost not reported' : `${credits(cost)} charged`}, ${balanceText(outcome.meta, b.cost)}`,
        ),
        field('correlation id', id),
      ];
    }
    case 'started': {
      const b = outcome.body;
      const held = creditCost(outcome.meta);
      return [
        `${mark('…', 'started', 'yellow')}  ${number}  ${safe(b.country, '?')} lookup in webhook mode`,
        field('result', `will be pushed to ${o.webhookUrl ?? 'the webhook URL'}`),
        field(
          'credits',
          `${held === null ? 'amount held not reported' : `${credits(held)} held`}, ${balanceText(outcome.meta)}`,
        ),
        field('correlation id', id),
      ];
    }
    case 'failed': {
      const b = outcome.body;
      const cost = creditCost(outcome.meta, b.cost);
      const charged = b.charged ? `yes${cost === null ? '' : `, ${credits(cost)}`}` : 'no';
      return [
        `${mark('!', 'failed', 'yellow')}  ${number}  ${safe(b.error_code, '?')}: ${safe(b.error, '')}`,
        field('charged', `${charged}, ${balanceText(outcome.meta, b.cost)}`),
        field('correlation id', id),
      ];
    }
    case 'bad_response': {
      const v = outcome.verdict;
      const charged =
        v.charged === false ? 'no' : v.charged === true ? 'yes (the amount is not known)' : 'it may have been';
      return [
        `${mark('!', 'NO VERDICT', 'yellow')}  ${number}  ${safe(v.error, '')}`,
        field('charged', `${charged}; \`dnc usage\` shows the balance`),
        field('correlation id', id),
      ];
    }
  }
}

/** The --json line of a verdict or a receipt: the service's body as received, plus http_status and credit_cost. */
export function jsonLine(body: unknown, meta: Pick<ResponseMeta, 'status' | 'creditCost'>): string {
  const base = body !== null && typeof body === 'object' && !Array.isArray(body) ? body : { body };
  return JSON.stringify({ ...base, http_status: meta.status, credit_cost: meta.creditCost });
}

/**
 * A lookup the service answered with a failure (2.3) as the error it is for `dnc check`: the register rejected the
 * number (exit 3), or the lookup failed (exit 6); the hint says whether it was charged and what a new try costs.
 */
export function failedLookupError(body: LookupFailed, label: string): DncError {
  const code = terminalSafe(String(body.error_code));
  const text = terminalSafe(String(body.error ?? ''));
  const id = terminalSafe(String(body.correlation_id));
  const message = `${label}: lookup failed: ${code}: ${text} (correlation id ${id})`;
  const charged =
    body.charged === true
      ? 'the lookup was charged (`dnc usage` shows the balance)'
      : body.charged === false
        ? 'nothing was charged'
        : 'it may have been charged (`dnc usage` shows the balance)';
  if (body.error_code === 'invalid_phone_number')
    return new DncError('E_NUMBER_REJECTED', message, {
      hint: `the register says this number cannot be dialled: correct it before checking it again; ${charged}`,
    });
  return new DncError('E_LOOKUP_FAILED', message, {
    hint:
      body.charged === false
        ? `${charged}: check the number again later`
        : `${charged}; checking it again costs another lookup: quote the correlation id to the provider first`,
  });
}

/**
 * A --json line with the number's calling window added as `calling` (and any other members first), and the number
 * dnc asked about as `dnc_phone_number` on every line (a 403's or a 422's body names none).
 */
export function withCalling(line: string, e164: string, calling: CallingAnswer, extra: object = {}): string {
  return JSON.stringify({ ...(JSON.parse(line) as object), ...extra, dnc_phone_number: e164, calling });
}

/** The error of an answer the judge refused: exit 6, the problem named. */
export function badResponseError(verdict: Judgement, label: string, stop: DncError | undefined): DncError {
  const charged =
    verdict.charged === false ? 'it was not charged' : 'it may have been charged (`dnc usage` shows the balance)';
  // A stop of its own kind (the clocks: E_CLOCK_SKEW) is the error the user acts on; its refusal says what it cost.
  const own = stop !== undefined && stop.code !== 'E_BAD_RESPONSE';
  return new DncError(
    own ? stop.code : 'E_BAD_RESPONSE',
    `${label}: ${verdict.error}${own ? `; ${stop.message}` : ''}`,
    {
      hint: stop?.hint ?? `the number is neither callable nor listed: check it again later; ${charged}`,
    },
  );
}

/** An event about one number (the others are said lines, and the numbers not sent). */
export type NumberEvent = Exclude<CheckEvent, SaidEvent | { type: 'not_sent' } | { type: 'waiting_for_colleague' }>;

/** How `dnc check` shows its numbers. */
export interface CheckView {
  json: boolean;
  render: CheckRenderOptions;
  reuseWithinMs: number | null;
  /** The lines and JSON of the internal list, exemptions and reuse (check-records.ts, loaded with the use case). */
  records: typeof CheckRecords;
}

/** What is shown of one number: its block on stdout (lines, or one --json line), and an error for stderr. */
export interface NumberShown {
  block: string[] | null;
  error: DncError | null;
}

/** The one place `dnc check` turns a number's event into what it prints, as text or as --json. */
export function numberShown(e: NumberEvent, view: CheckView): NumberShown {
  const { json, records } = view;
  const label = e.number.phone.international;
  const country = e.number.phone.country;
  const e164 = e.number.phone.e164;
  const block = (shown: string[] | null, error: DncError | null = null): NumberShown => ({ block: shown, error });
  switch (e.type) {
    case 'suppressed':
      return block(
        json
          ? [withCalling(records.suppressedJson(e.decision, country), e164, e.calling)]
          : [...records.suppressedLines(e.decision, label), ...callingLines(e.calling, country)],
      );
    case 'reused': {
      if (json) {
        const line = records.reusedJson(e.verdict, view.reuseWithinMs, e.sharedBy);
        return block([withCalling(line, e164, e.calling, records.exemptionJson(e.decision, e.registerDnc))]);
      }
      return block([
        ...records.reusedLines(e.verdict, label, view.reuseWithinMs, e.sharedBy, e.sharedInFlight),
        ...records.exemptionLines(e.decision, e.registerDnc),
        ...callingLines(e.calling, country),
      ]);
    }
    case 'answered': {
      const { outcome, registerDnc } = e;
      if (!json) {
        return block([
          ...renderOutcome(outcome, label, view.render),
          ...records.exemptionLines(e.decision, registerDnc),
          ...callingLines(e.calling, country),
        ]);
      }
      const extra = records.exemptionJson(e.decision, registerDnc);
      // A failure is no verdict: its line carries dnc's error object (the service's text under error.service).
      const failed = outcome.kind === 'failed' && !e.exempted ? failedLookupError(outcome.body, label) : null;
      const raw = Object.keys(extra).length ? { ...(outcome.raw as object), ...extra } : outcome.raw;
      const line = failed ? failureLine(raw, outcome.meta, failed) : jsonLine(raw, outcome.meta);
      return block([withCalling(line, e164, e.calling)], failed);
    }
    case 'refused_answer': {
      const refused = badResponseError(e.outcome.verdict, label, e.outcome.stop);
      return block(
        json
          ? [withCalling(failureLine(e.outcome.raw, e.outcome.meta, refused), e164, e.calling)]
          : [...renderOutcome(e.outcome, label, view.render), ...callingLines(e.calling, country)],
        refused,
      );
    }
    case 'request_error': {
      if (!json) return block(null, e.error);
      // A line for every number: what the service said, when it answered, under error.service.
      const meta = e.error.details.meta as ResponseMeta | undefined;
      const status = meta?.status ?? (e.error.details.status as number | undefined) ?? null;
      const line = failureLine(e.error.details.body, { status, creditCost: meta?.creditCost ?? null }, e.error);
      return block([withCalling(line, e164, e.calling)], e.error);
    }
  }
}

/** While a colleague's lookup of the number is awaited (up to its lease): why the check has not answered yet. */
export function waitingLine(e: Extract<CheckEvent, { type: 'waiting_for_colleague' }>): string {
  return (
    `dnc: ${e.number.phone.international}: another dnc of the team (${terminalSafe(e.claimant)}) is looking it up ` +
    'now: waiting for its answer, nothing sent'
  );
}

export function notSentLine(e: Extract<CheckEvent, { type: 'not_sent' }>): string {
  return `dnc: ${e.interrupted ? 'interrupted; ' : ''}not sent (${e.numbers.length}): ${e.numbers.join(', ')}`;
}

/** The tally of several numbers (null for one). */
export function tallyLine({ numbers, tally }: CheckResult): string | null {
  if (numbers <= 1) return null;
  const parts = (
    [
      [tally.callable, 'callable'],
      [tally.listed, 'on a register'],
      [tally.internal, 'on the internal list'],
      [tally.started, 'started'],
      [tally.failed, 'failed'],
      [tally.bad_response, 'answered with no verdict'],
      [tally.errors, 'not answered'],
      [tally.notSent, 'not sent'],
    ] as const
  )
    .filter(([n]) => n > 0)
    .map(([n, what]) => `${formatInteger(n)} ${what}`);
  const held = tally.held > 0 ? `, ${formatInteger(tally.held)} held` : '';
  const charged = `${formatInteger(tally.credits)} credit(s) charged${held}`;
  return `${formatInteger(numbers)} numbers: ${parts.join(', ')}; ${charged}`;
}

/** What a second Ctrl-C may have cost. */
export const STOPPED_AT_ONCE =
  'dnc: stopped at once: a lookup in flight may have been charged without its answer (`dnc usage` shows the balance)';
