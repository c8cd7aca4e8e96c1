// Issue 36: `dnc window --number N`: when numbers may be called, with nothing looked up and no credit spent. Against
// the sandbox over loopback, whose request log must stay empty; windows at fixed instants worked out by hand, and at
// generated instants against a second reading of the rules (Intl read its own way, minute by minute).
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { sandboxForFile, scratchFolders } from '../batch/helpers.js';
import { runDnc, spawnDnc, type RunResult } from '../helpers/cli.js';

const file = sandboxForFile();
const dir = file.dir;
let env: Record<string, string>;

beforeAll(() => {
  env = { ...file.env, ...scratchFolders(dir) };
});

const dnc = (argv: string[], extra: Record<string, string | undefined> = {}): Promise<RunResult> =>
  runDnc(argv, { env: { ...env, ...extra }, homedir: dir, cwd: dir });

interface Calling {
  time_zones: string[];
  may_call_now: boolean;
  reason: string | null;
  in_window: boolean;
  next_window_start: string | null;
  next_window_end: string | null;
  never_callable: boolean;
  rules_version: string;
}
interface Answer {
  phone_number: string | null;
  input: string;
  looked_up: boolean;
  credit_cost: number;
  internal?: boolean;
  problem?: string;
  calling: Calling;
}

async function windows(argv: string[], exit = 0): Promise<{ answers: Answer[]; stderr: string }> {
  const r = await dnc(['--json', 'window', ...argv]);
  expect(r.code, r.stderr).toBe(exit);
  const answers = r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Answer);
  return { answers, stderr: r.stderr };
}

const numbers = (...n: string[]) => n.flatMap((x) => ['--number', x]);
const time = (c: Calling) => [c.in_window, c.next_window_start, c.next_window_end];

describe('dnc window --number: no lookup, no credit', () => {
  it('sends nothing at all to the service: its request log and usage stay as they were', async () => {
    const requests = file.sb.requests().length;
    const before = await dnc(['--json', 'usage']);
    expect(before.code, before.stderr).toBe(0);
    const afterUsage = file.sb.requests().length;
    const r = await windows([
      ...numbers('+12025550101', '+16055550100', '+442079460124'),
      '--at',
      '2026-12-01T14:00:00Z',
    ]);
    expect(r.answers).toHaveLength(3);
    expect(file.sb.requests().length).toBe(afterUsage);
    expect(afterUsage).toBe(requests + 1);
    const after = await dnc(['--json', 'usage']);
    const used = (out: string) => (JSON.parse(out) as { data: Array<{ credits_used: number }> }).data[0]!.credits_used;
    expect(used(after.stdout)).toBe(used(before.stdout));
    for (const a of r.answers) {
      expect(a).toMatchObject({ looked_up: false, credit_cost: 0 });
      expect(a.calling).toMatchObject({ may_call_now: false, reason: 'not_checked' });
    }
    expect(r.stderr).toContain('calling windows only, nothing looked up, no credit spent');
    expect(r.stderr).toContain('these are not do-not-call verdicts');
  });

  it('the built CLI answers with no API key and no service configured at all', async () => {
    const requests = file.sb.requests().length;
    const r = await spawnDnc(['window', '--number', '+12025550101', '--at', '2026-12-01T14:00:00Z'], {
      env: { ...scratchFolders(dir), DNC_API_KEY: undefined, DNC_BASE_URL: undefined },
      cwd: dir,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('+1 202 555 0101  calling rules only: not a do-not-call verdict\n');
    expect(r.stdout).toContain('  rules allow     a call now, until 2026-12-02T02:00:00Z\n');
    expect(r.stdout).toContain(
      "  may call now    no — not looked up, so no verdict (`dnc check` looks it up, at its country's cost)\n",
    );
    // An AU number is looked up only with a webhook, at AU's cost (3 in the sandbox): no figure, the flag named.
    const au = await spawnDnc(['window', '--number', '+61412345001', '--at', '2026-12-01T01:00:00Z'], {
      env: { ...scratchFolders(dir), DNC_API_KEY: undefined, DNC_BASE_URL: undefined },
      cwd: dir,
    });
    expect(au.code, au.stderr).toBe(0);
    expect(au.stdout).toContain(
      '  may call now    no — not looked up, so no verdict (`dnc check --webhook-url URL` looks it up, at its ' +
        "country's cost, with `dnc listen` receiving the answer)\n",
    );
    expect(file.sb.requests().length).toBe(requests);
  });
});

describe('dnc window --number: the windows at fixed instants', () => {
  it('605 spans two zones: at 14:00Z on Tue 1 December, from 08:00 Mountain (15:00Z) to 21:00 Central', async () => {
    const { answers } = await windows(['--number', '+16055550100', '--at', '2026-12-01T14:00:00Z']);
    expect(answers[0]!.calling.time_zones).toEqual(['America/Denver', 'America/North_Dakota/Center']);
    expect(time(answers[0]!.calling)).toEqual([false, '2026-12-01T15:00:00Z', '2026-12-02T03:00:00Z']);
  });

  it('national numbers with --country; each number once, in the order given', async () => {
    const { answers } = await windows([
      ...numbers('020 7946 0124', '+442079460124', '+61 2 9876 5432'),
      '--country',
      'GB',
      '--at',
      '2026-12-05T08:30:00Z',
    ]);
    expect(answers.map((a) => a.phone_number)).toEqual(['+442079460124', '+61298765432']);
    // Saturday 08:30 in London: GB opens at 09:00 on weekends.
    expect(time(answers[0]!.calling)).toEqual([false, '2026-12-05T09:00:00Z', '2026-12-05T21:00:00Z']);
    // Saturday 19:30 AEDT in Sydney: AU closes at 17:00 on Saturday, no calls on Sunday: Monday 09:00 AEDT.
    expect(time(answers[1]!.calling)).toEqual([false, '2026-12-06T22:00:00Z', '2026-12-07T09:00:00Z']);
  });

  it("is the same window as check's for the same number and instant (rules, zones, version)", async () => {
    const at = '2026-12-01T23:30:00Z';
    const { answers } = await windows(['--number', '+13055550100', '--at', at]);
    const check = await dnc(['--json', 'check', '+13055550100', '--at', at]);
    expect(check.code, check.stderr).toBe(0);
    const checked = (JSON.parse(check.stdout) as Answer).calling;
    const { may_call_now: _a, reason: _b, ...mine } = answers[0]!.calling;
    const { may_call_now: _c, reason: _d, ...theirs } = checked;
    expect(mine).toEqual(theirs);
    expect(Object.keys(answers[0]!.calling)).toEqual(Object.keys(checked));
    // Florida closes at 20:00: 18:30 EST is inside, and a callable verdict makes it a yes only in check.
    expect(checked).toMatchObject({ may_call_now: true, reason: null, in_window: true });
    expect(answers[0]!.calling).toMatchObject({ may_call_now: false, reason: 'not_checked', in_window: true });
  });

  it('a number on the internal list is never callable; one that cannot be valid is answered and exits 3', async () => {
    const added = await dnc(['suppress', 'add', '+12025550188', '--reason', 'asked not to be called']);
    expect(added.code, added.stderr).toBe(0);
    const { answers, stderr } = await windows(
      [...numbers('+12025550188', '+1202555', '+12025550100'), '--at', '2026-12-01T15:00:00Z'],
      3,
    );
    expect(answers.map((a) => [a.input, a.calling.reason, a.calling.next_window_start])).toEqual([
      ['+12025550188', 'suppressed', null],
      ['+1202555', 'invalid', null],
      ['+12025550100', 'not_checked', '2026-12-01T13:00:00Z'],
    ]);
    expect(answers[0]!.internal).toBe(true);
    expect(answers[1]!.problem).toBe("'+1202555' is too short for US");
    expect(stderr).toContain("dnc: '+1202555' is too short for US\n");
    const text = await dnc(['window', '--number', '+12025550188', '--at', '2026-12-01T15:00:00Z']);
    expect(text.stdout).toContain('  may call now    no — on the internal do-not-call list\n');
  });

  it("refuses a results file's options beside --number, and --number's beside a results file (exit 2)", async () => {
    const mixed = await dnc(['window', 'x.results.csv', '--number', '+12025550100']);
    expect(mixed.code).toBe(2);
    expect(mixed.stderr).toContain("[E_USAGE]: --number tells numbers' windows: RESULTS (x.results.csv) go with");
    const slot = await dnc(['window', '--number', '+12025550100', '--from', '2026-12-01T14:00:00Z']);
    expect(slot.code).toBe(2);
    expect(slot.stderr).toContain('--from go with a results file');
    const at = await dnc(['window', 'x.results.csv', '--from', '2026-12-01T14:00:00Z', '--at', '2026-12-01T14:00:00Z']);
    expect(at.code).toBe(2);
    expect(at.stderr).toContain('[E_USAGE]: dnc window needs --until, --dial-out');
    const none = await dnc(['window']);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('dnc window needs RESULTS, --from, --until, --dial-out (or --number N');
  });
});

describe('help says which questions cost a credit', () => {
  it('check and window', async () => {
    const check = (await dnc(['check', '--help'])).stdout;
    expect(check).not.toContain('No lookup is needed');
    expect(check).toContain('Credits: every number looked up is charged');
    expect(check).toContain('dnc window --number N --at TIME');
    const window = (await dnc(['window', '--help'])).stdout;
    expect(window).toContain('Two questions, neither of which looks anything up or spends a credit');
    expect(window).toContain('It is NOT a\ndo-not-call verdict');
  });
});

// ---- generated instants against a second reading of the rules ----

const seed = Number(process.env.DNC_PROPERTY_SEED ?? Math.floor(Math.random() * 2 ** 31));
const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
type Week = Array<[number, number]>;
const every = (a: number, b: number): Week => Array.from({ length: 7 }, () => [a * 60, b * 60]);
/** Numbers without holidays in their rules, with the local hours of docs/calling.md's table. */
const CASES: Array<{ e164: string; week: Week }> = [
  { e164: '+12125551234', week: every(8, 21) },
  { e164: '+16055551234', week: every(8, 21) },
  { e164: '+16025551234', week: every(8, 21) },
  // Florida narrows the federal rule to 20:00.
  { e164: '+13055551234', week: every(8, 20) },
  // GB: weekdays from 08:00, weekends from 09:00, until 21:00.
  { e164: '+442079460124', week: every(8, 21).map((d, i) => (i === 0 || i === 6 ? [9 * 60, d[1]] : d)) },
];
const readers = new Map<string, Intl.DateTimeFormat>();
function callableIn(zone: string, week: Week, t: number): boolean {
  let reader = readers.get(zone);
  if (!reader) {
    reader = new Intl.DateTimeFormat('en-GB', {
      timeZone: zone,
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    readers.set(zone, reader);
  }
  const p = Object.fromEntries(reader.formatToParts(t).map((x) => [x.type, x.value]));
  const minute = Number(p.hour) * 60 + Number(p.minute);
  const [from, to] = week[WEEKDAYS.indexOf(p.weekday!)]!;
  return minute >= from && minute < to;
}
const STEP = 15 * 60_000;

describe('dnc window --number at generated instants (property)', () => {
  it(
    'in_window and the window in progress or next agree with a quarter-hour walk of each zone',
    { timeout: 120_000 },
    async () => {
      console.log(`window --number property: seed ${seed} (DNC_PROPERTY_SEED=${seed} runs it again)`);
      const requests = file.sb.requests().length;
      const instant = fc
        .integer({ min: Date.UTC(2026, 0, 1) / STEP, max: Date.UTC(2029, 11, 31) / STEP })
        .map((q) => q * STEP);
      await fc.assert(
        fc.asyncProperty(instant, async (at) => {
          const { answers } = await windows([
            ...numbers(...CASES.map((c) => c.e164)),
            '--at',
            new Date(at).toISOString(),
          ]);
          for (const [i, c] of CASES.entries()) {
            const w = answers[i]!.calling;
            const ok = (t: number) => w.time_zones.every((zone) => callableIn(zone, c.week, t));
            let start = at;
            if (ok(at)) while (ok(start - STEP)) start -= STEP;
            else while (!ok(start)) start += STEP;
            let end = start;
            while (ok(end)) end += STEP;
            const iso = (t: number) => new Date(t).toISOString().replace('.000Z', 'Z');
            expect(time(w), `${c.e164} at ${iso(at)}`).toEqual([ok(at), iso(start), iso(end)]);
            expect(w).toMatchObject({ may_call_now: false, reason: 'not_checked' });
          }
        }),
        { numRuns: 40, seed },
      );
      expect(file.sb.requests().length).toBe(requests);
    },
  );
});
