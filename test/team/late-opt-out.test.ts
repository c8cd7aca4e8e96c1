// An opt-out recorded while a batch runs, for numbers whose lookup has already said callable: none of them is written
// callable (the built CLI, the sandbox over loopback, the outputs read back with python's csv module). With the team
// store (another machine records it) and with a local list (another process of the same machine).
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, spawnDnc } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';
import { freshDatabase, HAVE_POSTGRES, postgresSkipped } from '../helpers/postgres.js';
import { lookedUp, world, type World } from '../helpers/world.js';
import { teamMachine } from './helpers.js';
import { pythonWithOpenpyxl } from '../helpers/python.js';

postgresSkipped('an opt-out recorded during a team batch');

/** The output's rows as python's csv module reads them. */
function rowsOf(file: string): Array<Record<string, string>> {
  const py = 'import csv, json, sys; print(json.dumps(list(csv.DictReader(open(sys.argv[1], newline="")))))';
  return JSON.parse(execFileSync(pythonWithOpenpyxl(), ['-c', py, file], { encoding: 'utf8' })) as Array<
    Record<string, string>
  >;
}

/** 30 numbers the sandbox answers callable (an even last digit). */
const NUMBERS = Array.from({ length: 30 }, (_, i) => `+12025550${900 + 2 * i}`);

/**
 * `honouredBeforeSend`: the team store's claim reads the list before each send, so the numbers opted out before
 * their turn are never sent; a local list is read when the batch starts (and again before its outputs are written).
 */
async function lateOptOut(
  w: World,
  runner: Record<string, string>,
  desk: Record<string, string>,
  honouredBeforeSend: boolean,
) {
  const list = w.file('calls.csv', ['phone', ...NUMBERS]);
  const batch = spawnDnc(['batch', list, '--concurrency', '2'], { env: runner, cwd: w.dir, timeoutMs: 90_000 });
  // Eight sent, two at a time: the first four are answered (callable) by then.
  await waitFor(() => lookedUp(w.sb).length >= 8, { ms: 30_000, what: 'eight lookups' });
  // Four numbers already answered callable, and the last two of the list, not yet sent.
  const answered = lookedUp(w.sb).slice(0, 4);
  const notYet = NUMBERS.slice(-2);
  expect(notYet.some((n) => lookedUp(w.sb).includes(n))).toBe(false);
  const add = await spawnDnc(['suppress', 'add', ...answered, ...notYet, '--reason', 'asked on a call'], {
    env: desk,
    cwd: w.dir,
    timeoutMs: 60_000,
  });
  expect(add.code, add.stderr).toBe(0);
  const r = await batch;
  expect(r.code, r.stderr).toBe(0);
  const rows = rowsOf(path.join(w.dir, 'calls.results.csv'));
  expect(rows).toHaveLength(NUMBERS.length);
  for (const n of [...answered, ...notYet]) {
    const row = rows.find((x) => x.phone === n)!;
    expect(row.dnc_result, n).toBe('do_not_call');
    expect(row.dnc_list_source, n).toMatch(/^internal:/);
  }
  // The answered ones keep their lookup (paid for): its correlation id and credit.
  for (const n of honouredBeforeSend ? answered : [...answered, ...notYet]) {
    const row = rows.find((x) => x.phone === n)!;
    expect(row.dnc_correlation_id).not.toBe('');
    expect(row.dnc_credits).toBe('1');
    expect(row.dnc_error).toMatch(/while this batch ran, after its lookup said callable/);
  }
  for (const n of NUMBERS.filter((x) => !answered.includes(x) && !notYet.includes(x)))
    expect(rows.find((x) => x.phone === n)!.dnc_result).toBe('callable');
  // Said, too.
  expect(r.stderr).toMatch(/number\(s\) put on the internal do-not-call list \([\w-]+\) while the lookups ran/);
  // Each number sent once at most; the two opted out before their turn never.
  const sent = lookedUp(w.sb);
  expect(new Set(sent).size).toBe(sent.length);
  if (honouredBeforeSend) for (const n of notYet) expect(sent).not.toContain(n);
  // The evidence agrees with the output: verify accepts it against the list it names.
  const verify = await spawnDnc(['verify', path.join(w.dir, 'calls.results.csv')], { env: runner, cwd: w.dir });
  expect(verify.code, verify.stdout + verify.stderr).toBe(0);
}

describe('an opt-out recorded while a batch runs is never written callable', () => {
  let w: World;
  beforeAll(async () => {
    assertBuilt();
    w = await world({ latencyMs: 400 });
  });
  afterAll(async () => {
    await w?.cleanup();
  });

  it('a local list, changed by another process of the machine', async () => {
    const env = { ...w.env, HOME: w.dir, USER: 'alice' };
    await lateOptOut(w, env, env, false);
  }, 120_000);
});

describe.skipIf(!HAVE_POSTGRES)('an opt-out recorded on another machine while a team batch runs', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let w: World;
  beforeAll(async () => {
    assertBuilt();
    db = await freshDatabase();
    w = await world({ latencyMs: 400 });
  });
  afterAll(async () => {
    await w?.cleanup();
    await db?.drop();
  });

  it('the team store: none of its numbers is written callable', async () => {
    await lateOptOut(w, teamMachine(w, 'runner', db.url), teamMachine(w, 'desk', db.url), true);
  }, 120_000);
});
