// A CSV file's delimiter: given with --delimiter, or detected from the header line.
import { usageError } from '../errors.js';

/** Delimiters recognised when detecting from the header line, in order of preference on a tie. */
export const DETECTABLE_DELIMITERS = [',', ';', '\t', '|'] as const;

export function delimiterName(d: string): string {
  return d === '\t' ? 'tab' : `'${d}'`;
}

/**
 * Byte offset of the header record's line break (CR or LF outside quotes), or -1 when not in `buf`.
 * A CR at the very end of `buf` is not taken yet: the LF of a CRLF may follow in the next read.
 */
export function headerEnd(buf: Buffer): number {
  let quoted = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (c === 0x22) quoted = !quoted;
    else if (!quoted && (c === 0x0a || (c === 0x0d && i + 1 < buf.length))) return i;
  }
  return -1;
}

/**
 * Where record `skip` (0-based) of `buf` starts: past `skip` line breaks outside quotes (CRLF is one); -1 when they
 * are not all in `buf`. The records above it are title lines (--skip-rows) or Excel's `sep=` line.
 */
export function recordStart(buf: Buffer, skip: number): number {
  let at = 0;
  for (let n = 0; n < skip; n++) {
    const end = headerEnd(buf.subarray(at));
    if (end < 0) return -1;
    at += end + (buf[at + end] === 0x0d && buf[at + end + 1] === 0x0a ? 2 : 1);
  }
  return at;
}

/**
 * The delimiter Excel's first line `sep=;` names (Excel writes it into a CSV file for a reader in another locale, and
 * reads the file by it, not showing the line); undefined for any other line.
 */
export function sepDirective(line: string): string | undefined {
  const m = /^sep=(.)$/i.exec(line);
  return m ? m[1] : undefined;
}

/** Counts each candidate delimiter outside quotes in one line of text. */
export function detectDelimiter(line: string): string {
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

export function parseDelimiterOption(raw: string): string {
  const named: Record<string, string> = { tab: '\t', '\\t': '\t', comma: ',', semicolon: ';', pipe: '|' };
  const d = named[raw.toLowerCase()] ?? raw;
  // A letter, digit or space would split the numbers themselves: only punctuation (or tab) delimits a call list.
  if (d.length !== 1 || d === '"' || d === '\n' || d === '\r' || (d !== '\t' && /[\p{L}\p{N}\s]/u.test(d))) {
    throw usageError('E_USAGE', `--delimiter must be one punctuation character (or tab), got '${raw}'`, {
      hint: "e.g. --delimiter ';' or --delimiter tab",
    });
  }
  return d;
}
