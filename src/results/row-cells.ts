// The dnc_* cells of a row with several phone columns: the contract's columns describe the row (its first callable
// number, or what keeps it from being called), and each phone column N adds its own dnc_N_* cells.
import type { CellNumber } from '../phone/phone-cache.js';
import { fastValidE164 } from '../phone/fast-e164.js';
import {
  C,
  CALLING,
  CALLING_CELLS,
  CALLING_COLUMNS,
  DNC_COLUMN_COUNT,
  DNC_COLUMNS,
  type DncResult,
} from './columns.js';

/**
 * The cells each phone column N adds (N is its 1-based place in --column): six, then its two calling cells (absent
 * in outputs written before them: `calling` false).
 */
export function phoneColumnNames(n: number, calling = true): string[] {
  const names = [
    `dnc_${n}_e164`,
    `dnc_${n}_result`,
    `dnc_${n}_error_code`,
    `dnc_${n}_correlation_id`,
    `dnc_${n}_checked_at`,
    `dnc_${n}_valid_until`,
  ];
  if (calling) names.push(`dnc_${n}_time_zones`, `dnc_${n}_calling_window`);
  return names;
}

/** Positions of a phone column's cells among its own, and how many there are (before its calling cells). */
export const P = {
  e164: 0,
  result: 1,
  errorCode: 2,
  correlationId: 3,
  checkedAt: 4,
  validUntil: 5,
  timeZones: 6,
  window: 7,
} as const;
export const PHONE_CELLS = 6;

/**
 * The dnc_* columns of an output of `phones` phone columns: the contract's, the row's calling columns, then each phone
 * column's (with several). `calling` false: the layout of outputs written before the calling columns.
 */
export function resultColumns(phones: number, calling = true): string[] {
  const columns: string[] = [...DNC_COLUMNS];
  if (calling) columns.push(...CALLING_COLUMNS);
  if (phones > 1) for (let n = 1; n <= phones; n++) columns.push(...phoneColumnNames(n, calling));
  return columns;
}

/** Where phone column k's (0-based) dnc_N_* cells start among a row's dnc_* cells. */
export function phoneCellsAt(k: number, calling: boolean): number {
  const extra = calling ? CALLING_CELLS : 0;
  return DNC_COLUMN_COUNT + extra + k * (PHONE_CELLS + extra);
}

/**
 * From the row's view, the results that keep it from being called, the most telling first: a number on a list is
 * what a caller must know of; then a lookup that failed or waits, one never made, a country not covered, and last a
 * number that cannot be valid. An empty phone cell (missing_number) tells least of all.
 */
const ROW_ORDER: readonly DncResult[] = [
  'do_not_call',
  'failed',
  'pending',
  'not_checked',
  'unsupported_country',
  'invalid',
];

function rank(cells: readonly string[]): number {
  if (cells[C.errorCode] === 'missing_number') return ROW_ORDER.length;
  const i = ROW_ORDER.indexOf(cells[C.result] as DncResult);
  return i < 0 ? ROW_ORDER.length : i;
}

/** A number's own cells with the disagreement between its row's country and its own added to dnc_error. */
export function withNote(cells: string[], cell: CellNumber): string[] {
  if (!cell.ok || !cell.note) return cells;
  cells[C.error] = cells[C.error] ? `${cells[C.error]}; ${cell.note}` : cell.note;
  return cells;
}

/**
 * The cells of a row of several numbers (each given as the 14 cells it would have alone, in --column order):
 * dnc_phone_e164, dnc_country and the calling cells are its first callable number's (else its first number's);
 * dnc_result is
 * `callable` when one number is, else the most telling result of its numbers (ROW_ORDER), whose number gives the
 * other cells; dnc_credits adds the credits of the numbers first seen in this row (so the column sums to what the
 * batch spent); then each column's dnc_N_* cells.
 */
export function rowCells(
  numbers: readonly string[][],
  cells: readonly CellNumber[],
  firstSeen: readonly boolean[],
  labels: readonly string[],
): string[] {
  const callable = numbers.find((n) => n[C.result] === 'callable');
  let decider = callable;
  if (!decider) {
    decider = numbers[0]!;
    for (const n of numbers) if (rank(n) < rank(decider)) decider = n;
  }
  const first = callable ?? numbers.find((n) => n[C.e164] !== '') ?? decider;
  const row = [...decider];
  row[C.e164] = first[C.e164]!;
  row[C.country] = first[C.country]!;
  row[CALLING.timeZones] = first[CALLING.timeZones]!;
  row[CALLING.window] = first[CALLING.window]!;
  let credits = 0;
  numbers.forEach((n, i) => {
    if (firstSeen[i]) credits += Number.parseInt(n[C.credits] ?? '0', 10) || 0;
  });
  row[C.credits] = String(credits);
  // A number read by its own calling code against its row's country is said, named by its column.
  const notes = cells.flatMap((c, i) => (c.ok && c.note ? [`${labels[i]}: ${c.note}`] : []));
  if (notes.length > 0) row[C.error] = [row[C.error], ...notes].filter((t) => t).join('; ');
  for (const n of numbers) {
    row.push(n[C.e164]!, n[C.result]!, n[C.errorCode]!, n[C.correlationId]!, n[C.checkedAt]!, n[C.validUntil]!);
    row.push(n[CALLING.timeZones]!, n[CALLING.window]!);
  }
  return row;
}

/** The cells of a number refused before any lookup (empty, unreadable, damaged by Excel, its row's country unknown). */
export function refusedCells(cell: Extract<CellNumber, { ok: false }>, label: string): string[] {
  return [
    '',
    // A number that could not be read is counted as unreadable, never under a country.
    '',
    // A formula never calculated holds a number nobody has seen: not checked, rather than called invalid.
    cell.code === 'formula_not_calculated' ? 'not_checked' : 'invalid',
    '',
    '',
    '',
    '',
    cell.code,
    cell.code === 'missing_number' ? `no number in ${label}` : cell.message,
    '0',
    '',
    '',
    // No number read: no zones, no window.
    '',
    '',
  ];
}

/** Phone column k's dnc_N_* cells laid out as a row's, for the checks a row's cells get (country: the number's). */
export function numberCellsAsRow(cells: readonly string[], k: number, calling: boolean): string[] {
  const at = phoneCellsAt(k, calling);
  const own = new Array<string>(DNC_COLUMN_COUNT + (calling ? 2 : 0)).fill('');
  const e164 = cells[at + P.e164] ?? '';
  own[C.e164] = e164;
  own[C.country] = fastValidE164(e164)?.country ?? '';
  own[C.result] = cells[at + P.result] ?? '';
  own[C.errorCode] = cells[at + P.errorCode] ?? '';
  own[C.correlationId] = cells[at + P.correlationId] ?? '';
  own[C.checkedAt] = cells[at + P.checkedAt] ?? '';
  own[C.validUntil] = cells[at + P.validUntil] ?? '';
  if (calling) {
    own[CALLING.timeZones] = cells[at + P.timeZones] ?? '';
    own[CALLING.window] = cells[at + P.window] ?? '';
  }
  return own;
}
