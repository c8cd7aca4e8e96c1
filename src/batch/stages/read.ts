// The read stage: the journal opened (or met again) and the input read into it, while the lookups may already run.
import { BatchJournal } from '../../journal/journal.js';
import { proveJournal } from '../../journal/proof.js';
import { keptFolder } from '../../paths.js';
import { journalAnchorIn } from '../../stores/anchors.js';
import { scrubRowsOf } from '../../compliance/batch-compliance.js';
import * as compliance from '../../compliance/batch-compliance.js';
import { PhoneCaches } from '../../phone/phone-cache.js';
import * as calling from '../calling.js';
import * as beforeSending from '../before-lookups.js';
import { optionsOfJournal, rememberedRun } from '../options.js';
import { readInput } from '../read-input.js';
import { prepareJournal, type JournalBatch } from '../resume.js';
import type { BatchRun, OpenRun } from './context.js';

/** The run's journal opened: made, or met again (a rerun), with what rendering and resuming need of the run. */
export async function openStage(run: BatchRun): Promise<OpenRun> {
  const { ctx, options, paths } = run;
  // The calling settings are checked before the journal is made (a bad file leaves nothing behind).
  const callingNow = await calling.callingInEffect(ctx, options.callingSettings);
  const anchor = await journalAnchorIn(keptFolder(ctx.env, ctx.homedir, 'state'), run.journalPath, ctx.now);
  const journal = await BatchJournal.open(run.journalPath, { create: true, anchor }, ctx.now);
  run.journal = journal;
  // Before anything is built from it (an output, the results cache, the team's verdicts): an answer edited behind
  // dnc's back is refused here, with nothing sent, written or shared.
  proveJournal(journal, options.acceptUnprovenJournal === true);
  const phones = new PhoneCaches(run.resultOptions.country ?? undefined);
  const rendering = { phones, stdout: ctx.io.stdout, scrubRows: scrubRowsOf, tzdataVersion: ctx.tzdataVersion };
  const batch: JournalBatch = {
    layout: run.layout,
    resultOptions: run.resultOptions,
    paths,
    input: run.input,
    serviceOrigin: run.serviceOrigin,
    calling: calling.recordedCalling(ctx, journal.meta(), callingNow),
    rendering: {
      escapeFormulas: options.escapeFormulas === true,
      outputFormat: options.format,
      outputEncoding: options.outputEncoding,
      manifestPath: paths.output.kind === 'file' ? undefined : run.manifestPath,
      reviewOut: paths.reviewOut,
      dialOut: paths.dialOut,
      run: rememberedRun(options),
    },
  };
  return Object.assign(run, { journal, batch, rendering, phones });
}

/**
 * The input read into the journal (unless the journal has it already): to its end, or streamed while the lookups run.
 * Returns whether the internal list was applied already (it is, before streaming, when the list has no entries).
 */
export async function readStage(run: OpenRun): Promise<{ listsApplied: boolean }> {
  const { ctx, options, journal } = run;
  let listsApplied = false;
  // Fresh verdicts of these numbers in the results cache are said before the first lookup (see the look-up stage):
  // asked only when --reuse-within was not given and the cache holds recent verdicts of this service; those of the
  // last day are decided on (src/batch/repay.ts).
  if ((options.reuseWithinMs ?? null) === null) {
    run.recent = await beforeSending.recentAnswersOf(ctx, run.serviceOrigin, options.compliance ?? {});
    run.reusable = await beforeSending.reusableCounter(ctx, run.serviceOrigin, options.compliance ?? {});
  }
  if ((await prepareJournal(ctx, journal, run.batch, options)) === 'read') {
    // Lookups start while the list is read, unless a number read later would need treatment before it may
    // be sent: the internal list and its exemptions (applied from the list's side, over the journal's
    // numbers), --reuse-within (verdicts taken from the results cache) and answers of the last day in the cache
    // (reused or paid again as decided over the whole list) need the whole list first.
    // Without a list nothing of what applyLists does depends on which numbers are read, so it runs first.
    let streaming = (options.reuseWithinMs ?? null) === null && run.recent === null;
    if (streaming) streaming = listsApplied = (await applyLists(run)).list === null;
    run.reading = await readInput(ctx, journal, run.batch, run.phones, streaming);
  }
  // From here on the stages read the options as the journal records them (written above, or met again on a resume).
  run.options = optionsOfJournal(run.options, journal.meta());
  return { listsApplied };
}

/** The internal list and its exemptions applied to the journal's numbers. */
export function applyLists(run: OpenRun): ReturnType<typeof compliance.applyListsBeforeLookups> {
  return compliance.applyListsBeforeLookups(run.ctx, run.journal, run.options.compliance ?? {});
}
