// The list read into the journal, one row of numbers at a time, while the lookups of what was read run.
import type { BatchJournal, BatchMeta } from '../journal/journal.js';
import type { PhoneCaches } from '../phone/phone-cache.js';
import type { IncomingNumbers } from './scheduler.js';
import { keyTraceOf, traces, type KeyTrace } from '../key-trace.js';
import { formatInteger } from '../text/numbers.js';
import type { TableLayout } from '../tables/layout.js';
import type { RunContext } from './job.js';
import { type JournalBatch, toLookUpWords } from './resume.js';
import { ingestInput, type ScanResult } from './ingest.js';

/** The input being read into the journal while lookups run: the scheduler's incoming numbers. */
export interface Reading extends IncomingNumbers {
  /** Resolves once every row is in the journal (and the batch's meta says so); rejects as reading does. */
  readonly done: Promise<void>;
  /** Stops reading (a second Ctrl-C, or the run failed before its lookups); `done` then rejects. */
  abort(): void;
  /** Lets reading go on past its first chunk: called once the first lookups are sent. */
  lookupsStarted(): void;
}

/**
 * The traces the journal keeps of the keys it was run with: those it has, and this run's key's when it is another
 * (a rerun with a new key). None is made for a dry run's journal, which nothing is sent with.
 */
async function keyTracesFor(ctx: RunContext, kept: KeyTrace[]): Promise<KeyTrace[]> {
  const key = (await ctx.serviceConfig()).apiKey.value;
  if (kept.some((t) => traces(t, key))) return kept;
  const trace = keyTraceOf(key);
  return trace ? [...kept, trace] : kept;
}

/**
 * Reads the input into the journal. `streaming`: returns at once, the reading going on while lookups run
 * (each chunk's numbers are committed, then announced); otherwise returns null once every row is read.
 * The batch's meta is written first (a crash while reading leaves a journal a rerun recognises) and
 * completed with the input's SHA-256 and size at the end, with the flag that says the input is all there.
 */
export async function readInput(
  ctx: RunContext,
  journal: BatchJournal,
  batch: JournalBatch,
  phones: PhoneCaches,
  streaming: boolean,
): Promise<Reading | null> {
  const { layout, resultOptions, paths, input, serviceOrigin, rendering } = batch;
  ctx.info(readingLine(input, layout));
  const meta: BatchMeta = {
    schema: 1,
    inputPath: paths.inputPath,
    // Known once the input is read: until then a render refuses the journal (the input is not all there).
    inputSha256: '',
    inputSize: 0,
    outputPath: paths.outputPath,
    callableOut: paths.callableOut,
    suppressedOut: paths.suppressedOut,
    options: resultOptions,
    layout: {
      recordDelimiter: layout.recordDelimiter,
      header: layout.header,
      columnCount: layout.columnCount,
      phoneLabel: layout.phoneLabels[0]!,
      ...(layout.phoneLabels.length > 1 ? { phoneLabels: layout.phoneLabels } : {}),
      ...(layout.countryLabel !== undefined ? { countryLabel: layout.countryLabel } : {}),
      bom: layout.bom,
      workbook: layout.workbook,
      encoding: layout.encoding,
      ...(layout.skipRecords ? { skipRecords: layout.skipRecords } : {}),
    },
    createdAt: journal.meta()?.createdAt ?? ctx.now().toISOString(),
    serviceOrigin,
    calling: batch.calling,
    ...(serviceOrigin !== null ? { keyTraces: await keyTracesFor(ctx, journal.meta()?.keyTraces ?? []) } : {}),
    ...rendering,
  };
  journal.setMeta(meta);
  const read = (onNumbers?: (added: number) => void, signal?: AbortSignal, firstNumbersTaken?: Promise<void>) =>
    ingestInput(layout, resultOptions.country ?? undefined, journal, phones, {
      onNumbers,
      signal,
      firstNumbersTaken,
    }).then((scan) => {
      journal.atomically(() => {
        // (What was added to the meta while the list was read, the account its verdicts are cached under, stays.)
        journal.setMeta({ ...(journal.meta() ?? meta), inputSha256: scan.sha256, inputSize: scan.bytes });
        journal.markIngested();
      });
      warnOfFormulas(ctx, layout, scan);
      const c = journal.summaryCounts();
      const distinct = c.queued + c.in_flight + c.done + c.pending;
      const { unsent, words } = toLookUpWords(journal, distinct, resultOptions.webhookUrl);
      ctx.info(
        `${formatInteger(scan.rows)} row(s), ${formatInteger(distinct)} distinct number(s)` +
          (unsent > 0 ? `, ${words}` : ' to look up') +
          `, ${formatInteger(scan.invalidRows)} row(s) with a number that cannot ` +
          `be valid (not sent)` +
          (scan.emptyRows > 0
            ? `, ${formatInteger(scan.emptyRows)} row(s) with no number` +
              (layout.phoneIndexes.length > 1 ? ' in any phone column' : '')
            : ''),
      );
    });
  if (!streaming) {
    await read();
    return null;
  }
  const listeners: Array<(added: number) => void> = [];
  const controller = new AbortController();
  let lookupsStarted = () => {};
  const firstNumbersTaken = new Promise<void>((resolve) => (lookupsStarted = resolve));
  const reading = {
    reading: true,
    subscribe: (listener: (added: number) => void) => void listeners.push(listener),
    abort: () => {
      controller.abort(new Error('reading stopped'));
      lookupsStarted();
    },
    lookupsStarted: () => lookupsStarted(),
    done: Promise.resolve(),
  };
  reading.done = read(
    (added) => {
      for (const l of listeners) l(added);
    },
    controller.signal,
    firstNumbersTaken,
  ).finally(() => {
    reading.reading = false;
    for (const l of listeners) l(0);
  });
  // Awaited by the caller after the lookups; until then a failure must not count as unhandled.
  reading.done.catch(() => {});
  return reading;
}

/**
 * One warning for a workbook whose formulas hold no calculated value (written by a program, never opened in a
 * spreadsheet): their cells read as empty, and a phone cell among them is not_checked.
 */
export function warnOfFormulas(ctx: Pick<RunContext, 'warn'>, layout: TableLayout, scan: ScanResult): void {
  if (!scan.formulas || !layout.workbook) return;
  const { count, first } = scan.formulas;
  ctx.warn(
    `dnc: warning: ${layout.path}: ${formatInteger(count)} formula cell(s) of sheet '${layout.workbook.sheet}' ` +
      `(the first ${first}) have no calculated value: the workbook was never calculated by a spreadsheet, so ` +
      `they read as empty, and a row whose phone number is one is not_checked; open the workbook in Excel or ` +
      `LibreOffice and save it, or export it as CSV, then run again`,
  );
}

/** What is read, named as the user gave it, with what was detected in it. */
export function readingLine(input: string, layout: TableLayout): string {
  const phones = `phone column${layout.phoneLabels.length > 1 ? 's' : ''}: ${layout.phoneLabels.join(', ')}`;
  // A country column found by its name is said to be (it changes how national numbers are read).
  const country =
    layout.countryLabel !== undefined
      ? `, country column: ${layout.countryLabel}${layout.countryDetected ? ' (found by its name)' : ''}`
      : '';
  if (layout.workbook) {
    const hidden = layout.workbook.hidden ? ', a hidden sheet' : '';
    return `Reading ${input}, sheet '${layout.workbook.sheet}'${hidden} (${phones}${country})`;
  }
  const encoding = layout.encoding && layout.encoding !== 'utf-8' ? `, encoding: ${layout.encoding}` : '';
  return (
    `Reading ${input === '-' ? 'standard input' : input} (${phones}${country}, delimiter: ` +
    `${layout.delimiter === '\t' ? 'tab' : layout.delimiter}${encoding})`
  );
}
