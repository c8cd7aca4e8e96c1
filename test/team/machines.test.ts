// A team on one PostgreSQL store: separate HOME folders stand for separate machines, each running the built dnc as
// a process of its own against the sandbox. What is asserted is what the service was sent (its request log).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readCsvObjects } from '../batch/helpers.js';
import { assertBuilt, BIN, runDnc, spawnDnc } from '../helpers/cli.js';
import { freePort, PUSH_PATH } from '../listen/helpers.js';
import { startSandbox } from '../../src/sandbox/index.js';
import { freshDatabase, HAVE_POSTGRES, ownServer, postgresSkipped, sqlOn } from '../helpers/postgres.js';
import { lookedUp, lookedUpAtLeast, usNumbers, world, type World } from '../helpers/world.js';
import { teamMachine } from './helpers.js';

postgresSkipped('several machines on one team store');

let w: World | undefined;
afterEach(async () => {
  await w?.cleanup();
  w = undefined;
});

/** How many times the sandbox was sent each number. */
const sends = (numbers: string[]) => {
  const counts = new Map<string, number>();
  for (const n of numbers) counts.set(n, (counts.get(n) ?? 0) + 1);
  return counts;
};

/** The environment of one machine: a home of its own, the team's store, the service. */
const machine = (name: string, store: string) => teamMachine(w!, name, store);

describe('a team store that cannot be reached at start', () => {
  it('batch and check fail before any lookup (exit 6), the URL shown without its password', async () => {
    assertBuilt();
    w = await world();
    const env = machine('a', 'postgresql://dnc:s3cret-pw@127.0.0.1:1/dnc?connect_timeout=2');
    const list = w.file('calls.csv', ['phone', '+12025550101']);
    const batch = await spawnDnc(['batch', list], { env, cwd: w.dir, timeoutMs: 30_000 });
    const check = await spawnDnc(['check', '+12025550102'], { env, cwd: w.dir, timeoutMs: 30_000 });
    for (const r of [batch, check]) {
      expect(r.code, r.stderr).toBe(6);
      expect(r.stderr).toContain('[E_STORE_UNAVAILABLE]');
      expect(r.stderr).toContain('127.0.0.1:1');
      expect(r.stdout + r.stderr).not.toContain('s3cret-pw');
    }
    expect(lookedUp(w.sb)).toEqual([]);
    expect(existsSync(path.join(w.dir, 'calls.results.csv'))).toBe(false);
  });
});

describe.skipIf(!HAVE_POSTGRES)('machines of a team on one PostgreSQL store', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  beforeAll(async () => {
    assertBuilt();
    db = await freshDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('four processes scrub overlapping lists at the same time: every number is sent, and charged, once', async () => {
    w = await world({ latencyMs: 100 });
    const lists = [0, 1, 2, 3].map((i) => w!.file(`list-${i}.csv`, ['phone', ...usNumbers(100 + i * 10, 40)]));
    const runs = await Promise.all(
      lists.map((list, i) =>
        spawnDnc(['batch', list, '--concurrency', '8'], {
          env: machine(`m${i}`, db.url),
          cwd: w!.dir,
          timeoutMs: 60_000,
        }),
      ),
    );
    for (const r of runs) expect(r.code, r.stderr).toBe(0);
    const counts = sends(lookedUp(w.sb));
    expect(counts.size).toBe(70);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    // The service's own count of charges agrees: 70 lookups paid, not 160.
    const charged = w.sb.account().creditsUsed;
    const perLookup = charged / 70;
    expect(Number.isInteger(perLookup)).toBe(true);
    // Every row of every output has a verdict; a number another machine paid for says so, at no credit.
    let reused = 0;
    for (const list of lists) {
      for (const row of readCsvObjects(list.replace(/\.csv$/, '.results.csv'))) {
        expect(['callable', 'do_not_call']).toContain(row.dnc_result);
        if (row.dnc_error?.startsWith('reused:')) {
          reused++;
          expect(row.dnc_credits).toBe('0');
          expect(row.dnc_correlation_id).toMatch(/^[0-9a-f-]{36}$/);
        }
      }
    }
    expect(reused).toBe(160 - 70);
  });

  it('an opt-out added on one machine is honoured by the next check and batch on another, with no lookup sent', async () => {
    w = await world();
    const alice = machine('alice', db.url);
    const bob = machine('bob', db.url);
    const add = await spawnDnc(['suppress', 'add', '+12025550777', '--reason', 'asked on a call'], {
      env: alice,
      cwd: w.dir,
    });
    expect(add.code, add.stderr).toBe(0);
    const check = await spawnDnc(['check', '+12025550777'], { env: bob, cwd: w.dir });
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toContain('DO NOT CALL');
    expect(check.stdout).toContain('internal:team');
    expect(check.stdout).toContain('by alice@');
    const list = w.file('calls.csv', ['phone', '+12025550777', '+12025550100']);
    const batch = await spawnDnc(['batch', list], { env: bob, cwd: w.dir });
    expect(batch.code, batch.stderr).toBe(0);
    const rows = readCsvObjects(path.join(w.dir, 'calls.results.csv'));
    expect(rows[0]).toMatchObject({ dnc_result: 'do_not_call', dnc_list_source: 'internal:team', dnc_credits: '0' });
    expect(lookedUp(w.sb)).toEqual(['+12025550100']);
    // The audit log is the team's: bob sees alice's entry.
    const log = await spawnDnc(['--json', 'suppress', 'log'], { env: bob, cwd: w.dir });
    expect(log.code, log.stderr).toBe(0);
    expect(JSON.parse(log.stdout.trim().split('\n').at(-1)!)).toMatchObject({
      e164: '+12025550777',
      action: 'suppress',
    });
  });

  it('an opt-out recorded on another machine while a batch runs is honoured before every later send', async () => {
    w = await world({ latencyMs: 100 });
    const numbers = usNumbers(1200, 120).filter((n) => !/99\d$/.test(n));
    const list = w.file('running.csv', ['phone', ...numbers]);
    const batch = spawnDnc(['batch', list, '--concurrency', '4'], {
      env: machine('runner', db.url),
      cwd: w.dir,
      timeoutMs: 60_000,
    });
    await lookedUpAtLeast(w.sb, 8);
    // The last ten of the list, recorded by a colleague a moment after the batch began.
    const late = numbers.slice(-10);
    const add = await spawnDnc(['suppress', 'add', ...late, '--reason', 'asked on a call'], {
      env: machine('desk', db.url),
      cwd: w.dir,
    });
    expect(add.code, add.stderr).toBe(0);
    expect(lookedUp(w.sb).filter((n) => late.includes(n))).toEqual([]);
    const r = await batch;
    expect(r.code, r.stderr).toBe(0);
    expect(lookedUp(w.sb).filter((n) => late.includes(n))).toEqual([]);
    const rows = readCsvObjects(path.join(w.dir, 'running.results.csv'));
    for (const n of late)
      expect(rows.find((row) => row.phone === n)).toMatchObject({
        dnc_result: 'do_not_call',
        dnc_list_source: 'internal:team',
        dnc_credits: '0',
      });
  }, 60_000);

  it("the team's verdicts are reused within --reuse-within on another machine, as its own would be", async () => {
    w = await world();
    const numbers = usNumbers(300, 6);
    const first = w.file('first.csv', ['phone', ...numbers]);
    const a = await spawnDnc(['batch', first], { env: machine('a', db.url), cwd: w.dir });
    expect(a.code, a.stderr).toBe(0);
    const sent = lookedUp(w.sb).length;
    const again = w.file('again.csv', ['phone', ...numbers, '+12025550399']);
    const b = await spawnDnc(['batch', again, '--reuse-within', '1d'], { env: machine('b', db.url), cwd: w.dir });
    expect(b.code, b.stderr).toBe(0);
    // Only the number a never checked was sent.
    expect(lookedUp(w.sb).slice(sent)).toEqual(['+12025550399']);
    const theirs = readCsvObjects(path.join(w.dir, 'first.results.csv'));
    const rows = readCsvObjects(path.join(w.dir, 'again.results.csv'));
    for (const [i, row] of rows.slice(0, 6).entries()) {
      expect(row.dnc_correlation_id).toBe(theirs[i]!.dnc_correlation_id);
      expect(row.dnc_credits).toBe('0');
      expect(row.dnc_error).toMatch(
        // The role that wrote the verdict, stamped by the store (no machine names it).
        /^reused: checked \S+ by an earlier lookup \(written by role \S+\) \(--reuse-within 1d\)/,
      );
    }
  });

  it('dnc check of a number another machine is looking up waits for that lookup and shows its answer, sending nothing', async () => {
    w = await world({ latencyMs: 1500 });
    const list = w.file('one.csv', ['phone', '+12025550911']);
    const batch = spawnDnc(['batch', list], { env: machine('a', db.url), cwd: w.dir, timeoutMs: 30_000 });
    await lookedUpAtLeast(w.sb, 1);
    const check = await spawnDnc(['--json', 'check', '+12025550911'], {
      env: machine('b', db.url),
      cwd: w.dir,
      timeoutMs: 30_000,
    });
    expect(check.code, check.stderr).toBe(0);
    const shown = JSON.parse(check.stdout) as Record<string, unknown>;
    expect(shown).toMatchObject({ reused: true, credit_cost: 0, phone_number: '+12025550911' });
    expect(String(shown.reused_from)).toMatch(/^a@.* pid \d+ run /);
    expect((await batch).code).toBe(0);
    const row = readCsvObjects(path.join(w.dir, 'one.results.csv'))[0]!;
    expect(shown.correlation_id).toBe(row.dnc_correlation_id);
    expect(lookedUp(w.sb)).toEqual(['+12025550911']);
  });

  it('one killed with SIGKILL while holding claims: the others finish, its sends are unanswered, never paid twice unless asked', async () => {
    w = await world({ latencyMs: 1500 });
    const numbers = usNumbers(500, 12);
    const listA = w.file('a.csv', ['phone', ...numbers.slice(0, 8)]);
    const listB = w.file('b.csv', ['phone', ...numbers]);
    const listC = w.file('c.csv', ['phone', ...numbers.slice(2)]);
    // The default --timeout and --retries: a lookup may take 159 s, which the others no longer wait for.
    const flags = ['--concurrency', '4'];
    const a = spawn(process.execPath, [BIN, 'batch', listA, ...flags], {
      cwd: w.dir,
      env: { ...machine('a', db.url), PATH: process.env.PATH ?? '' },
      stdio: 'ignore',
    });
    const killed = new Promise((resolve) => a.on('exit', (_c, signal) => resolve(signal)));
    await lookedUpAtLeast(w.sb, 4);
    const inFlight = lookedUp(w.sb);
    expect(inFlight).toHaveLength(4);
    // The others start while a's claims stand; then a is killed before its answers come.
    const others = [
      spawnDnc(['batch', listB, ...flags], { env: machine('b', db.url), cwd: w.dir, timeoutMs: 60_000 }),
      spawnDnc(['batch', listC, ...flags], { env: machine('c', db.url), cwd: w.dir, timeoutMs: 60_000 }),
    ];
    // Deliberate: a moment for them to start, well within the 1.5 s a's answers take (waiting for them to send a
    // number of their own could outlast it on a loaded machine, and a would no longer die with sends unanswered).
    await new Promise((r) => setTimeout(r, 300));
    a.kill('SIGKILL');
    expect(await killed).toBe('SIGKILL');
    const killedAt = Date.now();
    const [b, c] = await Promise.all(others);
    // Within one member lease (15 s) and a heartbeat (5 s) of the kill, lookups of their own (1.5 s each) included.
    expect(Date.now() - killedAt).toBeLessThan(20_000);
    // Finished on their own; the numbers a sent without an answer are unanswered sends (exit 7: rows without a verdict).
    for (const r of [b, c]) expect(r.code, r.stderr).toBe(7);
    const counts = sends(lookedUp(w.sb));
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expect(counts.size).toBe(12);
    const rowsB = readCsvObjects(path.join(w.dir, 'b.results.csv'));
    for (const n of inFlight) {
      const row = rowsB.find((r) => r.phone === n)!;
      expect(row).toMatchObject({ dnc_result: 'failed', dnc_error_code: 'unanswered_send', dnc_credits: '0' });
      expect(row.dnc_error).toContain('another dnc of the team (a@');
    }
    // Asked to, b sends them again (and they may be charged a second time, as it warns).
    const again = await spawnDnc(['batch', listB, ...flags, '--resend-unanswered'], {
      env: machine('b', db.url),
      cwd: w.dir,
      timeoutMs: 60_000,
    });
    expect(again.code, again.stderr).toBe(0);
    const after = sends(lookedUp(w.sb));
    for (const n of inFlight) expect(after.get(n)).toBe(2);
    for (const n of numbers.filter((x) => !inFlight.includes(x))) expect(after.get(n)).toBe(1);
  }, 60_000);
});

describe.skipIf(!HAVE_POSTGRES)('a webhook lookup of one machine, wanted by another', () => {
  it("stays pending there with the claimant's correlation id until the claimant's listen shares the verdict", async () => {
    const db = await freshDatabase();
    const sandbox = await startSandbox({ port: 0, allowInsecureWebhooks: true, timeScale: 0.01, seed: 7 });
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-team-webhook-'));
    try {
      const env = (name: string) => ({
        USER: name,
        XDG_STATE_HOME: path.join(dir, name, 'state'),
        XDG_CACHE_HOME: path.join(dir, name, 'cache'),
        DNC_STORE: db.url,
        DNC_BASE_URL: sandbox.baseUrl,
        DNC_API_KEY: sandbox.apiKey,
      });
      const numbers = usNumbers(900, 5);
      const write = (name: string) => {
        const file = path.join(dir, `${name}.csv`);
        writeFileSync(file, ['phone', ...numbers].join('\n') + '\n');
        return file;
      };
      const [a, b] = [write('a'), write('b')];
      const port = await freePort();
      const url = `http://127.0.0.1:${port}${PUSH_PATH}`;
      const sent = await runDnc(['batch', a, '--webhook-all', '--webhook-url', url, '--allow-insecure-webhook-url'], {
        env: env('a'),
        cwd: dir,
      });
      expect(sent.code, sent.stderr).toBe(8);
      // b wants the same numbers meanwhile: nothing is sent, its rows are pending on a's lookups.
      const waiting = await runDnc(['batch', b], { env: env('b'), cwd: dir });
      expect(waiting.code, waiting.stderr).toBe(8);
      const receipts = readCsvObjects(path.join(dir, 'a.results.csv')).map((r) => r.dnc_correlation_id);
      const pending = readCsvObjects(path.join(dir, 'b.results.csv'));
      expect(pending.map((r) => r.dnc_result)).toEqual(numbers.map(() => 'pending'));
      expect(pending.map((r) => r.dnc_correlation_id)).toEqual(receipts);
      // a's listener receives the pushes and shares the verdicts; b's rerun takes them, still sending nothing.
      const heard = await runDnc(
        [
          'listen',
          '--results',
          path.join(dir, 'a.results.csv'),
          '--port',
          String(port),
          '--path',
          PUSH_PATH,
          '--exit-when-done',
        ],
        { env: env('a'), cwd: dir },
      );
      expect(heard.code, heard.stderr).toBe(0);
      const rerun = await runDnc(['batch', b], { env: env('b'), cwd: dir });
      expect(rerun.code, rerun.stderr).toBe(0);
      expect(rerun.stderr).toContain("5 pending number(s) answered by a colleague's webhook lookup");
      const answered = readCsvObjects(path.join(dir, 'b.results.csv'));
      expect(answered.map((r) => r.dnc_result)).toEqual(
        readCsvObjects(path.join(dir, 'a.results.csv')).map((r) => r.dnc_result),
      );
      expect(answered.every((r) => r.dnc_credits === '0' && r.dnc_correlation_id !== '')).toBe(true);
      expect(lookedUp(sandbox)).toHaveLength(5);
    } finally {
      await sandbox.close();
      await db.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!HAVE_POSTGRES)('the team store stopped mid-batch and started again', () => {
  it('the batch ends on its own (exit 6, rows not_checked); the rerun finishes; no number is sent twice', async () => {
    const server = await ownServer();
    if (!server) return;
    try {
      w = await world({ latencyMs: 300 });
      const list = w.file('calls.csv', ['phone', ...usNumbers(700, 40)]);
      const env = { ...machine('m', server.url), PATH: process.env.PATH ?? '' };
      const child = spawn(process.execPath, [BIN, 'batch', list, '--concurrency', '4'], {
        cwd: w.dir,
        env,
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      await lookedUpAtLeast(w.sb, 8);
      await server.stop();
      const code = await exited;
      expect(code, stderr).toBe(6);
      expect(stderr).toContain('E_STORE_UNAVAILABLE');
      const rows = readCsvObjects(path.join(w.dir, 'calls.results.csv'));
      expect(rows.some((r) => r.dnc_result === 'not_checked')).toBe(true);
      const sentBefore = lookedUp(w.sb).length;
      expect(sentBefore).toBeLessThan(40);
      await server.start();
      // A claim the server committed whose answer never came back (the server went away meanwhile): the batch saw no
      // claim and sent nothing. Its rerun (the same journal) takes such claims over at once, not after a lease.
      const sentNumbers = new Set(lookedUp(w.sb));
      const unsent = usNumbers(700, 40).filter((n) => !sentNumbers.has(n));
      const left = await sqlOn(server.url, 'UPDATE dnc.claims SET claimed_at = claimed_at RETURNING claimant, origin');
      expect(left.length).toBeGreaterThan(0);
      await sqlOn(
        server.url,
        `INSERT INTO dnc.claims (service, account, e164, claimant, claimed_at, expires_at, state, origin, who)
         SELECT service, account, unnest($1::text[]), claimant, now(), now() + interval '1 hour', 'sending', origin,
                who
           FROM dnc.claims LIMIT 1
         ON CONFLICT DO NOTHING`,
        [unsent.slice(0, 5)],
      );
      const rerun = await spawnDnc(['batch', list, '--concurrency', '4'], {
        env: machine('m', server.url),
        cwd: w.dir,
        timeoutMs: 60_000,
      });
      expect(rerun.code, rerun.stderr).toBe(0);
      const counts = sends(lookedUp(w.sb));
      expect(counts.size).toBe(40);
      expect([...counts.values()].every((n) => n === 1)).toBe(true);
      expect(
        readCsvObjects(path.join(w.dir, 'calls.results.csv')).every((r) =>
          ['callable', 'do_not_call'].includes(r.dnc_result!),
        ),
      ).toBe(true);
    } finally {
      await server.close();
    }
  }, 90_000);
});
