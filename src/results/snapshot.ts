// One pass over the input and the journal's verdicts as they stand: every row, in order, into every output.
import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { removeLeftoverTemps } from '../atomic-file.js';
import { inputError } from '../errors.js';
import { TallyBuilder } from './tally.js';
import { CsvWriter, escapeFormulaCell, isHttpsUrl } from '../tables/csv-output.js';
import {
  type BatchJournal,
  type BatchMeta,
  type NumberVerdict,
  type StoppedReason,
  UNANSWERED_SEND,
} from '../journal/journal.js';
import { VerdictsAhead } from '../journal/verdicts-ahead.js';
import { type CellNumber, PhoneCaches } from '../phone/phone-cache.js';
import { RowNumbers } from '../phone/row-numbers.js';
import { phoneColumnsOf } from '../journal/types.js';
import { refusedCells, resultColumns, rowCells, withNote } from './row-cells.js';
import type { ScrubRows } from '../compliance/batch-compliance.js';
import { C, type DncResult, REVIEW_COLUMNS } from './columns.js';
import { type OutputFileFormat, outputFormatOf } from '../tables/table-format.js';
import type { TypedCell } from '../tables/xlsx-cells.js';
import type { WorkbookBatch } from '../tables/xlsx-input.js';
import { readRows } from '../tables/input.js';
import type { TableLayout } from '../tables/layout.js';
import { openLane, openSink, outputError, type OutputSink } from './sinks.js';
import { callingCells, callingWindowsOf } from './calling-cells.js';
import { cellsFor, emptyResultCounts, notSentReasonsOf, type RenderSummary, UNCHARGED_FAILURES } from './cells.js';
import { manifestPathFor } from './side-files.js';
import { WEBHOOK_ONLY_COUNTRIES } from '../wire/types.js';

/** The CSV layout a journal's input was read with. */
export function layoutOf(meta: BatchMeta): TableLayout {
  return {
    path: meta.inputPath,
    delimiter: meta.options.delimiter,
    recordDelimiter: meta.layout.recordDelimiter,
    header: meta.layout.header,
    columnCount: meta.layout.columnCount,
    phoneIndexes: phoneColumnsOf(meta.options),
    phoneLabels: meta.layout.phoneLabels ?? [meta.layout.phoneLabel],
    countryIndex: meta.options.countryIndex ?? null,
    countryLabel: meta.layout.countryLabel,
    bom: meta.layout.bom,
    workbook: meta.layout.workbook,
    encoding: meta.layout.encoding,
    skipRecords: meta.layout.skipRecords,
  };
}

/**
 * Writes OUTPUT (and the callable/suppressed lists named in the journal's metadata) from the input
 * and the journal, atomically. The input is re-read and must hash as it did when the batch began.
 * `dnc listen` calls this too, after pushes have changed the journal.
 */
export interface RenderOptions {
  /** The normalisation caches of a run that just read the same input (saves normalising every row twice). */
  phones?: PhoneCaches;
  /** The clock that decides which leftover temporary files are stale (tests inject it). */
  now?: () => number;
  /** Where an output named `-` goes. */
  stdout?: Writable;
  /** What the scrub's records do to each row (src/compliance's scrubRowsOf). */
  scrubRows: (journal: BatchJournal) => ScrubRows;
  /**
   * The time-zone database's version (the context's): named in the calling rules' version the calling columns are
   * computed under, with the calling settings the journal recorded.
   */
  tzdataVersion: string;
}

/** How a render begun early waits for verdicts. */
export interface EarlyGate {
  /** True once no verdict changes any more (finish() holds the snapshot). */
  readonly final: boolean;
  /** Resolves when more answers may be committed or the gate turned final; rejects when the render is dropped. */
  next(): Promise<void>;
}

/** Thrown inside an early render that is dropped, or that meets what only a render at the end may write. */
export class EarlyRenderDropped extends Error {}

function refuseIncomplete(journal: BatchJournal, meta: BatchMeta): void {
  // The batch's list is still being read into the journal (lookups start before it is all there).
  if (!journal.ingested) {
    throw inputError(
      'E_JOURNAL_INCOMPLETE',
      `the journal ${journal.path} does not hold all of ${meta.inputPath} yet (its batch is still reading it, ` +
        `or stopped while reading)`,
      {
        hint: 'run the same `dnc batch` command again: it reads the rest of the list and writes the outputs',
      },
    );
  }
}

export async function renderSnapshot(
  journal: BatchJournal,
  options: RenderOptions,
  gate?: EarlyGate,
): Promise<RenderSummary> {
  const meta = journal.meta();
  if (!meta)
    throw inputError('E_JOURNAL_EMPTY', `the journal ${journal.path} holds no batch`, {
      hint: 'run `dnc batch` again with --restart',
    });
  // Begun early, a render checks what the end of the run settles once it turns final (SnapshotRender.waitForAnswers).
  if (gate === undefined) refuseIncomplete(journal, meta);
  const layout = layoutOf(meta);
  // What only a render after the lookups may write, refused while early (finish() may have turned the gate already).
  if (gate !== undefined && !gate.final && layout.workbook) {
    throw new EarlyRenderDropped('a workbook list is rendered after the lookups');
  }
  const stopped = journal.stoppedReason();
  const now = options.now ?? Date.now;
  // What a killed writer left of these files and of the manifest (its writer dead: see removeLeftoverTemps).
  const manifest = meta.manifestPath ?? (meta.outputPath === '-' ? null : manifestPathFor(meta.outputPath));
  const lists = [meta.callableOut, meta.suppressedOut, meta.reviewOut, meta.dialOut];
  for (const target of [meta.outputPath, ...lists, manifest]) {
    if (target && target !== '-') await removeLeftoverTemps(target, now());
  }
  const render = new SnapshotRender(journal, meta, layout, options, gate, { stopped, now, manifest });
  try {
    const lanes = await render.openLanes();
    await render.writeRows(lanes);
    await render.settle(lanes);
  } catch (err) {
    await render.abort();
    throw err;
  }
  return render.done();
}

/** The summary before the first row: the outputs named, every count at zero. */
function initialSummary(meta: BatchMeta, layout: TableLayout, manifest: string | null): RenderSummary {
  return {
    input: meta.inputPath,
    output: meta.outputPath,
    callableOut: meta.callableOut,
    suppressedOut: meta.suppressedOut,
    reviewOut: meta.reviewOut ?? null,
    dialOut: meta.dialOut ?? null,
    manifest,
    rows: 0,
    emptyRows: 0,
    phoneColumns: layout.phoneIndexes.length,
    phoneLabels: layout.phoneLabels,
    byResult: emptyResultCounts(),
    byCountry: new Map(),
    unknownCountries: { rows: 0, examples: [], more: false },
    notHttpsSources: 0,
    webhookRequired: 0,
    notCalculated: 0,
    retryable: 0,
    unanswered: 0,
    written: [],
    tally: null,
    compliance: null,
    callingRulesVersion: '',
  };
}

type Lane = Awaited<ReturnType<typeof openLane>>;
/** A number read from its cell. */
type ReadNumber = Extract<CellNumber, { ok: true }>;

/** The outputs of one render: the results, the lists the journal names, and the dial list. */
interface Lanes {
  main: Lane;
  callable: Lane | null;
  suppressed: Lane | null;
  review: Lane | null;
  /** Plain E.164 lines, no lane (and never a byte-order mark: a dialler would take it for part of the first number). */
  dial: OutputSink | null;
  /** Every lane but the dial list's, flushed after each batch of rows. */
  all: Lane[];
}

/** What renderSnapshot read before it removed leftover temporary files (in that order, as ever). */
interface RenderStart {
  stopped: StoppedReason | null;
  now: () => number;
  manifest: string | null;
}

/**
 * One render's state: its outputs, the verdicts as it last read them, and the counts of its summary. Its row loop
 * (writeRows) allocates what a row's cells need and no more: each step of a row is a method, not a closure.
 */
class SnapshotRender {
  /** True once no verdict changes any more (always, unless begun early). */
  private final: boolean;
  private stopped: StoppedReason | null;
  private inputSha256: string;
  private notSent: ReturnType<typeof notSentReasonsOf> | null = null;
  private readonly now: () => number;
  private readonly writer: CsvWriter;
  private readonly escapeInput: (fields: string[]) => string[];
  private readonly files: OutputSink[] = [];
  private readonly summary: RenderSummary;
  private readonly calling: ReturnType<typeof callingWindowsOf>;
  private readonly tally: TallyBuilder;
  private readonly scrub: ScrubRows;
  private readonly hash = createHash('sha256');
  private readonly rowNumbers: RowNumbers;
  private readonly several: boolean;
  // Service text is written as each output's format writes it (a `'` before a formula in a CSV file, none in a
  // workbook): a review list of the other format than the results' gets cells of its own.
  private readonly format: OutputFileFormat;
  private readonly reviewFormat: OutputFileFormat;
  // Journal ids are given in order of first appearance, so a row whose number's id is above every id seen
  // so far is that number's first row: no set of seen numbers needs to be kept.
  private highestId = 0;
  /** The dial list's lines of the batch of rows being written. */
  private dialNumbers = '';

  constructor(
    private readonly journal: BatchJournal,
    private readonly meta: BatchMeta,
    private readonly layout: TableLayout,
    private readonly options: RenderOptions,
    private readonly gate: EarlyGate | undefined,
    start: RenderStart,
  ) {
    this.final = gate === undefined;
    this.stopped = start.stopped;
    this.inputSha256 = meta.inputSha256;
    this.now = start.now;
    this.writer = new CsvWriter(layout.delimiter, layout.recordDelimiter);
    this.escapeInput =
      meta.escapeFormulas === true
        ? (fields: string[]) => fields.map((v) => escapeFormulaCell(v))
        : (fields: string[]) => fields;
    this.summary = initialSummary(meta, layout, start.manifest);
    // Each number's zones and weekly window: the same for every render of this journal (its recorded settings).
    this.calling = callingWindowsOf(meta, options.tzdataVersion);
    this.summary.callingRulesVersion = this.calling.rulesVersion;
    this.tally = new TallyBuilder(layout.phoneIndexes.length);
    // The windows the scrub recorded: each row's dnc_valid_until is computed under them.
    this.scrub = options.scrubRows(journal);
    const country = meta.options.country ?? undefined;
    const phones =
      options.phones && options.phones.defaultCountry === country ? options.phones : new PhoneCaches(country);
    this.rowNumbers = new RowNumbers(phones, layout.phoneIndexes, layout.countryIndex ?? null);
    this.several = layout.phoneIndexes.length > 1;
    this.format = outputFormatOf(meta.outputPath, meta.outputFormat);
    this.reviewFormat = meta.reviewOut ? outputFormatOf(meta.reviewOut, undefined) : this.format;
  }

  /** Whether this render is still early: what only a render after the lookups may write is refused. */
  private early(): boolean {
    return this.gate !== undefined && !this.gate.final;
  }

  private async open(target: string): Promise<OutputSink> {
    if (this.early() && (target === '-' || (await stat(target).catch(() => null))?.isFile() === false)) {
      throw new EarlyRenderDropped(`${target} is not a regular file: it is written after the lookups`);
    }
    try {
      const f = await openSink(target, this.options.stdout);
      f.path = target;
      this.files.push(f);
      return f;
    } catch (err) {
      throw outputError(err, target);
    }
  }

  private async lane(target: string, header: readonly string[] | null, extra: readonly string[]): Promise<Lane> {
    const meta = this.meta;
    if (this.early() && outputFormatOf(target, target === meta.outputPath ? meta.outputFormat : undefined) !== 'csv') {
      throw new EarlyRenderDropped(`${target} is a workbook: it is written after the lookups`);
    }
    const sink = await this.open(target);
    const isResults = target === meta.outputPath;
    const { layout, writer, escapeInput, now } = this;
    const l = await openLane(sink, target, meta, layout, writer, escapeInput, isResults, now, this.scrub.rules);
    if (header) await l.header([...header, ...extra]);
    return l;
  }

  /** Opens every output, in order, each with its header. */
  async openLanes(): Promise<Lanes> {
    const { meta, layout } = this;
    const main = await this.lane(meta.outputPath, layout.header, resultColumns(layout.phoneIndexes.length));
    const callable = meta.callableOut ? await this.lane(meta.callableOut, layout.header, []) : null;
    const suppressed = meta.suppressedOut ? await this.lane(meta.suppressedOut, layout.header, []) : null;
    const review = meta.reviewOut ? await this.lane(meta.reviewOut, layout.header, REVIEW_COLUMNS) : null;
    const dial = meta.dialOut ? await this.open(meta.dialOut) : null;
    const all = [main, callable, suppressed, review].filter((l) => l !== null);
    this.notSent = notSentReasonsOf(this.journal, meta, WEBHOOK_ONLY_COUNTRIES);
    return { main, callable, suppressed, review, dial, all };
  }

  /** Waits for more answers; once the gate is final, reads again what the end of the run sets. */
  private async waitForAnswers(): Promise<void> {
    const gate = this.gate!;
    await gate.next();
    if (!gate.final) return;
    this.final = true;
    const now = this.journal.meta()!;
    refuseIncomplete(this.journal, now);
    this.inputSha256 = now.inputSha256;
    this.stopped = this.journal.stoppedReason();
    this.notSent = notSentReasonsOf(this.journal, now, WEBHOOK_ONLY_COUNTRIES);
  }

  /** Every row of the input, in order, into every output; early, each waits for its numbers' final verdicts. */
  async writeRows(lanes: Lanes): Promise<void> {
    const { journal, layout } = this;
    const hash = this.hash;
    const ahead = new VerdictsAhead(journal);
    const reviewApart = lanes.review !== null && this.reviewFormat !== this.format;
    for await (const batch of readRows(layout, { onChunk: (c) => hash.update(c) })) {
      // A workbook's rows come with their typed cells, which a workbook output keeps.
      const typedRows = (batch as WorkbookBatch).typed;
      this.dialNumbers = '';
      for (let r = 0; r < batch.length; r++) {
        const input = batch[r]!;
        const typed = typedRows?.[r];
        const numbers = this.rowNumbers.read(input, typed);
        const per: string[][] = [];
        const perReview: string[][] | null = reviewApart ? [] : null;
        const firstSeen: boolean[] = [];
        // A failure that was charged is not looked up by a rerun, on any of its number's rows (only the first row's
        // dnc_credits holds the charge).
        let chargedFailure = false;
        for (let k = 0; k < numbers.length; k++) {
          const cell = numbers[k]!;
          if (!cell.ok) {
            per.push(refusedCells(cell, layout.phoneLabels[k]!));
            perReview?.push(per[k]!);
            firstSeen.push(false);
            continue;
          }
          // Early, a row waits until its number's verdict is final (its number may not even be read yet).
          let current = ahead.take(cell.e164, this.highestId) ?? journal.verdict(cell.e164);
          while (!this.final && current?.state !== 'done') {
            await this.waitForAnswers();
            ahead.answered();
            current = journal.verdict(cell.e164);
          }
          if (current?.result === 'failed' && current.credits > 0) chargedFailure = true;
          firstSeen.push(this.numberCells(cell, current, per, perReview));
        }
        const cells = this.several ? rowCells(per, numbers, firstSeen, layout.phoneLabels) : per[0]!;
        const result = cells[C.result] as DncResult;
        this.count(cells, result, numbers, per, chargedFailure);
        this.route(lanes, input, typed, cells, result, per, perReview);
      }
      for (const l of lanes.all) await l.flush();
      if (lanes.dial && this.dialNumbers) await lanes.dial.write(this.dialNumbers);
    }
  }

  /**
   * A read number's cells (and its review cells, when the review list has a format of its own) onto its row's;
   * whether this row is the number's first.
   */
  private numberCells(
    cell: ReadNumber,
    verdict: NumberVerdict | undefined,
    per: string[][],
    perReview: string[][] | null,
  ): boolean {
    const firstRow = verdict !== undefined && verdict.id > this.highestId;
    if (firstRow) this.highestId = verdict.id;
    const { scrub, stopped, several } = this;
    const notSent = this.notSent!;
    const own = scrub.complete(
      cellsFor(cell.e164, cell.country, verdict, stopped, firstRow, notSent, this.format),
      verdict,
    );
    own.push(...callingCells(this.calling, cell.e164, cell.country));
    if (firstRow && own[C.result] === 'callable') this.dialNumbers += `${cell.e164}\n`;
    if (own[C.source] && !isHttpsUrl(own[C.source]) && !own[C.source].startsWith('internal:'))
      this.summary.notHttpsSources++;
    per.push(several ? own : withNote(own, cell));
    if (perReview) {
      const mine = cellsFor(cell.e164, cell.country, verdict, stopped, firstRow, notSent, this.reviewFormat);
      perReview.push(several ? scrub.complete(mine, verdict) : withNote(scrub.complete(mine, verdict), cell));
    }
    return firstRow;
  }

  /** A row's counts: the summary's, by country, the tally's and the scrub's. */
  private count(
    cells: string[],
    result: DncResult,
    numbers: readonly CellNumber[],
    per: string[][],
    chargedFailure: boolean,
  ): void {
    const summary = this.summary;
    if (cells[C.errorCode] === 'webhook_required') summary.webhookRequired++;
    else if (cells[C.errorCode] === 'formula_not_calculated') summary.notCalculated++;
    else if (
      result === 'not_checked' ||
      (result === 'failed' && UNCHARGED_FAILURES.has(cells[C.errorCode]!) && !chargedFailure)
    )
      summary.retryable++;
    else if (result === 'failed' && cells[C.errorCode] === UNANSWERED_SEND) summary.unanswered++;
    summary.rows++;
    summary.byResult[result]++;
    if (numbers.every((n) => !n.ok && n.code === 'missing_number')) summary.emptyRows++;
    const unknown = numbers.find((n) => !n.ok && n.code === 'unknown_country');
    if (unknown && !unknown.ok) {
      const seen = summary.unknownCountries;
      seen.rows++;
      const cell = unknown.countryCell ?? '';
      if (!seen.examples.includes(cell)) {
        if (seen.examples.length < 3) seen.examples.push(cell);
        else seen.more = true;
      }
    }
    // By country: each row's with one phone column, each number's with several (an empty cell is no number).
    for (const own of this.several ? per.filter((n) => n[C.errorCode] !== 'missing_number') : [cells]) {
      let perCountry = summary.byCountry.get(own[C.country]!);
      if (!perCountry) summary.byCountry.set(own[C.country]!, (perCountry = emptyResultCounts()));
      perCountry[own[C.result] as DncResult]++;
    }
    this.tally.add(cells);
    this.scrub.count(cells);
  }

  /** A row into the results and into each list it belongs on. */
  private route(
    lanes: Lanes,
    input: readonly string[],
    typed: readonly TypedCell[] | undefined,
    cells: string[],
    result: DncResult,
    per: string[][],
    perReview: string[][] | null,
  ): void {
    const { callable, suppressed, review } = lanes;
    lanes.main.row(input, typed, cells, result);
    if (!this.several) {
      if (result === 'callable') callable?.row(input, typed, []);
      else if (result === 'do_not_call') suppressed?.row(input, typed, []);
      else if (result !== 'pending') {
        const r = perReview?.[0] ?? cells;
        review?.row(input, typed, [cells[C.e164]!, result, r[C.errorCode]!, r[C.error]!], result);
      }
      return;
    }
    // A dialler's list never shows a number that was not found callable: the row's other phone cells are emptied.
    if (callable && per.some((n) => n[C.result] === 'callable')) {
      const fields = [...input];
      const kept = typed ? [...typed] : undefined;
      per.forEach((n, k) => {
        if (n[C.result] === 'callable') return;
        const at = this.layout.phoneIndexes[k]!;
        fields[at] = '';
        if (kept) kept[at] = { value: null };
      });
      callable.row(fields, kept, []);
    }
    if (per.some((n) => n[C.result] === 'do_not_call')) suppressed?.row(input, typed, []);
    const k = per.findIndex((n, k) => needsReview(n, per, k));
    const needs = k < 0 ? undefined : (perReview ?? per)[k]!;
    if (needs) review?.row(input, typed, [needs[C.e164]!, needs[C.result]!, needs[C.errorCode]!, needs[C.error]!]);
  }

  /** Waits for the final verdicts, checks the input is unchanged, then puts every file in place. */
  async settle(lanes: Lanes): Promise<void> {
    while (!this.final) await this.waitForAnswers();
    if (this.hash.digest('hex') !== this.inputSha256) {
      throw inputError(
        'E_INPUT_CHANGED',
        `${this.meta.inputPath} has changed since this batch began (its SHA-256 differs)`,
        {
          hint: 'put the original file back, or start over with --restart',
        },
      );
    }
    for (const l of lanes.all) await l.finish();
    // Every file on the disk (each one's fsync, side by side) before the first is renamed into place.
    await Promise.all(this.files.map((f) => f.written().catch(() => {})));
    for (const f of this.files) {
      try {
        await f.commit();
      } catch (err) {
        throw outputError(err, f.target);
      }
      this.summary.written.push({ path: f.path, sha256: f.sha256, bytes: f.bytes });
    }
  }

  /** Drops every file opened (none of them was put in place). */
  async abort(): Promise<void> {
    await Promise.all(this.files.map((f) => f.abort()));
  }

  done(): RenderSummary {
    this.summary.tally = this.tally.done();
    this.summary.compliance = this.scrub.manifestFields();
    return this.summary;
  }
}

/**
 * Whether a number of a row of several sends the row to --review-out: a result a person must act on (unreadable,
 * not covered, not checked, failed); an empty cell only when the row has no number at all.
 */
function needsReview(n: readonly string[], row: readonly string[][], k: number): boolean {
  const result = n[C.result];
  if (result === 'callable' || result === 'do_not_call' || result === 'pending') return false;
  if (n[C.errorCode] !== 'missing_number') return true;
  return k === 0 && row.every((m) => m[C.errorCode] === 'missing_number');
}
