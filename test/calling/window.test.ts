// Calling windows at fixed instants, against times worked out by hand from the rules table and the clock changes
// of 2026 (US: 8 March and 1 November; AU: 5 April and 4 October; ES: 29 March and 25 October).
import { describe, expect, it } from 'vitest';
import { createCallingWindows, type CallingWindow, type CallingWindows } from '../../src/calling/index.js';

const TZDATA = 'test-tz';
const plain = createCallingWindows({ tzdataVersion: TZDATA });

const COUNTRY: Record<string, string> = { '1': 'US', '61': 'AU', '34': 'ES', '44': 'GB', '49': 'DE' };
function countryOf(e164: string): string {
  const code = Object.keys(COUNTRY).find((c) => e164.startsWith(`+${c}`))!;
  return COUNTRY[code]!;
}

function at(windows: CallingWindows, e164: string, instant: string): CallingWindow {
  return windows.window({ e164, country: countryOf(e164) }, Date.parse(instant));
}

/** in_window and the window, the facts most tests state: 'now 2026-07-01T12:00:00Z/2026-07-02T01:00:00Z'. */
function facts(w: CallingWindow): string {
  return `${w.in_window ? 'now' : 'not now'} ${w.next_window_start}/${w.next_window_end}`;
}

const NEW_YORK = '+12125551234';
const PHOENIX = '+16025551234';
const SYDNEY = '+61298765432';
const MADRID = '+34912345678';
const SOUTH_DAKOTA = '+16055551234'; // area code 605: America/Denver and America/North_Dakota/Center
const ALABAMA = '+12055551234';

describe('daylight-saving changes', () => {
  it('US: 08:00 New York is 13:00Z before 8 March and 12:00Z after; 1 November turns it back', () => {
    expect(facts(at(plain, NEW_YORK, '2026-03-07T12:30:00Z'))).toBe(
      'not now 2026-03-07T13:00:00Z/2026-03-08T02:00:00Z',
    );
    expect(facts(at(plain, NEW_YORK, '2026-03-08T11:30:00Z'))).toBe(
      'not now 2026-03-08T12:00:00Z/2026-03-09T01:00:00Z',
    );
    expect(facts(at(plain, NEW_YORK, '2026-10-31T12:30:00Z'))).toBe('now 2026-10-31T12:00:00Z/2026-11-01T01:00:00Z');
    expect(facts(at(plain, NEW_YORK, '2026-11-01T12:30:00Z'))).toBe(
      'not now 2026-11-01T13:00:00Z/2026-11-02T02:00:00Z',
    );
    const w = at(plain, NEW_YORK, '2026-03-08T11:30:00Z');
    expect(w.local_times).toEqual([
      {
        time_zone: 'America/New_York',
        local_time: '2026-03-08T07:30:00-04:00',
        today_window: '08:00-21:00',
        closed_today: null,
      },
    ]);
  });

  it('AU: after Easter (clocks back on 5 April) the next window is Tuesday 09:00 AEST; in October, Monday AEDT', () => {
    // Saturday 4 April 19:00 AEDT: Easter Saturday, then Sunday, then Easter Monday: no calls until Tuesday.
    const easter = at(plain, SYDNEY, '2026-04-04T08:00:00Z');
    expect(facts(easter)).toBe('not now 2026-04-06T23:00:00Z/2026-04-07T10:00:00Z');
    expect(easter.local_times[0]!.closed_today).toBe('public holiday (AU): Easter Saturday');
    // Saturday 3 October 18:00 AEST, after the Saturday window: Monday 5 October, clocks forward on the Sunday.
    expect(facts(at(plain, SYDNEY, '2026-10-03T08:00:00Z'))).toBe('not now 2026-10-04T22:00:00Z/2026-10-05T09:00:00Z');
    expect(facts(at(plain, SYDNEY, '2026-10-01T23:30:00Z'))).toBe('now 2026-10-01T23:00:00Z/2026-10-02T10:00:00Z');
  });

  it('ES: 09:00 Madrid is 08:00Z before 29 March and 07:00Z after; weekends have no calls', () => {
    expect(facts(at(plain, MADRID, '2026-03-27T07:30:00Z'))).toBe('not now 2026-03-27T08:00:00Z/2026-03-27T20:00:00Z');
    const saturday = at(plain, MADRID, '2026-03-28T10:00:00Z');
    expect(facts(saturday)).toBe('not now 2026-03-30T07:00:00Z/2026-03-30T19:00:00Z');
    expect(saturday.local_times[0]!.closed_today).toBe('no calls on Saturday');
    expect(facts(at(plain, MADRID, '2026-10-24T10:00:00Z'))).toBe('not now 2026-10-26T08:00:00Z/2026-10-26T20:00:00Z');
  });
});

describe('zones', () => {
  it('Arizona keeps 08:00 MST all year: 15:00Z in January and in July, when Denver is at 14:00Z', () => {
    expect(facts(at(plain, PHOENIX, '2026-01-15T14:30:00Z'))).toBe('not now 2026-01-15T15:00:00Z/2026-01-16T04:00:00Z');
    expect(facts(at(plain, PHOENIX, '2026-07-15T14:30:00Z'))).toBe('not now 2026-07-15T15:00:00Z/2026-07-16T04:00:00Z');
    expect(facts(at(plain, '+13035551234', '2026-07-15T14:30:00Z'))).toBe(
      'now 2026-07-15T14:00:00Z/2026-07-16T03:00:00Z',
    );
  });

  it('a two-zone area code gets the intersection: from 08:00 Mountain to 21:00 Central', () => {
    const july = at(plain, SOUTH_DAKOTA, '2026-07-15T13:30:00Z');
    expect(july.time_zones).toEqual(['America/Denver', 'America/North_Dakota/Center']);
    // 08:30 in Central time, but 07:30 in Mountain time: not yet.
    expect(facts(july)).toBe('not now 2026-07-15T14:00:00Z/2026-07-16T02:00:00Z');
    expect(july.local_times.map((l) => l.local_time)).toEqual([
      '2026-07-15T07:30:00-06:00',
      '2026-07-15T08:30:00-05:00',
    ]);
    expect(facts(at(plain, SOUTH_DAKOTA, '2026-01-15T15:30:00Z'))).toBe(
      'now 2026-01-15T15:00:00Z/2026-01-16T03:00:00Z',
    );
    expect(plain.zonesText({ e164: SOUTH_DAKOTA, country: 'US' })).toBe('America/Denver America/North_Dakota/Center');
  });

  it('a number whose location is not known gets all its country zones and every state rule, and says so', () => {
    const w = at(plain, '+18005551234', '2026-07-01T15:00:00Z');
    expect(w.location_known).toBe(false);
    expect(w.state).toBeNull();
    expect(w.time_zones).toContain('Pacific/Honolulu');
    expect(w.time_zones).toContain('America/New_York');
    // Kentucky's 10:00, Rhode Island's 18:00 on weekdays and 17:00 on Saturdays, no Sundays (AL, LA, MS, RI, UT).
    expect(w.weekly_rule).toBe(
      'Mon-Fri 10:00-18:00; Sat 10:00-17:00; not on public holidays (US-AL, US-LA, US-MS, US-PA, US-RI, US-UT)',
    );
    // A NANP toll-free subscriber may be in Canada too: the CRTC's rule and Canada's zones join the US ones, and the
    // combined rule holds in every zone: 10:00 in Honolulu (20:00Z) to 18:00 in St John's (NDT, 20:30Z).
    expect(w.time_zones).toContain('America/St_Johns');
    expect(w.rules).toContain('CA');
    expect(facts(w)).toBe('not now 2026-07-01T20:00:00Z/2026-07-01T20:30:00Z');
    // A geographic number whose state is not known (no digits) gets every state, but not Canada.
    expect(at(plain, '+1', '2026-07-01T15:00:00Z').rules).not.toContain('CA');
    const mobile = at(plain, '+61412345678', '2026-07-01T00:30:00Z');
    expect(mobile.location_known).toBe(false);
    // 09:00 in Perth (01:00Z) to 20:00 on Lord Howe Island (09:30Z, UTC+10:30 in July).
    expect(facts(mobile)).toBe('not now 2026-07-01T01:00:00Z/2026-07-01T09:30:00Z');
  });
});

describe('rules', () => {
  it('state overlays narrow the federal window', () => {
    const cases: Array<[string, string, string, string]> = [
      ['+13055551234', 'FL', 'Mon-Sun 08:00-20:00', '2026-07-01T12:00:00Z/2026-07-02T00:00:00Z'],
      ['+14105551234', 'MD', 'Mon-Sun 08:00-20:00', '2026-07-01T12:00:00Z/2026-07-02T00:00:00Z'],
      ['+12035551234', 'CT', 'Mon-Sun 09:00-20:00', '2026-07-01T13:00:00Z/2026-07-02T00:00:00Z'],
      ['+17025551234', 'NV', 'Mon-Sun 09:00-20:00', '2026-07-01T16:00:00Z/2026-07-02T03:00:00Z'],
      ['+15025551234', 'KY', 'Mon-Sun 10:00-21:00', '2026-07-01T14:00:00Z/2026-07-02T01:00:00Z'],
      [
        '+15045551234',
        'LA',
        'Mon-Sat 08:00-20:00; not on public holidays (US-LA)',
        '2026-07-01T13:00:00Z/2026-07-02T01:00:00Z',
      ],
      [NEW_YORK, 'NY', 'Mon-Sun 08:00-21:00', '2026-07-01T12:00:00Z/2026-07-02T01:00:00Z'],
    ];
    for (const [e164, state, rule, window] of cases) {
      const w = at(plain, e164, '2026-07-01T11:00:00Z');
      expect([w.state, w.weekly_rule, `${w.next_window_start}/${w.next_window_end}`], e164).toEqual([
        state,
        rule,
        window,
      ]);
      expect(w.rules, e164).toEqual(state === 'NY' ? ['US'] : ['US', `US-${state}`]);
    }
  });

  it('AL: no calls on Sundays or its holidays (Thanksgiving), Monday to Saturday 08:00-20:00 otherwise', () => {
    const thanksgiving = at(plain, ALABAMA, '2026-11-26T16:00:00Z');
    expect(thanksgiving.local_times[0]!.closed_today).toBe('public holiday (US-AL): Thanksgiving Day');
    expect(facts(thanksgiving)).toBe('not now 2026-11-27T14:00:00Z/2026-11-28T02:00:00Z');
    // Saturday 28 November 21:00 CST: over; Sunday none; Monday 08:00 CST.
    const sunday = at(plain, ALABAMA, '2026-11-29T16:00:00Z');
    expect(sunday.local_times[0]!.closed_today).toBe('no calls on Sunday');
    expect(facts(sunday)).toBe('not now 2026-11-30T14:00:00Z/2026-12-01T02:00:00Z');
    // Confederate Memorial Day is Alabama's own (27 April 2026): New York may be called.
    expect(at(plain, ALABAMA, '2026-04-27T15:00:00Z').in_window).toBe(false);
    expect(at(plain, NEW_YORK, '2026-04-27T15:00:00Z').in_window).toBe(true);
  });

  it('ES national holidays (Fiesta Nacional, Monday 12 October) and AU weekends', () => {
    expect(facts(at(plain, MADRID, '2026-10-12T10:00:00Z'))).toBe('not now 2026-10-13T07:00:00Z/2026-10-13T19:00:00Z');
    // AU Saturday: 09:00-17:00; Sunday: none.
    expect(facts(at(plain, SYDNEY, '2026-08-08T00:00:00Z'))).toBe('now 2026-08-07T23:00:00Z/2026-08-08T07:00:00Z');
    const sunday = at(plain, SYDNEY, '2026-08-09T00:00:00Z');
    expect(facts(sunday)).toBe('not now 2026-08-09T23:00:00Z/2026-08-10T10:00:00Z');
    expect(sunday.weekly_rule).toBe('Mon-Fri 09:00-20:00; Sat 09:00-17:00; not on public holidays (AU)');
  });

  it('GB, CA and the default for other countries', () => {
    expect(plain.weeklyRule({ e164: '+442079460123', country: 'GB' })).toBe('Mon-Fri 08:00-21:00; Sat-Sun 09:00-21:00');
    expect(plain.weeklyRule({ e164: '+14165551234', country: 'CA' })).toBe('Mon-Fri 09:00-21:30; Sat-Sun 10:00-18:00');
    // Germany has no published rule: the default, and never on its public holidays.
    expect(plain.weeklyRule({ e164: '+4930123456', country: 'DE' })).toBe(
      'Mon-Fri 09:00-20:00; not on public holidays (DE)',
    );
    const other = createCallingWindows({
      tzdataVersion: TZDATA,
      settings: { default_hours: { 'mon-sat': '10:00-18:00' } },
    });
    expect(other.weeklyRule({ e164: '+4930123456', country: 'DE' })).toBe(
      'Mon-Sat 10:00-18:00; not on public holidays (DE)',
    );
    expect(other.weeklyRule({ e164: NEW_YORK, country: 'US' })).toBe('Mon-Sun 08:00-21:00');
  });

  it('a company policy narrows (09:00-19:00, no Saturdays) and cannot widen', () => {
    const acme = createCallingWindows({
      tzdataVersion: TZDATA,
      settings: { policy: { name: 'Acme 2026', hours: { 'mon-fri': '09:00-19:00', sun: '12:00-23:00' } } },
    });
    const weekday = at(acme, NEW_YORK, '2026-07-01T12:30:00Z');
    expect(facts(weekday)).toBe('not now 2026-07-01T13:00:00Z/2026-07-01T23:00:00Z');
    // Sunday 12:00-23:00 is cut to the law's 21:00.
    expect(weekday.weekly_rule).toBe('Mon-Fri 09:00-19:00; Sun 12:00-21:00');
    expect(weekday.rules).toEqual(['US', 'policy']);
    expect(weekday.policy).toBe('Acme 2026');
    expect(weekday.override).toBeNull();
    // Saturday: none under the policy; Sunday from 12:00 EDT.
    expect(facts(at(acme, NEW_YORK, '2026-07-04T15:00:00Z'))).toBe('not now 2026-07-05T16:00:00Z/2026-07-06T01:00:00Z');
    const holidays = createCallingWindows({
      tzdataVersion: TZDATA,
      settings: { policy: { closed_on: ['public_holidays'] } },
    });
    const july3 = at(holidays, NEW_YORK, '2026-07-03T15:00:00Z');
    expect(july3.local_times[0]!.closed_today).toBe('public holiday (US): Independence Day (substitute day)');
    expect(july3.weekly_rule).toBe('Mon-Sun 08:00-21:00; not on public holidays (US)');
  });

  it('an override may widen, names its reason in every result it touches, and the policy still applies', () => {
    const reason = 'existing customers with prior express consent (LEG-42)';
    const settings = {
      overrides: [{ reason, countries: ['US'], states: ['KY'], hours: { 'mon-sun': '07:00-22:00' } }],
    };
    const windows = createCallingWindows({ tzdataVersion: TZDATA, settings });
    const kentucky = at(windows, '+15025551234', '2026-07-01T11:30:00Z');
    expect(facts(kentucky)).toBe('now 2026-07-01T11:00:00Z/2026-07-02T02:00:00Z');
    expect(kentucky.override).toEqual({
      reason,
      countries: ['US'],
      states: ['KY'],
      hours: { 'mon-sun': '07:00-22:00' },
    });
    expect(kentucky.rules).toEqual(['override']);
    expect(at(windows, NEW_YORK, '2026-07-01T11:30:00Z').override).toBeNull();
    const both = createCallingWindows({
      tzdataVersion: TZDATA,
      settings: { ...settings, policy: { hours: { 'mon-fri': '09:00-19:00' } } },
    });
    expect(at(both, '+15025551234', '2026-07-01T11:30:00Z').weekly_rule).toBe('Mon-Fri 09:00-19:00');
  });

  it('zones whose windows never meet make a number never callable', () => {
    const windows = createCallingWindows({
      tzdataVersion: TZDATA,
      settings: { policy: { hours: { 'mon-sun': '09:00-10:00' } } },
    });
    const w = at(windows, SOUTH_DAKOTA, '2026-07-01T15:00:00Z');
    expect(w).toMatchObject({
      in_window: false,
      never_callable: true,
      next_window_start: null,
      next_window_end: null,
    });
    expect(at(windows, NEW_YORK, '2026-07-01T15:00:00Z').never_callable).toBe(false);
  });

  it('rules_version names the rules, the time-zone database, the holiday data, the zone data and the settings', () => {
    expect(plain.rulesVersion).toMatch(
      /^dnc-rules\/\d{4}\.\d+\.\d+ tzdata\/test-tz date-holidays\/3\.\d+\.\d+ libphonenumber\/9\.0\.27$/,
    );
    const a = createCallingWindows({
      tzdataVersion: TZDATA,
      settings: { policy: { hours: { 'mon-fri': '09:00-19:00' } } },
    });
    const b = createCallingWindows({
      tzdataVersion: TZDATA,
      settings: { policy: { hours: { 'mon-fri': '09:00-18:00' } } },
    });
    expect(a.rulesVersion).toMatch(/ settings\/[0-9a-f]{12}$/);
    expect(a.rulesVersion).not.toBe(b.rulesVersion);
    expect(at(a, NEW_YORK, '2026-07-01T12:00:00Z').rules_version).toBe(a.rulesVersion);
  });
});

describe('slots (dnc window)', () => {
  it('a number is callable for a slot only when one window holds all of it', () => {
    const rows = [
      { e164: NEW_YORK, country: 'US', id: 1 },
      { e164: '+13055551234', country: 'US', id: 2 }, // Florida: until 20:00 EDT = 00:00Z
      { e164: PHOENIX, country: 'US', id: 3 },
      { e164: SYDNEY, country: 'AU', id: 4 },
    ];
    const from = Date.parse('2026-07-01T22:00:00Z');
    const until = Date.parse('2026-07-02T00:30:00Z');
    const answers = [...plain.slot(rows, from, until)].map(({ row, answer }) => [
      row.id,
      answer.callable,
      answer.reason,
    ]);
    expect(answers).toEqual([
      [1, true, null],
      [2, false, 'outside_window'],
      [3, true, null],
      [4, false, 'outside_window'],
    ]);
    const florida = plain.throughout(rows[1]!, from, until);
    expect([florida.window_start, florida.window_end]).toEqual(['2026-07-01T12:00:00Z', '2026-07-02T00:00:00Z']);
  });

  it('refuses a slot that ends before it starts, or lasts longer than the horizon', () => {
    const n = { e164: NEW_YORK, country: 'US' };
    expect(() => plain.throughout(n, Date.parse('2026-07-02T00:00:00Z'), Date.parse('2026-07-01T00:00:00Z'))).toThrow(
      /ends .* before it starts/,
    );
    expect(() => plain.throughout(n, 0, 40 * 86_400_000)).toThrow(/at most 35 days/);
    expect(() => plain.window(n, Number.NaN)).toThrow(/not a valid instant/);
  });
});

describe('numbers from outside', () => {
  it('a malformed number or country never throws: it gets what can be known, and says so', () => {
    const instant = Date.parse('2026-07-01T15:00:00Z');
    // No digits, a US country: all US zones and every state rule.
    const empty = plain.window({ e164: '', country: 'US' }, instant);
    expect(empty).toMatchObject({ location_known: false, state: null, never_callable: false });
    expect(empty.time_zones).toContain('America/New_York');
    // Lower case is the same country; an unknown one gets the default rule and the data's zones.
    expect(plain.window({ e164: NEW_YORK, country: 'us' }, instant)).toEqual(
      plain.window({ e164: NEW_YORK, country: 'US' }, instant),
    );
    expect(plain.window({ e164: '+4930123456', country: 'ZZ' }, instant)).toMatchObject({
      time_zones: ['Europe/Berlin'],
      rules: ['default'],
    });
    // Nothing to go on: no zone, so never callable rather than callable anywhere.
    const nothing = plain.window({ e164: 'abc', country: undefined }, instant);
    expect(nothing).toMatchObject({
      time_zones: [],
      in_window: false,
      never_callable: true,
      next_window_start: null,
    });
    expect(plain.throughout({ e164: 'abc', country: undefined }, instant, instant + 60_000).reason).toBe(
      'never_callable',
    );
    // A very long value costs no more than its first digits.
    const long = `+1212${'5'.repeat(1_000_000)}`;
    expect(plain.window({ e164: long, country: 'US' }, instant).time_zones).toEqual(['America/New_York']);
  });
});
