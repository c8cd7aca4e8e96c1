// Issue 47: the oracle's cases, written from the statutes and codes themselves (not from dnc's pack), asked of the
// built CLI (`dnc window --number N --at T --json`), and a Sunday dial list of the slot. Local times are
// worked out by hand: in December 2026 Eastern is UTC-5, Central UTC-6, Mountain UTC-7, Pacific UTC-8, New Zealand
// UTC+13 (daylight time, as in February).
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { sandboxForFile, scratchFolders } from '../batch/helpers.js';
import { runDnc } from '../helpers/cli.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { dnc as dncIn } from '../helpers/world.js';
import { scrubbedForFile } from './helpers.js';

const file = sandboxForFile();
let env: Record<string, string>;
beforeAll(() => {
  env = { ...file.env, ...scratchFolders(file.dir) };
});

interface Calling {
  in_window: boolean;
  rules: string[];
  local_times: Array<{ closed_today: string | null }>;
}

/** Whether the rules allow a call to `number` at `at`, and which rules made the answer. */
async function ask(number: string, at: string): Promise<Calling> {
  const r = await runDnc(['--json', 'window', '--number', number, '--at', at], {
    env,
    homedir: file.dir,
    cwd: file.dir,
  });
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { calling: Calling }).calling;
}

/** [number, instant, allowed, why]: each from the rule its comment cites. */
type Case = [string, string, boolean, string];

const DALLAS = '+12145550123';
const CASES: Case[] = [
  // Tex. Bus. & Com. Code 301.051: not before 9 a.m. or after 9 p.m. on a weekday or Saturday, nor before noon on a
  // Sunday.
  [DALLAS, '2026-12-09T14:59:00Z', false, 'TX Wednesday 08:59 CST'],
  [DALLAS, '2026-12-09T15:00:00Z', true, 'TX Wednesday 09:00 CST'],
  [DALLAS, '2026-12-10T02:59:00Z', true, 'TX Wednesday 20:59 CST'],
  [DALLAS, '2026-12-10T03:00:00Z', false, 'TX Wednesday 21:00 CST'],
  [DALLAS, '2026-12-13T17:59:00Z', false, 'TX Sunday 11:59 CST'],
  [DALLAS, '2026-12-13T18:00:00Z', true, 'TX Sunday 12:00 CST'],
  // 73 P.S. 2245(a)(10) (Act 73 of 2019): no telephone solicitation on a legal holiday.
  ['+12155550123', '2026-11-26T17:00:00Z', false, 'PA Thanksgiving 12:00 EST'],
  ['+12155550123', '2026-11-27T17:00:00Z', true, 'PA the Friday after, 12:00 EST'],
  // NZ Marketing Association Telemarketing Code: Monday to Saturday to 9 p.m.; no Sundays or public holidays.
  ['+6494567890', '2026-02-05T23:00:00Z', false, 'NZ Waitangi Day (Friday 6 February) 12:00 NZDT'],
  ['+6494567890', '2026-12-11T21:00:00Z', true, 'NZ Saturday 10:00 NZDT'],
  ['+6494567890', '2026-12-09T07:30:00Z', true, 'NZ Wednesday 20:30 NZDT'],
  ['+6494567890', '2026-12-12T23:00:00Z', false, 'NZ Sunday 12:00 NZDT'],
  // Miss. Code 77-3-725: 8 a.m. to 8 p.m., never on Sunday.
  ['+16015550123', '2026-12-13T15:00:00Z', false, 'MS Sunday 09:00 CST'],
  ['+16015550123', '2026-12-09T01:59:00Z', true, 'MS Tuesday 19:59 CST'],
  ['+16015550123', '2026-12-09T02:00:00Z', false, 'MS Tuesday 20:00 CST'],
  // R.I. Gen. Laws 5-61-3.4: weekdays 9 a.m.-6 p.m., Saturdays 10 a.m.-5 p.m., no Sundays or holidays.
  ['+14015550123', '2026-12-13T17:00:00Z', false, 'RI Sunday 12:00 EST'],
  ['+14015550123', '2026-12-12T21:59:00Z', true, 'RI Saturday 16:59 EST'],
  ['+14015550123', '2026-12-12T22:00:00Z', false, 'RI Saturday 17:00 EST'],
  ['+14015550123', '2026-12-09T23:00:00Z', false, 'RI Wednesday 18:00 EST'],
  // RCW 80.36.390: not after 8 p.m.
  ['+12065550123', '2026-12-10T03:59:00Z', true, 'WA Wednesday 19:59 PST'],
  ['+12065550123', '2026-12-10T04:00:00Z', false, 'WA Wednesday 20:00 PST'],
  // N.M. Stat. 57-12-22: not before 9 a.m.
  ['+15055550123', '2026-12-09T15:59:00Z', false, 'NM Wednesday 08:59 MST'],
  ['+15055550123', '2026-12-09T16:00:00Z', true, 'NM Wednesday 09:00 MST'],
  // 15 O.S. 775C.4 and M.G.L. c. 159C: not after 8 p.m.
  ['+14055550123', '2026-12-10T02:00:00Z', false, 'OK Wednesday 20:00 CST'],
  ['+16175550123', '2026-12-10T01:00:00Z', false, 'MA Wednesday 20:00 EST'],
  ['+16175550123', '2026-12-10T00:59:00Z', true, 'MA Wednesday 19:59 EST'],
  // Utah Code 13-25a-103: no calls on Sunday.
  ['+18015550123', '2026-12-13T19:00:00Z', false, 'UT Sunday 12:00 MST'],
  // The federal rule alone (16 CFR 310.4(c)): New York, 08:00-21:00.
  ['+12125550123', '2026-12-09T13:00:00Z', true, 'NY Wednesday 08:00 EST'],
  ['+12125550123', '2026-12-09T12:59:00Z', false, 'NY Wednesday 07:59 EST'],
];

describe('the oracle cases of issue 47, from the statutes', () => {
  for (const [number, at, allowed, why] of CASES) {
    it(`${why}: ${allowed ? 'allowed' : 'not allowed'}`, async () => {
      expect((await ask(number, at)).in_window).toBe(allowed);
    });
  }
});

describe('a past --at applies the rules then in force', () => {
  it('Maryland: 20:30 was inside the federal window in December 2023, outside the state one from 2024', async () => {
    const before = await ask('+14105550123', '2023-12-07T01:30:00Z');
    expect([before.in_window, before.rules]).toEqual([true, ['US']]);
    const after = await ask('+14105550123', '2024-12-05T01:30:00Z');
    expect([after.in_window, after.rules]).toEqual([false, ['US', 'US-MD']]);
  });

  it('Florida before and after 1 July 2021; Oklahoma before and after 1 November 2022', async () => {
    expect((await ask('+13055550123', '2021-06-03T00:30:00Z')).in_window).toBe(true);
    expect((await ask('+13055550123', '2021-07-08T00:30:00Z')).in_window).toBe(false);
    expect((await ask('+14055550123', '2022-10-06T01:30:00Z')).in_window).toBe(true);
    expect((await ask('+14055550123', '2022-11-10T02:30:00Z')).in_window).toBe(false);
  });

  it('Pennsylvania: Thanksgiving was a calling day before Act 73 of 2019; Texas names the version in force', async () => {
    const pa2018 = await ask('+12155550123', '2018-11-22T17:00:00Z');
    expect([pa2018.in_window, pa2018.rules]).toEqual([true, ['US', 'US-PA-1996']]);
    const tx = await ask(DALLAS, '2025-08-31T16:00:00Z');
    expect([tx.in_window, tx.rules]).toEqual([false, ['US', 'US-TX-2009']]);
    expect((await ask(DALLAS, '2025-09-07T16:00:00Z')).rules).toEqual(['US', 'US-TX']);
  });
});

// The Sunday slot, 2026-12-13 14:00-16:00Z: 08:00-10:00 in Dallas and Jackson, 09:00-11:00 in Providence and
// New York. Only New York may be called (federal 08:00-21:00); Texas waits for noon, Mississippi and Rhode Island
// for Monday.
const SUNDAY = scrubbedForFile(
  ['name,phone', 'dallas,+12145550100', 'jackson,+16015550102', 'providence,+14015550104', 'new york,+12125550106'],
  0,
);

describe('a Sunday dial list', () => {
  it('holds only the numbers the law lets be called throughout the slot', async () => {
    const out = path.join(SUNDAY.w.dir, 'sunday.txt');
    const argv = ['window', SUNDAY.results, '--from', '2026-12-13T14:00:00Z', '--until', '2026-12-13T16:00:00Z'];
    const r = await dncIn([...argv, '--dial-out', out], SUNDAY.w.env, {
      now: () => new Date('2026-12-08T12:00:00Z'),
      cwd: SUNDAY.w.dir,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(out, 'utf8')).toBe('+12125550106\n');
  });
});

// Numbers the numbering plan places in Guernsey or Jersey: the service answers GB, with the GB register, so the GB
// rules and the GB validity window (28 days, TPS) govern them.
const CHANNEL_ISLANDS = scrubbedForFile(['name,phone', 'guernsey,+447911123456', 'jersey,+447700700124'], 0);

describe('the service country governs', () => {
  it('+44 7911 is under GB rules with --number (not the default of GG)', async () => {
    const r = await runDnc(['--json', 'window', '--number', '+447911123456', '--at', '2026-12-12T08:30:00Z'], {
      env,
      homedir: file.dir,
      cwd: file.dir,
    });
    const answer = JSON.parse(r.stdout) as { country: string; calling: Calling & { time_zones: string[] } };
    // Saturday 08:30 in London: the DMA Code opens at 09:00 on Saturdays; the default would not open at all.
    expect([answer.country, answer.calling.rules, answer.calling.time_zones]).toEqual([
      'GB',
      ['GB'],
      ['Europe/London'],
    ]);
    expect(answer.calling.in_window).toBe(false);
  });

  it('a batch gives them the GB rule and a 28-day validity', () => {
    const [header, ...rows] = readCsvIndependently(CHANNEL_ISLANDS.results);
    const col = (name: string): number => header!.indexOf(name);
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row[col('dnc_calling_window')]).toBe('Mon-Fri 08:00-21:00; Sat-Sun 09:00-21:00');
      const checked = Date.parse(row[col('dnc_checked_at')]!);
      const until = Date.parse(row[col('dnc_valid_until')]!);
      expect(Math.round((until - checked) / 86_400_000)).toBe(28);
    }
  });
});
