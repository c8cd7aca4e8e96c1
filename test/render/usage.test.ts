import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  fillLifetimeMonths,
  formatPeriodRange,
  lifetimeMismatch,
  periodDays,
  renderLifetimeUsage,
  renderUsagePage,
} from '../../src/render/usage.js';
import { visibleLength } from '../../src/render/table.js';
import type { LegacyUsage, UsagePage } from '../../src/wire/types.js';

const fixture = (name: string) => new URL(`../../fixtures/usage/${name}`, import.meta.url);
const load = <T>(name: string): T => JSON.parse(readFileSync(fixture(`${name}.json`), 'utf8')) as T;
const expected = (name: string) => readFileSync(fixture(name), 'utf8');

// The expected tables were rendered at this width with colour off, and read line by line.
const terminal = { tty: true, color: false, columns: 100 };
const piped = { tty: false, color: false, columns: 100 };

const pages = ['monthly-plan', 'annual-plan', 'negative-remaining', 'unallocated-usage'] as const;

describe('renderUsagePage against the expected outputs', () => {
  for (const name of pages) {
    it(`${name}: terminal table and piped records`, () => {
      const page = load<UsagePage>(name);
      expect(renderUsagePage(page, terminal)).toBe(expected(`expected-${name}.txt`));
      expect(renderUsagePage(page, piped)).toBe(expected(`expected-${name}.tsv`));
    });
  }
  it('legacy-missing-months: terminal and piped', () => {
    const body = load<LegacyUsage>('legacy-missing-months');
    expect(renderLifetimeUsage(body, terminal)).toBe(expected('expected-legacy-missing-months.txt'));
    expect(renderLifetimeUsage(body, piped)).toBe(expected('expected-legacy-missing-months.tsv'));
  });
});

describe('what the terminal output says', () => {
  it('fits the terminal and has no colour when colour is off', () => {
    for (const name of pages) {
      const text = renderUsagePage(load<UsagePage>(name), terminal);
      expect(text).not.toContain('\u001b[');
      for (const line of text.split('\n')) expect(visibleLength(line)).toBeLessThanOrEqual(100);
    }
  });

  it('fits a narrow terminal too, wrapping the notes', () => {
    for (const name of [...pages, 'many-periods-page-1']) {
      const text = renderUsagePage(load<UsagePage>(name), { ...terminal, columns: 60 });
      for (const line of text.split('\n')) expect(visibleLength(line)).toBeLessThanOrEqual(60);
    }
    const lifetime = renderLifetimeUsage(load<LegacyUsage>('legacy-missing-months'), { ...terminal, columns: 60 });
    for (const line of lifetime.split('\n')) expect(visibleLength(line)).toBeLessThanOrEqual(60);
  });

  it('with colour on, says the same once the colour is taken away', () => {
    // eslint-disable-next-line no-control-regex
    const strip = (s: string) => s.replace(/\u001b\[[0-9;]*m/g, '');
    for (const name of pages) {
      const page = load<UsagePage>(name);
      const coloured = renderUsagePage(page, { ...terminal, color: true });
      expect(coloured).toContain('\u001b[');
      expect(strip(coloured)).toBe(renderUsagePage(page, terminal));
    }
    const negative = renderUsagePage(load<UsagePage>('negative-remaining'), { ...terminal, color: true });
    expect(negative).toContain('\u001b[31m-750\u001b[39m');
  });

  it('shows each figure of the period and a gauge computed from it', () => {
    const page = load<UsagePage>('monthly-plan');
    const p = page.data[0]!;
    const text = renderUsagePage(page, terminal);
    expect(text).toContain(page.customer_name);
    expect(text).toContain(`${p.id} (${p.type})`);
    expect(text).toContain(p.credit_limit.toLocaleString('en-US'));
    expect(text).toContain(p.credits_remaining.toLocaleString('en-US'));
    const percent = Math.floor((p.credits_used / p.credit_limit) * 100);
    expect(text).toContain(
      `${'█'.repeat(Math.floor(percent / 10))}${'░'.repeat(10 - Math.floor(percent / 10))} ${percent} %`,
    );
    // By country, in the service's order.
    const order = p.by_country.map((c) => text.indexOf(`│ ${c.country} `));
    expect(order.every((at, i) => at > 0 && (i === 0 || at > order[i - 1]!))).toBe(true);
    expect(text).not.toContain('Unallocated');
    expect(text).not.toContain('Months of the annual plan');
  });

  it('shows a negative remainder plainly and explains it', () => {
    const page = load<UsagePage>('negative-remaining');
    const p = page.data[0]!;
    expect(p.credits_remaining).toBeLessThan(0);
    const text = renderUsagePage(page, terminal);
    expect(text).toContain(`│ Credits remaining │ ${p.credits_remaining} `);
    expect(text).toContain(`${-p.credits_remaining} credits were used beyond the current limit`);
  });

  it('shows unallocated usage only when non-zero', () => {
    const page = load<UsagePage>('unallocated-usage');
    const u = page.data[0]!.unallocated_usage;
    expect(renderUsagePage(page, terminal)).toContain(`${u.request_count} requests · ${u.credits_used} credits`);
  });

  it('charts the twelve months of an annual plan, each with its figures', () => {
    const page = load<UsagePage>('annual-plan');
    const months = page.data[0]!.monthly!;
    expect(months).toHaveLength(12);
    const text = renderUsagePage(page, terminal);
    const chart = text.slice(text.indexOf('Months of the annual plan')).trimEnd().split('\n').slice(1);
    expect(chart).toHaveLength(12);
    months.forEach((m, i) => {
      expect(chart[i]).toContain(m.start_date.slice(0, 10));
      expect(chart[i]).toContain(
        `${m.credits_used.toLocaleString('en-US')} credits · ${m.request_count.toLocaleString('en-US')} requests`,
      );
      expect(chart[i]!.includes('█') || chart[i]!.includes('▏')).toBe(m.credits_used > 0);
    });
  });

  it('points at the next page when the service has more', () => {
    const page = load<UsagePage>('many-periods-page-1');
    const text = renderUsagePage(page, terminal);
    expect(text).toContain(`${page.data.length} billing periods, newest first`);
    expect(text).toContain(`--cursor ${page.next_cursor}`);
    expect(renderUsagePage(page, piped).trimEnd().split('\n').at(-1)).toBe(`next_cursor\t${page.next_cursor}`);
  });
});

describe('the piped records', () => {
  it('have a fixed number of fields per record type', () => {
    const fields: Record<string, number> = { customer: 2, period: 12, country: 4, month: 8, next_cursor: 2 };
    for (const name of [...pages, 'many-periods-page-1']) {
      for (const line of renderUsagePage(load<UsagePage>(name), piped).trimEnd().split('\n')) {
        const parts = line.split('\t');
        expect(parts.length).toBe(fields[parts[0]!]);
      }
    }
  });
});

describe('dates', () => {
  it('end_date is exclusive: the last day is the day before a midnight end, in UTC', () => {
    expect(periodDays('2026-11-01T00:00:00Z', '2026-12-01T00:00:00Z')).toEqual({
      first: '2026-11-01',
      last: '2026-11-30',
    });
    expect(periodDays('2026-02-01T00:00:00+00:00', '2026-03-01T00:00:00+00:00')).toEqual({
      first: '2026-02-01',
      last: '2026-02-28',
    });
    expect(periodDays('2027-12-01T00:00:00Z', '2028-01-01T00:00:00Z')!.last).toBe('2027-12-31');
    // Other offsets are converted to UTC first.
    expect(periodDays('2026-11-01T01:00:00+01:00', '2026-12-01T01:00:00+01:00')).toEqual({
      first: '2026-11-01',
      last: '2026-11-30',
    });
  });
  it('shows the time when a period does not start or end at midnight', () => {
    expect(formatPeriodRange('2026-11-05T14:00:00Z', '2026-12-05T14:00:00Z')).toBe(
      '2026-11-05 14:00 until 2026-12-05 14:00 (end exclusive)',
    );
    expect(formatPeriodRange('2026-11-01T00:00:00Z', '2026-12-01T00:00:00Z')).toBe('2026-11-01 to 2026-11-30');
    expect(formatPeriodRange('garbage', 'x')).toBe('garbage to x (end exclusive)');
  });
});

describe('lifetime usage', () => {
  it('fills the months the service left out with 0, across a year end', () => {
    const body = load<LegacyUsage>('legacy-missing-months');
    const months = fillLifetimeMonths(body.monthly);
    expect(months.map((m) => `${m.year}-${m.month}:${m.request_count}:${m.reported}`)).toEqual([
      '2025-10:400:true',
      '2025-11:125:true',
      '2025-12:0:false',
      '2026-1:0:false',
      '2026-2:1000:true',
      '2026-3:800:true',
    ]);
    expect(fillLifetimeMonths([])).toEqual([]);
  });
  it('notices when total_requests is not the sum of the months', () => {
    expect(lifetimeMismatch(load<LegacyUsage>('legacy-missing-months'))).toBeNull();
    expect(lifetimeMismatch(load<LegacyUsage>('legacy-total-mismatch'))).toEqual({ total: 1000, sumOfMonths: 950 });
  });
  it('keeps by-country in the service order', () => {
    const body = load<LegacyUsage>('legacy-missing-months');
    const lines = renderLifetimeUsage(body, piped)
      .split('\n')
      .filter((l) => l.startsWith('lifetime_country'));
    expect(lines).toEqual(body.by_country.map((c) => `lifetime_country\t${c.country}\t${c.request_count}`));
  });
});
