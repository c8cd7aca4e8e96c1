// --resend-unanswered with a team store: the numbers a killed run sent without an answer are recovered from the store
// first (a colleague may have answered them since), and only those no one answered are paid again. Separate HOME
// folders stand for machines on one real PostgreSQL store, against the sandbox; what counts is its request log.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readCsvObjects } from '../batch/helpers.js';
import { assertBuilt, BIN, spawnDnc } from '../helpers/cli.js';
import { freshDatabase, HAVE_POSTGRES, postgresSkipped } from '../helpers/postgres.js';
import { lookedUp, usNumbers, world, type World } from '../helpers/world.js';
import { waitFor } from '../helpers/wait.js';
import { counted, teamMachine } from './helpers.js';

postgresSkipped('--resend-unanswered with a team store');

let w: World | undefined;
afterEach(async () => {
  await w?.cleanup();
  w = undefined;
});

describe.skipIf(!HAVE_POSTGRES)('--resend-unanswered with a team store', () => {
  it('takes what a colleague answered since from the store, and sends again only what no one answered', async () => {
    assertBuilt();
    const db = await freshDatabase();
    try {
      w = await world({ latencyMs: 1500 });
      const numbers = usNumbers(500, 8);
      const listA = w.file('a.csv', ['phone', ...numbers]);
      const listB = w.file('b.csv', ['phone', ...numbers.slice(0, 2)]);
      const flags = ['--concurrency', '4'];
      // a is killed with 4 lookups in flight: they may have been charged, their answers never came.
      const a = spawn(process.execPath, [BIN, 'batch', listA, ...flags], {
        cwd: w.dir,
        env: { ...teamMachine(w, 'a', db.url), PATH: process.env.PATH ?? '' },
        stdio: 'ignore',
      });
      const killed = new Promise((resolve) => a.on('exit', (_c, signal) => resolve(signal)));
      await waitFor(() => lookedUp(w!.sb).length >= 4, { ms: 20_000, what: "a's 4 lookups to reach the service" });
      const inFlight = lookedUp(w.sb);
      expect(inFlight).toEqual(numbers.slice(0, 4));
      a.kill('SIGKILL');
      expect(await killed).toBe('SIGKILL');
      // b, asked to, looks two of them up again and answers them for the team.
      const b = await spawnDnc(['batch', listB, ...flags, '--resend-unanswered'], {
        env: teamMachine(w, 'b', db.url),
        cwd: w.dir,
        timeoutMs: 60_000,
      });
      expect(b.code, b.stderr).toBe(0);
      const byB = readCsvObjects(path.join(w.dir, 'b.results.csv'));
      // a, rerun with --resend-unanswered: b's two answers come from the store; only the other two are sent again.
      const again = await spawnDnc(['batch', listA, ...flags, '--resend-unanswered'], {
        env: teamMachine(w, 'a', db.url),
        cwd: w.dir,
        timeoutMs: 60_000,
      });
      expect(again.code, again.stderr).toBe(0);
      const counts = counted(lookedUp(w.sb));
      expect(Object.fromEntries(counts)).toEqual(Object.fromEntries(numbers.map((n, i) => [n, i < 4 ? 2 : 1])));
      const rows = readCsvObjects(path.join(w.dir, 'a.results.csv'));
      for (const [i, row] of rows.slice(0, 2).entries()) {
        expect(row.dnc_correlation_id).toBe(byB[i]!.dnc_correlation_id);
        expect(row.dnc_credits).toBe('0');
        expect(row.dnc_error).toMatch(/^reused: checked \S+ by another dnc of the team/);
      }
      for (const row of rows) expect(['callable', 'do_not_call', 'invalid']).toContain(row.dnc_result);
    } finally {
      await db.drop();
    }
  }, 120_000);
});
