// The cells of rows verify found fit, by number, kept so that a number's later rows with the same cells are not
// judged again.
import { C, CALLING } from '../results/columns.js';

/**
 * The dnc cells of a row verify judged fit (nothing to re-check), by number. A call list repeats numbers (a CRM
 * export has a contact's number on each of its rows); judging is a function of a number's cells alone (the journal,
 * the input list, the rules and the as-of time do not change during a pass), so a later row with exactly the cells of
 * one judged fit is fit. All cells are compared but dnc_credits, which is not judged (only a number's first row holds
 * its credits: the tally adds them up, against the manifest's). Judging each row again (its verdict read from the
 * journal, its valid-until and calling window recomputed) was over half of `dnc window`'s time over a million rows.
 *
 * Exact, not a digest: a row edited to look like another (a do_not_call made callable) can never pass for it. Bounded:
 * the rows of the first `capacity` numbers are kept (≈ 300 bytes each); those of numbers after them are judged, as
 * before. Kept rather than least-recently-used: a list's repeats often come round in the same order (a file appended
 * to itself), where an LRU smaller than the list keeps nothing that is asked for again.
 */
export class FitRows {
  /** Each number's cells (its column's marker last): kept as strings, compared with ===, the fastest way by far. */
  private readonly fit = new Map<string, readonly string[]>();
  /** One string for each value of a column most numbers share (a country, a source, a zone), up to SHARED_KEPT. */
  private readonly shared = new Map<string, string>();

  constructor(private readonly capacity: number = FIT_ROWS_KEPT) {}

  /** Whether a row of `e164` with exactly these cells, judged as this column (null: the row's own), was fit. */
  has(e164: string, cells: readonly string[], column: number | null): boolean {
    const kept = this.fit.get(e164);
    if (kept === undefined || kept.length !== cells.length + 1 || kept[cells.length] !== columnMarker(column))
      return false;
    for (let i = 0; i < cells.length; i++) if (i !== C.credits && kept[i] !== cells[i]) return false;
    return true;
  }

  /** A row of `e164` with these cells was judged fit (the number's last such row is the one kept). */
  add(e164: string, cells: readonly string[], column: number | null): void {
    if (this.fit.size >= this.capacity && !this.fit.has(e164)) return;
    // A row dnc wrote is ≈ 200 characters; one of many more (a long error text, a forged cell) is judged each time
    // rather than kept, so that the bound on memory holds for any file.
    let chars = 0;
    for (const cell of cells) chars += cell.length;
    if (chars > KEPT_ROW_CHARS) return;
    const kept = cells.map((cell, i) => (SHARED_COLUMNS.has(i) ? this.share(cell) : cell));
    kept.push(columnMarker(column));
    this.fit.set(e164, kept);
  }

  private share(value: string): string {
    const one = this.shared.get(value);
    if (one !== undefined) return one;
    if (this.shared.size < SHARED_KEPT) this.shared.set(value, value);
    return value;
  }
}

const columnMarker = (column: number | null) => (column === null ? '' : String(column));

/** Columns whose values most numbers share: kept once each, a number's own cells then cost ≈ 300 bytes, not 600. */
const SHARED_COLUMNS: ReadonlySet<number> = new Set([
  C.country,
  C.result,
  C.doNotCall,
  C.source,
  C.errorCode,
  C.exemption,
  CALLING.timeZones,
  CALLING.window,
]);
const SHARED_KEPT = 4_096;
const KEPT_ROW_CHARS = 1_024;

/** ≈ 150 MB at most; a list with more distinct numbers has the rest of its repeats judged as its first rows are. */
export const FIT_ROWS_KEPT = 500_000;
