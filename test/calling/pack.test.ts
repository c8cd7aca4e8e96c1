// Every rule of the pack at its edges: for each jurisdiction with hours, a number there is out of window a minute
// before each day's opening, in it at the opening and a minute before the closing, out of it at the closing, and
// out of it all day on each of its public holidays. The instants are found here with Intl, by a reading of local
// time of this file's own (not the code's), and the expected hours are the pack's (the oracle cases written from
// the statutes are in oracle.test.ts).
import { describe, expect, it } from 'vitest';
import { CALLING_RULES, createCallingWindows } from '../../src/calling/index.js';
import { parseHours } from '../../src/calling/policy.js';
import type { HoursSpec, RuleRecord } from '../../src/calling/rules.js';
import { US_AREA_CODE_STATES } from '../../src/calling/zone-data.js';
import { dateHolidaysCalendar } from '../../src/calling/holidays.js';

const windows = createCallingWindows({ tzdataVersion: 'test' });
const holidays = dateHolidaysCalendar();
const MINUTE = 60_000;

/** The UTC instant at which `zone`'s clock reads `date` 'YYYY-MM-DD' at `minute` (no clock change near it). */
function instant(zone: string, date: string, minute: number): number {
  const wall = Date.parse(`${date}T00:00:00Z`) + minute * MINUTE;
  const offsetAt = (t: number): number => {
    const p = Object.fromEntries(
      new Intl.DateTimeFormat('en-GB', {
        timeZone: zone,
        hourCycle: 'h23',
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        minute: '2-digit',
      })
        .formatToParts(t)
        .map((x) => [x.type, x.value]),
    );
    return Date.parse(`${p.year}-${p.month}-${p.day}T${p.hour}:${p.minute}:00Z`) - t;
  };
  return wall - offsetAt(wall - offsetAt(wall));
}

/** A number of each US state whose area code has one zone (so the state's hours are its window). */
function numberIn(state: string): string | undefined {
  for (const [npa, s] of US_AREA_CODE_STATES.flatMap((l) => l.split(' ')).map((x) => x.split(':'))) {
    if (s !== state) continue;
    const e164 = `+1${npa}5550123`;
    if (windows.window({ e164, country: 'US' }, 0).time_zones.length === 1) return e164;
  }
  return undefined;
}

const COUNTRY_NUMBERS: Record<string, string> = {
  US: '+12125550123',
  CA: '+14165550123',
  AU: '+61298765432',
  ES: '+34912345678',
  GB: '+442079460123',
  NZ: '+6494567890',
  IE: '+35312345678',
  DE: '+4930123456',
  BE: '+3221234567',
};

/** A week in December 2026 (no clock change anywhere the pack reaches), Monday to Sunday. */
const WEEK = ['2026-12-07', '2026-12-08', '2026-12-09', '2026-12-10', '2026-12-11', '2026-12-12', '2026-12-13'];

interface Case {
  id: string;
  e164: string;
  country: string;
  hours: HoursSpec;
  /** Whose holidays close its days. */
  holidays: { country: string; state?: string } | undefined;
  /** The federal window, for a state rule: the state's narrows it. */
  under?: HoursSpec;
}

const inForceNow = (r: RuleRecord): boolean => r.until === undefined;
const usFederal = CALLING_RULES.countries.find((r) => r.id === 'US')!.hours!;

const cases: Case[] = [
  ...CALLING_RULES.countries.map((r) => ({
    id: r.id,
    e164: COUNTRY_NUMBERS[r.id]!,
    country: r.countries[0]!,
    hours: r.hours ?? CALLING_RULES.default.hours,
    holidays: (r.hours ? r.closed_on?.length : CALLING_RULES.default.closed_on?.length)
      ? { country: r.countries[0]! }
      : undefined,
  })),
  ...CALLING_RULES.states
    .filter((r) => r.country === 'US' && r.hours !== null && inForceNow(r))
    .map((r) => ({
      id: r.id,
      e164: numberIn(r.state)!,
      country: 'US',
      hours: r.hours!,
      holidays: r.closed_on?.length ? { country: 'US', state: r.state } : undefined,
      under: usFederal,
    })),
];

/** Each weekday's [start, end) in minutes, Sunday first, narrowed by the federal window for a state. */
function week(c: Case): Array<readonly [number, number] | null> {
  const own = parseHours(c.hours, c.id);
  const under = c.under ? parseHours(c.under, 'US') : undefined;
  return own.map((w, day) => {
    const u = under?.[day];
    if (!w || (under && !u)) return null;
    return u ? [Math.max(w[0], u[0]), Math.min(w[1], u[1])] : w;
  });
}

describe('every rule of the pack at its edges', () => {
  it('has a number for every jurisdiction with hours', () => {
    for (const c of cases) expect(c.e164, c.id).toMatch(/^\+\d+$/);
    expect(cases.length).toBeGreaterThanOrEqual(9 + 18);
  });

  for (const c of cases) {
    it(`${c.id}: a minute either side of each opening and closing, and no call on days without hours`, () => {
      const zone = windows.window({ e164: c.e164, country: c.country }, 0).time_zones[0]!;
      const days = week(c);
      for (const date of WEEK) {
        const day = new Date(`${date}T12:00:00Z`).getUTCDay();
        const open = (t: number): boolean => windows.window({ e164: c.e164, country: c.country }, t).in_window;
        const closedForHoliday = c.holidays && holidays.holidayOn(c.holidays, date) !== undefined;
        const hours = closedForHoliday ? null : days[day];
        if (!hours) {
          for (const minute of [0, 9 * 60, 12 * 60, 20 * 60, 23 * 60 + 59]) {
            expect(open(instant(zone, date, minute)), `${c.id} ${date} ${minute}`).toBe(false);
          }
          continue;
        }
        const [start, end] = hours;
        const say = (m: number): string => `${c.id} ${c.e164} ${zone} ${date} ${Math.floor(m / 60)}:${m % 60}`;
        expect(open(instant(zone, date, start - 1)), say(start - 1)).toBe(false);
        expect(open(instant(zone, date, start)), say(start)).toBe(true);
        expect(open(instant(zone, date, end - 1)), say(end - 1)).toBe(true);
        if (end < 24 * 60) expect(open(instant(zone, date, end)), say(end)).toBe(false);
      }
    });
  }

  it('no call on any public holiday of 2026 and 2027 where a rule closes on them', () => {
    let checked = 0;
    for (const c of cases.filter((x) => x.holidays)) {
      const zone = windows.window({ e164: c.e164, country: c.country }, 0).time_zones[0]!;
      for (let t = Date.parse('2026-01-01T00:00:00Z'); t < Date.parse('2028-01-01T00:00:00Z'); t += 86_400_000) {
        const date = new Date(t).toISOString().slice(0, 10);
        const name = holidays.holidayOn(c.holidays!, date);
        if (name === undefined) continue;
        const noon = windows.window({ e164: c.e164, country: c.country }, instant(zone, date, 12 * 60));
        expect(noon.in_window, `${c.id} ${date} ${name}`).toBe(false);
        expect(noon.local_times[0]!.closed_today ?? '', `${c.id} ${date}`).toMatch(/public holiday|no calls on/);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(100);
  });
});
