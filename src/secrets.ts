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
 * Every way an echo may write one character: as is (either case), percent-encoded (its UTF-8 bytes, hex in either
 * case, encoded again any number of times: `%252B`), `+` for a space, a JSON or JavaScript escape (`\u0041`,
 * `\u{41}`, `\x41`, `\/`), an HTML entity (`&#65;`, `&#x41;`, `&plus;`).
 */
function charPattern(ch: string): string {
  const cp = ch.codePointAt(0)!;
  const alts = new Set<string>([caseless(ch)]);
  const bytes = Buffer.from(ch, 'utf8');
  alts.add([...bytes].map((b) => `%(?:25)*${caseless(b.toString(16).padStart(2, '0'))}`).join(''));
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

/** `text` as an echo may write it, a character at a time (see charPattern). */
function textPattern(text: string): string {
  return [...text].map(charPattern).join('');
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

/**
 * The patterns of the forms a secret may be written in by whoever echoes it (a service, a push, a proxy): the text
 * (any case, any percent-encoding, `+` for space, JSON, JavaScript and HTML escapes, character by character, so
 * mixed forms such as Python's `quote` are found too), reversed, in hex (either case), and in base64 and base64url
 * (of its UTF-8 and UTF-16 bytes, at every alignment; themselves percent-encoded or escaped). Longest first.
 */
export function secretPatterns(secrets: readonly string[]): string[] {
  const forms = new Set<string>();
  for (const s of secretsOf(secrets)) {
    forms.add(textPattern(s));
    const reversed = [...s].reverse().join('');
    if (reversed !== s) forms.add(textPattern(reversed));
    for (const bytes of [Buffer.from(s, 'utf8'), Buffer.from(s, 'utf16le')]) {
      const hex = bytes.toString('hex');
      if (hex.length >= MIN_ENCODED_LENGTH) forms.add(caseless(hex));
      // base64 is case-sensitive: each character exact, or encoded as any other (`%2B`, `\u002b`).
      for (const fragment of base64Fragments(bytes))
        forms.add([...fragment].map((ch) => (/[A-Za-z0-9]/.test(ch) ? ch : charPattern(ch))).join(''));
    }
  }
  return [...forms].sort((a, b) => b.length - a.length);
}

/** The pattern of each set of secrets seen (a process has one or two: the key, a database password). */
const patterns = new Map<string, RegExp | null>();

function patternOf(secrets: readonly string[]): RegExp | null {
  // By content, not by array: a command's list of secrets grows once the configuration is read.
  const id = secrets.join('\u0000');
  let re = patterns.get(id);
  if (re === undefined) {
    const forms = secretPatterns(secrets);
    re = forms.length === 0 ? null : new RegExp(forms.join('|'), 'g');
    if (patterns.size > 16) patterns.clear();
    patterns.set(id, re);
  }
  return re;
}

/** Whether `text` carries a secret in any form secretPatterns knows. */
export function carriesSecret(text: string, secrets: readonly string[]): boolean {
  const re = patternOf(secrets);
  if (re === null) return false;
  re.lastIndex = 0;
  return re.test(text);
}

/**
 * `text` with every form of every secret replaced by `***` (see secretPatterns): the one masking rule, applied where
 * outside text enters dnc (answers, pushes, their headers and refusal reasons, errors) and to the output streams.
 */
export function maskSecrets(text: string, secrets: readonly string[]): string {
  const re = patternOf(secrets);
  if (re === null) return text;
  re.lastIndex = 0;
  return re.test(text) ? text.replace(re, MASK) : text;
}

/** Every string of a JSON value (keys included) with its secrets masked; `changed` tells whether any was. */
export function maskSecretsInJson(value: unknown, secrets: readonly string[]): { value: unknown; changed: boolean } {
  let changed = false;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') {
      const m = maskSecrets(v, secrets);
      if (m !== v) changed = true;
      return m;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object')
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [walk(k) as string, walk(x)]));
    return v;
  };
  const out = walk(value);
  return { value: changed ? out : value, changed };
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
