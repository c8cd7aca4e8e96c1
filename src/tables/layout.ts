// What a call list looks like, CSV or workbook: how to read it and where its phone numbers are (the one layout
// every reader and writer of table files shares).
import type { RecordDelimiter } from './csv-output.js';
import type { TextEncoding } from './encoding.js';

/** What a CSV file looks like: how to read it and where its phone numbers are. */
export interface TableLayout {
  path: string;
  delimiter: string;
  /** Line ending of the first record, reused for the output's records. */
  recordDelimiter: RecordDelimiter;
  /** The header's fields, or null with --no-header. */
  header: string[] | null;
  columnCount: number;
  /** 0-based index of the phone column. */
  phoneIndex: number;
  /** How to name the phone column in messages: `phone` or `column 3`. */
  phoneLabel: string;
  bom: boolean;
  /** The text encoding when it is not UTF-8 (src/batch/encoding.ts). */
  encoding?: TextEncoding | undefined;
  /** Set when the list is a sheet of an .xlsx workbook (src/batch/xlsx-input.ts reads it). */
  workbook?: WorkbookLayout | undefined;
}

export interface ReadRowsOptions {
  /** Sees every raw chunk of the file, in order (for hashing in the same pass). */
  onChunk?: (chunk: Buffer) => void;
}

/** Where a record is: the line it starts on and its record number (1-based, the header is record 1). */
export interface RecordLocation {
  line?: number | undefined;
  record?: number | undefined;
}

/** Which sheet of a workbook a batch reads, and where its rows start (src/tables/xlsx-input.ts reads it). */
export interface WorkbookLayout {
  /** The sheet's name, as its tab shows it. */
  sheet: string;
  /** Its 1-based position among the workbook's worksheets (chart sheets are not counted). */
  position: number;
  /** The Excel row number of the header (0 with --no-header: data starts at row 1). */
  headerRow: number;
  /** --skip-rows N: rows above N + 1 are not read (the header, or the data with --no-header, starts below them). */
  firstRow?: number | undefined;
}
