// Horizontal bar charts for a terminal: one labelled row per value, bars scaled to the largest.
import { formatInteger, paint, visibleLength } from './table.js';

const EIGHTHS = ['', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];

/** A bar `width` cells long at `max`, in eighths of a cell; any positive value shows at least ▏. */
export function bar(value: number, max: number, width: number): string {
  if (value <= 0 || max <= 0 || width <= 0) return '';
  const eighths = Math.max(1, Math.round((Math.min(value, max) / max) * width * 8));
  return '█'.repeat(Math.floor(eighths / 8)) + EIGHTHS[eighths % 8];
}

export interface BarRow {
  label: string;
  value: number;
  /** Text after the number, e.g. "· 1,204 requests". */
  note?: string;
}

export interface BarChartOptions {
  /** Columns available for the whole line. */
  columns: number;
  color?: boolean;
  /** Longest bar, in cells (default 40; less when the terminal is narrow). */
  maxBarWidth?: number;
  /** Unit after each value, e.g. "credits". */
  unit?: string;
  indent?: string;
}

/**
 * Lines of a bar chart: `label  ████▌      1,234 credits · note`. Labels and numbers are aligned;
 * bars scale to the largest value and shrink to fit the terminal.
 */
export function barChart(rows: readonly BarRow[], options: BarChartOptions): string[] {
  const indent = options.indent ?? '  ';
  const unit = options.unit ? ` ${options.unit}` : '';
  const labelWidth = Math.max(0, ...rows.map((r) => visibleLength(r.label)));
  const numbers = rows.map((r) => formatInteger(r.value));
  const numberWidth = Math.max(0, ...numbers.map((n) => n.length));
  const noteWidth = Math.max(0, ...rows.map((r) => (r.note ? visibleLength(r.note) + 1 : 0)));
  const fixed = indent.length + labelWidth + 2 + 2 + numberWidth + unit.length + noteWidth;
  const barWidth = Math.max(3, Math.min(options.maxBarWidth ?? 40, options.columns - fixed));
  const max = Math.max(0, ...rows.map((r) => r.value));
  return rows.map((r, i) => {
    const b = bar(r.value, max, barWidth);
    const padded = b + ' '.repeat(barWidth - visibleLength(b));
    const note = r.note ? ` ${r.note}` : '';
    const line =
      `${indent}${r.label.padEnd(labelWidth)}  ${paint(options.color ?? false, 'cyan', padded)}  ` +
      `${numbers[i]!.padStart(numberWidth)}${unit}${note}`;
    return line.trimEnd();
  });
}
