// Where a results file keeps each row's numbers and verdicts: one phone column, or several (dnc_N_* per column).
import { C } from '../results/columns.js';
import { PhoneCache } from '../phone/phone-cache.js';

/** One number of a row, as `dnc window` weighs it. */
export interface RowNumber {
  e164: string;
  country: string | undefined;
  result: string;
  /** The number's own valid-until (several phone columns); undefined when the file has none per number. */
  validUntil: string | undefined;
  correlationId: string | undefined;
}

/** The positions (in a row's fields) of one phone column's cells, in a file with several (issue 27). */
interface PhoneColumn {
  /** N of dnc_N_*, as the header names it. */
  n: number;
  e164: number;
  result: number;
  correlationId: number | undefined;
  validUntil: number | undefined;
}

/** Reads the numbers of each row of one results file. */
export interface RowNumbers {
  /** How many phone columns the file has (1 when it has the row-level columns only). */
  readonly phoneColumns: number;
  numbersOf(fields: readonly string[], cells: readonly string[]): RowNumber[];
}

/**
 * The phone columns the header names after the input's columns: `dnc_N_e164` and `dnc_N_result` for each N (and
 * `dnc_N_correlation_id`, `dnc_N_valid_until` when present). None: the row-level columns describe the one number.
 */
export function phoneColumnsOf(header: readonly string[] | null, inputColumns: number): PhoneColumn[] {
  if (header === null) return [];
  const at = new Map<string, number>();
  header.forEach((name, i) => {
    if (i >= inputColumns && !at.has(name)) at.set(name, i);
  });
  const columns: PhoneColumn[] = [];
  for (const [name, index] of at) {
    const m = /^dnc_(\d+)_e164$/.exec(name);
    const result = m ? at.get(`dnc_${m[1]}_result`) : undefined;
    if (!m || result === undefined) continue;
    const n = Number(m[1]);
    columns.push({
      n,
      e164: index,
      result,
      correlationId: at.get(`dnc_${m[1]}_correlation_id`),
      validUntil: at.get(`dnc_${m[1]}_valid_until`),
    });
  }
  return columns.sort((a, b) => a.n - b.n);
}

export function rowNumbersOf(header: readonly string[] | null, inputColumns: number): RowNumbers {
  const columns = phoneColumnsOf(header, inputColumns);
  if (columns.length === 0) {
    return {
      phoneColumns: 1,
      numbersOf: (_fields, cells) => [
        {
          e164: cells[C.e164] ?? '',
          country: cells[C.country] || undefined,
          result: cells[C.result] ?? '',
          validUntil: undefined,
          correlationId: undefined,
        },
      ],
    };
  }
  // A file with several phone columns has no country per number: it is the E.164's own (a microsecond when plain).
  const phones = new PhoneCache(undefined);
  return {
    phoneColumns: columns.length,
    numbersOf: (fields) =>
      columns.map((c) => {
        const e164 = fields[c.e164] ?? '';
        const phone = e164 === '' ? undefined : phones.normalise(e164);
        return {
          e164,
          country: phone?.ok ? phone.country || undefined : undefined,
          result: fields[c.result] ?? '',
          validUntil: c.validUntil === undefined ? undefined : (fields[c.validUntil] ?? ''),
          correlationId: c.correlationId === undefined ? undefined : (fields[c.correlationId] ?? ''),
        };
      }),
  };
}
