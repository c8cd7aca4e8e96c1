// A credit gauge: how much of a limit is used, as a ten-cell bar and a percentage (`████████░░ 81 %`).
import { paint, type Style } from './table.js';

export interface GaugeOptions {
  /** Cells in the bar (default 10). */
  width?: number;
  color?: boolean;
}

/**
 * The share of `limit` that `used` is, in whole percent rounded down: a gauge never claims
 * 100 % while a credit remains. Null when there is no positive limit to measure against.
 */
export function usedPercent(used: number, limit: number): number | null {
  if (limit <= 0) return null;
  return Math.floor((Math.max(0, used) * 100) / limit);
}

/**
 * `████████░░ 81 %`. The bar fills one cell per full tenth (rounded down) and stays full past 100 %,
 * where the percentage goes on counting (`██████████ 125 %`). A limit of 0 shows a full bar and
 * "no credits" when anything was used, an empty one otherwise.
 */
export function gauge(used: number, limit: number, options: GaugeOptions = {}): string {
  const width = options.width ?? 10;
  const percent = usedPercent(used, limit);
  const filled = percent === null ? (used > 0 ? width : 0) : Math.min(width, Math.floor((percent * width) / 100));
  const label = percent === null ? 'no credits' : `${percent} %`;
  const style: Style =
    percent === null ? (used > 0 ? 'red' : 'dim') : percent >= 90 ? 'red' : percent >= 75 ? 'yellow' : 'green';
  const color = options.color ?? false;
  return `${paint(color, style, '█'.repeat(filled))}${paint(color, 'dim', '░'.repeat(width - filled))} ${label}`;
}
