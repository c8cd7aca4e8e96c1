// docs/calling.md shows real output: its rules table is the rules file, and its examples are what the API answers.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CALLING_RULES, callingAnswer, createCallingWindows } from '../../src/calling/index.js';
import { rulesTable } from '../../src/calling/rules-table.js';
import { normalizePhone } from '../../src/phone/normalize.js';
import { REPO_ROOT } from '../helpers/cli.js';

const PAGE = readFileSync(path.join(REPO_ROOT, 'docs', 'calling.md'), 'utf8');

/** The lines between a marker comment that starts with `start` and the next `<!-- end of` comment. */
function section(start: string): string[] {
  const lines = PAGE.split('\n');
  const from = lines.findIndex((l) => l.startsWith(`<!-- ${start}`));
  const to = lines.findIndex((l, i) => i > from && l.startsWith('<!-- end of'));
  expect(from, start).toBeGreaterThan(-1);
  return lines.slice(from + 1, to);
}

describe('docs/calling.md', () => {
  it('its rules table is the rules pack, row for row', () => {
    expect(section('rules table').join('\n')).toBe(rulesTable().join('\n'));
    // Every state, DC and province has a row: none is left to a silent default.
    const states = new Set(CALLING_RULES.states.map((r) => `${r.country}-${r.state}`));
    expect([...states].filter((s) => s.startsWith('US-'))).toHaveLength(51);
    expect([...states].filter((s) => s.startsWith('CA-'))).toHaveLength(13);
  });

  it('its examples are what the API answers', () => {
    const windows = createCallingWindows({ tzdataVersion: '2025c' });
    const at = Date.parse('2026-07-01T15:00:00Z');
    const json = section('calling example')
      .join('\n')
      .replace(/^```json\n|\n```\n?[^]*$/g, '');
    const ny = windows.window({ e164: '+12125551234', country: 'US' }, at);
    expect(JSON.parse(json)).toEqual(callingAnswer(ny, 'callable'));
    const table = section('calling examples table').slice(2);
    expect(table).toHaveLength(6);
    for (const line of table) {
      const e164 = /`(\+[0-9]+)`/.exec(line)![1]!;
      // The country dnc derives (libphonenumber places +44 7911 in Guernsey; the service's GB governs it).
      const phone = normalizePhone(e164);
      const country = phone.ok ? phone.country : undefined;
      const w = windows.window({ e164, country }, at);
      const cells = [
        `\`${e164}\``,
        w.time_zones.join(' '),
        w.location_known ? 'yes' : 'no',
        w.weekly_rule,
        String(w.in_window),
        w.next_window_start,
        w.next_window_end,
      ];
      expect(line).toBe(`| ${cells.join(' | ')} |`);
    }
  });

  it('its settings example is accepted and does what the page says', () => {
    const block = /## A company policy[^]*?```json\n([^]*?)\n```/.exec(PAGE)![1]!;
    const windows = createCallingWindows({ tzdataVersion: 'x', settings: JSON.parse(block) });
    expect(windows.weeklyRule({ e164: '+12125551234', country: 'US' })).toBe(
      'Mon-Fri 09:00-19:00; not on public holidays (US)',
    );
    expect(windows.weeklyRule({ e164: '+442079460123', country: 'GB' })).toBe(
      'Mon-Fri 10:00-18:00; not on public holidays (GB)',
    );
    const kentucky = windows.window({ e164: '+15025551234', country: 'US' }, Date.parse('2026-07-01T15:00:00Z'));
    expect(kentucky.rules).toEqual(['override', 'policy']);
    expect(kentucky.override?.reason).toBe('existing customers with prior express consent (ticket LEG-42)');
    expect(kentucky.weekly_rule).toBe('Mon-Fri 09:00-19:00; not on public holidays (US)');
  });
});
