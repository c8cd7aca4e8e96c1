// Attacks on the listener's resources: an orphan flood, slow and half-open connections, oversized bodies.
import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import net from 'node:net';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { openListenJournal, type JournalPushStore } from '../../src/listen/journal-store.js';
import { createReceiver, type Receiver } from '../../src/listen/receiver.js';
import { post, PUSH_PATH, readCsv, readJournal, webhookBatch, type WebhookBatch } from './helpers.js';
import { waitFor } from '../helpers/wait.js';

let current: WebhookBatch | undefined;
let receiver: Receiver | undefined;
let store: JournalPushStore | undefined;
afterEach(async () => {
  await receiver?.close({ force: true });
  store?.close();
  await current?.cleanup();
  current = receiver = store = undefined;
});

async function receiverFor(
  options: Partial<Parameters<typeof openListenJournal>[1]> = {},
  receiverOptions: Partial<Parameters<typeof createReceiver>[0]> = {},
) {
  current ??= await webhookBatch([['au', '+61 4 1234 5093']]);
  store = await openListenJournal(current.output, { renderInWorker: false, tzdataVersion: 'test', ...options });
  receiver = createReceiver({ store, path: PUSH_PATH, ...receiverOptions });
  const address = await receiver.listen();
  return { url: address.url, base: new URL('/', address.url), batch: current };
}

/** A push for a lookup nobody sent (an orphan), padded to about `size` bytes. */
function orphan(size = 0): Record<string, unknown> {
  return {
    status: 'succeeded',
    error_code: null,
    correlation_id: randomUUID(),
    phone_number: '+61412345077',
    country: 'AU',
    do_not_call: false,
    timestamp: new Date().toISOString(),
    dnc_list_source: 'https://sandbox.dnc.invalid/registers/AU',
    cost: { credits_used_for_query: 3, total_credits_used: 3, credit_limit: 10 },
    padding: 'x'.repeat(size),
  };
}

/**
 * A raw connection that sends `text` and then nothing, never closing its side (allowHalfOpen). `closed` resolves
 * with what it received once the listener has closed its side (end) or cut it (reset).
 */
function stall(
  port: number,
  text: string,
  localAddress?: string,
): Promise<{ socket: net.Socket; closed: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true, localAddress });
    let received = '';
    socket.setEncoding('utf8').on('data', (d: string) => (received += d));
    const closed = new Promise<string>((r) => {
      socket.once('end', () => r(received));
      socket.once('close', () => r(received));
    });
    socket.on('error', () => undefined);
    socket.once('connect', () => {
      socket.write(text);
      resolve({ socket, closed });
    });
    socket.once('error', reject);
  });
}

/** The genuine push for the batch's first row (its correlation id and number). */
function genuinePushFor(batch: { output: string }): Record<string, unknown> {
  const row = readCsv(batch.output)[0]!;
  return {
    ...orphan(),
    correlation_id: row.dnc_correlation_id,
    phone_number: row.dnc_phone_e164,
    do_not_call: true,
    padding: undefined,
  };
}

/** The listener's descriptors: the connections it still holds. */
async function heldBy(r: Receiver): Promise<number> {
  return r.openConnections();
}

describe('an orphan flood', () => {
  it('keeps orphans up to the count cap, then answers 503 with Retry-After (the service retries) and reports it', async () => {
    const { url, batch } = await receiverFor({ maxOrphans: 5 });
    const refused: number[] = [];
    receiver!.on('rejected', (e) => refused.push(e.status));
    const statuses: number[] = [];
    let retryAfter: unknown;
    for (let i = 0; i < 8; i++) {
      const res = await post(url, orphan());
      statuses.push(res.status);
      if (res.status === 503) retryAfter = res.headers['retry-after'];
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 503, 503, 503]);
    expect(Number(retryAfter)).toBeGreaterThan(0);
    expect(refused).toEqual([503, 503, 503]);
    expect(receiver!.stats.overCapacity).toBe(3);
    expect(readJournal(batch.journal).pushes.filter((p) => p.outcome === 'orphan')).toHaveLength(5);
    // A push for a lookup that was sent is still taken.
    const row = readCsv(batch.output)[0]!;
    const genuine = {
      ...orphan(),
      correlation_id: row.dnc_correlation_id,
      phone_number: row.dnc_phone_e164,
      padding: undefined,
    };
    expect((await post(url, genuine)).status).toBe(200);
  });

  it('keeps orphans up to the byte cap: 60 KB bodies cannot grow the journal without bound', async () => {
    const { url, batch } = await receiverFor({ maxOrphanBytes: 200_000 });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await post(url, orphan(60_000))).status);
    expect(statuses).toEqual([200, 200, 200, 503, 503, 503]);
    store!.journal.checkpoint();
    expect(statuses.filter((s) => s === 200)).toHaveLength(3);
    expect(statSync(batch.journal).size).toBeLessThan(2_000_000);
  });
});

describe('slow and half-open connections', () => {
  it('caps connections, times out a request that trickles (408), closes it fully, and serves again', async () => {
    const { base } = await receiverFor({}, { maxConnections: 10, headersTimeoutMs: 300, requestTimeoutMs: 600 });
    const port = Number(base.port);
    const stalled = await Promise.all(
      Array.from({ length: 25 }, () => stall(port, `POST ${PUSH_PATH} HTTP/1.1\r\nHost: x\r\n`)),
    );
    // Beyond the cap, connections are shut at once.
    await waitFor(async () => (await heldBy(receiver!)) <= 10, { ms: 2_000, what: 'at most 10 connections' });
    // Those within the cap get 408 once the header time is up, and are closed by the listener even though the peer keeps its side open.
    const answers = await Promise.all(stalled.map((s) => s.closed));
    expect(answers.filter((a) => a.startsWith('HTTP/1.1 408')).length).toBeGreaterThanOrEqual(1);
    expect(answers.filter((a) => a === '').length).toBeGreaterThanOrEqual(15);
    expect(await heldBy(receiver!)).toBe(0);
    const health = await request(new URL('/healthz', base));
    expect(health.statusCode).toBe(200);
    await health.body.text();
    for (const s of stalled) s.socket.destroy();
  }, 20_000);

  it('at the cap, a push on a new connection takes the place of one stalled mid-request: half-sent requests cannot keep pushes and /healthz out', async () => {
    // The header timeout is far away: only the replacement of stalled connections can let the push in.
    const { url, base, batch } = await receiverFor(
      {},
      { maxConnections: 10, stalledMs: 200, headersTimeoutMs: 10_000, requestTimeoutMs: 15_000 },
    );
    const port = Number(base.port);
    const stalled = await Promise.all(
      Array.from({ length: 25 }, () => stall(port, `POST ${PUSH_PATH} HTTP/1.1\r\nHost: x\r\n`)),
    );
    // A body that trickles (its headers complete) stalls as well.
    stalled.push(
      await stall(
        port,
        `POST ${PUSH_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"status":`,
      ),
    );
    // Deliberate: a connection counts as stalled once it has been for stalledMs (200 ms) of real time.
    await new Promise((r) => setTimeout(r, 400));
    expect(await heldBy(receiver!)).toBeLessThanOrEqual(10);
    const pushed = await post(url, genuinePushFor(batch));
    expect(pushed.status, pushed.text).toBe(200);
    const health = await request(new URL('/healthz', base), { reset: true });
    expect(health.statusCode).toBe(200);
    await health.body.text();
    expect(await heldBy(receiver!)).toBeLessThanOrEqual(10);
    expect(readJournal(batch.journal).pushes.map((p) => p.outcome)).toEqual(['applied']);
    for (const s of stalled) s.socket.destroy();
  }, 20_000);

  it('at the cap, one address opening fresh connections (none stalled yet) cannot shut another address out', async () => {
    // Nothing counts as stalled for 10 s: only the fair share per address can let the push in.
    const { url, base, batch } = await receiverFor(
      {},
      { maxConnections: 10, stalledMs: 10_000, headersTimeoutMs: 10_000, requestTimeoutMs: 15_000 },
    );
    const port = Number(base.port);
    const flood = [];
    // From 127.0.0.2 (all of 127/8 is this machine): another address than the push's; one after another, as a flood comes.
    for (let i = 0; i < 25; i++)
      flood.push(await stall(port, `POST ${PUSH_PATH} HTTP/1.1\r\nHost: x\r\n`, '127.0.0.2'));
    await waitFor(async () => (await heldBy(receiver!)) <= 10, { ms: 2_000, what: 'at most 10 connections' });
    const pushed = await post(url, genuinePushFor(batch));
    expect(pushed.status, pushed.text).toBe(200);
    expect(readJournal(batch.journal).pushes.map((p) => p.outcome)).toEqual(['applied']);
    for (const s of flood) s.socket.destroy();
  }, 20_000);

  it('right after a burst of 400 half-open connections (default cap and limits), /healthz on a new connection answers within 1 s', async () => {
    const { base } = await receiverFor();
    const port = Number(base.port);
    // From the address /healthz comes from, all at once: none is stalled yet (1 s) and the fair share cannot help.
    const burst = await Promise.all(
      Array.from({ length: 400 }, () => stall(port, `POST ${PUSH_PATH} HTTP/1.1\r\nHost: x\r\n`)),
    );
    const started = performance.now();
    const health = await request(new URL('/healthz', base), { reset: true, headersTimeout: 1_000, bodyTimeout: 1_000 });
    expect(health.statusCode).toBe(200);
    await health.body.text();
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(await heldBy(receiver!)).toBeLessThanOrEqual(256);
    for (const s of burst) s.socket.destroy();
  }, 20_000);

  it('closes the connection after a 413, body still arriving', async () => {
    const { base } = await receiverFor();
    const port = Number(base.port);
    const { socket, closed } = await stall(
      port,
      `POST ${PUSH_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{"status":`,
    );
    const answer = await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 413/);
    await waitFor(async () => (await heldBy(receiver!)) === 0, { ms: 2_000, what: 'the connection closed' });
    socket.destroy();
  });
});
