// A call list, CSV or workbook, opened and read in one place: the layout, its rows in batches, where a row starts.
import { closeSync, openSync, readSync } from 'node:fs';
import { inputError, usageError } from '../errors.js';
import { openCsvLayout, readCsvRows } from './csv-input.js';
import { csvRecordLines } from './csv-records.js';
import { isWorkbookInputPath } from './table-format.js';
import type { ColumnOptions, ReadRowsOptions, RecordLocation, TableLayout } from './layout.js';
import type { TextEncoding } from './encoding.js';

export interface InputOptions extends ColumnOptions {
  delimiter?: string | undefined;
  header: boolean;
  /** --sheet, for a workbook. */
  sheet?: string | undefined;
  /** --skip-rows: the rows (a workbook's) or records (a CSV file's) above the list (a title). */
  skipRows?: number | undefined;
  /** --encoding, for a CSV file. */
  encoding?: TextEncoding | undefined;
}

export async function openInputLayout(path: string, options: InputOptions): Promise<TableLayout> {
  refuseOtherSpreadsheets(path);
  if (isWorkbookInputPath(path)) {
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
  return openCsvLayout(path, options);
}

/** A spreadsheet dnc does not read: what it is, and how to save it as one dnc reads. */
interface OtherSpreadsheet {
  what: string;
  hint: string;
}

const SAVE_FROM_EXCEL = 'in Excel: File > Save As > Excel Workbook (.xlsx), or CSV UTF-8';
const XLS: OtherSpreadsheet = { what: 'an Excel 97-2003 workbook', hint: SAVE_FROM_EXCEL };

/** By extension: the kinds a call list is saved in that are not CSV, .xlsx or .xlsm. */
const OTHER_SPREADSHEETS: ReadonlyArray<[RegExp, OtherSpreadsheet]> = [
  [/\.xls$/i, XLS],
  [/\.xlsb$/i, { what: 'an Excel binary workbook (.xlsb)', hint: SAVE_FROM_EXCEL }],
  [
    /\.ods$/i,
    {
      what: 'an OpenDocument spreadsheet (.ods)',
      hint: 'in LibreOffice: File > Save As > Excel 2007-365 (.xlsx), or Text CSV',
    },
  ],
];

/**
 * Refuses a spreadsheet of a kind dnc does not read (exit 3, saying what it is), by its extension, or by its first
 * bytes when its name says CSV: read as text, each was refused for "a NUL byte", which says nothing of the way out.
 */
function refuseOtherSpreadsheets(path: string): void {
  const byName = OTHER_SPREADSHEETS.find(([extension]) => extension.test(path))?.[1];
  const kind = byName ?? (isWorkbookInputPath(path) ? undefined : spreadsheetByContent(path));
  if (!kind) return;
  throw inputError('E_INPUT_FORMAT', `${path} is ${kind.what}; dnc reads CSV files and .xlsx (or .xlsm) workbooks`, {
    hint: kind.hint,
  });
}

/** What a file named as CSV holds when its first bytes are a spreadsheet's: a zip archive or an OLE2 file. */
function spreadsheetByContent(path: string): OtherSpreadsheet | undefined {
  const head = Buffer.alloc(4);
  try {
    const fd = openSync(path, 'r');
    try {
      readSync(fd, head, 0, 4, 0);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Not readable here: the CSV reader says why, with its own message.
    return undefined;
  }
  if (head.equals(OLE2))
    return { what: 'an Excel 97-2003 workbook or a password-protected one', hint: SAVE_FROM_EXCEL };
  if (head.equals(ZIP)) {
    const what = 'a zip archive (a workbook or another spreadsheet, not CSV)';
    return { what, hint: 'an .xlsx workbook is read when its name ends in .xlsx; else save it as CSV' };
  }
  return undefined;
}

const OLE2 = Buffer.from([0xd0, 0xcf, 0x11, 0xe0]);
const ZIP = Buffer.from([0x50, 0x4b, 0x03, 0x04]);

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
