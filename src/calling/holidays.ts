// Public holidays by country and US state: the calendar the rules consult, by default the date-holidays library.
import { createRequire } from 'node:module';

/** Whose holidays: a country, or one of its states ('US', 'AL' for Alabama's). */
export interface HolidayRegion {
  readonly country: string;
  readonly state?: string | undefined;
}

/** What the rules need of a holiday calendar (tests and other sources may stand in). */
export interface HolidayCalendar {
  /** Names the data and its version, for rules_version (e.g. 'date-holidays/3.37.0'). */
  readonly version: string;
  /** The public holiday on a local date ('YYYY-MM-DD') in `region`, by name; undefined on an ordinary day. */
  holidayOn(region: HolidayRegion, date: string): string | undefined;
}

interface DateHolidaysEntry {
  date: string;
  name: string;
  type: string;
}
interface DateHolidays {
  getHolidays(year: number): DateHolidaysEntry[];
}
type DateHolidaysClass = new (country: string, state?: string) => DateHolidays;

/**
 * The calendar of the date-holidays library: holidays of type 'public' only (not bank, school, optional or
 * observance days), substitute days included, each for the whole local day. A state's calendar includes its
 * country's public holidays, as the library gives them. The library (≈ 90 ms to load) is read on first use.
 */
export function dateHolidaysCalendar(): HolidayCalendar {
  // createRequire: the library is loaded synchronously, on first use, and only by rules that name holidays.
  const load = createRequire(import.meta.url);
  let library: DateHolidaysClass | undefined;
  const years = new Map<string, Map<string, string>>();
  const version = `date-holidays/${(load('date-holidays/package.json') as { version: string }).version}`;
  return {
    version,
    holidayOn(region, date) {
      const key = `${region.country}/${region.state ?? ''}/${date.slice(0, 4)}`;
      let days = years.get(key);
      if (days === undefined) {
        library ??= load('date-holidays') as DateHolidaysClass;
        const { country, state } = region;
        const calendar = state === undefined ? new library(country) : new library(country, state);
        days = new Map();
        for (const h of calendar.getHolidays(Number(date.slice(0, 4)))) {
          if (h.type !== 'public') continue;
          const day = h.date.slice(0, 10);
          days.set(day, days.has(day) ? `${days.get(day)}, ${h.name}` : h.name);
        }
        years.set(key, days);
      }
      return days.get(date);
    },
  };
}
