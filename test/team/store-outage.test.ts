// The team's PostgreSQL server down past the bound (15 s) under four members scrubbing one list: each stops (exit 6),
// the answers of the lookups it had in flight kept in its journal only. Once the server is back, every member's rerun
// settles those answers in the store before it claims anything, and a row its colleague wrote unanswered from such a
// claim is asked of the store again by the colleague's next rerun: in the end no row says "stopped before the answer
// came" for a number the sandbox answered, and no number is charged twice. (Down until every member has stopped,
// about 15 s, rather than 60: past the bound, the members stop the same way whatever the length.)
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCsvObjects } from '../batch/helpers.js';
import { spawnDnc } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';
import { HAVE_POSTGRES, ownServer, postgresSkipped, sqlOn, type OwnServer } from '../helpers/postgres.js';
import { lookedUp, sandboxSettled, usNumbers, world, type World } from '../helpers/world.js';
import { counted, teamMachine } from './helpers.js';

postgresSkipped('the team store down past the bound');

const MEMBERS = 4;
const NUMBERS = usNumbers(3000, 120);

describe.skipIf(!HAVE_POSTGRES)('the team store down past the bound under four members', () => {
  let server: OwnServer | null = null;
  let w: World | undefined;
  beforeAll(async () => {
    server = await ownServer();
  }, 120_000);
  afterAll(async () => {
    await w?.cleanup();
    await server?.close();
  });

  it('the reruns settle what each kept: no answered number written unanswered, none charged twice', async () => {
    if (!server) return;
    w = await world({ latencyMs: 300 });
    await sqlOn(server.url, 'CREATE DATABASE outage');
    const store = server.url.replace(/\/postgres$/, '/outage');
    const list = w.file('calls.csv', ['phone', ...NUMBERS]);
    const all = () =>
      Promise.all(
        Array.from({ length: MEMBERS }, (_, i) =>
          spawnDnc(['batch', list, '--concurrency', '2', '-o', `m${i}.csv`], {
            env: teamMachine(w!, `m${i}`, store),
            cwd: w!.dir,
            timeoutMs: 180_000,
          }),
        ),
      );
    const first = all();
    await waitFor(() => lookedUp(w!.sb).length >= 16, { ms: 60_000, what: 'sixteen lookups' });
    await server.stop();
    for (const r of await first) {
      expect(r.code, r.stderr).toBe(6);
      expect(r.stderr).toContain('E_STORE_UNAVAILABLE');
    }
    await server.start();
    const unanswered = () =>
      Array.from({ length: MEMBERS }, (_, i) =>
        readCsvObjects(path.join(w!.dir, `m${i}.csv`))
          .filter((r) => r.dnc_error_code === 'unanswered_send')
          .map((r) => `m${i}: ${r.phone}`),
      ).flat();
    // Every member reruns at once: each settles what its journal kept first. A colleague that claimed one of those
    // numbers before its rerun had settled it writes it unanswered (exit 7: rows without a verdict), and asks again
    // on its next rerun.
    for (const r of await all()) expect([0, 7], r.stderr).toContain(r.code);
    const afterFirst = unanswered();
    console.log(`after the first reruns, ${afterFirst.length} row(s) unanswered: ${afterFirst.join(', ')}`);
    for (const r of await all()) expect(r.code, r.stderr).toBe(0);
    expect(unanswered(), `after the first reruns: ${afterFirst.join(', ')}`).toEqual([]);
    await sandboxSettled(w.sb);
    const counts = counted(lookedUp(w.sb));
    expect([...counts.entries()].filter(([, n]) => n > 1)).toEqual([]);
    expect(counts.size).toBe(NUMBERS.length);
    for (let i = 0; i < MEMBERS; i++) {
      const rows = readCsvObjects(path.join(w.dir, `m${i}.csv`));
      expect(rows.map((r) => r.dnc_result).filter((r) => r !== 'callable' && r !== 'do_not_call')).toEqual([]);
    }
    // An independent reader: every claim of the store is settled with its answer.
    const claims = await sqlOn(store, `SELECT state, count(*)::int AS n FROM dnc.claims GROUP BY state`);
    expect(claims).toEqual([{ state: 'answered', n: NUMBERS.length }]);
  }, 600_000);
});
