// A call list, CSV or workbook, opened and read in one place: the layout, its rows in batches, where a row starts.
import { usageError } from '../errors.js';
import { csvRecordLines, openCsvLayout, readCsvRows } from './csv-input.js';
import { isWorkbookPath } from './table-format.js';
import type { ColumnOptions, ReadRowsOptions, RecordLocation, TableLayout } from './layout.js';
import type { TextEncoding } from './encoding.js';

export interface InputOptions extends ColumnOptions {
  delimiter?: string | undefined;
  header: boolean;
  /** --sheet, for a workbook. */
  sheet?: string | undefined;
  /** --skip-rows, for a workbook: the rows above its list (a title). */
  skipRows?: number | undefined;
  /** --encoding, for a CSV file. */
  encoding?: TextEncoding | undefined;
}

export async function openInputLayout(path: string, options: InputOptions): Promise<TableLayout> {
  if (isWorkbookPath(path)) {
    if (options.encoding !== undefined)
      throw usageError('E_USAGE', `--encoding is for a CSV input; ${path} is a workbook`, { hint: 'drop --encoding' });
    if (options.delimiter !== undefined)
      throw usageError('E_USAGE', `--delimiter is for a CSV input; ${path} is a workbook`, {
        hint: 'drop --delimiter',
      });
    const { openXlsxLayout } = await import('./xlsx-input.js');
    return openXlsxLayout(path, options);
  }
  if (options.sheet !== undefined)
    throw usageError('E_USAGE', `--sheet is for an .xlsx input; ${path} is read as CSV`, {
      hint: 'drop --sheet, or give the .xlsx workbook',
    });
  if (options.skipRows) {
    throw usageError('E_USAGE', `--skip-rows is for an .xlsx input; ${path} is read as CSV`, {
      hint: 'delete the lines above the header of the CSV file, or give the .xlsx workbook',
    });
  }
  return openCsvLayout(path, options);
}

/**
 * Streams the data records of a list laid out as `layout`, in batches (the header, if any, is checked and skipped):
 * a sheet's rows as Excel shows them, or a CSV file's records (CR, LF and CRLF all end one; a blank line is a row of
 * empty cells). Malformed input throws exit-3 errors naming where.
 */
export async function* readRows(layout: TableLayout, options: ReadRowsOptions = {}): AsyncGenerator<string[][]> {
  if (layout.workbook) {
    const { readXlsxRows } = await import('./xlsx-input.js');
    yield* readXlsxRows(layout, options);
    return;
  }
  yield* readCsvRows(layout, options);
}

/** The data records of a list, numbered from 0, mapped to where each starts (line and record number). */
export async function dataRecordLines(
  layout: TableLayout,
  indexes: readonly number[],
): Promise<Map<number, Required<RecordLocation>>> {
  // (With no row asked for, a CSV would be read whole for nothing: its walk looks for a quote left open.)
  if (indexes.length === 0) return new Map();
  // A sheet's data row is where Excel shows it (empty rows are not data rows): its line and record both.
  if (layout.workbook) {
    const { workbookRowNumbers } = await import('./xlsx-input.js');
    const rows = await workbookRowNumbers(layout, indexes);
    return new Map(indexes.map((i) => [i, { line: rows.get(i) ?? 0, record: rows.get(i) ?? 0 }]));
  }
  return csvRecordLines(layout, indexes);
}
