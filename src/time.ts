// Durations on the command line: 31d, 12h, 90m, 45s, 2w (--max-age, --reuse-within).
import { usageError } from './errors.js';

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

export const DAY_MS = UNIT_MS.d!;

/** The longest duration accepted: about ten years, as the config file's validity_days. */
export const MAX_DURATION_DAYS = 3660;

/** Parses "7d", "12h", "1.5d" into milliseconds; anything else is a usage error naming the flag. */
export function parseDuration(flag: string, text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$/i.exec(text);
  const ms = m ? Number(m[1]) * UNIT_MS[m[2]!.toLowerCase()]! : NaN;
  if (!Number.isFinite(ms) || ms <= 0) {
    throw usageError('E_USAGE', `${flag} ${JSON.stringify(text)} is not a duration`, {
      hint: `write a number and a unit: s, m, h, d or w (e.g. ${flag} 7d or ${flag} 12h)`,
    });
  }
  if (ms > MAX_DURATION_DAYS * DAY_MS) {
    throw usageError(
      'E_USAGE',
      `${flag} ${JSON.stringify(text)} is too long: at most ${MAX_DURATION_DAYS}d (about ten years)`,
      {
        hint: `write a duration from 1s to ${MAX_DURATION_DAYS}d`,
      },
    );
  }
  return ms;
}

/** "7d", "12h", "90m" back from milliseconds (for messages; weeks are shown as days). */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm'] as const) {
    const n = ms / UNIT_MS[unit]!;
    if (n >= 1 && Number.isInteger(n)) return `${n}${unit}`;
  }
  return `${Math.round(ms / 1000)}s`;
}

/**
 * The service's timestamps carry microseconds (2026-11-21T23:08:03.123456+00:00): milliseconds since the epoch, or NaN.
 */
export function parseServiceTime(text: string | null | undefined): number {
  if (!text) return NaN;
  // Every row of a render reads one (its valid-until), and so does the results cache: the service's own shape is
  // read digit by digit (≈ 10× faster than the general reading below, which takes ≈ 4 µs with an offset).
  const fast = parseCanonicalTime(text);
  return fast === null ? parseAnyTime(text) : fast;
}

/** The general reading (any shape Date.parse takes), with microseconds cut to milliseconds. */
export function parseAnyTime(text: string): number {
  return Date.parse(text.replace(/(\.\d{3})\d+/, '$1'));
}

/**
 * YYYY-MM-DDTHH:MM:SS, then no fraction or one of 3 digits or more (cut to milliseconds, never rounded), then Z or
 * ±HH:MM: the milliseconds parseAnyTime gives it. Null for anything else (another shape, a year before 1000, a day
 * the month does not have, hour 24), which parseAnyTime reads as before.
 */
function parseCanonicalTime(t: string): number | null {
  const n = t.length;
  if (
    n < 20 ||
    t.charCodeAt(4) !== 45 ||
    t.charCodeAt(7) !== 45 ||
    t.charCodeAt(10) !== 84 ||
    t.charCodeAt(13) !== 58 ||
    t.charCodeAt(16) !== 58
  )
    return null;
  const year = digits(t, 0, 4);
  const month = digits(t, 5, 2);
  const day = digits(t, 8, 2);
  const hour = digits(t, 11, 2);
  const minute = digits(t, 14, 2);
  const second = digits(t, 17, 2);
  if (
    year < 1000 ||
    month < 1 ||
    month > 12 ||
    day < 1 ||
    hour < 0 ||
    hour > 23 ||
    minute < 0 ||
    minute > 59 ||
    second < 0 ||
    second > 59
  )
    return null;
  let i = 19;
  let ms = 0;
  if (t.charCodeAt(i) === 46) {
    let end = i + 1;
    while (end < n && isDigit(t.charCodeAt(end))) end++;
    if (end - i - 1 < 3) return null;
    ms = digits(t, i + 1, 3);
    i = end;
  }
  let offsetMinutes = 0;
  const sign = t.charCodeAt(i);
  if (sign === 90 && i + 1 === n) offsetMinutes = 0;
  else if ((sign === 43 || sign === 45) && i + 6 === n && t.charCodeAt(i + 3) === 58) {
    const oh = digits(t, i + 1, 2);
    const om = digits(t, i + 4, 2);
    if (oh < 0 || oh > 23 || om < 0 || om > 59) return null;
    offsetMinutes = (sign === 45 ? -1 : 1) * (oh * 60 + om);
  } else return null;
  if (day > daysInMonth(year, month)) return null;
  return Date.UTC(year, month - 1, day, hour, minute, second, ms) - offsetMinutes * 60_000;
}

const isDigit = (c: number) => c >= 48 && c <= 57;

/** The number written by `count` ASCII digits at `from`, or -1 when one is not a digit. */
function digits(t: string, from: number, count: number): number {
  let v = 0;
  for (let k = from; k < from + count; k++) {
    const c = t.charCodeAt(k);
    if (!isDigit(c)) return -1;
    v = v * 10 + (c - 48);
  }
  return v;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}
