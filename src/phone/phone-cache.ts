// Normalisation of a CSV cell to E.164: plain E.164 by the fast path, anything else cached per distinct raw value
// (libphonenumber costs ~9 µs a call).
import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max';
import { fastValidE164, fastValidNational } from './fast-e164.js';
import { normalizePhone } from './normalize.js';

export type CellNumber =
  | {
      ok: true;
      e164: string;
      country: string;
      /** Said in dnc_error: the row's country and the number's own disagree (the number is read by its own). */
      note?: string;
    }
  | {
      ok: false;
      code:
        'missing_number' | 'unparseable_number' | 'excel_damaged_number' | 'unknown_country' | 'formula_not_calculated';
      message: string;
      e164: string;
      country: string;
      /** unknown_country: the row's country cell as written, for the summary's examples. */
      countryCell?: string;
    };

/** An empty phone cell (a blank line, an empty cell): nothing to look up, and said so apart from a bad number. */
export const MISSING: CellNumber = {
  ok: false,
  code: 'missing_number',
  message: 'no number in this row',
  e164: '',
  country: '',
};

/**
 * A number in scientific notation (`2.02555E+09`) is what Excel shows, and saves, for a long number in a
 * numeric cell: its last digits are gone, so it is refused rather than looked up as a different number.
 */
const SCIENTIFIC = /^\s*[+-]?\d+(?:[.,]\d+)?E[+-]?\d+\s*$/i;

function damaged(raw: string): CellNumber {
  return excelDamaged(`'${raw.trim()}' is a number Excel turned into scientific notation (its last digits are lost)`);
}

/** A number a spreadsheet has already damaged (`what` says how): refused, never looked up as another number. */
export function excelDamaged(what: string): CellNumber {
  return {
    ok: false,
    code: 'excel_damaged_number',
    message: `${what}; format the column as Text and enter the numbers again`,
    e164: '',
    country: '',
  };
}

const options = (region: string | undefined) => (region ? { defaultCountry: region.toUpperCase() as CountryCode } : {});

/** Bounded: when full it starts over, which keeps memory flat on files with millions of distinct values. */
export class PhoneCache {
  private cache = new Map<string, CellNumber>();
  private readonly region: string | undefined;
  constructor(
    readonly defaultCountry: string | undefined,
    private readonly maxEntries = 100_000,
  ) {
    this.region = defaultCountry?.toUpperCase();
  }

  normalise(raw: string): CellNumber {
    // Plain E.164 is decided in about a microsecond: cheaper than the cache, which it would only fill.
    const value = raw.trim();
    const fast = fastValidE164(value);
    if (fast) return fast;
    if (value === '') return MISSING;
    // A national number with its trunk prefix ("020 7946 0018" in a GB row): as cheap, and as seldom repeated.
    const national = this.region === undefined ? undefined : fastValidNational(value, this.region);
    if (national) return national;
    let hit = this.cache.get(raw);
    if (hit !== undefined) return hit;
    hit = SCIENTIFIC.test(raw) ? damaged(raw) : this.quick(raw);
    if (hit === undefined) {
      // Not plainly valid: normalizePhone says what is wrong (and is the reference for what is valid).
      const n = normalizePhone(raw, { defaultCountry: this.defaultCountry });
      hit = n.ok
        ? { ok: true, e164: n.e164, country: n.country ?? '' }
        : { ok: false, code: 'unparseable_number', message: n.message, e164: n.e164 ?? '', country: n.country ?? '' };
    }
    if (this.cache.size >= this.maxEntries) this.cache.clear();
    this.cache.set(raw, hit);
    return hit;
  }

  /**
   * The common case without normalizePhone's extras (its human format costs as much as the parse):
   * a value written with + or with the default region that parses as valid. Anything else returns
   * undefined and goes through normalizePhone.
   */
  private quick(raw: string): CellNumber | undefined {
    const value = raw.trim();
    if (value === '' || /^00/.test(value)) return undefined;
    const parsed = parsePhoneNumberFromString(value, options(this.defaultCountry));
    if (!parsed || !parsed.isValid()) return undefined;
    return { ok: true, e164: parsed.number, country: parsed.country ?? '' };
  }
}

/** One PhoneCache per region a list's rows name, and one for rows that name none (the default country). */
export class PhoneCaches {
  private readonly byRegion = new Map<string, PhoneCache>();
  readonly fallback: PhoneCache;

  constructor(readonly defaultCountry: string | undefined) {
    this.fallback = new PhoneCache(defaultCountry);
  }

  /** The cache that reads national numbers in `region` (the default country's when none). */
  get(region: string | undefined): PhoneCache {
    if (region === undefined || region === this.defaultCountry) return this.fallback;
    let cache = this.byRegion.get(region);
    // A list names a few regions; each keeps fewer entries than the default's, so that memory stays flat.
    if (!cache) this.byRegion.set(region, (cache = new PhoneCache(region, 20_000)));
    return cache;
  }
}
