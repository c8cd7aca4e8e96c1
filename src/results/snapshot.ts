// One pass over the input and the journal's verdicts as they stand: every row, in order, into every output.
import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { removeLeftoverTemps } from '../atomic-file.js';
import { inputError } from '../errors.js';
import { TallyBuilder } from './tally.js';
import { CsvWriter, escapeFormulaCell, isHttpsUrl } from '../tables/csv-output.js';
import { type BatchJournal, type BatchMeta, UNANSWERED_SEND } from '../journal/journal.js';
import { VerdictsAhead } from '../journal/verdicts-ahead.js';
import { PhoneCaches } from '../phone/phone-cache.js';
import { RowNumbers } from '../phone/row-numbers.js';
import { phoneColumnsOf } from '../journal/types.js';
import { refusedCells, resultColumns, rowCells, withNote } from './row-cells.js';
import type { ScrubRows } from '../compliance/batch-compliance.js';
import { C, type DncResult, REVIEW_COLUMNS } from './columns.js';
import { outputFormatOf } from '../tables/table-format.js';
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
  // Begun early, a render checks what the end of the run settles once it turns final (below).
  let final = gate === undefined;
  if (final) refuseIncomplete(journal, meta);
  const layout = layoutOf(meta);
  // What only a render after the lookups may write, refused while early (finish() may have turned the gate already).
  const early = () => gate !== undefined && !gate.final;
  if (early() && layout.workbook) throw new EarlyRenderDropped('a workbook list is rendered after the lookups');
  let stopped = journal.stoppedReason();
  let inputSha256 = meta.inputSha256;
  const writer = new CsvWriter(layout.delimiter, layout.recordDelimiter);
  const escapeInput =
    meta.escapeFormulas === true
      ? (fields: string[]) => fields.map((v) => escapeFormulaCell(v))
      : (fields: string[]) => fields;

  const files: OutputSink[] = [];
  const open = async (target: string) => {
    if (early() && (target === '-' || (await stat(target).catch(() => null))?.isFile() === false)) {
      throw new EarlyRenderDropped(`${target} is not a regular file: it is written after the lookups`);
    }
    try {
      const f = await openSink(target, options.stdout);
      f.path = target;
      files.push(f);
      return f;
    } catch (err) {
      throw outputError(err, target);
    }
  };
  const now = options.now ?? Date.now;
  // What a killed writer left of these files and of the manifest (its writer dead: see removeLeftoverTemps).
  const manifest = meta.manifestPath ?? (meta.outputPath === '-' ? null : manifestPathFor(meta.outputPath));
  const lists = [meta.callableOut, meta.suppressedOut, meta.reviewOut, meta.dialOut];
  for (const target of [meta.outputPath, ...lists, manifest]) {
    if (target && target !== '-') await removeLeftoverTemps(target, now());
  }
  const summary: RenderSummary = {
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
  // Each number's zones and weekly window: the same for every render of this journal (its recorded settings).
  const calling = callingWindowsOf(meta, options.tzdataVersion);
  summary.callingRulesVersion = calling.rulesVersion;
  const tally = new TallyBuilder(layout.phoneIndexes.length);
  // The windows the scrub recorded: each row's dnc_valid_until is computed under them.
  const scrub = options.scrubRows(journal);
  const hash = createHash('sha256');
  const country = meta.options.country ?? undefined;
  const phones =
    options.phones && options.phones.defaultCountry === country ? options.phones : new PhoneCaches(country);
  const rowNumbers = new RowNumbers(phones, layout.phoneIndexes, layout.countryIndex ?? null);
  const several = layout.phoneIndexes.length > 1;
  try {
    const lane = async (target: string, header: readonly string[] | null, extra: readonly string[]) => {
      if (early() && outputFormatOf(target, target === meta.outputPath ? meta.outputFormat : undefined) !== 'csv') {
        throw new EarlyRenderDropped(`${target} is a workbook: it is written after the lookups`);
      }
      const sink = await open(target);
      const l = await openLane(
        sink,
        target,
        meta,
        layout,
        writer,
        escapeInput,
        target === meta.outputPath,
        now,
        scrub.rules,
      );
      if (header) await l.header([...header, ...extra]);
      return l;
    };
    const main = await lane(meta.outputPath, layout.header, resultColumns(layout.phoneIndexes.length));
    const callable = meta.callableOut ? await lane(meta.callableOut, layout.header, []) : null;
    const suppressed = meta.suppressedOut ? await lane(meta.suppressedOut, layout.header, []) : null;
    const review = meta.reviewOut ? await lane(meta.reviewOut, layout.header, REVIEW_COLUMNS) : null;
    const dial = meta.dialOut ? await open(meta.dialOut) : null;
    // (The dial list never gets a byte-order mark: a dialler reads plain E.164 lines, and would take it for part of the
    // first number.)
    const lanes = [main, callable, suppressed, review].filter((l) => l !== null);
    // Service text is written as each output's format writes it (a `'` before a formula in a CSV file, none in a
    // workbook): a review list of the other format than the results' gets cells of its own.
    const format = outputFormatOf(meta.outputPath, meta.outputFormat);
    const reviewFormat = meta.reviewOut ? outputFormatOf(meta.reviewOut, undefined) : format;
    let notSent = notSentReasonsOf(journal, meta, WEBHOOK_ONLY_COUNTRIES);
    /** Waits for more answers; once the gate is final, reads again what the end of the run sets. */
    const waitForAnswers = async () => {
      await gate!.next();
      if (!gate!.final) return;
      final = true;
      const now = journal.meta()!;
      refuseIncomplete(journal, now);
      inputSha256 = now.inputSha256;
      stopped = journal.stoppedReason();
      notSent = notSentReasonsOf(journal, now, WEBHOOK_ONLY_COUNTRIES);
    };
    // Journal ids are given in order of first appearance, so a row whose number's id is above every id seen
    // so far is that number's first row: no set of seen numbers needs to be kept.
    let highestId = 0;
    const ahead = new VerdictsAhead(journal);
    for await (const batch of readRows(layout, { onChunk: (c) => hash.update(c) })) {
      // A workbook's rows come with their typed cells, which a workbook output keeps.
      const typedRows = (batch as WorkbookBatch).typed;
      let dialNumbers = '';
      for (let r = 0; r < batch.length; r++) {
        const input = batch[r]!;
        const typed = typedRows?.[r];
        const numbers = rowNumbers.read(input, typed);
        const per: string[][] = [];
        const perReview: string[][] | null = review && reviewFormat !== format ? [] : null;
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
          let current = ahead.take(cell.e164, highestId) ?? journal.verdict(cell.e164);
          while (!final && current?.state !== 'done') {
            await waitForAnswers();
            ahead.answered();
            current = journal.verdict(cell.e164);
          }
          const verdict = current; // (a const: TypeScript narrows it through firstRow below)
          if (verdict?.result === 'failed' && verdict.credits > 0) chargedFailure = true;
          const firstRow = verdict !== undefined && verdict.id > highestId;
          if (firstRow) highestId = verdict.id;
          const own = scrub.complete(
            cellsFor(cell.e164, cell.country, verdict, stopped, firstRow, notSent, format),
            verdict,
          );
          own.push(...callingCells(calling, cell.e164, cell.country));
          if (firstRow && own[C.result] === 'callable') dialNumbers += `${cell.e164}\n`;
          if (own[C.source] && !isHttpsUrl(own[C.source]) && !own[C.source].startsWith('internal:'))
            summary.notHttpsSources++;
          per.push(several ? own : withNote(own, cell));
          if (perReview) {
            const mine = cellsFor(cell.e164, cell.country, verdict, stopped, firstRow, notSent, reviewFormat);
            perReview.push(several ? scrub.complete(mine, verdict) : withNote(scrub.complete(mine, verdict), cell));
          }
          firstSeen.push(firstRow);
        }
        const cells = several ? rowCells(per, numbers, firstSeen, layout.phoneLabels) : per[0]!;
        const result = cells[C.result] as DncResult;
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
        // By country: each row's with one phone column, each number's with several (an empty cell is no number).
        for (const own of several ? per.filter((n) => n[C.errorCode] !== 'missing_number') : [cells]) {
          let perCountry = summary.byCountry.get(own[C.country]!);
          if (!perCountry) summary.byCountry.set(own[C.country]!, (perCountry = emptyResultCounts()));
          perCountry[own[C.result] as DncResult]++;
        }
        tally.add(cells);
        scrub.count(cells);
        main.row(input, typed, cells, result);
        if (!several) {
          if (result === 'callable') callable?.row(input, typed, []);
          else if (result === 'do_not_call') suppressed?.row(input, typed, []);
          else if (result !== 'pending') {
            const r = perReview?.[0] ?? cells;
            review?.row(input, typed, [cells[C.e164]!, result, r[C.errorCode]!, r[C.error]!], result);
          }
          continue;
        }
        // A dialler's list never shows a number that was not found callable: the row's other phone cells are emptied.
        if (callable && per.some((n) => n[C.result] === 'callable')) {
          const fields = [...input];
          const kept = typed ? [...typed] : undefined;
          per.forEach((n, k) => {
            if (n[C.result] === 'callable') return;
            const at = layout.phoneIndexes[k]!;
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
      for (const l of lanes) await l.flush();
      if (dial && dialNumbers) await dial.write(dialNumbers);
    }
    while (!final) await waitForAnswers();
    if (hash.digest('hex') !== inputSha256) {
      throw inputError(
        'E_INPUT_CHANGED',
        `${meta.inputPath} has changed since this batch began (its SHA-256 differs)`,
        {
          hint: 'put the original file back, or start over with --restart',
        },
      );
    }
    for (const l of lanes) await l.finish();
    // Every file on the disk (each one's fsync, side by side) before the first is renamed into place.
    await Promise.all(files.map((f) => f.written().catch(() => {})));
    for (const f of files) {
      try {
        await f.commit();
      } catch (err) {
        throw outputError(err, f.target);
      }
      summary.written.push({ path: f.path, sha256: f.sha256, bytes: f.bytes });
    }
  } catch (err) {
    await Promise.all(files.map((f) => f.abort()));
    throw err;
  }
  summary.tally = tally.done();
  summary.compliance = scrub.manifestFields();
  return summary;
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
