// Synchronous lookups against the sandbox over loopback HTTP: auth, client errors, credits, the number rules, headers, logs.
import { afterEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox, type SandboxOptions } from '../../src/sandbox/index.js';
import { AU, DE, FR, GB, get, lookup, US, US_EVEN } from './helpers.js';

const open: Sandbox[] = [];
async function sandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const sb = await startSandbox({ port: 0, seed: 7, ...options });
  open.push(sb);
  return sb;
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

describe('authentication', () => {
  it('accepts Bearer and bare keys, and logs each form with the key redacted', async () => {
    const sb = await sandbox({ key: 'secret-key-123' });
    expect((await lookup(sb, US, undefined, 'Bearer secret-key-123')).status).toBe(200);
    expect((await lookup(sb, US, undefined, 'secret-key-123')).status).toBe(200);
    const logged = sb.requests().map((r) => r.headers.authorization);
    expect(logged).toEqual(['Bearer ***', '***']);
    expect(JSON.stringify(sb.requests())).not.toContain('secret-key-123');
    expect(sb.requests()[0]!.account).toBe('Sandbox Customer');
  });

  it('answers 401 with the legacy text when the key is missing, 403 when it is wrong, and charges nothing', async () => {
    const sb = await sandbox();
    for (const path of ['/check_phone_number?phone_number=%2B12025550123', '/usage_stats', '/v2/usage_stats']) {
      const missing = await get(sb, path, null);
      expect(missing.status).toBe(401);
      expect(missing.body).toEqual({ error: 'API key missing: send it as Authorization: Bearer <YOUR_KEY>' });
      const wrong = await get(sb, path, 'Bearer nope-nope');
      expect(wrong.status).toBe(403);
      expect(wrong.body).toEqual({ error: 'invalid API key' });
    }
    expect(sb.lookups()).toHaveLength(0);
    expect(sb.account().creditsUsed).toBe(0);
  });

  it('refuses a reseller key without X-Forwarded-Host (403) and serves it with the header', async () => {
    const sb = await sandbox({ accounts: [{ key: 'reseller-key', customerName: 'Resale Ltd', reseller: true }] });
    const refused = await lookup(sb, US, undefined, 'Bearer reseller-key');
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatch(/X-Forwarded-Host/);
    const ok = await get(sb, `/check_phone_number?phone_number=%2B12025550123`, 'Bearer reseller-key', {
      'x-forwarded-host': 'shop.example',
    });
    expect(ok.status).toBe(200);
    expect(sb.requests()[1]!.headers['x-forwarded-host']).toBe('shop.example');
    expect(sb.account('reseller-key').creditsUsed).toBe(1);
  });
});

describe('client errors are not charged', () => {
  it('400 for a missing, malformed, unparseable or unencoded number', async () => {
    const sb = await sandbox();
    const cases = [
      '/check_phone_number',
      '/check_phone_number?phone_number=',
      '/check_phone_number?phone_number=12345',
      '/check_phone_number?phone_number=%2B1202',
      '/check_phone_number?phone_number=+12025550123',
    ];
    for (const path of cases) {
      const r = await get(sb, path);
      expect(r.status, path).toBe(400);
      expect(typeof r.body.error).toBe('string');
      expect(r.headers['x-credit-cost']).toBe('0');
      expect(r.headers['x-service-correlation-id']).toBeUndefined();
    }
    expect((await get(sb, '/check_phone_number?phone_number=+12025550123')).body.error).toMatch(/%2B/);
    expect(sb.lookups()).toHaveLength(0);
    expect(sb.account().creditsUsed).toBe(0);
  });

  it('matches national-format numbers on a best-effort basis (4.1): the answer names the E.164 number looked up', async () => {
    const sb = await sandbox();
    const cases: Array<[string, string, string]> = [
      ['12025550100', '+12025550100', 'US'],
      ['2025550100', '+12025550100', 'US'],
      ['(202) 555-0101', '+12025550101', 'US'],
      ['00442079460018', '+442079460018', 'GB'],
      ['0044 20 7946 0018', '+442079460018', 'GB'],
    ];
    for (const [given, e164, country] of cases) {
      const r = await get(sb, `/check_phone_number?phone_number=${encodeURIComponent(given)}`);
      expect(r.status, given).toBe(200);
      expect(r.body, given).toMatchObject({ status: 'succeeded', phone_number: e164, country });
    }
    expect(sb.lookups().map((l) => l.phoneNumber)).toEqual(cases.map(([, e164]) => e164));
  });

  it('422 for an unsupported country, with country and supported_countries', async () => {
    const sb = await sandbox();
    const r = await lookup(sb, FR);
    expect(r.status).toBe(422);
    expect(r.body).toEqual({
      error: expect.any(String),
      country: 'FR',
      supported_countries: ['US', 'GB', 'DE', 'IE', 'BE', 'NZ', 'ES', 'AU'],
    });
    // +44 7911 … is Guernsey's in the numbering plan, but the service files it under GB and its register (issue 47).
    const guernsey = await lookup(await sandbox(), '+447911123456');
    expect([guernsey.status, guernsey.body.country]).toEqual([200, 'GB']);
    const narrow = await sandbox({ supportedCountries: ['GB'] });
    expect((await lookup(narrow, US)).body.supported_countries).toEqual(['GB']);
    expect(sb.account().creditsUsed).toBe(0);
  });

  it('400 for AU without webhook_url and for invalid webhook URLs', async () => {
    const sb = await sandbox();
    expect(await lookup(sb, AU)).toMatchObject({
      status: 400,
      body: { error: 'AU lookups are webhook-only: pass webhook_url' },
    });
    for (const url of [
      'http://hooks.example.com/x',
      'https://127.0.0.1/x',
      'https://user:pw@hooks.example.com/x',
      'https://10.0.0.1/x',
      'not a url',
      `https://hooks.example.com/${'a'.repeat(2100)}`,
    ]) {
      const r = await lookup(sb, US, url);
      expect(r.status, url).toBe(400);
      expect(r.body.error).toMatch(/^webhook_url is invalid/);
    }
    expect(sb.account().creditsUsed).toBe(0);
    expect(sb.lookups()).toHaveLength(0);
  });

  it('400 for a webhook host whose name resolves to a non-public address (resolved on arrival, as again at delivery)', async () => {
    // Names of no reserved suffix (.example and the like are refused before any resolution).
    const addresses: Record<string, string[]> = {
      'hooks.internal.acme-hooks.net': ['10.0.0.5'],
      'loop.acme-hooks.net': ['127.0.0.1'],
      'mixed.acme-hooks.net': ['93.184.216.34', '169.254.169.254'],
      'public.acme-hooks.net': ['93.184.216.34'],
    };
    const resolved: string[] = [];
    const resolveHost = async (host: string) => {
      resolved.push(host);
      return addresses[host] ?? [];
    };
    const sb = await sandbox({ resolveHost });
    const refused: Array<[string, string]> = [
      [
        'https://hooks.internal.acme-hooks.net/x',
        'its host hooks.internal.acme-hooks.net resolves to a private address',
      ],
      ['https://loop.acme-hooks.net/x', 'its host loop.acme-hooks.net resolves to a loopback address'],
      ['https://mixed.acme-hooks.net/x', 'its host mixed.acme-hooks.net resolves to a link-local address'],
    ];
    for (const [url, why] of refused) {
      const r = await lookup(sb, US, url);
      expect(r.status, url).toBe(400);
      expect(r.body.error).toBe(`webhook_url is invalid: ${why}; the service pushes only to public hosts`);
    }
    expect(sb.account().creditsUsed).toBe(0);
    expect((await lookup(sb, US, 'https://public.acme-hooks.net/x')).status).toBe(202);
    expect((await lookup(sb, US, 'https://public.acme-hooks.net/y')).status).toBe(202);
    // One resolution per name (kept a minute); addresses are judged by the rule alone.
    expect(resolved).toEqual([
      'hooks.internal.acme-hooks.net',
      'loop.acme-hooks.net',
      'mixed.acme-hooks.net',
      'public.acme-hooks.net',
    ]);
    // --allow-insecure-webhooks: loopback names too, for local receivers.
    const insecure = await sandbox({ resolveHost, allowInsecureWebhooks: true });
    expect((await lookup(insecure, US, 'http://loop.acme-hooks.net:8080/x')).status).toBe(202);
    expect((await lookup(insecure, US, 'http://hooks.internal.acme-hooks.net/x')).status).toBe(400);
  });

  it('429 once the next lookup would pass the credit limit', async () => {
    const sb = await sandbox({ creditLimit: 3 });
    expect((await lookup(sb, DE)).headers['x-credit-cost']).toBe('2');
    const refused = await lookup(sb, DE);
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatch(/^credit limit reached: /);
    expect(refused.headers['x-ratelimit-remaining']).toBe('1');
    expect((await lookup(sb, US)).status).toBe(200); // 1 credit still fits
    expect((await lookup(sb, US)).status).toBe(429);
    sb.setCreditLimit(10);
    expect((await lookup(sb, US)).status).toBe(200);
    expect(sb.account().creditsUsed).toBe(4);
  });

  it('404 for unknown paths and 405 for other methods, outside the lookup log', async () => {
    const sb = await sandbox();
    expect((await get(sb, '/nope')).status).toBe(404);
    const res = await fetch(`${sb.baseUrl}/check_phone_number?phone_number=%2B12025550123`, {
      method: 'POST',
      headers: { authorization: sb.apiKey },
    });
    expect(res.status).toBe(405);
    expect(sb.lookups()).toHaveLength(0);
  });
});

describe('the number rules', () => {
  it('succeeds with do_not_call from the last digit, the 2.2 fields and the lookup headers', async () => {
    const sb = await sandbox({ creditLimit: 100 });
    const r = await lookup(sb, US);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      status: 'succeeded',
      error_code: null,
      correlation_id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      phone_number: US,
      country: 'US',
      do_not_call: true,
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$/),
      dnc_list_source: 'https://sandbox.dnc.invalid/registers/US',
      cost: { credits_used_for_query: 1, total_credits_used: 1, credit_limit: 100 },
    });
    expect(r.headers).toMatchObject({
      'content-type': 'application/json',
      'x-credit-cost': '1',
      'x-ratelimit-limit': '100',
      'x-ratelimit-remaining': '99',
      'x-service-correlation-id': r.body.correlation_id,
    });
    expect((await lookup(sb, US_EVEN)).body.do_not_call).toBe(false);
    expect((await lookup(sb, GB)).body).toMatchObject({
      country: 'GB',
      dnc_list_source: 'https://sandbox.dnc.invalid/registers/GB',
    });
    expect(sb.lookups().map((l) => [l.mode, l.state, l.charged, l.credits])).toEqual([
      ['sync', 'succeeded', true, 1],
      ['sync', 'succeeded', true, 1],
      ['sync', 'succeeded', true, 1],
    ]);
  });

  it('maps 990 … 997 to their error codes, statuses and charges', async () => {
    const sb = await sandbox();
    const expected: Array<[string, number, string, boolean]> = [
      ['990', 400, 'invalid_phone_number', true],
      ['993', 504, 'upstream_timeout', false],
      ['994', 502, 'upstream_error', false],
      ['995', 500, 'billing_error', true],
      ['996', 500, 'billing_error', false],
      ['997', 502, 'lookup_expired', false],
    ];
    let used = 0;
    for (const [tail, status, code, charged] of expected) {
      const r = await lookup(sb, `+12025550${tail}`);
      if (charged) used += 1;
      expect(r.status, tail).toBe(status);
      expect(r.body).toEqual({
        status: 'failed',
        error_code: code,
        error: expect.any(String),
        charged,
        correlation_id: r.headers['x-service-correlation-id'],
        phone_number: `+12025550${tail}`,
        country: 'US',
        cost: { credits_used_for_query: charged ? 1 : 0, total_credits_used: used, credit_limit: 10_000 },
      });
      expect(r.headers['x-credit-cost'], tail).toBe(charged ? '1' : '0');
    }
    expect(sb.account().creditsUsed).toBe(used);
    expect(sb.lookups().map((l) => l.errorCode)).toEqual(expected.map((e) => e[2]));
  });

  it('fails 991/992 on the first attempts per account and number, then answers normally', async () => {
    const sb = await sandbox({
      accounts: [{ key: 'key-one' }, { key: 'key-two', customerName: 'Two' }],
      transientFailures: 2,
    });
    const statuses = async (phone: string, key: string) => {
      const out: number[] = [];
      for (let i = 0; i < 3; i++) out.push((await lookup(sb, phone, undefined, key)).status);
      return out;
    };
    expect(await statuses('+12025550991', 'key-one')).toEqual([504, 504, 200]);
    expect(await statuses('+12025550992', 'key-one')).toEqual([502, 502, 200]);
    // Counted per account: the second account starts over.
    expect(await statuses('+12025550991', 'key-two')).toEqual([504, 504, 200]);
    expect((await lookup(sb, '+12025550991', undefined, 'key-one')).body.do_not_call).toBe(true);
    expect(sb.account('key-one').creditsUsed).toBe(3);
    const none = await sandbox({ transientFailures: 0 });
    expect((await lookup(none, '+12025550992')).body).toMatchObject({ status: 'succeeded', do_not_call: false });
  });

  it('charges configured costs per country', async () => {
    const sb = await sandbox({ costs: { US: 5 } });
    expect((await lookup(sb, US)).headers['x-credit-cost']).toBe('5');
    expect((await lookup(sb, GB)).headers['x-credit-cost']).toBe('1');
    expect((await lookup(sb, DE)).body.cost.credits_used_for_query).toBe(2);
    expect(sb.account().creditsUsed).toBe(8);
  });

  it('injects random upstream failures at the configured rate, uncharged', async () => {
    const sb = await sandbox({ upstreamFailureRate: 1 });
    const r = await lookup(sb, US);
    expect([502, 504]).toContain(r.status);
    expect(r.body.charged).toBe(false);
    expect(sb.account().creditsUsed).toBe(0);
  });
});

describe('logs, latency and reset', () => {
  it('records method, path, decoded query, status and time of every service request', async () => {
    const sb = await sandbox();
    await lookup(sb, US);
    await lookup(sb, FR);
    const [a, b] = sb.requests();
    expect(a).toMatchObject({ method: 'GET', path: '/check_phone_number', query: { phone_number: US }, status: 200 });
    expect(b).toMatchObject({ query: { phone_number: FR }, status: 422 });
    expect(Date.parse(a!.receivedAt)).not.toBeNaN();
    // Introspection is not part of the service's traffic.
    const viaHttp = (await (await fetch(`${sb.baseUrl}/_sandbox/requests`)).json()) as unknown[];
    expect(viaHttp).toHaveLength(2);
    expect(sb.requests()).toHaveLength(2);
  });

  it('delays answers by latencyMs', async () => {
    const sb = await sandbox({ latencyMs: 150 });
    const t0 = Date.now();
    await lookup(sb, US);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
  });

  it('reset restores accounts and empties the logs; correlation ids repeat under a seed', async () => {
    const sb = await sandbox({ seed: 42 });
    const first = (await lookup(sb, US)).body.correlation_id;
    sb.reset();
    expect(sb.requests()).toHaveLength(0);
    expect(sb.lookups()).toHaveLength(0);
    expect(sb.account().creditsUsed).toBe(0);
    expect((await lookup(sb, US)).body.correlation_id).toBe(first);
    const other = await sandbox({ seed: 42 });
    expect((await lookup(other, US)).body.correlation_id).toBe(first);
  });

  it('exposes the same state over HTTP under /_sandbox/', async () => {
    const sb = await sandbox({ creditLimit: 50 });
    await lookup(sb, US);
    const account = await (await fetch(`${sb.baseUrl}/_sandbox/account`)).json();
    expect(account).toMatchObject({
      customerName: 'Sandbox Customer',
      creditLimit: 50,
      creditsUsed: 1,
      creditsRemaining: 49,
    });
    expect(JSON.stringify(account)).not.toContain(sb.apiKey);
    const lookups = (await (await fetch(`${sb.baseUrl}/_sandbox/lookups`)).json()) as Array<{ phoneNumber: string }>;
    expect(lookups.map((l) => l.phoneNumber)).toEqual([US]);
    const forgotten = await fetch(`${sb.baseUrl}/_sandbox/credit-limit`, { method: 'POST' });
    expect(forgotten.status).toBe(400);
    expect(sb.account().creditLimit).toBe(50);
    const limited = await fetch(`${sb.baseUrl}/_sandbox/credit-limit?limit=1`, { method: 'POST' });
    expect(((await limited.json()) as { creditLimit: number }).creditLimit).toBe(1);
    expect((await lookup(sb, US)).status).toBe(429);
    await fetch(`${sb.baseUrl}/_sandbox/usage-failure?on=true`, { method: 'POST' });
    expect((await get(sb, '/usage_stats')).status).toBe(500);
    await fetch(`${sb.baseUrl}/_sandbox/reset`, { method: 'POST' });
    expect(sb.requests()).toHaveLength(0);
    expect(sb.account().creditLimit).toBe(50);
    expect((await get(sb, '/usage_stats')).status).toBe(200);
  });
});
