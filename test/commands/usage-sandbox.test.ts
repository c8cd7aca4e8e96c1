// `dnc usage` in-process against the sandbox: monthly and annual accounts, many periods, paging, every error.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type AccountSpec, type HistoryPeriodSpec, type Sandbox } from '../../src/sandbox/index.js';
import type { BillingPeriodUsage, LegacyUsage, UsagePage } from '../../src/wire/types.js';
import { runDnc } from '../helpers/cli.js';

const NOW = new Date('2026-11-21T12:00:00Z');
const MONTHLY = 'key_monthly_acme_0001';
const ANNUAL = 'key_annual_northwind_0001';
const MANY = 'key_many_initech_0001';
const RESELLER = 'key_reseller_globex_0001';
const GAPS = 'key_gaps_umbrella_0001';
const JWT = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyLTEiLCJvcmciOiJhY21lIn0.c2lnbmF0dXJlLXBhcnQ';
const MANY_HISTORY = 30;

function monthlyHistory(count: number): HistoryPeriodSpec[] {
  return Array.from({ length: count }, (_, i) => {
    const start = new Date(Date.UTC(2026, 10 - (i + 1), 1)).toISOString();
    return {
      startDate: start,
      creditLimit: 2000,
      creditsUsed: 100 + i,
      totalRequests: 90 + i,
      byCountry: { US: 60 + i, GB: 30 },
    };
  });
}

const accounts: AccountSpec[] = [
  {
    key: MONTHLY,
    customerName: 'Acme Dialers Ltd',
    plan: 'monthly',
    creditLimit: 10_000,
    creditsUsed: 8_123,
    requestsUsed: 6_544,
    billingDate: '2026-11-01T00:00:00Z',
    history: monthlyHistory(2),
  },
  {
    key: ANNUAL,
    customerName: 'Northwind Outreach',
    plan: 'annual',
    creditLimit: 150_000,
    creditsUsed: 0,
    billingDate: '2026-03-15T00:00:00Z',
    history: [
      {
        startDate: '2025-03-15T00:00:00Z',
        creditLimit: 120_000,
        monthly: Array.from({ length: 12 }, (_, i) => ({ requestCount: 100 * (i + 1), creditsUsed: 150 * (i + 1) })),
        unallocated: { requestCount: 40, creditsUsed: 60 },
        byCountry: { US: 5000, GB: 2840 },
      },
    ],
  },
  {
    key: MANY,
    customerName: 'Initech Telesales',
    plan: 'monthly',
    creditLimit: 2000,
    billingDate: '2026-11-01T00:00:00Z',
    history: monthlyHistory(MANY_HISTORY),
  },
  { key: RESELLER, customerName: 'Globex Reseller', reseller: true },
  {
    // Periods with no usage between them: the legacy endpoint leaves those months out.
    key: GAPS,
    customerName: 'Umbrella Calls',
    plan: 'monthly',
    billingDate: '2026-11-01T00:00:00Z',
    history: [
      {
        startDate: '2026-05-01T00:00:00Z',
        creditLimit: 1000,
        creditsUsed: 40,
        totalRequests: 30,
        byCountry: { US: 20, GB: 10 },
      },
      {
        startDate: '2026-09-01T00:00:00Z',
        creditLimit: 1000,
        creditsUsed: 90,
        totalRequests: 60,
        byCountry: { GB: 40, DE: 20 },
      },
    ],
  },
  { key: JWT, customerName: 'Portal User Org' },
];

let sb: Sandbox;
beforeAll(async () => {
  sb = await startSandbox({ port: 0, accounts, now: () => NOW });
});
afterAll(async () => {
  await sb.close();
});
afterEach(() => {
  sb.reset();
});

function dnc(key: string, args: string[], options: { tty?: boolean; global?: string[] } = {}) {
  // The key as users are told to give it (--api-key on the command line is warned of).
  return runDnc(['--base-url', sb.baseUrl, ...(options.global ?? []), 'usage', ...args], {
    tty: options.tty,
    env: { DNC_API_KEY: key },
  });
}
const usageRequests = () => sb.requests().filter((r) => r.path === '/v2/usage_stats' || r.path === '/usage_stats');

describe('monthly account', () => {
  it('shows the latest period by default, as the sandbox counts it, and costs nothing', async () => {
    const before = sb.account(MONTHLY);
    const r = await dnc(MONTHLY, []);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')[1]).toBe(
      [
        'period',
        before.billingPeriodId,
        'monthly',
        '2026-11-01T00:00:00Z',
        '2026-12-01T00:00:00Z',
        '2026-11-30',
        10000,
        8123,
        1877,
        6544,
        0,
        0,
      ].join('\t'),
    );
    const log = usageRequests();
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({
      method: 'GET',
      path: '/v2/usage_stats',
      query: {},
      status: 200,
      account: 'Acme Dialers Ltd',
    });
    expect(log[0]!.headers.authorization).toBe('Bearer ***');
    // Free: no lookup, no credit moved.
    expect(sb.lookups()).toEqual([]);
    expect(sb.account(MONTHLY).creditsUsed).toBe(before.creditsUsed);
  });

  it('draws the gauge and the dates on a terminal', async () => {
    const r = await dnc(MONTHLY, [], { tty: true });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Acme Dialers Ltd · 1 billing period');
    expect(r.stdout).toContain('│ Credits used      │ 8,123  ████████░░ 81 %');
    expect(r.stdout).toContain('2026-11-01 to 2026-11-30');
    expect(r.stdout).toContain('--cursor '); // two closed periods remain
  });

  it('shows and explains a negative remainder after the limit is lowered', async () => {
    sb.setCreditLimit(5_000, MONTHLY);
    const tty = await dnc(MONTHLY, [], { tty: true });
    expect(tty.stdout).toContain('│ Credits remaining │ -3,123');
    expect(tty.stdout).toContain('3,123 credits were used beyond the current limit');
    expect(tty.stdout).toContain('██████████ 162 %');
    const piped = await dnc(MONTHLY, []);
    expect(piped.stdout.split('\n')[1]!.split('\t').slice(6, 9)).toEqual(['5000', '8123', '-3123']);
  });

  it('--periods N asks for N and --json gives the body as received', async () => {
    const r = await dnc(MONTHLY, ['--periods', '3'], { global: ['--json'] });
    expect(r.code).toBe(0);
    expect(usageRequests()[0]!.query).toEqual({ num_billing_periods: '3' });
    const page = JSON.parse(r.stdout) as UsagePage;
    expect(page.customer_name).toBe('Acme Dialers Ltd');
    expect(page.data.map((p) => p.start_date)).toEqual([
      '2026-11-01T00:00:00Z',
      '2026-10-01T00:00:00Z',
      '2026-09-01T00:00:00Z',
    ]);
    expect(page.next_cursor).toBeNull();
  });
});

describe('annual account', () => {
  it('charts the twelve months of the plan', async () => {
    const r = await dnc(ANNUAL, ['--periods', '2'], { tty: true });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('2 billing periods, newest first');
    expect(r.stdout).toContain('2026-03-15 to 2027-03-14');
    expect(r.stdout).toContain('2025-03-15 to 2026-03-14');
    const charts = r.stdout.split('Months of the annual plan (credits used)\n').slice(1);
    expect(charts).toHaveLength(2);
    const past = charts[1]!.split('\n').slice(0, 12);
    past.forEach((line, i) =>
      expect(line).toContain(
        `${(150 * (i + 1)).toLocaleString('en-US')} credits · ${(100 * (i + 1)).toLocaleString('en-US')} requests`,
      ),
    );
    expect(past[11]).toContain('█'.repeat(40));
    expect(r.stdout).toContain('│ Unallocated usage │ 40 requests · 60 credits');
  });

  it('gives twelve month records per period when piped, matching --json', async () => {
    const piped = await dnc(ANNUAL, ['--periods', '2']);
    const json = JSON.parse((await dnc(ANNUAL, ['--periods', '2'], { global: ['--json'] })).stdout) as UsagePage;
    const months = piped.stdout.split('\n').filter((l) => l.startsWith('month\t'));
    expect(months).toHaveLength(24);
    const expected = json.data.flatMap((p) =>
      p.monthly!.map((m) =>
        ['month', p.id, m.year, m.month, m.start_date, m.end_date, m.request_count, m.credits_used].join('\t'),
      ),
    );
    expect(months).toEqual(expected);
  });
});

describe('many periods and paging', () => {
  const total = MANY_HISTORY + 1;

  it('--all follows every cursor and merges the pages into one document', async () => {
    const r = await dnc(MANY, ['--all', '--periods', '7'], { global: ['--json'] });
    expect(r.code).toBe(0);
    const merged = JSON.parse(r.stdout) as UsagePage;
    expect(Object.keys(merged)).toEqual(['customer_name', 'data', 'next_cursor']);
    expect(merged.next_cursor).toBeNull();
    expect(merged.data).toHaveLength(total);
    const log = usageRequests();
    expect(log).toHaveLength(Math.ceil(total / 7));
    expect(log.every((q) => q.query.num_billing_periods === '7' && q.status === 200)).toBe(true);
    expect(log[0]!.query.cursor).toBeUndefined();
    const cursors = log.slice(1).map((q) => q.query.cursor);
    expect(new Set(cursors).size).toBe(cursors.length);
    // The same periods, in the same order, as one page of 100.
    sb.reset();
    const one = JSON.parse((await dnc(MANY, ['--periods', '100'], { global: ['--json'] })).stdout) as UsagePage;
    expect(merged.data).toEqual(one.data);
    const starts = merged.data.map((p: BillingPeriodUsage) => Date.parse(p.start_date));
    expect(starts.every((s, i) => i === 0 || s < starts[i - 1]!)).toBe(true);
  });

  it('--all without --periods asks for pages of 100', async () => {
    const r = await dnc(MANY, ['--all']);
    expect(r.code).toBe(0);
    expect(usageRequests().map((q) => q.query)).toEqual([{ num_billing_periods: '100' }]);
    expect(r.stdout.split('\n').filter((l) => l.startsWith('period\t'))).toHaveLength(total);
  });

  it('--cursor continues where the previous page ended', async () => {
    const first = await dnc(MANY, ['--periods', '10']);
    const cursorLine = first.stdout.trimEnd().split('\n').at(-1)!.split('\t');
    expect(cursorLine[0]).toBe('next_cursor');
    const second = JSON.parse(
      (await dnc(MANY, ['--periods', '10', '--cursor', cursorLine[1]!], { global: ['--json'] })).stdout,
    ) as UsagePage;
    const firstIds = first.stdout
      .split('\n')
      .filter((l) => l.startsWith('period\t'))
      .map((l) => Number(l.split('\t')[1]));
    const all = (
      JSON.parse((await dnc(MANY, ['--periods', '20'], { global: ['--json'] })).stdout) as UsagePage
    ).data.map((p) => p.id);
    expect([...firstIds, ...second.data.map((p) => p.id)]).toEqual(all);
  });

  it('--id selects one period, still as a data array', async () => {
    const all = JSON.parse((await dnc(MANY, ['--periods', '5'], { global: ['--json'] })).stdout) as UsagePage;
    const target = all.data[3]!;
    sb.reset();
    const r = await dnc(MANY, ['--id', String(target.id)], { global: ['--json'] });
    expect(r.code).toBe(0);
    expect(usageRequests().map((q) => q.query)).toEqual([{ id: String(target.id) }]);
    expect(JSON.parse(r.stdout)).toEqual({ customer_name: 'Initech Telesales', data: [target], next_cursor: null });
  });
});

describe('errors from the sandbox', () => {
  it('400: a cursor the service does not know → exit 2 with its text', async () => {
    const r = await dnc(MONTHLY, ['--cursor', 'not-a-cursor']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('(400): cursor is not valid');
    expect(r.stderr).toContain('hint: the cursor may be stale');
    expect(usageRequests()).toHaveLength(1);
  });

  it('401: no key → exit 4 with the service text', async () => {
    const r = await dnc(' ', []);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('(401): API key missing');
  });

  it('403: an unknown key → exit 4, not retried', async () => {
    const r = await dnc('key_nobody_has_this', []);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('(403): invalid API key');
    expect(usageRequests()).toHaveLength(1);
  });

  it('403: a reseller key without X-Forwarded-Host; accepted with it', async () => {
    const refused = await dnc(RESELLER, []);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toContain('X-Forwarded-Host');
    const ok = await dnc(RESELLER, [], { global: ['--forwarded-host', 'calls.globex.example'] });
    expect(ok.code).toBe(0);
    expect(usageRequests().at(-1)!.headers['x-forwarded-host']).toBe('calls.globex.example');
  });

  it("404: an unknown id and another account's id → exit 2 with a hint", async () => {
    const other = sb.account(MANY).billingPeriodId;
    for (const id of [999_999, other]) {
      const r = await dnc(MONTHLY, ['--id', String(id)]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`(404): billing period ${id} not found`);
      expect(r.stderr).toContain('hint: the id is unknown or belongs to another account');
      expect(r.stdout).toBe('');
    }
  });

  it('500 → exit 6 after the client retries', async () => {
    sb.setUsageFailure(true);
    for (const args of [[], ['--lifetime']]) {
      sb.reset();
      sb.setUsageFailure(true);
      const r = await dnc(MONTHLY, args, { global: ['--retries', '2'] });
      expect(r.code).toBe(6);
      expect(r.stderr).toContain('unable to process request');
      expect(usageRequests()).toHaveLength(3);
      expect(usageRequests().every((q) => q.status === 500)).toBe(true);
    }
  });

  it('a portal JWT is sent as a bearer key like any other', async () => {
    const r = await dnc(JWT, []);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')[0]).toBe('customer\tPortal User Org');
  });

  it('invalid combinations are refused before any request', async () => {
    for (const args of [
      ['--id', '1', '--all'],
      ['--lifetime', '--periods', '2'],
      ['--periods', '0'],
      ['--id', '0'],
    ]) {
      expect((await dnc(MONTHLY, args)).code).toBe(2);
    }
    expect(sb.requests()).toEqual([]);
  });
});

describe('--lifetime', () => {
  it('reads /usage_stats without parameters and fills the months without requests', async () => {
    const json = JSON.parse((await dnc(GAPS, ['--lifetime'], { global: ['--json'] })).stdout) as LegacyUsage;
    expect(json.total_requests).toBe(json.monthly.reduce((s, m) => s + m.request_count, 0));
    const r = await dnc(GAPS, ['--lifetime']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(usageRequests().map((q) => [q.path, q.query])).toEqual([
      ['/usage_stats', {}],
      ['/usage_stats', {}],
    ]);
    const months = r.stdout
      .split('\n')
      .filter((l) => l.startsWith('lifetime_month\t'))
      .map((l) => l.split('\t'));
    const first = json.monthly[0]!;
    const last = json.monthly.at(-1)!;
    expect(months.length).toBe((last.year - first.year) * 12 + last.month - first.month + 1);
    const reported = new Map(
      json.monthly.map((m) => [`${m.year}-${String(m.month).padStart(2, '0')}`, m.request_count]),
    );
    for (const [, ym, n] of months) expect(Number(n)).toBe(reported.get(ym!) ?? 0);
    expect(months.map(([, ym]) => ym)).toEqual(['2026-05', '2026-06', '2026-07', '2026-08', '2026-09']);
    expect(months.filter(([, ym]) => !reported.has(ym!))).toHaveLength(3);
    const countries = r.stdout.split('\n').filter((l) => l.startsWith('lifetime_country\t'));
    expect(countries).toEqual(json.by_country.map((c) => `lifetime_country\t${c.country}\t${c.request_count}`));
  });

  it('charts every month on a terminal, the missing ones as 0', async () => {
    const r = await dnc(GAPS, ['--lifetime'], { tty: true });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('│ Total requests │ 90 ');
    expect(r.stdout).toMatch(/ {2}2026-07 +0 requests\n/);
    expect(r.stdout).toMatch(/ {2}2026-09 +█{40} +60 requests\n/);
  });

  it('shows the legacy 401 and 403 texts as the service gives them', async () => {
    const missing = await dnc(' ', ['--lifetime']);
    expect(missing.code).toBe(4);
    expect(missing.stderr).toContain('API key missing: send it as Authorization: Bearer <YOUR_KEY>');
    const invalid = await dnc('key_nobody_has_this', ['--lifetime']);
    expect(invalid.code).toBe(4);
    expect(invalid.stderr).toContain('(403): invalid API key');
  });
});
