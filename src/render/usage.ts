// Renders usage answers (v2 billing periods, legacy lifetime totals) for a terminal or as stable tab-separated records.
import { terminalSafe } from '../text/terminal-safe.js';
import type { BillingPeriodUsage, LegacyUsage, MonthUsage, UsagePage } from '../wire/types.js';
import { barChart } from './chart.js';
import { gauge } from './gauge.js';
import { formatInteger, paint, renderTable, tsvLine, wrap, type Terminal } from './table.js';

const DAY_MS = 86_400_000;

function isoDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

function isMidnightUtc(ms: number): boolean {
  return ms % DAY_MS === 0;
}

/**
 * The days a period covers, in UTC. The service's end_date is exclusive, so the last day is the
 * day before it when it falls at midnight (a period ending 2026-12-01T00:00Z ends on 2026-11-30),
 * and the day of the last instant before it otherwise.
 */
export function periodDays(startDate: string, endDate: string): { first: string; last: string } | null {
  const start = Date.parse(startDate);
  const end = Date.parse(endDate);
  if (!Number.isFinite(start) || !Number.isFinite(end) || end <= start) return null;
  return { first: isoDay(start), last: isoDay(end - 1) };
}

/** "2026-11-01 to 2026-11-30"; instants other than midnight are shown with their time, end exclusive. */
export function formatPeriodRange(startDate: string, endDate: string): string {
  const days = periodDays(startDate, endDate);
  if (!days) return `${startDate} to ${endDate} (end exclusive)`;
  const start = Date.parse(startDate);
  const end = Date.parse(endDate);
  if (isMidnightUtc(start) && isMidnightUtc(end)) return `${days.first} to ${days.last}`;
  const at = (ms: number) =>
    new Date(ms)
      .toISOString()
      .replace('T', ' ')
      .replace(/:00\.000Z$|\.000Z$/, '');
  return `${at(start)} until ${at(end)} (end exclusive)`;
}

/** A month bucket's label: `2026-01` when it starts on the 1st at midnight, else its first day `2026-01-15`. */
function monthLabel(m: MonthUsage): string {
  const start = Date.parse(m.start_date);
  const ym = `${m.year}-${String(m.month).padStart(2, '0')}`;
  if (!Number.isFinite(start) || (isMidnightUtc(start) && new Date(start).getUTCDate() === 1)) return ym;
  return isoDay(start);
}

function hasUnallocated(p: BillingPeriodUsage): boolean {
  const u = p.unallocated_usage;
  return !!u && (u.request_count !== 0 || u.credits_used !== 0);
}

/** Lines of one billing period on a terminal: figures, gauge, remarks, countries, months. */
function periodBlock(p: BillingPeriodUsage, term: Terminal): string {
  const rows: Array<[string, string]> = [
    ['Billing period', `${p.id} (${p.type})`],
    ['Dates (UTC)', formatPeriodRange(p.start_date, p.end_date)],
    ['Credit limit', formatInteger(p.credit_limit)],
    [
      'Credits used',
      `${formatInteger(p.credits_used)}  ${gauge(p.credits_used, p.credit_limit, { color: term.color })}`,
    ],
    [
      'Credits remaining',
      p.credits_remaining < 0
        ? paint(term.color, 'red', formatInteger(p.credits_remaining))
        : formatInteger(p.credits_remaining),
    ],
    ['Requests', formatInteger(p.total_requests)],
  ];
  if (hasUnallocated(p)) {
    rows.push([
      'Unallocated usage',
      `${formatInteger(p.unallocated_usage.request_count)} requests · ` +
        `${formatInteger(p.unallocated_usage.credits_used)} credits`,
    ]);
  }
  let out = renderTable({ head: ['', ''], header: false, rows, align: ['left', 'left'] }, term);
  if (p.credits_remaining < 0) {
    out += wrap(
      `Credits remaining is negative: ${formatInteger(-p.credits_remaining)} credits were used beyond the ` +
        `current limit ` +
        '(it was lowered after they were used); lookups are refused until the next period or a top-up.',
      term.columns,
    );
  }
  if (hasUnallocated(p)) {
    out += wrap(
      'Unallocated usage: historical usage not assignable to a month; included in the totals above.',
      term.columns,
    );
  }
  out += '\nBy country (completed lookups)\n';
  if (p.by_country.length === 0) out += '  none\n';
  else {
    out += renderTable(
      { head: ['Country', 'Requests'], rows: p.by_country.map((c) => [c.country, c.request_count]) },
      term,
    );
  }
  if (p.monthly && p.monthly.length > 0) {
    out += '\nMonths of the annual plan (credits used)\n';
    const lines = barChart(
      p.monthly.map((m) => ({
        label: monthLabel(m),
        value: m.credits_used,
        note: `· ${formatInteger(m.request_count)} requests`,
      })),
      { columns: term.columns, color: term.color, unit: 'credits' },
    );
    out += `${lines.join('\n')}\n`;
  }
  return out;
}

/**
 * The piped format of a usage page, one record per line, fields separated by tabs, no colour,
 * plain integers (documented in docs/usage.md, "Piped"):
 *   customer  NAME
 *   period    ID TYPE START_DATE END_DATE LAST_DAY CREDIT_LIMIT CREDITS_USED CREDITS_REMAINING TOTAL_REQUESTS
 *             UNALLOCATED_REQUESTS UNALLOCATED_CREDITS
 *   country   PERIOD_ID COUNTRY REQUEST_COUNT
 *   month     PERIOD_ID YEAR MONTH START_DATE END_DATE REQUEST_COUNT CREDITS_USED
 *   next_cursor CURSOR        (only when the service has more periods)
 */
function usagePageRecords(page: UsagePage): string {
  const lines = [tsvLine(['customer', page.customer_name])];
  for (const p of page.data) {
    const days = periodDays(p.start_date, p.end_date);
    lines.push(
      tsvLine([
        'period',
        p.id,
        p.type,
        p.start_date,
        p.end_date,
        days?.last ?? '',
        p.credit_limit,
        p.credits_used,
        p.credits_remaining,
        p.total_requests,
        p.unallocated_usage?.request_count ?? 0,
        p.unallocated_usage?.credits_used ?? 0,
      ]),
    );
    for (const c of p.by_country) lines.push(tsvLine(['country', p.id, c.country, c.request_count]));
    for (const m of p.monthly ?? []) {
      lines.push(tsvLine(['month', p.id, m.year, m.month, m.start_date, m.end_date, m.request_count, m.credits_used]));
    }
  }
  if (page.next_cursor !== null && page.next_cursor !== undefined)
    lines.push(tsvLine(['next_cursor', page.next_cursor]));
  return `${lines.join('\n')}\n`;
}

/** A usage page for `term`: blocks per billing period on a terminal, tab-separated records when piped. */
export function renderUsagePage(page: UsagePage, term: Terminal): string {
  if (!term.tty) return usagePageRecords(page);
  const count = page.data.length;
  let out =
    `${paint(term.color, 'bold', terminalSafe(page.customer_name))} · ` +
    `${count === 1 ? '1 billing period' : `${count} billing periods, newest first`}\n`;
  if (count === 0) out += 'No billing periods recorded.\n';
  for (const p of page.data) out += `\n${periodBlock(p, term)}`;
  if (page.next_cursor !== null && page.next_cursor !== undefined) {
    const more = `More billing periods: dnc usage --cursor ${page.next_cursor} (or --all for every one)`;
    out += `\n${wrap(more, term.columns)}`;
  }
  return out;
}

export interface LifetimeMonth {
  year: number;
  month: number;
  request_count: number;
  /** False for a month the service left out (no requests), filled in as 0. */
  reported: boolean;
}

/**
 * The legacy monthly series with the months the service left out (months without requests)
 * filled in as 0, from the first month to the last, in ascending order.
 */
export function fillLifetimeMonths(monthly: LegacyUsage['monthly']): LifetimeMonth[] {
  if (monthly.length === 0) return [];
  const key = (y: number, m: number) => y * 12 + (m - 1);
  const byKey = new Map<number, number>();
  for (const m of monthly) byKey.set(key(m.year, m.month), (byKey.get(key(m.year, m.month)) ?? 0) + m.request_count);
  const keys = [...byKey.keys()];
  const first = Math.min(...keys);
  const last = Math.max(...keys);
  const out: LifetimeMonth[] = [];
  for (let k = first; k <= last; k++) {
    const count = byKey.get(k);
    out.push({
      year: Math.floor(k / 12),
      month: (k % 12) + 1,
      request_count: count ?? 0,
      reported: count !== undefined,
    });
  }
  return out;
}

/** Null when total_requests is the sum of the months (as the description says it is), else both figures. */
export function lifetimeMismatch(body: LegacyUsage): { total: number; sumOfMonths: number } | null {
  const sumOfMonths = body.monthly.reduce((sum, m) => sum + m.request_count, 0);
  return sumOfMonths === body.total_requests ? null : { total: body.total_requests, sumOfMonths };
}

function ym(m: { year: number; month: number }): string {
  return `${m.year}-${String(m.month).padStart(2, '0')}`;
}

/**
 * Lifetime usage for `term`. Piped records:
 *   customer          NAME
 *   lifetime_total    TOTAL_REQUESTS
 *   lifetime_month    YYYY-MM REQUEST_COUNT       (every month from the first to the last; 0 where none)
 *   lifetime_country  COUNTRY REQUEST_COUNT       (in the service's order)
 */
export function renderLifetimeUsage(body: LegacyUsage, term: Terminal): string {
  const months = fillLifetimeMonths(body.monthly);
  if (!term.tty) {
    const lines = [tsvLine(['customer', body.customer_name]), tsvLine(['lifetime_total', body.total_requests])];
    for (const m of months) lines.push(tsvLine(['lifetime_month', ym(m), m.request_count]));
    for (const c of body.by_country) lines.push(tsvLine(['lifetime_country', c.country, c.request_count]));
    return `${lines.join('\n')}\n`;
  }
  let out = `${paint(term.color, 'bold', terminalSafe(body.customer_name))} · lifetime usage\n`;
  const span = months.length > 0 ? `${ym(months[0]!)} to ${ym(months[months.length - 1]!)}` : 'none';
  out += renderTable(
    {
      head: ['', ''],
      header: false,
      rows: [
        ['Total requests', formatInteger(body.total_requests)],
        ['Months', months.length > 0 ? `${span} (${months.length})` : span],
      ],
    },
    term,
  );
  out += '\nRequests per month (months without requests shown as 0)\n';
  if (months.length === 0) out += '  none\n';
  else {
    const lines = barChart(
      months.map((m) => ({ label: ym(m), value: m.request_count })),
      { columns: term.columns, color: term.color, unit: 'requests' },
    );
    out += `${lines.join('\n')}\n`;
  }
  out += '\nBy country (all time)\n';
  if (body.by_country.length === 0) out += '  none\n';
  else
    out += renderTable(
      { head: ['Country', 'Requests'], rows: body.by_country.map((c) => [c.country, c.request_count]) },
      term,
    );
  return out;
}
