// The E.164 fast path must agree with libphonenumber's full parser on every number it answers for.
import { getCountries, getCountryCallingCode, getExampleNumber, parsePhoneNumberFromString } from 'libphonenumber-js/max';
import examples from 'libphonenumber-js/mobile/examples';
import { describe, expect, it } from 'vitest';
import { DistinctNumbers } from '../../src/phone/distinct-numbers.js';
import { fastValidE164 } from '../../src/phone/fast-e164.js';

/** A seeded generator, so a failure names a reproducible number. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Every country's example number, then variants: last digits changed, digits added or removed. */
function corpus(): string[] {
  const next = random(42);
  const out: string[] = [];
  for (const country of getCountries()) {
    const example = getExampleNumber(country, examples)?.number;
    const base = example ?? `+${getCountryCallingCode(country)}${'1234567'}`;
    out.push(base);
    for (let i = 0; i < 120; i++) {
      const digits = base.slice(1).split('');
      const kind = next();
      if (kind < 0.6) {
        const at = Math.max(1, digits.length - 1 - Math.floor(next() * 6));
        digits[at] = String(Math.floor(next() * 10));
      } else if (kind < 0.8) digits.push(String(Math.floor(next() * 10)));
      else digits.pop();
      out.push(`+${digits.join('')}`);
    }
  }
  // Dense ranges of the countries the service covers, and NANP numbers of other countries.
  for (const prefix of ['1202555', '1416555', '1268464', '1876555', '442079460', '447911123', '447700900', '44162412', '4930123', '6141234', '353851234', '3247123', '6421123', '3461234']) {
    for (let i = 0; i < 300; i++) out.push(`+${prefix}${String(Math.floor(next() * 10 ** 4)).padStart(4, '0')}`.slice(0, 16));
  }
  return out;
}

describe('fastValidE164', () => {
  it('agrees with the full parser (E.164 and country) on every number it accepts, and accepts most valid ones', () => {
    let accepted = 0;
    let valid = 0;
    const disagreements: string[] = [];
    for (const value of corpus()) {
      const full = parsePhoneNumberFromString(value);
      const fullValid = full !== undefined && full.isValid();
      if (fullValid) valid++;
      const fast = fastValidE164(value);
      if (!fast) continue;
      accepted++;
      if (!fullValid || full!.number !== fast.e164 || (full!.country ?? '') !== fast.country) {
        disagreements.push(`${value}: fast ${fast.country}, full ${fullValid ? full!.country : 'invalid'}`);
      }
    }
    expect(disagreements).toEqual([]);
    // Non-geographic numbers (+800 …) are left to the full parser; nearly every other valid one is fast.
    expect(accepted / valid).toBeGreaterThan(0.95);
  });

  it('leaves anything not written exactly in E.164 to the full parser', () => {
    for (const value of ['12025550123', '+1 202 555 0123', '(202) 555-0123', '+1202555', '+', '', '+0123456789', '+12025550123x12']) {
      expect(fastValidE164(value)).toBeUndefined();
    }
    expect(fastValidE164('+12025550123')).toEqual({ e164: '+12025550123', country: 'US' });
    expect(fastValidE164('+447911123456')?.country).toBe(parsePhoneNumberFromString('+447911123456')!.country);
  });
});

describe('DistinctNumbers', () => {
  it('counts each E.164 number once, across growth, as a Set of strings would', () => {
    const set = new DistinctNumbers();
    const reference = new Set<string>();
    const next = random(7);
    let wrong = 0;
    for (let i = 0; i < 200_000; i++) {
      // Many repeats, long shared prefixes, and the longest numbers E.164 allows.
      const e164 = i % 3 === 0 ? `+999${String(Math.floor(next() * 1e12)).padStart(12, '0')}` : `+1202555${String(Math.floor(next() * 50_000)).padStart(5, '0')}`;
      if (set.add(e164) !== !reference.has(e164)) wrong++;
      reference.add(e164);
    }
    expect(wrong).toBe(0);
    expect(set.size).toBe(reference.size);
  });
});
