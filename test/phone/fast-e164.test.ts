// The E.164 fast path must agree with libphonenumber's full parser on every number it answers for.
import {
  getCountries,
  getCountryCallingCode,
  getExampleNumber,
  parsePhoneNumberFromString,
} from 'libphonenumber-js/max';
import examples from 'libphonenumber-js/mobile/examples';
import { describe, expect, it } from 'vitest';
import { DistinctNumbers } from '../../src/phone/distinct-numbers.js';
import fc from 'fast-check';
import { fastValidE164, fastValidNational } from '../../src/phone/fast-e164.js';
import { normalizePhone } from '../../src/phone/normalize.js';

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
  for (const prefix of [
    '1202555',
    '1416555',
    '1268464',
    '1876555',
    '442079460',
    '447911123',
    '447700900',
    '44162412',
    '4930123',
    '6141234',
    '353851234',
    '3247123',
    '6421123',
    '3461234',
  ]) {
    for (let i = 0; i < 300; i++)
      out.push(`+${prefix}${String(Math.floor(next() * 10 ** 4)).padStart(4, '0')}`.slice(0, 16));
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
    for (const value of [
      '12025550123',
      '+1 202 555 0123',
      '(202) 555-0123',
      '+1202555',
      '+',
      '',
      '+0123456789',
      '+12025550123x12',
    ]) {
      expect(fastValidE164(value)).toBeUndefined();
    }
    expect(fastValidE164('+12025550123')).toEqual({ ok: true, e164: '+12025550123', country: 'US' });
    expect(fastValidE164('+447911123456')?.country).toBe(parsePhoneNumberFromString('+447911123456')!.country);
  });
});

describe('fastValidNational', () => {
  /** The full parser's reading of a national number in `country`, when it calls it valid. */
  const full = (value: string, country: string) => {
    const n = normalizePhone(value, { defaultCountry: country });
    return n.ok ? { ok: true, e164: n.e164, country: n.country ?? '' } : undefined;
  };

  it('agrees with the full parser on every national number it accepts, in every country (seed printed)', () => {
    const seed = Number(process.env.DNC_PROPERTY_SEED ?? Date.now() % 2 ** 31);
    console.log(`fastValidNational property seed: ${seed} (DNC_PROPERTY_SEED=${seed} repeats it)`);
    const countries = getCountries();
    // A country's example number written nationally, then changed: digits altered, added, removed, punctuated, or
    // a trunk or international prefix put in front.
    const national = fc
      .record({
        country: fc.constantFrom(...countries),
        edits: fc.array(fc.tuple(fc.nat(20), fc.integer({ min: 0, max: 9 }), fc.nat(4)), { maxLength: 3 }),
        lead: fc.constantFrom('', '0', '00', '8', '1', '06', '011', '180020'),
        spaced: fc.boolean(),
      })
      .map(({ country, edits, lead, spaced }) => {
        const example = getExampleNumber(country, examples);
        let digits = (example?.nationalNumber ?? '2345678').split('');
        for (const [at, d, kind] of edits) {
          const i = at % (digits.length + 1);
          if (kind === 0) digits.splice(i, 0, String(d));
          else if (kind === 1) digits.splice(i, 1);
          else digits[Math.min(i, digits.length - 1)] = String(d);
        }
        const text = lead + digits.join('');
        return { country, value: spaced ? text.replace(/(\d{3})(?=\d)/g, '$1 ') : text };
      });
    let accepted = 0;
    fc.assert(
      fc.property(national, ({ country, value }) => {
        const fast = fastValidNational(value, country);
        if (fast === undefined) return;
        accepted++;
        expect({ value, asked: country, ...fast }).toEqual({ value, asked: country, ...full(value, country) });
      }),
      { seed, numRuns: 20_000 },
    );
    expect(accepted).toBeGreaterThan(300);
  });

  it('reads the common national forms of the countries a CRM list names, and leaves the rest to the parser', () => {
    expect(fastValidNational('020 7946 0018', 'GB')).toEqual({ ok: true, e164: '+442079460018', country: 'GB' });
    expect(fastValidNational('(030) 1234-5678', 'DE')).toEqual(full('(030) 1234-5678', 'DE'));
    expect(fastValidNational('0412 345 678', 'AU')).toEqual({ ok: true, e164: '+61412345678', country: 'AU' });
    // No trunk prefix (ES, IT), a rewrite rule (JE, AR), an international prefix, a number of another region.
    for (const [value, country] of [
      ['912345678', 'ES'],
      ['0612345678', 'IT'],
      ['01534 456789', 'JE'],
      ['011 15 2345-6789', 'AR'],
      ['0044 20 7946 0018', 'GB'],
      ['01534 456789', 'GB'],
      ['2025550123', 'US'],
    ] as const) {
      expect(fastValidNational(value, country)).toBeUndefined();
    }
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
      const e164 =
        i % 3 === 0
          ? `+999${String(Math.floor(next() * 1e12)).padStart(12, '0')}`
          : `+1202555${String(Math.floor(next() * 50_000)).padStart(5, '0')}`;
      if (set.add(e164) !== !reference.has(e164)) wrong++;
      reference.add(e164);
    }
    expect(wrong).toBe(0);
    expect(set.size).toBe(reference.size);
  });
});
