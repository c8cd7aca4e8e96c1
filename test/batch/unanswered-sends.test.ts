// A batch killed (kill -9) while lookups are in flight: the journal marks them sent without an answer. The rerun
// never sends them again unless asked (--resend-unanswered), and its summary, --json, manifest and dry run state
// them as `dnc usage --reconcile` counts them: sends that may have been charged, never added to the credits.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { assertBuilt, BIN, NO_HOME, spawnDnc } from '../helpers/cli.js';
import { readCsvObjects } from './helpers.js';
import { json, lookedUp, lookedUpAtLeast, sandboxSettled, usNumbers, world, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.cleanup();
  w = undefined;
});

const sha = (file: string) => (existsSync(file) ? createHash('sha256').update(readFileSync(file)).digest('hex') : null);

/**
 * A world whose answers take 1 s, and a `dnc batch` of `count` numbers (4 in flight) killed with SIGKILL once four
 * lookups have reached the sandbox: the kill comes while they wait for their answers.
 */
async function killedBatch(from: number, count: number) {
  assertBuilt();
  w = await world({ latencyMs: 1000 });
  const env = { ...w.env, HOME: NO_HOME, PATH: process.env.PATH ?? '' };
  const calls = w.file('calls.csv', ['phone', ...usNumbers(from, count)]);
  const child = spawn(process.execPath, [BIN, 'batch', calls, '--concurrency', '4'], {
    cwd: w.dir,
    env,
    stdio: 'ignore',
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
  await lookedUpAtLeast(w.sb, 4);
  child.kill('SIGKILL');
  expect(await exited).toBe('SIGKILL');
  // A request the killed process wrote just before it died may reach the sandbox a moment later: counted only once
  // the sandbox's log has stopped growing.
  await sandboxSettled(w.sb);
  return { dir: w.dir, sb: w.sb, env, calls };
}

describe('a batch killed with lookups in flight', () => {
  it('the rerun states the unanswered sends (summary, --json, manifest, dry run, reconcile alike) and sends them again only with --resend-unanswered', async () => {
    const { dir, sb, env, calls } = await killedBatch(600, 12);
    const output = path.join(dir, 'calls.results.csv');
    const journal = `${output}.journal.sqlite`;
    const sentByKilledRun = new Set(lookedUp(sb));
    expect(sentByKilledRun.size).toBeGreaterThanOrEqual(4);
    const chargedByKilledRun = sb.account().creditsUsed;

    // The dry run: what a rerun would send, the unanswered ones left out; the journal and its folder unchanged.
    const files = () => readdirSync(dir).sort();
    const snapshot = () => ({
      files: files(),
      journal: sha(journal),
      wal: sha(`${journal}-wal`),
      shm: sha(`${journal}-shm`),
      lock: sha(`${journal}.lock`),
    });
    const before = snapshot();
    // (The killed run left its log and index: the dry run reads a private copy, so not even the index is rebuilt.)
    expect(before.wal).not.toBeNull();
    const dry = await spawnDnc(['--json', 'batch', calls, '--dry-run'], { env, cwd: dir });
    expect(dry.code, dry.stderr).toBe(0);
    const plan = json(dry.stdout);
    const unanswered: number = plan.resuming.unanswered;
    expect(unanswered).toBeGreaterThanOrEqual(1);
    expect(unanswered).toBeLessThanOrEqual(4);
    expect(plan.resuming).toMatchObject({
      journal,
      numbers: 12,
      pending: 0,
      unanswered_sends: unanswered,
      resend_unanswered: false,
    });
    expect(plan.resuming.with_verdict + plan.resuming.to_look_up + unanswered).toBe(12);
    expect(plan.estimated_credits).toBe(plan.resuming.to_look_up);
    expect(snapshot()).toEqual(before);
    expect(lookedUp(sb)).toHaveLength(sentByKilledRun.size);
    const human = await spawnDnc(['batch', calls, '--dry-run'], { env, cwd: dir });
    // (At least, when the killed run had no answer to learn the US cost from: a country's cost is learned from answers.)
    expect(human.stdout).toContain(
      `resuming ${journal}: ${plan.resuming.with_verdict} of 12 numbers already have a verdict; ${plan.resuming.to_look_up} to look up, at `,
    );
    expect(human.stdout).toContain(
      ` ${plan.resuming.to_look_up} credits; ${unanswered} number(s) an interrupted run sent without an answer may have been charged and are not sent again (--resend-unanswered sends them)`,
    );

    // A bare rerun: the unanswered numbers are not sent again; they end failed / unanswered_send, exit 7.
    const bare = await spawnDnc(['batch', calls], { env, cwd: dir });
    expect(bare.code, bare.stderr).toBe(7);
    expect(bare.stderr).toContain(
      `dnc: warning: ${unanswered} number(s) were sent by the last run, which stopped before their answers came: they may have been charged and are not sent again`,
    );
    expect(bare.stderr).toContain(
      `${unanswered} row(s) were sent by a run that stopped before their answers came and may have been charged: a rerun does not send them again`,
    );
    expect(bare.stderr).toContain(`dnc batch ${calls} -o calls.results.csv --resend-unanswered`);
    expect(bare.stdout).toContain(
      `${unanswered} send(s) of an interrupted run got no answer and may have been charged`,
    );
    const rows = readCsvObjects(output);
    const unansweredNumbers = rows.filter((r) => r.dnc_error_code === 'unanswered_send').map((r) => r.dnc_phone_e164);
    expect(unansweredNumbers).toHaveLength(unanswered);
    expect(
      rows
        .filter((r) => r.dnc_error_code === 'unanswered_send')
        .every((r) => r.dnc_result === 'failed' && r.dnc_credits === '0'),
    ).toBe(true);
    const sentByBare = lookedUp(sb).slice(sentByKilledRun.size);
    expect(sentByBare.filter((n) => unansweredNumbers.includes(n))).toEqual([]);
    expect(sentByBare).toHaveLength(plan.resuming.to_look_up);
    // Every lookup so far was sent once.
    expect(new Set(lookedUp(sb)).size).toBe(lookedUp(sb).length);
    const manifest = JSON.parse(readFileSync(path.join(dir, 'calls.results.manifest.json'), 'utf8')) as Record<
      string,
      any
    >;
    expect(manifest.unanswered_sends).toBe(unanswered);
    expect(manifest.credits_used).toBe(12 - unanswered);
    // Reconcile counts the same sends, apart from the credits; the difference is what the service charged for them.
    const reconcile = json((await spawnDnc(['--json', 'usage', '--reconcile'], { env, cwd: dir })).stdout);
    expect(reconcile.local).toEqual([
      {
        kind: 'batch',
        path: journal,
        lookups: 12 - unanswered,
        credits: 12 - unanswered,
        unanswered_sends: unanswered,
      },
    ]);
    expect(reconcile.difference).toBe(sb.account().creditsUsed - (12 - unanswered));
    expect(reconcile.difference).toBeGreaterThanOrEqual(0);
    expect(reconcile.difference).toBeLessThanOrEqual(unanswered);

    // Asked for: they are sent again, once each; their first sends stay counted (each may have been charged).
    const resend = await spawnDnc(['--json', 'batch', calls, '--resend-unanswered'], { env, cwd: dir });
    expect(resend.code, resend.stderr).toBe(0);
    expect(resend.stderr).toContain(
      `--resend-unanswered: ${unanswered} number(s) whose earlier send got no answer are sent again`,
    );
    expect(
      lookedUp(sb)
        .slice(sentByKilledRun.size + sentByBare.length)
        .sort(),
    ).toEqual([...unansweredNumbers].sort());
    expect(json(resend.stdout)).toMatchObject({
      credits_used: 12,
      unanswered_sends: unanswered,
      failed: 0,
      not_checked: 0,
    });
    expect(JSON.parse(readFileSync(path.join(dir, 'calls.results.manifest.json'), 'utf8')).unanswered_sends).toBe(
      unanswered,
    );
    const after = json((await spawnDnc(['--json', 'usage', '--reconcile'], { env, cwd: dir })).stdout);
    expect(after.local).toEqual([
      { kind: 'batch', path: journal, lookups: 12, credits: 12, unanswered_sends: unanswered },
    ]);
    expect(sb.account().creditsUsed).toBe(chargedByKilledRun + plan.resuming.to_look_up + unanswered);
    expect(after.difference).toBe(sb.account().creditsUsed - 12);
    expect(after.difference).toBeLessThanOrEqual(unanswered);
  }, 90_000);

  // The rest of the stop/resume matrix for kill -9: a rerun with other non-answer options behaves as a bare one
  // (nothing charged or maybe charged is sent again); --restart sends everything again, as asked.
  for (const again of [
    {
      name: 'a rerun with other non-answer options',
      args: ['--concurrency', '2', '--callable-out', 'callable.csv'],
      code: 7,
      paysAgain: false,
    },
    { name: '--restart', args: ['--restart'], code: 0, paysAgain: true },
  ]) {
    it(`kill -9, then ${again.name}: ${again.paysAgain ? 'every number is sent again, as asked' : 'no number is sent twice'}`, async () => {
      const { dir, sb, env, calls } = await killedBatch(700, 8);
      const sentByKilledRun = lookedUp(sb).length;
      const r = await spawnDnc(['--json', 'batch', calls, ...again.args], { env, cwd: dir });
      expect(r.code, r.stderr).toBe(again.code);
      const sentByRerun = lookedUp(sb).slice(sentByKilledRun);
      const rows = readCsvObjects(path.join(dir, 'calls.results.csv'));
      if (again.paysAgain) {
        expect(sentByRerun).toHaveLength(8);
        expect(rows.every((x) => x.dnc_result === 'callable' || x.dnc_result === 'do_not_call')).toBe(true);
      } else {
        expect(new Set(lookedUp(sb)).size).toBe(lookedUp(sb).length);
        const unanswered = rows.filter((x) => x.dnc_error_code === 'unanswered_send').length;
        // (Every send of the killed run, less any answered before the kill on a slow machine.)
        expect(unanswered).toBeGreaterThanOrEqual(1);
        // The killed run records each send before writing it: one recorded but not yet on the wire at the kill is an
        // unanswered send all the same (it may have left), so the sandbox may have seen fewer than were recorded.
        const unansweredNumbers = rows
          .filter((x) => x.dnc_error_code === 'unanswered_send')
          .map((x) => x.dnc_phone_e164);
        expect(sentByRerun.filter((n) => unansweredNumbers.includes(n))).toEqual([]);
        expect(
          rows.every(
            (x) =>
              x.dnc_error_code === 'unanswered_send' || x.dnc_result === 'callable' || x.dnc_result === 'do_not_call',
          ),
        ).toBe(true);
        expect(sentByRerun.length).toBeLessThanOrEqual(8 - sentByKilledRun);
        expect(json(r.stdout)).toMatchObject({ unanswered_sends: unanswered });
        // The callable list named on the rerun is complete for the rows that have a verdict.
        const callable = readCsvObjects(path.join(dir, 'callable.csv'));
        expect(callable).toHaveLength(rows.filter((x) => x.dnc_result === 'callable').length);
      }
    }, 60_000);
  }
});

describe('a batch stopped by timeouts (issue 48)', () => {
  it('says which rows were never sent and which were sent without an answer, and gives the way on for each', async () => {
    assertBuilt();
    w = await world();
    // Every answer held: the four lookups in flight time out, and the batch stops on the first timeout.
    const release = w.sb.holdAnswers();
    const calls = w.file('calls.csv', ['phone', ...usNumbers(640, 10)]);
    const output = path.join(w.dir, 'calls.results.csv');
    const env = { ...w.env, HOME: NO_HOME };
    const stopped = await spawnDnc(['batch', calls, '--concurrency', '4', '--timeout', '300', '--retries', '0'], {
      env,
      cwd: w.dir,
      timeoutMs: 60_000,
    });
    release();
    expect(stopped.code, stopped.stderr).toBe(6);
    const rows = readCsvObjects(output);
    const unanswered = rows.filter((r) => r.dnc_error_code === 'unanswered_send').length;
    const never = rows.filter((r) => r.dnc_result === 'not_checked').length;
    expect(unanswered).toBe(4);
    expect(never).toBe(6);
    expect(stopped.stderr).toContain(
      `holds the answers so far (service_failure); 6 row(s) not_checked (never sent: a rerun sends them); 4 row(s) ` +
        'failed / unanswered_send (sent, no answer came: they may have been charged, and a rerun does not send them again)',
    );
    expect(stopped.stderr).not.toContain('the rest are not_checked');
    const resume = 'dnc batch \\S*calls\\.csv -o calls\\.results\\.csv';
    expect(stopped.stderr).toMatch(
      new RegExp(
        `hint: .*run \`${resume}\` to resume \\(answered numbers are not sent again\\); or \`${resume} ` +
          '--resend-unanswered` sends the 4 unanswered number\\(s\\) again \\(a second charge each',
      ),
    );
  });
});

describe("a first run's send answered with no result (issue 48)", () => {
  it.each([
    ['a 502 that is not JSON', 502, 'lookup failed: HTTP 502, non-JSON body: <html>bad gateway</html>'],
    ['a 302', 302, 'lookup failed: HTTP 302'],
  ])('%s: unanswered_send of this run, never "an earlier run that stopped"', async (_what, status, reason) => {
    assertBuilt();
    const { createServer } = await import('node:http');
    const server = createServer((_req, res) => {
      res.writeHead(status, status === 302 ? { location: 'http://127.0.0.1:9/x' } : { 'content-type': 'text/html' });
      res.end(status === 302 ? '' : '<html>bad gateway</html>');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    w = await world();
    try {
      const port = (server.address() as { port: number }).port;
      const calls = w.file('calls.csv', ['phone', '+12025550660']);
      const r = await spawnDnc(['batch', calls, '--retries', '0'], {
        env: { ...w.env, HOME: NO_HOME, DNC_BASE_URL: `http://127.0.0.1:${port}` },
        cwd: w.dir,
        timeoutMs: 60_000,
      });
      expect(r.code, r.stderr).toBe(6);
      const [row] = readCsvObjects(path.join(w.dir, 'calls.results.csv'));
      expect(row!.dnc_error_code).toBe('unanswered_send');
      expect(row!.dnc_error).toContain('sent, and no answer saying whether it was charged came back');
      expect(row!.dnc_error).toContain(reason);
      expect(row!.dnc_error).not.toContain('earlier run');
    } finally {
      server.close();
    }
  });
});
