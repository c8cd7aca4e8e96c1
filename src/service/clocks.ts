// Which clock an answer's timestamp is judged by: this machine's, or the service's own (its `Date` header), and the
// disagreement between them named once, before it costs more credits.
import { serviceError, type DncError } from '../errors.js';

/**
 * How far the service's clock and ours may disagree. A timestamp later than now + skew (a verdict dated in 2099)
 * or earlier than the request − skew (a replayed answer) is refused; five minutes covers any NTP-kept clock.
 */
export const DEFAULT_CLOCK_SKEW_MS = 5 * 60_000;

/**
 * How far the service's `Date` may be ahead of this machine's clock and still date its answers. Within it, a slow
 * clock here does not refuse the service's correct answers; beyond it, neither clock can be told right, and a
 * verdict dated that far ahead would look fresh to `--reuse-within` and the validity windows for as long.
 */
export const MAX_BELIEVED_OFFSET_MS = 60 * 60_000;

/** The two clocks as one answer found them: this machine's at its arrival, and the service's `Date`, if it sent one. */
export interface AnswerClock {
  local: Date;
  /** The `Date` header (whole seconds), or null when absent or not a date. */
  service: Date | null;
}

/** The clocks' disagreement: positive when the service's is ahead (this machine's is slow). */
export interface ClockSkew {
  offsetMs: number;
  local: string;
  service: string;
}

/** The event a use case emits when its client notices the disagreement (once a run); the commands show it. */
export type ClockSkewEvent = { type: 'clock_skew'; skew: ClockSkew };

/** An answer's clocks: the `Date` header read as the HTTP date it is (RFC 9110 5.6.7), or null. */
export function answerClock(dateHeader: string | null, local: Date): AnswerClock {
  const ms = dateHeader === null ? NaN : Date.parse(dateHeader);
  return { local, service: Number.isFinite(ms) ? new Date(ms) : null };
}

/** How far the service's clock is ahead of this machine's (negative: behind), ms; null without a `Date`. */
export function offsetOf(clock: AnswerClock): number | null {
  return clock.service === null ? null : clock.service.getTime() - clock.local.getTime();
}

/**
 * The latest instant an answer arriving with `clock` can be dated (before the skew allowed): this machine's clock,
 * or the service's when it is ahead by no more than MAX_BELIEVED_OFFSET_MS (its Date has whole seconds: the second
 * it names is taken to its end).
 */
export function latestOf(clock: AnswerClock): Date {
  const offset = offsetOf(clock);
  if (offset === null || offset <= 0 || offset > MAX_BELIEVED_OFFSET_MS) return clock.local;
  return new Date(clock.service!.getTime() + 999);
}

/** The disagreement of an answer's clocks when it is more than `skewMs`, or null. */
export function skewOf(clock: AnswerClock, skewMs = DEFAULT_CLOCK_SKEW_MS): ClockSkew | null {
  const offset = offsetOf(clock);
  if (offset === null || Math.abs(offset) <= skewMs) return null;
  return { offsetMs: offset, local: clock.local.toISOString(), service: clock.service!.toISOString() };
}

/** "8 min", "2 h 5 min", "40 s". */
function spoken(ms: number): string {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 60) return `${s} s`;
  const min = Math.round(s / 60);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  if (h >= 48) return `${Math.round(h / 24)} days`;
  return min % 60 === 0 ? `${h} h` : `${h} h ${min % 60} min`;
}

/** The clock named: "this machine's clock is 10 min behind the service's (…)". */
export function clockSkewText(skew: ClockSkew): string {
  const way = skew.offsetMs > 0 ? 'behind' : 'ahead of';
  return (
    `this machine's clock is ${spoken(skew.offsetMs)} ${way} the service's (the service's Date header says ` +
    `${skew.service}, this machine ${skew.local})`
  );
}

/**
 * The error that stops a run whose answers are refused for a timestamp this machine's clock cannot allow: every
 * later answer would be refused too, and paid for. `offsetMs` null: the service sent no `Date`, so the answer's own
 * timestamp is the only sign, and either clock may be wrong.
 */
export function clockSkewError(clock: AnswerClock, timestamp: string, answerMs: number): DncError {
  const skew = skewOf(clock, 0);
  const said =
    skew !== null
      ? clockSkewText(skew)
      : `the answer is dated ${timestamp}, ${spoken(answerMs - clock.local.getTime())} after this machine's clock ` +
        `(${clock.local.toISOString()}), and the service sent no Date header to tell which clock is wrong`;
  return serviceError('E_CLOCK_SKEW', `${said}: its answers cannot be dated, so no more lookups are sent`, {
    hint:
      "set this machine's clock right (NTP) and run again; the answer that showed it was charged and is kept " +
      'failed / bad_response',
    details: { clock: { local: clock.local.toISOString(), service: clock.service?.toISOString() ?? null } },
  });
}
