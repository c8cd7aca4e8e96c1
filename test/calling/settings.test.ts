// Calling settings come from a team's config file: every malformed or hostile value is refused with where it is.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createCallingWindows } from '../../src/calling/index.js';
import { DncError } from '../../src/errors.js';
import { assertBuilt, REPO_ROOT } from '../helpers/cli.js';

function refusal(settings: unknown): DncError {
  try {
    createCallingWindows({ tzdataVersion: 'x', settings });
  } catch (e) {
    return e as DncError;
  }
  throw new Error(`accepted ${JSON.stringify(settings)}`);
}

describe('calling settings', () => {
  it('refuses malformed values with E_CONFIG_INVALID (exit 2), naming the setting and the value', () => {
    const cases: Array<[unknown, RegExp]> = [
      ['09:00-19:00', /^calling: must be an object$/],
      [{ polcy: {} }, /^calling\.polcy: is not a setting/],
      [
        { policy: { hours: { 'mon-fri': '9-19' } } },
        /calling\.policy\.hours\.mon-fri: '9-19' is not a window HH:MM-HH:MM/,
      ],
      [{ policy: { hours: { 'mon-fri': '09:00-24:30' } } }, /'09:00-24:30' is not a window/],
      [{ policy: { hours: { 'mon-fri': '09:60-19:00' } } }, /'09:60-19:00' is not a window/],
      [{ policy: { hours: { 'mon-fri': '19:00-09:00' } } }, /'19:00-09:00' ends before it starts/],
      [{ policy: { hours: { 'fri-mon': '09:00-19:00' } } }, /'fri-mon' runs backwards/],
      [{ policy: { hours: { funday: '09:00-19:00' } } }, /'funday' is not a day/],
      [{ policy: { hours: { 'mon-fri': '09:00-19:00', wed: 'closed' } } }, /wed is named twice/],
      [{ policy: { hours: { mon: 9 } } }, /calling\.policy\.hours\.mon: must be a window/],
      [{ policy: { hours: ['mon'] } }, /must be an object of days and windows/],
      [{ policy: { closed_on: ['sundays'] } }, /calling\.policy\.closed_on: must be a list of "public_holidays"/],
      [{ policy: { countries: { GBR: {} } } }, /'GBR' is not a country code/],
      [
        { policy: { countries: { GB: { hours: {}, extra: 1 } } } },
        /calling\.policy\.countries\.GB\.extra: is not a setting/,
      ],
      [{ policy: { name: 42 } }, /calling\.policy\.name: must be text/],
      [{ overrides: {} }, /calling\.overrides: must be a list/],
      [{ overrides: [{ countries: ['US'], hours: { mon: '07:00-22:00' } }] }, /overrides\[0\]\.reason: is required/],
      [
        { overrides: [{ reason: ' ', countries: ['US'], hours: { mon: '07:00-22:00' } }] },
        /overrides\[0\]\.reason: is required/,
      ],
      [{ overrides: [{ reason: 'r', countries: ['US'] }] }, /overrides\[0\]\.hours: is required/],
      [
        { overrides: [{ reason: 'r', countries: [], hours: { mon: '07:00-22:00' } }] },
        /overrides\[0\]\.countries: must be a non-empty list/,
      ],
      [
        { overrides: [{ reason: 'r', countries: ['U$'], hours: {} }] },
        /overrides\[0\]\.countries\[0\]: 'U\$' is not a two-letter code/,
      ],
      [JSON.parse('{"__proto__": {"hours": {}}}'), /calling\.__proto__: is not a setting/],
      [{ default_hours: null }, /calling\.default_hours: must be an object/],
    ];
    for (const [settings, message] of cases) {
      const e = refusal(settings);
      expect(e, JSON.stringify(settings)).toBeInstanceOf(DncError);
      expect(e.code).toBe('E_CONFIG_INVALID');
      expect(e.exitCode).toBe(2);
      expect(e.message, JSON.stringify(settings)).toMatch(message);
    }
  });
});

describe('the machine time zone', () => {
  it('changes nothing: the same windows under TZ=UTC, Pacific/Chatham and America/St_Johns', () => {
    assertBuilt();
    const script = `
      import { createCallingWindows } from ${JSON.stringify(path.join(REPO_ROOT, 'dist/calling/index.js'))};
      const w = createCallingWindows({ tzdataVersion: 'x' });
      const out = [];
      const numbers = [['+12125551234', 'US'], ['+16055551234', 'US'], ['+61298765432', 'AU'], ['+34912345678', 'ES']];
      const instants = ['2026-03-08T11:30:00Z', '2026-04-04T08:00:00Z', '2026-10-25T00:30:00Z', '2026-12-31T23:59:59Z'];
      for (const [e164, country] of numbers) {
        for (const at of instants) {
          out.push(w.window({ e164, country }, Date.parse(at)));
        }
      }
      process.stdout.write(JSON.stringify(out));`;
    const run = (tz: string): string =>
      execFileSync(process.execPath, ['--input-type=module', '-e', script], {
        env: { ...process.env, TZ: tz },
        encoding: 'utf8',
      });
    const utc = run('UTC');
    expect(JSON.parse(utc)).toHaveLength(16);
    expect(run('Pacific/Chatham')).toBe(utc);
    expect(run('America/St_Johns')).toBe(utc);
  });
});
