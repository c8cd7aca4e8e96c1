// The team store's connection pool when the server goes away between two statements of a transaction: a typed error
// for the statement that follows once the server stayed away past the bound, never an 'error' event that ends the
// process; and which failures are tried again, for how long (ridingOutages, with a clock of the test's own).
import { describe, expect, it } from 'vitest';
import { storeConnection } from '../../src/stores/postgres/connection.js';
import { OUTAGE_MS, ridingOutages, StorePool, type Outage, type Stage } from '../../src/stores/postgres/pool.js';
import { ownServer } from '../helpers/postgres.js';
import { nextEvent } from '../helpers/wait.js';

describe('a session the server ends between two statements', () => {
  it('fails the next statement with E_STORE_UNAVAILABLE (down past the bound); the process goes on', async () => {
    const server = await ownServer();
    if (!server) return; // (no PostgreSQL programs: test/team says the half was skipped)
    const pool = await StorePool.open(storeConnection(server.url, {}, '/nonexistent'));
    try {
      const failed = pool.transaction('testing', async (c) => {
        await c.query('SELECT 1');
        const dropped = nextEvent(c, 'error', () => true, { what: "the server's terminating connection" });
        await server.stop();
        await dropped; // it arrived while no statement was running
        await c.query('SELECT 2');
      });
      await expect(failed).rejects.toMatchObject({ code: 'E_STORE_UNAVAILABLE' });
      await server.start();
      // The broken session is not handed out again.
      expect(await pool.query('testing', 'SELECT 3 AS n')).toEqual([{ n: 3 }]);
    } finally {
      await pool.close();
      await server.close();
    }
  }, 60_000);
});

describe('statements tried again while the server is away', () => {
  const lost = (code: string, message = 'x') => Object.assign(new Error(message), { code });
  /** A clock that moves only when slept on; the pauses it was asked for. */
  const fakeClock = () => {
    let now = 0;
    const pauses: number[] = [];
    return {
      pauses,
      clock: { now: () => now, random: () => 0.5, sleep: async (ms: number) => void pauses.push((now += ms) && ms) },
    };
  };
  /** An attempt failing with `errors` in turn (at `stage`), then answering 'ok'; its calls counted. */
  const failing = (stage: Stage, ...errors: Error[]) => {
    const calls = { n: 0 };
    const attempt = async (at: (s: Stage) => void) => {
      at(stage);
      const err = errors[calls.n++];
      if (err) throw err;
      return 'ok';
    };
    return { calls, attempt };
  };

  it('a statement the server answered with a shutdown error, or a connection refused, is run again', async () => {
    const { clock, pauses } = fakeClock();
    const { calls, attempt } = failing('sent', lost('57P01'), lost('57P03'), lost('ECONNREFUSED'), lost('08006'));
    expect(await ridingOutages(attempt, false, { since: null }, clock)).toBe('ok');
    expect(calls.n).toBe(5);
    expect(pauses).toEqual([100, 200, 400, 800]); // doubled, jittered (random 0.5: none)
  });

  it('a statement whose connection went unanswered is run again only when idempotent', async () => {
    const reset = () => failing('sent', lost('ECONNRESET'));
    const once = reset();
    await expect(ridingOutages(once.attempt, false, { since: null }, fakeClock().clock)).rejects.toMatchObject({
      code: 'ECONNRESET',
    });
    expect(once.calls.n).toBe(1);
    const twice = reset();
    expect(await ridingOutages(twice.attempt, true, { since: null }, fakeClock().clock)).toBe('ok');
    expect(twice.calls.n).toBe(2);
  });

  it('a transaction lost before its COMMIT is run again; one lost at its COMMIT only when idempotent', async () => {
    const open = failing('open', lost('ECONNRESET', 'Connection terminated unexpectedly'));
    expect(await ridingOutages(open.attempt, false, { since: null }, fakeClock().clock)).toBe('ok');
    const commit = failing('committing', lost('57P01'));
    await expect(ridingOutages(commit.attempt, false, { since: null }, fakeClock().clock)).rejects.toMatchObject({
      code: '57P01',
    });
    expect(commit.calls.n).toBe(1);
    const settle = failing('committing', lost('57P01'));
    expect(await ridingOutages(settle.attempt, true, { since: null }, fakeClock().clock)).toBe('ok');
  });

  it('tries for at most OUTAGE_MS since the store went away, in all; other failures not at all', async () => {
    const { clock, pauses } = fakeClock();
    const outage: Outage = { since: null };
    const down = failing('sent', ...Array.from({ length: 100 }, () => lost('ECONNREFUSED')));
    const err = (await ridingOutages(down.attempt, true, outage, clock).catch((e: unknown) => e)) as {
      outageMs: number;
    };
    expect(err.outageMs).toBeLessThanOrEqual(OUTAGE_MS);
    expect(err.outageMs).toBeGreaterThan(OUTAGE_MS - 2_000);
    expect(Math.max(...pauses)).toBe(2_000);
    // The next statement, the store still away: what remains of the bound, not another OUTAGE_MS.
    const next = failing('sent', ...Array.from({ length: 100 }, () => lost('ECONNREFUSED')));
    const again = (await ridingOutages(next.attempt, true, outage, clock).catch((e: unknown) => e)) as {
      outageMs: number;
    };
    expect(again.outageMs).toBeLessThanOrEqual(OUTAGE_MS);
    expect(next.calls.n).toBeLessThanOrEqual(6);
    const other = failing('sent', lost('23505'));
    await expect(ridingOutages(other.attempt, true, { since: null }, clock)).rejects.toMatchObject({ code: '23505' });
    expect(other.calls.n).toBe(1);
  });
});
