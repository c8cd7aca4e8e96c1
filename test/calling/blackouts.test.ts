// Blackout dates a team adds (a state of emergency, a company holiday): dated, per country or state, with an end,
// named in every answer they touch; from the calling settings or a file they name (`blackouts_file`).
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createCallingWindows } from '../../src/calling/index.js';
import { DncError } from '../../src/errors.js';
import { runDnc } from '../helpers/cli.js';

const EMERGENCY = {
  reason: 'state of emergency: hurricane (Gov. order 26-14)',
  from: '2026-09-01',
  to: '2026-09-05',
  countries: ['US'],
  states: ['LA'],
};
const NEW_ORLEANS = '+15045550123';
const NEW_YORK = '+12125550123';

describe('blackouts', () => {
  const windows = createCallingWindows({ tzdataVersion: 'x', settings: { blackouts: [EMERGENCY] } });
  const at = (e164: string, instant: string) => windows.window({ e164, country: 'US' }, Date.parse(instant));

  it('close their state from the first date to the last, both included, and say why', () => {
    // Tuesday 1 September 10:00 CDT: closed; the blackout is named in the answer and in the day's reason.
    const first = at(NEW_ORLEANS, '2026-09-01T15:00:00Z');
    expect(first.in_window).toBe(false);
    expect(first.blackout).toEqual(EMERGENCY);
    expect(first.local_times[0]!.closed_today).toBe(`blackout to 2026-09-05: ${EMERGENCY.reason}`);
    // Saturday 5 September, the last date: closed. Sunday and Labor Day (7 September) are Louisiana's own closures:
    // the next window opens on Tuesday 8 September, 08:00 CDT.
    const last = at(NEW_ORLEANS, '2026-09-05T15:00:00Z');
    expect([last.in_window, last.next_window_start]).toEqual([false, '2026-09-08T13:00:00Z']);
    // The day before it began, and other states, are not touched.
    expect(at(NEW_ORLEANS, '2026-08-31T15:00:00Z')).toMatchObject({ in_window: true, blackout: null });
    expect(at(NEW_YORK, '2026-09-02T15:00:00Z')).toMatchObject({ in_window: true, blackout: null });
  });

  it('reach a number whose state is not known (the stricter reading)', () => {
    expect(at('+18005550123', '2026-09-02T21:00:00Z').blackout?.reason).toBe(EMERGENCY.reason);
  });

  it('are refused without an end, a reason, or with dates that are no dates', () => {
    const refused = (b: unknown): string => {
      try {
        createCallingWindows({ tzdataVersion: 'x', settings: { blackouts: [b] } });
      } catch (e) {
        expect((e as DncError).code).toBe('E_CONFIG_INVALID');
        return (e as Error).message;
      }
      throw new Error('accepted');
    };
    const { to: _to, ...noEnd } = EMERGENCY;
    expect(refused(noEnd)).toMatch(/calling\.blackouts\[0\]\.to: is required/);
    expect(refused({ ...EMERGENCY, reason: ' ' })).toMatch(/\.reason: is required/);
    expect(refused({ ...EMERGENCY, from: '2026-02-30' })).toMatch(/'2026-02-30' is not a date/);
    expect(refused({ ...EMERGENCY, to: '2026-08-01' })).toMatch(/is before from/);
  });

  it('come from a file the settings name, and count in rules_version', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-blackouts-'));
    chmodSync(dir, 0o700);
    const list = path.join(dir, 'blackouts.json');
    const holiday = { reason: 'company holiday (HR-7)', from: '2026-12-24', to: '2026-12-31', countries: ['GB'] };
    writeFileSync(list, JSON.stringify([holiday]), { mode: 0o600 });
    const settings = path.join(dir, 'calling.json');
    writeFileSync(settings, JSON.stringify({ blackouts_file: 'blackouts.json' }), { mode: 0o600 });
    const ask = (file: string) =>
      runDnc(
        ['--json', 'window', '--number', '+442079460123', '--at', '2026-12-28T12:00:00Z', '--calling-settings', file],
        {
          env: { HOME: dir, XDG_CONFIG_HOME: dir, XDG_STATE_HOME: dir, XDG_CACHE_HOME: dir },
          homedir: dir,
          cwd: dir,
        },
      );
    const r = await ask(settings);
    expect(r.code, r.stderr).toBe(0);
    const calling = JSON.parse(r.stdout).calling;
    expect([calling.in_window, calling.blackout, calling.next_window_start]).toEqual([
      false,
      holiday,
      '2027-01-01T08:00:00Z',
    ]);
    expect(calling.rules_version).toMatch(/ settings\/[0-9a-f]{12}$/);
    // A list others may write is refused, as the settings file would be.
    chmodSync(list, 0o666);
    const insecure = await ask(settings);
    expect(insecure.code).toBe(2);
    expect(insecure.stderr).toMatch(/E_CONFIG_INSECURE/);
  });
});
