// The team's PostgreSQL server crashing (pg_ctl stop -m immediate: no checkpoint, every session cut) under four members
// scrubbing one list, down 5 s, then started again, five times over. A claim is on the server's disk before its
// request leaves, so recovery loses none that stands for a lookup sent: no colleague pays for it again. The sandbox's
// request log counts what was charged.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCsvObjects } from '../batch/helpers.js';
import { spawnDnc } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';
import { HAVE_POSTGRES, ownServer, postgresSkipped, sqlOn, type OwnServer } from '../helpers/postgres.js';
import { lookedUp, sandboxSettled, usNumbers, world } from '../helpers/world.js';
import { counted, teamMachine } from './helpers.js';

postgresSkipped('the team store crashing mid-batch');

const MEMBERS = 4;
const TRIALS = 5;

describe.skipIf(!HAVE_POSTGRES)('the team store crashing mid-batch under four members', () => {
  let server: OwnServer | null = null;
  beforeAll(async () => {
    server = await ownServer();
  }, 120_000);
  afterAll(async () => {
    await server?.close();
  });

  it(`${TRIALS} crashes of 5 s mid-run: no number charged twice, every member completes`, async () => {
    if (!server) return;
    const twice: string[] = [];
    for (let trial = 0; trial < TRIALS; trial++) {
      const w = await world({ latencyMs: 300 });
      try {
        const numbers = usNumbers(1000 + trial * 200, 120);
        await sqlOn(server.url, `CREATE DATABASE crash_${trial}`);
        const store = server.url.replace(/\/postgres$/, `/crash_${trial}`);
        const list = w.file('calls.csv', ['phone', ...numbers]);
        const runs = Array.from({ length: MEMBERS }, (_, i) =>
          spawnDnc(['batch', list, '--concurrency', '2', '-o', `m${i}.csv`], {
            env: teamMachine(w, `m${i}`, store),
            cwd: w.dir,
            timeoutMs: 180_000,
          }),
        );
        await waitFor(() => lookedUp(w.sb).length >= 16, { ms: 60_000, what: 'sixteen lookups' });
        // The time it is down is what the test is about: a fixed sleep (test/test-hygiene.test.ts lists it).
        await server.crash();
        await new Promise((r) => setTimeout(r, 5_000));
        await server.start();
        const done = await Promise.all(runs);
        await sandboxSettled(w.sb);
        const counts = counted(lookedUp(w.sb));
        twice.push(...[...counts.entries()].filter(([, n]) => n > 1).map(([e]) => `trial ${trial}: ${e}`));
        for (const r of done) {
          expect(r.code, r.stderr).toBe(0);
          expect(r.stderr).not.toMatch(/E_STORE|report this|TypeError/);
        }
        for (let i = 0; i < MEMBERS; i++) {
          const rows = readCsvObjects(path.join(w.dir, `m${i}.csv`));
          expect(rows.map((r) => r.dnc_result).filter((r) => r !== 'callable' && r !== 'do_not_call')).toEqual([]);
        }
        expect(counts.size).toBe(numbers.length);
      } finally {
        await w.cleanup();
      }
    }
    expect(twice).toEqual([]);
  }, 900_000);
});
