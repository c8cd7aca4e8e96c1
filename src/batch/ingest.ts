// Reads a batch's input once: every row's number normalised, distinct numbers collected, the file hashed in the same
// pass.
import { createHash } from 'node:crypto';
import { inputError } from '../errors.js';
import type { BatchJournal } from '../journal/journal.js';
import { type CellNumber, PhoneCaches } from '../phone/phone-cache.js';
import { RowNumbers } from '../phone/row-numbers.js';
import { dataRecordLines, readRows } from '../tables/input.js';
import type { TableLayout } from '../tables/layout.js';
import type { WorkbookBatch } from '../tables/xlsx-input.js';

export interface ScanResult {
  rows: number;
  /** Rows with a number that cannot be valid (refused locally). */
  invalidRows: number;
  /** Rows with no number in any phone column (said apart: nothing in them is wrong, there is nothing to check). */
  emptyRows: number;
  /** The first few invalid rows, for messages. */
  invalidSamples: Array<{ line: number; record: number; value: string; message: string; where?: string }>;
  sha256: string;
  bytes: number;
  /** A workbook's cells that are formulas without a usable cached value (read as empty): how many, and the first. */
  formulas?: { count: number; first: string };
}

/** Streams the input, calling `onNumber` for each valid cell; throws exit 3 for malformed CSV or a header-only file. */
export async function scanInput(
  layout: TableLayout,
  defaultCountry: string | undefined,
  onNumber: (cell: Extract<CellNumber, { ok: true }>) => void,
  onBatchEnd?: () => void | Promise<void>,
  phones: PhoneCaches = new PhoneCaches(defaultCountry),
): Promise<ScanResult> {
  const rowNumbers = new RowNumbers(phones, layout.phoneIndexes, layout.countryIndex ?? null);
  const several = layout.phoneIndexes.length > 1;
  const hash = createHash('sha256');
  const result: ScanResult = { rows: 0, invalidRows: 0, emptyRows: 0, invalidSamples: [], sha256: '', bytes: 0 };
  for await (const batch of readRows(layout, {
    onChunk: (c) => {
      hash.update(c);
      result.bytes += c.length;
    },
  })) {
    const typed = (batch as WorkbookBatch).typed;
    const formulas = (batch as WorkbookBatch).formulas;
    if (formulas) {
      result.formulas ??= { count: 0, first: formulas[0]! };
      result.formulas.count += formulas.length;
    }
    for (let r = 0; r < batch.length; r++) {
      const fields = batch[r]!;
      const index = result.rows++;
      const cells = rowNumbers.read(fields, typed?.[r]);
      let refused: { raw: string; message: string } | null = null;
      let empty = true;
      for (let c = 0; c < cells.length; c++) {
        const cell = cells[c]!;
        if (cell.ok || cell.code !== 'missing_number') empty = false;
        if (cell.ok) onNumber(cell);
        // An empty cell is no fault of the row (a contact without a mobile); a row of empty cells is counted apart.
        else if (cell.code !== 'missing_number')
          refused ??= {
            raw: fields[layout.phoneIndexes[c]!] ?? '',
            message: several ? `${layout.phoneLabels[c]}: ${cell.message}` : cell.message,
          };
      }
      if (empty) result.emptyRows++;
      else if (refused) {
        result.invalidRows++;
        if (result.invalidSamples.length < 5)
          result.invalidSamples.push({ line: index, record: index, value: refused.raw, message: refused.message });
      }
    }
    await onBatchEnd?.();
  }
  if (result.rows === 0) {
    throw inputError(
      'E_INPUT_NO_ROWS',
      `${layout.path}: the file has ${layout.header ? 'a header but no rows' : 'no rows'}`,
      {
        hint: 'export the call list again with its rows',
      },
    );
  }
  result.sha256 = hash.digest('hex');
  if (result.invalidSamples.length > 0) {
    // Samples hold record indexes until here: their lines are found once, for the message.
    const places = await dataRecordLines(
      layout,
      result.invalidSamples.map((s) => s.record),
    );
    for (const s of result.invalidSamples) {
      Object.assign(s, places.get(s.record));
      // In a workbook the place is the sheet and the row number Excel shows.
      if (layout.workbook) s.where = `sheet '${layout.workbook.sheet}' row ${s.line}`;
    }
  }
  return result;
}

export interface IngestOptions {
  /**
   * Called after each commit of new numbers with how many were new: lookups start on the first ones while
   * the rest of the list is read. When given, every chunk of rows is committed at once (not 5,000 at a time).
   */
  onNumbers?: (added: number) => void;
  /** Stops reading (a second Ctrl-C): the rows read so far stay in the journal; it rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Awaited once the first numbers are committed, before more is read: the first lookups go out before the
   * rest of the list competes with them for the one thread (whatever the list's size).
   */
  firstNumbersTaken?: Promise<void>;
}

/** Reads every distinct number of the input into the journal, in input order (a number's id is its first row's). */
export async function ingestInput(
  layout: TableLayout,
  defaultCountry: string | undefined,
  journal: BatchJournal,
  phones?: PhoneCaches,
  options: IngestOptions = {},
): Promise<ScanResult & { added: number }> {
  const { onNumbers, signal, firstNumbersTaken } = options;
  let waited = firstNumbersTaken === undefined;
  let pending: Array<readonly [string, string]> = [];
  let added = 0;
  const commit = () => {
    const n = journal.insertNumbers(pending);
    pending = [];
    added += n;
    if (n > 0) onNumbers?.(n);
  };
  const flush = async () => {
    signal?.throwIfAborted();
    // Streaming, each chunk (about 1,000 rows) is committed as read: the scheduler waits on it.
    if (pending.length >= 5_000 || (onNumbers && pending.length > 0)) commit();
    if (!waited && added > 0) {
      waited = true;
      await firstNumbersTaken;
      signal?.throwIfAborted();
    }
  };
  const result = await scanInput(
    layout,
    defaultCountry,
    (cell) => pending.push([cell.e164, cell.country]),
    flush,
    phones,
  );
  commit();
  return { ...result, added };
}
