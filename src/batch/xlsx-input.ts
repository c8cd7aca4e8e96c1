// Reads a call list from an .xlsx workbook, streaming: one sheet's rows as the same string batches as a CSV's,
// each cell as the text a person sees in Excel, with the typed cells beside them for an .xlsx output.
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { inputError, usageError, type DncError } from '../errors.js';
import { choosePhoneColumn, type CsvLayout, type ReadRowsOptions } from './csv-input.js';
import { cellText, plainValue, type TypedCell } from './xlsx-cells.js';
import { columnName } from './xlsx-writer.js';

/** Which sheet of a workbook a batch reads, and where its rows start. */
export interface WorkbookLayout {
  /** The sheet's name, as its tab shows it. */
  sheet: string;
  /** Its 1-based position among the workbook's sheets. */
  position: number;
  /** The Excel row number of the header (0 with --no-header: data starts at row 1). */
  headerRow: number;
}

/** A batch of rows as text, with each row's typed cells (for an .xlsx output that keeps values and types). */
export type WorkbookBatch = string[][] & { typed?: TypedCell[][] };

export interface XlsxOptions {
  /** --sheet NAME|INDEX (INDEX is 1-based); the first sheet when absent. */
  sheet?: string | undefined;
  column?: string | undefined;
  header: boolean;
}

/** Whether a path names a workbook dnc reads or writes (by its extension). */
export function isWorkbookPath(file: string): boolean {
  return /\.xlsx$/i.test(file);
}

/** How an output file is written. */
export type OutputFileFormat = 'csv' | 'xlsx';

/** The format of an output file: --format for the results, else its extension (.xlsx is a workbook). */
export function outputFormatOf(target: string, forced: OutputFileFormat | undefined): OutputFileFormat {
  return forced ?? (isWorkbookPath(target) ? 'xlsx' : 'csv');
}

interface SheetRow {
  number: number;
  cells: TypedCell[];
}

interface ExcelRow {
  number: number;
  eachCell(opts: { includeEmpty: boolean }, fn: (cell: { value: unknown; numFmt?: string }, col: number) => void): void;
}
interface ExcelSheet extends AsyncIterable<ExcelRow> {
  id: number;
  name: string;
}
interface ExcelWorkbookReader {
  model?: { sheets?: Array<{ name: string }> };
  properties?: unknown;
  /** Where the worksheet reader looks up a shared string by its index. */
  sharedStrings?: unknown;
  parse(): AsyncIterable<{ eventType: string; value: unknown } | { index: number; text: unknown }>;
}

/** A shared string's text (a rich text's runs joined). */
function plainText(text: unknown): string {
  if (typeof text === 'string') return text;
  if (text && typeof text === 'object' && Array.isArray((text as { richText?: unknown }).richText)) {
    return ((text as { richText: Array<{ text?: string | null }> }).richText).map((r) => r.text ?? '').join('');
  }
  return '';
}

/** The workbook's shared strings, packed as UTF-8 in one growing buffer with their end offsets: a few bytes each. */
class StringTable {
  private bytes = Buffer.alloc(1 << 16);
  private used = 0;
  private ends = new Uint32Array(1 << 12);
  private count = 0;
  /** What the worksheet reader indexes (`sharedStrings[i]`). */
  readonly view = new Proxy({} as Record<string, string | undefined>, {
    get: (_target, key) => (typeof key === 'string' ? this.get(Number(key)) : undefined),
  });
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
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'it is a directory' : String(code ?? err);
    throw inputError('E_INPUT_UNREADABLE', `cannot read ${path}: ${why}`, { hint: 'check the path of the input workbook', cause: err });
  }
  if (head.length === 0) throw inputError('E_INPUT_EMPTY', `${path}: the file is empty`, { hint: 'save the workbook again from Excel' });
  if (head.subarray(0, 4).equals(Buffer.from([0xd0, 0xcf, 0x11, 0xe0]))) {
    throw inputError('E_INPUT_FORMAT', `${path} is an Excel 97-2003 workbook or a password-protected one; dnc reads .xlsx`, {
      hint: 'in Excel: File > Save As > Excel Workbook (.xlsx), without a password',
    });
  }
  if (!head.subarray(0, 4).equals(Buffer.from([0x50, 0x4b, 0x03, 0x04]))) {
    throw inputError('E_INPUT_FORMAT', `${path} is not an .xlsx workbook (it is not a zip archive)`, {
      hint: 'a CSV file must not be named .xlsx; save the workbook from Excel as .xlsx',
    });
  }
}

function malformed(path: string, err: unknown): DncError {
  return inputError('E_INPUT_MALFORMED', `${path}: the workbook cannot be read: ${(err as Error).message ?? String(err)}`, {
    hint: 'open it in Excel or LibreOffice and save it again as .xlsx',
    cause: err,
  });
}

/** Describes a sheet for messages: `sheet 'Calls'`. */
export function sheetLabel(name: string): string {
  return `sheet '${name}'`;
}

/**
 * The rows of one sheet (chosen by `pick` from its name and position), in order, as the reader stores
 * them (empty rows are absent). Throws when no sheet is picked, listing the sheets there are.
 */
async function* sheetRows(
  path: string,
  pick: (name: string, position: number) => boolean,
  found: (name: string, position: number) => void,
  sheetWanted: string,
): AsyncGenerator<SheetRow> {
  await checkWorkbookFile(path);
  const { default: ExcelJS } = await import('exceljs');
  const source = createReadStream(path, { highWaterMark: 256 * 1024 });
  const reader = new ExcelJS.stream.xlsx.WorkbookReader(source, {
    // Shared strings come one by one into a compact table (not exceljs's array of objects): memory stays
    // near flat however many distinct texts the workbook has.
    sharedStrings: 'emit',
    styles: 'cache',
    worksheets: 'emit',
    hyperlinks: 'ignore',
    entries: 'ignore',
  }) as unknown as ExcelWorkbookReader;
  // exceljs reads a sheet stored before xl/workbook.xml with the workbook's properties and model still unset,
  // and then fails on them (undefined.model): placeholders until the real ones are read (only the 1904 date
  // system and the sheet's name come from there).
  reader.properties ??= {};
  reader.model ??= { sheets: [] };
  const strings = new StringTable();
  const seen: string[] = [];
  let emitted = 0;
  try {
    for await (const event of reader.parse()) {
      if ('index' in event) {
        // A shared string (exceljs yields them bare, in order). Sheets stored after the table are read at once
        // with it; sheets stored before it (Excel, LibreOffice) are spooled by exceljs and read once it is complete.
        reader.sharedStrings ??= strings.view;
        strings.add(plainText(event.text));
        continue;
      }
      const { eventType, value } = event;
      if (eventType !== 'worksheet') continue;
      const sheet = value as ExcelSheet;
      emitted++;
      const order = reader.model?.sheets?.findIndex((s) => s.name === sheet.name) ?? -1;
      const position = order >= 0 ? order + 1 : emitted;
      seen.push(sheet.name);
      if (!pick(sheet.name, position)) {
        // Sheets are stored one after another in the zip: a sheet not wanted is read through and dropped.
        for await (const _ of sheet) void _;
        continue;
      }
      found(sheet.name, position);
      for await (const row of sheet) {
        const cells: TypedCell[] = [];
        row.eachCell({ includeEmpty: false }, (cell, col) => {
          cells[col - 1] = { value: plainValue(cell.value, cell.numFmt), numFmt: cell.numFmt };
        });
        yield { number: row.number, cells };
      }
      return;
    }
  } catch (err) {
    if ((err as DncError).name === 'DncError') throw err;
    throw malformed(path, err);
  } finally {
    source.destroy();
  }
  if (seen.length === 0) throw inputError('E_INPUT_EMPTY', `${path}: the workbook has no sheet`, { hint: 'save the workbook again from Excel' });
  throw usageError('E_SHEET_NOT_FOUND', `${path} has no sheet ${sheetWanted}`, {
    hint: `its sheets are ${seen.map((s, i) => `${i + 1}:${s}`).join(', ')}; give --sheet NAME or a 1-based INDEX`,
  });
}

/** Picks the sheet of --sheet: an exact name, a name up to case, or a 1-based position; the first sheet by default. */
function sheetPicker(wanted: string | undefined): (name: string, position: number) => boolean {
  if (wanted === undefined) return (_name, position) => position === 1;
  const w = wanted.trim();
  return (name, position) => name === wanted || name.trim().toLowerCase() === w.toLowerCase() || (/^\d+$/.test(w) && Number(w) === position);
}

function isEmptyRow(cells: readonly TypedCell[]): boolean {
  return cells.every((c) => c === undefined || c.value === null || c.value === '');
}

/** The header of a sheet and where the phone numbers are; throws exit 3 for an empty sheet, exit 2 for a column that cannot be chosen. */
export async function openXlsxLayout(path: string, options: XlsxOptions): Promise<CsvLayout> {
  let sheet = '';
  let position = 0;
  const rows = sheetRows(path, sheetPicker(options.sheet), (n, p) => ((sheet = n), (position = p)), `'${options.sheet ?? 1}'`);
  let first: SheetRow | undefined;
  try {
    for await (const row of rows) {
      if (isEmptyRow(row.cells)) continue;
      first = row;
      break;
    }
  } finally {
    await rows.return(undefined);
  }
  const where = `${path} (${sheetLabel(sheet || String(options.sheet ?? 1))})`;
  if (!first) {
    throw inputError('E_INPUT_EMPTY', `${where}: the sheet is empty`, {
      hint: options.sheet === undefined ? 'the list is read from the first sheet: give --sheet NAME for another' : 'give the --sheet that holds the call list',
    });
  }
  const width = first.cells.length;
  const texts = Array.from({ length: width }, (_, i) => cellText(first.cells[i]));
  const header = options.header ? texts : null;
  const { index, label } = choosePhoneColumn(header, width, options.column, where);
  return {
    path,
    delimiter: ',',
    // A CSV written from a workbook is what Excel's "CSV UTF-8" is: CRLF and a byte-order mark.
    recordDelimiter: '\r\n',
    header,
    columnCount: width,
    phoneIndex: index,
    phoneLabel: label,
    bom: true,
    workbook: { sheet, position, headerRow: options.header ? first.number : 0 },
  };
}

/**
 * Streams the data rows of the layout's sheet in batches: each row as text (what Excel shows in each cell),
 * with its typed cells beside. An empty row between rows is a row of empty cells (so data row N is always
 * Excel row headerRow + N); empty rows after the last one are not rows. A cell right of the header's last
 * column is refused (exit 3, naming the sheet and the cell). `onChunk` sees every byte of the file.
 */
export async function* readXlsxRows(layout: CsvLayout, options: ReadRowsOptions = {}): AsyncGenerator<WorkbookBatch> {
  const book = layout.workbook!;
  const width = layout.columnCount;
  let next = book.headerRow + 1;
  let blanks = 0;
  let batch: WorkbookBatch = [];
  batch.typed = [];
  const blankRow = () => ({ text: new Array<string>(width).fill(''), typed: Array.from({ length: width }, () => ({ value: null }) as TypedCell) });
  const rows = sheetRows(layout.path, (_n, p) => p === book.position, () => {}, `${book.position} ('${book.sheet}')`);
  for await (const row of rows) {
    if (row.number < next) continue;
    if (isEmptyRow(row.cells)) continue;
    blanks += row.number - next;
    next = row.number + 1;
    for (; blanks > 0; blanks--) {
      const b = blankRow();
      batch.push(b.text);
      batch.typed!.push(b.typed);
    }
    if (row.cells.length > width) {
      const col = row.cells.findIndex((c, i) => i >= width && c !== undefined && c.value !== null && c.value !== '');
      if (col >= 0) {
        throw inputError('E_INPUT_MALFORMED', `${layout.path}: ${sheetLabel(book.sheet)} row ${row.number}: cell ${columnName(col)}${row.number} is right of the header's last column (${columnName(width - 1)})`, {
          hint: 'give that column a header, or clear the cells right of the list',
          details: { sheet: book.sheet, row: row.number },
        });
      }
    }
    const text = new Array<string>(width);
    const typed = new Array<TypedCell>(width);
    for (let i = 0; i < width; i++) {
      const c = row.cells[i];
      text[i] = cellText(c);
      typed[i] = c ?? { value: null };
    }
    batch.push(text);
    batch.typed!.push(typed);
    if (batch.length >= 1024) {
      yield batch;
      batch = [];
      batch.typed = [];
    }
  }
  if (batch.length > 0) yield batch;
  // The rows were read from the zip; the file's bytes are hashed in a pass of their own (the zip reader stops at the sheet).
  if (options.onChunk) for await (const chunk of createReadStream(layout.path, { highWaterMark: 1024 * 1024 })) options.onChunk(chunk as Buffer);
}
