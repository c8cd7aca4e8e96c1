// How much of an answer dnc reads and keeps: a body is read up to a limit and refused beyond it, and what a refused
// answer leaves in a journal or the check history is an excerpt, its size and its SHA-256.
import { createHash } from 'node:crypto';

/**
 * The most dnc reads of a lookup's answer, a receipt or a push (`dnc listen` refuses a larger push, 413). Section 8
 * sets no limit; the service's answers are a few hundred bytes, and a body of 300 MB once cost `check` 1.3 GB.
 */
export const MAX_ANSWER_BYTES = 64 * 1024;

/** The most dnc reads of a usage page: 100 billing periods (4.2), each with its countries and twelve months. */
export const MAX_USAGE_BYTES = 4 * 1024 * 1024;

/** The characters of a refused answer kept as evidence; beyond them, its size and SHA-256 stand for the rest. */
export const KEPT_EXCERPT_CHARS = 4096;

/** A body as read: its text (UTF-8), how many bytes were read, and whether reading stopped at the limit. */
export interface BodyRead {
  text: string;
  bytes: number;
  /** Set when the body was longer than the limit: reading stopped there and the rest was never fetched. */
  cut: { limit: number; declared: number | null } | null;
}

/**
 * Reads `body` up to `limit` bytes. Beyond it, reading stops and the body is destroyed (undici closes the
 * connection rather than fetch the rest), so a body of any size costs at most `limit` bytes of memory.
 */
export async function readBounded(
  body: AsyncIterable<Uint8Array> & { text(): Promise<string> },
  limit: number,
  declared: number | null,
): Promise<BodyRead> {
  // A Content-Length within the limit bounds the body already (undici reads that many bytes, no more), and undici's
  // own text() costs less than iterating its chunks: the service's every answer takes this way.
  if (declared !== null && declared <= limit) return { text: await body.text(), bytes: declared, cut: null };
  const chunks: Buffer[] = [];
  let bytes = 0;
  let cut = false;
  for await (const chunk of body) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
    const room = limit - bytes;
    if (b.length > room || (b.length === room && declared !== null && declared > limit)) {
      chunks.push(b.subarray(0, room));
      bytes = limit;
      cut = true;
      // Leaving the loop destroys the stream: nothing more is read.
      break;
    }
    chunks.push(b);
    bytes += b.length;
  }
  const text = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks, bytes).toString('utf8');
  return { text, bytes, cut: cut ? { limit, declared } : null };
}

/** Why a body cut at its limit was refused, for the answer's error. */
export function cutProblem(cut: NonNullable<BodyRead['cut']>): string {
  const said = cut.declared !== null ? ` (Content-Length ${cut.declared})` : '';
  return `the body is larger than ${cut.limit} bytes${said}; dnc stopped reading it there`;
}

/**
 * What a journal or the check history keeps of a refused answer: the text itself when it is short and whole, else a
 * JSON record of its first KEPT_EXCERPT_CHARS characters, the bytes read and their SHA-256 (of the text as kept,
 * secrets masked), so that the evidence of an answer of any size stays a few kilobytes.
 */
export function keptAnswerText(read: Pick<BodyRead, 'text' | 'bytes' | 'cut'>): string {
  if (read.cut === null && read.text.length <= KEPT_EXCERPT_CHARS) return read.text;
  return JSON.stringify({
    dnc_excerpt: read.text.slice(0, KEPT_EXCERPT_CHARS),
    bytes_read: read.bytes,
    complete: read.cut === null,
    ...(read.cut?.declared != null ? { content_length: read.cut.declared } : {}),
    sha256_of_read: createHash('sha256').update(read.text).digest('hex'),
  });
}
