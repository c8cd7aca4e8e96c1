// numfmt as Excel shows what numfmt shows otherwise (Apache POI's workbooks of Excel's own TEXT() results): a wrapper
// around its format(), not a second formatter. Each rule below is one place where numfmt 4 differs from Excel.
import type * as Numfmt from 'numfmt';

/** A format code's sections (split at `;` outside quotes, brackets and escapes). */
export function sections(code: string): string[] {
  const out: string[] = [];
  let start = 0;
  const past = (close: string, from: number) => {
    const at = code.indexOf(close, from);
    return at < 0 ? code.length : at;
  };
  for (let i = 0; i < code.length; i++) {
    const c = code[i];
    if (c === '\\') i++;
    else if (c === '"') i = past('"', i + 1);
    else if (c === '[') i = past(']', i + 1);
    else if (c === ';') {
      out.push(code.slice(start, i));
      start = i + 1;
    }
  }
  out.push(code.slice(start));
  return out;
}

/** A section without its quoted text, escaped characters and bracketed parts: what is left are its codes. */
function codesOf(section: string): string {
  return section.replace(/"[^"]*"?|\\.|\[[^\]]*\]?/g, '');
}

const CONDITION = /\[(<=|>=|<>|<|>|=)\s*(-?\d+(?:\.\d+)?)\s*\]/;

function condition(section: string): ((v: number) => boolean) | null {
  const m = CONDITION.exec(section);
  if (!m) return null;
  const n = Number(m[2]);
  const op = m[1];
  return (v) =>
    op === '<'
      ? v < n
      : op === '>'
        ? v > n
        : op === '='
          ? v === n
          : op === '<='
            ? v <= n
            : op === '>='
              ? v >= n
              : v !== n;
}

/** The section a value is shown by in a format whose first section has a condition; -1 when none (Excel's ####). */
function conditionalSection(parts: readonly string[], value: number): number {
  const first = condition(parts[0]!);
  if (!first) return -1;
  if (first(value)) return 0;
  if (parts.length === 1) return -1;
  const second = condition(parts[1]!);
  if (!second) return 1;
  if (second(value)) return 1;
  return parts.length > 2 ? 2 : -1;
}

const ELAPSED = /\[(h+|m+|s+)\]/i;
const LOWER_AM_PM = /a\/p/;

/**
 * `format(code, value)` as Excel shows it where numfmt differs:
 * - a negative duration in an elapsed format (`[h]:mm:ss` on -1.5 is `-36:00:00`; numfmt counts from the day before);
 * - a negative number in a section chosen by a condition keeps its minus (`[<=-10]#" Wow"` on -11 is `-11 Wow`):
 *   only the second section of a format without conditions drops it;
 * - `a/p` is the lower-case `a` or `p` (numfmt leaves it as text and shows a 24-hour clock).
 */
export function excelFormat(numfmt: typeof Numfmt, code: string, value: number): string {
  let pattern = code;
  let lowerAmPm = false;
  if (LOWER_AM_PM.test(codesOf(code))) {
    pattern = replaceCode(code, 'a/p', 'A/P');
    lowerAmPm = true;
  }
  const parts = sections(pattern);
  if (value < 0 && parts.length === 1 && ELAPSED.test(pattern.replace(/"[^"]*"?|\\./g, ''))) {
    return `-${excelFormat(numfmt, code, -value)}`;
  }
  let out = numfmt.format(pattern, value);
  if (lowerAmPm) out = lowerMeridiem(numfmt, pattern, value, out);
  if (value < 0 && !out.startsWith('-') && parts.some((p) => CONDITION.test(p))) {
    const chosen = conditionalSection(parts, value);
    if (chosen >= 0 && /[0#?]/.test(codesOf(parts[chosen]!))) out = `-${out}`;
  }
  return out;
}

/** Replaces the first `what` outside quoted text and escapes. */
function replaceCode(code: string, what: string, by: string): string {
  let quoted = false;
  for (let i = 0; i < code.length; i++) {
    const c = code[i];
    if (c === '"') quoted = !quoted;
    else if (c === '\\') i++;
    else if (!quoted && code.startsWith(what, i)) return code.slice(0, i) + by + code.slice(i + what.length);
  }
  return code;
}

/** The `A` or `P` numfmt wrote for `A/P`, in lower case: found where the output for `AM/PM` first differs. */
function lowerMeridiem(numfmt: typeof Numfmt, pattern: string, value: number, out: string): string {
  const long = numfmt.format(replaceCode(pattern, 'A/P', 'AM/PM'), value);
  let i = 0;
  while (i < out.length && out[i] === long[i]) i++;
  // The letter is the last one both share (`P` then `M` against `P` then what follows).
  const at = i - 1;
  if (at < 0 || (out[at] !== 'A' && out[at] !== 'P')) return out;
  return out.slice(0, at) + out[at]!.toLowerCase() + out.slice(at + 1);
}
