// The batch use case: checks paths and options, owns the journal's lifecycle and lock, runs the lookups,
// renders the outputs and evidence, and returns what happened. It never prints: it emits typed events,
// and `src/commands/batch.ts` shows them and picks the exit code.
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { deleteJournalFiles } from '../journal/files.js';
import { isBatchJournalFile } from '../journal/views.js';
import { lockHolder } from '../journal/lock.js';
import { scrubRowsOf } from '../compliance/batch-compliance.js';
import path from 'node:path';
import { DncError, ExitCode, inputError, usageError } from '../errors.js';
import type { ServiceClient } from '../service/client.js';
import { acquireJournalLock, BatchJournal, type ResultOptions } from '../journal/journal.js';
import type { ResultsCache } from '../stores/interfaces.js';
import type { ReusableCounter } from './reusable.js';
import type { ThreadEarlyRender } from './early-render-thread.js';
import type { SchedulerOutcome, SchedulerProgress } from './scheduler.js';
import { formatInteger } from '../text/numbers.js';
import type { TableLayout } from '../tables/layout.js';
import { checkFiles, checkOptions, rememberedRun, resumeCommand, withRememberedOptions } from './options.js';
import { adoptTeamVerdicts, numbersOfThisRun, rememberCosts, runLookups } from './lookups.js';
import { renderableEarly, threadWorth } from './render-early.js';
import { spoolStdin, withKeptInput } from './spool.js';
import { type BatchOptions, type BatchRunDeps, type BatchRunResult, runContext, type RunContext } from './job.js';
import { type Reading, readInput } from './read-input.js';
import { failedFacts, type JournalBatch, prepareJournal } from './resume.js';
import { dryRun } from './dry-run.js';
import { type BatchPaths, makeFolder } from './paths.js';
import { manifestPathFor } from '../evidence/manifest.js';
import { openInputLayout } from '../tables/input.js';
import { keptFolder, stateDir } from '../paths.js';
import { DNC_COLUMNS } from '../results/columns.js';
import { hashFile } from '../file-hash.js';
import { PhoneCaches } from '../phone/phone-cache.js';
import {
  renderBatchOutput,
  renderEarly,
  type EarlyRender,
  type RenderOptions,
  type RenderSummary,
} from '../results/render.js';
import * as batchPaths from './paths.js';
import * as compliance from '../compliance/batch-compliance.js';
import * as calling from './calling.js';
import * as evidence from '../evidence/batch-evidence.js';
import * as beforeSending from './before-lookups.js';
import type { RecentAnswers } from './recent-answers.js';
import { paidAgain, sendingOf, settleRecent, type RecentOutcome } from './repay.js';
import { BackgroundWork } from './background.js';

export async function runBatchJob(input: string, given: BatchOptions, deps: BatchRunDeps): Promise<BatchRunResult> {
  const ctx = runContext(deps);
  const remembered = await withRememberedOptions(ctx, input, given);
  const { resumedWith } = remembered;
  let { options } = remembered;
  if (resumedWith.length > 0)
    ctx.info(`Resuming with the options this batch was started with: ${resumedWith.join(' ')}`);
  const paths = await checkOptions(ctx, input, options);
  // Where the journal and manifest go is known now unless they follow the input's content (-o -, a FIFO):
  // then no file can collide or be refused before the input is read.
  let early: { journalPath: string; manifestPath: string } | null = null;
  if (!options.dryRun && (options.journal !== undefined || paths.output.kind === 'file')) {
    const journalPath =
      options.journal !== undefined
        ? batchPaths.resolveOutputTarget('--journal', options.journal, ctx.cwd).path
        : batchPaths.journalPathFor(paths.outputPath);
    const manifestPath =
      paths.output.kind === 'file'
        ? manifestPathFor(paths.outputPath)
        : journalPath.replace(/\.sqlite$/, '') + '.manifest.json';
    await checkFiles(paths, journalPath, manifestPath);
    early = { journalPath, manifestPath };
  } else if (!options.dryRun) {
    // The journal and manifest follow the input's content: the files already named are checked before it is read.
    await checkFiles(paths, null, null);
  }
  // Configuration problems surface before the input is read, not after.
  const serviceOrigin = options.dryRun ? null : new URL((await ctx.serviceConfig()).baseUrl.value).origin;
  // A team store that cannot be reached (or is newer than this dnc) stops the batch before anything is read or sent.
  if (!options.dryRun) await (await ctx.stores()).ready();
  /** The state folder, where a batch whose output is not a file keeps its journal: exit 3 when it cannot be. */
  const stateFolderFor = (c: RunContext, what: string): string => {
    const dir = keptFolder(c.env, c.homedir, 'state');
    if (dir !== null) return dir;
    const why = `the home folder ${c.homedir} does not exist (dnc does not create it)`;
    throw inputError('E_OUTPUT_UNWRITABLE', `cannot keep ${what} in the state folder: ${why}`, {
      hint: 'give --journal PATH, or set HOME to a folder that exists (or XDG_STATE_HOME); nothing was sent',
    });
  };
  // Standard input is read once, into a spool that every render reads again (as it reads an input file).
  const spool = paths.fromStdin
    ? await spoolStdin(
        ctx,
        paths.inputPath,
        paths.output.kind === 'file'
          ? path.dirname(paths.outputPath)
          : early
            ? path.dirname(early.journalPath)
            : path.join(stateFolderFor(ctx, 'the list read from standard input'), 'batches'),
      )
    : null;
  try {
    const open = (columns: string[] | undefined) =>
      openInputLayout(spool?.tmp ?? paths.inputPath, {
        delimiter: options.delimiter,
        columns,
        countryColumn: options.countryColumn,
        // A country column is found by its name for a new batch only: a resumed one reads its rows as it began.
        detectCountryColumn: !remembered.resumed,
        header: options.header,
        sheet: options.sheet,
        skipRows: options.skipRows,
        encoding: options.encoding,
      });
    const layout = await open(options.column).catch(async (err: unknown) => {
      // Not sure which columns hold the numbers: asked on a terminal, else exit 2 naming them.
      const candidates = (err as DncError).details?.candidates as string[] | undefined;
      if (!(err instanceof DncError) || err.code !== 'E_COLUMN_AMBIGUOUS' || !candidates || !ctx.askColumns) throw err;
      const answer = await ctx.askColumns({ input, candidates });
      if (!answer) throw err;
      options = { ...options, column: [answer] };
      return open(options.column);
    });
    if (layout.countryDetected && layout.countryIndex !== null && layout.countryIndex !== undefined) {
      // Remembered as if given: a rerun reads the rows as this run does.
      options = { ...options, countryColumn: layout.header ? layout.countryLabel : String(layout.countryIndex + 1) };
    }
    // A results file scrubbed again would carry two dnc_result columns: a reader taking the first sees the old verdict.
    const stale = (layout.header ?? []).filter((h) => (DNC_COLUMNS as readonly string[]).includes(h.trim()));
    if (stale.length > 0) {
      throw inputError(
        'E_INPUT_HAS_RESULTS',
        `${input === '-' ? 'standard input' : input} already has dnc columns (${stale.join(', ')}): it is a ` +
          `results file`,
        {
          hint:
            'scrub the original call list, or remove the dnc_* columns first (a second set would sit beside ' +
            'the first, and a dialler reading the first would see old verdicts)',
        },
      );
    }
    const resultOptions: ResultOptions = {
      country: paths.country ?? null,
      delimiter: layout.delimiter,
      header: options.header,
      phoneIndex: layout.phoneIndexes[0]!,
      ...(layout.phoneIndexes.length > 1 ? { phoneIndexes: layout.phoneIndexes } : {}),
      ...(layout.countryIndex !== null && layout.countryIndex !== undefined
        ? { countryIndex: layout.countryIndex }
        : {}),
      webhookUrl: options.webhookUrl ?? null,
      webhookAll: options.webhookAll,
    };
    if (options.dryRun) {
      // The journal a real run would use, to say what a rerun would send (read only: a dry run never creates or changes
      // it).
      const journalOf = async (sha256: string): Promise<string | null> => {
        if (options.restart) return null;
        if (options.journal !== undefined)
          return batchPaths.resolveOutputTarget('--journal', options.journal, ctx.cwd).path;
        if (paths.output.kind === 'file') return batchPaths.journalPathFor(paths.outputPath);
        return batchPaths.streamJournalPath(stateDir(ctx.env, ctx.homedir), spool?.sha256 ?? sha256, resultOptions);
      };
      return { kind: 'dry-run', report: await dryRun(ctx, input, layout, resultOptions, options, journalOf) };
    }
    let journalPath = early?.journalPath;
    if (journalPath === undefined) {
      const sha256 = spool?.sha256 ?? (await hashFile(paths.inputPath));
      journalPath = batchPaths.streamJournalPath(stateFolderFor(ctx, 'the journal'), sha256, resultOptions);
      makeFolder(path.dirname(journalPath), 'the journal');
    }
    const manifestPath = early?.manifestPath ?? journalPath.replace(/\.sqlite$/, '') + '.manifest.json';
    if (!early) await checkFiles(paths, journalPath, manifestPath);
    return await withKeptInput(spool, journalPath, options.restart, (kept) => {
      if (kept) paths.inputPath = layout.path = kept;
      return runBatchJournal(
        ctx,
        input,
        options,
        paths,
        layout,
        resultOptions,
        serviceOrigin!,
        journalPath,
        manifestPath,
      );
    });
  } finally {
    if (spool) await rm(spool.tmp, { force: true });
  }
}

async function runBatchJournal(
  ctx: RunContext,
  input: string,
  options: BatchOptions,
  paths: BatchPaths,
  layout: TableLayout,
  resultOptions: ResultOptions,
  serviceOrigin: string,
  journalPath: string,
  manifestPath: string,
): Promise<BatchRunResult> {
  const startedAt = ctx.now();
  const lockDeps = ctx.lockDeps;
  await readyJournalPath(ctx, journalPath, options);
  // A list refused at its first read (malformed, a workbook bomb) must not leave an empty journal made by this run.
  const journalIsNew = !existsSync(journalPath);
  let discardJournal = false;
  const lock = acquireJournalLock(journalPath, lockDeps);
  let journal: BatchJournal | undefined;
  let client: ServiceClient | undefined;
  let abandoned = false;
  let reading: Reading | null = null;
  // Work that goes on beside the render (the journal's log on its way to disk, the learned costs written): settled
  // before the journal closes.
  const background = new BackgroundWork();
  // After the last answer, the client's sockets close and the cost cache is written (a file synced) while the
  // output renders: both wait on the kernel, not on this thread. Awaited before the journal closes.
  let clientClosed: Promise<void> | null = null;
  let early = null as EarlyRender | null;
  // The same, when it runs in a thread; and the results cache, opened ahead when it does (see below).
  let renderThread = null as ThreadEarlyRender | null;
  let cacheOpening = null as Promise<ResultsCache> | null;
  let renderStarting: Promise<void> | null = null;
  let reusable = null as ReusableCounter | null;
  let recent = null as RecentAnswers | null;
  let recentOutcome = null as RecentOutcome | null;
  let estimate = null as { numbers: number; credits: number } | null;
  let lookupsOver = () => {};
  let onProgress: (progress: SchedulerProgress) => void = () => {};
  // The client is needed only at the first lookup: loading it (undici) overlaps the journal's creation and
  // the first reads; the balance for the credit guard is asked as soon as lookups are known to come.
  const clientReady = ctx.createClient({ connections: options.concurrency });
  clientReady.catch(() => {}); // awaited below, or closed in the finally
  try {
    // The calling settings are checked before the journal is made (a bad file leaves nothing behind).
    const callingNow = await calling.callingInEffect(ctx, options.callingSettings);
    journal = await BatchJournal.open(journalPath, { create: true }, ctx.now);
    const phones = new PhoneCaches(resultOptions.country ?? undefined);
    const rendering = { phones, stdout: ctx.io.stdout, scrubRows: scrubRowsOf, tzdataVersion: ctx.tzdataVersion };
    const batch: JournalBatch = {
      layout,
      resultOptions,
      paths,
      input,
      serviceOrigin,
      calling: calling.recordedCalling(ctx, journal.meta(), callingNow),
      rendering: {
        escapeFormulas: options.escapeFormulas === true,
        outputFormat: options.format,
        outputEncoding: options.outputEncoding,
        manifestPath: paths.output.kind === 'file' ? undefined : manifestPath,
        reviewOut: paths.reviewOut,
        dialOut: paths.dialOut,
        run: rememberedRun(options, paths),
      },
    };
    const applyLists = () => compliance.applyListsBeforeLookups(ctx, journal!, options.compliance ?? {});
    let listsApplied = false;
    // Fresh verdicts of these numbers in the results cache are said before the first lookup (see below): asked only
    // when --reuse-within was not given and the cache holds recent verdicts of this service; those of the last day
    // are decided on (src/batch/repay.ts).
    if ((options.reuseWithinMs ?? null) === null) {
      recent = await beforeSending.recentAnswersOf(ctx, serviceOrigin, options.compliance ?? {});
      reusable = await beforeSending.reusableCounter(ctx, serviceOrigin, options.compliance ?? {});
    }
    if ((await prepareJournal(ctx, journal, batch, options)) === 'read') {
      // Lookups start while the list is read, unless a number read later would need treatment before it may
      // be sent: the internal list and its exemptions (applied from the list's side, over the journal's
      // numbers), --reuse-within (verdicts taken from the results cache) and answers of the last day in the cache
      // (reused or paid again as decided over the whole list) need the whole list first.
      // Without a list nothing of what applyLists does depends on which numbers are read, so it runs first.
      let streaming = (options.reuseWithinMs ?? null) === null && recent === null;
      if (streaming) streaming = listsApplied = (await applyLists()).list === null;
      reading = await readInput(ctx, journal, batch, phones, streaming);
    }
    const adopted = await adoptTeamVerdicts(ctx, journal, serviceOrigin, options);
    if (adopted > 0)
      ctx.info(`${formatInteger(adopted)} pending number(s) answered by a colleague's webhook lookup (the team store)`);
    const lookupsAhead = reading !== null || journal.unsentCount() > 0;
    const balance = lookupsAhead ? clientReady.then((c) => c.usage()) : null;
    balance?.catch(() => {}); // read by the guard below
    if (!listsApplied) await applyLists();
    await beforeSending.beforeLookups(ctx, ctx, journal, {
      service: serviceOrigin,
      reuseWithinMs: options.reuseWithinMs ?? null,
      compliance: options.compliance ?? {},
    });
    // The guard warns, it never blocks: while the list is read, lookups do not wait for the balance (it
    // is checked when it comes, and says "so far" while reading goes on).
    const sending = await sendingOf(ctx, journal, options, serviceOrigin);
    const { costs, willSend } = sending;
    if (recent) ({ options, outcome: recentOutcome } = await settleRecent(ctx, journal, recent, options, sending));

    let outcome: SchedulerOutcome | null = null;
    // Lists and reused verdicts may have answered every number: then nothing is sent.
    if (reading !== null || journal.unsentCount() > 0) {
      client = await clientReady;
      const toWeigh =
        reading === null
          ? Promise.resolve<Pick<BatchJournal, 'nextQueued'>>(journal)
          : numbersOfThisRun(journal, reading);
      // Fresh verdicts in the results cache are said before the first lookup: the lookups wait for the numbers
      // weighed (the list, or its first thousand numbers: a few milliseconds of reading), only when there are any.
      if (reusable) {
        reading?.lookupsStarted(); // (reading would otherwise wait for the first lookups before its second chunk)
        const line = await beforeSending.reusableGuardLine(
          reusable,
          await toWeigh,
          costs,
          willSend,
          reading?.reading === true,
          new Set(recentOutcome?.answers.map((a) => a.id)), // (the answers of the last day were said already)
        );
        reusable = null; // (closed)
        if (line) ctx.info(`dnc: ${line}`);
      }
      const usage = { usage: () => balance ?? client!.usage() };
      const guarding = toWeigh
        .then((unsent) => beforeSending.creditShortfall(usage, unsent, costs, willSend))
        .then(
          (guard) => {
            estimate = guard.estimate;
            ctx.debug(beforeSending.estimateLine(guard.estimate));
            for (const line of guard.lines) ctx.warn(`dnc: ${line}`);
            if (guard.lines.length > 0 && reading?.reading)
              ctx.warn('dnc: (an estimate over the numbers read so far: the list is still being read)');
            if (guard.balanceError)
              ctx.debug(
                `credit guard skipped: the balance could not be read (${(guard.balanceError as Error).message})`,
              );
          },
          (err: unknown) => ctx.debug(`credit guard skipped: ${(err as Error).message}`),
        );
      if (reading === null) await guarding;
      // The outputs render while the lookups run: in a thread of their own (early-render-thread.ts) once the
      // lookups show this thread mostly waiting for answers (see threadWorth). Otherwise on this one from when
      // nothing more is to be sent (see renderEarly): rendered earlier, between answers, each slice of rows held
      // the next lookups back as long.
      const over = new Promise<void>((resolve) => (lookupsOver = resolve));
      let drained = () => {};
      const nothingMoreToSend = new Promise<void>((resolve) => (drained = resolve));
      const thread =
        ctx.renderThreadFile !== null && (await renderableEarly(paths, layout, options))
          ? await import('./early-render-thread.js')
          : null;
      const workerFile = thread ? (ctx.renderThreadFile ?? thread.bundledRenderWorker()) : null;
      if (thread && workerFile) {
        const worth = threadWorth();
        renderStarting = Promise.resolve();
        onProgress = (p) => {
          if (renderThread || !worth(p)) return;
          early = renderThread = thread.renderEarlyInThread(journal!, workerFile, ctx.tzdataVersion);
          ctx.debug('the outputs are rendered in a thread of their own while the lookups run');
        };
        // The results cache is filled on this thread while that one writes the last rows (see below): it is
        // opened while the last answers come, when this thread mostly waits.
        void nothingMoreToSend.then(() => {
          if (!renderThread) return;
          cacheOpening = evidence.openResultsCache(ctx, serviceOrigin);
          cacheOpening.catch(() => {}); // (said when it is filled)
        });
      } else {
        renderStarting = Promise.race([nothingMoreToSend, over]).then(async () => {
          early = renderEarly(journal!, Promise.resolve(), rendering);
        });
        renderStarting.catch(() => {}); // then rendered at the end only
      }
      outcome = await runLookups(ctx, journal, client, options, costs, reading, {
        answered: (p) => (onProgress(p), early?.answered()),
        drained,
      });
      lookupsOver();
      await renderStarting.catch(() => {});
      abandoned = outcome.abandoned;
      if (!abandoned) background.add(journal.syncLogInBackground());
      // Its lines come before the summary (a second Ctrl-C does not wait for the balance).
      if (!abandoned) {
        await guarding;
        // Nothing more is asked of the service (the guard had its balance).
        clientClosed = client.close();
        clientClosed.catch(() => {}); // awaited in the finally
      }
      if (abandoned || outcome.fatal) await early?.abort();
      if (abandoned) {
        // Not rendered (the user asked to stop at once), but the journal says why the rest is not checked.
        try {
          journal.setStoppedReason('interrupted');
        } catch {
          // The answers are committed; a rerun records the reason again.
        }
        return { kind: 'abandoned' };
      }
      if (outcome.fatal)
        return await finishStopped(ctx, journal, outcome, outcome.fatal, {
          extras: { paidAgain: paidAgain(journal, recentOutcome), estimate },
          input,
          options,
          paths,
          rendering,
          startedAt,
          journalPath,
        });
      journal.setStoppedReason(outcome.stoppedReason);
      background.add(rememberCosts(ctx, journal));
      // An opt-out recorded while the lookups ran is never written callable: its rows are rendered afresh.
      if ((await compliance.applyLateOptOuts(ctx, journal, options.compliance ?? {})) > 0) {
        await early?.abort();
        early = renderThread = null;
      }
    } else {
      estimate = { numbers: 0, credits: 0 }; // (every number answered before a lookup was needed)
      journal.setStoppedReason(null);
    }

    // A render thread writes its last rows once this thread has confirmed that no other process wrote to the
    // journal: the results cache is filled here meanwhile (afterRender would do it after them).
    const finishing = early?.finish() ?? Promise.resolve(null);
    const service = journal.meta()?.serviceOrigin ?? null;
    const opening = cacheOpening;
    const verdictsRemembered =
      renderThread && opening
        ? renderThread.whenConfirmed().then(() => evidence.rememberVerdictsIn(opening, journalPath, service))
        : undefined;
    let summary = await finishing;
    if (summary) ctx.debug('the outputs were rendered while the lookups ran');
    else {
      if (early?.droppedBecause) ctx.debug(`the outputs are rendered after the lookups: ${early.droppedBecause}`);
      // (Loaded only now: a render in a thread leaves this one without it.)
      summary = await renderBatchOutput(journal, rendering);
    }
    const unansweredSends = journal.unansweredSends();
    await evidence.afterRender(ctx, ctx, journal, {
      baseUrl: (await ctx.serviceConfig()).baseUrl.value,
      startedAt,
      rendered: summary,
      unansweredSends,
      verdictsRemembered,
    });
    if (summary.notHttpsSources > 0) {
      ctx.warn(
        `dnc: warning: ${formatInteger(summary.notHttpsSources)} row(s) have a register source that is not an ` +
          `https URL (the service promises one); check them with \`dnc trace\``,
      );
    }
    const after = journal.summaryCounts();
    return {
      kind: 'finished',
      summary,
      counts: after,
      stopped: outcome?.stoppedReason ?? null,
      creditsThisRun: outcome?.creditsThisRun ?? 0,
      sent: outcome?.sent ?? 0,
      elapsedMs: outcome?.elapsedMs ?? 0,
      journalPath,
      outputPath: paths.outputPath,
      maxCredits: options.maxCredits,
      resume: resumeCommand(input, options, paths.outputPath, ctx.cwd),
      ...failedFacts(journal, options),
      paidAgain: paidAgain(journal, recentOutcome),
      estimate,
    };
  } catch (err) {
    const refusedInput = err instanceof DncError && err.exitCode === ExitCode.INPUT;
    const c = journalIsNew && refusedInput ? journal?.summaryCounts() : undefined;
    discardJournal = c !== undefined && c.in_flight + c.done + c.pending === 0 && c.credits === 0;
    throw err;
  } finally {
    // Second Ctrl-C: lookups still in flight are dropped, not awaited (their numbers stay in flight in the journal).
    if (abandoned) await (client?.destroy ?? client?.close)?.call(client).catch(() => {});
    else await (clientClosed ?? client?.close());
    if (!client) await (await clientReady.catch(() => null))?.close();
    // A run that failed before or during its lookups: reading stops before the journal closes under it.
    if (reading?.reading) {
      reading.abort();
      await reading.done.catch(() => {});
    }
    // A run that failed on its way: the render begun early (or beginning) leaves no temporary file behind.
    lookupsOver();
    await renderStarting?.catch(() => {});
    await early?.abort();
    void cacheOpening?.then((c) => c.close()).catch(() => {}); // (a run that stopped before filling it)
    await reusable?.close();
    await recent?.close();
    await background.settled();
    journal?.close();
    lock.release();
    if (discardJournal) deleteJournalFiles(journalPath);
  }
}

/**
 * Before the journal is opened: a file at its path that is not a dnc journal (a list given as --journal, say) is never
 * deleted or written over; --restart removes the journal, unless a batch or a listener holds it.
 */
async function readyJournalPath(ctx: RunContext, journalPath: string, options: BatchOptions): Promise<void> {
  if (existsSync(journalPath) && !(await isBatchJournalFile(journalPath))) {
    throw usageError(
      'E_PATH_COLLISION',
      `${journalPath} is not a dnc batch journal: dnc will not write over it${options.restart ? ' or delete it' : ''}`,
      {
        hint:
          options.journal !== undefined
            ? 'give --journal a new file name'
            : 'move that file away, or give -o another name',
      },
    );
  }
  if (options.restart && existsSync(journalPath)) {
    const holder = lockHolder(journalPath, ctx.lockDeps);
    if (holder !== null) {
      throw usageError('E_JOURNAL_BUSY', `cannot restart: another dnc batch (pid ${holder}) is using ${journalPath}`, {
        hint: 'stop it first (Ctrl-C), then run with --restart again',
      });
    }
    // A listener would go on acknowledging pushes into the removed journal: those results would be lost.
    const listener = lockHolder(journalPath, ctx.lockDeps, 'listen');
    if (listener !== null) {
      throw usageError(
        'E_JOURNAL_BUSY',
        `cannot restart: dnc listen (pid ${listener}) is storing pushes in ${journalPath}`,
        {
          hint: 'stop it first (Ctrl-C; the pushes it has are kept until then), then run with --restart again',
        },
      );
    }
    deleteJournalFiles(journalPath);
    ctx.info(`--restart: removed the journal ${journalPath}`);
  }
}

/** The end of a batch the service stopped (or that cannot go on): a stop like any other, told how to resume. */
async function finishStopped(
  ctx: RunContext,
  journal: BatchJournal,
  outcome: SchedulerOutcome,
  fatal: DncError,
  run: {
    extras: Pick<Extract<BatchRunResult, { kind: 'finished' }>, 'paidAgain' | 'estimate'>;
    input: string;
    options: BatchOptions;
    paths: BatchPaths;
    rendering: RenderOptions;
    startedAt: Date;
    journalPath: string;
  },
): Promise<BatchRunResult> {
  const { input, options, paths, rendering, startedAt, journalPath } = run;
  // A stop like any other: the output shows every answer so far, the rest not_checked with the reason.
  const reason = outcome.stoppedReason ?? 'service_failure';
  let partial: RenderSummary | null = null;
  try {
    journal.setStoppedReason(reason);
    partial = await renderBatchOutput(journal, rendering);
    await evidence.afterRender(ctx, ctx, journal, {
      baseUrl: (await ctx.serviceConfig()).baseUrl.value,
      startedAt,
      rendered: partial,
    });
    ctx.warn(`dnc: ${paths.outputPath} holds the answers so far; the rest are not_checked (${reason})`);
  } catch (renderError) {
    const why = (renderError as Error).message;
    ctx.warn(
      partial
        ? `dnc: ${paths.outputPath} holds the answers so far (the rest not_checked), but its evidence ` +
            `manifest could not be written (${why})`
        : `dnc: the output could not be written (${why}); the journal keeps every answer`,
    );
  }
  const resume = resumeCommand(input, options, paths.outputPath, ctx.cwd);
  const told = Object.assign(fatal, {
    hint:
      `${fatal.hint ? `${fatal.hint}; then ` : ''}run \`${resume}\` to resume ` +
      `(answered numbers are not sent again)`,
  });
  if (!partial) throw told;
  return {
    kind: 'finished',
    summary: partial,
    counts: journal.summaryCounts(),
    stopped: reason,
    creditsThisRun: outcome.creditsThisRun,
    sent: outcome.sent,
    elapsedMs: outcome.elapsedMs,
    journalPath,
    outputPath: paths.outputPath,
    maxCredits: options.maxCredits,
    resume,
    ...failedFacts(journal, options),
    fatal: told,
    ...run.extras,
  };
}
