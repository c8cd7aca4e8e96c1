// Secrets masked in text: the one rule for what dnc prints and for what it writes into files.
//
// The output streams mask the key in everything written to them (src/redact.ts); what the service says is masked where
// it enters (src/service/client.ts, dnc listen's store), so no file dnc writes (results, lists, journal, manifest,
// caches, history, report) can carry a key a service echoed back.

/** Shorter "secrets" would shred ordinary text; real keys are long. */
const MIN_SECRET_LENGTH = 4;
const MASK = '***';

/**
 * The forms a secret may be written in by whoever echoes it: as given, with `Bearer ` in front or not, and
 * percent-encoded (a URL, a query). Case is ignored when matching.
 */
export function secretForms(secrets: readonly string[]): string[] {
  const forms = new Set<string>();
  for (const raw of secrets) {
    for (const s of [raw, raw.trim().replace(/^bearer\s+/i, '')]) {
      if (s.length < MIN_SECRET_LENGTH) continue;
      forms.add(s);
      forms.add(encodeURIComponent(s));
    }
  }
  // Longest first: a form containing another is masked whole.
  return [...forms].sort((a, b) => b.length - a.length);
}

/** The pattern of each set of secrets seen (a process has one or two: the key, a database password). */
const patterns = new Map<string, RegExp | null>();

function patternOf(secrets: readonly string[]): RegExp | null {
  // By content, not by array: a command's list of secrets grows once the configuration is read.
  const id = secrets.join('\u0000');
  let re = patterns.get(id);
  if (re === undefined) {
    const forms = secretForms(secrets);
    re =
      forms.length === 0
        ? null
        : new RegExp(forms.map((f) => f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'gi');
    if (patterns.size > 16) patterns.clear();
    patterns.set(id, re);
  }
  return re;
}

/** `text` with every form of every secret replaced by `***`, whatever its case. */
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
