// The team's PostgreSQL server restarted (pg_ctl stop -m fast, then start) in the middle of a batch: a brief restart
// is ridden through (the batch exits 0, every row answered); a server that stays down longer than the bound
// (OUTAGE_MS, 15 s) stops the batch with E_STORE_UNAVAILABLE, and its rerun finishes. No number is charged twice
// (the sandbox's request log counts the lookups).
import { afterEach, describe, expect, it } from 'vitest';
import path from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { openStores, type Stores } from '../../src/stores/owner.js';
import { readCsvObjects } from '../batch/helpers.js';
import { spawnDnc } from '../helpers/cli.js';
import { sharedAnswer } from '../helpers/lookup-answers.js';
import { waitFor } from '../helpers/wait.js';
import { HAVE_POSTGRES, ownServer, postgresSkipped, sqlOn, type OwnServer } from '../helpers/postgres.js';
import { lookedUp, sandboxSettled, usNumbers, world, type World } from '../helpers/world.js';
import { teamMachine } from './helpers.js';

postgresSkipped('the team store restarted mid-batch');

const NUMBERS = usNumbers(500, 60);

/**
 * The server stopped (fast: sessions ended with 57P01), down for `ms`, started again. The time it is down is what the
 * tests are about: a fixed sleep (test/test-hygiene.test.ts lists it).
 */
async function outage(server: OwnServer, ms = 2_000): Promise<void> {
  await server.stop();
  await new Promise((r) => setTimeout(r, ms));
  await server.start();
}

/** Each number the sandbox was sent once, all of them; each row of the output answered. */
async function chargedOnceAndComplete(w: World, outputs = ['calls.results.csv']): Promise<void> {
  await sandboxSettled(w.sb);
  const counts = new Map<string, number>();
  for (const n of lookedUp(w.sb)) counts.set(n, (counts.get(n) ?? 0) + 1);
  expect([...counts.entries()].filter(([, n]) => n > 1)).toEqual([]);
  expect(counts.size).toBe(NUMBERS.length);
  for (const output of outputs) {
    const rows = readCsvObjects(path.join(w.dir, output));
    expect(rows.map((r) => r.phone).sort()).toEqual([...NUMBERS].sort());
    expect(rows.map((r) => r.dnc_result).filter((r) => r !== 'callable' && r !== 'do_not_call')).toEqual([]);
  }
}

describe.skipIf(!HAVE_POSTGRES)('the team store restarted mid-batch', () => {
  let w: World | undefined;
  let server: OwnServer | null = null;
  afterEach(async () => {
    await w?.cleanup();
    await server?.close();
    w = undefined;
    server = null;
  });

  async function batchUnderWay() {
    server = await ownServer();
    if (!server) return null;
    w = await world({ latencyMs: 300 });
    const list = w.file('calls.csv', ['phone', ...NUMBERS]);
    const env = teamMachine(w, 'm', server.url);
    const run = () => spawnDnc(['batch', list, '--concurrency', '4'], { env, cwd: w!.dir, timeoutMs: 120_000 });
    const batch = run();
    await waitFor(() => lookedUp(w!.sb).length >= 8, { ms: 30_000, what: 'eight lookups' });
    return { server, w, batch, run };
  }

  it('a brief restart is ridden through: exit 0, every row answered, every number charged once', async () => {
    const under = await batchUnderWay();
    if (!under) return;
    // Lookups in flight are answered while the server is down: their settlements wait for it.
    await outage(under.server);
    const first = await under.batch;
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).not.toMatch(/E_STORE|report this|TypeError/);
    await chargedOnceAndComplete(under.w);
  }, 300_000);

  it('two machines on one list ride through it together: both complete, every number charged once', async () => {
    server = await ownServer();
    if (!server) return;
    w = await world({ latencyMs: 300 });
    const list = w.file('calls.csv', ['phone', ...NUMBERS]);
    const runs = ['m1', 'm2'].map((m) =>
      spawnDnc(['batch', list, '--concurrency', '4', '-o', `${m}.csv`], {
        env: teamMachine(w!, m, server!.url),
        cwd: w!.dir,
        timeoutMs: 120_000,
      }),
    );
    await waitFor(() => lookedUp(w!.sb).length >= 8, { ms: 30_000, what: 'eight lookups' });
    // Whichever member reconnects first reaps: the other's lock is gone, its lease is not.
    await outage(server);
    for (const r of await Promise.all(runs)) {
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).not.toMatch(/E_STORE|report this|TypeError/);
    }
    await chargedOnceAndComplete(w, ['m1.csv', 'm2.csv']);
  }, 300_000);

  it('down beyond the bound: the batch stops with E_STORE_UNAVAILABLE; the rerun pays nothing twice', async () => {
    const under = await batchUnderWay();
    if (!under) return;
    const stoppedAt = Date.now();
    await under.server.stop();
    const first = await under.batch;
    const waited = Date.now() - stoppedAt;
    expect(first.code, first.stderr).toBe(6);
    expect(first.stderr).toMatch(/\[E_STORE_UNAVAILABLE\]/);
    expect(first.stderr).toMatch(/tried again for 1[45] s/);
    expect(first.stderr).not.toMatch(/report this|TypeError|at .*\.js:\d+/);
    // It waited for the server (the bound is 15 s), rather than stopping at the first refused connection.
    expect(waited).toBeGreaterThanOrEqual(13_000);
    // ... 15 s in all, not as much again for each statement it had under way.
    expect(waited).toBeLessThan(30_000);
    const sentBefore = lookedUp(under.w.sb).length;
    expect(sentBefore).toBeLessThan(NUMBERS.length);
    await under.server.start();
    const rerun = await under.run();
    expect(rerun.code, rerun.stderr).toBe(0);
    await chargedOnceAndComplete(under.w);
  }, 300_000);

  it('a member back within its lease keeps its sending claims, though a colleague reaps first', async () => {
    server = await ownServer();
    if (!server) return;
    const home = mkdtempSync(path.join(os.tmpdir(), 'dnc-restart-'));
    const opened: Stores[] = [];
    const machine = async (name: string) => {
      const stores = await openStores({ url: server!.url, from: '--store' }, {}, home);
      opened.push(stores);
      return (await stores.claims({ service: 'https://svc.example', apiKey: 'k' }, name, 60_000))!;
    };
    try {
      const [b, a] = [await machine('b'), await machine('a')];
      const [sent, reserved] = ['+12025556000', '+12025556001'];
      expect([...(await b.claim([sent, reserved], false)).values()].map((f) => f.kind)).toEqual(['claimed', 'claimed']);
      expect(await b.sending([sent])).toEqual(new Set([sent]));
      await a.claim(['+12025556002'], false); // a member too
      // Both members' sessions and advisory locks go with the old server; b tries to come back meanwhile.
      await outage(server);
      // a looks first (a reap): b's lock is gone with the old server, but its lease still runs.
      expect(await a.answers([sent, reserved])).toEqual(new Map());
      // b comes back: its membership and lock again, within a heartbeat.
      const locks = `SELECT 1 FROM pg_locks l JOIN dnc.members m ON l.objid = m.lock_key::oid
        WHERE l.locktype = 'advisory' AND l.granted AND m.claimant = 'b'`;
      await waitFor(async () => (await sqlOn(server!.url, locks)).length === 1, { ms: 20_000, what: "b's lock" });
      expect(await a.answers([sent, reserved])).toEqual(new Map());
      expect((await a.claim([sent, reserved], true)).get(sent)?.kind).toBe('held');
      // b's lookup answers: settled as b's, and a adopts it.
      await b.settle([[sent, { kind: 'answered', country: 'US', answer: sharedAnswer('callable', 'r-1') }]]);
      expect((await a.answers([sent])).get(sent)).toMatchObject({ kind: 'answered', claimant: 'b' });
    } finally {
      for (const s of opened) await s.close();
      rmSync(home, { recursive: true, force: true });
    }
  }, 120_000);
});
