// Where a CSV file's records start, found by a pass over its bytes apart from the parse (for messages and for
// `dnc trace`: csv-parse's per-record line info costs a third of a big file's parse time).
import { createReadStream } from 'node:fs';
import { isUtf16, streamDecoder, type TextEncoding } from './encoding.js';
import { textUnits } from './decode.js';
import type { RecordLocation, TableLayout } from './layout.js';

/**
 * Walks the records of `path` as readRows reads them: CR, LF and CRLF outside quotes end a record, a blank
 * line is a record, and the file's last line break starts none. Calls `onStart(record, line)` as each record
 * begins (record 0 is the file's first, on line 1); stops early when it returns true. Returns whether the file
 * ends inside a quoted field, and where the last record begun starts.
 */
async function walkRecordStarts(
  path: string,
  encoding: TextEncoding | undefined,
  onStart: (record: number, line: number) => boolean,
): Promise<{ quoted: boolean; lastStart: number; lastRecord: number }> {
  // In UTF-16 a byte 0x0A or 0x22 may be half of another character: the text is decoded first.
  const decoder = isUtf16(encoding) ? await streamDecoder(encoding!) : null;
  let line = 1;
  let record = 0;
  let quoted = false;
  let lastWasCr = false;
  let startPending = false;
  let lastStart = 1;
  if (onStart(0, 1)) return { quoted, lastStart, lastRecord: record };
  for await (const bytes of createReadStream(path, { highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>) {
    const chunk: ArrayLike<number> = decoder ? textUnits(decoder.write(bytes)) : bytes;
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i]!;
      if (b === 0x0a && lastWasCr) {
        // The LF of a CRLF: the line and the record were ended by its CR.
        lastWasCr = false;
        continue;
      }
      lastWasCr = false;
      if (startPending) {
        startPending = false;
        record++;
        lastStart = line;
        if (onStart(record, line)) return { quoted, lastStart, lastRecord: record };
      }
      if (b === 0x22) quoted = !quoted;
      else if (b === 0x0a || b === 0x0d) {
        line++;
        lastWasCr = b === 0x0d;
        if (!quoted) startPending = true;
      }
    }
  }
  return { quoted, lastStart, lastRecord: record };
}

/**
 * Where records start, found by a second pass over the bytes (only for messages: csv-parse's per-record
 * line info costs a third of a big file's parse time). Record 0 is the file's first record (the header, if
 * any). Returns the start line of each wanted record, and the start line and record number (1-based) of the
 * last record when the file ends inside a quoted field.
 */
export async function recordStartLines(
  path: string,
  wanted: ReadonlySet<number>,
  encoding?: TextEncoding,
): Promise<{ lines: Map<number, number>; unclosedQuoteLine: number | null; unclosedQuoteRecord: number | null }> {
  const lines = new Map<number, number>();
  const maxWanted = Math.max(-1, ...wanted);
  const end = await walkRecordStarts(path, encoding, (record, line) => {
    if (wanted.has(record)) lines.set(record, line);
    // With nothing wanted, the walk goes to the end: it is looking for a quote left open.
    return wanted.size > 0 && record > maxWanted && lines.size === wanted.size;
  });
  // (A walk stopped early stopped at a record's start, outside quotes.)
  const unclosed = end.quoted;
  return {
    lines,
    unclosedQuoteLine: unclosed ? end.lastStart : null,
    unclosedQuoteRecord: unclosed ? end.lastRecord + 1 : null,
  };
}

/**
 * The record number (1-based: the file's first record is 1, as a spreadsheet numbers rows) that physical line
 * `line` belongs to. A record is made of whole lines, so every byte of a line is in the same record.
 */
export async function recordOfLine(path: string, line: number, encoding?: TextEncoding): Promise<number> {
  let found = 0;
  await walkRecordStarts(path, encoding, (record, start) => {
    if (start > line) return true;
    found = record;
    return false;
  });
  return found + 1;
}

/** The data records of a CSV file, numbered from 0, mapped to where each starts (line and record number). */
export async function csvRecordLines(
  layout: TableLayout,
  indexes: readonly number[],
): Promise<Map<number, Required<RecordLocation>>> {
  const offset = (layout.skipRecords ?? 0) + (layout.header ? 1 : 0);
  const { lines } = await recordStartLines(layout.path, new Set(indexes.map((i) => i + offset)), layout.encoding);
  return new Map(indexes.map((i) => [i, { line: lines.get(i + offset) ?? 0, record: i + offset + 1 }]));
}
