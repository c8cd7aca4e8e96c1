// The one shared CSV reader builder: encoding, delimiter and header detection, phone column choice, streamed records.
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { inputError, usageError, type DncError } from '../errors.js';

/** Delimiters recognised when detecting from the header line, in order of preference on a tie. */
export const DETECTABLE_DELIMITERS = [',', ';', '\t', '|'] as const;

/** A record longer than this is refused: nobody's call list has one, and memory stays bounded. */
export const MAX_RECORD_CHARS = 1024 * 1024;

/** Header names (lowercased, letters and digits only) that name a phone column. */
export const PHONE_HEADER_NAMES = new Set([
  'phone',
  'phonenumber',
  'phoneno',
  'phonenum',
  'number',
  'mobile',
  'mobilenumber',
  'mobilephone',
  'mobileno',
  'cell',
  'cellphone',
  'cellnumber',
  'tel',
  'telephone',
  'telephonenumber',
  'telno',
  'msisdn',
  'e164',
  'contactnumber',
  'contactphone',
  'dialnumber',
]);

export interface CsvOptions {
  /** Forced delimiter (--delimiter); detected from the header line when absent. */
  delimiter?: string | undefined;
  /** --column NAME|INDEX (INDEX is 1-based). */
  column?: string | undefined;
  /** false with --no-header: every line is a data row. */
  header: boolean;
}

/** What a CSV file looks like: how to read it and where its phone numbers are. */
export interface CsvLayout {
  path: string;
  delimiter: string;
  /** Line ending of the header line, reused for the output. */
  recordDelimiter: '\r\n' | '\n';
  /** The header's fields, or null with --no-header. */
  header: string[] | null;
  columnCount: number;
  /** 0-based index of the phone column. */
  phoneIndex: number;
  /** How to name the phone column in messages: `phone` or `column 3`. */
  phoneLabel: string;
  bom: boolean;
}

function delimiterName(d: string): string {
  return d === '\t' ? 'tab' : `'${d}'`;
}

function describeFile(path: string): string {
  return path;
}

/** Reads the start of the file: enough for the header record (quoted newlines included). */
async function readHead(path: string): Promise<Buffer> {
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'it is a directory' : String(code ?? err);
    throw inputError('E_INPUT_UNREADABLE', `cannot read ${path}: ${why}`, { hint: 'check the path of the input CSV', cause: err });
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
        throw inputError('E_INPUT_UNREADABLE', `cannot read ${path}: ${code === 'EISDIR' ? 'it is a directory' : String(code ?? err)}`, { cause: err });
      }
      if (bytesRead === 0) break;
      chunks.push(buf.subarray(0, bytesRead));
      total += bytesRead;
      const head = Buffer.concat(chunks);
      if (headerEnd(head) >= 0 || total > MAX_RECORD_CHARS * 4) return head;
    }
    return Buffer.concat(chunks);
  } finally {
    await handle.close();
  }
}

/** Byte offset of the header record's line break (outside quotes), or -1 when not in `buf`. */
function headerEnd(buf: Buffer): number {
  let quoted = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (c === 0x22) quoted = !quoted;
    else if (c === 0x0a && !quoted) return i;
  }
  return -1;
}

/** Counts each candidate delimiter outside quotes in one line of text. */
function detectDelimiter(line: string): string {
  const counts = new Map<string, number>(DETECTABLE_DELIMITERS.map((d) => [d, 0]));
  let quoted = false;
  for (const ch of line) {
    if (ch === '"') quoted = !quoted;
    else if (!quoted && counts.has(ch)) counts.set(ch, counts.get(ch)! + 1);
  }
  let best: string = ',';
  let bestCount = 0;
  for (const d of DETECTABLE_DELIMITERS) {
    const n = counts.get(d)!;
    if (n > bestCount) {
      best = d;
      bestCount = n;
    }
  }
  return best;
}

function normaliseHeaderName(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, '');
}

function listColumns(header: string[]): string {
  return header.map((h, i) => `${i + 1}:${h === '' ? '(empty)' : h}`).join(', ');
}

/** Chooses the phone column from --column or the header; exit 2 when it is ambiguous or missing. */
export function choosePhoneColumn(
  header: string[] | null,
  columnCount: number,
  column: string | undefined,
  path: string,
): { index: number; label: string } {
  const label = (i: number) => (header ? header[i]! : `column ${i + 1}`);
  if (column !== undefined) {
    const wanted = column.trim();
    if (header) {
      const exact = header.findIndex((h) => h === wanted);
      if (exact >= 0) return { index: exact, label: label(exact) };
      const loose = header.map((h, i) => [h, i] as const).filter(([h]) => h.trim().toLowerCase() === wanted.toLowerCase());
      if (loose.length === 1) return { index: loose[0]![1], label: label(loose[0]![1]) };
    }
    if (/^\d+$/.test(wanted)) {
      const n = Number(wanted);
      if (n >= 1 && n <= columnCount) return { index: n - 1, label: label(n - 1) };
      throw usageError('E_COLUMN_NOT_FOUND', `--column ${wanted} is out of range: ${path} has ${columnCount} column(s)`, {
        hint: header ? `columns are ${listColumns(header)}` : 'column indexes start at 1',
      });
    }
    throw usageError('E_COLUMN_NOT_FOUND', `--column '${wanted}' is not a column of ${path}`, {
      hint: header ? `columns are ${listColumns(header)}; give --column NAME or a 1-based INDEX` : 'with --no-header give a 1-based column index',
    });
  }
  if (!header) {
    if (columnCount === 1) return { index: 0, label: label(0) };
    throw usageError('E_COLUMN_REQUIRED', `${path} has ${columnCount} columns and no header: say which holds the phone numbers`, {
      hint: 'pass --column INDEX (1-based)',
    });
  }
  const names = header.map(normaliseHeaderName);
  let matches = names.map((n, i) => [n, i] as const).filter(([n]) => PHONE_HEADER_NAMES.has(n));
  if (matches.length === 0) {
    // A looser match, but not on a name holding another delimiter: that is a header read with the wrong one.
    matches = names
      .map((n, i) => [n, i] as const)
      .filter(([n, i]) => /phone|mobile|cell|tel/.test(n) && !/[,;\t|]/.test(header[i]!));
  }
  if (matches.length === 1) return { index: matches[0]![1], label: label(matches[0]![1]) };
  if (matches.length === 0) {
    const oneColumn = header.length === 1 && /[,;\t|]/.test(header[0]!);
    throw usageError('E_COLUMN_NOT_FOUND', `no phone column found in the header of ${path}`, {
      hint: oneColumn
        ? `the header was read as one column '${header[0]}': pass the right --delimiter (, ; tab or |)`
        : `columns are ${listColumns(header)}; pass --column NAME or --column INDEX`,
    });
  }
  throw usageError('E_COLUMN_AMBIGUOUS', `several columns of ${path} could hold the phone numbers: ${matches.map(([, i]) => header[i]).join(', ')}`, {
    hint: `pass --column NAME or --column INDEX; columns are ${listColumns(header)}`,
  });
}

function parseDelimiterOption(raw: string): string {
  const named: Record<string, string> = { tab: '\t', '\\t': '\t', comma: ',', semicolon: ';', pipe: '|' };
  const d = named[raw.toLowerCase()] ?? raw;
  if (d.length !== 1 || d === '"' || d === '\n' || d === '\r') {
    throw usageError('E_USAGE', `--delimiter must be one character (or tab), got '${raw}'`, {
      hint: "e.g. --delimiter ';' or --delimiter tab",
    });
  }
  return d;
}

/**
 * Reads the header line of `path` and decides how to read the file. Throws exit 3 for an empty,
 * binary or non-UTF-8 start, exit 2 when the phone column cannot be chosen.
 */
export async function openCsvLayout(path: string, options: CsvOptions): Promise<CsvLayout> {
  const forced = options.delimiter !== undefined ? parseDelimiterOption(options.delimiter) : undefined;
  const head = await readHead(path);
  const where = describeFile(path);
  if ((head[0] === 0xff && head[1] === 0xfe) || (head[0] === 0xfe && head[1] === 0xff)) {
    throw inputError('E_INPUT_ENCODING', `${where}: line 1: the file is UTF-16; dnc reads UTF-8`, {
      hint: 'save it as "CSV UTF-8" (Excel) or convert it: iconv -f UTF-16 -t UTF-8',
    });
  }
  const bom = head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf;
  const body = bom ? head.subarray(3) : head;
  if (body.toString('utf8').trim() === '') {
    throw inputError('E_INPUT_EMPTY', `${where}: the file is empty`, { hint: 'export the call list again; it should have a header line and rows' });
  }
  const nul = body.indexOf(0);
  if (nul >= 0) {
    throw inputError('E_INPUT_BINARY', `${where}: line ${lineOfOffset(body, nul)}: the file holds NUL bytes; it looks binary, not CSV`, {
      hint: 'export the data as CSV (comma, semicolon, tab or pipe separated text)',
    });
  }
  const end = headerEnd(body);
  if (end < 0 && body.length > MAX_RECORD_CHARS) {
    throw inputError('E_INPUT_MALFORMED', `${where}: line 1 is longer than ${MAX_RECORD_CHARS} characters`, {
      hint: 'this does not look like a call list; check the file and its quotes',
    });
  }
  const lineBytes = end < 0 ? body : body.subarray(0, end);
  const decoded = decodeStrict(lineBytes);
  if (decoded === null) {
    throw inputError('E_INPUT_ENCODING', `${where}: line 1: the text is not valid UTF-8`, {
      hint: 'save the file as "CSV UTF-8", or convert it, e.g. iconv -f WINDOWS-1252 -t UTF-8',
    });
  }
  const recordDelimiter: '\r\n' | '\n' = decoded.endsWith('\r') ? '\r\n' : '\n';
  const firstLine = decoded.replace(/\r$/, '');
  const delimiter = forced ?? detectDelimiter(firstLine);
  const { parse } = await import('csv-parse/sync');
  let first: string[];
  try {
    const records = parse(firstLine, { delimiter, relax_quotes: false }) as string[][];
    first = records[0] ?? [''];
  } catch (err) {
    throw csvError(err, path, undefined, 1);
  }
  const header = options.header ? first : null;
  const { index, label } = choosePhoneColumn(header, first.length, options.column, path);
  return { path, delimiter, recordDelimiter, header, columnCount: first.length, phoneIndex: index, phoneLabel: label, bom };
}

function decodeStrict(bytes: Uint8Array): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return null;
  }
}

function lineOfOffset(buf: Uint8Array, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < buf.length; i++) if (buf[i] === 0x0a) line++;
  return line;
}

/** Turns a csv-parse error into an exit-3 error naming the file, the line and what is wrong. */
export function csvError(err: unknown, path: string, layout?: CsvLayout, recordStart?: number): DncError {
  const e = err as { code?: string; message?: string; lines?: number };
  // A record's own problems (field count, a quote left open) are named by the line where the record starts.
  const whole = e.code === 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH' || e.code === 'CSV_QUOTE_NOT_CLOSED' || e.code === 'CSV_MAX_RECORD_SIZE';
  const line = whole && recordStart !== undefined ? recordStart : typeof e.lines === 'number' ? e.lines : undefined;
  const at = line !== undefined ? `${path}: line ${line}` : path;
  const d = layout ? delimiterName(layout.delimiter) : 'the delimiter';
  switch (e.code) {
    case 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH': {
      const m = /expect (\d+), got (\d+)/.exec(e.message ?? '');
      const got = m ? `${m[2]} field(s) where the header has ${m[1]}` : 'a different number of fields than the header';
      return inputError('E_INPUT_MALFORMED', `${at}: ${got}`, {
        hint: `check that fields containing ${d} are quoted, or give the right --delimiter`,
        cause: err,
        details: { line },
      });
    }
    case 'CSV_QUOTE_NOT_CLOSED':
      return inputError('E_INPUT_MALFORMED', `${at}: a quoted field is never closed (unbalanced ")`, {
        hint: 'a field that starts with " must end with "; double any " inside it ("")',
        cause: err,
        details: { line },
      });
    case 'CSV_INVALID_CLOSING_QUOTE':
    case 'INVALID_OPENING_QUOTE':
    case 'CSV_INVALID_OPENING_QUOTE':
    case 'CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE':
      return inputError('E_INPUT_MALFORMED', `${at}: a stray " inside a field`, {
        hint: 'quote the whole field and double the " inside it, e.g. "5"" screen"',
        cause: err,
        details: { line },
      });
    case 'CSV_MAX_RECORD_SIZE':
      return inputError('E_INPUT_MALFORMED', `${at}: a record longer than ${MAX_RECORD_CHARS} characters`, {
        hint: 'this does not look like a call list row; look for an unbalanced quote before it',
        cause: err,
        details: { line },
      });
    default:
      return inputError('E_INPUT_MALFORMED', `${at}: ${e.message ?? String(err)}`, { cause: err, details: { line } });
  }
}

/** Decodes UTF-8 strictly (fatal) across chunk boundaries; reports the line of the first bad byte. */
class StrictUtf8 extends Transform {
  private readonly decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
  private lines = 1;
  constructor(
    private readonly path: string,
    private readonly onChunk: ((chunk: Buffer) => void) | undefined,
  ) {
    super({ readableObjectMode: false, decodeStrings: true });
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, callback: TransformCallback): void {
    this.onChunk?.(chunk);
    let text: string;
    try {
      text = this.decoder.decode(chunk, { stream: true });
    } catch (err) {
      // Locate the bad byte: the non-fatal decoding marks it with U+FFFD.
      const loose = new TextDecoder('utf-8').decode(chunk);
      const idx = loose.indexOf('\uFFFD');
      let line = this.lines;
      for (let i = 0; i < idx; i++) if (loose.charCodeAt(i) === 10) line++;
      callback(
        inputError('E_INPUT_ENCODING', `${this.path}: line ${line}: the text is not valid UTF-8`, {
          hint: 'save the file as "CSV UTF-8", or convert it, e.g. iconv -f WINDOWS-1252 -t UTF-8',
          cause: err,
          details: { line },
        }),
      );
      return;
    }
    let n = 0;
    for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n++;
    this.lines += n;
    callback(null, text);
  }
  override _flush(callback: TransformCallback): void {
    try {
      const rest = this.decoder.decode();
      callback(null, rest);
    } catch (err) {
      callback(
        inputError('E_INPUT_ENCODING', `${this.path}: line ${this.lines}: the file ends in the middle of a UTF-8 character`, {
          hint: 'save the file as "CSV UTF-8"',
          cause: err,
        }),
      );
    }
  }
}

export interface ReadRowsOptions {
  /** Sees every raw chunk of the file, in order (for hashing in the same pass). */
  onChunk?: (chunk: Buffer) => void;
}

/**
 * Where records start, found by a second pass over the bytes (only for messages: csv-parse's per-record
 * line info costs a third of a big file's parse time). Record 0 is the first line that is not empty
 * (the header, if any). Returns the start line of each wanted record, and of the last record when the
 * file ends inside a quoted field.
 */
export async function recordStartLines(
  path: string,
  wanted: ReadonlySet<number>,
): Promise<{ lines: Map<number, number>; unclosedQuoteLine: number | null }> {
  const lines = new Map<number, number>();
  let line = 1;
  let record = -1;
  let quoted = false;
  let atStart = true;
  let lastStart = 1;
  const maxWanted = Math.max(-1, ...wanted);
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>) {
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i]!;
      if (atStart) {
        if (b === 0x0a) {
          line++;
          continue;
        }
        if (b === 0x0d) continue;
        atStart = false;
        record++;
        lastStart = line;
        if (wanted.has(record)) lines.set(record, line);
        if (record > maxWanted && lines.size === wanted.size && maxWanted >= 0) return { lines, unclosedQuoteLine: null };
      }
      if (b === 0x22) quoted = !quoted;
      else if (b === 0x0a) {
        line++;
        if (!quoted) atStart = true;
      }
    }
  }
  return { lines, unclosedQuoteLine: quoted ? lastStart : null };
}

/** The data records of `path`, numbered from 0, mapped to the line where each starts. */
export async function dataRecordLines(layout: CsvLayout, indexes: readonly number[]): Promise<Map<number, number>> {
  const offset = layout.header ? 1 : 0;
  const { lines } = await recordStartLines(layout.path, new Set(indexes.map((i) => i + offset)));
  return new Map(indexes.map((i) => [i, lines.get(i + offset) ?? 0]));
}

/**
 * Streams the data records of a CSV laid out as `layout`, in batches (the header, if any, is checked
 * and skipped). Malformed CSV and bad encoding throw exit-3 errors naming the line.
 */
export async function* readRows(layout: CsvLayout, options: ReadRowsOptions = {}): AsyncGenerator<string[][]> {
  const { parse } = await import('csv-parse');
  const parser = parse({
    delimiter: layout.delimiter,
    skip_empty_lines: true,
    relax_column_count: false,
    max_record_size: MAX_RECORD_CHARS,
  });
  const source = createReadStream(layout.path, { highWaterMark: 64 * 1024 });
  const decode = new StrictUtf8(layout.path, options.onChunk);
  let failure: unknown;
  const done = pipeline(source, decode, parser).catch((err: unknown) => {
    failure = err;
  });
  let first = true;
  let batch: string[][] = [];
  try {
    for await (const record of parser as AsyncIterable<string[]>) {
      if (first) {
        first = false;
        if (layout.header) continue;
      }
      batch.push(record);
      if (batch.length >= 1024) {
        yield batch;
        batch = [];
      }
    }
  } catch (err) {
    failure ??= err;
  }
  await done;
  if (failure !== undefined) {
    if ((failure as DncError).name === 'DncError') throw failure;
    throw await locatedCsvError(failure, layout);
  }
  if (batch.length > 0) yield batch;
}

/** A csv-parse error with the start line of the record at fault (found by a second pass). */
async function locatedCsvError(err: unknown, layout: CsvLayout): Promise<DncError> {
  const e = err as { code?: string; records?: number };
  let start: number | undefined;
  try {
    if (e.code === 'CSV_QUOTE_NOT_CLOSED') {
      start = (await recordStartLines(layout.path, new Set())).unclosedQuoteLine ?? undefined;
    } else if (typeof e.records === 'number') {
      start = (await recordStartLines(layout.path, new Set([e.records]))).lines.get(e.records);
    }
  } catch {
    start = undefined;
  }
  return csvError(err, layout.path, layout, start);
}
