// Issue 38: the one masking rule, property-tested: generated keys, hidden in generated text in every encoding an
// echo may use (each whole, and mixed a character at a time), are masked; text without them is left alone.
// The seed is printed; FC_SEED=<seed> repeats a run.
import * as fc from 'fast-check';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs module shared with the soak (bench/soak.mjs), typed by use.
import { echoForms } from '../../bench/hostile-service.mjs';
import { maskSecrets, maskSecretsInBody } from '../../src/secrets.js';

const seed = Number(process.env.FC_SEED ?? Math.floor(Math.random() * 2 ** 31));
console.log(`masking.property: fast-check seed ${seed} (FC_SEED=${seed} repeats it)`);

const KEY_CHARS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/=_-.~';
const key = fc
  .array(fc.constantFrom(...KEY_CHARS), { minLength: 12, maxLength: 48 })
  .map((cs) => cs.join(''))
  .filter((k) => /[A-Za-z]/.test(k) && /[0-9]/.test(k));
// Text around the echo: printable ASCII, spaces and the characters escapes are made of.
const around = fc.string({ unit: fc.constantFrom(...' abcxyz019%&#;\\u{}"/+=:,.<>'.split('')), maxLength: 30 });

const hex = (n: number, w: number, upper: boolean) => {
  const h = n.toString(16).padStart(w, '0');
  return upper ? h.toUpperCase() : h;
};
/** One character written one of the ways an echo may write it (chosen by `how`), by a code of the test's own. */
function writeChar(ch: string, how: number, upper: boolean): string {
  const cp = ch.charCodeAt(0);
  switch (how) {
    case 0:
      return upper ? ch.toUpperCase() : ch;
    case 1:
      return `%${hex(cp, 2, upper)}`;
    case 2:
      return `%25${hex(cp, 2, upper)}`;
    case 3:
      return `\\u${hex(cp, 4, upper)}`;
    case 4:
      return `&#${cp};`;
    case 5:
      return `&#x${hex(cp, 1, upper)};`;
    case 6:
      return `\\x${hex(cp, 2, upper)}`;
    default:
      return ch === '/' ? '\\/' : ch === '+' ? '&plus;' : ch;
  }
}

describe('maskSecrets: one rule for every echo', () => {
  it('masks a generated key in each whole encoding, inside generated text', () => {
    fc.assert(
      fc.property(key, around, around, fc.nat(), (k, before, after, pick) => {
        const forms = Object.entries(echoForms(k) as Record<string, string>);
        const [name, form] = forms[pick % forms.length]!;
        const masked = maskSecrets(`${before}${form}${after}`, [k]);
        // A base64 echo's first and last characters share bits with the bytes around the key.
        const core = /^base(64|32)/.test(name) ? form.slice(4, -4) : form;
        expect(masked, `${name}: ${form}`).not.toContain(core);
        expect(masked.toLowerCase()).not.toContain(k.toLowerCase());
      }),
      { seed, numRuns: 400 },
    );
  });

  it('masks a key written a character at a time in mixed escapes (Python quote, JSON, HTML, \\x)', () => {
    fc.assert(
      fc.property(key, around, around, fc.array(fc.nat(7)), fc.boolean(), (k, before, after, hows, upper) => {
        const form = [...k].map((ch, i) => writeChar(ch, hows[i % Math.max(1, hows.length)] ?? 0, upper)).join('');
        const masked = maskSecrets(`${before}${form}${after}`, [k]);
        expect(masked).not.toContain(form);
        expect(masked).toContain('***');
      }),
      { seed, numRuns: 400 },
    );
  });

  it('masks the key in a body that is JSON, or that only looks like it', () => {
    fc.assert(
      fc.property(key, fc.boolean(), (k, valid) => {
        const escaped = [...k].map((ch) => `\\u${hex(ch.charCodeAt(0), 4, false)}`).join('');
        const text = valid ? `{"error":"bill ${escaped}"}` : `{"error": "bill ${escaped}", oops`;
        const json = valid ? JSON.parse(text) : undefined;
        const out = maskSecretsInBody(text, json, [k]);
        expect(out.text).not.toContain(escaped);
        expect(JSON.stringify(out.json ?? null)).not.toContain(k);
      }),
      { seed, numRuns: 200 },
    );
  });

  it('leaves text that does not carry the key as it was', () => {
    fc.assert(
      fc.property(key, fc.string({ maxLength: 200 }), (k, text) => {
        fc.pre(!text.toLowerCase().includes(k.slice(0, 4).toLowerCase()));
        expect(maskSecrets(text, [k])).toBe(text);
      }),
      { seed, numRuns: 400 },
    );
  });
});
