// A journal met again: the same batch or another, numbers left unanswered or in flight, what a rerun does.
import { existsSync } from 'node:fs';
import { usageError } from '../errors.js';
import type { BatchCalling, BatchJournal, BatchMeta, ResultOptions } from '../journal/journal.js';
import { formatInteger } from '../text/numbers.js';
import { WEBHOOK_ONLY_COUNTRIES } from '../wire/types.js';
import type { TableLayout } from '../tables/layout.js';
import { describeOptions, resultOptionsChange, sameResultOptions } from './options.js';
import { phoneColumnsOf } from '../journal/types.js';
import type { BatchOptions, RunContext } from './job.js';
import { journalInUse } from '../journal/lock.js';
import { hashFile } from '../file-hash.js';
import { rerunPlanOf } from '../journal/views.js';

/** What a journal's batch is made of: the input as read, the options that shape answers, where outputs go. */
export interface JournalBatch {
  layout: TableLayout;
  resultOptions: ResultOptions;
  paths: { inputPath: string; outputPath: string; callableOut: string | null; suppressedOut: string | null };
  /** The input as the user named it. */
  input: string;
  serviceOrigin: string;
  /** The calling settings the batch records (a resumed batch: what it recorded). */
  calling: BatchCalling;
  rendering: Pick<
    BatchMeta,
    'escapeFormulas' | 'manifestPath' | 'reviewOut' | 'dialOut' | 'run' | 'outputFormat' | 'outputEncoding'
  >;
}

/**
 * Checks that an existing journal is this batch (a resume: its numbers are queued again as a rerun does).
 * Returns whether the input must still be read into it: a new batch, or one whose input was not read to its
 * end (a crash or a second Ctrl-C while reading, which lookups may have overlapped).
 */
export async function prepareJournal(
  ctx: RunContext,
  journal: BatchJournal,
  batch: JournalBatch,
  resend: Pick<BatchOptions, 'resendUnanswered' | 'resendFailed'>,
): Promise<'resume' | 'read'> {
  const resendUnanswered = resend.resendUnanswered === true;
  const rerun = () => {
    settleUnanswered(ctx, journal, resendUnanswered);
    requeueForRerun(ctx, journal);
    if (resend.resendFailed) requeueFailed(ctx, journal);
  };
  const { resultOptions, paths, serviceOrigin, rendering, layout } = batch;
  const existing = journal.meta();
  if (existing && !journal.ingested) {
    // Read in part: the numbers it holds keep their answers (paid for); reading again adds the rest.
    checkSameBatch(journal, existing, resultOptions, serviceOrigin, layout);
    rerun();
    return 'read';
  }
  if (existing) {
    const sha = await hashFile(paths.inputPath);
    if (sha !== existing.inputSha256) {
      throw usageError(
        'E_JOURNAL_MISMATCH',
        `the journal ${journal.path} belongs to a batch of a different input (${existing.inputPath}, another SHA-256)`,
        {
          hint:
            `the input changed since that batch began; run with --restart to start over (answers already ` +
            `paid for in it are discarded), or write to another -o`,
        },
      );
    }
    checkSameBatch(journal, existing, resultOptions, serviceOrigin, layout);
    if (resultOptionsChange(existing.options, resultOptions) === 'added') {
      // A phone column added: every answer the journal has stands; the list is read again for the new numbers.
      ctx.info(
        `Adding phone column(s) ${layout.phoneLabels.slice(phoneColumnsOf(existing.options).length).join(', ')} ` +
          `to ${journal.path}: numbers already answered are not sent again`,
      );
      rerun();
      return 'read';
    }
    journal.setMeta({
      ...existing,
      options: { ...existing.options, webhookUrl: resultOptions.webhookUrl, webhookAll: resultOptions.webhookAll },
      inputPath: paths.inputPath,
      outputPath: paths.outputPath,
      callableOut: paths.callableOut,
      suppressedOut: paths.suppressedOut,
      ...rendering,
    });
    rerun();
    const c = journal.summaryCounts();
    ctx.info(
      `Resuming ${journal.path}: ${formatInteger(c.done)} number(s) done, ${formatInteger(c.pending)} pending ` +
        `(webhook), ${toLookUpWords(journal, c.queued + c.in_flight, resultOptions.webhookUrl).words}`,
    );
    return 'resume';
  }
  return 'read';
}

/** Refuses a journal made with options that change answers, or against another service. */
function checkSameBatch(
  journal: BatchJournal,
  existing: BatchMeta,
  resultOptions: ResultOptions,
  serviceOrigin: string,
  layout: TableLayout,
): void {
  if (
    !sameResultOptions(existing.options, resultOptions) ||
    existing.layout.workbook?.position !== layout.workbook?.position ||
    existing.layout.workbook?.firstRow !== layout.workbook?.firstRow ||
    (existing.layout.encoding ?? 'utf-8') !== (layout.encoding ?? 'utf-8')
  ) {
    const c = journal.summaryCounts();
    const numbers = c.queued + c.in_flight + c.done + c.pending;
    throw usageError(
      'E_JOURNAL_MISMATCH',
      `the journal ${journal.path} was made with other options that change answers ` +
        `(${describeOptions(existing.options)})`,
      {
        hint:
          `run it without them to resume, or add --restart to start over with these: ${formatInteger(numbers)} ` +
          `number(s) are looked up again ` +
          `(this batch has spent ${formatInteger(c.credits)} credit(s) so far); add --reuse-within 30d to reuse ` +
          `verdicts already paid for instead of paying twice`,
      },
    );
  }
  if (existing.serviceOrigin && existing.serviceOrigin !== serviceOrigin) {
    throw usageError(
      'E_JOURNAL_MISMATCH',
      `the journal ${journal.path} holds answers from ${existing.serviceOrigin}, not ${serviceOrigin}`,
      {
        hint: 'use the same --base-url to resume, or --restart',
      },
    );
  }
  // Pushes of pending lookups go to the URL they were sent with: a new one would leave them where no listener is
  // (the service takes a 404 as final), and their paid results would be lost.
  const pendingNow = journal.summaryCounts().pending;
  if (pendingNow > 0 && (existing.options.webhookUrl ?? null) !== resultOptions.webhookUrl) {
    throw usageError(
      'E_JOURNAL_MISMATCH',
      `${pendingNow} webhook lookup(s) of this batch are pending, their results pushed to the --webhook-url ` +
        `they were sent with: it cannot change (or go) until they are answered`,
      {
        hint:
          'leave --webhook-url out (the journal remembers it) or give the same one, and receive the results ' +
          'with `dnc listen --results OUTPUT`',
      },
    );
  }
}

/**
 * Numbers an earlier run sent and got no answer for (it was killed, or stopped at once, while they were in flight)
 * may have been charged: they are never sent again unless the user asks (--resend-unanswered). Either way their
 * sends stay counted as unanswered (the summary, the manifest, --max-credits and `dnc usage --reconcile`).
 * A possible charge is worth a warning (shown under --quiet too).
 */
function settleUnanswered(ctx: RunContext, journal: BatchJournal, resend: boolean): void {
  let left = journal.settleUnanswered();
  // A push kept as an orphan may have been the answer to one of them: adopted when it says do_not_call.
  const adopted = journal.pushes.adoptKeptOrphans().length;
  if (adopted > 0) {
    left = Math.max(0, left - adopted);
    ctx.info(
      `${formatInteger(adopted)} number(s) sent without an answer are do_not_call by a push that came later ` +
        `(kept as evidence)`,
    );
  }
  if (resend) {
    const again = journal.requeueUnanswered();
    if (again > 0) {
      ctx.warn(
        `dnc: warning: --resend-unanswered: ${formatInteger(again)} number(s) whose earlier send got no answer ` +
          `are sent again; each may be charged a second time`,
      );
    }
  } else if (left > 0) {
    ctx.warn(
      `dnc: warning: ${formatInteger(left)} number(s) were sent by the last run, which stopped before their ` +
        `answers came: they may have been charged and are not sent again ` +
        '(failed / unanswered_send); add --resend-unanswered to send them again',
    );
  }
}

/** A rerun finishes the job: rows with no verdict and no credit spent on them are looked up again. */
function requeueForRerun(ctx: RunContext, journal: BatchJournal): void {
  const again = journal.requeueUnfinished();
  if (again.notChecked + again.uncharged > 0) {
    ctx.info(
      `${again.notChecked + again.uncharged} number(s) without a verdict are looked up again ` +
        `(${again.notChecked} not checked, ${again.uncharged} failed without a charge)`,
    );
  }
}

/**
 * What the batch's end says of its rows without a verdict: the sends without an answer, the review list, whether
 * failed numbers were sent again, and what sending them again costs.
 */
export function failedFacts(journal: BatchJournal, options: Pick<BatchOptions, 'resendFailed'>) {
  return {
    unansweredSends: journal.unansweredSends(),
    reviewOut: journal.meta()?.reviewOut ?? null,
    resentFailed: options.resendFailed === true,
    failedToResend: journal.failedToResend(),
  };
}

/** --resend-failed: the failed numbers a bare rerun leaves are sent again, each charged again (said, with the cost). */
function requeueFailed(ctx: RunContext, journal: BatchJournal): void {
  const { numbers, credits } = journal.failedToResend();
  const again = journal.requeueFailed();
  if (again > 0) {
    ctx.warn(
      `dnc: warning: --resend-failed: ${formatInteger(again)} failed number(s) are sent again; each is charged ` +
        `again (about ${formatInteger(numbers === again ? credits : again)} credit(s))`,
    );
  } else {
    ctx.info('--resend-failed: no failed number to send again');
  }
}

/**
 * The journal of a stopped batch as a rerun would find it, or null when a rerun would start afresh (no journal) or
 * refuse it (another input or options that change answers: said as a warning; the estimate is then the whole list's).
 */
export async function rerunPlan(
  ctx: RunContext,
  journalPath: string | null,
  sha256: string,
  resultOptions: ResultOptions,
  serviceOrigin: string | null,
) {
  if (journalPath === null || !existsSync(journalPath)) return null;
  let plan: Awaited<ReturnType<typeof rerunPlanOf>>;
  try {
    plan = await rerunPlanOf(journalPath, journalInUse(journalPath, ctx.lockDeps));
  } catch (err) {
    ctx.warn(
      `dnc: warning: ${journalPath} cannot be read as a batch journal (${(err as Error).message}): the estimate ` +
        `is the whole list's`,
    );
    return null;
  }
  if (!plan.meta) return null;
  const why =
    plan.ingested && plan.meta.inputSha256 !== sha256
      ? 'belongs to a batch of a different input'
      : !sameResultOptions(plan.meta.options, resultOptions)
        ? 'was made with other options that change answers'
        : serviceOrigin !== null && plan.meta.serviceOrigin && plan.meta.serviceOrigin !== serviceOrigin
          ? `holds answers from ${plan.meta.serviceOrigin}`
          : null;
  if (why) {
    ctx.warn(
      `dnc: warning: the journal ${journalPath} ${why}: a real run refuses it (--restart starts over); the ` +
        `estimate is the whole list's, as --restart would pay`,
    );
    return null;
  }
  return plan;
}

/**
 * "N to look up" of the `numbers` without a verdict, less those of a webhook-only country a run without a webhook URL
 * does not send, said apart with their count: the count the credit guard and the progress line give.
 */
export function toLookUpWords(
  journal: Pick<BatchJournal, 'sends'>,
  numbers: number,
  webhookUrl: string | null,
): { unsent: number; words: string } {
  const webhookOnly = webhookUrl ? [] : WEBHOOK_ONLY_COUNTRIES;
  const unsent = journal.sends.webhookUnsentOf(webhookOnly);
  if (unsent === 0) return { unsent, words: `${formatInteger(numbers)} to look up` };
  const words =
    `${formatInteger(numbers - unsent)} to look up (${formatInteger(unsent)} of ${webhookOnly.join(', ')} not ` +
    'sent: they need --webhook-url)';
  return { unsent, words };
}
