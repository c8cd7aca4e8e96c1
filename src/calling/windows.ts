// The permitted windows of a set of zones under one rule, as UTC instants: each zone's days, then their overlap.
import type { HolidayCalendar } from './holidays.js';
import { ruleOn, type DatedRule, type EffectiveRule } from './policy.js';
import type { NumberPlace } from './zones.js';
import { addDays, instantOf, isoDate, wallTime, weekdayOf, type LocalDate } from './tz.js';

export const DAY = 86_400_000;
const DAY_NAMES = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/** [start, end) in ms since the epoch. */
export interface Interval {
  readonly start: number;
  readonly end: number;
}

/** A number's zones, and the same as text (the cache key). */
type Zones = Pick<NumberPlace, 'timeZones' | 'zonesText'>;

/** One local day in one zone: its window, or why there is none. */
export type DayWindow = { readonly window: Interval; readonly text: string } | { readonly closed: string };

/** How far ahead a window is looked for: longer than any run of weekends and holidays, so none means never. */
export const HORIZON_DAYS = 35;
const SPANS = [9, 17, HORIZON_DAYS + 2];

function hhmm(minutes: number): string {
  return `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
}

/** Overlap of two sorted lists of disjoint intervals. */
function overlap(a: readonly Interval[], b: readonly Interval[]): Interval[] {
  const out: Interval[] = [];
  for (let i = 0, j = 0; i < a.length && j < b.length;) {
    const start = Math.max(a[i]!.start, b[j]!.start);
    const end = Math.min(a[i]!.end, b[j]!.end);
    if (start < end) out.push({ start, end });
    if (a[i]!.end < b[j]!.end) i++;
    else j++;
  }
  return out;
}

/** Windows that touch (a rule of whole days) are one window. */
function joined(list: readonly Interval[]): Interval[] {
  const out: Interval[] = [];
  for (const x of list) {
    const last = out[out.length - 1];
    if (last && x.start <= last.end) out[out.length - 1] = { start: last.start, end: Math.max(last.end, x.end) };
    else out.push(x);
  }
  return out;
}

/** Computes windows and keeps them: per zone and local day, and per zone set, rule and UTC day. */
export class WindowCalculator {
  private readonly days = new Map<string, DayWindow>();
  private readonly spans = new Map<string, readonly Interval[]>();

  constructor(private readonly holidays: HolidayCalendar) {}

  /** The window of a local day in `zone` under the rule in force there that day. */
  dayWindow(zone: string, dated: DatedRule, date: LocalDate): DayWindow {
    const iso = isoDate(date);
    const rule = ruleOn(dated, iso);
    const key = `${zone}|${rule.key}|${iso}`;
    let day = this.days.get(key);
    if (day === undefined) {
      day = this.computeDay(zone, rule, date, iso);
      this.days.set(key, day);
    }
    return day;
  }

  private computeDay(zone: string, rule: EffectiveRule, date: LocalDate, iso: string): DayWindow {
    const blackout = rule.blackouts.find((b) => b.from <= iso && iso <= b.to);
    if (blackout) return { closed: `blackout to ${blackout.to}: ${blackout.reason}` };
    const weekday = weekdayOf(date);
    const hours = rule.week[weekday];
    if (!hours) return { closed: `no calls on ${DAY_NAMES[weekday]}` };
    for (const region of rule.holidays) {
      const name = this.holidays.holidayOn(region, iso);
      if (name !== undefined) return { closed: `public holiday (${region.label}): ${name}` };
    }
    const window = { start: instantOf(zone, date, hours[0]), end: instantOf(zone, date, hours[1], true) };
    return { window, text: `${hhmm(hours[0])}-${hhmm(hours[1])}` };
  }

  /**
   * The windows open in every one of `zones`, from the start of UTC day `day` (ms / DAY) on, complete up to
   * `span` − 2 days after it.
   */
  private around(place: Zones, rule: DatedRule, day: number, span: number): readonly Interval[] {
    const key = `${place.zonesText}#${rule.key}#${day}#${span}`;
    let list = this.spans.get(key);
    if (list === undefined) {
      let common: Interval[] | undefined;
      for (const zone of place.timeZones) {
        // From the local day before the UTC day begins there: no zone is a day or more off UTC.
        const first = addDays(wallTime(zone, day * DAY), -1);
        const own: Interval[] = [];
        for (let i = 0; i < span; i++) {
          const d = this.dayWindow(zone, rule, addDays(first, i));
          if ('window' in d && d.window.start < d.window.end) own.push(d.window);
        }
        common = common === undefined ? own : overlap(common, own);
      }
      list = joined(common ?? []);
      this.spans.set(key, list);
      // A long run over many instants would keep every day: the UTC days of one run are few, so drop the oldest.
      if (this.spans.size > 50_000) this.spans.delete(this.spans.keys().next().value!);
    }
    return list;
  }

  /**
   * The window open at `at` or the next one, in every one of `zones`; undefined when there is none within the
   * horizon (the zones' windows never overlap, or the rule has no calls at all).
   */
  windowAt(place: Zones, rule: DatedRule, at: number, minSpanDays = 0): Interval | undefined {
    if (place.timeZones.length === 0) return undefined;
    const day = Math.floor(at / DAY);
    for (let i = 0; i < SPANS.length; i++) {
      const span = Math.max(SPANS[i]!, minSpanDays + 3);
      const found = this.around(place, rule, day, span).find((w) => w.end > at);
      // A window reaching the edge of the days computed may go on past it: compute more days, up to the horizon.
      if (found !== undefined && (found.end < (day + span - 2) * DAY || i === SPANS.length - 1)) return found;
    }
    return undefined;
  }
}
