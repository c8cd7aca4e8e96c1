// When a number may be called: its zones, its weekly rule and its windows at an instant or over a slot (no I/O).
import { createHash } from 'node:crypto';
import { usageError } from '../errors.js';
import { dateHolidaysCalendar, type HolidayCalendar } from './holidays.js';
import { latestRule, parseSettings, RuleBook, ruleOn, type DatedRule } from './policy.js';
import type { CallingWindow, LocalTime } from './types.js';
import { CALLING_RULES, type RulesFile } from './rules.js';
import { isoDate, isoLocal, wallTime } from './tz.js';
import { DAY, HORIZON_DAYS, WindowCalculator, type Interval } from './windows.js';
import { countriesOfCallingCode, governingCountry } from '../phone/countries.js';
import { reachOf, significantDigits, ZONE_DATA_VERSION, type NumberPlace } from './zones.js';

export type { CallingBlackout, CallingOverride, CallingPolicy, CallingSettings } from './policy.js';
export type { HolidayCalendar, HolidayRegion } from './holidays.js';
export { CALLING_RULES } from './rules.js';
export { HORIZON_DAYS } from './windows.js';
export { callingAnswer, type CallingAnswer, type NotNowReason, type Standing } from './answer.js';
export type { CallingWindow, LocalTime } from './types.js';

/** A number as dnc keeps it: E.164 and the country libphonenumber gives it. */
export interface CallingNumber {
  readonly e164: string;
  readonly country: string | undefined;
}

/** A row of `slot`, with its answer. */
export interface SlotRow<R> {
  readonly row: R;
  readonly answer: SlotAnswer;
}

/** Whether a number may be called throughout a slot. */
export interface SlotAnswer {
  readonly callable: boolean;
  /** Why not: the slot is not inside one window, or the number has none. */
  readonly reason: 'outside_window' | 'never_callable' | null;
  /** The window the slot starts in, or the next one (UTC ISO 8601). */
  readonly window_start: string | null;
  readonly window_end: string | null;
}

export interface CallingOptions {
  /** The time-zone database's version (the command passes `process.versions.tz`): part of rules_version. */
  readonly tzdataVersion: string;
  /** A team's calling settings (policy, default hours, overrides), as read from its config; checked here. */
  readonly settings?: unknown;
  /** Where the settings came from, for error messages (default 'calling'). */
  readonly settingsName?: string;
  readonly holidays?: HolidayCalendar;
  readonly rules?: RulesFile;
}

function iso(instant: number): string {
  return new Date(instant).toISOString().replace('.000Z', 'Z');
}

function instantOf(at: number | Date, what: string): number {
  const t = typeof at === 'number' ? at : at.getTime();
  if (!Number.isFinite(t)) throw usageError('E_USAGE', `${what} is not a valid instant`);
  return t;
}

/** Canonical JSON (keys sorted) of the settings, for their fingerprint in rules_version. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * Calling windows under one set of rules and settings. Build one per run and ask it about every number: it keeps
 * what it computed (per zone set, rule and day), so that a million numbers cost a lookup each.
 */
export class CallingWindows {
  /** Names the rules file, the time-zone database, the holiday data, the zone data and any team settings. */
  readonly rulesVersion: string;
  private readonly book: RuleBook;
  private readonly calculator: WindowCalculator;
  private readonly policyName: string | null;
  private readonly profiles = new Map<string, Profile>();
  private readonly slots = new Map<string, SlotAnswer>();
  private slotStart = NaN;
  private slotEnd = NaN;

  constructor(options: CallingOptions) {
    const rules = options.rules ?? CALLING_RULES;
    const settings = parseSettings(options.settings, options.settingsName ?? 'calling');
    const holidays = options.holidays ?? dateHolidaysCalendar();
    this.book = new RuleBook(rules, settings);
    this.calculator = new WindowCalculator(holidays);
    this.policyName = settings.policyName ?? null;
    const parts = [`dnc-rules/${rules.version}`, `tzdata/${options.tzdataVersion}`, holidays.version];
    parts.push(ZONE_DATA_VERSION);
    const text = options.settings === undefined ? '{}' : canonical(options.settings);
    if (text !== '{}') parts.push(`settings/${createHash('sha256').update(text).digest('hex').slice(0, 12)}`);
    this.rulesVersion = parts.join(' ');
  }

  /**
   * The number's place and rule. Both depend only on its country and significant digits, so they are kept by
   * those: a few Map lookups for most rows of a big file.
   */
  private profileOf(number: CallingNumber): Profile {
    const key = `${number.country ?? ''}${significantDigits(number.e164)}`;
    let profile = this.profiles.get(key);
    if (profile === undefined) {
      // The service's country governs: it files Guernsey, Jersey and Isle of Man numbers under GB.
      const country = governingCountry(number.country?.toUpperCase());
      const { place, countries } = reachOf(number.e164, country, countriesOfCallingCode);
      // A US number whose state is not known gets every state's rule (null); elsewhere there are none.
      const state = place.state ?? (countries.includes('US') ? null : undefined);
      const rule = this.book.ruleForAny(countries, state);
      profile = { place, rule, slotKey: `${place.zonesText}#${rule.key}`, at: NaN, window: undefined };
      this.profiles.set(key, profile);
    }
    return profile;
  }

  /** The number's zones as text, space-separated: the `dnc_time_zones` column. */
  zonesText(number: CallingNumber): string {
    return this.profileOf(number).place.zonesText;
  }

  /**
   * The weekly local rule as text: the `dnc_calling_window` column (depends on the number and the rules only): the
   * rule in force at `at`, or without it the pack's latest.
   */
  weeklyRule(number: CallingNumber, at?: number): string {
    const { place, rule } = this.profileOf(number);
    return (at === undefined ? latestRule(rule) : ruleOn(rule, localDate(place, at))).text;
  }

  /** The number's window at instant `at`: inside it now, and the window in progress or the next one. */
  window(number: CallingNumber, at: number | Date): CallingWindow {
    const t = instantOf(at, 'the instant');
    const profile = this.profileOf(number);
    // Nothing in the answer is the number's own: numbers of one profile asked about one instant share it.
    if (profile.at !== t || profile.window === undefined) {
      profile.window = this.computeWindow(profile, t);
      profile.at = t;
    }
    return profile.window;
  }

  private computeWindow({ place, rule: dated }: Profile, t: number): CallingWindow {
    const found = this.calculator.windowAt(place, dated, t);
    // The rule in force at the instant, by its local date (in the first zone: the pack's dates are local dates).
    const date = localDate(place, t);
    const rule = ruleOn(dated, date);
    const local_times = place.timeZones.map((zone): LocalTime => {
      const wall = wallTime(zone, t);
      const today = this.calculator.dayWindow(zone, dated, wall);
      return Object.freeze({
        time_zone: zone,
        local_time: isoLocal(wall),
        today_window: 'window' in today ? today.text : null,
        closed_today: 'closed' in today ? today.closed : null,
      });
    });
    return Object.freeze({
      time_zones: place.timeZones,
      location_known: place.locationKnown,
      state: place.state ?? null,
      in_window: found !== undefined && found.start <= t,
      next_window_start: found ? iso(found.start) : null,
      next_window_end: found ? iso(found.end) : null,
      never_callable: found === undefined,
      weekly_rule: rule.text,
      local_times: Object.freeze(local_times),
      rules: rule.applied,
      policy: rule.applied.some((a) => a.startsWith('policy')) ? (this.policyName ?? 'policy') : null,
      override: rule.override,
      blackout: rule.blackouts.find((b) => b.from <= date && date <= b.to) ?? null,
      rules_version: this.rulesVersion,
    });
  }

  /** Whether the number may be called at every instant of [from, until). */
  throughout(number: CallingNumber, from: number | Date, until: number | Date): SlotAnswer {
    const start = instantOf(from, 'the start of the slot');
    const end = instantOf(until, 'the end of the slot');
    if (start !== this.slotStart || end !== this.slotEnd) {
      if (end <= start) throw usageError('E_USAGE', `the slot ends (${iso(end)}) before it starts (${iso(start)})`);
      if (end - start > HORIZON_DAYS * DAY) {
        throw usageError('E_USAGE', `a slot can be at most ${HORIZON_DAYS} days long`);
      }
      this.slots.clear();
      this.slotStart = start;
      this.slotEnd = end;
    }
    const profile = this.profileOf(number);
    // Every number of one zone set and rule has the same answer for a slot: one computation each.
    let answer = this.slots.get(profile.slotKey);
    if (answer === undefined) {
      const found: Interval | undefined = this.calculator.windowAt(
        profile.place,
        profile.rule,
        start,
        (end - start) / DAY,
      );
      const callable = found !== undefined && found.start <= start && end <= found.end;
      answer = Object.freeze({
        callable,
        reason: callable ? null : found === undefined ? 'never_callable' : 'outside_window',
        window_start: found ? iso(found.start) : null,
        window_end: found ? iso(found.end) : null,
      });
      this.slots.set(profile.slotKey, answer);
    }
    return answer;
  }

  /**
   * For `dnc window`: each row with whether its number may be called throughout [from, until). Rows are passed
   * through as they come; the caller judges whether each is fit to dial.
   */
  *slot<R extends CallingNumber>(rows: Iterable<R>, from: number | Date, until: number | Date): Generator<SlotRow<R>> {
    for (const row of rows) yield { row, answer: this.throughout(row, from, until) };
  }
}

/** The local date at an instant in the number's first zone (UTC when it has none). */
function localDate(place: NumberPlace, t: number): string {
  return isoDate(wallTime(place.timeZones[0] ?? 'UTC', t));
}

interface Profile {
  readonly place: NumberPlace;
  readonly rule: DatedRule;
  /** Zones and rule: what a slot's answer depends on. */
  readonly slotKey: string;
  /** The last instant asked about, and its answer. */
  at: number;
  window: CallingWindow | undefined;
}

/** Calling windows under dnc's rules and the team's settings. */
export function createCallingWindows(options: CallingOptions): CallingWindows {
  return new CallingWindows(options);
}
