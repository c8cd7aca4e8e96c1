// The first member name a JSON text gives twice in one object: JSON.parse keeps the last, so `"do_not_call":true,
// "do_not_call":false` reads as callable though the answer said both. One pass over text already parsed, no tree.

/**
 * The dotted path of the first name repeated within one object of `text` (`do_not_call`, `cost.credit_limit`,
 * `data[].id`), or null. `text` must be valid JSON (call it after JSON.parse succeeded): the scanner only tracks
 * strings, braces and brackets. Names are compared as JSON.parse reads them (`"a\u005fb"` is `a_b`).
 */
export function repeatedKey(text: string): string | null {
  // One frame per open container: the names an object has given so far (null for an array), and where it is.
  const frames: Array<{ names: Set<string> | null; at: string }> = [];
  let expectName = false;
  let lastName = '';
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      const end = stringEnd(text, i);
      if (expectName) {
        const raw = text.slice(i + 1, end);
        const name = raw.includes('\\') ? (JSON.parse(text.slice(i, end + 1)) as string) : raw;
        const frame = frames[frames.length - 1]!;
        if (frame.names!.has(name)) return frame.at === '' ? name : `${frame.at}.${name}`;
        frame.names!.add(name);
        lastName = name;
        expectName = false;
      }
      i = end;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      const parent = frames[frames.length - 1];
      const at = !parent
        ? ''
        : parent.names === null
          ? `${parent.at}[]`
          : parent.at === ''
            ? lastName
            : `${parent.at}.${lastName}`;
      frames.push({ names: c === 0x7b ? new Set() : null, at });
      expectName = c === 0x7b;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      frames.pop();
      expectName = false;
    } else if (c === 0x2c /* , */) {
      expectName = (frames[frames.length - 1]?.names ?? null) !== null;
    }
  }
  return null;
}

/** The index of the quote that closes the string opened at `start`. */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  for (;;) {
    const q = text.indexOf('"', i);
    if (q < 0) return text.length - 1;
    // A quote preceded by an odd number of backslashes is escaped.
    let b = q - 1;
    while (text.charCodeAt(b) === 0x5c) b--;
    if ((q - 1 - b) % 2 === 0) return q;
    i = q + 1;
  }
}

/** Why a body that repeats a field is refused: JSON.parse keeps the last, which need not be what the service meant. */
export function repeatedKeyProblem(path: string): string {
  return `field "${path}" is given twice (JSON keeps the last, so which one the service meant cannot be told)`;
}
