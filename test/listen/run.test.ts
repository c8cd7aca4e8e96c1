// The listen use case through its run function: a real webhook batch against the sandbox, pushes over loopback,
// a real journal; the events and the result are what is asserted (nothing is printed by the use case).
import { openStores } from '../../src/stores/owner.js';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { processLockDeps } from '../../src/context.js';
import { DncError } from '../../src/errors.js';
import { runListenJob, type ListenEvent, type ListenOptions, type ListenRunDeps } from '../../src/listen/run.js';
import {
  expectedResult,
  PUSH_PATH,
  readCsv,
  testInterrupts,
  waitFor,
  webhookBatch,
  type WebhookBatch,
} from './helpers.js';

let current: WebhookBatch | undefined;
const scratch: string[] = [];
afterEach(async () => {
  await current?.cleanup();
  current = undefined;
  for (const d of scratch.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function batchOf(rows: Array<[string, string]>, options: Parameters<typeof webhookBatch>[1] = {}) {
  current = await webhookBatch(rows, options);
  expect(current.batch.code, current.batch.stderr).toBe(8);
  return current;
}

function options(b: WebhookBatch, given: Partial<ListenOptions> = {}): ListenOptions {
  return {
    results: b.output,
    port: b.port,
    host: '127.0.0.1',
    path: PUSH_PATH,
    exitWhenDone: true,
    tls: undefined,
    skewMs: 300_000,
    ...given,
  };
}

/**
 * This test's machine: a private home, so the results cache lands in a scratch folder, and the state folder where the
 * journal's chain is anchored is the same for every listener the test starts.
 */
let machine: string | undefined;
afterEach(() => {
  machine = undefined;
});

/** Injected dependencies that record every event, on this test's machine. */
function deps(given: Partial<ListenRunDeps> = {}) {
  const events: ListenEvent[] = [];
  if (!machine) scratch.push((machine = mkdtempSync(path.join(os.tmpdir(), 'dnc-listen-run-home-'))));
  const home = machine;
  const interrupts = testInterrupts();
  const d: ListenRunDeps = {
    env: { XDG_CACHE_HOME: path.join(home, 'cache'), XDG_STATE_HOME: path.join(home, 'state') },
    homedir: home,
    now: () => new Date(),
    stores: () => openStores({ url: null, from: 'the default' }, d.env, home),
    serviceConfig: async () => ({
      baseUrl: { value: 'http://127.0.0.1', source: 'default' },
      apiKey: { value: 'listen-test-key', source: 'default' },
      forwardedHost: undefined,
      configPath: '',
      warnings: [],
    }),
    tzdataVersion: process.versions.tz ?? 'unknown',
    interrupts,
    lockDeps: processLockDeps(),
    onEvent: (e) => events.push(e),
    ...given,
  };
  return {
    deps: d,
    events,
    interrupts,
    of: <T extends ListenEvent['type']>(type: T) =>
      events.filter((e): e is Extract<ListenEvent, { type: T }> => e.type === type),
  };
}

describe('runListenJob', () => {
  it('resolves a webhook batch: listening first, renders, then done with the rows by result', async () => {
    const rows: Array<[string, string]> = [
      ['au', '+61 4 1234 5001'],
      ['us-odd', '+1 202 555 0121'],
      ['us-even', '+1 202 555 0122'],
    ];
    const b = await batchOf(rows);
    const d = deps();
    const result = await runListenJob(options(b), d.deps);

    expect(d.events[0]).toMatchObject({
      type: 'listening',
      pushPath: PUSH_PATH,
      from: 'flag',
      suggestedPath: null,
      batchPath: null,
    });
    const listening = d.of('listening')[0]!;
    expect(listening.address.url).toBe(b.url);
    expect(listening.base).toBe(`http://127.0.0.1:${b.port}`);
    expect(listening.batchWebhookUrl).toBe(b.url);
    expect(d.of('rendered').length).toBeGreaterThanOrEqual(1);
    expect(d.of('push').filter((e) => !e.push.duplicate && !e.push.orphan)).toHaveLength(3);
    expect(d.of('stopping')).toEqual([]);

    expect(result).toMatchObject({ kind: 'done', interrupted: false, lost: [] });
    expect(result.final).toMatchObject({ pending: 0, unsent: 0, stored: 3, conflicts: 0 });
    const out = readCsv(b.output);
    const byResult: Record<string, number> = {};
    for (const r of out) {
      expect(r.dnc_result).toBe(expectedResult(r.dnc_phone_e164!));
      byResult[r.dnc_result!] = (byResult[r.dnc_result!] ?? 0) + 1;
    }
    expect(Object.fromEntries(Object.entries(result.byResult!).filter(([, n]) => n > 0))).toEqual(byResult);
    // The journal's lock is released: a second run takes it (and, nothing pending, is done at once).
    const again = await runListenJob(options(b, { port: 0 }), deps().deps);
    expect(again.kind).toBe('done');
  });

  it("serves the batch's own webhook path when --path is not given", async () => {
    const b = await batchOf([['us', '+1 202 555 0122']]);
    const d = deps();
    const result = await runListenJob(options(b, { path: undefined }), d.deps);
    expect(d.of('listening')[0]).toMatchObject({ pushPath: PUSH_PATH, from: 'batch' });
    expect(result.kind).toBe('done');
  });

  it('says when --path is guessable or differs from the batch path, with a random one to use instead', async () => {
    const b = await batchOf([['us', '+1 202 555 0122']]);
    const d = deps({ randomPushPath: () => '/hooks/AAAAbbbbCCCCddddEEEEff' });
    const interrupts = d.interrupts;
    const run = runListenJob(options(b, { path: '/hooks', port: 0, exitWhenDone: false }), d.deps);
    await waitFor('listening', () => d.of('listening').length > 0);
    expect(d.of('listening')[0]).toMatchObject({
      pushPath: '/hooks',
      from: 'flag',
      suggestedPath: '/hooks/AAAAbbbbCCCCddddEEEEff',
      batchPath: PUSH_PATH,
    });
    interrupts.fire();
    const result = await run;
    // The service pushes to the batch's port; this listener (any free port) receives nothing, so the lookup stays pending.
    expect(d.of('stopping')).toEqual([{ type: 'stopping', force: false }]);
    expect(result).toMatchObject({ kind: 'interrupted', interrupted: true });
    expect(result.final.pending).toBe(1);
  });

  it('reports refusals and lost lookups as events, and an interrupt with lookups pending as interrupted', async () => {
    // …997 never answers; its lookup_expired push is due 24 h (× time scale) after the receipt.
    const b = await batchOf([['expiring', '+61 4 1234 5997']], { webhookAll: false });
    const cid = readCsv(b.output)[0]!.dnc_correlation_id;
    const d = deps({ now: () => new Date(Date.now() + 25 * 3600_000) });
    const run = runListenJob(options(b, { exitWhenDone: false }), d.deps);
    await waitFor('the lost lookup', () => d.of('lost').length > 0);
    expect((await fetch(`${b.url.replace(PUSH_PATH, '/elsewhere')}`, { method: 'POST' })).status).toBe(404);
    await waitFor('the refusal', () => d.of('refused').length > 0);
    d.interrupts.fire();
    const result = await run;
    expect(d.of('refused')[0]!.refusal).toMatchObject({ status: 404, method: 'POST', path: '/elsewhere' });
    const lost = d.of('lost')[0]!.lookup;
    expect(lost).toMatchObject({ correlationId: cid, phoneNumber: '+61412345997', country: 'AU' });
    expect(lost.deadline.getTime() - lost.receivedAt.getTime()).toBe(24 * 3600_000);
    expect(result).toMatchObject({ kind: 'interrupted', interrupted: true, lost: [lost] });
    expect(result.final.pending).toBe(1);
  });

  it('throws typed errors (a port in use, an unreadable certificate) and leaves the journal unlocked', async () => {
    const b = await batchOf([['us', '+1 202 555 0122']]);
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const busy = (holder.address() as net.AddressInfo).port;
    try {
      const err = await runListenJob(options(b, { port: busy }), deps().deps).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DncError);
      expect((err as DncError).code).toBe('E_PORT_IN_USE');
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
    const unreadable = await runListenJob(
      options(b, { tls: { certFile: path.join(b.dir, 'none.pem'), keyFile: path.join(b.dir, 'none.pem') } }),
      deps().deps,
    ).catch((e: unknown) => e);
    expect((unreadable as DncError).code).toBe('E_TLS_UNREADABLE');
    // Unlocked after each failure: a run on the same journal starts, and receives the push the service retries.
    expect((await runListenJob(options(b), deps().deps)).kind).toBe('done');
  });

  it('refuses a guessable webhook path of the batch when --path is not given (E_GUESSABLE_PATH), and stays unlocked', async () => {
    const b = await batchOf([['us', '+1 202 555 0122']], { pushPath: '/hooks' });
    const d = deps({ randomPushPath: () => '/hooks/AAAAbbbbCCCCddddEEEEff' });
    const err = await runListenJob(options(b, { path: undefined }), d.deps).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DncError);
    expect(err).toMatchObject({ code: 'E_GUESSABLE_PATH', hint: expect.stringContaining('--path /hooks') });
    expect(d.events).toEqual([]);
    // Chosen with --path, it is served (with the warning event) and the batch is resolved.
    const served = deps({ randomPushPath: () => '/hooks/AAAAbbbbCCCCddddEEEEff' });
    const result = await runListenJob(options(b, { path: '/hooks' }), served.deps);
    expect(served.of('listening')[0]).toMatchObject({
      pushPath: '/hooks',
      from: 'flag',
      suggestedPath: '/hooks/AAAAbbbbCCCCddddEEEEff',
      batchPath: null,
    });
    expect(result.kind).toBe('done');
  });
});
