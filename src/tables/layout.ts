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
  /** 0-based indexes of the phone columns, in the order given (the N of the dnc_N_* columns). */
  phoneIndexes: number[];
  /** How to name each phone column in messages: `phone` or `column 3`. */
  phoneLabels: string[];
  /** The phone columns were found by their names (no --column). */
  phonesDetected?: boolean | undefined;
  /** 0-based index of the column holding each row's country (--country-column), or null. */
  countryIndex?: number | null | undefined;
  countryLabel?: string | undefined;
  /** The country column was found by its name (no --country-column). */
  countryDetected?: boolean | undefined;
  bom: boolean;
  /** The text encoding when it is not UTF-8 (src/batch/encoding.ts). */
  encoding?: TextEncoding | undefined;
  /** Set when the list is a sheet of an .xlsx workbook (src/batch/xlsx-input.ts reads it). */
  workbook?: WorkbookLayout | undefined;
  /** A CSV file's records above its header (or data) that are not read: --skip-rows, and Excel's `sep=` line. */
  skipRecords?: number | undefined;
}

/** Which columns to read numbers and countries from (src/tables/columns.ts chooses them). */
export interface ColumnOptions {
  /** --column, each value a name or a 1-based index, or a list of them split at commas. */
  columns?: readonly string[] | undefined;
  /** --country-column NAME|INDEX. */
  countryColumn?: string | undefined;
  /** Without --country-column, take one column named as countries are (a new batch; a resumed one keeps its own). */
  detectCountryColumn?: boolean | undefined;
  /** A header of one column is the phone column, whatever its name (a list of numbers to import). */
  loneColumnIsPhone?: boolean | undefined;
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
  /** Set when the sheet is hidden (read only when --sheet names it). */
  hidden?: true | undefined;
}
