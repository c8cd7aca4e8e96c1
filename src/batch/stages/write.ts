// The write stage: the outputs rendered (or finished, when begun while the lookups ran), their evidence written, and
// what happened told; a run the service stopped is written as a stop like any other.
import type { DncError } from '../../errors.js';
import { renderBatchOutput, type RenderSummary } from '../../results/render.js';
import { formatInteger } from '../../text/numbers.js';
import * as evidence from '../../evidence/batch-evidence.js';
import type { BatchRunResult } from '../job.js';
import { resumeCommand } from '../options.js';
import { paidAgain } from '../repay.js';
import { failedFacts } from '../resume.js';
import type { OpenRun, Plan } from './context.js';
import type { LookedUp } from './look-up.js';

type Finished = Extract<BatchRunResult, { kind: 'finished' }>;

export async function writeStage(
  run: OpenRun,
  plan: Plan,
  looked: Extract<LookedUp, { kind: 'none' | 'done' }>,
): Promise<BatchRunResult> {
  const { ctx, journal, options, paths, early, renderThread } = run;
  // A render thread writes its last rows once this thread has confirmed that no other process wrote to the
  // journal: the results cache is filled here meanwhile (afterRender would do it after them).
  const finishing = early?.finish() ?? Promise.resolve(null);
  const service = journal.meta()?.serviceOrigin ?? null;
  const opening = run.cacheOpening;
  const verdictsRemembered =
    renderThread && opening
      ? renderThread.whenConfirmed().then(() => evidence.rememberVerdictsIn(opening, run.journalPath, service))
      : undefined;
  let summary = await finishing;
  if (summary) ctx.debug('the outputs were rendered while the lookups ran');
  else {
    if (early?.droppedBecause) ctx.debug(`the outputs are rendered after the lookups: ${early.droppedBecause}`);
    // (Loaded only now: a render in a thread leaves this one without it.)
    summary = await renderBatchOutput(journal, run.rendering);
  }
  const unansweredSends = journal.unansweredSends();
  await evidence.afterRender(ctx, ctx, journal, {
    baseUrl: (await ctx.serviceConfig()).baseUrl.value,
    startedAt: run.startedAt,
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
  const { outcome } = looked;
  return {
    kind: 'finished',
    summary,
    counts: journal.summaryCounts(),
    stopped: outcome?.stoppedReason ?? null,
    budgetStop: outcome?.budgetStop ?? null,
    creditsThisRun: outcome?.creditsThisRun ?? 0,
    sent: outcome?.sent ?? 0,
    elapsedMs: outcome?.elapsedMs ?? 0,
    journalPath: run.journalPath,
    outputPath: paths.outputPath,
    maxCredits: options.maxCredits,
    resume: resumeCommand(run.input, options, paths.outputPath, ctx.cwd),
    ...failedFacts(journal, options),
    ...extrasOf(run, plan, looked),
  };
}

/** The end of a batch the service stopped (or that cannot go on): a stop like any other, told how to resume. */
export async function writeStoppedStage(
  run: OpenRun,
  plan: Plan,
  looked: Extract<LookedUp, { kind: 'stopped' }>,
): Promise<BatchRunResult> {
  const { ctx, journal, options, paths, outcome } = { ...run, outcome: looked.outcome };
  // A stop like any other: the output shows every answer so far, the rest not_checked with the reason.
  const reason = outcome.stoppedReason ?? 'service_failure';
  const extras = extrasOf(run, plan, looked);
  let partial: RenderSummary | null = null;
  try {
    journal.setStoppedReason(reason);
    partial = await renderBatchOutput(journal, run.rendering);
    await evidence.afterRender(ctx, ctx, journal, {
      baseUrl: (await ctx.serviceConfig()).baseUrl.value,
      startedAt: run.startedAt,
      rendered: partial,
    });
    ctx.warn(stoppedLine(paths.outputPath, partial, reason));
  } catch (renderError) {
    const why = (renderError as Error).message;
    ctx.warn(
      partial
        ? `dnc: ${paths.outputPath} holds the answers so far (the rest not_checked), but its evidence ` +
            `manifest could not be written (${why})`
        : `dnc: the output could not be written (${why}); the journal keeps every answer`,
    );
  }
  const resume = resumeCommand(run.input, options, paths.outputPath, ctx.cwd);
  const told = toldHowToResume(looked.fatal, resume, partial);
  if (!partial) throw told;
  return {
    kind: 'finished',
    summary: partial,
    counts: journal.summaryCounts(),
    stopped: reason,
    creditsThisRun: outcome.creditsThisRun,
    sent: outcome.sent,
    elapsedMs: outcome.elapsedMs,
    journalPath: run.journalPath,
    outputPath: paths.outputPath,
    maxCredits: options.maxCredits,
    resume,
    ...failedFacts(journal, options),
    fatal: told,
    ...extras,
  };
}

function extrasOf(run: OpenRun, plan: Plan, looked: { estimate: Finished['estimate'] }) {
  return { paidAgain: paidAgain(run.journal, plan.recentOutcome), estimate: looked.estimate };
}

/**
 * What the output of a stopped run holds: the rows answered, those never sent (not_checked: a rerun sends them),
 * and those sent without an answer (a timeout, a dropped connection: failed / unanswered_send, maybe charged, sent
 * again only with --resend-unanswered). "The rest are not_checked" was false for the last.
 */
function stoppedLine(output: string, summary: RenderSummary, reason: string): string {
  const never = summary.byResult.not_checked;
  const unanswered = summary.unanswered;
  const parts = [
    ...(never > 0 ? [`${formatInteger(never)} row(s) not_checked (never sent: a rerun sends them)`] : []),
    ...(unanswered > 0
      ? [
          `${formatInteger(unanswered)} row(s) failed / unanswered_send (sent, no answer came: they may have been ` +
            'charged, and a rerun does not send them again)',
        ]
      : []),
  ];
  return `dnc: ${output} holds the answers so far (${reason})${parts.length ? `; ${parts.join('; ')}` : ''}`;
}

/**
 * The stop's hint, with the way on that really finishes the rows: the bare rerun for numbers never sent, and
 * --resend-unanswered (a second charge each if the first went through) for sends that got no answer.
 */
function toldHowToResume(fatal: DncError, resume: string, summary: RenderSummary | null): DncError {
  const never = summary === null || summary.byResult.not_checked > 0;
  const unanswered = summary?.unanswered ?? 0;
  const ways = [
    ...(never ? [`run \`${resume}\` to resume (answered numbers are not sent again)`] : []),
    ...(unanswered > 0
      ? [
          `\`${resume} --resend-unanswered\` sends the ${formatInteger(unanswered)} unanswered number(s) again ` +
            '(a second charge each if the first went through: `dnc usage --reconcile` compares with the service first)',
        ]
      : []),
  ];
  return Object.assign(fatal, { hint: `${fatal.hint ? `${fatal.hint}; then ` : ''}${ways.join('; or ')}` });
}
