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
 * The row's list of its callable numbers, after every phone column's cells (outputs of several phone columns only):
 * last, so that every column an output had before it keeps its place.
 */
export const CALLABLE_NUMBERS_COLUMN = 'dnc_callable_numbers';

/** Which columns an output of several phone columns has, by when it was written. */
export interface ResultLayout {
  /** dnc_time_zones, dnc_calling_window and each number's two calling cells (absent in the oldest outputs). */
  calling: boolean;
  /** dnc_callable_numbers, and row verdicts under the row rule (rowResult); absent in outputs written before it. */
  callableNumbers: boolean;
}

/** Today's layout. */
export const CURRENT_LAYOUT: ResultLayout = { calling: true, callableNumbers: true };

/**
 * The dnc_* columns of an output of `phones` phone columns: the contract's, the row's calling columns, then each phone
 * column's and dnc_callable_numbers (with several). `calling` false: the layout of outputs written before the calling
 * columns; `callableNumbers` false: of those written before dnc_callable_numbers.
 */
export function resultColumns(phones: number, calling = true, callableNumbers = calling): string[] {
  const columns: string[] = [...DNC_COLUMNS];
  if (calling) columns.push(...CALLING_COLUMNS);
  if (phones > 1) {
    for (let n = 1; n <= phones; n++) columns.push(...phoneColumnNames(n, calling));
    if (callableNumbers) columns.push(CALLABLE_NUMBERS_COLUMN);
  }
  return columns;
}

/** Where phone column k's (0-based) dnc_N_* cells start among a row's dnc_* cells. */
export function phoneCellsAt(k: number, calling: boolean): number {
  const extra = calling ? CALLING_CELLS : 0;
  return DNC_COLUMN_COUNT + extra + k * (PHONE_CELLS + extra);
}

/** Results that keep a row from being called even when another of its numbers is callable (the row rule). */
const BLOCKING: ReadonlySet<string> = new Set(['do_not_call', 'failed', 'pending', 'not_checked']);

/** The row's result when none of its numbers decides it otherwise, the most telling first (cli.md). */
const ROW_ORDER: readonly DncResult[] = [
  'do_not_call',
  'failed',
  'pending',
  'not_checked',
  'unsupported_country',
  'invalid',
];

/**
 * The result of a row of several numbers, from its numbers' results (cli.md, "With several phone columns"):
 * `callable` only when one number is callable and none is do_not_call, failed, pending or not_checked (an invalid or
 * unsupported number cannot be dialled and decides nothing); else `do_not_call` when any number is; else the first of
 * failed, pending, not_checked, unsupported_country, invalid that one of them is. An exempt number is callable (its
 * cells say so, as on a row of one number).
 */
export function rowResult(results: readonly string[]): DncResult {
  let callable = false;
  let best = ROW_ORDER.length;
  for (const r of results) {
    if (r === 'callable') callable = true;
    else {
      const i = ROW_ORDER.indexOf(r as DncResult);
      if (i >= 0 && i < best) best = i;
    }
  }
  if (callable && !(best < ROW_ORDER.length && BLOCKING.has(ROW_ORDER[best]!))) return 'callable';
  return ROW_ORDER[Math.min(best, ROW_ORDER.length - 1)]!;
}

/** The row's callable numbers, space-separated, in --column order, each once (dnc_callable_numbers). */
export function callableNumbersCell(numbers: ReadonlyArray<{ e164: string; result: string }>): string {
  const seen: string[] = [];
  for (const n of numbers) if (n.result === 'callable' && n.e164 !== '' && !seen.includes(n.e164)) seen.push(n.e164);
  return seen.join(' ');
}

/**
 * The number whose cells give the row's verdict cells: its first number with the row's result (for `invalid`, one
 * that is there before an empty cell, which tells least of all).
 */
function deciderOf(numbers: readonly string[][], result: DncResult): string[] {
  const withResult = numbers.filter((n) => n[C.result] === result);
  return withResult.find((n) => n[C.errorCode] !== 'missing_number') ?? withResult[0] ?? numbers[0]!;
}

/** A number's own cells with the disagreement between its row's country and its own added to dnc_error. */
export function withNote(cells: string[], cell: CellNumber): string[] {
  if (!cell.ok || !cell.note) return cells;
  cells[C.error] = cells[C.error] ? `${cells[C.error]}; ${cell.note}` : cell.note;
  return cells;
}

/**
 * The cells of a row of several numbers (each given as the 14 cells it would have alone, in --column order):
 * dnc_result is the row rule's (rowResult); the verdict cells (dnc_do_not_call, dnc_list_source, dnc_checked_at,
 * dnc_correlation_id, dnc_error_code, dnc_error, dnc_exemption, dnc_valid_until) are those of its first number with
 * that result; dnc_phone_e164, dnc_country and the calling cells are its first callable number's (else that
 * number's), so a dialler that reads dnc_phone_e164 never gets a number that was not found callable when the row has
 * one; dnc_credits adds the credits of the numbers first seen in this row (so the column sums to what the batch
 * spent); then each column's dnc_N_* cells, and dnc_callable_numbers.
 */
export function rowCells(
  numbers: readonly string[][],
  cells: readonly CellNumber[],
  firstSeen: readonly boolean[],
  labels: readonly string[],
): string[] {
  const result = rowResult(numbers.map((n) => n[C.result]!));
  const decider = deciderOf(numbers, result);
  const first = numbers.find((n) => n[C.result] === 'callable') ?? decider;
  const row = [...decider];
  row[C.result] = result;
  row[C.e164] = first[C.e164]!;
  row[C.country] = first[C.country]!;
  row[CALLING.timeZones] = first[CALLING.timeZones]!;
  row[CALLING.window] = first[CALLING.window]!;
  let credits = 0;
  numbers.forEach((n, i) => {
    if (firstSeen[i]) credits += Number.parseInt(n[C.credits] ?? '0', 10) || 0;
  });
  row[C.credits] = String(credits);
  // A row of no number at all says so of every column, not of the first only.
  if (cells.every((c) => !c.ok && c.code === 'missing_number')) row[C.error] = noNumberText(labels);
  // A number read by its own calling code against its row's country is said, named by its column.
  const notes = cells.flatMap((c, i) => (c.ok && c.note ? [`${labels[i]}: ${c.note}`] : []));
  if (notes.length > 0) row[C.error] = [row[C.error], ...notes].filter((t) => t).join('; ');
  for (const n of numbers) {
    row.push(n[C.e164]!, n[C.result]!, n[C.errorCode]!, n[C.correlationId]!, n[C.checkedAt]!, n[C.validUntil]!);
    row.push(n[CALLING.timeZones]!, n[CALLING.window]!);
  }
  row.push(callableNumbersCell(numbers.map((n) => ({ e164: n[C.e164]!, result: n[C.result]! }))));
  return row;
}

/** The dnc_error of a row whose phone cells are all empty. */
export function noNumberText(labels: readonly string[]): string {
  return labels.length === 1 ? `no number in ${labels[0]}` : `no number in any phone column (${labels.join(', ')})`;
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
    cell.code === 'missing_number' ? noNumberText([label]) : cell.message,
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

/** What a row of several numbers says against the row rule (verify): an edit, or a row written before the rule. */
export interface RowRuleFinding {
  /** `before_rule`: a genuine row of an output written before dnc_callable_numbers, whose verdict the rule changes. */
  kind: 'edited' | 'before_rule';
  text: string;
}

/**
 * Whether a row's own cells are what the row rule gives its numbers' dnc_N_* cells (they are proved against the
 * journal one by one): dnc_result, and in outputs under the rule (`callableNumbers`) dnc_callable_numbers,
 * dnc_phone_e164, dnc_do_not_call and the deciding number's correlation id and checked_at. Null when they are.
 */
export function rowRuleFinding(cells: readonly string[], phones: number, layout: ResultLayout): RowRuleFinding | null {
  const numbers: string[][] = [];
  for (let k = 0; k < phones; k++) numbers.push(numberCellsAsRow(cells, k, layout.calling));
  const result = cells[C.result] ?? '';
  const expected = rowResult(numbers.map((n) => n[C.result]!));
  const said = (k: number) => `dnc_${k + 1}_result is ${numbers[k]![C.result]}`;
  if (result !== expected) {
    const why = numbers.flatMap((n, k) => (n[C.result] === expected || BLOCKING.has(n[C.result]!) ? [said(k)] : []));
    const text = `dnc_result says ${result}, the row rule gives ${expected} (${why.join(', ')})`;
    if (!layout.callableNumbers && result === 'callable')
      return {
        kind: 'before_rule',
        text:
          `${text}: written before a row held callable only with no number on a register; render it again ` +
          'by running the same `dnc batch` command (nothing is sent again)',
      };
    return { kind: 'edited', text };
  }
  if (!layout.callableNumbers) return null;
  const list = callableNumbersCell(numbers.map((n) => ({ e164: n[C.e164]!, result: n[C.result]! })));
  const got = cells[phoneCellsAt(phones, true)] ?? '';
  if (got !== list)
    return { kind: 'edited', text: `dnc_callable_numbers ${JSON.stringify(got)} is not ${JSON.stringify(list)}` };
  const decider = deciderOf(numbers, expected);
  const first = numbers.find((n) => n[C.result] === 'callable') ?? decider;
  const checks: Array<[string, number, string]> = [
    ['dnc_phone_e164', C.e164, first[C.e164]!],
    ['dnc_correlation_id', C.correlationId, decider[C.correlationId]!],
    ['dnc_checked_at', C.checkedAt, decider[C.checkedAt]!],
  ];
  // A do_not_call row says so; a callable row says true only beside the exemption that makes its number callable.
  if (expected === 'do_not_call' || (expected === 'callable' && cells[C.exemption]))
    checks.push(['dnc_do_not_call', C.doNotCall, 'true']);
  else if (expected === 'callable' && cells[C.doNotCall] === 'true')
    checks.push(['dnc_do_not_call', C.doNotCall, 'false']);
  for (const [name, at, want] of checks) {
    if ((cells[at] ?? '') !== want)
      return {
        kind: 'edited',
        text: `${name} ${JSON.stringify(cells[at] ?? '')} is not the row's (${JSON.stringify(want)})`,
      };
  }
  return null;
}
