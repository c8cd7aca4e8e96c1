// The numbers of one row of a call list: one per phone column, each read in the row's country (its country column),
// else in the default country. The one reading of a row that the batch's reading, its render and verify share.
import { CountryReader, NO_COUNTRY, type RowCountry } from './countries.js';
import { excelDamaged, MISSING, type CellNumber, type PhoneCache, type PhoneCaches } from './phone-cache.js';

/** A workbook cell as the row's reading needs it: its value, and whether it is a formula with no value saved. */
export interface PhoneCellValue {
  value?: unknown;
  formula?: string | undefined;
}

/** Excel keeps 15 significant digits: a number at or past this has lost its last digits (they are zeros). */
const SIXTEEN_DIGITS = 1e15;

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
  read(fields: readonly string[], typed?: ReadonlyArray<PhoneCellValue | undefined>): CellNumber[] {
    const country = this.countryOf(fields);
    const cache = this.phones.get(country.kind === 'known' ? country.region : undefined);
    // (A loop, not a map with a closure: this runs for every row of the list.)
    const cells: CellNumber[] = new Array(this.phoneIndexes.length);
    for (let k = 0; k < cells.length; k++) {
      const at = this.phoneIndexes[k]!;
      const cell = typed?.[at];
      cells[k] =
        cell?.formula !== undefined
          ? uncalculated(cell.formula)
          : (damagedValue(cell?.value, fields[at] ?? '') ?? this.cell(fields[at] ?? '', country, cache));
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

/**
 * A number cell whose value no phone number has: one with a fraction (`2025550123.5`, which General shows rounded,
 * `2025550124`, another number), or one of 16 digits or more (its last digits are zeros, whatever its format shows).
 * Judged on the value, not on the text: a format can show either as digits that read as a valid number.
 */
function damagedValue(value: unknown, shown: string): CellNumber | undefined {
  if (typeof value !== 'number' || !Number.isFinite(value)) return undefined;
  if (Math.abs(value) >= SIXTEEN_DIGITS)
    return excelDamaged(`'${shown.trim()}' is a number of 16 digits or more (Excel keeps 15: the rest are zeros)`);
  if (!Number.isInteger(value))
    return excelDamaged(`'${shown.trim()}' is the number ${value}, with a fraction, which no phone number has`);
  return undefined;
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
