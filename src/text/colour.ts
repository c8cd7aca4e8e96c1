// Colour on a terminal: the one set of ANSI styles dnc paints with (whether it may is decided in src/io.ts:
// a terminal, and NO_COLOR unset).

const ANSI = {
  bold: [1, 22],
  dim: [2, 22],
  red: [31, 39],
  green: [32, 39],
  yellow: [33, 39],
  cyan: [36, 39],
} as const;
export type Style = keyof typeof ANSI;

/**
 * Every SGR sequence paint writes (its styles' openings and closings), and the resets (which end a style and can hide
 * nothing): the only ones a line of dnc may hold.
 */
export const OWN_SGR: ReadonlySet<string> = new Set([
  ...Object.values(ANSI).flatMap((codes) => codes.map((c) => `\u001b[${c}m`)),
  '\u001b[0m',
  '\u001b[m',
]);

/** Wraps text in an ANSI style when colour is on; returns it unchanged otherwise. */
export function paint(on: boolean, style: Style, text: string): string {
  if (!on || text === '') return text;
  const [open, close] = ANSI[style];
  return `\u001b[${open}m${text}\u001b[${close}m`;
}
