// parseServiceTime reads the service's own timestamp shape digit by digit: it must give exactly what the general
// reading (Date.parse, microseconds cut) gives, for that shape and for every near miss, which it hands back to it.
// Generated strings; a failure prints its seed, and DNC_PROPERTY_SEED=<seed> runs the same cases again.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseAnyTime, parseServiceTime } from '../src/time.js';

const pad = (n: number, width: number) => String(n).padStart(width, '0');
const seed = process.env.DNC_PROPERTY_SEED ? { seed: Number(process.env.DNC_PROPERTY_SEED) } : {};

/** The service's shape with every field allowed a little out of range (month 13, day 31 of April, hour 24 …). */
const nearCanonical = fc
  .record({
    year: fc.oneof(
      fc.integer({ min: 1000, max: 9999 }),
      fc.integer({ min: 0, max: 999 }),
      fc.constantFrom(1970, 2000, 2024, 2026, 2100),
    ),
    month: fc.integer({ min: 0, max: 13 }),
    day: fc.integer({ min: 0, max: 32 }),
    hour: fc.integer({ min: 0, max: 25 }),
    minute: fc.integer({ min: 0, max: 60 }),
    second: fc.integer({ min: 0, max: 61 }),
    fraction: fc.oneof(fc.constant(''), fc.stringMatching(/^\.[0-9]{1,9}$/)),
    zone: fc.oneof(
      fc.constantFrom('Z', 'z', '+00:00', '-00:00', '', '+0000', '+00', ' UTC'),
      fc
        .tuple(fc.constantFrom('+', '-'), fc.integer({ min: 0, max: 25 }), fc.integer({ min: 0, max: 61 }))
        .map(([s, h, m]) => `${s}${pad(h, 2)}:${pad(m, 2)}`),
    ),
    separator: fc.constantFrom('T', 'T', 'T', 't', ' '),
  })
  .map(
    (f) =>
      `${pad(f.year, 4)}-${pad(f.month, 2)}-${pad(f.day, 2)}${f.separator}${pad(f.hour, 2)}:${pad(f.minute, 2)}:${pad(f.second, 2)}${f.fraction}${f.zone}`,
  );

/** One character of such a string replaced, dropped or doubled. */
const mutated = fc
  .tuple(
    nearCanonical,
    fc.nat(),
    fc.constantFrom('replace', 'drop', 'double'),
    fc.constantFrom('0', '9', '-', ':', '.', 'T', 'Z', '+', ' ', 'x', '٣'),
  )
  .map(([t, at, how, c]) => {
    const i = at % t.length;
    if (how === 'drop') return t.slice(0, i) + t.slice(i + 1);
    if (how === 'double') return t.slice(0, i) + t[i] + t.slice(i);
    return t.slice(0, i) + c + t.slice(i + 1);
  });

describe('parseServiceTime', () => {
  it('reads the service shape as Date.parse does, microseconds cut to milliseconds', () => {
    expect(parseServiceTime('2026-11-21T23:08:03.123456+00:00')).toBe(Date.UTC(2026, 10, 21, 23, 8, 3, 123));
    expect(parseServiceTime('2026-11-21T23:08:03.999999-05:30')).toBe(Date.UTC(2026, 10, 22, 4, 38, 3, 999));
    expect(parseServiceTime('2024-02-29T00:00:00Z')).toBe(Date.UTC(2024, 1, 29));
    expect(parseServiceTime('')).toBeNaN();
    expect(parseServiceTime(null)).toBeNaN();
    expect(parseServiceTime('yesterday')).toBeNaN();
  });

  it('agrees with the general reading on generated timestamps and near misses', () => {
    fc.assert(
      fc.property(fc.oneof(nearCanonical, mutated, fc.string()), (text) => {
        expect(
          Object.is(parseServiceTime(text), parseAnyTime(text)),
          `${JSON.stringify(text)}: ${parseServiceTime(text)} vs ${parseAnyTime(text)}`,
        ).toBe(true);
      }),
      { numRuns: 20_000, verbose: 1, ...seed },
    );
  });
});
