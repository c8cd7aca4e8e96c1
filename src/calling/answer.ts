// A number's calling answer: its window under the rules, weighed with what is known of its verdict. The window alone
// never says a number may be called: a registered, suppressed or invalid number may never be, whatever the hour.
import type { CallingWindow } from './types.js';

/** What is known of a number's verdict when its calling answer is given. */
export type Standing =
  /** A verdict that lets it be called: not on a register, or exempted from one. */
  | 'callable'
  /** On a do-not-call register (and not exempted). */
  | 'do_not_call'
  /** On the internal do-not-call list. */
  | 'suppressed'
  /** Not a valid number (refused locally, or the register's invalid_phone_number). */
  | 'invalid'
  /** A webhook lookup started: its verdict is still to come. */
  | 'pending'
  /** The lookup failed, or its answer was no verdict dnc can stand by, or no answer came. */
  | 'no_verdict'
  /** Not looked up: a window-only question (`dnc window --number`). */
  | 'not_checked';

/** Why `may_call_now` is false: the verdict first, then the time. */
export type NotNowReason = Exclude<Standing, 'callable'> | 'outside_window' | 'never_callable';

/** Standings under which a number may never be called: its windows are not given (null). */
const NEVER: ReadonlySet<Standing> = new Set(['do_not_call', 'suppressed', 'invalid']);

/** The `calling` object of a number: `dnc check --json`, `dnc window --number --json`. */
export interface CallingAnswer extends Omit<CallingWindow, 'next_window_start' | 'next_window_end'> {
  /** A call is allowed at the instant: a callable verdict and inside the window in every zone. */
  readonly may_call_now: boolean;
  /** Why not; null when `may_call_now`. */
  readonly reason: NotNowReason | null;
  /**
   * The window in progress or the next (UTC ISO 8601). Null for a number that may never be called (do_not_call,
   * suppressed, invalid), and when no window lies within five weeks (never_callable).
   */
  readonly next_window_start: string | null;
  readonly next_window_end: string | null;
}

/** The verdict's reason, else the time's: outside the window now, or never inside one. */
export function notNowReason(w: CallingWindow, standing: Standing): NotNowReason | null {
  if (standing !== 'callable') return standing;
  if (w.never_callable) return 'never_callable';
  return w.in_window ? null : 'outside_window';
}

/** The answer for a number of this standing whose window at the instant is `w`. */
export function callingAnswer(w: CallingWindow, standing: Standing): CallingAnswer {
  const { time_zones, location_known, state, ...rest } = w;
  const reason = notNowReason(w, standing);
  const never = NEVER.has(standing);
  return Object.freeze({
    time_zones,
    location_known,
    state,
    may_call_now: reason === null,
    reason,
    ...rest,
    next_window_start: never ? null : w.next_window_start,
    next_window_end: never ? null : w.next_window_end,
  });
}
