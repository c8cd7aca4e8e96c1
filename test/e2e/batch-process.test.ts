// `dnc batch` as a process: kill -9 at several moments then resume (every row exactly once), SIGINT → 130.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchJournal, journalPathFor } from '../../src/journal/journal.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import { countBy, lookedUp, readCsvObjects, sandbox, scratch, sha256 } from '../batch/helpers.js';
import { assertBuilt, BIN, NO_HOME, REPO_ROOT, spawnDnc } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';

const tmp = scratch();
let sb: Sandbox;
let env: Record<string, string>;

beforeAll(async () => {
  assertBuilt();
  ({ sb, env } = await sandbox({ latencyMs: 15 }));
});
afterAll(async () => {
  await sb.close();
  tmp.remove();
});

/** 300 distinct US numbers, each twice (the second time in national format), shuffled deterministically. */
function callList(name: string): { file: string; phones: string[]; distinct: number } {
  const rows: string[] = [];
  for (let i = 0; i < 300; i++) {
    rows.push(`+1202555${1000 + i}`);
    rows.push(`(202) 555-${1000 + i}`);
  }
  for (let i = rows.length - 1; i > 0; i--) {
    const j = (i * 7919) % (i + 1);
    [rows[i], rows[j]] = [rows[j]!, rows[i]!];
  }
  const file = path.join(tmp.dir, name);
  writeFileSync(file, `row,phone\n${rows.map((p, i) => `${i + 1},"${p}"`).join('\n')}\n`);
  return { file, phones: rows, distinct: 300 };
}

function start(
  argv: string[],
  childEnv: Record<string, string> = env,
): {
  child: ChildProcess;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
} {
  const child = spawn(process.execPath, [BIN, ...argv], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: NO_HOME, ...childEnv },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal, stderr })),
  );
  return { child, stderr: () => stderr, exited };
}

function until(condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  return waitFor(condition, { ms: timeoutMs });
}

describe('dnc batch as a process', () => {
  it('killed with SIGKILL at several moments, a rerun completes with every row exactly once and charges ≤ distinct + concurrency per kill', async () => {
    sb.reset();
    const { file, phones, distinct } = callList('kill.csv');
    const before = sha256(file);
    const output = path.join(tmp.dir, 'kill.results.csv');
    const argv = ['batch', file, '-o', output, '--country', 'US', '--concurrency', '8'];

    // Kill during start-up/ingest, then twice mid-lookups.
    const kills = [() => true, () => sb.lookups().length >= 60, () => sb.lookups().length >= 200];
    for (const ready of kills) {
      const run = start(argv);
      await until(ready);
      run.child.kill('SIGKILL');
      const end = await run.exited;
      expect(end.signal).toBe('SIGKILL');
    }
    // A bare rerun never sends again a number whose send got no answer (it may have been charged): those rows
    // end failed / unanswered_send (exit 7) until the user asks for them with --resend-unanswered.
    const sentBefore = sb.lookups().length;
    const bare = await spawnDnc(['--json', ...argv], { env, timeoutMs: 30_000 });
    expect([0, 7], bare.stderr).toContain(bare.code);
    const unanswered = new Set(
      readCsvObjects(output)
        .filter((x) => x.dnc_error_code === 'unanswered_send')
        .map((x) => x.dnc_phone_e164),
    );
    expect(bare.code === 7, bare.stderr).toBe(unanswered.size > 0);
    expect(JSON.parse(bare.stdout).unanswered_sends).toBeGreaterThanOrEqual(unanswered.size);
    expect(
      sb
        .lookups()
        .slice(sentBefore)
        .filter((l) => unanswered.has(l.phoneNumber)),
    ).toEqual([]);
    const last = await spawnDnc(['--json', ...argv, '--resend-unanswered'], { env, timeoutMs: 30_000 });
    expect(last.code, last.stderr).toBe(0);
    expect(sha256(file)).toBe(before);

    const rows = readCsvObjects(output);
    expect(rows.map((x) => x.phone)).toEqual(phones);
    expect(rows.map((x) => x.row)).toEqual(phones.map((_, i) => String(i + 1)));
    expect(rows.every((x) => x.dnc_result === 'callable' || x.dnc_result === 'do_not_call')).toBe(true);
    const e164s = new Set(rows.map((x) => x.dnc_phone_e164));
    expect(e164s.size).toBe(distinct);

    const charged = sb.lookups().filter((l) => l.charged);
    expect(new Set(charged.map((l) => l.phoneNumber)).size).toBe(distinct);
    // Each kill can leave at most the lookups in flight (the concurrency) to be sent again.
    expect(charged.length).toBeLessThanOrEqual(distinct + 8 * kills.length);
    const twice = Object.values(countBy(charged, (l) => l.phoneNumber)).filter((c) => c > 1).length;
    expect(twice).toBe(charged.length - distinct);
    expect(JSON.parse(last.stdout).credits_used).toBeGreaterThanOrEqual(distinct);
  });

  it('killed with SIGKILL while it writes its output, the rerun removes the temporary file it left (numbers in it)', async () => {
    sb.reset();
    // A long list and a small budget: a few lookups, then a render of 100,000 rows to catch in the act.
    const file = path.join(tmp.dir, 'render-kill.csv');
    writeFileSync(
      file,
      `id,phone\n${Array.from({ length: 100_000 }, (_, i) => `${i},+1202${String(5_550_000 + i).padStart(7, '0')}`).join('\n')}\n`,
    );
    const output = path.join(tmp.dir, 'render-kill.results.csv');
    const argv = ['batch', file, '-o', output, '--max-credits', '5'];
    const temps = () =>
      readdirSync(tmp.dir).filter((f) => f.startsWith('.render-kill.results.csv.') && f.endsWith('.tmp'));
    const run = start(argv);
    await until(() => temps().length > 0, 30_000);
    run.child.kill('SIGKILL');
    expect((await run.exited).signal).toBe('SIGKILL');
    const left = temps();
    expect(left.length).toBeGreaterThan(0);
    // Named after the writer that was killed.
    expect(left[0]).toMatch(new RegExp(`^\\.render-kill\\.results\\.csv\\.${run.child.pid}-\\d+\\.[0-9a-f]{8}\\.tmp$`));
    const rerun = await spawnDnc(argv, { env, timeoutMs: 60_000 });
    expect(rerun.code, rerun.stderr).toBe(5);
    expect(temps()).toEqual([]);
  }, 120_000);

  for (const signal of ['SIGINT', 'SIGHUP'] as const)
    it(`${signal} stops starting lookups, writes the output and exits 130; the rerun finishes`, async () => {
      sb.reset();
      const { file, phones } = callList(`int-${signal}.csv`);
      const output = path.join(tmp.dir, `int-${signal}.results.csv`);
      const argv = ['batch', file, '-o', output, '--country', 'US', '--concurrency', '4'];
      const run = start(argv);
      await until(() => sb.lookups().length >= 40);
      // SIGHUP is a closed terminal or SSH session: it must not lose the lookups in flight either.
      run.child.kill(signal);
      const end = await run.exited;
      expect(end.code, end.stderr).toBe(130);
      expect(end.stderr).toContain('Resume with: dnc batch');
      const partial = readCsvObjects(output);
      expect(partial.map((x) => x.phone)).toEqual(phones);
      const answered = new Set(partial.filter((x) => x.dnc_result !== 'not_checked').map((x) => x.dnc_phone_e164));
      expect(answered.size).toBe(sb.lookups().length);
      expect(
        partial.filter((x) => x.dnc_result === 'not_checked').every((x) => x.dnc_error_code === 'interrupted'),
      ).toBe(true);

      const rest = await spawnDnc(argv, { env, timeoutMs: 30_000 });
      expect(rest.code, rest.stderr).toBe(0);
      expect(readCsvObjects(output).every((x) => x.dnc_result === 'callable' || x.dnc_result === 'do_not_call')).toBe(
        true,
      );
      expect(sb.lookups().filter((l) => l.charged)).toHaveLength(300);
    });

  it.runIf(existsSync('/usr/bin/script'))(
    'on a terminal that reports no size (`script -qfc`), the summary tables are 80 columns wide, not one-character columns',
    async () => {
      sb.reset();
      const file = path.join(tmp.dir, 'nosize.csv');
      writeFileSync(file, 'id,phone\n1,+12025550101\n2,+12025550102\n');
      const output = path.join(tmp.dir, 'nosize.results.csv');
      // script(1) runs the command on a new pseudo-terminal whose size is 0×0 (as `docker -t` without a size).
      const command = [process.execPath, BIN, 'batch', file, '-o', output].map((a) => `'${a}'`).join(' ');
      // Spawned, not spawnSync: the sandbox answers from this process.
      const child = spawn('script', ['-qfc', command, '/dev/null'], {
        cwd: tmp.dir,
        env: { PATH: process.env.PATH ?? '', HOME: NO_HOME, TERM: 'xterm', NO_COLOR: '1', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
      const run = { status, stdout };
      expect(run.status, run.stdout).toBe(0);
      const lines = run.stdout.replace(/\r/g, '').split('\n');
      const row = (first: string) => lines.find((l) => l.startsWith(`│ ${first} `));
      // Every cell shown whole: the columns' natural widths fit in 80.
      expect(row('callable'), run.stdout).toMatch(/^│ callable +│ +1 │ +50\.0% │$/);
      expect(row('do_not_call'), run.stdout).toMatch(/^│ do_not_call +│ +1 │ +50\.0% │$/);
      expect(
        lines.some((l) => l.includes('…')),
        run.stdout,
      ).toBe(false);
    },
  );

  it('a second SIGINT exits at once (130) without waiting for slow lookups, leaving them in flight in the journal', async () => {
    // Answers take 10 s: "at once" is well before any of them, however loaded the machine.
    const slow = await sandbox({ latencyMs: 10_000 });
    try {
      const { file } = callList('int2.csv');
      const output = path.join(tmp.dir, 'int2.results.csv');
      const argv = ['batch', file, '-o', output, '--country', 'US', '--concurrency', '4'];
      const run = start(argv, slow.env);
      await until(() => lookedUp(slow.sb).length >= 4);
      const t0 = Date.now();
      run.child.kill('SIGINT');
      await until(() => run.stderr().includes('Ctrl-C again to quit at once')); // the first one taken in
      run.child.kill('SIGINT');
      const end = await run.exited;
      expect(end.code, end.stderr).toBe(130);
      expect(Date.now() - t0).toBeLessThan(7_000);
      expect(end.stderr).toContain('stopped at once');
      const journal = await BatchJournal.open(journalPathFor(output), { create: false });
      // Every lookup sent is accounted for: answered (done) or left in flight (maybe charged, reported on the
      // rerun), never lost; at least one was still on the wire when the second Ctrl-C came.
      const counts = journal.summaryCounts();
      const looked = lookedUp(slow.sb).length;
      expect(counts.in_flight + counts.done, JSON.stringify({ counts, looked })).toBe(looked);
      expect(counts.in_flight).toBeGreaterThan(0);
      journal.close();
    } finally {
      await slow.sb.close();
    }
  });
});
