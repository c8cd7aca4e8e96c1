// `dnc verify`'s core: is a batch output exactly what dnc wrote (manifest, journal, input), and is every callable row
// fresh enough to dial?
import { existsSync } from 'node:fs';
import { VerdictsAhead } from '../journal/verdicts-ahead.js';
import { DncError, inputError } from '../errors.js';
import { isRegularFile } from '../file-kind.js';
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
import { DEFAULT_VALIDITY_DAYS, VALIDITY_DAYS, windowDays, type ValidityRules } from '../compliance/validity.js';
import {
  hasCallableNumbers,
  hasCallingColumns,
  manifestPathFor,
  outputLayout,
  phoneColumnsOfOutput,
  readManifest,
  REPEATED_ROW,
  walkOutput,
  type Manifest,
  type RowAnswer,
} from '../evidence/manifest.js';
import { C, CALLING, DNC_RESULTS } from '../results/columns.js';
import { numberCellsAsRow, resultColumns, rowRuleFinding } from '../results/row-cells.js';
import { doNotCallCell } from '../results/cells.js';
import { TallyBuilder, type OutputTally } from '../results/tally.js';
import { formatInteger } from '../text/numbers.js';
import { judgeAnchors, type AnchoredBy, type AnchorsSeen } from './anchored.js';
import { dataRecordLines } from '../tables/input.js';
import { readRowsAside } from '../tables/rows-thread.js';
import { RowCursor } from '../tables/row-cursor.js';
import { hashFile } from '../file-hash.js';
import { BatchJournal } from '../journal/journal.js';
import type { NumberVerdict } from '../journal/types.js';
import { callingCheckOf } from './calling.js';
import { type RecheckReason, RecheckTally, type SettledUnfinished } from './recheck-tally.js';
import { FitRows } from './fit-rows.js';

/**
 * Default --max-age per country: the validity windows of src/compliance/validity.ts (US/CA 31, GB 28, AU 30, others
 * 30).
 */
export const DEFAULT_MAX_AGE_DAYS: Readonly<Record<string, number>> = VALIDITY_DAYS;
export const DEFAULT_MAX_AGE_OTHER_DAYS = DEFAULT_VALIDITY_DAYS;

export type { RecheckReason } from './recheck-tally.js';

export const TAMPER_REASONS: ReadonlySet<RecheckReason> = new Set(['edited', 'out_of_step']);

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

export interface VerifyReport {
  output: string;
  manifest: string;
  fit: boolean;
  tampered: boolean;
  sha256: { manifest: string; actual: string; matches: boolean };
  /** Differences between the manifest's counts and the file's. */
  differences: string[];
  comparedWithJournal: boolean;
  comparedWithInput: boolean;
  /** Why the rows cannot be proven (the journal is gone), or null. Such a file is never fit. */
  unproven: string | null;
  /**
   * What the anchors the verifier can see say (the state folder's, the team store's): the file and manifest are what
   * dnc wrote, differ, or are anchored nowhere it can see ("not_here").
   */
  anchored: 'matches' | 'differs' | 'not_here';
  /** Who anchored what the file is, and where. */
  anchoredBy: AnchoredBy | null;
  /** Where the verifier looked for anchors. */
  anchorsLookedIn: string[];
  /**
   * Why the file is anchored nowhere the verifier can see, or null. Such a file is unproven (never fit), unless
   * --unanchored: then `anchorUnchecked` says so.
   */
  unanchored: string | null;
  /** --unanchored judged a file anchored nowhere: what that did not check; null otherwise. */
  anchorUnchecked: string | null;
  tally: OutputTally;
  manifestInfo: Pick<
    Manifest,
    'dnc_version' | 'interface_version' | 'service_base_url' | 'started_at' | 'finished_at' | 'updated_at' | 'journal'
  >;
  /** Findings to re-check (a row's, or a number's of a row of several), the rows they are on: recheck-tally.ts. */
  recheckCount: number;
  recheckRows: number;
  recheckByReason: Partial<Record<RecheckReason, number>>;
  settledUnfinished: SettledUnfinished;
  recheck: RecheckRow[];
  maxAge: { days: number | null; byCountry: Record<string, number>; otherDays: number };
  asOf: string;
  /** The calling rules' version the file's calling columns were computed under, when its manifest records it. */
  callingRulesVersion: string | null;
  /** Why the file's calling columns were not checked (other calling rules than this dnc's), or null. */
  callingUnchecked: string | null;
}

function maxAgeFor(country: string, o: VerifyOptions, rules: ValidityRules): number {
  if (o.maxAgeMs !== null) return o.maxAgeMs;
  return windowDays(rules, country) * DAY_MS;
}

function compareTallies(m: OutputTally, f: OutputTally): string[] {
  const out: string[] = [];
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  if (m.rows.total !== f.rows.total)
    out.push(`rows: ${formatInteger(f.rows.total)} in the file, ${formatInteger(m.rows.total)} in the manifest`);
  for (const r of new Set([...Object.keys(m.rows.by_result), ...Object.keys(f.rows.by_result)])) {
    const a = m.rows.by_result[r] ?? 0;
    const b = f.rows.by_result[r] ?? 0;
    if (a !== b) out.push(`${r} rows: ${formatInteger(b)} in the file, ${formatInteger(a)} in the manifest`);
  }
  if (m.numbers.distinct !== f.numbers.distinct)
    out.push(
      `distinct numbers: ${formatInteger(f.numbers.distinct)} in the file, ${formatInteger(m.numbers.distinct)} ` +
        `in the manifest`,
    );
  if (m.credits_used !== f.credits_used)
    out.push(`credits: ${formatInteger(f.credits_used)} in the file, ${formatInteger(m.credits_used)} in the manifest`);
  if (!same(m.register_sources, f.register_sources)) out.push('register sources differ from the manifest');
  if (!same(m.checked_at, f.checked_at)) out.push('oldest/newest checked_at differ from the manifest');
  if (out.length === 0 && (!same(m.rows.by_country, f.rows.by_country) || !same(m.numbers, f.numbers)))
    out.push('counts by country differ from the manifest');
  return out;
}

/** The manifest of a results file to verify; a typed error when the file or its manifest is not there. */
export async function manifestToVerify(outputPath: string): Promise<Manifest> {
  const manifestPath = manifestPathFor(outputPath);
  if (!existsSync(outputPath)) {
    throw inputError('E_INPUT_MISSING', `${outputPath} does not exist`, {
      hint: 'give the output of `dnc batch` (INPUT.results.csv by default)',
    });
  }
  const manifest = await readManifest(manifestPath);
  if (!manifest) {
    throw inputError(
      'E_NO_MANIFEST',
      `${outputPath} has no manifest (${manifestPath} is missing): nothing proves how it was scrubbed`,
      {
        hint:
          'rerun `dnc batch` on its input with -o pointing to this file (answered numbers are not sent ' +
          'again) to write the manifest',
      },
    );
  }
  return manifest;
}

export async function verifyOutput(outputPath: string, o: VerifyOptions): Promise<VerifyReport> {
  const manifest = await manifestToVerify(outputPath);
  const limit = o.listLimit ?? 1_000;
  // The windows the scrub was made under (its config), else today's defaults.
  const rules = rulesOf(manifest.compliance);

  // The input, read in step with the output, finds a deleted, inserted or edited row (only if it is unchanged).
  let input: RowCursor | null = null;
  if (existsSync(manifest.input.path) && (await hashFile(manifest.input.path)) === manifest.input.sha256) {
    const f = manifest.format;
    input = new RowCursor(
      // (In a thread when it is big: its parse then runs beside this pass's.)
      readRowsAside({
        path: manifest.input.path,
        delimiter: f.delimiter,
        recordDelimiter: f.record_delimiter,
        // The header is read as a row, to compare with the output's.
        header: null,
        columnCount: f.input_columns,
        ...phoneColumnsOfOutput(f),
        bom: f.bom,
        encoding: f.input_encoding,
        // A sheet is read from its header's row, the header included (as above).
        workbook: f.input_workbook
          ? { ...f.input_workbook, headerRow: Math.max(0, f.input_workbook.headerRow - 1) }
          : undefined,
      }),
    );
  }
  let journal: BatchJournal | null = null;
  if (existsSync(manifest.journal)) {
    journal = await BatchJournal.open(manifest.journal, { create: false }).catch(() => null);
  }
  // One state of the journal for the whole pass, as a render reads it: a number's rows are judged alike (fit-rows.ts)
  // even when a run or `dnc listen` writes to it meanwhile.
  const endSnapshot = journal?.beginSnapshot();
  // Rows ask for verdicts nearly in id order: read ahead, as the render does; any other asked for alone.
  const ahead = journal ? new VerdictsAhead(journal) : null;
  let highestId = 0;
  const verdictOf = (j: BatchJournal, e164: string) => {
    const v = ahead?.take(e164, highestId) ?? j.verdict(e164);
    if (v !== undefined && v.id > highestId) highestId = v.id;
    return v;
  };

  const found: Array<Omit<RecheckRow, 'line' | 'record'> & { index: number }> = [];
  const tally = new RecheckTally();
  const flag = (index: number, cells: string[], reason: RecheckReason, text: string, column: number | null = null) => {
    const detail = column === null ? text : `phone column ${column}: ${text}`;
    if (!tally.add(index, reason)) return;
    o.onFlag?.(index, reason, column);
    if (found.length < limit)
      found.push({
        index,
        number: cells[C.e164] ?? '',
        country: cells[C.country] ?? '',
        result: cells[C.result] ?? '',
        reason,
        detail,
      });
  };
  let aligned = input !== null;
  const hasValidUntil = (manifest.format.dnc_columns ?? 10) > C.validUntil;
  // Outputs from before dnc_exemption have no such cell.
  const hasExemption = (manifest.format.dnc_columns ?? 10) > C.exemption;
  const asOf = o.asOf.getTime();
  // As the writer of that file escaped (before escape_formulas_behind_spaces, only a leading character counted).
  const behindSpaces = manifest.format.escape_formulas_behind_spaces === true;
  const asWritten = manifest.format.escape_formulas
    ? (v: string) => escapeFormulaCell(v, behindSpaces)
    : (v: string) => v;
  // Service text as that file's writer wrote it: a workbook's without the `'` before a formula since that flag.
  const serviceFormat = manifest.format.workbook && manifest.format.service_text_unquoted ? 'xlsx' : 'csv';
  const serviceText = (v: string | null | undefined) => serviceTextCell(v, serviceFormat);
  const structure: string[] = [];
  /** What the pass holds open: let go after the walk, or at once when what comes before it fails. */
  const release = async () => {
    endSnapshot?.();
    journal?.close();
    await input?.close();
  };
  // Outputs since the calling columns: each number's zones and window, recomputed under the journal's settings.
  const calling = hasCallingColumns(manifest.format);
  // Outputs since dnc_callable_numbers: rows of several numbers under the row rule (row-cells.ts's rowResult).
  const layout = { calling, callableNumbers: hasCallableNumbers(manifest.format) };
  let inputHeader: string[] | undefined;
  let callingCheck: ReturnType<typeof callingCheckOf>;
  try {
    // The input's header, read first: the output's must be it, then the dnc_* columns.
    inputHeader = input && manifest.format.header ? ((await input.next()) ?? undefined) : undefined;
    callingCheck = calling
      ? callingCheckOf(manifest.calling_rules_version, journal?.meta() ?? null, o.tzdataVersion)
      : { check: null, unchecked: null };
  } catch (err) {
    await release();
    throw err;
  }
  const checkHeader = (fields: string[]) => {
    // Outputs from before dnc_exemption have the first 10 of today's columns; from before the calling columns, 12.
    const expected =
      several || calling
        ? resultColumns(Math.max(several, 1), calling, layout.callableNumbers)
        : DNC_COLUMNS.slice(0, manifest.format.dnc_columns ?? 10);
    const dnc = fields.slice(manifest.format.input_columns);
    if (dnc.join('\0') !== expected.join('\0'))
      structure.push(`the header's last columns are not ${expected.join(', ')}`);
    if (
      inputHeader &&
      fields.slice(0, manifest.format.input_columns).some((v, i) => v !== asWritten(inputHeader[i] ?? ''))
    ) {
      structure.push("the header's input columns differ from the input's header");
    }
  };
  const several = (manifest.format.phone_columns?.length ?? 1) > 1 ? manifest.format.phone_columns!.length : 0;
  /** How a row's verdict cells differ from its number's journal verdict, or null when they agree. */
  const journalDisagreement = (j: BatchJournal, cells: string[], column: number | null): string | null => {
    const e164 = cells[C.e164]!;
    const result = cells[C.result] ?? '';
    const cid = cells[C.correlationId] ?? '';
    const v = verdictOf(j, e164);
    const verdictDiffers =
      result === 'callable' || result === 'do_not_call'
        ? serviceText(v?.correlation_id) !== cid ||
          serviceText(v?.checked_at) !== (cells[C.checkedAt] ?? '') ||
          (column === null && serviceText(v?.list_source) !== (cells[C.source] ?? ''))
        : false;
    if (v && v.state === 'done' && effectiveResult(v) === result && !verdictDiffers)
      return otherCellsDiffer(v, cells, column);
    return (
      `says ${result}${cid ? ` (${cid})` : ''}, the journal says ` +
      (v
        ? v.state === 'done'
          ? `${v.result} (${v.correlation_id ?? 'no correlation id'})`
          : v.state
        : 'nothing about this number')
    );
  };
  /**
   * The verdict's other cells, as render writes them (a row's; a phone column's own cells keep only its error code):
   * a do_not_call row edited to say dnc_do_not_call false misleads a dialler that reads that column.
   */
  const otherCellsDiffer = (v: NumberVerdict, cells: string[], column: number | null): string | null => {
    const expected: Array<[string, number, string]> = [['dnc_error_code', C.errorCode, serviceText(v.error_code)]];
    if (column === null) {
      expected.push(['dnc_do_not_call', C.doNotCall, doNotCallCell(v)], ['dnc_error', C.error, serviceText(v.error)]);
      if (hasExemption) expected.push(['dnc_exemption', C.exemption, exemptionCellOf(v)]);
    }
    for (const [name, at, want] of expected) {
      const got = cells[at] ?? '';
      if (got !== want) return `${name} ${JSON.stringify(got)} is not what the journal gives (${JSON.stringify(want)})`;
    }
    return null;
  };
  /** Judges one number's cells: a row's (column null) or the dnc_N_* cells of phone column N (no source kept). */
  const judge = (index: number, cells: string[], column: number | null): void => {
    const note = (i: number, c: string[], reason: RecheckReason, text: string) => flag(i, c, reason, text, column);
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
      const disagreement = journalDisagreement(journal, cells, column);
      if (disagreement !== null) return note(index, cells, 'edited', disagreement);
    }
    // Each row's own valid-until (outputs since dnc_valid_until): what the scrub's windows give, or it was edited.
    if (column === null && hasValidUntil && (cells[C.validUntil] ?? '') !== validUntilCell(rules, cells)) {
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
    if (asOf - at > maxAge) {
      const days = (n: number) => `${Math.round((n / DAY_MS) * 10) / 10} days`;
      note(index, cells, 'stale', `checked ${cells[C.checkedAt]} (${days(asOf - at)} ago), older than ${days(maxAge)}`);
      return;
    }
    // Callable only by an exemption: it must still hold.
    const until = exemptionUntilOf(cells[C.exemption]);
    if (until !== null && asOf > Date.parse(until))
      note(index, cells, 'stale', `the exemption (${cells[C.exemption]}) has ended`);
  };
  // A number's later rows with the cells of one judged fit are fit: judging is a function of the cells (fit-rows.ts).
  const fitRows = new FitRows();
  const judgeOnce = (index: number, cells: string[], column: number | null): void => {
    const e164 = cells[C.e164] ?? '';
    if (e164 !== '' && fitRows.has(e164, cells, column)) return;
    const flagged = tally.findings;
    judge(index, cells, column);
    if (e164 !== '' && tally.findings === flagged) fitRows.add(e164, cells, column);
  };
  /** Tells the row (see onRow) and judges it; a row of one phone column with the cells of one judged fit is neither. */
  const judgeRow = (index: number, fields: string[], cells: string[]): RowAnswer => {
    if (!several) {
      const e164 = cells[C.e164] ?? '';
      if (e164 !== '' && fitRows.has(e164, cells, null)) return REPEATED_ROW;
      o.onRow?.(index, fields, cells);
      return judgeOnce(index, cells, null);
    }
    o.onRow?.(index, fields, cells);
    // The row's own cells, then each number's: a number's dnc_N_* cells are judged as a row of one would be.
    const result = cells[C.result] ?? '';
    if (!(DNC_RESULTS as readonly string[]).includes(result))
      return flag(index, cells, 'edited', `dnc_result ${JSON.stringify(result)} is not a result dnc writes`);
    const rowCalling = callingCheck.check?.(
      cells[C.e164] ?? '',
      cells[CALLING.timeZones] ?? '',
      cells[CALLING.window] ?? '',
    );
    if (rowCalling) return flag(index, cells, 'edited', rowCalling);
    // The row's own verdict must be what the rule gives its numbers (each proved below): a row that says callable
    // while one of them is do_not_call misleads a dialler that reads rows.
    const rule = rowRuleFinding(cells, several, layout);
    if (rule) flag(index, cells, rule.kind === 'edited' ? 'edited' : 'row_rule', rule.text);
    tally.settledRow = result === 'do_not_call' && !rule;
    for (let k = 0; k < several; k++) judgeOnce(index, numberCellsAsRow(cells, k, calling), k + 1);
    tally.settledRow = false;
  };
  /** Whether the output row's input cells are the input row's, as the writer wrote them. */
  const sameInputCells = (inputRow: readonly string[], fields: readonly string[]): boolean => {
    if (inputRow.length !== manifest.format.input_columns) return false;
    for (let i = 0; i < inputRow.length; i++) if (asWritten(inputRow[i]!) !== fields[i]) return false;
    return true;
  };
  /** A row with its input row beside it (null: the input has no more): out of step from the first that differs. */
  const judgeInStep = (index: number, fields: string[], cells: string[], inputRow: string[] | null): RowAnswer => {
    if (inputRow === null || !sameInputCells(inputRow, fields)) {
      aligned = false;
      o.onRow?.(index, fields, cells);
      flag(
        index,
        cells,
        'out_of_step',
        inputRow === null
          ? 'the input has no such row (row added)'
          : `differs from input row ${index + 1} (a row deleted, inserted or edited from here on)`,
      );
      return;
    }
    return judgeRow(index, fields, cells);
  };
  let walk;
  try {
    walk = await walkOutput(
      outputPath,
      manifest.format,
      (index, fields, cells) => {
        if (!aligned || !input) return judgeRow(index, fields, cells);
        const inputRow = input.next();
        if (inputRow instanceof Promise) return inputRow.then((row) => judgeInStep(index, fields, cells, row));
        return judgeInStep(index, fields, cells, inputRow);
      },
      checkHeader,
    );
    if (aligned && input && (await input.next()) !== null) {
      flag(
        walk.tally.rows.total - 1,
        ['', '', ''],
        'out_of_step',
        'the output ends before the input does (rows deleted at the end)',
      );
    }
  } catch (err) {
    // A file a dialler cannot read as CSV (rows split, fields shifted, a NUL) is not fit, and says where.
    if (!(err instanceof DncError) || !['E_INPUT_MALFORMED', 'E_INPUT_BINARY', 'E_INPUT_ENCODING'].includes(err.code))
      throw err;
    walk = { sha256: await hashFile(outputPath), bytes: 0, tally: new TallyBuilder().done() };
    structure.push(`it does not read as the CSV dnc wrote: ${err.message}`);
  } finally {
    await release();
  }
  const lines = await dataRecordLines(
    outputLayout(outputPath, manifest.format),
    found.map((f) => Math.max(0, f.index)),
  );
  const sheet = manifest.format.workbook ? { sheet: 'Results' } : {};
  const recheck = found.map(({ index, ...rest }) => ({
    ...(lines.get(Math.max(0, index)) ?? { line: 0, record: 0 }),
    ...sheet,
    ...rest,
  }));
  const differences = [...structure, ...(structure.length > 0 ? [] : compareTallies(manifest, walk.tally))];
  // The callable list is what a dialler loads: it must be the one written with this output.
  // (A list written through a FIFO or a device was read once, by whoever read it: there is nothing to read again, and
  // opening a FIFO would wait for a writer for ever.)
  for (const list of manifest.lists ?? []) {
    if (isRegularFile(list.path) && (await hashFile(list.path)) !== list.sha256)
      differences.push(`the ${list.kind} list ${list.path} changed after dnc wrote it`);
  }
  const shaMatches = walk.sha256 === manifest.output.sha256;
  // The anchors stand outside the results folder: a file, manifest and journal rewritten to agree still differ from
  // them, and a file none vouches for is not proven.
  const anchors = judgeAnchors(
    o.anchors ?? { local: null, team: null, teamUnread: null, runId: manifest.run_id ?? null },
    walk.sha256,
    await hashFile(manifestPathFor(outputPath)),
    o.unanchored === true,
  );
  differences.push(...anchors.differences);
  const { unanchored, anchorUnchecked } = anchors;
  const unproven =
    journal === null && !o.withoutJournal
      ? `the batch journal ${manifest.journal} is not where the manifest says: without it the rows cannot be ` +
        `proven (a file and its manifest can be rewritten together)`
      : null;
  const tampered = !shaMatches || differences.length > 0 || tally.anyOf(TAMPER_REASONS);
  return {
    output: outputPath,
    manifest: manifestPathFor(outputPath),
    fit: !tampered && unproven === null && tally.count === 0 && (unanchored === null || o.unanchored === true),
    tampered,
    sha256: { manifest: manifest.output.sha256, actual: walk.sha256, matches: shaMatches },
    differences,
    comparedWithJournal: journal !== null,
    comparedWithInput: input !== null,
    unproven,
    anchored: anchors.anchored,
    anchoredBy: anchors.by,
    anchorsLookedIn: anchors.lookedIn,
    unanchored,
    anchorUnchecked,
    tally: walk.tally,
    manifestInfo: {
      dnc_version: manifest.dnc_version,
      interface_version: manifest.interface_version,
      service_base_url: manifest.service_base_url,
      started_at: manifest.started_at,
      finished_at: manifest.finished_at,
      updated_at: manifest.updated_at,
      journal: manifest.journal,
    },
    ...tally.counts(),
    recheck,
    maxAge: {
      days: o.maxAgeMs === null ? null : o.maxAgeMs / DAY_MS,
      byCountry: { ...rules.byCountry },
      otherDays: rules.otherDays,
    },
    asOf: o.asOf.toISOString(),
    callingRulesVersion: typeof manifest.calling_rules_version === 'string' ? manifest.calling_rules_version : null,
    callingUnchecked: callingCheck.unchecked,
  };
}
