// Tables for any command: boxed (cli-table3) on a terminal, stable tab-separated lines when piped.
// cli-table3 is heavy: commands load this module with `await import(...)` inside their action.
import { terminalSafe, terminalSafeLines } from '../text/terminal-safe.js';
import Table from 'cli-table3';
import { formatInteger } from '../text/numbers.js';
import { DEFAULT_COLUMNS, knownWidth } from '../io.js';

/** Where output goes: enough of IO for rendering, so renderers stay pure and testable. */
export interface Terminal {
  /** stdout is a terminal: boxed tables, charts. Otherwise: tab-separated lines. */
  tty: boolean;
  /** ANSI colour allowed (terminal and NO_COLOR unset). */
  color: boolean;
  /** Width available, in columns. */
  columns: number;
}

export type CellValue = string | number | null | undefined;
export type Align = 'left' | 'right';

export interface TableSpec {
  /** Column titles: the first line when piped (unless `header: false`), the bold row on a terminal. */
  head: string[];
  rows: CellValue[][];
  /** Per column; numbers default to right-aligned on a terminal, everything else to left. */
  align?: Align[];
  /** Show the head (default true): the first line when piped, the top row on a terminal. */
  header?: boolean;
}

import { paint } from '../text/colour.js';

export { paint, type Style } from '../text/colour.js';

/** A cell of the piped format: tabs and line breaks become spaces, so each record stays one line. */
export function tsvField(value: CellValue): string {
  if (value === null || value === undefined) return '';
  // Piped text still reaches terminals (| less -R, | cat): other control characters are escaped.
  return terminalSafe(String(value).replace(/[\t\r\n]+/g, ' '));
}

/** One record of the piped format: fields joined by tabs. */
export function tsvLine(fields: readonly CellValue[]): string {
  return fields.map(tsvField).join('\t');
}

export { formatInteger } from '../text/numbers.js';

function terminalCell(value: CellValue): string {
  if (value === null || value === undefined) return '';
  // A cell may hold a value from outside (a country, a name): only our own colour sequences survive.
  return typeof value === 'number' ? formatInteger(value) : terminalSafeLines(value);
}

/**
 * Renders a table as text ending in a newline. On a terminal: cli-table3 with box characters,
 * the head in bold when colour is on, never wider than the terminal can show without wrapping
 * (cells are truncated with "…" as a last resort). Piped: a head line, then one tab-separated line
 * per row, no colour, numbers without separators.
 */
export function renderTable(spec: TableSpec, term: Terminal): string {
  if (!term.tty) {
    const lines = spec.header === false ? [] : [tsvLine(spec.head)];
    for (const row of spec.rows) lines.push(tsvLine(row));
    return lines.length ? `${lines.join('\n')}\n` : '';
  }
  const columnCount = spec.head.length;
  const aligns: Align[] = spec.head.map((_, i) => {
    const given = spec.align?.[i];
    if (given) return given;
    return spec.rows.length > 0 && spec.rows.every((r) => typeof r[i] === 'number' || r[i] == null) ? 'right' : 'left';
  });
  const table = new Table({
    head: spec.header === false ? [] : spec.head.map((h) => paint(term.color, 'bold', h)),
    colAligns: aligns,
    colWidths: fitWidths(spec, term.columns),
    style: { head: [], border: [], 'padding-left': 1, 'padding-right': 1, compact: true },
    wordWrap: false,
    truncate: '…',
  });
  for (const row of spec.rows) {
    const cells: string[] = [];
    for (let i = 0; i < columnCount; i++) cells.push(terminalCell(row[i]));
    table.push(cells);
  }
  return `${table.toString()}\n`;
}

/**
 * Prose for a terminal: words wrapped at `columns` (a word longer than a line stays whole), each
 * line ending in a newline. For notes under tables, which should not run past the edge.
 */
export function wrap(text: string, columns: number): string {
  const width = Math.max(20, columns);
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && visibleLength(line) + 1 + visibleLength(word) > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines.map((l) => `${l}\n`).join('');
}

/** Characters a string takes on a terminal, ignoring ANSI styles (all our glyphs are one column wide). */
export function visibleLength(text: string): number {
  // eslint-disable-next-line no-control-regex
  return [...text.replace(/\u001b\[[0-9;]*m/g, '')].length;
}

/** Column widths (with padding) that fit `columns`: natural widths, the widest shrunk first. */
function fitWidths(spec: TableSpec, columns: number): Array<number | null> {
  const natural = spec.head.map(
    (h, i) =>
      Math.max(
        spec.header === false ? 0 : visibleLength(h),
        ...spec.rows.map((r) => visibleLength(terminalCell(r[i]))),
      ) + 2,
  );
  // Borders: one per column plus one. A width not known (0) is not a width of nothing: tables fit 80 columns then.
  const width = knownWidth(columns) ?? DEFAULT_COLUMNS;
  const budget = Math.max(width - (natural.length + 1), natural.length * 4);
  const widths = [...natural];
  while (widths.reduce((a, b) => a + b, 0) > budget) {
    const widest = widths.indexOf(Math.max(...widths));
    if (widths[widest]! <= 4) break;
    widths[widest]!--;
  }
  return widths;
}
