// `dnc batch`: scrubs a call list — one lookup per distinct number, a verdict on every row, resumable at any point.
// The use case is src/batch/run.ts; this file registers the flags (their table: batch-flags.ts), shows the run's
// events (src/render/batch-run.ts, batch-report.ts) and picks the exit code.
import type { Command } from 'commander';
import type { BatchEvent, BatchOptions, BatchRunResult } from '../batch/job.js';
import { addFlags } from '../cli-options.js';
import type { Context } from '../context.js';
import { DncError, ExitCode, usageError } from '../errors.js';
import { createProgress, writeLine } from '../io.js';
import { showBatchSummary, showDryRun } from '../render/batch-report.js';
import {
  creditStopLine,
  interruptedLine,
  pendingLine,
  rowsUnfinished,
  showBatchEvents,
  summaryExtras,
  unfinishedLine,
  unfinishedSummary,
  type FinishedBatch,
} from '../render/batch-run.js';
import { askColumnsOn, askReuseOn } from './batch-ask.js';
import { BATCH_FLAGS, batchOptionsOf, JOIN_REFUSES } from './batch-flags.js';
import type { JoinOptions, JoinResult } from '../batch/join.js';
import { flagGiven, flagKey } from '../cli-options.js';
import { showJoinResult } from '../render/join.js';
import type { CommandHost } from './host.js';

const HELP = `
The output has every input row, in input order, input columns unchanged, then the columns
dnc_phone_e164, dnc_country, dnc_result, dnc_do_not_call, dnc_list_source, dnc_checked_at,
dnc_correlation_id, dnc_error_code, dnc_error, dnc_credits, dnc_exemption, dnc_valid_until,
dnc_time_zones, dnc_calling_window (\`dnc help results\`); same delimiter as the input.
Only rows whose dnc_result is "callable" may be called. With several phone columns
(--column Mobile,Home,Work) a row is callable only when one of its numbers is callable and
none is do_not_call, failed, pending or not_checked (an invalid or unsupported number decides
nothing); it is do_not_call when any of its numbers is. Each column N adds dnc_N_* cells of its
own number, and dnc_callable_numbers lists the row's callable numbers (the only ones to dial).
A contact of three phones from a real run (docs/results.md has it whole):
  Name,Mobile Phone,Home Phone,Business Phone
  Rosa Smith,+1 202 555 0102,+1 202 555 0103,+1 202 555 0105
gives dnc_1_result callable, dnc_2_result do_not_call, dnc_3_result do_not_call, so
dnc_result do_not_call and dnc_callable_numbers +12025550102.

Each distinct number is looked up once. Progress is journaled in OUTPUT.journal.sqlite beside
the output, with the options the batch was started with: \`dnc batch INPUT -o OUTPUT\` alone
resumes a stopped batch with them (nothing answered is sent again) and looks up again the rows
left without a verdict that no credit was spent on. Numbers a killed run sent without getting
the answer may have been charged: they are not sent again unless --resend-unanswered is given;
--resend-failed sends again those and the numbers whose failure was charged (billing_error),
each charged again.
Options that change no answer (budget, lists, concurrency, webhook URL, --reuse-within) may
change on a rerun; --restart starts over.

With a team store (docs/team.md) a batch prints the id of its scrub: on another machine,
\`dnc batch --join ID\` helps it, looking up some of its numbers (at its own --concurrency,
within its own --max-credits) while this batch writes every row; it takes no other flag and
exits 0 once the scrub is done, stopped, or has nothing left to take.

Examples:
  dnc batch leads.csv
  dnc batch leads.csv -o scrubbed.csv --country GB --callable-out call-these.csv
  dnc batch leads.csv --dry-run
  dnc batch leads.csv --max-credits 500 --concurrency 16
  dnc batch leads.csv -o leads-for-excel.xlsx`;

export function registerBatch(program: Command, host: CommandHost): void {
  const command = program
    .command('batch')
    .description('scrub a CSV call list: a do-not-call verdict on every row, one lookup per distinct number, resumable')
    .argument(
      '[input]',
      'the CSV file (UTF-8 unless --encoding; comma, semicolon, tab or pipe separated), an .xlsx workbook, or - ' +
        'for standard input',
    )
    .usage('[options] <input> | --join <scrub-id>');
  addFlags(command, BATCH_FLAGS)
    .option(
      '--join <scrub-id>',
      'help a scrub another runner started with the team store: look up some of its numbers, which that runner ' +
        'writes (docs/team.md); the id is the one it printed',
    )
    .addHelpText('after', HELP);
  host.action(command, (ctx, cmd) => batchOrJoin(ctx, cmd), {
    // A batch's summary object is printed on every exit (cli.md), also when its flags were refused.
    refusedJson: (error) => unfinishedSummary(null, {}, error),
  });
}

/** `dnc batch INPUT …`, or `dnc batch --join ID` (no input: another runner's scrub). */
function batchOrJoin(ctx: Context, cmd: Command): Promise<number> {
  const join = cmd.opts<{ join?: string }>().join;
  if (join === undefined) {
    if (cmd.args[0] === undefined)
      throw usageError('E_USAGE', "missing required argument 'input'", {
        hint: "see 'dnc batch --help' for the usage",
      });
    return runBatch(ctx, cmd.args[0], batchOptionsOf(cmd));
  }
  const options = batchOptionsOf(cmd);
  const others = JOIN_REFUSES.filter((k) => flagGiven(cmd, BATCH_FLAGS, k));
  if (cmd.args[0] !== undefined || others.length > 0) {
    const flag = BATCH_FLAGS.find((f) => flagKey(f) === others[0])?.option.long;
    const what = cmd.args[0] !== undefined ? `input (${cmd.args[0]})` : flag;
    throw usageError(
      'E_USAGE',
      `--join takes no ${what}: the runner that started the scrub reads the list and writes the output`,
      {
        hint: 'dnc batch --join ID [--concurrency N] [--max-credits N]',
      },
    );
  }
  return runJoinCommand(ctx, { scrub: join.trim(), concurrency: options.concurrency, maxCredits: options.maxCredits });
}

async function runJoinCommand(ctx: Context, options: JoinOptions): Promise<number> {
  const progress = await createProgress(ctx.io, { quiet: ctx.quiet || ctx.json });
  const show = showBatchEvents(ctx, progress);
  const { runJoin } = await import('../batch/join.js');
  let result: JoinResult;
  try {
    result = await runJoin(ctx.deps({ onEvent: show }), options);
  } finally {
    progress.stop();
  }
  const status = showJoinResult(ctx, result);
  if (result.outcome?.fatal) throw result.outcome.fatal;
  return status;
}

export async function runBatch(ctx: Context, input: string, options: BatchOptions): Promise<number> {
  const progress = await createProgress(ctx.io, { quiet: ctx.quiet || ctx.json });
  const show = showBatchEvents(ctx, progress);
  let result: BatchRunResult;
  try {
    result = await runBatchJobWith(ctx, input, options, show);
  } catch (err) {
    // --json on every exit: a script reading stdout learns why, whatever stopped the batch before its summary.
    if (ctx.json && err instanceof DncError) {
      const toStderr = options.output === '-' || (input === '-' && options.output === undefined);
      writeLine(toStderr ? ctx.io.stderr : ctx.io.stdout, JSON.stringify(unfinishedSummary(input, options, err)));
    }
    throw err;
  } finally {
    progress.stop();
  }
  if (result.kind === 'dry-run') {
    await showDryRun(ctx, result.report);
    return ExitCode.OK;
  }
  if (result.kind === 'abandoned') {
    ctx.warn(
      'dnc: stopped at once; every answer received so far is in the journal, and the lookups still in flight ' +
        'may have been charged ' +
        '(a rerun does not send them again unless --resend-unanswered). Run the same command again to resume.',
    );
    return ExitCode.INTERRUPTED;
  }
  return finish(ctx, result);
}

async function runBatchJobWith(
  ctx: Context,
  input: string,
  options: BatchOptions,
  show: (event: BatchEvent) => void,
): Promise<BatchRunResult> {
  const { runBatchJob } = await import('../batch/run.js');
  // Not sure which columns hold the numbers, or paying again for the answers of the last day: asked only with a
  // person at both ends (a script gets exit 2, or follows --reuse-within / --no-reuse).
  const asks = ctx.io.stdinIsTTY && ctx.io.stderrIsTTY && input !== '-';
  return await runBatchJob(
    input,
    options,
    ctx.deps({ onEvent: show, ...(asks ? { askColumns: askColumnsOn(ctx), askReuse: askReuseOn(ctx) } : {}) }),
  );
}

/** The summary, what to do next, and the exit code of a batch that ran to an end (or a clean stop). */
async function finish(ctx: Context, r: FinishedBatch): Promise<number> {
  await showBatchSummary(ctx, r.summary, summaryExtras(r));
  // Stopped on an error after the output was written: the summary above, then the error (main prints it, exits with its
  // status).
  if (r.fatal) throw r.fatal;
  if (r.stopped === 'interrupted') {
    ctx.warn(interruptedLine(r));
    return ExitCode.INTERRUPTED;
  }
  if (r.stopped === 'credit_limit' || r.stopped === 'budget_reached') {
    ctx.warn(creditStopLine(r));
    return ExitCode.CREDIT;
  }
  if (r.counts.pending > 0) {
    ctx.warn(pendingLine(r, ctx.cwd));
    return ExitCode.PENDING;
  }
  if (rowsUnfinished(r) > 0) {
    ctx.warn(unfinishedLine(r));
    return ExitCode.UNFINISHED;
  }
  return ExitCode.OK;
}
