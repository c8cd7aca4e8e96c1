// A number's effective weekly rule: the law's rules for its country and state, a team's policy (which can only
// narrow them) and an explicit override (which may widen them, and is recorded), checked as they enter.
import { usageError } from '../errors.js';
import type { HolidayRegion } from './holidays.js';
import type { ClosedOn, CountryRule, HoursSpec, RuleRecord, RulesFile } from './rules.js';

/** A team's stricter rules: for every number, and per country. Days not named in `hours` have no calls. */
export interface CallingPolicy {
  /** Names the policy in results (e.g. 'Acme calling policy 2026'). */
  readonly name?: string;
  readonly hours?: HoursSpec;
  readonly closed_on?: readonly ClosedOn[];
  readonly countries?: Readonly<Record<string, CountryPolicy>>;
}

export interface CountryPolicy {
  readonly hours?: HoursSpec;
  readonly closed_on?: readonly ClosedOn[];
}

/**
 * Hours that replace the law's for some numbers, looser or not: it needs a reason, and every result it touches
 * carries it, so that the evidence shows it. The team's policy still applies on top.
 */
export interface CallingOverride {
  readonly reason: string;
  readonly countries: readonly string[];
  /** Only numbers of these US states (USPS codes); a number whose state is not known is never one of them. */
  readonly states?: readonly string[];
  readonly hours: HoursSpec;
  readonly closed_on?: readonly ClosedOn[];
}

/**
 * Dates a team adds on which no number of its countries (and states) is called: a state of emergency, a company
 * holiday. Local dates, both included; the end date is required, so that a blackout never outlives its cause.
 */
export interface CallingBlackout {
  readonly reason: string;
  /** 'YYYY-MM-DD', the first local date without calls. */
  readonly from: string;
  /** 'YYYY-MM-DD', the last local date without calls. */
  readonly to: string;
  readonly countries: readonly string[];
  /** Only numbers of these states (USPS codes, Canadian provinces); a number whose state is not known is one. */
  readonly states?: readonly string[];
}

/** The calling settings a team keeps in its config. */
export interface CallingSettings {
  readonly policy?: CallingPolicy;
  /** Hours for countries the rules file does not name (default Mon–Fri 09:00–20:00). */
  readonly default_hours?: HoursSpec;
  /** The first override whose countries (and states) include a number's applies to it. */
  readonly overrides?: readonly CallingOverride[];
  /** Every blackout whose countries (and states) include a number's closes its dates. */
  readonly blackouts?: readonly CallingBlackout[];
}

/** A day's window in local minutes [start, end), or null for a day without calls. Index 0 is Sunday. */
export type Week = readonly (readonly [number, number] | null)[];

/** Whose holidays close the day, and the label the weekly rule gives them. */
export interface HolidayRule extends HolidayRegion {
  readonly label: string;
}

export interface EffectiveRule {
  /** Identifies the rule among those of one CallingWindows (for caches). */
  readonly key: string;
  readonly week: Week;
  readonly holidays: readonly HolidayRule[];
  /** The rules that made it, e.g. ['US', 'US-FL', 'policy']. */
  readonly applied: readonly string[];
  readonly override: CallingOverride | null;
  /** The weekly local rule as text: 'Mon-Fri 09:00-20:00; Sat 09:00-17:00; not on public holidays (AU)'. */
  readonly text: string;
  /** The team's blackouts that reach the number, as configured. */
  readonly blackouts: readonly CallingBlackout[];
}

const DAY_NAMES = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;
/** Monday first, as people write weeks. */
const WEEK_ORDER = [1, 2, 3, 4, 5, 6, 0];

function fail(where: string, message: string): never {
  throw usageError('E_CONFIG_INVALID', `${where}: ${message}`, {
    hint: 'see docs/calling.md for the shape of the calling settings',
  });
}

function minutesOf(text: string, where: string, value: string): number {
  const m = /^([0-9]{2}):([0-9]{2})$/.exec(text);
  const minutes = m ? Number(m[1]) * 60 + Number(m[2]) : NaN;
  if (!m || Number(m[2]) > 59 || minutes > 24 * 60) fail(where, `'${value}' is not a window HH:MM-HH:MM`);
  return minutes;
}

/** 'mon-fri' → [1, 2, 3, 4, 5]; Monday first, so 'sat-sun' is a range and 'fri-mon' is not. */
function daysOf(key: string, where: string): number[] {
  const [from, to = from, extra] = key.toLowerCase().split('-');
  const a = WEEK_ORDER.findIndex((d) => DAY_NAMES[d] === from);
  const b = WEEK_ORDER.findIndex((d) => DAY_NAMES[d] === to);
  if (extra !== undefined || a === -1 || b === -1) {
    fail(where, `'${key}' is not a day or a range of days (mon, mon-fri, sat-sun)`);
  }
  if (b < a) fail(where, `'${key}' runs backwards (weeks start on Monday: write it as two ranges)`);
  return WEEK_ORDER.slice(a, b + 1);
}

/** Parses an hours object; every day it does not name is a day without calls. */
export function parseHours(spec: unknown, where: string): Week {
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
    fail(where, 'must be an object of days and windows');
  }
  const week: ([number, number] | null)[] = [null, null, null, null, null, null, null];
  const named = new Set<number>();
  for (const [key, value] of Object.entries(spec)) {
    const at = `${where}.${key}`;
    for (const day of daysOf(key, at)) {
      if (named.has(day)) fail(at, `${DAY_NAMES[day]} is named twice`);
      named.add(day);
    }
    if (value === null || value === 'closed') continue;
    if (typeof value !== 'string') fail(at, 'must be a window HH:MM-HH:MM, or "closed"');
    const [start, end, extra] = value.split('-');
    if (end === undefined || extra !== undefined) fail(at, `'${value}' is not a window HH:MM-HH:MM`);
    const window = [minutesOf(start!, at, value), minutesOf(end, at, value)] as [number, number];
    if (window[0] >= window[1]) fail(at, `'${value}' ends before it starts`);
    for (const day of daysOf(key, at)) week[day] = window;
  }
  return week;
}

function parseClosedOn(value: unknown, where: string): ClosedOn[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((v) => v !== 'public_holidays')) {
    fail(where, 'must be a list of "public_holidays"');
  }
  return value as ClosedOn[];
}

function onlyKeys(value: unknown, keys: readonly string[], where: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(where, 'must be an object');
  for (const key of Object.keys(value)) {
    if (!keys.includes(key)) fail(`${where}.${key}`, `is not a setting (${keys.join(', ')})`);
  }
  return value as Record<string, unknown>;
}

/** A list of two-letter codes (countries, or US states), upper-cased. */
function codes(value: unknown, where: string): string[] {
  if (!Array.isArray(value) || value.length === 0) fail(where, 'must be a non-empty list of two-letter codes');
  return value.map((v, i) => {
    if (typeof v !== 'string' || !CODE.test(v.toUpperCase())) {
      fail(`${where}[${i}]`, `'${String(v)}' is not a two-letter code`);
    }
    return v.toUpperCase();
  });
}

interface ParsedPart {
  readonly week: Week;
  readonly closedOn: readonly ClosedOn[];
}

interface ParsedOverride extends ParsedPart {
  readonly record: CallingOverride;
}

export interface ParsedSettings {
  readonly policyName: string | undefined;
  /** The policy for every number, and per country (both apply). */
  readonly policy: ParsedPart | undefined;
  readonly policyByCountry: ReadonlyMap<string, ParsedPart>;
  readonly defaultWeek: Week | undefined;
  readonly overrides: readonly ParsedOverride[];
  readonly blackouts: readonly CallingBlackout[];
}

const ALWAYS: Week = [0, 1, 2, 3, 4, 5, 6].map(() => [0, 24 * 60] as const);
const CODE = /^[A-Z]{2}$/;

/** Hours (every day when not given) and closed_on of a policy or override. */
function parsePart(fields: Record<string, unknown>, where: string): ParsedPart {
  const week = fields.hours === undefined ? ALWAYS : parseHours(fields.hours, `${where}.hours`);
  return { week, closedOn: parseClosedOn(fields.closed_on, `${where}.closed_on`) };
}

function parsePolicy(value: unknown, where: string): Pick<ParsedSettings, 'policyName' | 'policy' | 'policyByCountry'> {
  const fields = onlyKeys(value, ['name', 'hours', 'closed_on', 'countries'], where);
  if (fields.name !== undefined && (typeof fields.name !== 'string' || fields.name.trim() === '')) {
    fail(`${where}.name`, 'must be text');
  }
  const policyByCountry = new Map<string, ParsedPart>();
  if (fields.countries !== undefined) {
    const byCountry = onlyKeys(fields.countries, Object.keys(fields.countries as object), `${where}.countries`);
    for (const [code, part] of Object.entries(byCountry)) {
      const at = `${where}.countries.${code}`;
      if (!CODE.test(code.toUpperCase())) fail(at, `'${code}' is not a country code (ISO 3166-1 alpha-2)`);
      if (policyByCountry.has(code.toUpperCase())) fail(at, 'names a country named already');
      policyByCountry.set(code.toUpperCase(), parsePart(onlyKeys(part, ['hours', 'closed_on'], at), at));
    }
  }
  const general = fields.hours !== undefined || fields.closed_on !== undefined;
  const policy = general ? parsePart(fields, where) : undefined;
  return { policyName: fields.name as string | undefined, policy, policyByCountry };
}

function parseOverride(value: unknown, where: string): ParsedOverride {
  const fields = onlyKeys(value, ['reason', 'countries', 'states', 'hours', 'closed_on'], where);
  if (typeof fields.reason !== 'string' || fields.reason.trim() === '') {
    fail(`${where}.reason`, 'is required: say why the law is set aside');
  }
  if (fields.hours === undefined) fail(`${where}.hours`, 'is required');
  const part = parsePart(fields, where);
  const states = fields.states === undefined ? undefined : codes(fields.states, `${where}.states`);
  const record: CallingOverride = {
    reason: fields.reason,
    countries: codes(fields.countries, `${where}.countries`),
    ...(states ? { states } : {}),
    hours: fields.hours as HoursSpec,
    ...(part.closedOn.length > 0 ? { closed_on: part.closedOn } : {}),
  };
  return { ...part, record };
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;

function dateOf(value: unknown, where: string): string {
  const ok = typeof value === 'string' && DATE.test(value) && !Number.isNaN(Date.parse(`${value}T00:00:00Z`));
  if (!ok || new Date(`${value}T00:00:00Z`).toISOString().slice(0, 10) !== value) {
    fail(where, `'${String(value)}' is not a date YYYY-MM-DD`);
  }
  return value;
}

function parseBlackout(value: unknown, where: string): CallingBlackout {
  const fields = onlyKeys(value, ['reason', 'from', 'to', 'countries', 'states'], where);
  if (typeof fields.reason !== 'string' || fields.reason.trim() === '') {
    fail(`${where}.reason`, 'is required: say why no calls are made');
  }
  if (fields.to === undefined) fail(`${where}.to`, 'is required: a blackout ends (its last date, included)');
  const from = dateOf(fields.from, `${where}.from`);
  const to = dateOf(fields.to, `${where}.to`);
  if (to < from) fail(`${where}.to`, `'${to}' is before from '${from}'`);
  const states = fields.states === undefined ? undefined : codes(fields.states, `${where}.states`);
  return {
    reason: fields.reason,
    from,
    to,
    countries: codes(fields.countries, `${where}.countries`),
    ...(states ? { states } : {}),
  };
}

/** Checks a team's calling settings (they come from a config file: anything may be in it). */
export function parseSettings(settings: unknown, where = 'calling'): ParsedSettings {
  const none = { policyName: undefined, policy: undefined, policyByCountry: new Map<string, ParsedPart>() };
  if (settings === undefined) return { ...none, defaultWeek: undefined, overrides: [], blackouts: [] };
  const s = onlyKeys(settings, ['policy', 'default_hours', 'overrides', 'blackouts'], where);
  for (const list of ['overrides', 'blackouts']) {
    if (s[list] !== undefined && !Array.isArray(s[list])) fail(`${where}.${list}`, 'must be a list');
  }
  const overrides = ((s.overrides ?? []) as unknown[]).map((o, i) => parseOverride(o, `${where}.overrides[${i}]`));
  const blackouts = ((s.blackouts ?? []) as unknown[]).map((b, i) => parseBlackout(b, `${where}.blackouts[${i}]`));
  return {
    ...(s.policy === undefined ? none : parsePolicy(s.policy, `${where}.policy`)),
    defaultWeek: s.default_hours === undefined ? undefined : parseHours(s.default_hours, `${where}.default_hours`),
    overrides,
    blackouts,
  };
}

/** Later rules can only take away: each day's window is the overlap, and a day without calls in one has none. */
function narrow(a: Week, b: Week): Week {
  return a.map((x, day) => {
    const y = b[day];
    if (!x || !y) return null;
    const start = Math.max(x[0], y[0]);
    const end = Math.min(x[1], y[1]);
    return start < end ? ([start, end] as const) : null;
  });
}

function hhmm(minutes: number): string {
  return `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
}

const DAY_LABELS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

/** 'Mon-Fri 09:00-20:00; Sat 09:00-17:00': consecutive days with one window are written as a range. */
export function weekText(week: Week): string {
  const parts: string[] = [];
  for (let i = 0; i < WEEK_ORDER.length;) {
    const window = week[WEEK_ORDER[i]!];
    let j = i + 1;
    const same = (day: number): boolean => week[day]?.[0] === window?.[0] && week[day]?.[1] === window?.[1];
    while (j < WEEK_ORDER.length && window && same(WEEK_ORDER[j]!)) j++;
    if (window) {
      const first = DAY_LABELS[WEEK_ORDER[i]!]!;
      const days = j - i === 1 ? first : `${first}-${DAY_LABELS[WEEK_ORDER[j - 1]!]}`;
      parts.push(`${days} ${hhmm(window[0])}-${hhmm(window[1])}`);
    }
    i = j;
  }
  return parts.length === 0 ? 'no calls' : parts.join('; ');
}

interface Law {
  week: Week;
  applied: string[];
  holidays: HolidayRule[];
}

/** A number's rule through time: the effective rule of each era of the pack, in order. */
export interface DatedRule {
  /** Identifies the rule among those of one CallingWindows (for caches). */
  readonly key: string;
  /** `from`: the era's first local date ('YYYY-MM-DD'); null for the first, which reaches back without end. */
  readonly eras: readonly { readonly from: string | null; readonly rule: EffectiveRule }[];
}

/** The rule in force on a local date ('YYYY-MM-DD'). */
export function ruleOn(dated: DatedRule, date: string): EffectiveRule {
  let rule = dated.eras[0]!.rule;
  for (const era of dated.eras) {
    if (era.from !== null && era.from > date) break;
    rule = era.rule;
  }
  return rule;
}

/** The rule in force now and from now on: the last era's. */
export function latestRule(dated: DatedRule): EffectiveRule {
  return dated.eras[dated.eras.length - 1]!.rule;
}

/** Is a rule of the pack in force on local date `on`? */
function inForce(r: RuleRecord, on: string): boolean {
  return (r.effective_from === null || r.effective_from <= on) && (r.until === undefined || on < r.until);
}

/** The earliest date any era may start: before every rule of the pack. */
const BEGINNING = '0000-01-01';

/** The rules pack compiled once: the dated rule of each (country, state) asked for, kept. */
export class RuleBook {
  private readonly cache = new Map<string, DatedRule>();
  private readonly byCountry = new Map<string, CountryRule[]>();
  private readonly parsedWeeks = new Map<object, Week>();
  /** Every date on which some rule of the pack begins or ends, sorted: the eras' starts. */
  private readonly changes: readonly string[];

  constructor(
    private readonly rules: RulesFile,
    private readonly settings: ParsedSettings,
  ) {
    for (const rule of rules.countries) {
      for (const country of rule.countries) this.byCountry.set(country, [...(this.byCountry.get(country) ?? []), rule]);
    }
    const dates = new Set<string>();
    for (const r of [...rules.countries, ...rules.states]) {
      if (r.effective_from !== null) dates.add(r.effective_from);
      if (r.until !== undefined) dates.add(r.until);
    }
    this.changes = [...dates].sort();
  }

  private weekOf(hours: HoursSpec, where: string): Week {
    let week = this.parsedWeeks.get(hours);
    if (week === undefined) {
      week = parseHours(hours, where);
      this.parsedWeeks.set(hours, week);
    }
    return week;
  }

  /**
   * The rule for a number of `country` in `state` through time; `state` undefined for a number outside the US,
   * null for a US number whose state is not known, which gets every state's rule at once.
   */
  ruleFor(country: string | undefined, state: string | null | undefined): DatedRule {
    return this.ruleForAny(country === undefined ? [] : [country], state);
  }

  /**
   * The strictest of the rules of several countries at once, for a number that could be in any of them (a NANP
   * toll-free number, one whose country is not known): each day the overlap of their windows, closed on each one's
   * holidays. An override applies only to a number of one country.
   */
  ruleForAny(countries: readonly string[], state: string | null | undefined): DatedRule {
    const codes = countries.map((c) => c.toUpperCase());
    const key = `${codes.join(',')}|${state === null ? '?' : (state ?? '')}`;
    let rule = this.cache.get(key);
    if (rule === undefined) {
      rule = this.dated(codes, state);
      this.cache.set(key, rule);
    }
    return rule;
  }

  /** One era per change of the pack, merged where nothing about the number changed. */
  private dated(countries: readonly string[], state: string | null | undefined): DatedRule {
    const eras: { from: string | null; rule: EffectiveRule }[] = [];
    for (const from of [null, ...this.changes]) {
      const rule = this.compile(countries, state, from ?? BEGINNING);
      const last = eras[eras.length - 1];
      if (last && last.rule.key === rule.key && last.rule.applied.join() === rule.applied.join()) continue;
      eras.push({ from, rule });
    }
    const key = eras.length === 1 ? eras[0]!.rule.key : eras.map((e) => `${e.from ?? ''}>${e.rule.key}`).join('|');
    return { key, eras };
  }

  /** The first override whose countries (and states) hold the number. */
  private overrideFor(country: string | undefined, state: string | null | undefined): ParsedOverride | undefined {
    if (country === undefined) return undefined;
    return this.settings.overrides.find((o) => {
      if (!o.record.countries.includes(country)) return false;
      return !o.record.states || (typeof state === 'string' && o.record.states.includes(state));
    });
  }

  /** The default (or the team's default_hours), closed on the country's public holidays as the pack's default is. */
  private defaultLaw(country: string | undefined, applied: string[]): Law {
    const week = this.settings.defaultWeek ?? this.weekOf(this.rules.default.hours, 'rules default');
    applied.push(this.settings.defaultWeek ? 'default_hours' : this.rules.default.id);
    const closed = this.rules.default.closed_on?.length && country !== undefined;
    return { week, applied, holidays: closed ? [{ country, label: country }] : [] };
  }

  /**
   * The law for the number on local date `on`: its country's rule in force (or the default) narrowed by its state's
   * (every state's if unknown).
   */
  private law(country: string | undefined, state: string | null | undefined, on: string): Law {
    const rule = country === undefined ? undefined : this.byCountry.get(country)?.find((r) => inForce(r, on));
    const applied: string[] = [];
    let law: Law;
    if (rule?.hours) {
      const closed = rule.closed_on?.length && country !== undefined;
      law = { week: this.weekOf(rule.hours, `rules ${rule.id}`), applied: [rule.id], holidays: [] };
      if (closed) law.holidays.push({ country, label: country });
    } else {
      // A country the pack names without hours of its own says so: its id, then the default that applies.
      if (rule) applied.push(rule.id);
      law = this.defaultLaw(country, applied);
    }
    const lawCountry = rule?.countries[0] ?? country;
    for (const s of this.rules.states) {
      if (s.country !== lawCountry || (state !== null && s.state !== state)) continue;
      if (s.hours === null || !inForce(s, on)) continue;
      law.week = narrow(law.week, this.weekOf(s.hours, `rules ${s.id}`));
      law.applied.push(s.id);
      const label = `${s.country}-${s.state}`;
      if (s.closed_on?.length) law.holidays.push({ country: s.country, state: s.state, label });
    }
    return law;
  }

  private compile(countries: readonly string[], state: string | null | undefined, on: string): EffectiveRule {
    const override = countries.length === 1 ? this.overrideFor(countries[0], state) : undefined;
    const base: Law = override
      ? {
          week: override.week,
          applied: ['override'],
          holidays: override.closedOn.length > 0 ? [{ country: countries[0]!, label: countries[0]! }] : [],
        }
      : (countries.length === 0 ? [undefined] : countries)
          .map((c) => this.law(c, state, on))
          .reduce((a, b) => ({
            week: narrow(a.week, b.week),
            applied: [...a.applied, ...b.applied.filter((x) => !a.applied.includes(x))],
            holidays: [...a.holidays, ...b.holidays],
          }));
    let { week, holidays } = base;
    const applied = [...base.applied];
    const parts: [string, ParsedPart | undefined, string | undefined][] = [['policy', this.settings.policy, undefined]];
    for (const c of countries) parts.push([`policy.${c}`, this.settings.policyByCountry.get(c), c]);
    for (const [name, part, country] of parts) {
      if (!part) continue;
      week = narrow(week, part.week);
      applied.push(name);
      if (part.closedOn.length === 0) continue;
      // The general policy's holidays are those of every country the number could be in.
      for (const c of country === undefined ? countries : [country]) holidays.push({ country: c, label: c });
    }
    // A state's calendar holds its country's holidays too: the country's beside it adds nothing; nor does a repeat.
    const withState = new Set(holidays.filter((h) => h.state !== undefined).map((h) => h.country));
    holidays = holidays.filter((h, i) => {
      const first = holidays.findIndex((o) => o.label === h.label) === i;
      return first && (h.state !== undefined || !withState.has(h.country));
    });
    const days = weekText(week);
    const labels = holidays.map((h) => h.label).join(', ');
    const text = holidays.length > 0 && days !== 'no calls' ? `${days}; not on public holidays (${labels})` : days;
    // A blackout reaches a number of its countries, and of its states or of a state not known (the stricter).
    const blackouts = this.settings.blackouts.filter(
      (b) =>
        b.countries.some((c) => countries.includes(c)) &&
        (!b.states || state === null || (typeof state === 'string' && b.states.includes(state))),
    );
    const marks = blackouts.map((b) => this.settings.blackouts.indexOf(b)).join(',');
    // The text says what the weekly windows depend on (days, hours and whose holidays); the key adds the blackouts.
    const key = marks === '' ? text : `${text}#blackouts ${marks}`;
    return { key, week, holidays, applied, override: override?.record ?? null, text, blackouts };
  }
}
