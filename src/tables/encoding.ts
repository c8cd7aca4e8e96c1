// The text encodings a CSV call list may be in, and their decoders and encoders (iconv-lite, loaded only for one that
// is not UTF-8).
import type { TextEncoding } from './encoding-names.js';

export { parseEncodingOption, TEXT_ENCODINGS, type TextEncoding } from './encoding-names.js';

/** The UTF-16 encoding a byte-order mark announces, or null. */
export function utf16FromBom(head: Uint8Array): TextEncoding | null {
  if (head[0] === 0xff && head[1] === 0xfe) return 'utf-16le';
  if (head[0] === 0xfe && head[1] === 0xff) return 'utf-16be';
  return null;
}

/**
 * The UTF-16 a text without a byte-order mark is in, judged by where its NUL bytes fall in its first 4 KiB: text of
 * Latin letters, digits and punctuation in UTF-16LE has a NUL as every second byte and no other (BE: every first).
 * Null when the bytes do not look so (a binary file, a NUL in UTF-8 text).
 */
export function utf16WithoutBom(bytes: Uint8Array): TextEncoding | null {
  const n = Math.min(bytes.length, 4096) & ~1;
  if (n < 4) return null;
  let evenNul = 0;
  let oddNul = 0;
  for (let i = 0; i < n; i += 2) {
    if (bytes[i] === 0) evenNul++;
    if (bytes[i + 1] === 0) oddNul++;
  }
  const pairs = n / 2;
  if (oddNul >= pairs * 0.9 && evenNul <= pairs * 0.05) return 'utf-16le';
  if (evenNul >= pairs * 0.9 && oddNul <= pairs * 0.05) return 'utf-16be';
  return null;
}

export function isUtf16(e: TextEncoding | undefined): boolean {
  return e === 'utf-16le' || e === 'utf-16be';
}

/** A decoder of a byte stream to text, across chunk boundaries; a byte-order mark at the start is dropped. */
export interface StreamDecoder {
  write(bytes: Buffer): string;
  end(): string;
}

type IconvLite = {
  getDecoder(
    encoding: string,
    options?: { stripBOM?: boolean },
  ): { write(b: Buffer): string; end(): string | undefined };
  encode(text: string, encoding: string, options?: { addBOM?: boolean }): Buffer;
};

async function iconv(): Promise<IconvLite> {
  const mod = (await import('iconv-lite')) as unknown as { default?: IconvLite } & IconvLite;
  return mod.default ?? mod;
}

/**
 * iconv-lite's names: it reads `latin1` as ISO-8859-1 and `windows-1252` with the printable 0x80–0x9F of Excel's code
 * page.
 */
const ICONV_NAME: Record<TextEncoding, string> = {
  'utf-8': 'utf8',
  'windows-1252': 'windows-1252',
  latin1: 'iso-8859-1',
  'utf-16le': 'utf-16le',
  'utf-16be': 'utf-16be',
};

export async function streamDecoder(encoding: TextEncoding): Promise<StreamDecoder> {
  const d = (await iconv()).getDecoder(ICONV_NAME[encoding], { stripBOM: true });
  return { write: (b) => d.write(b), end: () => d.end() ?? '' };
}

/**
 * An encoder of output text. Characters the encoding lacks become `?` (iconv-lite's choice); an input's own
 * cells never lack one, since they were read in that encoding.
 */
export async function textEncoder(encoding: TextEncoding): Promise<(text: string) => Buffer> {
  if (encoding === 'utf-8') return (text) => Buffer.from(text, 'utf8');
  const lib = await iconv();
  const name = ICONV_NAME[encoding];
  return (text) => lib.encode(text, name, { addBOM: false });
}
