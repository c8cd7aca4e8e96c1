// Reads a call list from an .xlsx workbook, streaming: one sheet's rows as the same string batches as a CSV's,
// each cell as the text a person sees in Excel, with the typed cells beside them for an .xlsx output.
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import { inputError, usageError, type DncError } from '../errors.js';
import { formatInteger } from '../text/numbers.js';
import { cellText, loadNumberFormats, numberFormatsLoaded, type TypedCell } from './xlsx-cells.js';
import { columnName } from './xlsx-writer.js';
import { SheetHandler, SheetLimitError, XmlScanner, type SheetRow, type StyleLookup } from './xlsx-xml.js';
import { ColumnWidthsHandler, SharedStringsHandler, StylesHandler } from './xlsx-parts.js';
import {
  defaultSheet,
  inflateLimit,
  PartLimitError,
  readPackage,
  scanPart,
  type PackageSheet,
  type WorkbookPackage,
} from './xlsx-package.js';
import { ZipFile, type ZipEntry } from './zip-file.js';
import { chooseColumns, namesPhoneColumn } from './columns.js';
import type { ColumnOptions, TableLayout, ReadRowsOptions } from './layout.js';

/** A batch of rows as text, with each row's typed cells (for an .xlsx output that keeps values and types). */
export type WorkbookBatch = string[][] & {
  typed?: TypedCell[][];
  rowNumbers?: number[];
  /** The cells of the batch's rows that are formulas without a usable cached value (TypedCell.formula), in order. */
  formulas?: string[];
};

export interface XlsxOptions extends ColumnOptions {
  /** --sheet NAME|INDEX (INDEX is 1-based); the sheet Excel opens on (its active tab) when absent. */
  sheet?: string | undefined;
  header: boolean;
  /** --skip-rows N: the first N rows of the sheet are not read (title rows above the list). */
  skipRows?: number | undefined;
}

/** The most a declared size reserves at once for the shared strings (a 200,000-row list needs about 5 MB). */
const RESERVE_MAX_BYTES = 64 * 1024 * 1024;

/** The workbook's shared strings, packed as UTF-8 in one growing buffer with their end offsets: a few bytes each. */
class StringTable {
  private bytes = Buffer.alloc(1 << 16);
  private used = 0;
  private ends = new Uint32Array(1 << 12);
  private count = 0;
  /**
   * Sizes the table once from what the part declares (its uniqueCount, and its inflated size: decoded text is never
   * longer than its XML, and each `<si><t></t></si>` takes 16 bytes of it), so that it is not grown by doubling,
   * which copies and briefly holds it twice. A count that lies only costs growing.
   */
  reserve(count: number, xmlBytes: number): void {
    if (this.count > 0 || !(count > 0)) return;
    // Both figures come from the file: a zip directory that claims a 4 GB part must not make a 4 GB buffer (one that
    // large is not even written reliably); past the cap the table grows by doubling, as for a count that lies.
    xmlBytes = Math.min(xmlBytes, RESERVE_MAX_BYTES);
    const strings = Math.min(count, Math.floor(xmlBytes / 5));
    this.ends = new Uint32Array(Math.max(strings, 1 << 12));
    this.bytes = Buffer.alloc(Math.max(xmlBytes - 16 * strings, 1 << 16));
  }
  add(text: string): void {
    const need = Buffer.byteLength(text, 'utf8');
    if (this.used + need > this.bytes.length) {
      const bigger = Buffer.alloc(Math.max(this.bytes.length * 2, this.used + need));
      this.bytes.copy(bigger, 0, 0, this.used);
      this.bytes = bigger;
    }
    this.used += this.bytes.write(text, this.used, 'utf8');
    if (this.count === this.ends.length) {
      const bigger = new Uint32Array(this.ends.length * 2);
      bigger.set(this.ends);
      this.ends = bigger;
    }
    this.ends[this.count++] = this.used;
  }
  get(index: number): string | undefined {
    if (!Number.isInteger(index) || index < 0 || index >= this.count) return undefined;
    return this.bytes.toString('utf8', index === 0 ? 0 : this.ends[index - 1]!, this.ends[index]!);
  }
}

/**
 * The shared strings the layout read (a workbook's header is read first, then its rows): kept for the rows of
 * the same file, unchanged since (same size, time and inode), so the table is built once, not twice.
 */
let cachedStrings: { identity: string; table: StringTable } | undefined;

function takeCachedStrings(identity: string): StringTable | undefined {
  const cached = cachedStrings;
  cachedStrings = undefined;
  return cached && cached.identity === identity ? cached.table : undefined;
}

/** Refuses what is not a workbook dnc can read, before the zip reader sees it (it says nothing useful about them). */
async function checkWorkbookFile(path: string): Promise<void> {
  let head: Buffer;
  try {
    const handle = await open(path, 'r');
    try {
      head = Buffer.alloc(8);
      const { bytesRead } = await handle.read(head, 0, 8, 0);
      head = head.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EACCES'
          ? 'permission denied'
          : code === 'EISDIR'
            ? 'it is a directory'
            : String(code ?? err);
    throw inputError('E_INPUT_UNREADABLE', `cannot read ${path}: ${why}`, {
      hint: 'check the path of the input workbook',
      cause: err,
    });
  }
  if (head.length === 0)
    throw inputError('E_INPUT_EMPTY', `${path}: the file is empty`, { hint: 'save the workbook again from Excel' });
  if (head.subarray(0, 4).equals(Buffer.from([0xd0, 0xcf, 0x11, 0xe0]))) {
    throw inputError(
      'E_INPUT_FORMAT',
      `${path} is an Excel 97-2003 workbook or a password-protected one; dnc reads .xlsx`,
      {
        hint: 'in Excel: File > Save As > Excel Workbook (.xlsx), without a password',
      },
    );
  }
  if (!head.subarray(0, 4).equals(Buffer.from([0x50, 0x4b, 0x03, 0x04]))) {
    throw inputError('E_INPUT_FORMAT', `${path} is not an .xlsx workbook (it is not a zip archive)`, {
      hint: 'a CSV file must not be named .xlsx; save the workbook from Excel as .xlsx',
    });
  }
}

function malformed(path: string, err: unknown): DncError {
  return inputError(
    'E_INPUT_MALFORMED',
    `${path}: the workbook cannot be read: ${(err as Error).message ?? String(err)}`,
    {
      hint: 'open it in Excel or LibreOffice and save it again as .xlsx',
      cause: err,
    },
  );
}

/** Describes a sheet for messages: `sheet 'Calls'`. */
export function sheetLabel(name: string): string {
  return `sheet '${name}'`;
}

/** The number format of each cell style, from xl/styles.xml (built-in formats alone when the workbook has none). */
async function readStyles(zip: ZipFile, entry: ZipEntry | undefined): Promise<StyleLookup> {
  const styles = new StylesHandler();
  if (entry) await scanPart(zip, entry, styles);
  // Built-in formats are named by numfmt (ids 5-8, 23-36 …) and shown by it: loaded when a style has a format.
  if (styles.formatsNumbers()) await loadNumberFormats();
  return styles.lookup();
}

/**
 * The rows of one sheet (the one `choose` picks among the worksheets), in order, as stored (empty rows are
 * absent). The zip is read by its directory: the parts found through the package's relationships, the shared
 * strings first (packed into a compact table, the one thing kept whole), then the sheet streamed, its rows parsed
 * as they are inflated, read no faster than they are consumed. Throws when no sheet is chosen, listing those there are.
 */
async function* sheetRows(
  path: string,
  choose: SheetChooser,
  found: (sheet: PackageSheet, book: WorkbookPackage) => void,
  keepStrings = false,
): AsyncGenerator<SheetRow> {
  await checkWorkbookFile(path);
  let zip: ZipFile;
  try {
    zip = await ZipFile.open(path);
  } catch (err) {
    throw malformed(path, err);
  }
  let chosenName = '';
  try {
    const book = await readPackage(zip);
    const chosen = choose(book);
    if (!chosen) throw noSuchSheet(path, book, choose.wanted);
    chosenName = chosen.name;
    found(chosen, book);
    let strings = takeCachedStrings(zip.identity);
    if (!strings) {
      const table = new StringTable();
      const sharedEntry = book.sharedStrings;
      if (sharedEntry)
        await scanPart(
          zip,
          sharedEntry,
          new SharedStringsHandler(
            (text) => table.add(text),
            (count) => table.reserve(count, sharedEntry.uncompressedSize),
          ),
          undefined,
          // The one part held whole: bounded as rows and cells are, or a small file takes the memory of the machine.
          inflateLimit(zip, sharedEntry),
        );
      strings = table;
    }
    if (keepStrings) cachedStrings = { identity: zip.identity, table: strings };
    const style = await readStyles(zip, book.styles);
    const sheet = new SheetHandler((i) => strings.get(i), style, book.date1904, book.fullCalcOnLoad);
    const stream = await zip.stream(chosen.entry!);
    const scanner = new XmlScanner(sheet);
    const decoder = new StringDecoder('utf8');
    try {
      for await (const chunk of stream) {
        scanner.write(decoder.write(chunk as Buffer));
        const rows = sheet.rows;
        sheet.rows = [];
        if (sheet.fraction && !numberFormatsLoaded()) await loadNumberFormats();
        yield* rows;
        // Whatever follows the rows (merged cells, filters, print settings) is not read.
        if (sheet.done) return;
      }
      scanner.write(decoder.end());
      scanner.end();
      if (sheet.fraction && !numberFormatsLoaded()) await loadNumberFormats();
      yield* sheet.rows;
    } finally {
      stream.destroy();
    }
  } catch (err) {
    if ((err as DncError).name === 'DncError') throw err;
    if (err instanceof SheetLimitError) throw sheetLimitError(path, chosenName, err);
    if (err instanceof PartLimitError)
      throw inputError('E_INPUT_LIMITS', `${path}: ${err.message}`, {
        hint: 'no spreadsheet writes such a part: the file was made to exhaust memory, or is damaged',
        cause: err,
      });
    throw malformed(path, err);
  } finally {
    await zip.close();
  }
}

/** A sheet's name for a list of them: `2:Old (hidden)`. */
function listed(s: PackageSheet): string {
  return `${s.position}:${s.name}${s.state ? ' (hidden)' : ''}`;
}

/** No sheet is the one asked for (exit 2, listing the worksheets), or the workbook has none to read (exit 3). */
function noSuchSheet(path: string, book: WorkbookPackage, wanted: string | undefined): DncError {
  const worksheets = book.sheets.filter((s) => s.entry);
  if (worksheets.length === 0) {
    const hint = 'save the workbook again from Excel';
    return inputError('E_INPUT_EMPTY', `${path}: the workbook has no worksheet`, { hint });
  }
  const list = worksheets.map(listed).join(', ');
  if (wanted === undefined) {
    return usageError('E_SHEET_NOT_FOUND', `${path} has no visible worksheet`, {
      hint: `its worksheets are ${list}: give --sheet NAME or a 1-based INDEX to read a hidden one`,
    });
  }
  const other = book.sheets.find((s) => !s.entry && sameName(s.name, wanted));
  const kind = other ? ` ('${other.name}' is a chart sheet or another kind, with no cells)` : '';
  return usageError('E_SHEET_NOT_FOUND', `${path} has no sheet '${wanted}'${kind}`, {
    hint: `its worksheets are ${list}; give --sheet NAME or a 1-based INDEX`,
  });
}

/** A row or cell past Excel's limits, or rows out of order: exit 3, naming the file, the sheet and the row. */
function sheetLimitError(path: string, sheet: string, err: SheetLimitError): DncError {
  const where = `${path}: ${sheetLabel(sheet)}`;
  if (err.kind === 'order') {
    return inputError('E_INPUT_MALFORMED', `${where}: ${err.message}`, {
      hint: 'Excel stores rows in order: open the workbook in Excel or LibreOffice and save it again',
      details: { sheet, row: err.row },
    });
  }
  return inputError('E_INPUT_LIMITS', `${where}: ${err.message}`, {
    hint: 'no sheet Excel opens has it: the file was not written by a spreadsheet, or was altered',
    details: { sheet, row: err.row },
  });
}

/** Picks a worksheet of a workbook; `wanted` is what --sheet said, for messages. */
type SheetChooser = ((book: WorkbookPackage) => PackageSheet | undefined) & { wanted?: string | undefined };

function sameName(name: string, wanted: string): boolean {
  return name === wanted || name.trim().toLowerCase() === wanted.trim().toLowerCase();
}

/**
 * Picks the sheet of --sheet: an exact name, a name up to case, or a 1-based position among the worksheets (hidden
 * ones counted); by default the one Excel opens on (the active tab, else the first visible worksheet).
 */
function sheetPicker(wanted: string | undefined): SheetChooser {
  if (wanted === undefined) return (book) => defaultSheet(book.sheets, book.activeTab);
  const w = wanted.trim();
  const index = /^\d+$/.test(w) ? Number(w) : -1;
  const worksheets = (book: WorkbookPackage) => book.sheets.filter((s) => s.entry);
  return Object.assign(
    (book: WorkbookPackage) =>
      worksheets(book).find((s) => s.name === wanted) ??
      worksheets(book).find((s) => sameName(s.name, wanted)) ??
      worksheets(book).find((s) => s.position === index),
    { wanted },
  );
}

/** A row whose cells hold nothing (a formula without a value holds one: its row is kept, and said to be unread). */
function isEmptyRow(cells: readonly TypedCell[]): boolean {
  return cells.every(isEmptyCell);
}

/** How many rows --no-header looks at for the width of the list (the widest of them). */
const WIDTH_SAMPLE_ROWS = 1000;

/** A row's width: one past its last cell that holds something. */
function rowWidth(cells: readonly TypedCell[]): number {
  for (let i = cells.length - 1; i >= 0; i--) if (!isEmptyCell(cells[i])) return i + 1;
  return 0;
}

function isEmptyCell(c: TypedCell | undefined): boolean {
  return c === undefined || ((c.value === null || c.value === '') && c.formula === undefined);
}

/**
 * The header of a sheet and where the phone numbers are; throws exit 3 for an empty sheet, exit 2 for a column that
 * cannot be chosen. The header is the first row that is not empty (below --skip-rows); with --no-header the list is
 * as wide as the widest of its first 1,000 rows, so a title row above it does not make it one column wide.
 */
export async function openXlsxLayout(path: string, options: XlsxOptions): Promise<TableLayout> {
  let sheet = '';
  let position = 0;
  let hidden = false;
  const firstRow = (options.skipRows ?? 0) + 1;
  const found = (s: PackageSheet) => ((sheet = s.name), (position = s.position), (hidden = s.state !== undefined));
  const rows = sheetRows(path, sheetPicker(options.sheet), found, true);
  let first: SheetRow | undefined;
  let width = 0;
  let sampled = 0;
  try {
    for await (const row of rows) {
      if (row.number < firstRow || isEmptyRow(row.cells)) continue;
      first ??= row;
      width = Math.max(width, options.header ? row.cells.length : rowWidth(row.cells));
      if (options.header || ++sampled >= WIDTH_SAMPLE_ROWS) break;
    }
  } finally {
    await rows.return(undefined);
  }
  const where = `${path} (${sheetLabel(sheet || String(options.sheet ?? 1))})`;
  if (!first) {
    const skipped = firstRow > 1 ? ` below the ${firstRow - 1} row(s) --skip-rows skips` : '';
    throw inputError('E_INPUT_EMPTY', `${where}: the sheet is empty${skipped}`, {
      hint:
        options.sheet === undefined
          ? 'the list is read from the sheet Excel opens on: give --sheet NAME for another'
          : 'give the --sheet that holds the call list',
    });
  }
  const header = options.header ? Array.from({ length: width }, (_, i) => cellText(first.cells[i])) : null;
  let chosen: ReturnType<typeof chooseColumns>;
  try {
    chosen = chooseColumns(header, width, options, where);
  } catch (err) {
    const title = header && titleOf(header);
    if (!title || (err as DncError).code !== 'E_COLUMN_NOT_FOUND') throw err;
    // The header read was a title above it: say which row was read, and the way past it: to the row below that
    // holds a phone column's name, when there is one (a title and a subtitle took two tries, one row at a time).
    const below = await headerBelow(path, options, first.number);
    const advice = below
      ? `row ${below.number} (${below.names}) looks like the header: give --skip-rows ${below.number - 1}`
      : titleAdvice(first.number, title);
    throw usageError('E_COLUMN_NOT_FOUND', `${(err as DncError).message}; the header is row ${first.number}`, {
      hint: `${advice}; ${(err as DncError).hint ?? ''}`,
    });
  }
  return {
    path,
    delimiter: ',',
    // A CSV written from a workbook is what Excel's "CSV UTF-8" is: CRLF and a byte-order mark.
    recordDelimiter: '\r\n',
    header,
    columnCount: width,
    ...chosen,
    bom: true,
    workbook: {
      sheet,
      position,
      headerRow: options.header ? first.number : 0,
      ...(firstRow > 1 ? { firstRow } : {}),
      ...(hidden ? { hidden } : {}),
    },
  };
}

/** How far below a title the row that holds the header is looked for. */
const HEADER_SEARCH_ROWS = 20;

/** The first of the next rows below `row` in which a phone column is found by its name: the header under a title. */
async function headerBelow(
  path: string,
  options: XlsxOptions,
  row: number,
): Promise<{ number: number; names: string } | undefined> {
  const rows = sheetRows(path, sheetPicker(options.sheet), () => {});
  try {
    for await (const r of rows) {
      if (r.number <= row || isEmptyRow(r.cells)) continue;
      if (r.number > row + HEADER_SEARCH_ROWS) return undefined;
      const names = Array.from({ length: r.cells.length }, (_, i) => cellText(r.cells[i]));
      if (namesPhoneColumn(names, options)) {
        const shown = names.filter((n) => n.trim() !== '').slice(0, 3);
        return { number: r.number, names: shown.map((n) => `'${n.slice(0, 20)}'`).join(', ') };
      }
    }
  } finally {
    await rows.return(undefined);
  }
  return undefined;
}

/** Rows per batch, and cells: a sheet as wide as Excel allows (16,384 columns) gets batches of a few rows. */
const BATCH_ROWS = 1024;
const BATCH_CELLS = 1 << 16;

/**
 * The stored rows of the layout's sheet (in order, each with its Excel row number), and the first row number of data.
 */
function sheetOf(layout: TableLayout): { rows: AsyncGenerator<SheetRow>; after: number } {
  const book = layout.workbook!;
  const choose = (pkg: WorkbookPackage) => pkg.sheets.find((s) => s.entry && s.position === book.position);
  const rows = sheetRows(layout.path, Object.assign(choose, { wanted: `${book.position}` }), () => {});
  return { rows, after: Math.max(book.headerRow, (book.firstRow ?? 1) - 1) };
}

/**
 * Whether a stored row is a data row: below the header (and below --skip-rows), and not empty. Empty rows are not
 * rows, between rows or after them: a row number is a claim of the file, and `<row r="1000000">` after row 2 costs
 * no row of output (docs/excel.md).
 */
function isDataRow(row: SheetRow, after: number): boolean {
  return row.number > after && !isEmptyRow(row.cells);
}

/** The text of a header that is one cell (most often a title above the real header), shortened for a message. */
function titleOf(header: readonly string[]): string | undefined {
  const named = header.filter((h) => h.trim() !== '');
  return named.length === 1 ? named[0]!.slice(0, 40) : undefined;
}

function titleAdvice(row: number, title: string): string {
  return `if row ${row} ('${title}') is a title above the header, give --skip-rows ${row}`;
}

/** A cell right of the list's last column: exit 3 naming the sheet, the cell and where the width came from. */
function tooWide(layout: TableLayout, row: SheetRow, col: number): DncError {
  const book = layout.workbook!;
  const width = layout.columnCount;
  const cell = `${columnName(col)}${row.number}`;
  const prefix = `${layout.path}: ${sheetLabel(book.sheet)} row ${row.number}`;
  if (layout.header === null) {
    const sample = formatInteger(WIDTH_SAMPLE_ROWS);
    const why = `with --no-header the list is as wide as the widest of its first ${sample} rows`;
    const last = columnName(width - 1);
    const message = `${prefix}: cell ${cell} is right of the list's last column (${last}): ${why}`;
    return inputError('E_INPUT_MALFORMED', message, {
      hint: 'clear the cells right of the list, or give the list a header row and drop --no-header',
      details: { sheet: book.sheet, row: row.number },
    });
  }
  const title = titleOf(layout.header);
  const titleHint = title ? `; ${titleAdvice(book.headerRow, title)}` : '';
  const last = columnName(width - 1);
  const header = `the header is row ${book.headerRow}`;
  const message = `${prefix}: cell ${cell} is right of the header's last column (${last}); ${header}`;
  return inputError('E_INPUT_MALFORMED', message, {
    hint: `give that column a header, or clear the cells right of the list${titleHint}`,
    details: { sheet: book.sheet, row: row.number },
  });
}

/**
 * Streams the data rows of the layout's sheet in batches: each row as text (what Excel shows in each cell), with its
 * typed cells and its Excel row number beside. A cell right of the list's last column is refused (exit 3, naming
 * the sheet and the cell). `onChunk` sees every byte of the file.
 */
export async function* readXlsxRows(layout: TableLayout, options: ReadRowsOptions = {}): AsyncGenerator<WorkbookBatch> {
  const width = layout.columnCount;
  const fresh = (): WorkbookBatch => Object.assign([], { typed: [] as TypedCell[][], rowNumbers: [] as number[] });
  let batch = fresh();
  // The sheet's rows are filtered here, not through a generator of their own: one more await per row is 20% of a read.
  const { rows, after } = sheetOf(layout);
  for await (const row of rows) {
    if (!isDataRow(row, after)) continue;
    if (row.cells.length > width) {
      const col = row.cells.findIndex((c, i) => i >= width && !isEmptyCell(c));
      if (col >= 0) throw tooWide(layout, row, col);
    }
    const text = new Array<string>(width);
    const typed = new Array<TypedCell>(width);
    for (let i = 0; i < width; i++) {
      const c = row.cells[i];
      text[i] = cellText(c);
      typed[i] = c ?? { value: null };
      if (c?.formula !== undefined) (batch.formulas ??= []).push(c.formula);
    }
    batch.push(text);
    batch.typed!.push(typed);
    batch.rowNumbers!.push(row.number);
    if (batch.length >= BATCH_ROWS || batch.length * width >= BATCH_CELLS) {
      yield batch;
      batch = fresh();
    }
  }
  if (batch.length > 0) yield batch;
  // The rows were read from the zip; the file's bytes are hashed in a pass of their own (the zip reader stops at the
  // sheet).
  if (options.onChunk)
    for await (const chunk of createReadStream(layout.path, { highWaterMark: 1024 * 1024 }))
      options.onChunk(chunk as Buffer);
}

/** The Excel row number of each data row asked for (by its 0-based index among data rows), read from the sheet. */
export async function workbookRowNumbers(
  layout: TableLayout,
  indexes: readonly number[],
): Promise<Map<number, number>> {
  const wanted = new Set(indexes);
  const out = new Map<number, number>();
  if (wanted.size === 0) return out;
  let last = 0;
  for (const i of wanted) last = Math.max(last, i);
  let index = 0;
  const { rows, after } = sheetOf(layout);
  try {
    for await (const row of rows) {
      if (!isDataRow(row, after)) continue;
      if (wanted.has(index)) out.set(index, row.number);
      if (++index > last) break;
    }
  } finally {
    await rows.return(undefined);
  }
  return out;
}

/**
 * The column widths of the layout's sheet, by 0-based column (undefined where the sheet sets none): read from the
 * sheet's `<cols>`, before its rows, so that a results workbook keeps them. A workbook that cannot be read has none.
 */
export async function workbookColumnWidths(layout: TableLayout): Promise<Array<number | undefined>> {
  const book = layout.workbook;
  if (!book) return [];
  let zip: ZipFile | undefined;
  try {
    zip = await ZipFile.open(layout.path);
    const pkg = await readPackage(zip);
    const sheet = pkg.sheets.find((s) => s.entry && s.position === book.position);
    if (!sheet?.entry) return [];
    const handler = new ColumnWidthsHandler();
    await scanPart(zip, sheet.entry, handler, () => handler.done);
    return handler.widths;
  } catch {
    // The rows' reading says what is wrong with the file; widths are only its look.
    return [];
  } finally {
    await zip?.close();
  }
}

/**
 * Every stored row of a sheet (the first, or --sheet's), cells as read: what the batch reads, without its
 * header and width rules. For tests that compare this reader with other readers.
 */
export function readSheetRows(path: string, sheet?: string): AsyncGenerator<SheetRow> {
  return sheetRows(path, sheetPicker(sheet), () => {});
}
