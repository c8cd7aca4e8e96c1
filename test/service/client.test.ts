// The service client against a stub server: every status it maps, the headers it sends, and what it retries.
import { afterEach, describe, expect, it } from 'vitest';
import { createServiceClient, type ExchangeEvent, type ServiceClientOptions } from '../../src/service/client.js';
import { dncErrorOf } from '../helpers/cli.js';
import { closedPort, lookupHeaders, startStub, type StubReply, type StubServer } from './stub-server.js';

const KEY = 'sk_test_client_0123456789abcdef';
const ID = '6f9619ff-8b86-d011-b42d-00cf4fc964ff';
const cost = { credits_used_for_query: 1, total_credits_used: 11, credit_limit: 100 };
const succeeded = {
  status: 'succeeded',
  error_code: null,
  correlation_id: ID,
  phone_number: '+12025550100',
  country: 'US',
  do_not_call: false,
  timestamp: '2026-11-21T23:08:03.123456+00:00',
  dnc_list_source: 'https://sandbox.dnc.invalid/registers/US',
  cost,
};
const failed = (error_code: string, charged: boolean) => ({
  status: 'failed',
  error_code,
  error: `the register said ${error_code}`,
  charged,
  correlation_id: ID,
  phone_number: '+12025550100',
  country: 'US',
  cost: { ...cost, credits_used_for_query: charged ? 1 : 0 },
});

let stub: StubServer | undefined;
const clients: Array<{ close(): Promise<void> }> = [];

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  await stub?.close();
  stub = undefined;
});

async function setup(reply: (n: number) => StubReply, extra: Partial<ServiceClientOptions> = {}) {
  stub = await startStub((_req, n) => reply(n));
  const events: ExchangeEvent[] = [];
  const sleeps: number[] = [];
  const client = createServiceClient({
    baseUrl: stub.baseUrl,
    apiKey: KEY,
    retries: 3,
    userAgent: 'dnc/9.9.9',
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    onExchange: (e) => events.push(e),
    ...extra,
  });
  clients.push(client);
  return { stub, client, events, sleeps };
}

describe('lookup answers', () => {
  it('200: a succeeded result with the headers parsed', async () => {
    const { client } = await setup(() => ({ status: 200, body: succeeded, headers: lookupHeaders(1, 89, 100, ID) }));
    const out = await client.lookup({ phoneNumber: '+12025550100' });
    expect(out.kind).toBe('succeeded');
    expect(out.raw).toEqual(succeeded);
    expect(out.meta).toEqual({
      status: 200,
      creditCost: 1,
      rateLimitLimit: 100,
      rateLimitRemaining: 89,
      correlationId: ID,
      attempts: 1,
    });
  });

  it('202: a receipt, credits held in X-Credit-Cost; webhook_url sent encoded', async () => {
    const receipt = { status: 'started', correlation_id: ID, phone_number: '+61412345000', country: 'AU' };
    const { client, stub } = await setup(() => ({
      status: 202,
      body: receipt,
      headers: lookupHeaders(3, 97, 100, ID),
    }));
    const out = await client.lookup({
      phoneNumber: '+61412345000',
      webhookUrl: 'https://hooks.example.com/dnc?a=1&b=2',
    });
    expect(out.kind).toBe('started');
    expect(out.meta.creditCost).toBe(3);
    const url = new URL(stub.requests[0]!.url, 'http://x');
    expect(url.searchParams.get('webhook_url')).toBe('https://hooks.example.com/dnc?a=1&b=2');
    expect(stub.requests[0]!.url).toContain('phone_number=%2B61412345000');
  });

  it('400 invalid_phone_number is a result (charged), not an error, and is not retried', async () => {
    const { client, stub } = await setup(() => ({
      status: 400,
      body: failed('invalid_phone_number', true),
      headers: lookupHeaders(1, 88, 100, ID),
    }));
    const out = await client.lookup({ phoneNumber: '+12025550100' });
    expect(out.kind).toBe('failed');
    if (out.kind !== 'failed') return;
    expect(out.body.error_code).toBe('invalid_phone_number');
    expect(out.body.charged).toBe(true);
    expect(stub.requests).toHaveLength(1);
  });

  it('400 without invalid_phone_number: about the request, not the number (exit 2), nothing charged, not retried', async () => {
    const { client, stub } = await setup(() => ({ status: 400, body: { error: 'phone_number is malformed' } }));
    const err = await dncErrorOf(client.lookup({ phoneNumber: '+1' }));
    expect(err.code).toBe('E_BAD_REQUEST');
    expect(err.exitCode).toBe(2);
    expect(err.message).toContain('phone_number is malformed');
    expect(stub.requests).toHaveLength(1);
  });

  it('401 and 403: exit 4, not retried', async () => {
    const { client, stub } = await setup((n) =>
      n === 1
        ? { status: 401, body: { error: 'API key missing' } }
        : { status: 403, body: { error: 'invalid API key' } },
    );
    const e401 = await dncErrorOf(client.lookup({ phoneNumber: '+12025550100' }));
    expect([e401.code, e401.exitCode]).toEqual(['E_AUTH_MISSING', 4]);
    const e403 = await dncErrorOf(client.lookup({ phoneNumber: '+12025550100' }));
    expect([e403.code, e403.exitCode]).toEqual(['E_AUTH_FORBIDDEN', 4]);
    expect(e403.message).toContain('invalid API key');
    expect(stub.requests).toHaveLength(2);
  });

  it('422: exit 3 with the supported countries', async () => {
    const body = { error: 'country not supported', country: 'FR', supported_countries: ['US', 'GB', 'AU'] };
    const { client } = await setup(() => ({ status: 422, body }));
    const err = await dncErrorOf(client.lookup({ phoneNumber: '+33612345678' }));
    expect([err.code, err.exitCode]).toEqual(['E_UNSUPPORTED_COUNTRY', 3]);
    expect(err.message).toBe('the service does not cover FR (422; supported: US, GB, AU)');
    expect(err.hint).toBe('nothing was charged (a 422 is free)');
    expect(err.details.supportedCountries).toEqual(['US', 'GB', 'AU']);
  });

  it('429: exit 5, not retried', async () => {
    const { client, stub } = await setup(() => ({
      status: 429,
      body: { error: 'credit limit reached: 100 of 100 used' },
    }));
    const err = await dncErrorOf(client.lookup({ phoneNumber: '+12025550100' }));
    expect([err.code, err.exitCode]).toEqual(['E_CREDIT_LIMIT', 5]);
    expect(stub.requests).toHaveLength(1);
  });

  it('500 billing_error is a failed result and never retried (it may have been charged)', async () => {
    const { client, stub } = await setup(() => ({
      status: 500,
      body: failed('billing_error', true),
      headers: lookupHeaders(1, 88, 100, ID),
    }));
    const out = await client.lookup({ phoneNumber: '+12025550100' });
    expect(out.kind).toBe('failed');
    expect(stub.requests).toHaveLength(1);
  });

  it('500 "unable to process request": exit 6, not retried for a lookup', async () => {
    const { client, stub } = await setup(() => ({ status: 500, body: { error: 'unable to process request' } }));
    const err = await dncErrorOf(client.lookup({ phoneNumber: '+12025550100' }));
    expect([err.code, err.exitCode]).toEqual(['E_SERVICE', 6]);
    expect(err.message).toContain('HTTP 500');
    expect(err.message).toContain('unable to process request');
    expect(stub.requests).toHaveLength(1);
  });

  it('502 lookup_expired is a failed result, not retried', async () => {
    const { client, stub } = await setup(() => ({ status: 502, body: failed('lookup_expired', false) }));
    const out = await client.lookup({ phoneNumber: '+12025550100' });
    expect(out.kind === 'failed' && out.body.error_code).toBe('lookup_expired');
    expect(stub.requests).toHaveLength(1);
  });

  it('502 upstream_error every time: retried, then the failure after 1 + retries attempts', async () => {
    const { client, stub, sleeps } = await setup(() => ({
      status: 502,
      body: failed('upstream_error', false),
      headers: lookupHeaders(0, 90, 100),
    }));
    const out = await client.lookup({ phoneNumber: '+12025550100' });
    expect(out.kind === 'failed' && out.body.error_code).toBe('upstream_error');
    expect(out.meta.attempts).toBe(4);
    expect(stub.requests).toHaveLength(4);
    expect(sleeps).toHaveLength(3);
    // Exponential backoff with jitter: each wait at least half of its doubling ceiling.
    expect(sleeps[1]!).toBeGreaterThanOrEqual(250);
    expect(sleeps[2]!).toBeGreaterThanOrEqual(500);
  });

  it('504 upstream_timeout twice, then the verdict on the third attempt', async () => {
    const { client, stub } = await setup((n) =>
      n <= 2
        ? { status: 504, body: failed('upstream_timeout', false), headers: lookupHeaders(0, 90, 100) }
        : { status: 200, body: succeeded, headers: lookupHeaders(1, 89, 100, ID) },
    );
    const out = await client.lookup({ phoneNumber: '+12025550100' });
    expect(out.kind).toBe('succeeded');
    expect(out.meta.attempts).toBe(3);
    expect(stub.requests).toHaveLength(3);
  });

  it('--retries 0: an upstream failure is answered at once', async () => {
    const { client, stub } = await setup(() => ({ status: 504, body: failed('upstream_timeout', false) }), {
      retries: 0,
    });
    const out = await client.lookup({ phoneNumber: '+12025550100' });
    expect(out.kind).toBe('failed');
    expect(stub.requests).toHaveLength(1);
  });

  it('an HTML page from a proxy gives a clear error with the status, not a JSON crash', async () => {
    const html = '<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1>nginx</body></html>';
    const { client, stub } = await setup(() => ({ status: 502, text: html }));
    const err = await dncErrorOf(client.lookup({ phoneNumber: '+12025550100' }));
    expect([err.code, err.exitCode]).toEqual(['E_BAD_RESPONSE', 6]);
    expect(err.message).toContain('HTTP 502');
    expect(err.message).toContain('non-JSON body');
    expect(err.message).toContain('502 Bad Gateway');
    expect(stub.requests).toHaveLength(1);
  });

  it('a 200 whose body is not JSON is no verdict, and says that no later answer can be trusted either (exit 6)', async () => {
    const { client } = await setup(() => ({ status: 200, text: '<html>captive portal</html>' }));
    const out = await client.lookup({ phoneNumber: '+12025550100' });
    expect(out.kind).toBe('bad_response');
    if (out.kind !== 'bad_response') return;
    expect(out.verdict).toMatchObject({ result: 'failed', errorCode: 'bad_response', charged: null });
    expect([out.stop?.code, out.stop?.exitCode]).toEqual(['E_BAD_RESPONSE', 6]);
    expect(out.stop?.message).toContain('HTTP 200');
  });
});

describe('requests as sent', () => {
  it('"+" is sent as %2B; Bearer key, User-Agent and X-Forwarded-Host on lookups and both usage endpoints', async () => {
    const page = { customer_name: 'Acme', data: [], next_cursor: null };
    const { client, stub } = await setup(
      (n) =>
        n === 1
          ? { status: 200, body: succeeded, headers: lookupHeaders(1, 89, 100, ID) }
          : { status: 200, body: page },
      { forwardedHost: 'reseller.example.com' },
    );
    await client.lookup({ phoneNumber: '+12025550100' });
    await client.usage({ numBillingPeriods: 2 });
    await client.legacyUsage();
    expect(stub.requests.map((r) => r.url)).toEqual([
      '/check_phone_number?phone_number=%2B12025550100',
      '/v2/usage_stats?num_billing_periods=2',
      '/usage_stats',
    ]);
    for (const r of stub.requests) {
      expect(r.headers.authorization).toBe(`Bearer ${KEY}`);
      expect(r.headers['user-agent']).toBe('dnc/9.9.9');
      expect(r.headers['x-forwarded-host']).toBe('reseller.example.com');
    }
  });

  it('no X-Forwarded-Host when none is configured', async () => {
    const { client, stub } = await setup(() => ({ status: 200, body: succeeded }));
    await client.lookup({ phoneNumber: '+12025550100' });
    expect(stub.requests[0]!.headers['x-forwarded-host']).toBeUndefined();
  });

  it('a base URL with a path prefix keeps it', async () => {
    stub = await startStub(() => ({ status: 200, body: succeeded }));
    const client = createServiceClient({ baseUrl: `${stub.baseUrl}/dnc/api/`, apiKey: KEY });
    clients.push(client);
    await client.lookup({ phoneNumber: '+12025550100' });
    expect(stub.requests[0]!.url).toBe('/dnc/api/check_phone_number?phone_number=%2B12025550100');
  });

  it('--verbose events never carry the key', async () => {
    const { client, events } = await setup(() => ({ status: 200, body: succeeded }));
    await client.lookup({ phoneNumber: '+12025550100' });
    expect(events).toHaveLength(1);
    expect(events[0]!.requestHeaders.authorization).toBe('Bearer ***');
    expect(JSON.stringify(events)).not.toContain(KEY);
  });
});

describe('usage endpoints (free) retry service failures', () => {
  it('500 twice, then the page', async () => {
    const page = { customer_name: 'Acme', data: [], next_cursor: null };
    const { client, stub } = await setup((n) =>
      n <= 2 ? { status: 500, body: { error: 'unable to process request' } } : { status: 200, body: page },
    );
    const out = await client.usage();
    expect(out.body).toEqual(page);
    expect(out.meta.attempts).toBe(3);
    expect(stub.requests).toHaveLength(3);
  });

  it('500 every time: exit 6 after 1 + retries attempts', async () => {
    const { client, stub } = await setup(() => ({ status: 500, body: { error: 'unable to process request' } }));
    const err = await dncErrorOf(client.legacyUsage());
    expect(err.exitCode).toBe(6);
    expect(err.message).toContain('unable to process request');
    expect(stub.requests).toHaveLength(4);
  });
});

describe('connection failures', () => {
  it('connection refused is retried (nothing can have been charged) and succeeds once the service is up', async () => {
    // Nothing listens on the port until the client has been refused once.
    const port = await closedPort();
    const events: ExchangeEvent[] = [];
    const client = createServiceClient({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: KEY,
      retries: 3,
      onExchange: (e) => events.push(e),
      sleep: async () => {
        stub ??= await startStub(
          () => ({ status: 200, body: succeeded, headers: lookupHeaders(1, 89, 100, ID) }),
          port,
        );
      },
    });
    clients.push(client);
    const out = await client.lookup({ phoneNumber: '+12025550100' });
    expect(out.kind).toBe('succeeded');
    expect(events.map((e) => e.error ?? e.status)).toEqual(['ECONNREFUSED', 200]);
    expect(stub!.requests).toHaveLength(1);
  });

  it('connection refused every time: exit 6 naming the address, after 1 + retries attempts', async () => {
    const port = await closedPort();
    const events: ExchangeEvent[] = [];
    const client = createServiceClient({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: KEY,
      retries: 2,
      onExchange: (e) => events.push(e),
      sleep: async () => {},
    });
    clients.push(client);
    const err = await dncErrorOf(client.lookup({ phoneNumber: '+12025550100' }));
    expect([err.code, err.exitCode]).toEqual(['E_NETWORK', 6]);
    expect(err.message).toContain(`127.0.0.1:${port}`);
    expect(err.message).toContain('ECONNREFUSED');
    expect(events).toHaveLength(3);
    expect(err.message).not.toContain(KEY);
  });

  it('a lookup that times out after it was sent is not retried (it may have been charged)', async () => {
    // A server that reads the request and never answers.
    const { default: http } = await import('node:http');
    const slow = http.createServer(() => {
      /* never answers */
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    const port = (slow.address() as { port: number }).port;
    let seen = 0;
    slow.on('request', () => seen++);
    const client = createServiceClient({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: KEY,
      timeoutMs: 200,
      retries: 3,
      sleep: async () => {},
    });
    clients.push(client);
    const err = await dncErrorOf(client.lookup({ phoneNumber: '+12025550100' }));
    expect([err.code, err.exitCode]).toEqual(['E_TIMEOUT', 6]);
    expect(err.hint).toContain('may have been charged');
    expect(seen).toBe(1);
    await client.close().catch(() => {});
    clients.pop();
    slow.closeAllConnections();
    await new Promise<void>((r) => slow.close(() => r()));
  });

  it('times out each lookup on its own deadline: stalled before the headers or in the body, beside ones answered at once', async () => {
    // Every lookup has a deadline of its own: those answered must not cut short, or stretch, the others.
    const { default: http } = await import('node:http');
    const server = http.createServer((req, res) => {
      const n = new URL(req.url ?? '/', 'http://x').searchParams.get('phone_number');
      if (n === '+12025550101') return; // never answers
      if (n === '+12025550102') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"status":'); // the body never ends
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', ...lookupHeaders(1, 99, 100) });
      res.end(JSON.stringify({ ...succeeded, phone_number: n }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const client = createServiceClient({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: KEY,
      timeoutMs: 300,
      retries: 0,
      connections: 4,
    });
    clients.push(client);
    const settled = await Promise.allSettled(
      ['+12025550100', '+12025550101', '+12025550102', '+12025550103'].map((phoneNumber) =>
        client.lookup({ phoneNumber }),
      ),
    );
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    for (const s of settled)
      if (s.status === 'rejected') expect((s.reason as { code?: string }).code).toBe('E_TIMEOUT');
    // And a later lookup gets a deadline of its own again.
    const again = await client.lookup({ phoneNumber: '+12025550104' });
    expect(again.kind).toBe('succeeded');
    await client.close().catch(() => {});
    clients.pop();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
});
