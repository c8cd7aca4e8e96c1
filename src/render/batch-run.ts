// What `dnc batch` shows of a run besides its summary table: progress while it runs, the line that says what to do
// next when it stopped short, and the summary object of a run that stopped before it had one (--json).
import path from 'node:path';
import type { BatchEvent, BatchOptions, BatchRunResult } from '../batch/job.js';
import { showSaid, type Context } from '../context.js';
import { DncError, ExitCode } from '../errors.js';
import type { createProgress } from '../io.js';
import type { StoppedReason } from '../journal/journal.js';
import { DNC_RESULTS } from '../results/columns.js';
import { formatInteger } from '../text/numbers.js';
import type { BatchReportExtras } from './batch-report.js';
import { jsonErrorOf, withUsageHint, type JsonError } from './error.js';

type Progress = Awaited<ReturnType<typeof createProgress>>;
export type FinishedBatch = Extract<BatchRunResult, { kind: 'finished' }>;

/** The summary object of a batch stopped before it had one: what is known, the counts null, and why. */
export function unfinishedSummary(
  input: string | null,
  options: Pick<BatchOptions, 'output'>,
  err: DncError | JsonError,
): Record<string, unknown> {
  const counts = Object.fromEntries(
    ['rows', 'unique_numbers', ...DNC_RESULTS, 'credits_used', 'unanswered_sends'].map((k) => [k, null]),
  );
  const error = err instanceof DncError ? batchJsonError(err) : err;
  return {
    input,
    output: options.output ?? null,
    ...counts,
    stopped_reason: stoppedReasonOf(error.exit_status),
    error,
  };
}

/** stopped_reason of a batch that ended on an error (cli.md): what a script decides a rerun on. */
function stoppedReasonOf(exitStatus: number): StoppedReason {
  switch (exitStatus) {
    case ExitCode.AUTH:
      return 'auth_failed';
    case ExitCode.CREDIT:
      return 'credit_limit';
    case ExitCode.INTERRUPTED:
      return 'interrupted';
    case ExitCode.USAGE:
    case ExitCode.INPUT:
      // Something the user fixes before a rerun: an option, a path, the list, the disk.
      return 'configuration';
    default:
      return 'service_failure';
  }
}

/** An error as the summary states it: the hint main prints on stderr too (src/render/error.ts). */
export function batchJsonError(err: DncError): JsonError {
  return jsonErrorOf(withUsageHint(err, 'batch'));
}

/** Shows the run's events: lines on stderr, progress on the spinner (or plain lines when not on a terminal). */
export function showBatchEvents(ctx: Context, progress: Progress): (event: BatchEvent) => void {
  let startedAt = 0;
  let shownAt = -Infinity;
  return (event) => {
    if (showSaid(ctx, event)) return;
    switch (event.type) {
      case 'lookups-started':
        startedAt = performance.now();
        return;
      case 'stopping':
        return progress.info(
          'dnc: stopping: no new lookups; waiting for those in flight (Ctrl-C again to quit at once)',
        );
      case 'lookups-ended':
        return progress.stop();
      case 'progress': {
        const p = event.progress;
        // Formatting is not free at 1,600 answers a second: a few updates a second are plenty.
        const now = performance.now();
        if (now - shownAt < 100 && p.answered < p.total) return;
        shownAt = now;
        const elapsed = (now - startedAt) / 1000;
        const rate = elapsed > 0.5 ? p.answered / elapsed : 0;
        // While the list is still read, the total is a count so far and no ETA can be told.
        const eta = rate > 0 && !p.reading ? ` · ETA ${formatDuration(((p.total - p.answered) / rate) * 1000)}` : '';
        // Nothing to show before the first number is known (a list refused at its first rows says so itself).
        if (p.total === 0) return;
        // A total not known yet is no denominator: "0/16" read as 16 numbers in all when the list held 33.
        const count = p.reading
          ? `${formatInteger(p.answered)} answered · ${formatInteger(p.total)} numbers read so far (reading the list)`
          : `${formatInteger(p.answered)}/${formatInteger(p.total)} numbers`;
        progress.update(`${count} · ${Math.round(rate)}/s${eta} · ${formatInteger(p.credits)} credits used`);
        return;
      }
    }
  };
}

/** The figures of a finished run the summary shows beside its tally. */
export function summaryExtras(r: FinishedBatch): BatchReportExtras {
  const after = r.counts;
  return {
    uniqueNumbers: after.queued + after.in_flight + after.done + after.pending,
    creditsTotal: after.credits,
    creditsThisRun: r.creditsThisRun,
    sent: r.sent,
    elapsedMs: r.elapsedMs,
    stopped: r.stopped,
    pending: after.pending,
    journalPath: r.journalPath,
    summaryToStderr: r.outputPath === '-',
    unansweredSends: r.unansweredSends,
    error: r.fatal ? batchJsonError(r.fatal) : null,
    paidAgain: r.paidAgain ?? null,
    estimate: r.estimate ?? null,
  };
}

/** The command that resumes the run (a list read from standard input is piped again). */
function resumeOf(r: FinishedBatch): string {
  return r.resume.startsWith('dnc batch - ') ? `${r.resume} (piping the same list to it)` : r.resume;
}

/** The resume command without the note about piping, to add a flag to. */
function bareResume(r: FinishedBatch): string {
  return resumeOf(r).replace(/ \(piping the same list to it\)$/, '');
}

export function interruptedLine(r: FinishedBatch): string {
  return `dnc: interrupted; ${formatInteger(r.counts.queued)} number(s) not checked. Resume with: ${resumeOf(r)}`;
}

/**
 * Why --max-credits stopped the run, as the budget decided it: the next lookup's count against what was left. The
 * first lookup of a country whose price this batch has not seen counts at the most a lookup is known to cost, so a
 * budget can stop before a 1-credit number: said where it happens, not left as "reached".
 */
function budgetReachedText(r: FinishedBatch): string {
  const budget = `the --max-credits budget of ${formatInteger(r.maxCredits ?? 0)}`;
  const b = r.budgetStop;
  if (!b) return `${budget} was reached`;
  const left = `${formatInteger(b.left)} credit(s) of the budget were left`;
  if (!b.unknownCost)
    return `${budget} was reached: the next lookup (${b.country}) costs ${formatInteger(b.estimate)}, and ${left}`;
  return (
    `${budget} was reached: this batch has not seen the price of a ${b.country} lookup yet, so its first one is ` +
    `counted at ${formatInteger(b.estimate)} credit(s), the most a lookup is known to cost, and ${left}`
  );
}

/** Stopped by the credit limit or by --max-credits: why, and how to resume. */
export function creditStopLine(r: FinishedBatch): string {
  const { stopped } = r;
  const why = stopped === 'credit_limit' ? 'the credit limit was reached (429)' : budgetReachedText(r);
  const next =
    stopped === 'credit_limit'
      ? 'after a credit top-up or in the next billing period (`dnc usage` shows the balance)'
      : 'with a larger budget (credits already used by this batch count toward it; the journal remembers the ' +
        'budget, so name the new one)';
  // (A resume command that repeats the options, for -o -, names the old budget: the new one replaces it.)
  const command =
    stopped === 'budget_reached'
      ? `${bareResume(r).replace(/ --max-credits \S+/, '')} --max-credits <N|none>`
      : resumeOf(r);
  const left = `${formatInteger(r.counts.queued)} number(s) not checked`;
  return `dnc: stopped: ${why}; ${left}. Resume ${next} with: ${command}`;
}

export function pendingLine(r: FinishedBatch, cwd: string): string {
  return (
    `dnc: ${r.counts.pending} webhook lookup(s) pending. Receive their results with: dnc listen --results ` +
    `${path.relative(cwd, r.outputPath) || r.outputPath}`
  );
}

/** Rows without a verdict in a finished run, or 0. */
export function rowsUnfinished(r: FinishedBatch): number {
  return r.summary.byResult.not_checked + r.summary.byResult.failed;
}

/** What finishes the rows left without a verdict, each way named with what it costs. */
export function unfinishedLine(r: FinishedBatch): string {
  const { summary } = r;
  const resume = resumeOf(r);
  const bare = bareResume(r);
  const unfinished = rowsUnfinished(r);
  const waiting = summary.webhookRequired;
  const charged = unfinished - waiting - summary.retryable - summary.unanswered - summary.notCalculated;
  const advice = [
    ...(summary.notCalculated > 0
      ? [
          `${formatInteger(summary.notCalculated)} row(s) hold a phone number that is a formula never ` +
            `calculated: open the workbook in Excel or LibreOffice and save it, then run again`,
        ]
      : []),
    ...(waiting > 0
      ? [
          `${formatInteger(waiting)} row(s) of webhook-only countries need --webhook-url (then \`dnc ` +
            `listen\`): ${resume} --webhook-url URL`,
        ]
      : []),
    ...(summary.retryable > 0
      ? [`run \`${resume}\` again to look up the ${summary.retryable} row(s) no credit was spent on`]
      : []),
    ...(summary.unanswered > 0
      ? [
          `${summary.unanswered} row(s) were sent by a run that stopped before their answers came and may ` +
            `have been charged: a rerun does not send them again; to send them anyway (a second charge each ` +
            `if the first went through): ${bare} --resend-unanswered`,
        ]
      : []),
    ...(charged > 0 ? [chargedAdvice(charged, r, bare)] : []),
  ];
  return (
    `dnc: finished, but ${unfinished} row(s) have no verdict (${summary.byResult.not_checked} not_checked, ` +
    `${summary.byResult.failed} failed): ${advice.join('; ')}`
  );
}

/**
 * What finishes rows that failed after a charge: --resend-failed, naming what it costs; when it was given (they
 * failed again), a person's review (the --review-out list when there is one). Never a flag already given.
 */
function chargedAdvice(charged: number, r: FinishedBatch, bare: string): string {
  const rows = `${formatInteger(charged)} row(s) failed after a charge`;
  const review = r.reviewOut ? `${r.reviewOut} lists them for a person` : '`--review-out FILE` lists them for a person';
  if (r.resentFailed) return `${rows}, again after --resend-failed: the service could not settle them; ${review}`;
  const cost = r.failedToResend;
  return (
    `${rows}: a rerun does not send them again; to send them again (each charged again: ` +
    `${formatInteger(cost.numbers)} number(s), about ${formatInteger(cost.credits)} credit(s)): ${bare} --resend-failed`
  );
}

function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}
