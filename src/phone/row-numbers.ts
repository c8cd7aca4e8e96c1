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

  /**
   * Each phone column's number, in the order of the columns. `typed`: a workbook row's typed cells, where a formula
   * without a usable cached value is named (its text is not what the spreadsheet would show: it is not read).
   */
  read(fields: readonly string[], typed?: ReadonlyArray<{ formula?: string | undefined } | undefined>): CellNumber[] {
    const country = this.countryOf(fields);
    const cache = this.phones.get(country.kind === 'known' ? country.region : undefined);
    // (A loop, not a map with a closure: this runs for every row of the list.)
    const cells: CellNumber[] = new Array(this.phoneIndexes.length);
    for (let k = 0; k < cells.length; k++) {
      const at = this.phoneIndexes[k]!;
      const formula = typed?.[at]?.formula;
      cells[k] = formula !== undefined ? uncalculated(formula) : this.cell(fields[at] ?? '', country, cache);
    }
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

/** A phone cell that is a formula with no value saved: never read as empty, nor as the placeholder `0`. */
function uncalculated(cell: string): CellNumber {
  return {
    ok: false,
    code: 'formula_not_calculated',
    message:
      `cell ${cell} is a formula whose value was never calculated: open the workbook in Excel or LibreOffice and ` +
      `save it, or export it as CSV`,
    e164: '',
    country: '',
  };
}

function unknownCountry(value: string): CellNumber {
  return {
    ok: false,
    code: 'unknown_country',
    message: `the row's country '${value}' is not a country dnc knows: a national number is not read without one`,
    e164: '',
    country: '',
    countryCell: value,
  };
}
