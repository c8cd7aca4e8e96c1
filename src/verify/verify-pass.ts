// One verify pass over a results file: each row judged against its journal verdict, the input and the scrub's
// windows as src/verify/verify.ts walks the file, and what is to re-check collected on the way.
import { VerdictsAhead } from '../journal/verdicts-ahead.js';
import { DNC_COLUMNS } from '../results/columns.js';
import { escapeFormulaCell, isHttpsUrl, serviceTextCell } from '../tables/csv-output.js';
import { DAY_MS, parseServiceTime } from '../time.js';
import {
  effectiveResult,
  exemptionCellOf,
  exemptionUntilOf,
  rulesOf,
  validUntilCell,
} from '../compliance/batch-compliance.js';
import { windowDays, type ValidityRules } from '../compliance/validity.js';
import {
  hasCallableNumbers,
  hasCallingColumns,
  REPEATED_ROW,
  type Manifest,
  type RowAnswer,
} from '../evidence/manifest.js';
import { C, CALLING, DNC_RESULTS } from '../results/columns.js';
import { numberCellsAsRow, resultColumns, rowRuleFinding } from '../results/row-cells.js';
import { doNotCallCell } from '../results/cells.js';
import type { AnchorsSeen } from './anchored.js';
import type { RowCursor } from '../tables/row-cursor.js';
import type { BatchJournal } from '../journal/journal.js';
import type { NumberVerdict } from '../journal/types.js';
import type { callingCheckOf } from './calling.js';
import { type RecheckReason, RecheckTally } from './recheck-tally.js';
import { FitRows } from './fit-rows.js';

export interface RecheckRow {
  /** Line of the output file where the row starts (1-based; the header is line 1). */
  line: number;
  /** Its record number (1-based, the header is record 1): the spreadsheet's row number. */
  record: number;
  /** The sheet it is on, when the output is a workbook (its row is then `record`). */
  sheet?: string;
  number: string;
  country: string;
  result: string;
  reason: RecheckReason;
  detail: string;
}

export interface VerifyOptions {
  /** --max-age for every row; null: the per-country default. */
  maxAgeMs: number | null;
  /** Ages are judged as of this moment. */
  asOf: Date;
  /** Rows listed at most (all are counted). */
  listLimit?: number;
  /** Whether a number is on the internal do-not-call list now (a callable row's number added since is not fit). */
  suppressedNow?: ((e164: string) => boolean) | undefined;
  /**
   * --without-journal: judge the rows without the batch's journal, which is not where the manifest says. Without it,
   * such a file cannot be proven and is not fit (the manifest and the file could have been rewritten together).
   */
  withoutJournal?: boolean;
  /** The anchors the verifier can see of this output (the state folder's, the team store's); none when absent. */
  anchors?: AnchorsSeen | null;
  /** The state folder, where the journal's chain head is anchored (none: the chain is checked against itself). */
  stateDir?: string | null;
  /**
   * --unanchored: a file anchored nowhere the verifier can see may still be judged fit (the report then says what
   * was not checked). Without it such a file is unproven, never fit.
   */
  unanchored?: boolean;
  /**
   * Told each row as it is read, before it is judged: `dnc window` reads the file in verify's own pass. A row of one
   * phone column with exactly the cells of a row told before and judged fit is not told (a repeated number's).
   */
  onRow?: ((index: number, fields: readonly string[], cells: readonly string[]) => void) | undefined;
  /** Told each row to re-check as it is found, with why (and the phone column, 1-based, when it is one number's). */
  onFlag?: ((index: number, reason: RecheckReason, column: number | null) => void) | undefined;
  /** The time-zone database's version (the context's), for the calling rules the calling columns are checked under. */
  tzdataVersion: string;
}

function maxAgeFor(country: string, o: VerifyOptions, rules: ValidityRules): number {
  if (o.maxAgeMs !== null) return o.maxAgeMs;
  return windowDays(rules, country) * DAY_MS;
}

/** What a pass over the rows is given: the file's manifest and what it is compared with. */
export interface PassSources {
  manifest: Manifest;
  /** The input, read in step with the output (null when it is gone or changed). */
  input: RowCursor | null;
  journal: BatchJournal | null;
  /** The input's header, which the output's must begin with. */
  inputHeader: string[] | undefined;
  callingCheck: ReturnType<typeof callingCheckOf>;
}

export class VerifyPass {
  /** Rows to re-check, listed up to --limit (all are counted in `tally`). */
  readonly found: Array<Omit<RecheckRow, 'line' | 'record'> & { index: number }> = [];
  readonly tally = new RecheckTally();
  /** What makes the file not the one dnc wrote, whatever its rows say (its header, its CSV). */
  readonly structure: string[] = [];
  /** Whether the output's rows are still in step with the input's. */
  aligned: boolean;
  /** The windows the scrub was made under (its config), else today's defaults. */
  readonly rules: ValidityRules;
  private readonly limit: number;
  /** Rows ask for verdicts nearly in id order: read ahead, as the render does; any other asked for alone. */
  private readonly ahead: VerdictsAhead | null;
  private highestId = 0;
  private readonly hasValidUntil: boolean;
  /** Outputs from before dnc_exemption have no such cell. */
  private readonly hasExemption: boolean;
  private readonly asOf: number;
  /** As the writer of that file escaped (before escape_formulas_behind_spaces, only a leading character counted). */
  private readonly asWritten: (v: string) => string;
  /** Service text as that file's writer wrote it: a workbook's without the `'` before a formula since that flag. */
  private readonly serviceText: (v: string | null | undefined) => string;
  /** Outputs since the calling columns: each number's zones and window, recomputed under the journal's settings. */
  private readonly calling: boolean;
  /** Outputs since dnc_callable_numbers: rows of several numbers under the row rule (row-cells.ts's rowResult). */
  private readonly layout: { calling: boolean; callableNumbers: boolean };
  /** Phone columns of a row of several (0: one). */
  private readonly several: number;
  /** A number's later rows with the cells of one judged fit are fit: judging is a function of the cells. */
  private readonly fitRows = new FitRows();

  constructor(
    private readonly s: PassSources,
    private readonly o: VerifyOptions,
  ) {
    const { manifest } = s;
    this.limit = o.listLimit ?? 1_000;
    this.rules = rulesOf(manifest.compliance);
    this.ahead = s.journal ? new VerdictsAhead(s.journal) : null;
    this.aligned = s.input !== null;
    this.hasValidUntil = (manifest.format.dnc_columns ?? 10) > C.validUntil;
    this.hasExemption = (manifest.format.dnc_columns ?? 10) > C.exemption;
    this.asOf = o.asOf.getTime();
    const behindSpaces = manifest.format.escape_formulas_behind_spaces === true;
    this.asWritten = manifest.format.escape_formulas
      ? (v: string) => escapeFormulaCell(v, behindSpaces)
      : (v: string) => v;
    const serviceFormat = manifest.format.workbook && manifest.format.service_text_unquoted ? 'xlsx' : 'csv';
    this.serviceText = (v: string | null | undefined) => serviceTextCell(v, serviceFormat);
    this.calling = hasCallingColumns(manifest.format);
    this.layout = { calling: this.calling, callableNumbers: hasCallableNumbers(manifest.format) };
    this.several = (manifest.format.phone_columns?.length ?? 1) > 1 ? manifest.format.phone_columns!.length : 0;
  }

  readonly flag = (
    index: number,
    cells: string[],
    reason: RecheckReason,
    text: string,
    column: number | null = null,
  ): void => {
    const detail = column === null ? text : `phone column ${column}: ${text}`;
    if (!this.tally.add(index, reason)) return;
    this.o.onFlag?.(index, reason, column);
    if (this.found.length < this.limit)
      this.found.push({
        index,
        number: cells[C.e164] ?? '',
        country: cells[C.country] ?? '',
        result: cells[C.result] ?? '',
        reason,
        detail,
      });
  };

  readonly checkHeader = (fields: string[]): void => {
    const { manifest, inputHeader } = this.s;
    // Outputs from before dnc_exemption have the first 10 of today's columns; from before the calling columns, 12.
    const expected =
      this.several || this.calling
        ? resultColumns(Math.max(this.several, 1), this.calling, this.layout.callableNumbers)
        : DNC_COLUMNS.slice(0, manifest.format.dnc_columns ?? 10);
    const dnc = fields.slice(manifest.format.input_columns);
    if (dnc.join('\0') !== expected.join('\0'))
      this.structure.push(`the header's last columns are not ${expected.join(', ')}`);
    if (
      inputHeader &&
      fields.slice(0, manifest.format.input_columns).some((v, i) => v !== this.asWritten(inputHeader[i] ?? ''))
    ) {
      this.structure.push("the header's input columns differ from the input's header");
    }
  };

  /** Each output row: judged in step with the input's while they agree, alone from the first that differs. */
  readonly onRow = (index: number, fields: string[], cells: string[]): RowAnswer | Promise<RowAnswer> => {
    const { input } = this.s;
    if (!this.aligned || !input) return this.judgeRow(index, fields, cells);
    const inputRow = input.next();
    if (inputRow instanceof Promise) return inputRow.then((row) => this.judgeInStep(index, fields, cells, row));
    return this.judgeInStep(index, fields, cells, inputRow);
  };

  private verdictOf(j: BatchJournal, e164: string) {
    const v = this.ahead?.take(e164, this.highestId) ?? j.verdict(e164);
    if (v !== undefined && v.id > this.highestId) this.highestId = v.id;
    return v;
  }

  /** How a row's verdict cells differ from its number's journal verdict, or null when they agree. */
  private journalDisagreement(j: BatchJournal, cells: string[], column: number | null): string | null {
    const e164 = cells[C.e164]!;
    const result = cells[C.result] ?? '';
    const cid = cells[C.correlationId] ?? '';
    const v = this.verdictOf(j, e164);
    const verdictDiffers =
      result === 'callable' || result === 'do_not_call'
        ? this.serviceText(v?.correlation_id) !== cid ||
          this.serviceText(v?.checked_at) !== (cells[C.checkedAt] ?? '') ||
          (column === null && this.serviceText(v?.list_source) !== (cells[C.source] ?? ''))
        : false;
    if (v && v.state === 'done' && effectiveResult(v) === result && !verdictDiffers)
      return this.otherCellsDiffer(v, cells, column);
    return (
      `says ${result}${cid ? ` (${cid})` : ''}, the journal says ` +
      (v
        ? v.state === 'done'
          ? `${v.result} (${v.correlation_id ?? 'no correlation id'})`
          : v.state
        : 'nothing about this number')
    );
  }

  /**
   * The verdict's other cells, as render writes them (a row's; a phone column's own cells keep only its error code):
   * a do_not_call row edited to say dnc_do_not_call false misleads a dialler that reads that column.
   */
  private otherCellsDiffer(v: NumberVerdict, cells: string[], column: number | null): string | null {
    const expected: Array<[string, number, string]> = [['dnc_error_code', C.errorCode, this.serviceText(v.error_code)]];
    if (column === null) {
      expected.push(
        ['dnc_do_not_call', C.doNotCall, doNotCallCell(v)],
        ['dnc_error', C.error, this.serviceText(v.error)],
      );
      if (this.hasExemption) expected.push(['dnc_exemption', C.exemption, exemptionCellOf(v)]);
    }
    for (const [name, at, want] of expected) {
      const got = cells[at] ?? '';
      if (got !== want) return `${name} ${JSON.stringify(got)} is not what the journal gives (${JSON.stringify(want)})`;
    }
    return null;
  }

  /** Judges one number's cells: a row's (column null) or the dnc_N_* cells of phone column N (no source kept). */
  private judge(index: number, cells: string[], column: number | null): void {
    const { o, rules } = this;
    const { journal, callingCheck } = this.s;
    const note = (i: number, c: string[], reason: RecheckReason, text: string) => this.flag(i, c, reason, text, column);
    const callingWrong = callingCheck.check?.(
      cells[C.e164] ?? '',
      cells[CALLING.timeZones] ?? '',
      cells[CALLING.window] ?? '',
    );
    if (callingWrong) return note(index, cells, 'edited', callingWrong);
    const result = cells[C.result] ?? '';
    const cid = cells[C.correlationId] ?? '';
    if (!(DNC_RESULTS as readonly string[]).includes(result)) {
      note(index, cells, 'edited', `dnc_result ${JSON.stringify(result)} is not a result dnc writes`);
      return;
    }
    // A pending or not_checked row may be older than its journal (rendered before later answers): not an edit.
    if (journal && cells[C.e164] && result !== 'pending' && result !== 'not_checked') {
      const disagreement = this.journalDisagreement(journal, cells, column);
      if (disagreement !== null) return note(index, cells, 'edited', disagreement);
    }
    // Each row's own valid-until (outputs since dnc_valid_until): what the scrub's windows give, or it was edited.
    if (column === null && this.hasValidUntil && (cells[C.validUntil] ?? '') !== validUntilCell(rules, cells)) {
      const expected = validUntilCell(rules, cells);
      note(
        index,
        cells,
        'edited',
        `dnc_valid_until ${JSON.stringify(cells[C.validUntil] ?? '')} is not what the scrub's windows give ` +
          `(${expected ? expected : 'empty'})`,
      );
      return;
    }
    switch (result) {
      case 'pending':
        note(
          index,
          cells,
          'pending',
          `webhook result not received${cid ? ` (correlation id ${cid})` : ''}; run \`dnc listen\``,
        );
        return;
      case 'not_checked':
        note(index, cells, 'not_checked', cells[C.error] || 'never looked up');
        return;
      case 'failed':
        note(index, cells, 'failed', `${cells[C.errorCode] || 'failed'}: ${cells[C.error] || 'the lookup failed'}`);
        return;
      case 'callable':
        break;
      default:
        return;
    }
    if (o.suppressedNow?.(cells[C.e164] ?? ''))
      return note(
        index,
        cells,
        'suppressed',
        'on the internal do-not-call list now (added after the scrub): never dial it',
      );
    if (!cid) return note(index, cells, 'no_correlation_id', 'callable without a correlation id: no proof of a lookup');
    // (A number's own cells keep no source: the journal's, compared above, is its proof.)
    if (column === null && !cells[C.source])
      return note(index, cells, 'no_source', 'callable without a register source');
    if (column === null && !isHttpsUrl(cells[C.source]!))
      return note(
        index,
        cells,
        'no_source',
        `callable with a register source that is not an https URL: ${cells[C.source]}`,
      );
    const at = parseServiceTime(cells[C.checkedAt]);
    if (!Number.isFinite(at)) return note(index, cells, 'no_checked_at', 'callable without a checked_at time');
    const maxAge = maxAgeFor(cells[C.country] ?? '', o, rules);
    if (this.asOf - at > maxAge) {
      const days = (n: number) => `${Math.round((n / DAY_MS) * 10) / 10} days`;
      note(
        index,
        cells,
        'stale',
        `checked ${cells[C.checkedAt]} (${days(this.asOf - at)} ago), older than ${days(maxAge)}`,
      );
      return;
    }
    // Callable only by an exemption: it must still hold.
    const until = exemptionUntilOf(cells[C.exemption]);
    if (until !== null && this.asOf > Date.parse(until))
      note(index, cells, 'stale', `the exemption (${cells[C.exemption]}) has ended`);
  }

  /** Judges a number's cells unless cells alike were judged fit before (fit-rows.ts). */
  private judgeOnce(index: number, cells: string[], column: number | null): void {
    const e164 = cells[C.e164] ?? '';
    if (e164 !== '' && this.fitRows.has(e164, cells, column)) return;
    const flagged = this.tally.findings;
    this.judge(index, cells, column);
    if (e164 !== '' && this.tally.findings === flagged) this.fitRows.add(e164, cells, column);
  }

  /** Tells the row (see onRow) and judges it; a row of one phone column with the cells of one judged fit is neither. */
  private judgeRow(index: number, fields: string[], cells: string[]): RowAnswer {
    const { o, several, tally } = this;
    if (!several) {
      const e164 = cells[C.e164] ?? '';
      if (e164 !== '' && this.fitRows.has(e164, cells, null)) return REPEATED_ROW;
      o.onRow?.(index, fields, cells);
      return this.judgeOnce(index, cells, null);
    }
    o.onRow?.(index, fields, cells);
    // The row's own cells, then each number's: a number's dnc_N_* cells are judged as a row of one would be.
    const result = cells[C.result] ?? '';
    if (!(DNC_RESULTS as readonly string[]).includes(result))
      return this.flag(index, cells, 'edited', `dnc_result ${JSON.stringify(result)} is not a result dnc writes`);
    const rowCalling = this.s.callingCheck.check?.(
      cells[C.e164] ?? '',
      cells[CALLING.timeZones] ?? '',
      cells[CALLING.window] ?? '',
    );
    if (rowCalling) return this.flag(index, cells, 'edited', rowCalling);
    // The row's own verdict must be what the rule gives its numbers (each proved below): a row that says callable
    // while one of them is do_not_call misleads a dialler that reads rows.
    const rule = rowRuleFinding(cells, several, this.layout);
    if (rule) this.flag(index, cells, rule.kind === 'edited' ? 'edited' : 'row_rule', rule.text);
    tally.settledRow = result === 'do_not_call' && !rule;
    for (let k = 0; k < several; k++) this.judgeOnce(index, numberCellsAsRow(cells, k, this.calling), k + 1);
    tally.settledRow = false;
  }

  /** Whether the output row's input cells are the input row's, as the writer wrote them. */
  private sameInputCells(inputRow: readonly string[], fields: readonly string[]): boolean {
    if (inputRow.length !== this.s.manifest.format.input_columns) return false;
    for (let i = 0; i < inputRow.length; i++) if (this.asWritten(inputRow[i]!) !== fields[i]) return false;
    return true;
  }

  /** A row with its input row beside it (null: the input has no more): out of step from the first that differs. */
  private judgeInStep(index: number, fields: string[], cells: string[], inputRow: string[] | null): RowAnswer {
    if (inputRow === null || !this.sameInputCells(inputRow, fields)) {
      this.aligned = false;
      this.o.onRow?.(index, fields, cells);
      this.flag(
        index,
        cells,
        'out_of_step',
        inputRow === null
          ? 'the input has no such row (row added)'
          : `differs from input row ${index + 1} (a row deleted, inserted or edited from here on)`,
      );
      return;
    }
    return this.judgeRow(index, fields, cells);
  }
}
