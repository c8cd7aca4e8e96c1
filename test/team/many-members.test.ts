// A team at scale on one PostgreSQL store: 4 and 8 processes, each a machine of its own (its own HOME), scrub the same
// 3,000-number list at once against the sandbox, then all scrub it again later. What is asserted is what the service
// was sent (its request log), what the server counted (deadlocks), and every member's output, read back as CSV.
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readCsvObjects } from '../batch/helpers.js';
import { assertBuilt, spawnDnc } from '../helpers/cli.js';
import { freshDatabase, HAVE_POSTGRES, postgresSkipped, sqlOn } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';
import { lookedUp, usNumbers, world, type World } from '../helpers/world.js';
import { counted, teamMachine } from './helpers.js';

postgresSkipped('many members on one list');

let w: World | undefined;
afterEach(async () => {
  await w?.cleanup();
  w = undefined;
});

/** Deadlocks the server detected in the database (retried or not: none should happen at all). */
async function deadlocks(url: string, name: string): Promise<number> {
  // A session's statistics reach the server's as it ends, before it leaves pg_stat_activity: once the members'
  // sessions are all gone, their deadlocks are counted.
  const others = 'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()';
  await waitFor(async () => (await sqlOn(url, others, [name]))[0]?.n === 0, {
    everyMs: 50,
    what: "the members' sessions to end",
  });
  const rows = await sqlOn(url, 'SELECT deadlocks::int AS n FROM pg_stat_database WHERE datname = $1', [name]);
  return Number(rows[0]?.n ?? 0);
}

describe.skipIf(!HAVE_POSTGRES)('many members on one 3,000-number list', () => {
  for (const members of [4, 8]) {
    it(`${members} members at once, then all again an hour later: every number paid once, outputs agree`, async () => {
      assertBuilt();
      const db = await freshDatabase();
      try {
        w = await world({ latencyMs: 20 });
        // Numbers the sandbox answers with a verdict (…99x are its scripted failures and invalid numbers).
        const numbers = usNumbers(1000, 3400)
          .filter((n) => !/99\d$/.test(n))
          .slice(0, 3000);
        const names = Array.from({ length: members }, (_, i) => `m${i}`);
        const lists = names.map((m) => w!.file(`${m}.csv`, ['phone', ...numbers]));
        const scrub = (out: string) =>
          Promise.all(
            names.map((m, i) =>
              spawnDnc(['batch', lists[i]!, '-o', path.join(w!.dir, `${m}.${out}.csv`), '--concurrency', '16'], {
                env: teamMachine(w!, m, db.url),
                cwd: w!.dir,
                timeoutMs: 300_000,
              }),
            ),
          );
        const first = await scrub('first');
        for (const r of first) expect(r.code, r.stderr).toBe(0);
        for (const r of first) expect(r.stderr).not.toMatch(/deadlock|E_STORE/);
        let counts = counted(lookedUp(w.sb));
        expect(counts.size).toBe(3000);
        expect([...counts.entries()].filter(([, n]) => n > 1)).toEqual([]);
        // Every member's output is complete, and they agree: each number's verdict and correlation id are one.
        const payer = new Map<string, { result: string; id: string }>();
        let reused = 0;
        for (const m of names) {
          const rows = readCsvObjects(path.join(w.dir, `${m}.first.csv`));
          expect(rows).toHaveLength(3000);
          for (const row of rows) {
            expect(['callable', 'do_not_call', 'invalid']).toContain(row.dnc_result);
            const seen = payer.get(row.phone!);
            if (seen) expect({ result: row.dnc_result, id: row.dnc_correlation_id }).toEqual(seen);
            else payer.set(row.phone!, { result: row.dnc_result!, id: row.dnc_correlation_id! });
            if (row.dnc_error?.startsWith('reused:')) {
              reused++;
              expect(row.dnc_credits).toBe('0');
              expect(row.dnc_correlation_id).toMatch(/^[0-9a-f-]{36}$/);
            }
          }
        }
        expect(reused).toBe(3000 * (members - 1));
        // An hour later (older than any lease): all scrub the list again, and pay for nothing.
        await sqlOn(db.url, "UPDATE dnc.claims SET settled_at = settled_at - interval '1 hour'");
        const again = await scrub('again');
        for (const r of again) expect(r.code, r.stderr).toBe(0);
        counts = counted(lookedUp(w.sb));
        expect(counts.size).toBe(3000);
        expect([...counts.values()].every((n) => n === 1)).toBe(true);
        for (const m of names) {
          const rows = readCsvObjects(path.join(w.dir, `${m}.again.csv`));
          expect(rows).toHaveLength(3000);
          for (const row of rows) {
            expect({ result: row.dnc_result, id: row.dnc_correlation_id }).toEqual(payer.get(row.phone!));
            expect(row.dnc_credits).toBe('0');
            expect(row.dnc_error).toMatch(/^reused: checked \S+ by another dnc of the team/);
          }
        }
        expect(await deadlocks(db.url, db.name)).toBe(0);
      } finally {
        await db.drop();
      }
    }, 600_000);
  }
});
