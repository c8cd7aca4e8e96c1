// Sandbox accounts: keys, plans, credit limits and billing periods, with the usage counters lookups move.
import type { BillingPeriodUsage, CountryUsage, MonthUsage } from '../wire/types.js';

export type Plan = 'monthly' | 'annual';

/** A past billing period as given in an accounts file (docs/sandbox.md, "Accounts file"). */
export interface HistoryPeriodSpec {
  /** Billing-period id; assigned when missing. */
  id?: number;
  /** Inclusive start, ISO 8601; the end follows from the plan (1 or 12 months). */
  startDate: string;
  creditLimit: number;
  creditsUsed?: number;
  totalRequests?: number;
  byCountry?: Record<string, number>;
  unallocated?: { requestCount: number; creditsUsed: number };
  /** Annual plans: up to twelve month buckets, oldest first. */
  monthly?: Array<{ requestCount: number; creditsUsed: number }>;
}

/** One account (programmatic option or an element of the accounts file's "accounts" array). */
export interface AccountSpec {
  key: string;
  customerName?: string;
  plan?: Plan;
  creditLimit?: number;
  /** Credits already used in the current billing period (reported as unallocated usage on annual plans). */
  creditsUsed?: number;
  /** Requests behind creditsUsed (default: as many as credits). */
  requestsUsed?: number;
  /** Start of the current billing period, ISO 8601 (default: this month's first day; annual: four months earlier). */
  billingDate?: string;
  /** A reseller key must send X-Forwarded-Host on every request. */
  reseller?: boolean;
  /** Webhook lookups "may be disabled for an account" (default enabled). */
  webhooks?: boolean;
  /** Closed billing periods, any order. */
  history?: HistoryPeriodSpec[];
}

interface Bucket {
  requestCount: number;
  creditsUsed: number;
}

/** A billing period and its counters. Running totals keep the hot path free of sums. */
export class Period {
  readonly buckets: Bucket[];
  /** Start of each month bucket (ms), computed once: the hot path only compares numbers. */
  private readonly bucketStarts: number[];
  readonly unallocated: Bucket = { requestCount: 0, creditsUsed: 0 };
  readonly byCountry = new Map<string, number>();
  creditsUsed = 0;
  totalRequests = 0;

  constructor(
    readonly id: number,
    readonly type: Plan,
    readonly start: Date,
    readonly end: Date,
    public creditLimit: number,
  ) {
    const n = type === 'annual' ? 12 : 1;
    this.buckets = Array.from({ length: n }, () => ({ requestCount: 0, creditsUsed: 0 }));
    this.bucketStarts = Array.from({ length: n }, (_, i) => addMonths(start, i).getTime());
  }

  /** Index of the month bucket `at` falls in (monthly plans have one), or -1 for unallocated. */
  bucketAt(at: Date): number {
    const t = at.getTime();
    if (t < this.start.getTime() || t >= this.end.getTime()) return -1;
    for (let i = this.bucketStarts.length - 1; i > 0; i--) if (t >= this.bucketStarts[i]!) return i;
    return 0;
  }

  /** Adds (or with negative values, removes) charged usage; a bucket of -1 is unallocated usage. */
  add(bucket: number, requests: number, credits: number): void {
    const b = bucket < 0 ? this.unallocated : this.buckets[bucket]!;
    b.requestCount += requests;
    b.creditsUsed += credits;
    this.totalRequests += requests;
    this.creditsUsed += credits;
  }

  countCompleted(country: string, n = 1): void {
    this.byCountry.set(country, (this.byCountry.get(country) ?? 0) + n);
  }

  toWire(): BillingPeriodUsage {
    const byCountry: CountryUsage[] = sortCountries(this.byCountry);
    const out: BillingPeriodUsage = {
      id: this.id,
      type: this.type,
      start_date: isoDate(this.start),
      end_date: isoDate(this.end),
      credit_limit: this.creditLimit,
      credits_used: this.creditsUsed,
      credits_remaining: this.creditLimit - this.creditsUsed,
      total_requests: this.totalRequests,
      by_country: byCountry,
      unallocated_usage: { request_count: this.unallocated.requestCount, credits_used: this.unallocated.creditsUsed },
    };
    if (this.type === 'annual') {
      out.monthly = this.buckets.map((b, i): MonthUsage => {
        const start = addMonths(this.start, i);
        return {
          year: start.getUTCFullYear(),
          month: start.getUTCMonth() + 1,
          start_date: isoDate(start),
          end_date: isoDate(addMonths(this.start, i + 1)),
          request_count: b.requestCount,
          credits_used: b.creditsUsed,
        };
      });
    }
    return out;
  }
}

export class Account {
  /** Closed periods, oldest first; `current` is the live one. */
  readonly closed: Period[] = [];
  current!: Period;

  constructor(
    readonly key: string,
    readonly customerName: string,
    readonly plan: Plan,
    readonly reseller: boolean,
    readonly webhooks: boolean,
  ) {}

  /** The billing date periods are counted from; period k starts k plan lengths after it. */
  anchor!: Date;
  /** k of the current period. */
  periodIndex = 0;

  /** Start of period k (counted from the anchor, so month-end billing dates do not drift). */
  periodStart(k: number): Date {
    return addMonths(this.anchor, k * periodLength(this.plan));
  }

  /** Newest first, current included. */
  periodsNewestFirst(): Period[] {
    const out = [this.current];
    for (let i = this.closed.length - 1; i >= 0; i--) out.push(this.closed[i]!);
    return out;
  }
}

/** Sorted by request_count descending, then country ascending (2.9; also used for 2.5). */
export function sortCountries(counts: Map<string, number>): CountryUsage[] {
  return [...counts]
    .filter(([, n]) => n > 0)
    .map(([country, request_count]) => ({ country, request_count }))
    .sort((a, b) => b.request_count - a.request_count || (a.country < b.country ? -1 : a.country > b.country ? 1 : 0));
}

export function addMonths(date: Date, months: number): Date {
  const d = new Date(date.getTime());
  const day = d.getUTCDate();
  d.setUTCDate(1);
  d.setUTCMonth(d.getUTCMonth() + months);
  // A billing date on the 31st falls on the month's last day in shorter months.
  const last = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate();
  d.setUTCDate(Math.min(day, last));
  return d;
}

/** date-time as the service writes period bounds: 2026-11-01T00:00:00Z. */
export function isoDate(d: Date): string {
  return d.toISOString().replace(/\.000Z$/, 'Z');
}

function periodLength(plan: Plan): number {
  return plan === 'annual' ? 12 : 1;
}

/** Billing periods get ids unique across accounts, so another account's id is a 404, never a match. */
export class PeriodIds {
  private next = 1;
  private readonly used = new Set<number>();
  /** Which account owns each period id. */
  readonly owner = new Map<number, Account>();

  /** `explicit`: the ids an accounts file gives, kept out of automatic numbering. */
  constructor(private readonly explicit: ReadonlySet<number> = new Set()) {}

  claim(id?: number): number {
    if (id !== undefined) {
      if (this.used.has(id)) throw new Error(`billing period id ${id} is used twice`);
      this.used.add(id);
      return id;
    }
    while (this.used.has(this.next) || this.explicit.has(this.next)) this.next++;
    this.used.add(this.next);
    return this.next;
  }
}

function seedPeriod(p: Period, credits: number, requests: number, spec?: HistoryPeriodSpec): void {
  if (spec?.monthly && p.type === 'annual') {
    spec.monthly.slice(0, 12).forEach((m, i) => p.add(i, m.requestCount, m.creditsUsed));
  }
  if (spec?.unallocated) p.add(-1, spec.unallocated.requestCount, spec.unallocated.creditsUsed);
  // Totals not explained by month buckets: the period's only bucket (monthly plan) or unallocated (annual).
  const restCredits = credits - p.creditsUsed;
  const restRequests = requests - p.totalRequests;
  if (restCredits > 0 || restRequests > 0) {
    p.add(p.type === 'monthly' ? 0 : -1, Math.max(0, restRequests), Math.max(0, restCredits));
  }
  for (const [country, n] of Object.entries(spec?.byCountry ?? {})) p.countCompleted(country, n);
}

/** Builds an account's periods from its spec; `now` places the current period. */
export function buildAccount(
  spec: AccountSpec,
  ids: PeriodIds,
  now: Date,
  defaults: { creditLimit: number; plan: Plan },
): Account {
  const plan = spec.plan ?? defaults.plan;
  const account = new Account(
    spec.key,
    spec.customerName ?? 'Sandbox Customer',
    plan,
    spec.reseller === true,
    spec.webhooks !== false,
  );
  const len = periodLength(plan);
  account.anchor = spec.billingDate ? new Date(spec.billingDate) : defaultBillingDate(now, plan);
  // A billing date in the past rolls forward to the period that contains now.
  while (account.periodStart(account.periodIndex + 1) <= now) account.periodIndex++;
  const history = [...(spec.history ?? [])].sort((a, b) => Date.parse(a.startDate) - Date.parse(b.startDate));
  for (const h of history) {
    const hs = new Date(h.startDate);
    const p = new Period(ids.claim(h.id), plan, hs, addMonths(hs, len), h.creditLimit);
    const requests = h.totalRequests ?? Object.values(h.byCountry ?? {}).reduce((a, b) => a + b, 0);
    seedPeriod(p, h.creditsUsed ?? requests, requests, h);
    account.closed.push(p);
    ids.owner.set(p.id, account);
  }
  const current = new Period(
    ids.claim(),
    plan,
    account.periodStart(account.periodIndex),
    account.periodStart(account.periodIndex + 1),
    spec.creditLimit ?? defaults.creditLimit,
  );
  const used = spec.creditsUsed ?? 0;
  seedPeriod(current, used, spec.requestsUsed ?? used);
  account.current = current;
  ids.owner.set(current.id, account);
  return account;
}

function defaultBillingDate(now: Date, plan: Plan): Date {
  const first = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  return plan === 'annual' ? addMonths(first, -4) : first;
}

/** The default account: printed at start, with three past periods so paging has something to page through. */
export function defaultAccountSpec(key: string, plan: Plan, creditLimit: number, now: Date): AccountSpec {
  const len = periodLength(plan);
  const current = defaultBillingDate(now, plan);
  const past = [
    { us: 212, gb: 96, de: 41 },
    { us: 305, gb: 120, de: 17 },
    { us: 188, gb: 64, de: 33 },
  ];
  const history: HistoryPeriodSpec[] = past.map((c, i) => {
    const start = addMonths(current, -len * (past.length - i));
    const requests = c.us + c.gb + c.de;
    const credits = c.us + c.gb + 2 * c.de;
    const h: HistoryPeriodSpec = {
      startDate: isoDate(start),
      creditLimit: creditLimit,
      creditsUsed: credits,
      totalRequests: requests,
      byCountry: { US: c.us, GB: c.gb, DE: c.de },
    };
    if (plan === 'annual') {
      // Spread over the year, keeping a little usage that predates monthly accounting.
      const unallocated = { requestCount: 7, creditsUsed: 7 };
      const monthly = Array.from({ length: 12 }, () => ({ requestCount: 0, creditsUsed: 0 }));
      let r = requests - unallocated.requestCount;
      let cr = credits - unallocated.creditsUsed;
      for (let m = 0; m < 12; m++) {
        const share = m === 11 ? r : Math.floor(r / (12 - m));
        const cshare = m === 11 ? cr : Math.floor(cr / (12 - m));
        monthly[m] = { requestCount: share, creditsUsed: cshare };
        r -= share;
        cr -= cshare;
      }
      h.monthly = monthly;
      h.unallocated = unallocated;
    }
    return h;
  });
  return { key, customerName: 'Sandbox Customer', plan, creditLimit, billingDate: isoDate(current), history };
}

/** Checks a parsed accounts file (or option) and says exactly what is wrong. */
export function validateAccountSpecs(value: unknown): AccountSpec[] {
  const list = Array.isArray(value) ? value : (value as { accounts?: unknown } | null)?.accounts;
  if (!Array.isArray(list) || list.length === 0)
    throw new Error('expected {"accounts": [ … ]} with at least one account');
  const keys = new Set<string>();
  list.forEach((a: unknown, i) => {
    const where = `accounts[${i}]`;
    if (typeof a !== 'object' || a === null) throw new Error(`${where} is not an object`);
    const o = a as Record<string, unknown>;
    if (typeof o.key !== 'string' || o.key.length < 4)
      throw new Error(`${where}.key must be a string of at least 4 characters`);
    if (keys.has(o.key)) throw new Error(`${where}.key is used by an earlier account`);
    keys.add(o.key);
    if (o.plan !== undefined && o.plan !== 'monthly' && o.plan !== 'annual')
      throw new Error(`${where}.plan must be "monthly" or "annual"`);
    for (const f of ['creditLimit', 'creditsUsed', 'requestsUsed']) {
      if (o[f] !== undefined && !(Number.isInteger(o[f]) && (o[f] as number) >= 0))
        throw new Error(`${where}.${f} must be a whole number ≥ 0`);
    }
    if (o.billingDate !== undefined && Number.isNaN(Date.parse(String(o.billingDate))))
      throw new Error(`${where}.billingDate is not a date`);
    if (o.history !== undefined) {
      if (!Array.isArray(o.history)) throw new Error(`${where}.history must be an array`);
      o.history.forEach((h: unknown, j) => {
        const hw = `${where}.history[${j}]`;
        const ho = (h ?? {}) as Record<string, unknown>;
        if (typeof ho.startDate !== 'string' || Number.isNaN(Date.parse(ho.startDate)))
          throw new Error(`${hw}.startDate must be a date`);
        if (!Number.isInteger(ho.creditLimit)) throw new Error(`${hw}.creditLimit must be a whole number`);
        if (ho.id !== undefined && !(Number.isInteger(ho.id) && (ho.id as number) >= 1))
          throw new Error(`${hw}.id must be a whole number ≥ 1`);
      });
    }
  });
  return list as AccountSpec[];
}
