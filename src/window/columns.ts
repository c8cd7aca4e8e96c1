// Where a results file keeps each row's numbers and verdicts: one phone column, or several (dnc_N_* per column).
import { PhoneCache } from '../phone/phone-cache.js';
import { C } from '../results/columns.js';
import { P, phoneCellsAt } from '../results/row-cells.js';

/** One number of a row, as `dnc window` weighs it. */
export interface RowNumber {
  e164: string;
  country: string | undefined;
  result: string;
  /** Its phone column (1-based) when the file has several; null when the row-level cells describe it. */
  column: number | null;
}

/** Reads the numbers of each row of one results file. */
export interface RowNumbers {
  /** How many phone columns the file has. */
  readonly phoneColumns: number;
  /** The row's numbers, from its dnc_* cells (the fields after the input's). */
  numbersOf(cells: readonly string[]): RowNumber[];
}

/**
 * With one phone column, the row-level cells describe its number. With several (the manifest's phone_columns), the
 * row-level cells describe the row, and each number is read from its own dnc_N_* cells, its country from the E.164.
 * `calling`: the file has the calling columns (each phone column's cells then end with its own two).
 */
export function rowNumbersOf(phoneColumns: number, calling: boolean): RowNumbers {
  if (phoneColumns <= 1) {
    return {
      phoneColumns: 1,
      numbersOf: (cells) => [
        {
          e164: cells[C.e164] ?? '',
          country: cells[C.country] || undefined,
          result: cells[C.result] ?? '',
          column: null,
        },
      ],
    };
  }
  const columns = Array.from({ length: phoneColumns }, (_, k) => k);
  // Plain E.164 is read in about a microsecond; anything else is parsed once and kept.
  const phones = new PhoneCache(undefined);
  const countryOf = (e164: string) => {
    const n = e164 === '' ? undefined : phones.normalise(e164);
    return n?.ok ? n.country || undefined : undefined;
  };
  return {
    phoneColumns,
    numbersOf: (cells) =>
      columns.map((k) => {
        const at = phoneCellsAt(k, calling);
        const e164 = cells[at + P.e164] ?? '';
        return { e164, country: countryOf(e164), result: cells[at + P.result] ?? '', column: k + 1 };
      }),
  };
}
