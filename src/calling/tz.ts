// Wall-clock time in an IANA zone and back, with the runtime's own time-zone database (Intl), never a fixed offset.

/** A calendar day: year, month (1–12), day (1–31). */
export interface LocalDate {
  readonly year: number;
  readonly month: number;
  readonly day: number;
}

/** The wall clock of a zone at an instant. */
export interface WallTime extends LocalDate {
  /** Minutes since local midnight, 0–1439. */
  readonly minute: number;
  readonly second: number;
  /** 0 Sunday … 6 Saturday. */
  readonly weekday: number;
  /** The zone's offset from UTC at that instant, in minutes (east positive). */
  readonly offset: number;
}

const MINUTE = 60_000;
const DAY = 86_400_000;
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterOf(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (f === undefined) {
    // en-US with h23 and numeric fields: parts are plain ASCII digits whatever the machine's locale.
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, f);
  }
  return f;
}

/** Is `zone` a zone this runtime knows? */
export function isKnownZone(zone: string): boolean {
  try {
    formatterOf(zone);
    return true;
  } catch {
    return false;
  }
}

/** The wall clock in `zone` at `instant` (ms since the epoch). */
export function wallTime(zone: string, instant: number): WallTime {
  const fields = { year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0 };
  for (const part of formatterOf(zone).formatToParts(instant)) {
    if (part.type in fields) fields[part.type as keyof typeof fields] = Number(part.value);
  }
  // Seconds of the instant are dropped by the format; the offset is whole seconds, so compare whole seconds.
  const wallMs = Date.UTC(fields.year, fields.month - 1, fields.day, fields.hour, fields.minute, fields.second);
  const offset = Math.round((wallMs - Math.floor(instant / 1000) * 1000) / MINUTE);
  return {
    year: fields.year,
    month: fields.month,
    day: fields.day,
    minute: fields.hour * 60 + fields.minute,
    second: fields.second,
    weekday: new Date(Date.UTC(fields.year, fields.month - 1, fields.day)).getUTCDay(),
    offset,
  };
}

/** The day after (or `days` after) a calendar day. */
export function addDays(date: LocalDate, days: number): LocalDate {
  const d = new Date(Date.UTC(date.year, date.month - 1, date.day) + days * DAY);
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
}

/** 0 Sunday … 6 Saturday. */
export function weekdayOf(date: LocalDate): number {
  return new Date(Date.UTC(date.year, date.month - 1, date.day)).getUTCDay();
}

/** 'YYYY-MM-DD'. */
export function isoDate(date: LocalDate): string {
  const pad = (n: number, width: number): string => String(n).padStart(width, '0');
  return `${pad(date.year, 4)}-${pad(date.month, 2)}-${pad(date.day, 2)}`;
}

function offsetAt(zone: string, instant: number): number {
  return wallTime(zone, instant).offset;
}

/**
 * The first instant at which the wall clock of `zone` reads `minute` (0–1440) on `date`, or later: a time that a
 * clock change skips (spring forward) gives the instant the clock jumps past it. With `last`, a time that occurs
 * twice (fall back) gives its second occurrence, so that a window ending then keeps the repeated hour.
 */
export function instantOf(zone: string, date: LocalDate, minute: number, last = false): number {
  const wall = Date.UTC(date.year, date.month - 1, date.day) + minute * MINUTE;
  // The offsets a day before and after bracket any change near the wall time (changes are months apart).
  const before = offsetAt(zone, wall - DAY) * MINUTE;
  const after = offsetAt(zone, wall + DAY) * MINUTE;
  const candidates = [...new Set([wall - before, wall - after])].filter((t) => offsetAt(zone, t) * MINUTE === wall - t);
  if (candidates.length > 0) return last ? Math.max(...candidates) : Math.min(...candidates);
  // Skipped: the clock change lies between the two readings; find the instant it happens (to the second).
  let low = Math.min(wall - before, wall - after);
  let high = Math.max(wall - before, wall - after);
  const lowOffset = offsetAt(zone, low);
  while (high - low > 1000) {
    const mid = low + Math.floor((high - low) / 2000) * 1000;
    if (offsetAt(zone, mid) === lowOffset) low = mid;
    else high = mid;
  }
  return high;
}

/** ISO 8601 local time with its offset: '2026-07-01T11:00:00-04:00'. */
export function isoLocal(wall: WallTime): string {
  const two = (n: number): string => String(n).padStart(2, '0');
  const sign = wall.offset < 0 ? '-' : '+';
  const offset = Math.abs(wall.offset);
  const time = `${two(Math.floor(wall.minute / 60))}:${two(wall.minute % 60)}:${two(wall.second)}`;
  return `${isoDate(wall)}T${time}${sign}${two(Math.floor(offset / 60))}:${two(offset % 60)}`;
}
