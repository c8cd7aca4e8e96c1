// `dnc batch --join`: runners that help a scrub another one started, each a machine of its own (its own HOME) on one
// real PostgreSQL store, against the sandbox. What is asserted is what the service was sent (its request log), what
// each joiner says it did (--json), and the owner's output, read back as CSV.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readCsvObjects } from '../batch/helpers.js';
import { assertBuilt, BIN, spawnDnc } from '../helpers/cli.js';
import { freshDatabase, HAVE_POSTGRES, postgresSkipped, sqlOn } from '../helpers/postgres.js';
import { lookedUp, usNumbers, world, type World } from '../helpers/world.js';
import { waitFor } from '../helpers/wait.js';
import { counted, teamMachine } from './helpers.js';

postgresSkipped('runners joining a scrub');

let w: World | undefined;
afterEach(async () => {
  await w?.cleanup();
  w = undefined;
});

/** The id of the scrub the owner shares, once it is listed in the store. */
async function sharedScrubId(url: string): Promise<string> {
  let id: string | undefined;
  await waitFor(
    async () => {
      // (The owner makes the schema first: until then, the table is not there.)
      const rows = await sqlOn(url, "SELECT id FROM dnc.shared_scrubs WHERE state = 'running' AND numbers > 0").catch(
        () => [],
      );
      id = rows.length > 0 ? String(rows[0]!.id) : undefined;
      return id !== undefined;
    },
    { ms: 60_000, everyMs: 50, what: 'the owner to share its scrub' },
  );
  return id!;
}

/** Numbers the sandbox answers with a verdict (…99x are its scripted failures and invalid numbers). */
const verdictNumbers = (n: number) =>
  usNumbers(1000, n + 400)
    .filter((x) => !/99\d$/.test(x))
    .slice(0, n);

describe.skipIf(!HAVE_POSTGRES)('dnc batch --join', () => {
  it('an owner and 2 joiners on a 3,000-number list: each number charged once, the output complete', async () => {
    assertBuilt();
    const db = await freshDatabase();
    try {
      w = await world({ latencyMs: 100 });
      const numbers = verdictNumbers(3000);
      const list = w.file('list.csv', ['phone', ...numbers]);
      const out = path.join(w.dir, 'list.results.csv');
      const owner = spawnDnc(['batch', list, '-o', out, '--concurrency', '8'], {
        env: teamMachine(w, 'owner', db.url),
        cwd: w.dir,
        timeoutMs: 300_000,
      });
      const id = await sharedScrubId(db.url);
      const joiners = ['j1', 'j2'].map((m) =>
        spawnDnc(['--json', 'batch', '--join', id, '--concurrency', '8'], {
          env: teamMachine(w!, m, db.url),
          cwd: w!.dir,
          timeoutMs: 300_000,
        }),
      );
      const o = await owner;
      expect(o.code, o.stderr).toBe(0);
      expect(o.stderr).toContain(`dnc: scrub ${id}: another runner can help with \`dnc batch --join ${id}\``);
      const said = [];
      for (const j of await Promise.all(joiners)) {
        expect(j.code, j.stderr).toBe(0);
        said.push(JSON.parse(j.stdout) as { scrub: string; ended: string; sent: number; credits_used: number });
      }
      // Every number charged once, whoever sent it.
      const counts = counted(lookedUp(w.sb));
      expect(counts.size).toBe(3000);
      expect([...counts.entries()].filter(([, n]) => n > 1)).toEqual([]);
      // The owner's output is complete; the joiners' lookups are in it, reused with their correlation ids.
      const rows = readCsvObjects(out);
      expect(rows).toHaveLength(3000);
      for (const row of rows) expect(['callable', 'do_not_call', 'invalid']).toContain(row.dnc_result);
      const reused = rows.filter((r) => r.dnc_error?.startsWith('reused:'));
      for (const r of reused) {
        expect(r.dnc_credits).toBe('0');
        expect(r.dnc_error).toMatch(/another dnc of the team \(j[12]@/);
        expect(r.dnc_correlation_id).toMatch(/^[0-9a-f-]{36}$/);
      }
      // A real share: each joiner looked up a tenth of the list at least, and the owner wrote what they sent.
      for (const s of said) {
        expect(s).toMatchObject({ scrub: id });
        expect(['done', 'nothing_left']).toContain(s.ended);
        expect(s.sent, JSON.stringify(said)).toBeGreaterThanOrEqual(300);
      }
      expect(reused.length).toBe(said[0]!.sent + said[1]!.sent);
      // The scrub is over in the store, its numbers gone.
      expect(await sqlOn(db.url, 'SELECT state FROM dnc.shared_scrubs')).toEqual([{ state: 'done' }]);
      expect(await sqlOn(db.url, 'SELECT count(*)::int AS n FROM dnc.shared_numbers')).toEqual([{ n: 0 }]);
    } finally {
      await db.drop();
    }
  }, 400_000);

  it('a joiner killed with SIGKILL: the owner finishes, only its lookups in flight unanswered, none paid twice', async () => {
    assertBuilt();
    const db = await freshDatabase();
    try {
      w = await world({ latencyMs: 300 });
      const numbers = verdictNumbers(400);
      const list = w.file('list.csv', ['phone', ...numbers]);
      const out = path.join(w.dir, 'list.results.csv');
      const owner = spawnDnc(['batch', list, '-o', out, '--concurrency', '4'], {
        env: teamMachine(w, 'owner', db.url),
        cwd: w.dir,
        timeoutMs: 300_000,
      });
      const id = await sharedScrubId(db.url);
      const joiner = spawn(process.execPath, [BIN, 'batch', '--join', id, '--concurrency', '4'], {
        cwd: w.dir,
        env: { ...teamMachine(w, 'j1', db.url), PATH: process.env.PATH ?? '' },
        stdio: 'ignore',
      });
      const killed = new Promise((resolve) => joiner.on('exit', (_c, signal) => resolve(signal)));
      // Killed once it has sent some, while its lookups are in flight: claimed `sending` and seen by the service.
      const sentBy = async () => {
        const claimed = await sqlOn(
          db.url,
          "SELECT e164 FROM dnc.claims WHERE claimant LIKE 'j1@%' AND state = 'sending'",
        );
        const seen = new Set(lookedUp(w!.sb));
        return claimed.length >= 4 && claimed.every((r) => seen.has(String(r.e164)));
      };
      await waitFor(sentBy, { ms: 60_000, everyMs: 20, what: "the joiner's first lookups to reach the service" });
      joiner.kill('SIGKILL');
      expect(await killed).toBe('SIGKILL');
      const o = await owner;
      // Finished on its own: the joiner's sends without an answer are the only rows without a verdict (exit 7).
      expect(o.code, o.stderr).toBe(7);
      const rows = readCsvObjects(out);
      expect(rows).toHaveLength(400);
      const unanswered = rows.filter((r) => r.dnc_result === 'failed');
      expect(unanswered.length).toBeGreaterThan(0);
      expect(unanswered.length).toBeLessThanOrEqual(4);
      for (const r of unanswered) {
        expect(r).toMatchObject({ dnc_error_code: 'unanswered_send', dnc_credits: '0' });
        expect(r.dnc_error).toContain('another dnc of the team (j1@');
      }
      for (const r of rows.filter((x) => x.dnc_result !== 'failed'))
        expect(['callable', 'do_not_call', 'invalid']).toContain(r.dnc_result);
      const counts = counted(lookedUp(w.sb));
      // Every number reached the service but, at most, a send the joiner claimed as the kill came (written
      // unanswered_send, as a send that may have left must be).
      const neverSeen = numbers.filter((n) => !counts.has(n));
      for (const n of neverSeen) expect(unanswered.map((r) => r.phone)).toContain(n);
      expect([...counts.entries()].filter(([, n]) => n > 1)).toEqual([]);
    } finally {
      await db.drop();
    }
  }, 400_000);

  it('refuses an unknown scrub, an input beside --join, and the local store (exit 2), sending nothing', async () => {
    const db = await freshDatabase();
    try {
      w = await world();
      const env = teamMachine(w, 'j1', db.url);
      const unknown = await spawnDnc(['batch', '--join', '0123456789'], { env, cwd: w.dir, timeoutMs: 60_000 });
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toContain('dnc: error [E_SCRUB_UNKNOWN]: no scrub 0123456789 in the team store');
      const input = await spawnDnc(['batch', 'list.csv', '--join', '0123456789'], { env, cwd: w.dir });
      expect(input.code).toBe(2);
      expect(input.stderr).toContain('[E_USAGE]: --join takes no input (list.csv)');
      const flag = await spawnDnc(['batch', '--join', '0123456789', '-o', 'x.csv'], { env, cwd: w.dir });
      expect(flag.stderr).toContain('[E_USAGE]: --join takes no --output');
      const local = await spawnDnc(['batch', '--join', '0123456789'], {
        env: { ...env, DNC_STORE: undefined },
        cwd: w.dir,
      });
      expect(local.code).toBe(2);
      expect(local.stderr).toContain('[E_SCRUB_UNKNOWN]: --join needs a team store');
      expect(lookedUp(w.sb)).toEqual([]);
    } finally {
      await db.drop();
    }
  }, 120_000);
});
