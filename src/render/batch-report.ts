// Shows what `dnc batch` returns: its summary and its --dry-run report, as JSON or as tables (cli-table3, loaded only
// for the tables).
import type { DryRunReport } from '../batch/job.js';
import type { Context } from '../context.js';
import { writeLine } from '../io.js';
import { terminalSafeLines } from '../text/terminal-safe.js';
import type { StoppedReason } from '../journal/journal.js';
import type { RenderSummary } from '../results/render.js';
import type { JsonError } from './error.js';
import type { PaidAgain } from '../batch/recent-answers.js';

export interface BatchReportExtras {
  uniqueNumbers: number;
  creditsTotal: number;
  creditsThisRun: number;
  sent: number;
  elapsedMs: number;
  stopped: StoppedReason | null;
  pending: number;
  journalPath: string;
  /** The results went to standard output (-o -): the summary goes to stderr, so stdout holds only the CSV. */
  summaryToStderr: boolean;
  /** Sends of the batch that got no answer (may have been charged; not in creditsTotal). */
  unansweredSends: number;
  /** Why the batch ended on an error (--json's `error`), or null. */
  error: JsonError | null;
  /** Numbers answered within the last day that this run paid for again, or null. */
  paidAgain?: PaidAgain | null;
  /** The credit guard's estimate of this run's lookups, or null when none was weighed. */
  estimate?: { numbers: number; credits: number } | null;
}

/** The end-of-run summary: one JSON object with --json, else the table (on stderr when the results went to stdout). */
export async function showBatchSummary(ctx: Context, summary: RenderSummary, extras: BatchReportExtras): Promise<void> {
  const out = extras.summaryToStderr ? ctx.io.stderr : ctx.io.stdout;
  if (ctx.json) {
    writeLine(
      out,
      JSON.stringify({
        input: summary.input,
        output: summary.output,
        rows: summary.rows,
        unique_numbers: extras.uniqueNumbers,
        ...summary.byResult,
        credits_used: extras.creditsTotal,
        unanswered_sends: extras.unansweredSends,
        stopped_reason: extras.stopped,
        // Added members (the contract's keys stay): what was paid again, and what the credit guard expected.
        paid_again: extras.paidAgain
          ? {
              numbers: extras.paidAgain.numbers,
              credits: extras.paidAgain.credits,
              chosen: extras.paidAgain.decision === 'pay_again',
              hint:
                extras.paidAgain.decision === 'default' && extras.paidAgain.numbers > 0
                  ? '--reuse-within 1d would have reused them'
                  : null,
              charged_without_verdict: extras.paidAgain.chargedWithoutVerdict,
            }
          : null,
        credit_estimate: extras.estimate
          ? { numbers_to_look_up: extras.estimate.numbers, estimated_credits: extras.estimate.credits }
          : null,
        ...(extras.error ? { error: extras.error } : {}),
      }),
    );
    return;
  }
  const { renderBatchSummary } = await import('./batch-summary.js');
  if (extras.summaryToStderr && ctx.quiet) return;
  // Under the rule of every line dnc composes: only its own colours survive, whatever a name missed.
  out.write(
    terminalSafeLines(
      renderBatchSummary(
        summary,
        extras,
        extras.summaryToStderr
          ? { tty: ctx.io.stderrIsTTY, color: ctx.io.stderrColor, columns: ctx.io.columns }
          : { tty: ctx.io.stdoutIsTTY, color: ctx.io.stdoutColor, columns: ctx.io.columns },
      ),
    ),
  );
}

/** What --dry-run found: one JSON object with --json, else the table and the credit guard's lines. */
export async function showDryRun(ctx: Context, report: DryRunReport): Promise<void> {
  if (ctx.json) {
    writeLine(ctx.io.stdout, JSON.stringify({ dry_run: true, ...report.result, credit_guard: report.guard.json }));
    return;
  }
  const { renderDryRun } = await import('./batch-summary.js');
  ctx.io.stdout.write(
    renderDryRun(
      { ...report.result, costs: report.costs, invalidSamples: report.invalidSamples, maxCredits: report.maxCredits },
      { tty: ctx.io.stdoutIsTTY, color: ctx.io.stdoutColor, columns: ctx.io.columns },
    ),
  );
  for (const line of report.guard.lines) writeLine(ctx.io.stdout, line);
}
