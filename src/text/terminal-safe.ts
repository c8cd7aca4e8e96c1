// Text from outside (the service, a push, a CSV cell) made safe to show on a terminal: its control characters escaped.
import { OWN_SGR } from './colour.js';

/**
 * C0 and C1 controls, DEL, and the Unicode line separators and bidirectional overrides: each can move the cursor,
 * retitle the window, clear the screen, start a fake line or reorder what is read ("Trojan Source").
 */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\u001b': '\\e' };

function escapeChar(c: string): string {
  const named = NAMED[c];
  if (named) return named;
  const code = c.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/** Every control character of `text` escaped (`\e`, `\n`, `\x07` …): for one value from outside. */
export function terminalSafe(text: string): string {
  return text.replace(UNSAFE, escapeChar);
}

/** A colour (SGR) sequence, to be kept only when it is one of our own. */
const SGR = /\u001b\[[0-9;]*m/y;

/**
 * A whole line dnc composed (which may hold values from outside): control characters escaped, except the line
 * breaks and tabs dnc writes itself and the colour sequences dnc paints with (OWN_SGR), which can neither move the
 * cursor nor clear. Any other SGR is escaped: `\e[8m` (concealed) or black on black in a file's name would hide the
 * rest of the line, "NOT FIT" with it. Names from outside are escaped whole (terminalSafe) where a line shows them.
 */
export function terminalSafeLines(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\n' || c === '\t') {
      out += c;
      continue;
    }
    if (c === '\u001b') {
      SGR.lastIndex = i;
      const m = SGR.exec(text);
      if (m && OWN_SGR.has(m[0])) {
        out += m[0];
        i += m[0].length - 1;
        continue;
      }
    }
    UNSAFE.lastIndex = 0;
    out += UNSAFE.test(c) ? escapeChar(c) : c;
  }
  return out;
}
