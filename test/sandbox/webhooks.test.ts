// Webhook-mode lookups: receipts, held credits, pushes and their headers, retries, permanent failures, duplicates, expiry, AU timing.
import { afterEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox, type SandboxOptions, type SandboxTimers } from '../../src/sandbox/index.js';
import { AU, get, heldTimers, lookup, startReceiver, until, US, watchedTimers, type Receiver } from './helpers.js';

const open: Array<Sandbox | Receiver> = [];
async function sandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const sb = await startSandbox({ port: 0, seed: 3, allowInsecureWebhooks: true, ...options });
  open.push(sb);
  return sb;
}
async function receiver(...args: Parameters<typeof startReceiver>): Promise<Receiver> {
  const r = await startReceiver(...args);
  open.push(r);
  return r;
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

describe('receipt and push', () => {
  it('answers 202 with the receipt, holds credits, then pushes the 2.2 body with the section 6 headers', async () => {
    // The test holds the timers: the result comes when it fires them, however slow the machine.
    const due: Array<() => void> = [];
    const sb = await sandbox({ creditLimit: 20, timers: { setTimeout: (fn) => due.push(fn), clearTimeout: () => {} } });
    const rx = await receiver();
    const r = await lookup(sb, US, rx.url);
    expect(r.status).toBe(202);
    expect(r.body).toEqual({ status: 'started', correlation_id: expect.any(String), phone_number: US, country: 'US' });
    expect(r.headers).toMatchObject({
      'x-service-correlation-id': r.body.correlation_id,
      'x-credit-cost': '1',
      'x-ratelimit-limit': '20',
      'x-ratelimit-remaining': '19',
    });
    // Held: in credits_used and total_requests, not yet in by_country.
    const pending = (await get(sb, '/v2/usage_stats')).body.data[0];
    expect(pending).toMatchObject({ credits_used: 1, total_requests: 1, by_country: [] });
    expect(sb.lookups()[0]).toMatchObject({ mode: 'webhook', state: 'started', credits: 1 });
    expect(due).toHaveLength(1);
    due.shift()!();

    const [push] = await rx.waitFor(1);
    expect(push!.path).toBe('/hook');
    expect(push!.headers).toMatchObject({
      'content-type': 'application/json',
      'user-agent': 'Service-Webhooks/1.0',
      'x-service-correlation-id': r.body.correlation_id,
      'x-service-phone-number': US,
      'x-service-country': 'US',
      'x-service-status': '200',
    });
    expect(push!.body).toEqual({
      status: 'succeeded',
      error_code: null,
      correlation_id: r.body.correlation_id,
      phone_number: US,
      country: 'US',
      do_not_call: true,
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$/),
      dnc_list_source: 'https://sandbox.dnc.invalid/registers/US',
      cost: { credits_used_for_query: 1, total_credits_used: 1, credit_limit: 20 },
    });
    await until(() => sb.pushes().length === 1);
    expect(sb.pushes()[0]).toMatchObject({
      correlationId: r.body.correlation_id,
      attempt: 1,
      status: 200,
      duplicate: false,
      outcome: 'delivered',
    });
    expect(sb.lookups()[0]).toMatchObject({ state: 'succeeded', charged: true, credits: 1 });
    const done = (await get(sb, '/v2/usage_stats')).body.data[0];
    expect(done).toMatchObject({
      credits_used: 1,
      total_requests: 1,
      by_country: [{ country: 'US', request_count: 1 }],
    });
  });

  it('pushes failures with the status the synchronous call would give, charging or refunding', async () => {
    const due: Array<() => void> = [];
    const sb = await sandbox({ timers: { setTimeout: (fn) => due.push(fn), clearTimeout: () => {} } });
    const rx = await receiver();
    for (const tail of ['990', '995', '996']) expect((await lookup(sb, `+12025550${tail}`, rx.url)).status).toBe(202);
    expect(sb.account().creditsUsed).toBe(3); // all three held
    for (const fire of due.splice(0)) fire();
    const pushes = await rx.waitFor(3);
    const byNumber = Object.fromEntries(pushes.map((p) => [p.body.phone_number, p]));
    expect(byNumber['+12025550990']!.headers['x-service-status']).toBe('400');
    expect(byNumber['+12025550990']!.body).toMatchObject({
      status: 'failed',
      error_code: 'invalid_phone_number',
      charged: true,
      error: expect.any(String),
    });
    expect(byNumber['+12025550995']!.body).toMatchObject({ error_code: 'billing_error', charged: true });
    expect(byNumber['+12025550996']!.headers['x-service-status']).toBe('500');
    expect(byNumber['+12025550996']!.body).toMatchObject({ error_code: 'billing_error', charged: false });
    await until(() => sb.pending() === 0);
    expect(sb.account().creditsUsed).toBe(2); // 996 refunded
  });

  it('retries 991 internally and pushes only the final success', async () => {
    // Held timers: a slow answer is never cut off by the reply limit (which would retry and push twice).
    const timers = heldTimers();
    const sb = await sandbox({ timers });
    const rx = await receiver();
    await lookup(sb, '+12025550991', rx.url);
    expect(timers.held()).toHaveLength(1); // the result, after the internal retries
    await timers.fire(timers.held()[0]!);
    const [push] = await rx.waitFor(1);
    expect(push!.body).toMatchObject({ status: 'succeeded', do_not_call: true });
    await until(() => sb.pushes().length === 1);
    expect(timers.held()).toEqual([]); // nothing scheduled: no other push will ever come
    expect(rx.pushes).toHaveLength(1);
    expect(sb.lookups()[0]!.attempts).toBe(3);
  });

  it('refuses a webhook URL on a non-public name (400, uncharged) unless started with --allow-insecure-webhooks', async () => {
    const strict = await sandbox({ allowInsecureWebhooks: false });
    for (const url of [
      'https://hooks.internal/x',
      'https://printer.local/x',
      'https://intranet/x',
      'https:///x',
      'https://r.home.arpa/x',
    ]) {
      const r = await lookup(strict, US, url);
      expect(r.status, url).toBe(400);
      expect((r.body as { error: string }).error, url).toContain('not a public name');
    }
    expect(strict.account().creditsUsed).toBe(0);
    const lax = await sandbox({ allowInsecureWebhooks: true });
    expect((await lookup(lax, US, 'https://hooks.internal/x')).status).toBe(202);
  });

  it('refuses webhook lookups for an account where they are disabled', async () => {
    const sb = await sandbox({ accounts: [{ key: 'no-hooks', webhooks: false }] });
    const r = await lookup(sb, US, 'http://127.0.0.1:9/hook', 'Bearer no-hooks');
    expect(r.status).toBe(400);
    expect(sb.account('no-hooks').creditsUsed).toBe(0);
  });
});

describe('receiver answers', () => {
  it('retries 5xx, 408, 425 and 429 with backoff, then stops at the 2xx', async () => {
    // The test holds the timers: each retry waits for exactly its backoff (the service's own, time scale 1), and a
    // slow answer on a loaded machine is never cut off by the reply limit (held, never fired).
    const timers = heldTimers();
    const sb = await sandbox({ timers });
    const statuses = [500, 503, 408, 425, 429, 200];
    const rx = await receiver((n) => statuses[n - 1] ?? 200);
    await lookup(sb, US, rx.url);
    await timers.fire(timers.held()[0]!); // the result
    // Backoff 30 s, 60 s, 120 s, 240 s, 480 s between the six attempts.
    for (const s of [30, 60, 120, 240, 480]) await timers.fire(s * 1_000, `the retry after ${s} s`);
    await rx.waitFor(6);
    await until(() => sb.pushes().length === 6);
    expect(timers.held()).toEqual([]);
    expect(sb.pushes().map((p) => [p.attempt, p.status, p.outcome])).toEqual([
      [1, 500, 'retry'],
      [2, 503, 'retry'],
      [3, 408, 'retry'],
      [4, 425, 'retry'],
      [5, 429, 'retry'],
      [6, 200, 'delivered'],
    ]);
    expect(new Set(rx.pushes.map((p) => p.body.correlation_id)).size).toBe(1);
  });

  it('gives up after 10 attempts', async () => {
    const timers = heldTimers();
    const sb = await sandbox({ timers });
    const rx = await receiver(() => 502);
    await lookup(sb, US, rx.url);
    await timers.fire(timers.held()[0]!); // the result
    // 30 s doubling, at most an hour.
    for (const s of [30, 60, 120, 240, 480, 960, 1920, 3600, 3600])
      await timers.fire(s * 1_000, `a retry after ${s} s`);
    await until(() => sb.pushes().length === 10, 20_000, '10 attempts');
    expect(timers.held()).toEqual([]); // no 11th attempt scheduled
    expect(rx.pushes).toHaveLength(10);
    expect(sb.pushes().at(-1)).toMatchObject({ attempt: 10, status: 502, outcome: 'gave_up' });
  });

  it('treats a receiver that does not answer within the reply limit as retryable', async () => {
    const sb = await sandbox({ timeScale: 0.02 }); // reply limit 200 ms, retry after 600 ms
    const rx = await receiver((n) => (n === 1 ? 'hang' : 200));
    await lookup(sb, US, rx.url);
    await rx.waitFor(2);
    await until(() => sb.pushes().length === 2);
    expect(sb.pushes()[0]).toMatchObject({ attempt: 1, outcome: 'retry', error: expect.stringMatching(/timeout/) });
    expect(sb.pushes()[0]!.status).toBeUndefined();
    expect(sb.pushes()[1]).toMatchObject({ attempt: 2, status: 200, outcome: 'delivered' });
  });

  it('retries connection errors', async () => {
    const sb = await sandbox({ timeScale: 0.001 });
    const rx = await receiver();
    const dead = rx.url.replace(/:\d+\//, ':9/'); // port 9 (discard): nothing listens
    await lookup(sb, US, dead);
    await until(() => sb.pushes().length >= 2);
    expect(sb.pushes()[0]).toMatchObject({ outcome: 'retry', error: 'ECONNREFUSED' });
  });

  it('does not retry other statuses, and does not follow redirects', async () => {
    // Reply limit 200 ms, retry after 600 ms: a loaded machine's slow 404 is still an answer, not a timeout.
    const timers = watchedTimers();
    const sb = await sandbox({ timeScale: 0.02, timers });
    const notFound = await receiver(() => 404);
    const redirect = await receiver(() => [302, { location: notFound.url }]);
    await lookup(sb, US, notFound.url);
    await lookup(sb, '+12025550125', redirect.url);
    await until(() => sb.pushes().length === 2);
    expect(timers.pending()).toBe(0); // no retry scheduled (it would come after 600 ms)
    expect(notFound.pushes).toHaveLength(1);
    expect(redirect.pushes).toHaveLength(1);
    expect(
      sb
        .pushes()
        .map((p) => [p.status, p.outcome])
        .sort(),
    ).toEqual([
      [302, 'permanent'],
      [404, 'permanent'],
    ]);
  });

  it('sends deliberate duplicates at the configured rate, flagged in the log', async () => {
    // Reply limit 200 ms (a slow answer is not a timeout to retry), duplicates 20 ms after their push.
    const sb = await sandbox({ timeScale: 0.02, duplicatePushRate: 1 });
    const rx = await receiver();
    await lookup(sb, US, rx.url);
    await lookup(sb, US, rx.url);
    await rx.waitFor(4);
    const ids = rx.pushes.map((p) => p.body.correlation_id);
    expect(new Set(ids).size).toBe(2);
    await until(() => sb.pushes().length === 4);
    expect(sb.pushes().filter((p) => p.duplicate)).toHaveLength(2);
    const timers = watchedTimers();
    const none = await sandbox({ timeScale: 0.02, duplicatePushRate: 0, timers });
    const rx2 = await receiver();
    await lookup(none, US, rx2.url);
    await rx2.waitFor(1);
    await until(() => none.pushes().length === 1);
    expect(timers.pending()).toBe(0); // no duplicate scheduled
    expect(rx2.pushes).toHaveLength(1);
  });

  it('refuses at delivery a host that does not resolve to a public address', async () => {
    const sb = await sandbox({ timeScale: 0.001, allowInsecureWebhooks: false });
    const r = await lookup(sb, US, 'https://hooks.no-such-host-for-dnc-tests.net/x');
    expect(r.status).toBe(202);
    await until(() => sb.pushes().length >= 1);
    expect(sb.pushes()[0]).toMatchObject({
      outcome: 'retry',
      error: expect.stringMatching(/hooks\.no-such-host-for-dnc-tests\.net/),
    });
  });
});

describe('time', () => {
  it('expires lookups that never get an answer after 24 h × time scale, refunding the hold', async () => {
    const scale = 0.00002; // 24 h = 1.728 s
    const sb = await sandbox({ timeScale: scale });
    const rx = await receiver();
    const t0 = Date.now();
    for (const tail of ['993', '994', '997']) await lookup(sb, `+12025550${tail}`, rx.url);
    expect(sb.account().creditsUsed).toBe(3);
    await rx.waitFor(3, 10_000);
    expect(rx.pushes[0]!.at - t0).toBeGreaterThanOrEqual(86_400_000 * scale - 20);
    for (const p of rx.pushes) {
      expect(p.headers['x-service-status']).toBe('502');
      expect(p.body).toMatchObject({ status: 'failed', error_code: 'lookup_expired', charged: false });
    }
    await until(() => sb.pending() === 0);
    expect(sb.account().creditsUsed).toBe(0);
    const usage = (await get(sb, '/v2/usage_stats')).body.data[0];
    expect(usage).toMatchObject({ credits_used: 0, total_requests: 0, by_country: [] });
  });

  it('schedules AU results at 30 s × 2^(tens digit), exactly, on injected timers', async () => {
    const scheduled: Array<{ fn: () => void; ms: number; cancelled: boolean }> = [];
    const timers: SandboxTimers = {
      setTimeout(fn, ms) {
        const t = { fn, ms, cancelled: false };
        scheduled.push(t);
        return t;
      },
      clearTimeout(h) {
        (h as { cancelled: boolean }).cancelled = true;
      },
    };
    const sb = await sandbox({ timeScale: 0.5, timers });
    const rx = await receiver();
    for (const n of ['+61412345603', '+61412345614', '+61412345655', '+61412345690'])
      expect((await lookup(sb, n, rx.url)).status).toBe(202);
    expect(scheduled.map((t) => t.ms)).toEqual([30_000, 60_000, 960_000, 15_360_000].map((ms) => ms * 0.5));
    expect(rx.pushes).toHaveLength(0);
    scheduled[1]!.fn(); // the …14 number's time has come
    const [push] = await rx.waitFor(1);
    expect(push!.body).toMatchObject({
      phone_number: '+61412345614',
      country: 'AU',
      status: 'succeeded',
      cost: { credits_used_for_query: 3 },
    });
    await sb.close();
    // close() cancels every timer that has not fired: the other three results, none pushed.
    expect(scheduled.filter((t) => t !== scheduled[1]).every((t) => t.cancelled)).toBe(true);
    expect(rx.pushes).toHaveLength(1);
  });

  it('delivers AU results in order of their delay on real timers', async () => {
    const sb = await sandbox({ timeScale: 0.002 }); // 30 s → 60 ms, 60 s → 120 ms, 120 s → 240 ms
    const rx = await receiver();
    const t0 = Date.now();
    await lookup(sb, '+61412345624', rx.url);
    await lookup(sb, AU, rx.url);
    await lookup(sb, '+61412345612', rx.url);
    await rx.waitFor(3);
    expect(rx.pushes.map((p) => p.body.phone_number)).toEqual([AU, '+61412345612', '+61412345624']);
    expect(rx.pushes[0]!.at - t0).toBeGreaterThanOrEqual(55);
    expect(rx.pushes[2]!.at - t0).toBeGreaterThanOrEqual(235);
  });

  it('cancels pending pushes on close', async () => {
    const timers = watchedTimers();
    const sb = await startSandbox({ port: 0, allowInsecureWebhooks: true, timeScale: 0.1, timers }); // push after 200 ms
    const rx = await receiver();
    await lookup(sb, US, rx.url);
    expect(timers.pending()).toBe(1); // the push, due in 200 ms
    await sb.close();
    expect(timers.pending()).toBe(0); // cancelled: nothing will ever be pushed
    expect(rx.pushes).toHaveLength(0);
  });
});
