// A CSV file's bytes as text: strict UTF-8 or a named encoding, NUL bytes and bad bytes refused with their line.
import { isUtf8 } from 'node:buffer';
import { Transform, type TransformCallback } from 'node:stream';
import { DncError, inputError } from '../errors.js';
import type { StreamDecoder } from './encoding.js';

/** What to say when a file is not UTF-8: most often it is Excel's "CSV (Comma delimited)", which is Windows-1252. */
export const NOT_UTF8_HINT =
  'it is probably Windows-1252 (what Excel saves as "CSV (Comma delimited)"): give --encoding windows-1252, or ' +
  'save the file as "CSV UTF-8"';

export function decodeStrict(bytes: Uint8Array): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return null;
  }
}

/** The physical line of a byte offset: LF, CRLF and a lone CR each end a line. */
export function lineOfOffset(buf: Uint8Array, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < buf.length; i++) {
    if (buf[i] === 0x0a) line++;
    else if (buf[i] === 0x0d && buf[i + 1] !== 0x0a) line++;
  }
  return line;
}

/**
 * A fault found in the bytes (a NUL, text that is not UTF-8) is found where it lies, by line: the decoder does
 * not see records. What it says, apart from where, is kept here, so that the record the line belongs to
 * (found by a second pass) can be named too.
 */
export const byteFaults = new WeakMap<DncError, { path: string; line: number; problem: string }>();

export function byteFault(
  code: 'E_INPUT_BINARY' | 'E_INPUT_ENCODING',
  path: string,
  line: number,
  problem: string,
  options: { hint: string; cause?: unknown },
): DncError {
  const err = inputError(code, `${path}: line ${line}: ${problem}`, { ...options, details: { line } });
  byteFaults.set(err, { path, line, problem });
  return err;
}

export function nulError(path: string, line: number): DncError {
  return byteFault('E_INPUT_BINARY', path, line, 'the file holds a NUL byte; it looks binary, not CSV', {
    hint:
      'export the data as CSV (comma, semicolon, tab or pipe separated text); a NUL byte is never part of a ' +
      'call list',
  });
}

/** Counts physical lines across chunks: LF, CRLF and a lone CR each end one. */
export class LineCounter {
  line = 1;
  private lastWasCr = false;
  /** Advances over `bytes[0..end)` (bytes, or a text's UTF-16 code units); returns the line at `end`. */
  advance(bytes: ArrayLike<number>, end = bytes.length): number {
    for (let i = 0; i < end; i++) {
      const b = bytes[i]!;
      if (b === 0x0a) {
        if (!this.lastWasCr) this.line++;
        this.lastWasCr = false;
      } else if (b === 0x0d) {
        this.line++;
        this.lastWasCr = true;
      } else this.lastWasCr = false;
    }
    return this.line;
  }
  /** Advances over a whole chunk of bytes, as `advance` does, with the buffer's own (native) searches. */
  advanceBytes(bytes: Buffer): number {
    if (bytes.length === 0) return this.line;
    let lf = 0;
    for (let i = bytes.indexOf(0x0a); i >= 0; i = bytes.indexOf(0x0a, i + 1)) lf++;
    let cr = 0;
    let crlf = this.lastWasCr && bytes[0] === 0x0a ? 1 : 0;
    for (let i = bytes.indexOf(0x0d); i >= 0; i = bytes.indexOf(0x0d, i + 1)) {
      cr++;
      if (bytes[i + 1] === 0x0a) crlf++;
    }
    // A CR ends its line; the LF of a CRLF ends none.
    this.line += cr + lf - crlf;
    this.lastWasCr = bytes[bytes.length - 1] === 0x0d;
    return this.line;
  }
}

/**
 * Checks UTF-8 strictly across chunk boundaries and refuses NUL bytes anywhere; errors name the line. The bytes
 * go on as they are (the parser decodes each field): decoding the whole text here, to have it encoded again on its
 * way to the parser, cost a tenth of a big file's read. A leading BOM goes on too: the parser drops it (bom: true).
 */
export class StrictUtf8 extends Transform {
  private readonly lines = new LineCounter();
  /** The bytes of a character the last chunk began and the next one ends (checked with that next chunk). */
  private tail: Uint8Array = new Uint8Array(0);
  constructor(
    private readonly path: string,
    private readonly onChunk: ((chunk: Buffer) => void) | undefined,
  ) {
    super({ readableObjectMode: false, decodeStrings: true });
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, callback: TransformCallback): void {
    this.onChunk?.(chunk);
    const nul = chunk.indexOf(0);
    if (nul >= 0) {
      callback(nulError(this.path, this.lines.advance(chunk, nul)));
      return;
    }
    const bytes = this.tail.length > 0 ? Buffer.concat([this.tail, chunk]) : chunk;
    const tail = incompleteTail(bytes);
    if (!isUtf8(bytes.subarray(0, bytes.length - tail.length))) {
      // Locate the bad byte: the first position where a strict decoding fails, reading on from the character the
      // last chunk began (else that character's last bytes, at this chunk's start, would be taken for the bad ones).
      const bad = Math.max(0, firstInvalidUtf8(bytes) - this.tail.length);
      const line = this.lines.advance(chunk, bad);
      callback(byteFault('E_INPUT_ENCODING', this.path, line, 'the text is not valid UTF-8', { hint: NOT_UTF8_HINT }));
      return;
    }
    this.lines.advanceBytes(chunk);
    this.tail = tail;
    callback(null, chunk);
  }
  override _flush(callback: TransformCallback): void {
    if (this.tail.length === 0) {
      callback();
      return;
    }
    callback(
      byteFault('E_INPUT_ENCODING', this.path, this.lines.line, 'the file ends in the middle of a UTF-8 character', {
        hint: 'save the file as "CSV UTF-8"',
      }),
    );
  }
}

/** A text's UTF-16 code units: CR, LF and `"` are the same numbers as in ASCII bytes. */
export function textUnits(text: string): Uint16Array {
  const units = new Uint16Array(text.length);
  for (let i = 0; i < text.length; i++) units[i] = text.charCodeAt(i);
  return units;
}

/**
 * Decodes another encoding than UTF-8 (src/batch/encoding.ts) and refuses NUL characters anywhere; errors name the
 * line.
 */
export class DecodeText extends Transform {
  private readonly lines = new LineCounter();
  constructor(
    private readonly path: string,
    private readonly decoder: StreamDecoder,
    private readonly onChunk: ((chunk: Buffer) => void) | undefined,
  ) {
    super({ readableObjectMode: false, decodeStrings: true });
  }
  private pass(text: string, callback: TransformCallback): void {
    const nul = text.indexOf('\0');
    if (nul >= 0) {
      callback(nulError(this.path, this.lines.advance(textUnits(text), nul)));
      return;
    }
    this.lines.advance(textUnits(text));
    callback(null, text);
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, callback: TransformCallback): void {
    this.onChunk?.(chunk);
    this.pass(this.decoder.write(chunk), callback);
  }
  override _flush(callback: TransformCallback): void {
    this.pass(this.decoder.end(), callback);
  }
}

/** The last bytes of `bytes` when they begin a UTF-8 character that the bytes after them must end (else none). */
function incompleteTail(bytes: Uint8Array): Uint8Array {
  for (let back = 1; back <= Math.min(3, bytes.length); back++) {
    const b = bytes[bytes.length - back]!;
    if (b < 0x80) break;
    if (b >= 0xc0) {
      const continuations = b >= 0xf0 ? 3 : b >= 0xe0 ? 2 : 1;
      // Bytes no character begins with (a Windows-1252 "ö" at the file's end) are bad now, not cut by the end.
      if (continuations < back || !beginsCharacter(b, bytes[bytes.length - back + 1])) return new Uint8Array(0);
      return bytes.slice(bytes.length - back);
    }
  }
  return new Uint8Array(0);
}

/** Second bytes a lead byte allows where not 0x80-0xBF (no overlong form, surrogate or code past U+10FFFF). */
const SECOND_BYTE: Readonly<Record<number, readonly [number, number]>> = {
  0xe0: [0xa0, 0xbf],
  0xed: [0x80, 0x9f],
  0xf0: [0x90, 0xbf],
  0xf4: [0x80, 0x8f],
};

/** Whether a lead byte, and the byte after it if the chunk has one, can begin a UTF-8 character. */
function beginsCharacter(lead: number, second: number | undefined): boolean {
  if (lead < 0xc2 || lead > 0xf4) return false;
  if (second === undefined) return true;
  const [low, high] = SECOND_BYTE[lead] ?? [0x80, 0xbf];
  return second >= low && second <= high;
}

/**
 * Offset of the first byte that starts an invalid UTF-8 sequence (a sequence cut by the chunk's end counts as valid).
 */
function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    const need =
      b < 0x80 ? 0 : b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : -1;
    if (need < 0) return i;
    if (i + need >= bytes.length) return bytes.length;
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(i, i + need + 1));
    } catch {
      return i;
    }
    i += need + 1;
  }
  return bytes.length;
}
