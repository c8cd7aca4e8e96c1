// The look-up stage: the numbers left sent (src/batch/lookups.ts runs the scheduler), the credit guard said as soon
// as the numbers are weighed, and the outputs begun while the last answers come.
import type { DncError } from '../../errors.js';
import type { BatchJournal } from '../../journal/journal.js';
import { renderEarly } from '../../results/render.js';
import * as compliance from '../../compliance/batch-compliance.js';
import * as evidence from '../../evidence/batch-evidence.js';
import * as beforeSending from '../before-lookups.js';
import { numbersOfThisRun, rememberCosts, runLookups } from '../lookups.js';
import { renderableEarly, threadWorth } from '../render-early.js';
import type { SchedulerOutcome, SchedulerProgress } from '../scheduler.js';
import type { OpenRun, Plan } from './context.js';

export interface Estimate {
  numbers: number;
  credits: number;
}

/** How the lookups ended: the write stage renders a run `done` (or with `none` to send), `stopped` as a stop. */
export type LookedUp =
  | { kind: 'none'; outcome: null; estimate: Estimate }
  | { kind: 'done'; outcome: SchedulerOutcome; estimate: Estimate | null }
  | { kind: 'stopped'; outcome: SchedulerOutcome; fatal: DncError; estimate: Estimate | null }
  | { kind: 'abandoned' };

const nothing = () => {};

export async function lookUpStage(run: OpenRun, plan: Plan): Promise<LookedUp> {
  const { ctx, journal } = run;
  // Lists and reused verdicts may have answered every number: then nothing is sent.
  if (run.reading === null && journal.unsentCount() === 0) {
    run.background.add('registering the run', beforeSending.registerRun(ctx, ctx, journal, run.serviceOrigin));
    journal.setStoppedReason(null);
    return { kind: 'none', outcome: null, estimate: { numbers: 0, credits: 0 } };
  }
  const client = (run.client = await run.clientReady);
  const reading = run.reading;
  const toWeigh =
    reading === null ? Promise.resolve<Pick<BatchJournal, 'nextQueued'>>(journal) : numbersOfThisRun(journal, reading);
  await sayReusable(run, plan, toWeigh);
  const guarding = guardCredits(run, plan, toWeigh);
  if (reading === null) await guarding;
  const { onProgress, drained } = await beginEarlyRender(run);
  const lookups = runLookups(ctx, journal, client, run.options, plan.costs, reading, {
    answered: (p) => (onProgress(p), run.early?.answered()),
    drained,
  });
  const firstSentOrOver = Promise.race([client.firstLookupsSent?.(), lookups.then(nothing, nothing)]);
  run.background.add(
    'registering the run',
    firstSentOrOver.then(() => beforeSending.registerRun(ctx, ctx, journal, run.serviceOrigin)),
  );
  const outcome = await lookups;
  run.lookupsOver();
  await run.renderStarting;
  run.abandoned = outcome.abandoned;
  if (run.abandoned) {
    await run.early?.abort();
    // Not rendered (the user asked to stop at once), but the journal says why the rest is not checked.
    try {
      journal.setStoppedReason('interrupted');
    } catch {
      // The answers are committed; a rerun records the reason again.
    }
    return { kind: 'abandoned' };
  }
  run.background.add('syncing the journal', journal.syncLogInBackground());
  // Its lines come before the summary (a second Ctrl-C does not wait for the balance).
  const estimate = await guarding;
  // Nothing more is asked of the service (the guard had its balance).
  run.clientClosed = client.close();
  // Awaited by the settle stage (where a failure to close fails the run, as before).
  run.clientClosed.catch(() => {});
  if (outcome.fatal) {
    await run.early?.abort();
    return { kind: 'stopped', outcome, fatal: outcome.fatal, estimate };
  }
  journal.setStoppedReason(outcome.stoppedReason);
  run.background.add('remembering the costs', rememberCosts(ctx, journal));
  // An opt-out recorded while the lookups ran is never written callable: its rows are rendered afresh.
  if ((await compliance.applyLateOptOuts(ctx, journal, run.options.compliance ?? {})) > 0) {
    await run.early?.abort();
    run.early = run.renderThread = null;
  }
  return { kind: 'done', outcome, estimate };
}

/**
 * Fresh verdicts in the results cache are said before the first lookup: the lookups wait for the numbers weighed
 * (the list, or its first thousand numbers: a few milliseconds of reading), only when there are any.
 */
async function sayReusable(
  run: OpenRun,
  plan: Plan,
  toWeigh: Promise<Pick<BatchJournal, 'nextQueued'>>,
): Promise<void> {
  const reusable = run.reusable;
  if (!reusable) return;
  run.reading?.lookupsStarted(); // (reading would otherwise wait for the first lookups before its second chunk)
  const line = await beforeSending.reusableGuardLine(
    reusable,
    await toWeigh,
    plan.costs,
    plan.willSend,
    run.reading?.reading === true,
    new Set(plan.recentOutcome?.answers.map((a) => a.id)), // (the answers of the last day were said already)
  );
  run.reusable = null; // (closed)
  if (line) run.ctx.info(`dnc: ${line}`);
}

/**
 * The credit guard: warns of a shortfall, never blocks. While the list is read, lookups do not wait for the balance:
 * it is checked when it comes, over the numbers read so far. Never rejects: a guard that cannot be made is skipped.
 */
function guardCredits(
  run: OpenRun,
  plan: Plan,
  toWeigh: Promise<Pick<BatchJournal, 'nextQueued'>>,
): Promise<Estimate | null> {
  const { ctx } = run;
  const usage = { usage: () => plan.balance ?? run.client!.usage() };
  return toWeigh
    .then((unsent) => beforeSending.creditShortfall(usage, unsent, plan.costs, plan.willSend))
    .then(
      (guard) => {
        ctx.debug(beforeSending.estimateLine(guard.estimate));
        for (const line of guard.lines) ctx.warn(`dnc: ${line}`);
        if (guard.lines.length > 0 && run.reading?.reading)
          ctx.warn('dnc: (an estimate over the numbers read so far: the list is still being read)');
        if (guard.balanceError)
          ctx.debug(`credit guard skipped: the balance could not be read (${(guard.balanceError as Error).message})`);
        return guard.estimate;
      },
      (err: unknown) => {
        ctx.debug(`credit guard skipped: ${(err as Error).message}`);
        return null;
      },
    );
}

/**
 * The outputs render while the lookups run: in a thread of their own (early-render-thread.ts) once the lookups show
 * this thread mostly waiting for answers (see threadWorth). Otherwise on this one from when nothing more is to be
 * sent (see renderEarly): rendered earlier, between answers, each slice of rows held the next lookups back as long.
 * Returns what the scheduler calls after each answer and once nothing more is to be sent.
 */
async function beginEarlyRender(
  run: OpenRun,
): Promise<{ onProgress: (p: SchedulerProgress) => void; drained: () => void }> {
  const { ctx, journal } = run;
  const over = new Promise<void>((resolve) => (run.lookupsOver = resolve));
  let drained = () => {};
  const nothingMoreToSend = new Promise<void>((resolve) => (drained = resolve));
  const thread =
    ctx.renderThreadFile !== null && (await renderableEarly(run.paths, run.layout, run.options))
      ? await import('../early-render-thread.js')
      : null;
  const workerFile = thread ? (ctx.renderThreadFile ?? thread.bundledRenderWorker()) : null;
  if (!thread || !workerFile) {
    run.renderStarting = Promise.race([nothingMoreToSend, over]).then(() => {
      try {
        run.early = renderEarly(journal, Promise.resolve(), run.rendering);
      } catch (err) {
        // Then rendered at the end only (where the same failure is met again and reported typed).
        ctx.debug(`the outputs are rendered after the lookups: ${(err as Error).message}`);
      }
    });
    return { onProgress: () => {}, drained };
  }
  const worth = threadWorth();
  run.renderStarting = Promise.resolve();
  // The results cache is filled on this thread while that one writes the last rows (see the write stage): it is
  // opened while the last answers come, when this thread mostly waits.
  void nothingMoreToSend.then(() => {
    if (!run.renderThread) return;
    run.cacheOpening = evidence.openResultsCache(ctx, run.serviceOrigin);
    // Its failure is said where the cache is filled (the write stage), or does not matter: nothing was filled.
    run.cacheOpening.catch(() => {});
  });
  const onProgress = (p: SchedulerProgress) => {
    if (run.renderThread || !worth(p)) return;
    run.early = run.renderThread = thread.renderEarlyInThread(journal, workerFile, ctx.tzdataVersion);
    ctx.debug('the outputs are rendered in a thread of their own while the lookups run');
  };
  return { onProgress, drained };
}
