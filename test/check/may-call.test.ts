// Issue 36: `calling` never says yes to a number that may not be called. Through the CLI against the sandbox over
// loopback: a register's do-not-call verdict, the internal list, an invalid number, a webhook lookup still pending,
// an exempted number (which follows the exemption rules), in text and --json.
import { beforeAll, describe, expect, it } from 'vitest';
import { sandboxForFile, scratchFolders } from '../batch/helpers.js';
import { runDnc, type RunResult } from '../helpers/cli.js';

const file = sandboxForFile();
const dir = file.dir;
let env: Record<string, string>;
// Tuesday 1 December 2026, 10:00 in Washington: inside the US window (08:00-21:00).
const AT = ['--at', '2026-12-01T15:00:00Z'];

beforeAll(() => {
  env = { ...file.env, ...scratchFolders(dir) };
});

const dnc = (argv: string[]): Promise<RunResult> => runDnc(argv, { env, homedir: dir, cwd: dir });

interface Line {
  phone_number: string;
  do_not_call?: boolean;
  calling: {
    may_call_now: boolean;
    reason: string | null;
    in_window: boolean;
    next_window_start: string | null;
    next_window_end: string | null;
    time_zones: string[];
    rules_version: string;
  };
}

async function json(argv: string[], exit = 0): Promise<Line[]> {
  const r = await dnc(['--json', 'check', ...argv, ...AT]);
  expect(r.code, r.stderr).toBe(exit);
  return r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Line);
}

describe('dnc check: may_call_now is never yes for a number that may not be called', () => {
  it('a do-not-call number inside its window: false, reason do_not_call, no window (text and JSON)', async () => {
    const [line] = await json(['+12025550101']);
    expect(line!.do_not_call).toBe(true);
    expect(line!.calling).toMatchObject({
      time_zones: ['America/New_York'],
      in_window: true,
      may_call_now: false,
      reason: 'do_not_call',
      next_window_start: null,
      next_window_end: null,
    });
    const text = await dnc(['check', '+12025550101', ...AT]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain('  may call now    no — on the US do-not-call register\n');
    expect(text.stdout).not.toContain('yes, until');
  });

  it('a callable number at the same instant: yes, with its window (the control)', async () => {
    const [line] = await json(['+12025550100']);
    expect(line!.calling).toMatchObject({
      may_call_now: true,
      reason: null,
      in_window: true,
      next_window_start: '2026-12-01T13:00:00Z',
      next_window_end: '2026-12-02T02:00:00Z',
    });
    expect((await dnc(['check', '+12025550100', ...AT])).stdout).toContain(
      '  may call now    yes, until 2026-12-02T02:00:00Z\n',
    );
  });

  it('a GB do-not-call number says the GB register', async () => {
    const text = await dnc(['check', '+442079460101', ...AT]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain('DO NOT CALL');
    expect(text.stdout).toContain('  may call now    no — on the GB do-not-call register\n');
  });

  it('a number on the internal list: false, reason suppressed, nothing sent', async () => {
    const added = await dnc(['suppress', 'add', '+12025550177', '--reason', 'asked not to be called']);
    expect(added.code, added.stderr).toBe(0);
    const sent = file.sb.lookups().length;
    const [line] = await json(['+12025550177']);
    expect(line!.calling).toMatchObject({ may_call_now: false, reason: 'suppressed', next_window_start: null });
    const text = await dnc(['check', '+12025550177', ...AT]);
    expect(text.stdout).toContain('  may call now    no — on the internal do-not-call list\n');
    expect(file.sb.lookups().length).toBe(sent);
  });

  it("the register's invalid_phone_number: false, reason invalid", async () => {
    const [line] = await json(['+12025550990', '--no-validate'], 3);
    expect(line!.calling).toMatchObject({ may_call_now: false, reason: 'invalid', next_window_end: null });
  });

  it('a webhook lookup started: no verdict yet, so not now, but its window is told', async () => {
    const r = await dnc(['check', '+61298765432', '--webhook-url', 'https://hooks.example.com/dnc', ...AT]);
    expect(r.code, r.stderr).toBe(0);
    // 02:00 on Wednesday in Sydney: the window opens at 09:00 AEDT (22:00Z).
    expect(r.stdout).toContain(
      '  rules allow     no call now; next window 2026-12-01T22:00:00Z to 2026-12-02T09:00:00Z\n',
    );
    expect(r.stdout).toContain('  may call now    no — no verdict yet (it will be pushed to the webhook)\n');
  });

  it('an exempted do-not-call number follows the exemption: callable, so yes inside its window', async () => {
    const until = '2099-12-31';
    const exempt = await dnc(['exempt', 'add', '+12025550103', '--basis', 'consent', '--until', until]);
    expect(exempt.code, exempt.stderr).toBe(0);
    const [line] = await json(['+12025550103']);
    expect(line!.do_not_call).toBe(true);
    expect(line!.calling).toMatchObject({ may_call_now: true, reason: null, next_window_end: '2026-12-02T02:00:00Z' });
  });

  it('reused verdicts are weighed as fresh ones: a reused do-not-call number is not callable', async () => {
    expect((await json(['+12025550105']))[0]!.calling.reason).toBe('do_not_call');
    const sent = file.sb.lookups().length;
    const [reused] = await json(['+12025550105', '--reuse-within', '1d']);
    expect(file.sb.lookups().length).toBe(sent);
    expect(reused!.calling).toMatchObject({ may_call_now: false, reason: 'do_not_call', next_window_start: null });
  });
});
