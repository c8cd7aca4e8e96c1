// Secrets masked in text: the one rule for what dnc prints and for what it writes into files.
//
// The output streams mask the key in everything written to them (src/redact.ts); what the service says is masked where
// it enters (src/service/client.ts, dnc listen's receiver), so no file dnc writes (results, lists, journal, manifest,
// caches, history, report) can carry a key a service echoed back, in whatever encoding it hid the key.

/** Shorter "secrets" would shred ordinary text; real keys are long. */
const MIN_SECRET_LENGTH = 4;
/** A binary rendering (base64, hex) shorter than this would match ordinary text: such short ones are not looked for. */
const MIN_ENCODED_LENGTH = 8;
const MASK = '***';

/** The named HTML entities of ASCII punctuation (HTML5), as an echo may write them. */
const HTML_NAMES: Readonly<Record<string, readonly string[]>> = {
  '&': ['amp'],
  '<': ['lt'],
  '>': ['gt'],
  '"': ['quot'],
  "'": ['apos'],
  '+': ['plus'],
  '/': ['sol'],
  '=': ['equals'],
  '%': ['percnt'],
  '#': ['num'],
  '!': ['excl'],
  $: ['dollar'],
  '(': ['lpar'],
  ')': ['rpar'],
  '*': ['ast', 'midast'],
  ',': ['comma'],
  '.': ['period'],
  ':': ['colon'],
  ';': ['semi'],
  '?': ['quest'],
  '@': ['commat'],
  '[': ['lsqb', 'lbrack'],
  ']': ['rsqb', 'rbrack'],
  '\\': ['bsol'],
  _: ['lowbar'],
  '`': ['grave'],
  '{': ['lcub', 'lbrace'],
  '}': ['rcub', 'rbrace'],
  '|': ['verbar', 'vert'],
  '~': ['tilde'],
  '^': ['Hat'],
};

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');

/** A pattern for `text` with each letter in either case. */
function caseless(text: string): string {
  let out = '';
  for (const ch of text) {
    const lo = ch.toLowerCase();
    const up = ch.toUpperCase();
    out += lo !== up && lo.length === 1 && up.length === 1 ? `[${lo}${up}]` : escapeRe(ch);
  }
  return out;
}

/** Hex digits of `n` (at least `width`), either case, leading zeros allowed. */
const hexOf = (n: number, width: number) => `0*${caseless(n.toString(16).padStart(width, '0'))}`;

/**
 * What may stand between two characters of an echoed secret without hiding it from a reader: white space and line
 * breaks (a key wrapped or spaced out; in JSON, the parsed strings hold them), a NUL (the key's UTF-16 bytes read as
 * UTF-8: `s\0k\0`) and quoted-printable's soft line break (`=` at a line's end). Not the escapes `\n` or `\t`
 * written out: their letter may be the key's own (`\` before a key that starts with n).
 */
const FILLER = '(?:[\\s\\u0000]|=\\r?\\n)';
/**
 * The ways a text is collapsed before a spaced-out secret is looked for in it (quickly): without white space and NULs,
 * and without soft line breaks too. Two, since a secret's own `=` before a line break is no soft line break.
 */
const COLLAPSES: readonly RegExp[] = [/[\s\u0000]+/g, new RegExp(`${FILLER}+`, 'g')];
const HAS_FILLER = new RegExp(FILLER);

/** `chars` (each a pattern) one after another, with FILLER between them when `filler`. */
const spaced = (chars: readonly string[], filler: boolean) => chars.join(filler ? `${FILLER}*` : '');

/** The full-width form of a printable ASCII character (`ｓ` for `s`, U+3000 for a space), as CJK input writes them. */
function fullWidth(cp: number): string | null {
  if (cp === 0x20) return '\u3000';
  return cp > 0x20 && cp < 0x7f ? String.fromCodePoint(cp + 0xfee0) : null;
}

/**
 * Every way an echo may write one character: as is (either case, or full-width), percent-encoded (its UTF-8 bytes,
 * hex in either case, encoded again any number of times: `%252B`), quoted-printable (`=2B`), `+` for a space, a JSON
 * or JavaScript escape (`\u0041`, `\u{41}`, `\x41`, `\/`), an HTML entity (`&#65;`, `&#x41;`, `&plus;`).
 */
function charPattern(ch: string): string {
  const cp = ch.codePointAt(0)!;
  const alts = new Set<string>([caseless(ch)]);
  const wide = fullWidth(cp);
  if (wide !== null) alts.add(caseless(wide));
  const bytes = Buffer.from(ch, 'utf8');
  alts.add([...bytes].map((b) => `%(?:25)*${caseless(b.toString(16).padStart(2, '0'))}`).join(''));
  alts.add([...bytes].map((b) => `=${caseless(b.toString(16).padStart(2, '0'))}`).join(''));
  if (ch === ' ') alts.add('\\+');
  if (cp <= 0xffff) alts.add(`\\\\[uU]${caseless(cp.toString(16).padStart(4, '0'))}`);
  else {
    const hi = Math.floor((cp - 0x10000) / 0x400) + 0xd800;
    const lo = ((cp - 0x10000) % 0x400) + 0xdc00;
    alts.add(`\\\\u${caseless(hi.toString(16))}\\\\u${caseless(lo.toString(16))}`);
  }
  alts.add(`\\\\u\\{${hexOf(cp, 1)}\\}`);
  if (cp < 256) alts.add(`\\\\[xX]${caseless(cp.toString(16).padStart(2, '0'))}`);
  if (/[^A-Za-z0-9]/.test(ch) && cp < 128) alts.add(`\\\\${escapeRe(ch)}`);
  alts.add(`&#0*${cp};?`);
  alts.add(`&#[xX]${hexOf(cp, 1)};?`);
  for (const name of HTML_NAMES[ch] ?? []) alts.add(`&${name};`);
  return `(?:${[...alts].join('|')})`;
}

/** `text` as an echo may write it, a character at a time (see charPattern), spaced out (FILLER) when `filler`. */
function textPattern(text: string, filler: boolean): string {
  return spaced([...text].map(charPattern), filler);
}

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32 of `bytes`, without padding. */
function base32(bytes: Buffer): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  return bits > 0 ? out + BASE32[(value << (5 - bits)) & 31] : out;
}

/**
 * The base32 characters that only `bytes` decide, for each of the five alignments they may sit at inside a longer
 * encoded text (as base64Fragments; 5 bits a character).
 */
function base32Fragments(bytes: Buffer): string[] {
  const out: string[] = [];
  for (let k = 0; k < 5; k++) {
    const encoded = base32(Buffer.concat([Buffer.alloc(k), bytes]));
    const fragment = encoded.slice(Math.ceil((8 * k) / 5), Math.floor((8 * (k + bytes.length)) / 5));
    if (fragment.length >= MIN_ENCODED_LENGTH) out.push(fragment);
  }
  return out;
}

/**
 * The base64 characters that only `bytes` decide, for each of the three alignments they may sit at inside a longer
 * encoded text (the characters at each end share bits with the bytes around them), in base64 and base64url.
 */
function base64Fragments(bytes: Buffer): string[] {
  const out: string[] = [];
  for (let k = 0; k < 3; k++) {
    const encoded = Buffer.concat([Buffer.alloc(k), bytes]).toString('base64');
    // Character i holds bits [6i, 6i + 6): those inside the secret's bits [8k, 8(k + n)).
    const fragment = encoded.slice(Math.ceil((8 * k) / 6), Math.floor((8 * (k + bytes.length)) / 6));
    if (fragment.length < MIN_ENCODED_LENGTH) continue;
    out.push(fragment, fragment.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return out;
}

/** The secrets as given, and without `Bearer ` in front: each long enough to be looked for. */
function secretsOf(secrets: readonly string[]): string[] {
  const out = new Set<string>();
  for (const raw of secrets)
    for (const s of [raw, raw.trim(), raw.trim().replace(/^bearer\s+/i, '')])
      if (s.length >= MIN_SECRET_LENGTH) out.add(s);
  return [...out];
}

/** One form a secret may be written in: its pattern, and the fewest characters any text it matches has. */
interface SecretForm {
  pattern: string;
  shortest: number;
}

/**
 * The forms a secret may be written in by whoever echoes it (a service, a push, a proxy): the text (any case,
 * full-width, any percent-encoding, quoted-printable, `+` for space, JSON, JavaScript and HTML escapes, character by
 * character, so mixed forms such as Python's `quote` are found too), reversed, in hex (either case), in base64 and
 * base64url (of its UTF-8 and UTF-16 bytes, at every alignment; themselves percent-encoded or escaped) and in base32
 * (likewise, either case); with `filler`, each spaced out, wrapped or NUL-separated (FILLER). Every alternative of
 * a character's pattern is at least one character, so a form matches no text shorter than the characters it is
 * written from.
 */
function secretForms(secrets: readonly string[], filler: boolean): SecretForm[] {
  const forms = new Map<string, number>();
  for (const s of secretsOf(secrets)) {
    const chars = [...s];
    forms.set(textPattern(s, filler), chars.length);
    const reversed = chars.reverse().join('');
    if (reversed !== s) forms.set(textPattern(reversed, filler), chars.length);
    for (const bytes of [Buffer.from(s, 'utf8'), Buffer.from(s, 'utf16le')]) {
      const hex = bytes.toString('hex');
      if (hex.length >= MIN_ENCODED_LENGTH) forms.set(spaced([...hex].map(caseless), filler), hex.length);
      // base64 is case-sensitive: each character exact, or encoded as any other (`%2B`, `\u002b`).
      for (const fragment of base64Fragments(bytes)) {
        const chars = [...fragment].map((ch) => (/[A-Za-z0-9]/.test(ch) ? ch : charPattern(ch)));
        forms.set(spaced(chars, filler), fragment.length);
      }
      for (const fragment of base32Fragments(bytes))
        forms.set(spaced([...fragment].map(caseless), filler), fragment.length);
    }
  }
  return [...forms].map(([pattern, shortest]) => ({ pattern, shortest }));
}

/** The patterns of the forms of `secrets` (see secretForms), longest first. */
export function secretPatterns(secrets: readonly string[]): string[] {
  return longestFirst(secretForms(secrets, false));
}

const longestFirst = (forms: readonly SecretForm[]) => forms.map((f) => f.pattern).sort((a, b) => b.length - a.length);

/**
 * The secrets' forms as one expression, and the shortest text it can match (shorter text carries no secret). The
 * forms spaced out (FILLER between every two characters) make an expression ten times slower to compile and to run:
 * a text is first collapsed and looked at with the forms of the secrets collapsed, and only when that finds one is
 * the spaced expression made (once) and run.
 */
interface Matcher {
  re: RegExp;
  shortest: number;
  /** The secrets looked for (see secretsOf). */
  secrets: string[];
  /** The matcher of the secrets collapsed (the same one when they hold no FILLER), made when first needed. */
  collapsed?: Matcher | null;
  /** The forms spaced out, compiled when first needed. */
  spaced?: RegExp;
}

/**
 * The expression of a set of secrets, compiled to machine code before its first use. V8 first runs an expression in
 * its bytecode interpreter and compiles it to machine code once it is used again, except on a subject of 1,000
 * characters or more, which it compiles to machine code at once; for this one (a few thousand alternatives, one per
 * way each character may be written) the interpreter's compile is the slow one: ≈ 30–100 ms of a batch's start
 * against ≈ 5–10 ms (docs/BENCHMARKS.md, item 8). So its first test is on a blank subject that long. Nothing else
 * depends on it: with another engine, or another rule in V8, only that time comes back.
 */
function compiled(source: string): RegExp {
  const re = new RegExp(source, 'g');
  re.test(' '.repeat(1000));
  re.lastIndex = 0;
  return re;
}

/** The matcher of each set of secrets seen (a process has one or two: the key, a database password). */
const matchers = new Map<string, Matcher | null>();
/** The last set asked for, as given: a batch asks with the same one tens of thousands of times (each answer). */
let last: { secrets: readonly string[]; matcher: Matcher | null } | null = null;

function matcherOf(secrets: readonly string[]): Matcher | null {
  // By content, not by array: a command's list of secrets grows once the configuration is read.
  if (last !== null && last.secrets.length === secrets.length && last.secrets.every((s, i) => s === secrets[i]))
    return last.matcher;
  const matcher = matcherById(secretsOf(secrets));
  last = { secrets: [...secrets], matcher };
  return matcher;
}

/** By the secrets looked for: the client's list names the key twice, the streams' once, and both share one. */
function matcherById(looked: string[]): Matcher | null {
  const id = looked.join('\u0000');
  let matcher = matchers.get(id);
  if (matcher === undefined) {
    const forms = secretForms(looked, false);
    matcher =
      forms.length === 0
        ? null
        : {
            re: compiled(longestFirst(forms).join('|')),
            shortest: Math.min(...forms.map((f) => f.shortest)),
            secrets: looked,
          };
    if (matchers.size > 16) matchers.clear();
    matchers.set(id, matcher);
  }
  return matcher;
}

/** Whether `text` holds a secret written whole. */
function carriesWhole(text: string, m: Matcher): boolean {
  if (text.length < m.shortest) return false;
  m.re.lastIndex = 0;
  return m.re.test(text);
}

/** Whether `text` holds a secret spaced out, wrapped or NUL-separated (FILLER), as its collapsed text shows. */
function carriesSpacedOut(text: string, m: Matcher): boolean {
  if (!HAS_FILLER.test(text)) return false;
  m.collapsed ??= matcherById(secretsOf(m.secrets.map((s) => s.replace(COLLAPSES[0]!, ''))));
  const c = m.collapsed;
  return c !== null && COLLAPSES.some((re) => carriesWhole(text.replace(re, ''), c));
}

/** Whether `text` carries a secret in any form secretForms knows. */
export function carriesSecret(text: string, secrets: readonly string[]): boolean {
  const m = matcherOf(secrets);
  return m !== null && (carriesWhole(text, m) || carriesSpacedOut(text, m));
}

/**
 * `text` with every form of every secret replaced by `***` (see secretForms): the one masking rule, applied where
 * outside text enters dnc (answers, pushes, their headers and refusal reasons, errors) and to the output streams.
 */
export function maskSecrets(text: string, secrets: readonly string[]): string {
  const m = matcherOf(secrets);
  if (m === null) return text;
  const out = carriesWhole(text, m) ? text.replace(m.re, MASK) : text;
  if (!carriesSpacedOut(out, m)) return out;
  m.spaced ??= compiled(longestFirst(secretForms(m.secrets, true)).join('|'));
  return out.replace(m.spaced, MASK);
}

/**
 * How deep a JSON value may nest for its strings to be walked and it to be written again: far deeper than any answer or
 * push of the interface (3 levels), far shallower than what overflows the stack (JSON.stringify fails near 10,000).
 */
export const MAX_JSON_DEPTH = 64;

/** Whether a JSON value nests deeper than `limit` (arrays and objects), found without recursion. */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth >= limit) return true;
    for (const x of Object.values(v)) if (x !== null && typeof x === 'object') stack.push([x, depth + 1]);
  }
  return false;
}

/** Whether any string of a JSON value (keys included) carries a secret (a value no deeper than MAX_JSON_DEPTH). */
function jsonCarriesSecret(v: unknown, secrets: readonly string[]): boolean {
  if (typeof v === 'string') return carriesSecret(v, secrets);
  if (Array.isArray(v)) return v.some((x) => jsonCarriesSecret(x, secrets));
  if (v !== null && typeof v === 'object')
    for (const k of Object.keys(v))
      if (carriesSecret(k, secrets) || jsonCarriesSecret((v as Record<string, unknown>)[k], secrets)) return true;
  return false;
}

/**
 * Every string of a JSON value (keys included) with its secrets masked; `changed` tells whether any was. A value that
 * carries none is returned as it is, not copied (every answer of a batch goes through here). A value nested deeper
 * than MAX_JSON_DEPTH is not walked (it would overflow the stack): the caller masks its text.
 */
export function maskSecretsInJson(value: unknown, secrets: readonly string[]): { value: unknown; changed: boolean } {
  if (nestsDeeperThan(value, MAX_JSON_DEPTH) || !jsonCarriesSecret(value, secrets)) return { value, changed: false };
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return maskSecrets(v, secrets);
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object')
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [walk(k) as string, walk(x)]));
    return v;
  };
  return { value: walk(value), changed: true };
}

/**
 * A body as received (JSON or not) with the secrets it carries masked: `text` unchanged when it carries none; else
 * the masked JSON (a key written with JSON escapes, `\u0073k_…`, is found in the parsed strings) or the masked text.
 */
export function maskSecretsInBody(
  text: string,
  json: unknown,
  secrets: readonly string[],
): { text: string; json: unknown } {
  if (secrets.length === 0) return { text, json };
  if (json !== undefined) {
    const masked = maskSecretsInJson(json, secrets);
    if (masked.changed) return { text: JSON.stringify(masked.value), json: masked.value };
  }
  const maskedText = maskSecrets(text, secrets);
  return maskedText === text ? { text, json } : { text: maskedText, json };
}
