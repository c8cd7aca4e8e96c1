// Generated slots for `dnc window` over one real batch output, checked against a second reading of the rules table:
// a callable number is in the list exactly when, at every minute of the slot, its local clock in each of its zones
// (read here with Intl, weekday and all) lies inside that weekday's hours. June 2026: no holiday of these rules.
// The seed is printed; DNC_PROPERTY_SEED=<seed> runs the same cases again.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dnc } from '../helpers/world.js';
import { scrubbedForFile } from './helpers.js';

const seed = Number(process.env.DNC_PROPERTY_SEED ?? Math.floor(Math.random() * 2 ** 31));
const EVERY_DAY = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri'];

/** Each callable number of the list: its zones, and its hours by weekday (local minutes, end excluded). */
const NUMBERS: Array<{ e164: string; zones: string[]; hours: (day: string) => [number, number] | null }> = [
  { e164: '+12125550100', zones: ['America/New_York'], hours: () => [8 * 60, 21 * 60] },
  { e164: '+16025550102', zones: ['America/Phoenix'], hours: () => [8 * 60, 21 * 60] },
  { e164: '+16055550104', zones: ['America/Denver', 'America/Chicago'], hours: () => [8 * 60, 21 * 60] },
  { e164: '+13055550106', zones: ['America/New_York'], hours: () => [8 * 60, 20 * 60] },
  { e164: '+15025550108', zones: ['America/New_York'], hours: () => [10 * 60, 21 * 60] },
  {
    e164: '+442079460100',
    zones: ['Europe/London'],
    hours: (day) => (WEEKDAYS.includes(day) ? [8 * 60, 21 * 60] : [9 * 60, 21 * 60]),
  },
  {
    e164: '+34912345670',
    zones: ['Europe/Madrid'],
    hours: (day) => (WEEKDAYS.includes(day) ? [9 * 60, 21 * 60] : null),
  },
];

const clocks = new Map<string, Intl.DateTimeFormat>();
/** The weekday and minute of the day in `zone` at `t`, read from Intl's own parts. */
function localClock(zone: string, t: number): { day: string; minute: number } {
  let f = clocks.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', {
      timeZone: zone,
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    clocks.set(zone, f);
  }
  const parts = Object.fromEntries(f.formatToParts(t).map((p) => [p.type, p.value]));
  return { day: parts.weekday!, minute: Number(parts.hour) * 60 + Number(parts.minute) };
}

function insideThroughout(n: (typeof NUMBERS)[number], from: number, until: number): boolean {
  for (let t = from; t < until; t += 60_000) {
    for (const zone of n.zones) {
      const { day, minute } = localClock(zone, t);
      const hours = n.hours(day);
      if (!EVERY_DAY.includes(day)) throw new Error(`unexpected weekday ${day}`);
      if (!hours || minute < hours[0] || minute >= hours[1]) return false;
    }
  }
  return true;
}

const scrubbed = scrubbedForFile(['name,phone', 'a,+12125550101', ...NUMBERS.map((n, i) => `n${i},${n.e164}`)], 0);

describe('dnc window: generated slots against a second reading of the table', () => {
  it(`writes exactly the numbers inside their hours at every minute of the slot (seed ${seed})`, async () => {
    process.stdout.write(`window property seed: ${seed} (DNC_PROPERTY_SEED=${seed} to repeat)\n`);
    const { w, results } = scrubbed;
    const dial = path.join(w.dir, 'slot.txt');
    // Slots in June 2026 starting on a quarter hour, from 15 minutes to 10 hours long.
    const slots = fc.record({
      quarter: fc.integer({ min: 0, max: 27 * 96 }),
      quarters: fc.integer({ min: 1, max: 40 }),
    });
    await fc.assert(
      fc.asyncProperty(slots, async ({ quarter, quarters }) => {
        const from = Date.parse('2026-06-01T00:00:00Z') + quarter * 900_000;
        const until = from + quarters * 900_000;
        const r = await dnc(
          [
            'window',
            results,
            '--from',
            new Date(from).toISOString(),
            '--until',
            new Date(until).toISOString(),
            '--dial-out',
            dial,
          ],
          w.env,
        );
        expect(r.code, r.stderr).toBe(0);
        const expected = NUMBERS.filter((n) => insideThroughout(n, from, until)).map((n) => `${n.e164}\n`);
        expect(readFileSync(dial, 'utf8')).toBe(expected.join(''));
      }),
      { seed, numRuns: 25 },
    );
  }, 120_000);
});
