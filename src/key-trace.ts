// What lets a process that does not hold the key (`dnc listen`) find it in a text: a trace of the key, made by one that
// holds it (`dnc batch`) and kept in the batch's journal.
import { createHash, randomBytes } from 'node:crypto';

/**
 * A key's trace: its length, and salted SHA-256 digests of it and of its lower-case form, with a rolling fingerprint
 * of each under a random base (to test a window of text in O(1) before its digest is computed). The key cannot be had
 * back from it: it is long and random, and each trace has a salt of its own, so no table of digests serves two. It
 * tells the listener the key only when a text holds it.
 */
export interface KeyTrace {
  salt: string;
  length: number;
  base: number;
  /** [fingerprint, digest] of the key, then of its lower-case form. */
  exact: [number, string];
  lower: [number, string];
}

/** The fingerprint's modulus: a prime whose products with a character and the base stay exact in a double. */
const MODULUS = 1_000_003;
/** Keys shorter than this are not traced (the masking rule does not look for them either). */
const MIN_LENGTH = 8;

const digest = (salt: string, text: string) => createHash('sha256').update(salt).update(text, 'utf8').digest('hex');

function fingerprint(text: string, base: number): number {
  let f = 0;
  for (let i = 0; i < text.length; i++) f = (f * base + text.charCodeAt(i)) % MODULUS;
  return f;
}

/** The trace of `key` (null when it is too short to be looked for). */
export function keyTraceOf(key: string, random: (size: number) => Buffer = randomBytes): KeyTrace | null {
  if (key.length < MIN_LENGTH) return null;
  const salt = random(16).toString('hex');
  const base = 256 + (random(4).readUInt32BE(0) % (MODULUS - 512));
  const of = (text: string): [number, string] => [fingerprint(text, base), digest(salt, text)];
  return { salt, length: key.length, base, exact: of(key), lower: of(key.toLowerCase()) };
}

/** Whether `trace` is the trace of `key`. */
export function traces(trace: KeyTrace, key: string): boolean {
  return key.length === trace.length && digest(trace.salt, key) === trace.exact[1];
}

/** The windows of `text` of the trace's length whose fingerprint and digest are `wanted`'s. */
function windowsOf(text: string, trace: KeyTrace, wanted: [number, string]): string[] {
  const n = trace.length;
  if (text.length < n) return [];
  let high = 1;
  for (let i = 1; i < n; i++) high = (high * trace.base) % MODULUS;
  const found = new Set<string>();
  let f = fingerprint(text.slice(0, n), trace.base);
  for (let i = 0; ; i++) {
    if (f === wanted[0]) {
      const window = text.slice(i, i + n);
      if (digest(trace.salt, window) === wanted[1]) found.add(window);
    }
    if (i + n >= text.length) break;
    f = ((f - ((text.charCodeAt(i) * high) % MODULUS) + MODULUS) * trace.base + text.charCodeAt(i + n)) % MODULUS;
  }
  return [...found];
}

/** Decoders of the ways an echo writes a key, each tolerant of what it cannot decode (it is left as it was). */
const VIEWS: ReadonlyArray<(text: string) => string> = [
  (t) => t,
  // Full-width forms, and the key spaced out, wrapped or NUL-separated (its UTF-16 bytes read as text).
  (t) => t.normalize('NFKC').replace(/(?:[\s\u0000]|=\r?\n)+/g, ''),
  (t) => {
    let out = t;
    for (let i = 0; i < 3; i++)
      out = out.replace(/(?:%[0-9a-f]{2})+/gi, (m) => {
        try {
          return decodeURIComponent(m);
        } catch {
          return m;
        }
      });
    return out;
  },
  (t) =>
    t
      .replace(/\\u\{([0-9a-f]+)\}|\\u([0-9a-f]{4})|\\x([0-9a-f]{2})/gi, (_, a, b, c) =>
        String.fromCodePoint(parseInt((a ?? b ?? c) as string, 16)),
      )
      .replace(/&#x([0-9a-f]+);?|&#([0-9]+);?/gi, (_, h, d) =>
        String.fromCodePoint(h !== undefined ? parseInt(h as string, 16) : Number(d)),
      )
      .replace(/\\\//g, '/'),
  (t) => [...t].reverse().join(''),
  // base64 and base64url at each of the four places a key's encoding may begin in a run (NULs out: UTF-16).
  (t) =>
    (t.match(/[A-Za-z0-9+/_-]{12,}/g) ?? [])
      .flatMap((run) => [0, 1, 2, 3].map((k) => Buffer.from(run.slice(k), 'base64').toString('latin1')))
      .join(' ')
      .replace(/\u0000/g, ''),
  (t) => (t.match(/(?:[0-9a-f]{2}){8,}/gi) ?? []).map((run) => Buffer.from(run, 'hex').toString('latin1')).join(' '),
];

/**
 * The keys of `trace` that `text` holds, in any of the ways VIEWS decode (as written, full-width, spaced out,
 * percent-encoded, escaped, reversed, base64, hex), in any case: each as found, to be masked by the one masking rule,
 * which then finds every other form of it too.
 */
export function keysIn(text: string, traceList: readonly KeyTrace[]): string[] {
  const found = new Set<string>();
  for (const trace of traceList)
    for (const view of VIEWS) {
      let seen: string;
      try {
        seen = view(text);
      } catch {
        continue;
      }
      for (const key of windowsOf(seen, trace, trace.exact)) found.add(key);
      for (const key of windowsOf(seen.toLowerCase(), trace, trace.lower)) found.add(key);
    }
  return [...found];
}
