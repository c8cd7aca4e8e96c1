// The service client against the sandbox: authentication forms, reseller header, and retries as the request log counts them.
import diagnostics from 'node:diagnostics_channel';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createServiceClient, type ServiceClient } from '../../src/service/client.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';

const KEY = 'sbx_client_test_key_a81c44e2';
let sb: Sandbox;
let client: ServiceClient;

beforeAll(async () => {
  sb = await startSandbox({ port: 0, key: KEY, creditLimit: 100, seed: 3 });
  client = createServiceClient({
    baseUrl: sb.baseUrl,
    apiKey: KEY,
    retries: 3,
    forwardedHost: 'acme.reseller.example',
    sleep: async () => {},
  });
});

afterAll(async () => {
  await client.close();
  await sb.close();
});

beforeEach(() => sb.reset());

const sent = (phone: string) => sb.requests().filter((r) => r.query.phone_number === phone);

describe('authentication', () => {
  it('the sandbox accepts "Bearer KEY" and the bare key, and refuses a missing or wrong one', async () => {
    const get = (authorization?: string) =>
      fetch(`${sb.baseUrl}/check_phone_number?phone_number=%2B12025550100`, {
        headers: authorization === undefined ? {} : { authorization },
      });
    expect((await get(`Bearer ${KEY}`)).status).toBe(200);
    expect((await get(KEY)).status).toBe(200);
    expect((await get()).status).toBe(401);
    expect((await get('Bearer not-the-key')).status).toBe(403);
    expect(sb.requests().map((r) => r.headers.authorization)).toEqual(['Bearer ***', '***', undefined, 'Bearer ***']);
    expect(sb.account().creditsUsed).toBe(2);
  });

  it('the client sends the Bearer form', async () => {
    await client.lookup({ phoneNumber: '+12025550100' });
    expect(sb.requests()[0]!.headers.authorization).toBe('Bearer ***');
  });
});

describe('reseller header', () => {
  it('X-Forwarded-Host on every request: lookups, /v2/usage_stats and /usage_stats', async () => {
    await client.lookup({ phoneNumber: '+12025550100' });
    await client.usage();
    await client.legacyUsage();
    const log = sb.requests();
    expect(log.map((r) => r.path)).toEqual(['/check_phone_number', '/v2/usage_stats', '/usage_stats']);
    for (const r of log) expect(r.headers['x-forwarded-host']).toBe('acme.reseller.example');
  });
});

describe('lookup requests and answers', () => {
  it('sends the number and a webhook_url URL-encoded, and hands back the body exactly as received', async () => {
    const us = await client.lookup({ phoneNumber: '+12025550101' });
    expect(us.kind).toBe('succeeded');
    expect(JSON.parse(us.text!)).toEqual(us.raw);
    expect(sent('+12025550101')).toHaveLength(1);
    // A raw space is refused (the service takes the URL as given); an encoded one, '+' and '&' travel URL-encoded.
    const hook = 'https://hooks.example.com/dnc?batch=a%20b&x=1+2';
    const au = await client.lookup({ phoneNumber: '+61412345101', webhookUrl: hook });
    expect(au.kind).toBe('started');
    expect(JSON.parse(au.text!)).toEqual(au.raw);
    expect(sent('+61412345101').map((r) => r.query.webhook_url)).toEqual([hook]);
  });
});

describe('retries, counted in the request log', () => {
  it('991 and 992: two uncharged failures, then the verdict on the 3rd attempt', async () => {
    const timeout = await client.lookup({ phoneNumber: '+12025550991' });
    const error = await client.lookup({ phoneNumber: '+12025550992' });
    expect([timeout.kind, timeout.meta.attempts, error.kind, error.meta.attempts]).toEqual([
      'succeeded',
      3,
      'succeeded',
      3,
    ]);
    expect(sent('+12025550991').map((r) => r.status)).toEqual([504, 504, 200]);
    expect(sent('+12025550992').map((r) => r.status)).toEqual([502, 502, 200]);
    expect(sb.account().creditsUsed).toBe(2);
  });

  it('993 and 994: failed after 1 + retries attempts, nothing charged', async () => {
    const timeout = await client.lookup({ phoneNumber: '+12025550993' });
    const error = await client.lookup({ phoneNumber: '+12025550994' });
    expect(timeout.kind === 'failed' && timeout.body.error_code).toBe('upstream_timeout');
    expect(error.kind === 'failed' && error.body.error_code).toBe('upstream_error');
    expect(sent('+12025550993')).toHaveLength(4);
    expect(sent('+12025550994')).toHaveLength(4);
    expect(sb.account().creditsUsed).toBe(0);
  });

  it('no retry of charged outcomes (990, 995), of 996/997, or of 429 and 400', async () => {
    for (const n of ['+12025550990', '+12025550995', '+12025550996', '+12025550997']) {
      const out = await client.lookup({ phoneNumber: n });
      expect(out.kind).toBe('failed');
      expect(sent(n)).toHaveLength(1);
    }
    sb.setCreditLimit(sb.account().creditsUsed);
    await expect(client.lookup({ phoneNumber: '+12025550100' })).rejects.toMatchObject({
      code: 'E_CREDIT_LIMIT',
      exitCode: 5,
    });
    expect(sent('+12025550100')).toHaveLength(1);
    await expect(client.lookup({ phoneNumber: '+1' })).rejects.toMatchObject({ code: 'E_BAD_REQUEST', exitCode: 2 });
    expect(sent('+1')).toHaveLength(1);
  });

  it('usage endpoints (free) are retried on 500', async () => {
    sb.setUsageFailure(true);
    await expect(client.usage()).rejects.toMatchObject({ exitCode: 6 });
    expect(sb.requests().filter((r) => r.path === '/v2/usage_stats')).toHaveLength(4);
  });
});

describe('firstLookupsSent: the first lookups on the wire', () => {
  it('resolves when the first lookup is written, before its answer; a usage query before it does not count', async () => {
    const slow = await startSandbox({ port: 0, key: KEY, creditLimit: 100, seed: 3, latencyMs: 1_500 });
    const c = createServiceClient({ baseUrl: slow.baseUrl, apiKey: KEY, retries: 0 });
    try {
      await c.usage();
      let sentFirst = false;
      void c.firstLookupsSent!().then(() => (sentFirst = true));
      await new Promise((r) => setImmediate(r)); // had the usage query counted, it would have resolved
      expect(sentFirst).toBe(false);
      const order: string[] = [];
      const lookup = c.lookup({ phoneNumber: '+12025550100' }).then(() => order.push('answered'));
      await c.firstLookupsSent!().then(() => order.push('sent'));
      // The sandbox holds the answer 1.5 s: the lookup is still waiting for it.
      expect(order).toEqual(['sent']);
      await lookup;
      expect(order).toEqual(['sent', 'answered']);
    } finally {
      await c.close();
      await slow.close();
    }
  });

  /**
   * A client of 4 connections against a sandbox answering in `latencyMs`, and the lookups undici's own channel saw
   * written (an observer apart from the client's); all closed after `fn`.
   */
  async function withWatchedClient(
    latencyMs: number,
    fn: (c: ServiceClient, lookupsWritten: () => number) => Promise<void>,
  ): Promise<void> {
    const slow = await startSandbox({ port: 0, key: KEY, creditLimit: 100, seed: 3, latencyMs });
    const c = createServiceClient({ baseUrl: slow.baseUrl, apiKey: KEY, retries: 0, connections: 4 });
    const written: string[] = [];
    const onSend = (m: unknown) => written.push(String((m as { request: { path: string } }).request.path));
    diagnostics.subscribe('undici:client:sendHeaders', onSend);
    try {
      await fn(c, () => written.filter((p) => p.includes('/check_phone_number')).length);
    } finally {
      diagnostics.unsubscribe('undici:client:sendHeaders', onSend);
      await c.close();
      await slow.close();
    }
  }
  const lookUp = (c: ServiceClient, count: number) =>
    Array.from({ length: count }, (_, i) => c.lookup({ phoneNumber: `+1202555010${i}` }));

  it('waits for every lookup of the first turn, each on a connection of its own, and the balance holds none', async () => {
    // A batch's first turn: the balance asked, then as many lookups as connections.
    await withWatchedClient(1_500, async (c, lookupsWritten) => {
      let balanceAnswered = false;
      const balance = c.usage().then(() => (balanceAnswered = true));
      const lookups = lookUp(c, 4);
      await c.firstLookupsSent!();
      expect(lookupsWritten()).toBe(4);
      // None waited for the balance's answer (held 1.5 s): it went on a connection of its own.
      expect(balanceAnswered).toBe(false);
      await Promise.all([balance, ...lookups]);
    });
  });

  it('stops waiting at the first answer: a lookup with no connection to go out on holds nothing back', async () => {
    // Five lookups on four connections: the fifth is written only once an answer frees one. The first answer
    // ends the wait (as a connection that never opens would hold it for the connect timeout otherwise).
    await withWatchedClient(300, async (c, lookupsWritten) => {
      const lookups = lookUp(c, 5);
      await c.firstLookupsSent!();
      // Resolved by the first answer, before the fifth lookup could take its connection.
      expect(lookupsWritten()).toBe(4);
      await Promise.all(lookups);
      expect(lookupsWritten()).toBe(5);
    });
  });

  it('resolves when the first lookup fails before anything was sent (nothing listens at the address)', async () => {
    const c = createServiceClient({ baseUrl: 'http://127.0.0.1:9', apiKey: KEY, retries: 0 });
    try {
      await expect(c.lookup({ phoneNumber: '+12025550100' })).rejects.toThrow();
      await c.firstLookupsSent!();
    } finally {
      await c.close();
    }
  });
});

describe("the sandbox's clock 10 minutes ahead of the client's (issue 46)", () => {
  it('answers are judged by its Date: every verdict kept, the disagreement told once, before the second lookup', async () => {
    const ahead = await startSandbox({ port: 0, key: KEY, seed: 3, now: () => new Date(Date.now() + 10 * 60_000) });
    const told: Array<{ offsetMs: number; lookupsBefore: number }> = [];
    const slow = createServiceClient({
      baseUrl: ahead.baseUrl,
      apiKey: KEY,
      onClockSkew: (skew) => told.push({ offsetMs: skew.offsetMs, lookupsBefore: ahead.lookups().length }),
    });
    try {
      const numbers = ['+12025550100', '+12025550101', '+12025550102'];
      const outcomes = [];
      for (const phoneNumber of numbers) outcomes.push(await slow.lookup({ phoneNumber }));
      expect(outcomes.map((o) => o.kind)).toEqual(['succeeded', 'succeeded', 'succeeded']);
      expect(told).toHaveLength(1);
      expect(told[0]!.lookupsBefore).toBe(1);
      // The Date header has whole seconds, and the answer takes a moment: within a few seconds of 10 minutes.
      expect(Math.abs(told[0]!.offsetMs - 10 * 60_000)).toBeLessThan(5_000);
    } finally {
      await slow.close();
      await ahead.close();
    }
  });
});
