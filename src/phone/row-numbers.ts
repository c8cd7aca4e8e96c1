// The numbers of one row of a call list: one per phone column, each read in the row's country (its country column),
// else in the default country. The one reading of a row that the batch's reading, its render and verify share.
import { CountryReader, NO_COUNTRY, type RowCountry } from './countries.js';
import { MISSING, type CellNumber, type PhoneCache, type PhoneCaches } from './phone-cache.js';

/** A number written in international form: read by its own calling code, whatever the row's country says. */
const INTERNATIONAL = /^\s*(\+|00)/;

export class RowNumbers {
  private readonly countries = new CountryReader();

  constructor(
    private readonly phones: PhoneCaches,
    private readonly phoneIndexes: readonly number[],
    private readonly countryIndex: number | null,
  ) {}

  /** The row's country as its country cell gives it (none without a country column). */
  countryOf(fields: readonly string[]): RowCountry {
    return this.countryIndex === null ? NO_COUNTRY : this.countries.read(fields[this.countryIndex] ?? '');
  }

  /** Each phone column's number, in the order of the columns. */
  read(fields: readonly string[]): CellNumber[] {
    const country = this.countryOf(fields);
    const cache = this.phones.get(country.kind === 'known' ? country.region : undefined);
    // (A loop, not a map with a closure: this runs for every row of the list.)
    const cells: CellNumber[] = new Array(this.phoneIndexes.length);
    for (let k = 0; k < cells.length; k++) cells[k] = this.cell(fields[this.phoneIndexes[k]!] ?? '', country, cache);
    return cells;
  }

  private cell(raw: string, country: RowCountry, cache: PhoneCache): CellNumber {
    if (country.kind === 'unknown') {
      if (raw.trim() === '') return MISSING;
      if (!INTERNATIONAL.test(raw)) return unknownCountry(country.value);
      return this.phones.fallback.normalise(raw);
    }
    const cell = cache.normalise(raw);
    if (cell.ok && country.kind === 'known' && cell.country !== country.region && INTERNATIONAL.test(raw)) {
      return { ...cell, note: `the row's country is ${country.region}; ${cell.e164} is a ${cell.country} number` };
    }
    return cell;
  }
}

function unknownCountry(value: string): CellNumber {
  return {
    ok: false,
    code: 'unknown_country',
    message: `the row's country '${value}' is not a country dnc knows: a national number is not read without one`,
    e164: '',
    country: '',
  };
}
