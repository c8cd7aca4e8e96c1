// Generated instants and company policies, checked against a second reading of the rules: an instant is callable
// when, in every one of the number's zones, the local clock (read here with Intl in its own way) lies inside that
// weekday's hours and the local day is no public holiday (read from date-holidays directly).
// The seed is printed; DNC_PROPERTY_SEED=<seed> runs the same cases again.
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createCallingWindows } from '../../src/calling/index.js';

const seed = Number(process.env.DNC_PROPERTY_SEED ?? Math.floor(Math.random() * 2 ** 31));
const Holidays = createRequire(import.meta.url)('date-holidays') as new (country: string) => {
  getHolidays(year: number): Array<{ date: string; type: string }>;
};

/** [start, end) in minutes per weekday, Sunday first; null: no calls. */
type Week = Array<[number, number] | null>;
const h = (text: string): [number, number] => {
  const [a, b] = text.split('-').map((t) => Number(t.slice(0, 2)) * 60 + Number(t.slice(3, 5)));
  return [a!, b!];
};
const US: Week = Array.from({ length: 7 }, () => h('08:00-21:00'));
const AU: Week = [
  null,
  h('09:00-20:00'),
  h('09:00-20:00'),
  h('09:00-20:00'),
  h('09:00-20:00'),
  h('09:00-20:00'),
  h('09:00-17:00'),
];
const ES: Week = [null, h('09:00-21:00'), h('09:00-21:00'), h('09:00-21:00'), h('09:00-21:00'), h('09:00-21:00'), null];
const GB: Week = [h('09:00-21:00'), ...Array.from({ length: 5 }, () => h('08:00-21:00')), h('09:00-21:00')];
const DEFAULT: Week = [null, ...Array.from({ length: 5 }, () => h('09:00-20:00')), null];
// Tex. Bus. & Com. Code 301.051: 9 a.m.-9 p.m., Sunday from noon. NZ and IE: Monday to Saturday 09:00-21:00.
const TX: Week = [h('12:00-21:00'), ...Array.from({ length: 6 }, () => h('09:00-21:00'))];
const MON_SAT_9_TO_9: Week = [null, ...Array.from({ length: 6 }, () => h('09:00-21:00'))];

/** Numbers with the law the table of docs/calling.md gives them, and whose holidays close their days. */
const NUMBERS = [
  { e164: '+12125551234', country: 'US', law: US, holidays: undefined },
  { e164: '+16055551234', country: 'US', law: US, holidays: undefined },
  { e164: '+16025551234', country: 'US', law: US, holidays: undefined },
  { e164: '+61412345678', country: 'AU', law: AU, holidays: 'AU' },
  { e164: '+61298765432', country: 'AU', law: AU, holidays: 'AU' },
  { e164: '+34612345678', country: 'ES', law: ES, holidays: 'ES' },
  { e164: '+447911123456', country: 'GB', law: GB, holidays: undefined },
  { e164: '+4930123456', country: 'DE', law: DEFAULT, holidays: 'DE' },
  { e164: '+12145551234', country: 'US', law: TX, holidays: undefined },
  { e164: '+6494567890', country: 'NZ', law: MON_SAT_9_TO_9, holidays: 'NZ' },
  { e164: '+35312345678', country: 'IE', law: MON_SAT_9_TO_9, holidays: 'IE' },
];

const holidayYears = new Map<string, Set<string>>();
function isHoliday(country: string, date: string): boolean {
  const key = `${country}${date.slice(0, 4)}`;
  if (!holidayYears.has(key)) {
    const days = new Holidays(country).getHolidays(Number(date.slice(0, 4))).filter((x) => x.type === 'public');
    holidayYears.set(key, new Set(days.map((x) => x.date.slice(0, 10))));
  }
  return holidayYears.get(key)!.has(date);
}

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const readers = new Map<string, Intl.DateTimeFormat>();
/** The local weekday, date and minute of the day in `zone`, read with en-GB parts (the code under test reads en-US). */
function local(zone: string, instant: number): { weekday: number; date: string; minute: number } {
  if (!readers.has(zone)) {
    readers.set(
      zone,
      new Intl.DateTimeFormat('en-GB', {
        timeZone: zone,
        weekday: 'short',
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        minute: '2-digit',
        hourCycle: 'h23',
      }),
    );
  }
  const p = Object.fromEntries(
    readers
      .get(zone)!
      .formatToParts(instant)
      .map((x) => [x.type, x.value]),
  );
  return {
    weekday: WEEKDAYS.indexOf(p.weekday!),
    date: `${p.year}-${p.month}-${p.day}`,
    minute: Number(p.hour) * 60 + Number(p.minute),
  };
}

function callable(zones: readonly string[], week: Week, holidays: string | undefined, instant: number): boolean {
  return zones.every((zone) => {
    const l = local(zone, instant);
    const hours = week[l.weekday];
    return (
      hours !== null &&
      hours !== undefined &&
      l.minute >= hours[0] &&
      l.minute < hours[1] &&
      !(holidays && isHoliday(holidays, l.date))
    );
  });
}

/** A policy of random hours (from 04:00: no zone used here changes its clocks after 03:00) for random weekdays. */
const policy = fc
  .array(fc.tuple(fc.integer({ min: 0, max: 6 }), fc.integer({ min: 16, max: 95 }), fc.integer({ min: 1, max: 40 })), {
    maxLength: 7,
  })
  .map((days) => {
    const week: Week = [null, null, null, null, null, null, null];
    const hours: Record<string, string> = {};
    const hhmm = (m: number) => `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
    for (const [day, start, length] of days) {
      if (week[day] !== null) continue;
      const window: [number, number] = [start * 15, Math.min(24 * 60, (start + length) * 15)];
      week[day] = window;
      hours[WEEKDAYS[day]!.toLowerCase()] = `${hhmm(window[0])}-${hhmm(window[1])}`;
    }
    return { week, hours };
  });

const narrow = (a: Week, b: Week): Week =>
  a.map((x, i) => {
    const y = b[i];
    if (!x || !y || Math.max(x[0], y[0]) >= Math.min(x[1], y[1])) return null;
    return [Math.max(x[0], y[0]), Math.min(x[1], y[1])] as [number, number];
  });

describe('calling windows (property)', () => {
  it('the window is callable in every zone at its ends and inside, not just outside, and in_window agrees', () => {
    console.log(`calling window property: seed ${seed} (DNC_PROPERTY_SEED=${seed} runs it again)`);
    const instant = fc
      .integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2030, 11, 31) })
      .map((t) => Math.floor(t / 60_000) * 60_000);
    fc.assert(
      fc.property(
        fc.constantFrom(...NUMBERS),
        instant,
        fc.option(policy),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (n, at, p, u) => {
          const windows = createCallingWindows({
            tzdataVersion: 'x',
            ...(p && Object.keys(p.hours).length > 0 ? { settings: { policy: { hours: p.hours } } } : {}),
          });
          const week = p && Object.keys(p.hours).length > 0 ? narrow(n.law, p.week) : n.law;
          const w = windows.window({ e164: n.e164, country: n.country }, at);
          const ok = (t: number) => callable(w.time_zones, week, n.holidays, t);
          expect(w.in_window, 'in_window against the second reading').toBe(ok(at));
          if (w.never_callable) {
            expect(w.next_window_start).toBeNull();
            expect(w.in_window).toBe(false);
            return;
          }
          const start = Date.parse(w.next_window_start!);
          const end = Date.parse(w.next_window_end!);
          expect(start).toBeLessThan(end);
          expect(end).toBeGreaterThan(at);
          expect(w.in_window).toBe(start <= at && at < end);
          // Inside: callable in every zone (the intersection is never wider than a zone's window) …
          for (const t of [start, end - 60_000, start + Math.floor(((end - start) / 60_000) * u) * 60_000]) {
            expect(ok(t), `inside at ${new Date(t).toISOString()}`).toBe(true);
          }
          // … and just outside it, not (it is as wide as the intersection).
          expect(ok(end), `at the end ${w.next_window_end}`).toBe(false);
          expect(ok(start - 60_000), `before the start ${w.next_window_start}`).toBe(false);
          // Nothing callable between the instant and a window still to come.
          if (start > at) expect(ok(at + Math.floor(((start - at) / 60_000) * u) * 60_000)).toBe(false);
        },
      ),
      { numRuns: 1_500, seed },
    );
    // 1,500 cases over eleven numbers take 10 s alone and over 30 s on the shared machine under load.
  }, 120_000);
});
