// What a number's window at an instant is made of: the time test alone, under the calling rules (no I/O).
import type { CallingBlackout, CallingOverride } from './policy.js';

/** The wall clock and today's window in one of the number's zones. */
export interface LocalTime {
  readonly time_zone: string;
  /** ISO 8601 with the zone's offset at that instant. */
  readonly local_time: string;
  /** Today's permitted window there, local ('08:00-21:00'); null on a day without calls. */
  readonly today_window: string | null;
  /** Why today has no window ('no calls on Sunday', 'public holiday (AU): Anzac Day'); null when it has one. */
  readonly closed_today: string | null;
}

/** A number's window at an instant under the calling rules alone (the `calling` object is `CallingAnswer`). */
export interface CallingWindow {
  /** IANA zones of the number, sorted. */
  readonly time_zones: readonly string[];
  /** False when the data knows only the number's country: the zones are all of the country's. */
  readonly location_known: boolean;
  /** A US number's state (USPS code) from its area code; null elsewhere or when not known. */
  readonly state: string | null;
  /**
   * Inside the permitted window, in every zone, at the instant asked about: the time test alone, never a verdict.
   * What a number's answer says (`may_call_now`) is `callingAnswer` (./answer.ts), which weighs its verdict too.
   */
  readonly in_window: boolean;
  /** The window in progress, or the next one: ISO 8601, UTC. Null when there is none (never_callable). */
  readonly next_window_start: string | null;
  readonly next_window_end: string | null;
  /** No instant within the next five weeks lies inside the window in every zone. */
  readonly never_callable: boolean;
  /** The weekly local rule: 'Mon-Fri 09:00-20:00; Sat 09:00-17:00; not on public holidays (AU)'. */
  readonly weekly_rule: string;
  readonly local_times: readonly LocalTime[];
  /** The rules that made the weekly rule: ['US', 'US-FL', 'policy']. */
  readonly rules: readonly string[];
  /** The team's policy by name, when it has one and it applies. */
  readonly policy: string | null;
  /** The override that set the law aside for this number, as configured. */
  readonly override: CallingOverride | null;
  /** The team's blackout that closes the number's local date at the instant, as configured. */
  readonly blackout: CallingBlackout | null;
  readonly rules_version: string;
}
