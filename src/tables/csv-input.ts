// CSV call lists: the layout read from the head of the file, records streamed, and errors that name their line.
import { open } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DncError, inputError } from '../errors.js';
import { describeRecordAt } from './record-location.js';
import { streamDecoder, utf16FromBom, utf16WithoutBom, type TextEncoding } from './encoding.js';
import { chooseColumns, namesPhoneColumn } from './columns.js';
import {
  byteFaults,
  decodeStrict,
  DecodeText,
  lineOfOffset,
  LineCounter,
  NOT_UTF8_HINT,
  nulError,
  StrictUtf8,
  textUnits,
} from './decode.js';
import {
  delimiterName,
  detectDelimiter,
  headerEnd,
  parseDelimiterOption,
  recordStart,
  sepDirective,
} from './delimiter.js';
import type { RecordDelimiter } from './csv-output.js';
import type { ColumnOptions, TableLayout, ReadRowsOptions, RecordLocation } from './layout.js';
import { parse as parseSync } from 'csv-parse/sync';
import { parse } from 'csv-parse';
import { recordOfLine, recordStartLines } from './csv-records.js';

/** A record longer than this is refused: nobody's call list has one, and memory stays bounded. */
export const MAX_RECORD_CHARS = 1024 * 1024;

export interface CsvOptions extends ColumnOptions {
  /** Forced delimiter (--delimiter); detected from the header line when absent. */
  delimiter?: string | undefined;
  /** false with --no-header: every line is a data row. */
  header: boolean;
  /** --encoding; UTF-8 unless given, or a UTF-16 byte-order mark says otherwise. */
  encoding?: TextEncoding | undefined;
  /** --skip-rows N: the file's first N records (title lines above the header) are not read. */
  skipRows?: number | undefined;
}

function describeFile(path: string): string {
  return path;
}

/** Reads the start of the file: enough for the header record (quoted newlines included) and `above` records above. */
async function readHead(path: string, above: number): Promise<Buffer> {
  let handle;
  try {
    handle = await open(path, 'r');
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
      hint: 'check the path of the input CSV',
      cause: err,
    });
  }
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    const size = 64 * 1024;
    for (;;) {
      const buf = Buffer.alloc(size);
      let bytesRead: number;
      try {
        ({ bytesRead } = await handle.read(buf, 0, size, total));
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        throw inputError(
          'E_INPUT_UNREADABLE',
          `cannot read ${path}: ${code === 'EISDIR' ? 'it is a directory' : String(code ?? err)}`,
          { cause: err },
        );
      }
      if (bytesRead === 0) break;
      chunks.push(buf.subarray(0, bytesRead));
      total += bytesRead;
      const head = Buffer.concat(chunks);
      if (recordStart(head, above + 1) >= 0 || total > MAX_RECORD_CHARS * 4) return head;
    }
    return Buffer.concat(chunks);
  } finally {
    await handle.close();
  }
}

/**
 * Reads the header line of `path` and decides how to read the file. Throws exit 3 for an empty,
 * binary or non-UTF-8 start, exit 2 when the phone column cannot be chosen.
 */
export async function openCsvLayout(path: string, options: CsvOptions): Promise<TableLayout> {
  const forced = options.delimiter !== undefined ? parseDelimiterOption(options.delimiter) : undefined;
  // One record more than --skip-rows asks: the first may be Excel's `sep=` line.
  const head = await readHead(path, (options.skipRows ?? 0) + 1);
  const where = describeFile(path);
  const utf16 = utf16FromBom(head);
  if (utf16 && options.encoding !== undefined && options.encoding !== utf16) {
    throw inputError(
      'E_INPUT_ENCODING',
      `${where}: line 1: the file is ${utf16.toUpperCase()} (its byte-order mark says so), not ${options.encoding}`,
      {
        hint: `drop --encoding: a UTF-16 file is recognised by its byte-order mark`,
      },
    );
  }
  const encoding = utf16 ?? options.encoding;
  if (encoding !== undefined && encoding !== 'utf-8')
    return openDecodedLayout(path, head, encoding, utf16 !== null, options, forced);
  const bom = head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf;
  const body = bom ? head.subarray(3) : head;
  if (body.toString('utf8').trim() === '') {
    throw inputError('E_INPUT_EMPTY', `${where}: the file is empty`, {
      hint: 'export the call list again; it should have a header line and rows',
    });
  }
  const nul = body.indexOf(0);
  if (nul >= 0) {
    const utf16 = utf16WithoutBom(body);
    if (utf16)
      throw inputError(
        'E_INPUT_ENCODING',
        `${where}: the file looks like ${utf16.toUpperCase()} without a byte-order mark`,
        {
          hint: `give --encoding ${utf16}, or save the list as UTF-8`,
        },
      );
    throw await withRecordNumber(nulError(path, lineOfOffset(body, nul)), undefined);
  }
  const firstEnd = headerEnd(body);
  const sep = sepDirective(decodeStrict(firstEnd < 0 ? body : body.subarray(0, firstEnd)) ?? '');
  const skip = (options.skipRows ?? 0) + (sep ? 1 : 0);
  const start = recordStart(body, skip);
  if (start < 0 || start >= body.length) throw nothingBelow(where, options.skipRows ?? 0, sep);
  const line = lineOfOffset(body, start);
  const rest = body.subarray(start);
  const end = headerEnd(rest);
  if (end < 0 && rest.length > MAX_RECORD_CHARS) {
    throw inputError('E_INPUT_MALFORMED', `${where}: line ${line} is longer than ${MAX_RECORD_CHARS} characters`, {
      hint: 'this does not look like a call list; check the file and its quotes',
    });
  }
  const decoded = decodeStrict(end < 0 ? rest : rest.subarray(0, end));
  if (decoded === null) {
    throw inputError('E_INPUT_ENCODING', `${where}: line ${line}: the text is not valid UTF-8`, {
      hint: NOT_UTF8_HINT,
    });
  }
  const recordDelimiter: RecordDelimiter =
    end < 0 || rest[end] === 0x0a ? '\n' : end + 1 < rest.length && rest[end + 1] === 0x0a ? '\r\n' : '\r';
  refuseBlankHeader(where, decoded, line, options);
  const headerLine = { line: decoded, lineNumber: line, skip, sep, following: () => rest.toString('utf8') };
  return layoutFromHeaderLine(path, headerLine, recordDelimiter, bom, undefined, options, forced);
}

/** The header (or first data) line, where it is, and what is above it. */
interface HeaderLine {
  line: string;
  /** Its physical line number. */
  lineNumber: number;
  /** The records above it that are not read (--skip-rows, and a `sep=` line). */
  skip: number;
  /** The delimiter a `sep=` line named. */
  sep: string | undefined;
  /** The text read from the header line on (the head of the file): where the advice past a title looks. */
  following: () => string;
}

function refuseBlankHeader(where: string, line: string, lineNumber: number, options: CsvOptions): void {
  if (!options.header || line.trim() !== '') return;
  throw inputError('E_INPUT_MALFORMED', `${where}: line ${lineNumber} is blank, where the header should be`, {
    hint: options.skipRows
      ? 'give the --skip-rows that ends at the line above the header'
      : 'remove the blank line(s) before the header, or pass --no-header if the file has no header',
    details: { line: lineNumber },
  });
}

/** A file that ends within the lines --skip-rows skips (or its `sep=` line). */
function nothingBelow(where: string, skipRows: number, sep: string | undefined): DncError {
  const what = skipRows > 0 ? `below the ${skipRows} line(s) --skip-rows skips` : `below its sep=${sep} line`;
  return inputError('E_INPUT_EMPTY', `${where}: the file has nothing ${what}`, {
    hint: 'give a smaller --skip-rows, or check that this is the call list',
  });
}

/** Where record `skip` starts in decoded text (as recordStart does in bytes); -1 when the text ends before it. */
function textRecordStart(text: string, skip: number): number {
  let quoted = false;
  let breaks = 0;
  if (skip === 0) return 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') quoted = !quoted;
    else if (!quoted && (c === '\n' || c === '\r')) {
      if (c === '\r' && text[i + 1] === '\n') i++;
      if (++breaks === skip) return i + 1;
    }
  }
  return -1;
}

/** The layout of a file in an encoding other than UTF-8: the head is decoded, then read as a UTF-8 one is. */
async function openDecodedLayout(
  path: string,
  head: Buffer,
  encoding: TextEncoding,
  bom: boolean,
  options: CsvOptions,
  forced: string | undefined,
): Promise<TableLayout> {
  const decoder = await streamDecoder(encoding);
  const text = decoder.write(head);
  if (text.trim() === '') {
    throw inputError('E_INPUT_EMPTY', `${path}: the file is empty`, {
      hint: 'export the call list again; it should have a header line and rows',
    });
  }
  const nul = text.indexOf('\0');
  if (nul >= 0) throw await withRecordNumber(nulError(path, new LineCounter().advance(textUnits(text), nul)), encoding);
  const firstBreak = text.search(/[\r\n]/);
  const sep = sepDirective(firstBreak < 0 ? text : text.slice(0, firstBreak));
  const skip = (options.skipRows ?? 0) + (sep ? 1 : 0);
  const start = textRecordStart(text, skip);
  if (start < 0 || start >= text.length) throw nothingBelow(path, options.skipRows ?? 0, sep);
  const lineNumber = new LineCounter().advance(textUnits(text), start);
  const rest = text.slice(start);
  const end = headerBreak(rest);
  const firstLine = end < 0 ? rest : rest.slice(0, end);
  const recordDelimiter: RecordDelimiter =
    end < 0 || rest[end] === '\n' ? '\n' : rest[end + 1] === '\n' ? '\r\n' : '\r';
  refuseBlankHeader(path, firstLine, lineNumber, options);
  const headerLine = { line: firstLine, lineNumber, skip, sep, following: () => rest };
  return layoutFromHeaderLine(path, headerLine, recordDelimiter, bom, encoding, options, forced);
}

/** Where the first record of decoded text ends (its first line break outside quotes); -1 when it has none. */
function headerBreak(text: string): number {
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') quoted = !quoted;
    else if (!quoted && (c === '\n' || c === '\r')) return i;
  }
  return -1;
}

/** Decides the delimiter and the phone column from the header line's text. */
async function layoutFromHeaderLine(
  path: string,
  head: HeaderLine,
  recordDelimiter: RecordDelimiter,
  bom: boolean,
  encoding: TextEncoding | undefined,
  options: CsvOptions,
  forced: string | undefined,
): Promise<TableLayout> {
  const delimiter = forced ?? head.sep ?? detectDelimiter(head.line);
  let first: string[];
  try {
    const records = parseSync(head.line, { delimiter, relax_quotes: false }) as string[][];
    first = records[0] ?? [''];
  } catch (err) {
    throw csvError(err, path, undefined, { line: head.lineNumber, record: head.skip + 1 });
  }
  const header = options.header ? first : null;
  const columns = chooseCsvColumns(header, first.length, options, path, head);
  return {
    ...(head.skip > 0 ? { skipRecords: head.skip } : {}),
    path,
    delimiter,
    recordDelimiter,
    header,
    columnCount: first.length,
    ...columns,
    bom,
    ...(encoding ? { encoding } : {}),
  };
}

/**
 * The columns of a CSV list; when none is a phone column and the header is one cell (a title above it, as a CSV saved
 * from a workbook with a title row has, padded with delimiters by LibreOffice and Excel), the message names the line
 * read as the header, with the way past it.
 */
function chooseCsvColumns(
  header: string[] | null,
  width: number,
  options: CsvOptions,
  path: string,
  head: HeaderLine,
): ReturnType<typeof chooseColumns> {
  try {
    return chooseColumns(header, width, options, path);
  } catch (err) {
    const named = header?.filter((h) => h.trim() !== '') ?? [];
    if ((err as DncError).code !== 'E_COLUMN_NOT_FOUND' || named.length !== 1) throw err;
    const e = err as DncError;
    const title = named[0]!.slice(0, 40);
    const skipped = head.skip - (head.sep ? 1 : 0);
    const below = csvHeaderBelow(head, options, delimiterOf(head, options));
    const advice = below
      ? `line ${below.line} (${below.names}) looks like the header: give --skip-rows ${skipped + below.records}`
      : `if line ${head.lineNumber} ('${title}') is a title above the header, give --skip-rows ${skipped + 1}`;
    throw new DncError(e.code, `${e.message}; the header is line ${head.lineNumber}`, {
      hint: `${advice}; ${e.hint ?? ''}`,
      details: e.details,
    });
  }
}

function delimiterOf(head: HeaderLine, options: CsvOptions): string {
  return options.delimiter !== undefined
    ? parseDelimiterOption(options.delimiter)
    : (head.sep ?? detectDelimiter(head.line));
}

/** How far below a title the line that holds the header is looked for (within the head of the file read). */
const HEADER_SEARCH_RECORDS = 20;

/**
 * The first of the records below the header line (in the head of the file) in which a phone column is found by its
 * name: the header under a title. `records`: how many records above it from the header line (the --skip-rows to add).
 */
function csvHeaderBelow(
  head: HeaderLine,
  options: CsvOptions,
  delimiter: string,
): { line: number; records: number; names: string } | undefined {
  let records: Array<{ record: string[]; info: { lines: number } }>;
  try {
    records = parseSync(head.following(), {
      delimiter,
      relax_column_count: true,
      relax_quotes: true,
      skip_records_with_error: true,
      info: true,
      to: HEADER_SEARCH_RECORDS + 1,
    }) as unknown as typeof records;
  } catch {
    return undefined;
  }
  for (let r = 1; r < records.length; r++) {
    const { record, info } = records[r]!;
    if (!namesPhoneColumn(record, options)) continue;
    const names = record.filter((n) => n.trim() !== '').slice(0, 3);
    // info.lines is the line the record ends on, counted from the header line as 1.
    return {
      line: head.lineNumber + info.lines - 1,
      records: r,
      names: names.map((n) => `'${n.slice(0, 20)}'`).join(', '),
    };
  }
  return undefined;
}

/**
 * A fault found in the bytes, naming the record its line belongs to where that differs from the line (a cell
 * above it holds a line break), as every other message does. Any other error is returned as it is.
 */
async function withRecordNumber(err: unknown, encoding: TextEncoding | undefined): Promise<unknown> {
  const fault = err instanceof Error ? byteFaults.get(err as DncError) : undefined;
  if (!fault) return err;
  let record: number;
  try {
    record = await recordOfLine(fault.path, fault.line, encoding);
  } catch {
    return err;
  }
  const e = err as DncError;
  if (record === fault.line) return e;
  return new DncError(e.code, `${fault.path}: ${describeRecordAt(fault.line, record)}: ${fault.problem}`, {
    hint: e.hint,
    cause: e.cause,
    details: { ...e.details, record },
  });
}

export { describeRecordAt };

/**
 * Turns a csv-parse error (or our field-count check) into an exit-3 error naming the file, the place and what is wrong.
 */
export function csvError(err: unknown, path: string, layout?: TableLayout, at: RecordLocation = {}): DncError {
  const e = err as { code?: string; message?: string; lines?: number };
  // A record's own problems (field count, a quote left open) are named by the line where the record starts.
  const line = at.line ?? (typeof e.lines === 'number' ? e.lines : undefined);
  const where = describeRecordAt(line, at.record);
  const prefix = where ? `${path}: ${where}` : path;
  const details = { line, record: at.record };
  const d = layout ? delimiterName(layout.delimiter) : 'the delimiter';
  switch (e.code) {
    case 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH': {
      const m = /expect (\d+), got (\d+)/.exec(e.message ?? '');
      const got = m ? `${m[2]} field(s) where the header has ${m[1]}` : 'a different number of fields than the header';
      return inputError('E_INPUT_MALFORMED', `${prefix}: ${got}`, {
        hint: `check that fields containing ${d} are quoted, or give the right --delimiter`,
        cause: err,
        details,
      });
    }
    case 'CSV_QUOTE_NOT_CLOSED':
      return inputError('E_INPUT_MALFORMED', `${prefix}: a quoted field is never closed (unbalanced ")`, {
        hint: 'a field that starts with " must end with "; double any " inside it ("")',
        cause: err,
        details,
      });
    case 'CSV_INVALID_CLOSING_QUOTE':
    case 'INVALID_OPENING_QUOTE':
    case 'CSV_INVALID_OPENING_QUOTE':
    case 'CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE':
      return inputError('E_INPUT_MALFORMED', `${prefix}: a stray " inside a field`, {
        hint: 'quote the whole field and double the " inside it, e.g. "5"" screen"',
        cause: err,
        details,
      });
    case 'CSV_MAX_RECORD_SIZE':
      return inputError('E_INPUT_MALFORMED', `${prefix}: a record longer than ${MAX_RECORD_CHARS} characters`, {
        hint: 'this does not look like a call list row; look for an unbalanced quote before it',
        cause: err,
        details,
      });
    default:
      return inputError('E_INPUT_MALFORMED', `${prefix}: ${e.message ?? String(err)}`, { cause: err, details });
  }
}

/** A record whose field count is not the header's (a blank line is not one of them: it is a row of empty cells). */
class FieldCountError extends Error {
  readonly code = 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH';
  constructor(
    readonly records: number,
    expected: number,
    got: number,
  ) {
    super(`Invalid Record Length: expect ${expected}, got ${got}`);
  }
}

const FIRST_BATCH_ROWS = 16;

const BATCH_ROWS = 1024;

const FIRST_READ_BYTES = 4 * 1024;

const READ_BYTES = 64 * 1024;

/**
 * The file's bytes in reads of 4 KiB, 16 KiB, then 64 KiB. The parser handles a read whole before the first of
 * its records is seen, so a first read of 64 KiB (about 3,000 rows of a call list, each normalised cold) held the
 * first lookup of a long list back by tens of milliseconds that a ten-row list never waits.
 */
async function* growingChunks(path: string): AsyncGenerator<Buffer> {
  const file = await open(path, 'r');
  try {
    for (let size = FIRST_READ_BYTES; ; size = Math.min(size * 4, READ_BYTES)) {
      const buffer = Buffer.allocUnsafe(size);
      const { bytesRead } = await file.read(buffer, 0, size, null);
      if (bytesRead === 0) return;
      yield bytesRead < size ? buffer.subarray(0, bytesRead) : buffer;
    }
  } finally {
    await file.close();
  }
}

/**
 * Streams the data records of a CSV laid out as `layout`, in batches (the header, if any, is checked
 * and skipped). CR, LF and CRLF all end a record (a file with mixed endings never has two rows merged),
 * and a blank line is a row of empty cells, so data row N is always the Nth record after the header.
 * Malformed CSV, NUL bytes and bad encoding throw exit-3 errors naming the line.
 */
export async function* readCsvRows(layout: TableLayout, options: ReadRowsOptions = {}): AsyncGenerator<string[][]> {
  const utf8 = !layout.encoding || layout.encoding === 'utf-8';
  const parser = parse({
    // UTF-8 reaches the parser as bytes, its BOM too (see StrictUtf8); other encodings as text, without one.
    bom: utf8,
    delimiter: layout.delimiter,
    record_delimiter: ['\r\n', '\n', '\r'],
    skip_empty_lines: false,
    relax_column_count: true,
    max_record_size: MAX_RECORD_CHARS,
  });
  const source = Readable.from(growingChunks(layout.path), { objectMode: false });
  const decode = utf8
    ? new StrictUtf8(layout.path, options.onChunk)
    : new DecodeText(layout.path, await streamDecoder(layout.encoding!), options.onChunk);
  let failure: unknown;
  const done = pipeline(source, decode, parser).catch((err: unknown) => {
    // The first failure is the one to report: stopping the source after a bad record aborts the pipeline too.
    failure ??= err;
  });
  const width = layout.columnCount;
  const skip = layout.skipRecords ?? 0;
  let index = -1;
  let batch: string[][] = [];
  // The first batches are small (see growingChunks): the first numbers reach the journal, and the first lookups
  // go out, after tens of rows, not after a thousand.
  let batchSize = FIRST_BATCH_ROWS;
  try {
    for await (const record of parser as AsyncIterable<string[]>) {
      // Title lines above the header (--skip-rows, a `sep=` line) are not read: they are as wide as they like.
      if (++index < skip) continue;
      let row = record;
      if (row.length !== width) {
        if (row.length === 1 && row[0] === '') row = new Array<string>(width).fill('');
        else throw new FieldCountError(index, width, row.length);
      }
      if (index === skip && layout.header) continue;
      batch.push(row);
      if (batch.length >= batchSize) {
        yield batch;
        batch = [];
        batchSize = Math.min(batchSize * 4, BATCH_ROWS);
      }
    }
  } catch (err) {
    failure ??= err;
    source.destroy();
  }
  await done;
  if (failure !== undefined) {
    if ((failure as DncError).name === 'DncError') throw await withRecordNumber(failure, layout.encoding);
    throw await locatedCsvError(failure, layout);
  }
  if (batch.length > 0) yield batch;
}

/** A csv-parse error with the start line of the record at fault (found by a second pass). */
async function locatedCsvError(err: unknown, layout: TableLayout): Promise<DncError> {
  const e = err as { code?: string; records?: number };
  let at: RecordLocation = {};
  try {
    if (e.code === 'CSV_QUOTE_NOT_CLOSED') {
      const { unclosedQuoteLine, unclosedQuoteRecord } = await recordStartLines(
        layout.path,
        new Set(),
        layout.encoding,
      );
      at = { line: unclosedQuoteLine ?? undefined, record: unclosedQuoteRecord ?? undefined };
    } else if (typeof e.records === 'number') {
      // Both csv-parse and FieldCountError count the records before the one at fault: its 0-based index.
      const record = e.records;
      at = {
        line: (await recordStartLines(layout.path, new Set([record]), layout.encoding)).lines.get(record),
        record: record + 1,
      };
    }
  } catch {
    at = {};
  }
  return csvError(err, layout.path, layout, at);
}
