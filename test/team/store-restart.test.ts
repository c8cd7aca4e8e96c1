// The team's PostgreSQL server restarted (pg_ctl stop -m fast, then start) in the middle of a batch: the batch either
// rides through or stops with a typed E_STORE_* error, and its rerun finishes; no number is charged twice (the
// sandbox's request log counts the lookups).
import { afterAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { readCsvObjects } from '../batch/helpers.js';
import { spawnDnc } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';
import { HAVE_POSTGRES, ownServer, postgresSkipped } from '../helpers/postgres.js';
import { lookedUp, usNumbers, world, type World } from '../helpers/world.js';
import { teamMachine } from './helpers.js';

postgresSkipped('the team store restarted mid-batch');

describe.skipIf(!HAVE_POSTGRES)('the team store restarted mid-batch', () => {
  let w: World | undefined;
  afterAll(async () => {
    await w?.cleanup();
  });

  it('rides through or stops with E_STORE_*; the rerun finishes; every number charged once', async () => {
    const server = await ownServer();
    if (!server) return;
    try {
      w = await world({ latencyMs: 300 });
      const numbers = usNumbers(500, 60);
      const list = w.file('calls.csv', ['phone', ...numbers]);
      const env = teamMachine(w, 'm', server.url);
      const batch = spawnDnc(['batch', list, '--concurrency', '4'], { env, cwd: w.dir, timeoutMs: 120_000 });
      await waitFor(() => lookedUp(w!.sb).length >= 8, { ms: 30_000, what: 'eight lookups' });
      await server.stop();
      await server.start();
      const first = await batch;
      if (first.code !== 0) {
        expect(first.code, first.stderr).toBe(6);
        expect(first.stderr).toMatch(/\[E_STORE_[A-Z_]+\]/);
        expect(first.stderr).not.toMatch(/report this|TypeError|at .*\.js:\d+/);
        const rerun = await spawnDnc(['batch', list, '--concurrency', '4'], { env, cwd: w.dir, timeoutMs: 120_000 });
        expect(rerun.code, rerun.stderr).toBe(0);
      }
      const sent = lookedUp(w.sb);
      const counts = new Map<string, number>();
      for (const n of sent) counts.set(n, (counts.get(n) ?? 0) + 1);
      expect([...counts.entries()].filter(([, n]) => n > 1)).toEqual([]);
      expect(counts.size).toBe(60);
      const rows = readCsvObjects(path.join(w.dir, 'calls.results.csv'));
      expect(rows.map((r) => r.dnc_result).filter((r) => r !== 'callable' && r !== 'do_not_call')).toEqual([]);
    } finally {
      await server.close();
    }
  }, 300_000);
});
