// What `dnc check` shows of a number's calling window beside its verdict: local time, today's window, whether now.
import type { CallingWindow } from '../calling/index.js';

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

/** The lines under a verdict: each zone's wall clock and today's window there, then whether it may be called. */
export function callingLines(w: CallingWindow): string[] {
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
  const now = w.never_callable
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
