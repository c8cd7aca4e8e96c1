// `dnc check --at`: each number's calling window beside its verdict, through the CLI against the sandbox, compared
// with the rules table of issue 28 worked out by hand (local opening and closing times turned into UTC here).
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { sandboxForFile, scratchFolders } from '../batch/helpers.js';
import { runDnc, spawnDnc, type RunResult } from '../helpers/cli.js';

const file = sandboxForFile();
const dir = file.dir;
let env: Record<string, string>;
const HOOK = ['--webhook-url', 'https://hooks.example.com/dnc'];

beforeAll(() => {
  env = { ...file.env, ...scratchFolders(dir) };
});

async function dnc(argv: string[], extraEnv: Record<string, string> = {}): Promise<RunResult> {
  return runDnc(argv, { env: { ...env, ...extraEnv }, homedir: dir, cwd: dir });
}

interface Calling {
  time_zones: string[];
  location_known: boolean;
  state: string | null;
  may_call_now: boolean;
  in_window: boolean;
  next_window_start: string | null;
  next_window_end: string | null;
  never_callable: boolean;
  weekly_rule: string;
  local_times: Array<{
    time_zone: string;
    local_time: string;
    today_window: string | null;
    closed_today: string | null;
  }>;
  rules: string[];
  policy: string | null;
  override: unknown;
  rules_version: string;
}

/** The `calling` objects of `dnc --json check NUMBERS --at AT` (webhook mode: AU lookups need it). */
async function windowsAt(numbers: string[], at: string, extra: string[] = [], extraEnv: Record<string, string> = {}) {
  const r = await dnc(['--json', 'check', ...numbers, '--at', at, ...HOOK, ...extra], extraEnv);
  expect(r.code, r.stderr).toBe(0);
  const lines = r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { phone_number: string; calling: Calling });
  expect(lines.map((l) => l.phone_number)).toEqual(numbers);
  return { windows: lines.map((l) => l.calling), stderr: r.stderr };
}

/**
 * The fields of a window the table decides: inside it at that instant, and the window in progress or the next (the
 * time test alone: these lookups are webhook receipts, with no verdict yet, so may_call_now is false).
 */
const answer = (c: Calling) => [c.in_window, c.next_window_start, c.next_window_end];

describe('dnc check --json --at: the window at fixed instants, as the table gives it', () => {
  it('US daylight saving: 08:00 New York is 13:00Z on Saturday 7 March, 12:00Z on Sunday 8 March', async () => {
    const before = await windowsAt(['+12125551234'], '2026-03-07T12:30:00Z');
    // 07:30 EST: closed; opens 08:00 EST, closes 21:00 EST.
    expect(answer(before.windows[0]!)).toEqual([false, '2026-03-07T13:00:00Z', '2026-03-08T02:00:00Z']);
    const after = await windowsAt(['+12125551234'], '2026-03-08T12:30:00Z');
    // 08:30 EDT: open since 08:00 EDT, until 21:00 EDT.
    expect(answer(after.windows[0]!)).toEqual([true, '2026-03-08T12:00:00Z', '2026-03-09T01:00:00Z']);
    expect(after.windows[0]!.local_times[0]!.local_time).toBe('2026-03-08T08:30:00-04:00');
  });

  it('AU daylight saving and a holiday: Easter Monday after clocks go back, a Monday after they go forward', async () => {
    // Monday 6 April 2026, 10:00 AEST (daylight saving ended on the 5th): Easter Monday, no calls; Tuesday 09:00 AEST.
    const easter = await windowsAt(['+61298765432'], '2026-04-06T00:00:00Z');
    expect(answer(easter.windows[0]!)).toEqual([false, '2026-04-06T23:00:00Z', '2026-04-07T10:00:00Z']);
    expect(easter.windows[0]!.local_times[0]!.closed_today).toBe('public holiday (AU): Easter Monday');
    // Monday 5 October 2026, 08:00 AEDT (daylight saving began on the 4th): opens 09:00 AEDT.
    const october = await windowsAt(['+61298765432'], '2026-10-04T21:00:00Z');
    expect(answer(october.windows[0]!)).toEqual([false, '2026-10-04T22:00:00Z', '2026-10-05T09:00:00Z']);
  });

  it('ES daylight saving, a national holiday and a weekend', async () => {
    // Friday 27 March 08:30 CET, before the change: opens 09:00 CET.
    expect(answer((await windowsAt(['+34912345678'], '2026-03-27T07:30:00Z')).windows[0]!)).toEqual([
      false,
      '2026-03-27T08:00:00Z',
      '2026-03-27T20:00:00Z',
    ]);
    // Monday 30 March 09:30 CEST, after it: open from 09:00 CEST to 21:00 CEST.
    expect(answer((await windowsAt(['+34912345678'], '2026-03-30T07:30:00Z')).windows[0]!)).toEqual([
      true,
      '2026-03-30T07:00:00Z',
      '2026-03-30T19:00:00Z',
    ]);
    // Saturday 10 October: no calls on the weekend, nor on Monday the 12th (Fiesta Nacional): Tuesday 09:00 CEST.
    const weekend = await windowsAt(['+34912345678'], '2026-10-10T10:00:00Z');
    expect(answer(weekend.windows[0]!)).toEqual([false, '2026-10-13T07:00:00Z', '2026-10-13T19:00:00Z']);
    expect(weekend.windows[0]!.local_times[0]!.closed_today).toBe('no calls on Saturday');
    const holiday = await windowsAt(['+34912345678'], '2026-10-12T10:00:00Z');
    expect(holiday.windows[0]!.local_times[0]!.closed_today).toMatch(/^public holiday \(ES\): Fiesta Nacional/);
  });

  it('an AU weekend: Sunday 5 July has no calls; Monday 09:00 AEST', async () => {
    const sunday = await windowsAt(['+61298765432'], '2026-07-05T01:00:00Z');
    expect(answer(sunday.windows[0]!)).toEqual([false, '2026-07-05T23:00:00Z', '2026-07-06T10:00:00Z']);
    expect(sunday.windows[0]!.local_times[0]!.closed_today).toBe('no calls on Sunday');
  });

  it('Arizona keeps 08:00 MST all year: 15:00Z in January and in July', async () => {
    const { windows } = await windowsAt(['+16025551234'], '2026-01-15T15:30:00Z');
    expect(answer(windows[0]!)).toEqual([true, '2026-01-15T15:00:00Z', '2026-01-16T04:00:00Z']);
    const july = await windowsAt(['+16025551234'], '2026-07-15T14:30:00Z');
    expect(july.windows[0]!.time_zones).toEqual(['America/Phoenix']);
    expect(answer(july.windows[0]!)).toEqual([false, '2026-07-15T15:00:00Z', '2026-07-16T04:00:00Z']);
  });

  it('a two-zone area code (605): from 08:00 Mountain to 21:00 Central', async () => {
    const { windows } = await windowsAt(['+16055551234'], '2026-07-15T14:30:00Z');
    expect(windows[0]!.time_zones).toEqual(['America/Denver', 'America/North_Dakota/Center']);
    // 08:00 MDT = 14:00Z (Central opened at 13:00Z); 21:00 CDT = 02:00Z (Mountain would go on to 03:00Z).
    expect(answer(windows[0]!)).toEqual([true, '2026-07-15T14:00:00Z', '2026-07-16T02:00:00Z']);
    expect(windows[0]!.local_times.map((t) => t.local_time)).toEqual([
      '2026-07-15T08:30:00-06:00',
      '2026-07-15T09:30:00-05:00',
    ]);
  });

  it('a state overlay: Florida closes at 20:00, where New York goes on to 21:00', async () => {
    const { windows } = await windowsAt(['+13055551234', '+12125551234'], '2026-07-01T00:30:00Z');
    expect(windows[0]!.state).toBe('FL');
    expect(windows[0]!.rules).toEqual(['US', 'US-FL']);
    expect(answer(windows[0]!)).toEqual([false, '2026-07-01T12:00:00Z', '2026-07-02T00:00:00Z']);
    expect(answer(windows[1]!)).toEqual([true, '2026-06-30T12:00:00Z', '2026-07-01T01:00:00Z']);
  });

  it('a toll-free number gets every US and Canadian zone, every state rule and the CRTC rule, and says so', async () => {
    const { windows } = await windowsAt(['+18005551234'], '2026-07-01T15:00:00Z');
    const w = windows[0]!;
    expect(w.location_known).toBe(false);
    expect(w.state).toBeNull();
    expect(w.time_zones).toEqual(
      expect.arrayContaining(['America/New_York', 'America/Los_Angeles', 'Pacific/Honolulu']),
    );
    expect(w.time_zones).toContain('America/St_Johns');
    // Every state's rule at once (KY from 10:00, RI until 18:00 on weekdays; no Sundays), held in every zone of the
    // US and Canada (a toll-free subscriber may be in either): 10:00 Hawaii (20:00Z) to 18:00 Newfoundland (20:30Z).
    expect(w.weekly_rule).toMatch(/^Mon-Fri 10:00-18:00; Sat 10:00-17:00/);
    expect(answer(w)).toEqual([false, '2026-07-01T20:00:00Z', '2026-07-01T20:30:00Z']);
  });
});

describe('the team policy and an override, from the calling settings', () => {
  const settingsFile = (name: string, settings: unknown) => {
    const p = path.join(dir, name);
    writeFileSync(p, JSON.stringify(settings), { mode: 0o600 });
    return p;
  };

  it('a policy (Mon-Fri 09:00-19:00) narrows the law: no calls at 19:30 on a weekday, none on a Saturday', async () => {
    const file = settingsFile('policy.json', { policy: { name: 'Acme', hours: { 'mon-fri': '09:00-19:00' } } });
    const evening = await windowsAt(['+12125551234'], '2026-07-01T23:30:00Z', ['--calling-settings', file]);
    expect(evening.windows[0]!.policy).toBe('Acme');
    expect(evening.windows[0]!.weekly_rule).toBe('Mon-Fri 09:00-19:00');
    expect(answer(evening.windows[0]!)).toEqual([false, '2026-07-02T13:00:00Z', '2026-07-02T23:00:00Z']);
    const saturday = await windowsAt(['+12125551234'], '2026-07-04T15:00:00Z', ['--calling-settings', file]);
    expect(answer(saturday.windows[0]!)).toEqual([false, '2026-07-06T13:00:00Z', '2026-07-06T23:00:00Z']);
    expect(saturday.windows[0]!.rules_version).toMatch(/ settings\/[0-9a-f]{12}$/);
  });

  it('an override widens the law for its numbers, is said on stderr and is in the JSON as configured', async () => {
    const override = {
      reason: 'existing customers with prior express consent (LEG-42)',
      countries: ['US'],
      states: ['KY'],
      hours: { 'mon-sun': '09:00-21:00' },
    };
    const file = settingsFile('override.json', { overrides: [override] });
    // 09:30 EDT in Louisville: Kentucky's law opens at 10:00, the override at 09:00.
    const law = await windowsAt(['+15025551234'], '2026-07-01T13:30:00Z');
    expect(answer(law.windows[0]!)).toEqual([false, '2026-07-01T14:00:00Z', '2026-07-02T01:00:00Z']);
    expect(law.stderr).not.toContain('override');
    const r = await windowsAt(['+15025551234', '+12125551234'], '2026-07-01T13:30:00Z', ['--calling-settings', file]);
    expect(answer(r.windows[0]!)).toEqual([true, '2026-07-01T13:00:00Z', '2026-07-02T01:00:00Z']);
    expect(r.windows[0]!.override).toEqual(override);
    expect(r.windows[0]!.rules).toEqual(['override']);
    // Only the override's own numbers: New York's window is the law's.
    expect(r.windows[1]!.override).toBeNull();
    expect(r.stderr).toContain(
      "dnc: +1 502 555 1234: a calling override sets the law's hours aside (Mon-Sun 09:00-21:00): " +
        'existing customers with prior express consent (LEG-42)',
    );
    expect(r.stderr.match(/override/g)).toHaveLength(1);
  });

  it('flag > DNC_CALLING_SETTINGS > the config file (a profile replacing the top level)', async () => {
    const cfgDir = path.join(dir, 'config', 'dnc');
    mkdirSync(cfgDir, { recursive: true });
    const at = '2026-07-01T22:30:00Z'; // 18:30 EDT, a Wednesday
    writeFileSync(
      path.join(cfgDir, 'config.json'),
      JSON.stringify({
        calling: { policy: { name: 'top', hours: { 'mon-sun': '09:00-18:00' } } },
        profiles: { late: { calling: { policy: { name: 'profile', hours: { 'mon-sun': '09:00-20:00' } } } } },
      }),
      { mode: 0o600 },
    );
    const envFile = settingsFile('env.json', { policy: { name: 'env', hours: { 'mon-sun': '09:00-19:00' } } });
    const flagFile = settingsFile('flag.json', { policy: { name: 'flag', hours: { 'mon-sun': '09:00-17:00' } } });
    const policyOf = async (extra: string[], extraEnv: Record<string, string> = {}) =>
      (await windowsAt(['+12125551234'], at, extra, extraEnv)).windows[0]!.policy;
    try {
      expect(await policyOf([])).toBe('top');
      expect(await policyOf([], { DNC_PROFILE: 'late' })).toBe('profile');
      expect(await policyOf([], { DNC_CALLING_SETTINGS: envFile })).toBe('env');
      expect(await policyOf(['--calling-settings', flagFile], { DNC_CALLING_SETTINGS: envFile })).toBe('flag');
    } finally {
      rmSync(path.join(cfgDir, 'config.json'));
    }
  });

  it('settings that are not valid, or a file others may write, are refused before anything is sent', async () => {
    const bad = settingsFile('bad.json', { policy: { hours: { 'mon-fri': '9-19' } } });
    const sent = file.sb.lookups().length;
    const r = await dnc(['check', '+12125551234', '--calling-settings', bad]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`[E_CONFIG_INVALID]: --calling-settings ${bad}: calling.policy.hours.mon-fri: '9-19'`);
    const open = settingsFile('open.json', { overrides: [] });
    chmodSync(open, 0o666);
    const insecure = await dnc(['check', '+12125551234', '--calling-settings', open]);
    expect(insecure.code).toBe(2);
    expect(insecure.stderr).toContain('[E_CONFIG_INSECURE]');
    const missing = await dnc(['check', '+12125551234'], { DNC_CALLING_SETTINGS: path.join(dir, 'nope.json') });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('[E_CONFIG_UNREADABLE]: cannot read the calling settings');
    expect(missing.stderr).toContain('(DNC_CALLING_SETTINGS)');
    expect(file.sb.lookups().length).toBe(sent);
  });
});

describe('every number object carries its window', () => {
  it('a receipt, an internal-list verdict and a reused verdict', async () => {
    const added = await dnc(['suppress', 'add', '+12125550177', '--reason', 'asked not to be called']);
    expect(added.code, added.stderr).toBe(0);
    const first = await dnc(['--json', 'check', '+12125550100', '+12125550177', '--at', '2026-07-01T15:00:00Z']);
    expect(first.code, first.stderr).toBe(0);
    const again = await dnc([
      '--json',
      'check',
      '+12125550100',
      '--reuse-within',
      '1d',
      '--at',
      '2026-07-01T15:00:00Z',
    ]);
    const receipt = await dnc(['--json', 'check', '+61298765432', ...HOOK, '--at', '2026-07-01T15:00:00Z']);
    const objects = [first, again, receipt].flatMap((r) =>
      r.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    );
    expect(objects.map((o) => [o.status ?? null, o.reused ?? false, o.internal ?? false])).toEqual([
      ['succeeded', false, false],
      ['suppressed', false, true],
      ['succeeded', true, false],
      ['started', false, false],
    ]);
    for (const o of objects) {
      expect(Object.keys(o.calling)).toEqual(
        expect.arrayContaining(['time_zones', 'may_call_now', 'next_window_start', 'next_window_end', 'rules_version']),
      );
    }
    expect(objects[3].calling.time_zones).toEqual(['Australia/Sydney']);
  });

  it("the human block says the local time, today's window and whether now", async () => {
    const r = await dnc(['check', '+16055551234', '--at', '2026-07-15T13:30:00Z']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('  local time      Wed 2026-07-15 07:30 America/Denver; today 08:00-21:00\n');
    expect(r.stdout).toContain(
      '                  Wed 2026-07-15 08:30 America/North_Dakota/Center; today 08:00-21:00\n',
    );
    expect(r.stdout).toContain('  may call now    no; next window 2026-07-15T14:00:00Z to 2026-07-16T02:00:00Z\n');
    expect(r.stdout).toContain('  calling rule    US: Mon-Sun 08:00-21:00\n');
  });
});

describe('--at', () => {
  it('takes ISO 8601 with an offset only: anything else is a usage error (exit 2) and nothing is sent', async () => {
    const sent = file.sb.lookups().length;
    for (const [at, why] of [
      ['2026-07-01T15:00:00', 'give its offset too'],
      ['2026-07-01 15:00', 'give its offset too'],
      ['2026-07-01', 'give the time and its offset too'],
      ['tomorrow', 'is not a date-time'],
      ['2026-02-30T10:00:00Z', 'no such date or time'],
    ] as const) {
      const r = await dnc(['check', '+12125551234', '--at', at]);
      expect(r.code, at).toBe(2);
      expect(r.stderr, at).toContain('[E_USAGE]: --at');
      expect(r.stderr, at).toContain(why);
    }
    expect(file.sb.lookups().length).toBe(sent);
  });

  it("gives the same answer whatever the machine's time zone (the built binary under exotic TZ values)", async () => {
    const argv = ['--json', 'check', '+16055551234', '+61298765432', '+34912345678', ...HOOK];
    const at = ['--at', '2026-10-04T23:45:00+05:45'];
    const runs = await Promise.all(
      ['UTC', 'Pacific/Chatham', 'Asia/Kathmandu', 'America/St_Johns'].map((tz) =>
        spawnDnc([...argv, ...at], { env: { ...env, TZ: tz }, cwd: dir }),
      ),
    );
    const callings = runs.map((r) => {
      expect(r.code, r.stderr).toBe(0);
      return r.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { calling: Calling }).calling);
    });
    for (const c of callings.slice(1)) expect(c).toEqual(callings[0]);
    // 23:45 at +05:45 is 18:00Z: 20:00 in Madrid on a Sunday (no calls; Monday 09:00 CEST = 07:00Z).
    expect(answer(callings[0]![2]!)).toEqual([false, '2026-10-05T07:00:00Z', '2026-10-05T19:00:00Z']);
  });
});
