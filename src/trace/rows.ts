// Where a traced number stood in its list: the rows and phone columns of a batch's results that hold it. The results
// keep every input row in input order, with dnc's normalised number in `dnc_phone_e164` (or `dnc_N_e164` with several
// phone columns), so the rows are found there without normalising the input again.
import { existsSync } from 'node:fs';
import { dataRecordLines, openInputLayout, readRows } from '../tables/input.js';

/** One cell that held the number: its row (the line a CSV record starts on, or the sheet's row) and its column. */
export interface TracedRow {
  line: number;
  /** The phone column's label in the list (its header name, or `column N`). */
  column: string;
}

/** The rows found (at most MAX_TRACED_ROWS), and whether more hold the number. */
export interface TracedRows {
  rows: TracedRow[];
  more: boolean;
}

/** What a trace needs of a journal's meta to find the rows. */
export interface RowsSource {
  outputPath: string;
  /** The list's phone columns' labels, in --column order (one for a journal of one column). */
  phoneLabels: readonly string[];
}

/** At most this many rows are named: a number on more rows is said to be (support needs where, not a census). */
export const MAX_TRACED_ROWS = 20;

/**
 * The rows of the results that hold `e164`, with the column each was in; null when the results cannot be read
 * (moved, never written, or not a list this reader takes).
 */
export async function rowsHolding(source: RowsSource, e164: string): Promise<TracedRows | null> {
  if (!existsSync(source.outputPath)) return null;
  const several = source.phoneLabels.length > 1;
  const columns = several ? source.phoneLabels.map((_, k) => `dnc_${k + 1}_e164`) : ['dnc_phone_e164'];
  try {
    const layout = await openInputLayout(source.outputPath, { header: true, columns });
    const hits: Array<{ index: number; column: string }> = [];
    let index = 0;
    outer: for await (const rows of readRows(layout)) {
      for (const fields of rows) {
        layout.phoneIndexes.forEach((at, k) => {
          if (fields[at] === e164) hits.push({ index, column: source.phoneLabels[k] ?? `column ${at + 1}` });
        });
        index++;
        if (hits.length > MAX_TRACED_ROWS) break outer;
      }
    }
    const kept = hits.slice(0, MAX_TRACED_ROWS);
    const lines = await dataRecordLines(layout, [...new Set(kept.map((h) => h.index))]);
    return {
      rows: kept.map((h) => ({ line: lines.get(h.index)?.line ?? 0, column: h.column })),
      more: hits.length > MAX_TRACED_ROWS,
    };
  } catch {
    // Results that no longer read as a list: the trace still shows the journal's record.
    return null;
  }
}
