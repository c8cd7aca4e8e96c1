// What `dnc check` and `dnc window --number` show of a number's calling answer: local time, today's window, whether
// it may be called now (never for a number on a register or the internal list, whatever the hour), and why not.
import { WEBHOOK_ONLY_COUNTRIES } from '../wire/types.js';
import type { CallingAnswer, NotNowReason } from '../calling/index.js';

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

function field(label: string, value: string): string {
  return `  ${label.padEnd(15)} ${value}`;
}

/** 'Thu 2026-11-26 11:08' from '2026-11-26T11:08:00-05:00' (the wall clock as the core wrote it). */
function wallClock(localTime: string): string {
  const [date = '', time = ''] = localTime.split('T');
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  return `${WEEKDAYS[new Date(Date.UTC(y, m - 1, d)).getUTCDay()]} ${date} ${time.slice(0, 5)}`;
}

/** Why a number may not be called, whatever the hour (its verdict), as the "may call now" line says it. */
function verdictReason(reason: NotNowReason, country: string | undefined): string | null {
  switch (reason) {
    case 'do_not_call':
      return country ? `on the ${country} do-not-call register` : 'on a do-not-call register';
    case 'suppressed':
      return 'on the internal do-not-call list';
    case 'invalid':
      return 'not a valid number';
    case 'pending':
      return 'no verdict yet (it will be pushed to the webhook)';
    case 'no_verdict':
      return 'no verdict (check it again)';
    case 'not_checked':
      // Without a figure: a lookup costs what the service charges for the country (AU 3 in the sandbox).
      return country && WEBHOOK_ONLY_COUNTRIES.includes(country)
        ? "not looked up, so no verdict (`dnc check --webhook-url URL` looks it up, at its country's cost, " +
            'with `dnc listen` receiving the answer)'
        : "not looked up, so no verdict (`dnc check` looks it up, at its country's cost)";
    case 'outside_window':
    case 'never_callable':
      return null;
  }
}

/** Reasons of a number with no verdict yet: its window is still told. */
const VERDICT_MISSING: ReadonlySet<NotNowReason> = new Set(['pending', 'no_verdict', 'not_checked']);

/** The window under the rules alone, for a number whose verdict decides before the time does. */
function windowText(w: CallingAnswer): string {
  if (w.never_callable) return 'never: no moment lies inside the window in every one of its zones';
  return w.in_window
    ? `a call now, until ${w.next_window_end}`
    : `no call now; next window ${w.next_window_start} to ${w.next_window_end}`;
}

/**
 * The lines under a verdict: each zone's wall clock and today's window there, then whether it may be called.
 * `country`: the number's, for "on the GB do-not-call register".
 */
export function callingLines(w: CallingAnswer, country?: string): string[] {
  const lines = w.local_times.map((t, i) =>
    field(
      i === 0 ? 'local time' : '',
      `${wallClock(t.local_time)} ${t.time_zone}; ` +
        (t.today_window === null ? `no calls today (${t.closed_today})` : `today ${t.today_window}`),
    ),
  );
  if (w.time_zones.length === 0) lines.push(field('local time', 'not known (no time zone for this number)'));
  else if (!w.location_known)
    lines.push(field('', "(the number's place is not known: all of its country's zones apply)"));
  const why = w.reason === null ? null : verdictReason(w.reason, country);
  // The window matters still when the verdict is only missing: once it comes, that is when to call.
  if (why !== null && VERDICT_MISSING.has(w.reason!)) lines.push(field('rules allow', windowText(w)));
  const now =
    why !== null
      ? `no — ${why}`
      : w.never_callable
        ? 'never: no moment lies inside the window in every one of its zones'
        : w.may_call_now
          ? `yes, until ${w.next_window_end}`
          : `no; next window ${w.next_window_start} to ${w.next_window_end}`;
  lines.push(field('may call now', now));
  const policy = w.policy === null ? [] : [w.policy === 'policy' ? 'policy' : `policy "${w.policy}"`];
  const by = [...w.rules.filter((r) => !r.startsWith('policy')), ...policy];
  lines.push(field('calling rule', `${by.join(', ')}: ${w.weekly_rule}`));
  if (w.override) lines.push(field('override', w.override.reason));
  return lines;
}
