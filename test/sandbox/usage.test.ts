// Usage endpoints of the sandbox: /v2/usage_stats (periods, paging, id, errors, live counts) and legacy /usage_stats.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startSandbox, validateAccountSpecs, type Sandbox, type SandboxOptions } from '../../src/sandbox/index.js';
import { DE, get, GB, lookup, startReceiver, until, US, type Receiver } from './helpers.js';

const NOW = new Date('2026-11-21T12:00:00Z');
const fixture = validateAccountSpecs(JSON.parse(readFileSync(path.resolve('fixtures/sandbox/accounts.json'), 'utf8')));
const ACME = 'Bearer sbx_acme_annual_0001';

const open: Array<Sandbox | Receiver> = [];
async function sandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const sb = await startSandbox({ port: 0, seed: 11, now: () => NOW, ...options });
  open.push(sb);
  return sb;
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

describe('GET /v2/usage_stats', () => {
  it('returns the latest period with every 2.5 field, and pages through history newest first', async () => {
    const sb = await sandbox({ creditLimit: 500 });
    const first = await get(sb, '/v2/usage_stats');
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      customer_name: 'Sandbox Customer',
      data: [
        {
          id: 4,
          type: 'monthly',
          start_date: '2026-11-01T00:00:00Z',
          end_date: '2026-12-01T00:00:00Z',
          credit_limit: 500,
          credits_used: 0,
          credits_remaining: 500,
          total_requests: 0,
          by_country: [],
          unallocated_usage: { request_count: 0, credits_used: 0 },
        },
      ],
      next_cursor: expect.any(String),
    });
    const seen: number[] = [];
    let cursor: string | null = null;
    do {
      const page = await get(sb, `/v2/usage_stats${cursor === null ? '' : `?cursor=${encodeURIComponent(cursor)}`}`);
      expect(page.status).toBe(200);
      expect(page.body.data).toHaveLength(1);
      seen.push(page.body.data[0].id);
      cursor = page.body.next_cursor;
    } while (cursor !== null);
    expect(seen).toEqual([4, 3, 2, 1]);
    const all = await get(sb, '/v2/usage_stats?num_billing_periods=100');
    expect(all.body.data.map((p: { start_date: string }) => p.start_date)).toEqual([
      '2026-11-01T00:00:00Z',
      '2026-10-01T00:00:00Z',
      '2026-09-01T00:00:00Z',
      '2026-08-01T00:00:00Z',
    ]);
    expect(all.body.next_cursor).toBeNull();
    for (const p of all.body.data) {
      expect(p.credits_remaining).toBe(p.credit_limit - p.credits_used);
      expect(p.monthly).toBeUndefined();
    }
    const two = await get(sb, '/v2/usage_stats?num_billing_periods=2');
    const rest = await get(sb, `/v2/usage_stats?num_billing_periods=2&cursor=${two.body.next_cursor}`);
    expect([...two.body.data, ...rest.body.data].map((p: { id: number }) => p.id)).toEqual([4, 3, 2, 1]);
    expect(rest.body.next_cursor).toBeNull();
  });

  it('gives annual plans twelve month buckets from the billing date, with unallocated usage in the totals', async () => {
    const sb = await sandbox({ accounts: fixture });
    const r = await get(sb, '/v2/usage_stats?num_billing_periods=3', ACME);
    const [current, p102, p101] = r.body.data;
    expect(r.body.data.map((p: { id: number }) => p.id)).toEqual([current.id, 102, 101]);
    expect(current).toMatchObject({
      type: 'annual',
      start_date: '2026-03-15T00:00:00Z',
      end_date: '2027-03-15T00:00:00Z',
      credits_used: 120,
      total_requests: 100,
      unallocated_usage: { request_count: 100, credits_used: 120 },
    });
    for (const p of r.body.data) {
      expect(p.monthly).toHaveLength(12);
      expect(p.monthly[0].start_date).toBe(p.start_date);
      expect(p.monthly[11].end_date).toBe(p.end_date);
      p.monthly
        .slice(1)
        .forEach((m: { start_date: string }, i: number) => expect(m.start_date).toBe(p.monthly[i].end_date));
      const sum = (k: 'request_count' | 'credits_used') =>
        p.monthly.reduce((s: number, m: Record<string, number>) => s + m[k]!, 0) + p.unallocated_usage[k];
      expect(sum('request_count')).toBe(p.total_requests);
      expect(sum('credits_used')).toBe(p.credits_used);
    }
    expect(p101.monthly[0]).toEqual({
      year: 2024,
      month: 3,
      start_date: '2024-03-15T00:00:00Z',
      end_date: '2024-04-15T00:00:00Z',
      request_count: 100,
      credits_used: 110,
    });
    expect(p101.monthly[10]).toMatchObject({ year: 2025, month: 1 });
    expect(p101.by_country).toEqual([
      { country: 'US', request_count: 500 },
      { country: 'GB', request_count: 300 },
      { country: 'DE', request_count: 80 },
    ]);
    expect(p102).toMatchObject({
      total_requests: 450,
      credits_used: 500,
      unallocated_usage: { request_count: 450, credits_used: 500 },
    });
    // A lookup lands in the month bucket of today (the ninth month from 15 March).
    await lookup(sb, US, undefined, ACME);
    const after = (await get(sb, '/v2/usage_stats', ACME)).body.data[0];
    expect(after.monthly[8]).toMatchObject({ year: 2026, month: 11, request_count: 1, credits_used: 1 });
    expect(after.total_requests).toBe(101);
  });

  it('gives the default annual account a year that began four months ago and three consistent past years', async () => {
    const sb = await sandbox({ plan: 'annual' });
    const r = await get(sb, '/v2/usage_stats?num_billing_periods=10');
    expect(r.body.data.map((p: { start_date: string }) => p.start_date)).toEqual([
      '2026-07-01T00:00:00Z',
      '2025-07-01T00:00:00Z',
      '2024-07-01T00:00:00Z',
      '2023-07-01T00:00:00Z',
    ]);
    for (const p of r.body.data) {
      expect(p.type).toBe('annual');
      expect(p.monthly).toHaveLength(12);
      const requests =
        p.monthly.reduce((s: number, m: { request_count: number }) => s + m.request_count, 0) +
        p.unallocated_usage.request_count;
      expect(requests).toBe(p.total_requests);
    }
    expect(r.body.data[1].unallocated_usage.request_count).toBeGreaterThan(0);
  });

  it("selects one period by id (still a data array), 404 for unknown ids and other accounts' periods", async () => {
    const sb = await sandbox({ accounts: fixture });
    const one = await get(sb, '/v2/usage_stats?id=101', ACME);
    expect(one.status).toBe(200);
    expect(one.body.data.map((p: { id: number }) => p.id)).toEqual([101]);
    expect(one.body.next_cursor).toBeNull();
    const monthlyCo = (await get(sb, '/v2/usage_stats', 'sbx_monthly_0003')).body.data[0].id;
    expect((await get(sb, `/v2/usage_stats?id=${monthlyCo}`, ACME)).status).toBe(404);
    const unknown = await get(sb, '/v2/usage_stats?id=999999', ACME);
    expect(unknown.status).toBe(404);
    expect(typeof unknown.body.error).toBe('string');
    // id is an int64 (2.5): the largest one is well-formed (404 here); one past it is not.
    expect((await get(sb, '/v2/usage_stats?id=9223372036854775807', ACME)).status).toBe(404);
    expect((await get(sb, '/v2/usage_stats?id=9223372036854775808', ACME)).status).toBe(400);
  });

  it('reads id as an int64: 2^53 + 1 is not period 2^53 (a double would round it onto it)', async () => {
    const big = 2 ** 53;
    const sb = await sandbox({
      accounts: [
        { key: 'sbx_big_ids_0001', history: [{ id: big, startDate: '2025-01-01T00:00:00Z', creditLimit: 100 }] },
      ],
    });
    const exact = await get(sb, `/v2/usage_stats?id=${big}`, 'sbx_big_ids_0001');
    expect(exact.status).toBe(200);
    expect((await get(sb, '/v2/usage_stats?id=9007199254740993', 'sbx_big_ids_0001')).status).toBe(404);
  });

  it('answers 400 for invalid values, a bad cursor, id with paging, and a year parameter', async () => {
    const sb = await sandbox({ accounts: fixture });
    const otherCursor = (await get(sb, '/v2/usage_stats', ACME)).body.next_cursor;
    const bad = [
      'num_billing_periods=0',
      'num_billing_periods=101',
      'num_billing_periods=1.5',
      'num_billing_periods=abc',
      'id=0',
      'id=-3',
      'id=x',
      'cursor=garbage!',
      'cursor=Zm9v',
      'id=101&num_billing_periods=1',
      'id=101&cursor=' + otherCursor,
      'year=2026',
      'num_billing_periods=1&num_billing_periods=2',
    ];
    for (const q of bad) {
      const r = await get(sb, `/v2/usage_stats?${q}`, ACME);
      expect(r.status, q).toBe(400);
      expect(typeof r.body.error, q).toBe('string');
    }
    // Another account's cursor is not a cursor for this one.
    expect((await get(sb, `/v2/usage_stats?cursor=${otherCursor}`, 'sbx_monthly_0003')).status).toBe(400);
    expect((await get(sb, `/v2/usage_stats?cursor=${otherCursor}`, ACME)).status).toBe(200);
  });

  it('counts live lookups: pending holds in credits and requests, refunds excluded, by_country completed only', async () => {
    // Timers held by the test: results come when it says so.
    const due: Array<() => void> = [];
    const sb = await sandbox({
      allowInsecureWebhooks: true,
      timers: { setTimeout: (fn) => due.push(fn), clearTimeout: () => {} },
    });
    const rx = await startReceiver();
    open.push(rx);
    await lookup(sb, US);
    await lookup(sb, DE);
    await lookup(sb, '+12025550993'); // upstream_timeout: uncharged
    await lookup(sb, GB, rx.url); // held
    await lookup(sb, '+12025550997', rx.url); // held, then expires (refund)
    const live = (await get(sb, '/v2/usage_stats')).body.data[0];
    expect(live).toMatchObject({ credits_used: 5, total_requests: 4 });
    expect(live.by_country).toEqual([
      { country: 'DE', request_count: 1 },
      { country: 'US', request_count: 1 },
    ]);
    for (const fire of due.splice(0)) fire();
    await until(() => sb.pending() === 0);
    await rx.waitFor(2);
    const settled = (await get(sb, '/v2/usage_stats')).body.data[0];
    expect(settled).toMatchObject({ credits_used: 4, total_requests: 3, credits_remaining: 10_000 - 4 });
    expect(settled.by_country).toEqual([
      { country: 'DE', request_count: 1 },
      { country: 'GB', request_count: 1 },
      { country: 'US', request_count: 1 },
    ]);
  });

  it('reports a negative balance after a limit reduction, and stays free and available at the limit', async () => {
    const sb = await sandbox({ creditLimit: 10 });
    for (let i = 0; i < 5; i++) await lookup(sb, DE);
    expect((await lookup(sb, US)).status).toBe(429);
    sb.setCreditLimit(4);
    const r = await get(sb, '/v2/usage_stats');
    expect(r.status).toBe(200);
    expect(r.body.data[0]).toMatchObject({ credit_limit: 4, credits_used: 10, credits_remaining: -6 });
    await get(sb, '/usage_stats');
    expect(sb.account().creditsUsed).toBe(10);
    expect(sb.lookups()).toHaveLength(5);
  });

  it('answers 500 "unable to process request" while the usage failure switch is on (after authentication)', async () => {
    const sb = await sandbox({ usageFailure: true });
    for (const p of ['/v2/usage_stats', '/usage_stats']) {
      expect(await get(sb, p)).toMatchObject({ status: 500, body: { error: 'unable to process request' } });
      expect((await get(sb, p, null)).status).toBe(401);
    }
    expect((await lookup(sb, US)).status).toBe(200); // lookups are unaffected
    sb.setUsageFailure(false);
    expect((await get(sb, '/usage_stats')).status).toBe(200);
  });

  it('opens a new billing period when the current one ends', async () => {
    let now = new Date('2026-11-30T23:00:00Z');
    const sb = await sandbox({ now: () => now, creditLimit: 50 });
    await lookup(sb, US);
    now = new Date('2026-12-01T00:30:00Z');
    const r = await get(sb, '/v2/usage_stats?num_billing_periods=2');
    expect(
      r.body.data.map((p: { start_date: string; credits_used: number }) => [p.start_date, p.credits_used]),
    ).toEqual([
      ['2026-12-01T00:00:00Z', 0],
      ['2026-11-01T00:00:00Z', 1],
    ]);
    expect(r.body.data[0]).toMatchObject({ id: 5, credit_limit: 50, end_date: '2027-01-01T00:00:00Z' });
  });

  it('counts periods from the billing date, so a month-end date does not drift', async () => {
    let now = new Date('2026-03-05T00:00:00Z');
    const sb = await sandbox({ now: () => now, accounts: [{ key: 'month-end', billingDate: '2026-01-31T00:00:00Z' }] });
    const first = (await get(sb, '/v2/usage_stats', 'month-end')).body.data[0];
    expect([first.start_date, first.end_date]).toEqual(['2026-02-28T00:00:00Z', '2026-03-31T00:00:00Z']);
    now = new Date('2026-04-01T00:00:00Z');
    const next = (await get(sb, '/v2/usage_stats', 'month-end')).body.data[0];
    expect([next.start_date, next.end_date]).toEqual(['2026-03-31T00:00:00Z', '2026-04-30T00:00:00Z']);
  });
});

describe('GET /usage_stats (legacy)', () => {
  it('sums lifetime usage: monthly ascending, totals equal the monthly sum, by_country sorted', async () => {
    const sb = await sandbox({ accounts: fixture });
    await lookup(sb, GB, undefined, ACME);
    const r = await get(sb, '/usage_stats', ACME);
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['by_country', 'customer_name', 'monthly', 'total_requests']);
    expect(r.body.customer_name).toBe('Acme Annual Ltd');
    const keys = r.body.monthly.map((m: { year: number; month: number }) => m.year * 12 + m.month);
    expect(keys).toEqual([...keys].sort((a: number, b: number) => a - b));
    expect(new Set(keys).size).toBe(keys.length);
    expect(r.body.total_requests).toBe(
      r.body.monthly.reduce((s: number, m: { request_count: number }) => s + m.request_count, 0),
    );
    expect(r.body.total_requests).toBe(900 + 450 + 100 + 1);
    expect(r.body.by_country).toEqual([
      { country: 'US', request_count: 900 },
      { country: 'GB', request_count: 351 },
      { country: 'DE', request_count: 80 },
    ]);
  });

  it('breaks by_country ties by country code', async () => {
    const sb = await sandbox({
      accounts: [
        {
          key: 'tie-key',
          history: [{ startDate: '2026-09-01T00:00:00Z', creditLimit: 10, byCountry: { NZ: 2, BE: 2, US: 3 } }],
        },
      ],
    });
    const r = await get(sb, '/usage_stats', 'tie-key');
    expect(r.body.by_country).toEqual([
      { country: 'US', request_count: 3 },
      { country: 'BE', request_count: 2 },
      { country: 'NZ', request_count: 2 },
    ]);
    expect(r.body.monthly).toEqual([{ year: 2026, month: 9, request_count: 7 }]);
  });
});

describe('portal JWTs', () => {
  it('are accepted by /v2/usage_stats only, and refused with 401 (invalid, expired, unverified) or 403 (no membership)', async () => {
    const sb = await sandbox({ accounts: fixture });
    const token = sb.portalToken({ key: 'sbx_monthly_0003' });
    expect(token).toMatch(/^eyJ/);
    const ok = await get(sb, '/v2/usage_stats', `Bearer ${token}`);
    expect(ok.status).toBe(200);
    expect(ok.body.customer_name).toBe('Monthly Co');
    expect((await get(sb, '/usage_stats', `Bearer ${token}`)).status).toBe(403);
    expect((await lookup(sb, US, undefined, `Bearer ${token}`)).status).toBe(403);
    const tampered = token.slice(0, -2) + (token.endsWith('AA') ? 'BB' : 'AA');
    expect((await get(sb, '/v2/usage_stats', `Bearer ${tampered}`)).status).toBe(401);
    expect((await get(sb, '/v2/usage_stats', `Bearer ${sb.portalToken({ expiresIn: -1 })}`)).body.error).toMatch(
      /expired/,
    );
    expect((await get(sb, '/v2/usage_stats', `Bearer ${sb.portalToken({ verified: false })}`)).status).toBe(401);
    expect((await get(sb, '/v2/usage_stats', `Bearer ${sb.portalToken({ membership: false })}`)).status).toBe(403);
    const other = await sandbox({ accounts: fixture, portalAccess: false });
    expect((await get(other, '/v2/usage_stats', `Bearer ${other.portalToken()}`)).status).toBe(403);
    const viaHttp = (await (await fetch(`${sb.baseUrl}/_sandbox/portal-token`, { method: 'POST' })).json()) as {
      token: string;
    };
    expect((await get(sb, '/v2/usage_stats', `Bearer ${viaHttp.token}`)).body.customer_name).toBe('Acme Annual Ltd');
  });
});

describe('accounts', () => {
  it('loads the example accounts file: names, plans, limits, reseller and webhook switches', async () => {
    const sb = await sandbox({ accounts: fixture });
    expect(sb.apiKey).toBe('sbx_acme_annual_0001');
    expect(sb.accounts().map((a) => [a.customerName, a.plan, a.creditLimit, a.creditsUsed])).toEqual([
      ['Acme Annual Ltd', 'annual', 50000, 120],
      ['Resale Partners', 'monthly', 1000, 0],
      ['Monthly Co', 'monthly', 100, 90],
    ]);
    expect((await get(sb, '/usage_stats', 'Bearer sbx_reseller_0002')).status).toBe(403);
    expect(
      (await get(sb, '/usage_stats', 'Bearer sbx_reseller_0002', { 'x-forwarded-host': 'client.example' })).body
        .customer_name,
    ).toBe('Resale Partners');
  });

  it('says what is wrong with a malformed accounts file', () => {
    expect(() => validateAccountSpecs({})).toThrow(/accounts/);
    expect(() => validateAccountSpecs({ accounts: [{ key: 'k' }] })).toThrow(/accounts\[0\]\.key/);
    expect(() => validateAccountSpecs({ accounts: [{ key: 'abcd' }, { key: 'abcd' }] })).toThrow(/accounts\[1\]\.key/);
    expect(() => validateAccountSpecs({ accounts: [{ key: 'abcd', plan: 'weekly' }] })).toThrow(/plan/);
    expect(() =>
      validateAccountSpecs({ accounts: [{ key: 'abcd', history: [{ startDate: 'soon', creditLimit: 1 }] }] }),
    ).toThrow(/history\[0\]\.startDate/);
  });
});
