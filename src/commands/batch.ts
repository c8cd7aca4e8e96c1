// `dnc batch`: scrubs a call list — one lookup per distinct number, a verdict on every row, resumable at any point.
// The use case is src/batch/run.ts; this file parses the flags, shows the run's events and picks the exit code.
import { fstatSync, statSync } from 'node:fs';
import path from 'node:path';
import { Option, type Command } from 'commander';
import type { TextEncoding } from '../tables/encoding.js';
import { integerOption, LIST_FILE_WHERE, parsedOption } from '../cli-options.js';
import type { BatchEvent, BatchOptions, BatchRunDeps, BatchRunResult } from '../batch/job.js';
import { COMPLIANCE_FLAGS, REMEMBERED_OPTIONS, type RememberedOption } from '../batch/job.js';
import type { StoppedReason } from '../journal/journal.js';
import { parseIntegerOption } from '../config.js';
import { processLockDeps, showSaid, type Context } from '../context.js';
import { DncError, ExitCode, usageError } from '../errors.js';
import { DNC_RESULTS } from '../results/columns.js';
import { parseEncodingOption } from '../tables/encoding-names.js';
import { parseDuration } from '../time.js';
import { createProgress, writeLine } from '../io.js';
import { formatInteger } from '../text/numbers.js';
import type { CommandHost } from './host.js';
import { showBatchSummary, showDryRun } from '../render/batch-report.js';
import { reuseQuestion } from '../render/reuse-question.js';
import { jsonErrorOf as jsonErrorOfShown, withUsageHint, type JsonError } from '../render/error.js';

export type { BatchOptions } from '../batch/job.js';

/** Commander's attribute names of the remembered options that differ from ours. */
const ATTRIBUTE: Partial<Record<RememberedOption, string>> = { reuseWithinMs: 'reuseWithin', noReuse: 'reuse' };

export const MAX_CONCURRENCY = 64;

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
      '<input>',
      'the CSV file (UTF-8 unless --encoding; comma, semicolon, tab or pipe separated), an .xlsx workbook, or - ' +
        'for standard input',
    )
    .option(
      '-o, --output <file>',
      'where to write the results, - for standard output (default: INPUT.results.csv beside the input; standard ' +
        'output when INPUT is -)',
    )
    .option(
      '--column <names|indexes>',
      'the phone columns: header names or 1-based indexes, comma-separated (repeat the flag for a name that holds ' +
        'a comma; default: detected from the header)',
      (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
    )
    .option(
      '--country-column <name|index>',
      "the column of each row's country (ISO codes, names, calling codes); --country is the default for rows " +
        'without one (default: a column named Country, for a new batch)',
    )
    .option('--country <cc>', 'region for numbers in national format, e.g. US or GB')
    .addOption(
      integerOption(
        '--concurrency <n>',
        `lookups in flight at once, 1 to ${MAX_CONCURRENCY}`,
        1,
        MAX_CONCURRENCY,
      ).default(8),
    )
    .option('--webhook-url <url>', 'webhook mode for webhook-only countries (AU): results are pushed to this https URL')
    .option('--webhook-all', 'send every lookup in webhook mode (needs --webhook-url)')
    .option(
      '--allow-insecure-webhook-url',
      'allow an http:// or loopback --webhook-url (for `dnc sandbox --allow-insecure-webhooks`)',
    )
    .addOption(
      parsedOption(
        '--max-credits <n>',
        'never start a lookup that could take the batch past N credits (none: no budget, lifting one the batch ' +
          'was started with)',
        maxCreditsFlag,
      ),
    )
    .option(
      '--dry-run',
      'send nothing: count rows, distinct numbers, countries, invalid rows; show balance and estimated cost',
    )
    .option('--restart', 'discard the journal of an earlier run of this batch and start over')
    .option(
      '--resend-unanswered',
      'send again the numbers an earlier run sent without getting the answer (killed, or stopped at once): each ' +
        'may be charged twice',
    )
    .option(
      '--resend-failed',
      'send again the failed numbers a rerun leaves (a charged billing_error, a send that got no answer): each is ' +
        'charged again',
    )
    .option('--callable-out <file>', 'also write the callable rows (input columns only) to FILE')
    .option('--suppressed-out <file>', 'also write the do-not-call rows (input columns only) to FILE')
    .option('--delimiter <c>', "the input's delimiter: , ; | or tab (default: detected from the header line)")
    .option('--no-header', 'the first line is a data row (give --column INDEX when there are several columns)')
    .addOption(
      parsedOption(
        '--encoding <name>',
        'the CSV input\'s encoding: utf-8, windows-1252 (Excel\'s "CSV"), latin1, utf-16le or utf-16be ' +
          '(default: utf-8; UTF-16 is found by its byte-order mark)',
        encodingFlag,
      ),
    )
    .addOption(
      parsedOption('--output-encoding <name>', "the CSV outputs' encoding (default: the input's)", encodingFlag),
    )
    .addOption(
      new Option(
        '--format <format>',
        'how the results are written (default: by the extension of -o: .xlsx is a workbook, anything else CSV)',
      ).choices(['csv', 'xlsx']),
    )
    .option(
      '--sheet <name|index>',
      'the worksheet of an .xlsx input: a name or a 1-based index among worksheets (default: the first)',
    )
    .addOption(
      integerOption(
        '--skip-rows <n>',
        'an .xlsx input: do not read its first N rows (titles above the header, or above the data with --no-header)',
        0,
        1_048_575,
      ),
    )
    .option(
      '--review-out <file>',
      'also write the rows that need a person (invalid, unsupported_country, not_checked, failed) with their reasons',
    )
    .option('--dial-out <file>', 'also write the distinct callable numbers in E.164, one per line, for a dialler')
    .option(
      '--escape-formulas',
      "for files bound for a spreadsheet: input cells starting with = + - @ tab or CR get a leading ' (so + " +
        'numbers do too)',
    )
    .option(
      '--journal <file>',
      'where to keep the journal (default: OUTPUT.journal.sqlite; with -o - or a FIFO, the state folder)',
    )
    .addOption(
      parsedOption(
        '--reuse-within <duration>',
        'reuse verdicts of numbers checked within DURATION (e.g. 7d, 12h) instead of looking them up again',
        (raw, flag) => parseDuration(flag, raw),
      ),
    )
    .option(
      '--no-reuse',
      'pay again for numbers this service answered within the last day, without asking (on a terminal dnc asks ' +
        'first; elsewhere it pays again and the summary says so)',
    )
    .option('--suppression-list <path>', `the internal do-not-call list and exemptions (${LIST_FILE_WHERE})`)
    .option('--seller <name>', 'the seller the scrub is for (config "seller"; recorded in the manifest and report)')
    .option('--san <id>', 'the seller\'s registry account number, e.g. the FTC SAN (config "san")')
    .option('--campaign <label>', 'a campaign label (config "campaign")')
    .option(
      '--calling-settings <file>',
      "the team's calling policy for dnc_calling_window (env DNC_CALLING_SETTINGS; else the config's calling)",
    )
    .addHelpText('after', HELP);
  host.action(command, async (ctx, cmd) => {
    const o = cmd.opts() as Record<string, unknown>;
    const options: BatchOptions = {
      output: o.output as string | undefined,
      column: o.column as string[] | undefined,
      countryColumn: o.countryColumn as string | undefined,
      country: o.country as string | undefined,
      concurrency: o.concurrency as number,
      webhookUrl: o.webhookUrl as string | undefined,
      webhookAll: o.webhookAll === true,
      allowInsecureWebhookUrl: o.allowInsecureWebhookUrl === true,
      // `none` lifts a budget the journal remembers.
      maxCredits: typeof o.maxCredits === 'number' ? o.maxCredits : null,
      dryRun: o.dryRun === true,
      restart: o.restart === true,
      resendUnanswered: o.resendUnanswered === true,
      resendFailed: o.resendFailed === true,
      callableOut: o.callableOut as string | undefined,
      suppressedOut: o.suppressedOut as string | undefined,
      delimiter: o.delimiter as string | undefined,
      header: o.header !== false,
      sheet: o.sheet as string | undefined,
      skipRows: o.skipRows as number | undefined,
      encoding: o.encoding as TextEncoding | undefined,
      outputEncoding: o.outputEncoding as TextEncoding | undefined,
      format: o.format as 'csv' | 'xlsx' | undefined,
      reuseWithinMs: (o.reuseWithin as number | undefined) ?? null,
      noReuse: o.reuse === false,
      escapeFormulas: o.escapeFormulas === true,
      journal: o.journal as string | undefined,
      reviewOut: o.reviewOut as string | undefined,
      dialOut: o.dialOut as string | undefined,
      callingSettings: o.callingSettings as string | undefined,
      given: new Set(
        REMEMBERED_OPTIONS.filter((name) =>
          name === 'compliance'
            ? Object.keys(COMPLIANCE_FLAGS).some((k) => cmd.getOptionValueSource(k) === 'cli')
            : cmd.getOptionValueSource(ATTRIBUTE[name] ?? name) === 'cli',
        ),
      ),
      compliance: {
        suppressionList: o.suppressionList as string | undefined,
        seller: o.seller as string | undefined,
        san: o.san as string | undefined,
        campaign: o.campaign as string | undefined,
      },
    };
    return runBatch(ctx, cmd.args[0]!, options);
  });
}

/** A budget, or 'none' (not null: commander turns a parsed null into '', which would read as a budget of 0). */
function maxCreditsFlag(raw: string, flag: string): number | 'none' {
  if (raw.trim() === 'none') return 'none';
  if (!/^-?\d+$/.test(raw.trim())) {
    throw usageError('E_USAGE', `${flag} must be a whole number of credits or none, got '${raw}'`, {
      hint: `${flag} none runs without a budget (lifting one the batch was started with)`,
    });
  }
  return parseIntegerOption(flag, raw, 0);
}

function encodingFlag(raw: string, flag: string): TextEncoding {
  return parseEncodingOption(flag, raw)!;
}

/** Whether a path names one of this process's standard streams (/dev/stdout, /proc/self/fd/1, /dev/stdin …). */
function isStandardStream(fd: 0 | 1 | 2): (file: string) => boolean {
  return (file) => {
    try {
      const a = statSync(file);
      const b = fstatSync(fd);
      return a.dev === b.dev && a.ino === b.ino;
    } catch {
      return false;
    }
  };
}

export async function runBatch(ctx: Context, input: string, options: BatchOptions): Promise<number> {
  const progress = await createProgress(ctx.io, { quiet: ctx.quiet || ctx.json });
  const show = showEvents(ctx, progress);
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

/** The summary object of a batch stopped before it had one: what is known, the counts null, and why. */
function unfinishedSummary(
  input: string | null,
  options: Pick<BatchOptions, 'output'>,
  err: DncError | JsonError,
): Record<string, unknown> {
  const counts = Object.fromEntries(
    ['rows', 'unique_numbers', ...DNC_RESULTS, 'credits_used', 'unanswered_sends'].map((k) => [k, null]),
  );
  const error = err instanceof DncError ? jsonErrorOf(err) : err;
  return {
    input,
    output: options.output ?? null,
    ...counts,
    stopped_reason: stoppedReasonOf(error.exit_status),
    error,
  };
}

/**
 * `dnc batch --json` refused before it ran (a flag commander refused, say): the summary object all the same, input
 * and output null (the command line was not read). src/main.ts prints it in place of the bare `{"error": …}`.
 */
export function batchRefusedSummary(error: JsonError): Record<string, unknown> {
  return unfinishedSummary(null, {}, error);
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
function jsonErrorOf(err: DncError): JsonError {
  return jsonErrorOfShown(withUsageHint(err, 'batch'));
}

async function runBatchJobWith(
  ctx: Context,
  input: string,
  options: BatchOptions,
  show: (event: BatchEvent) => void,
): Promise<BatchRunResult> {
  const { runBatchJob } = await import('../batch/run.js');
  return await runBatchJob(input, options, {
    cwd: ctx.cwd,
    env: ctx.env,
    homedir: ctx.homedir,
    now: () => ctx.now(),
    tzdataVersion: ctx.tzdataVersion,
    flags: ctx.flags,
    interrupts: ctx.interrupts,
    serviceConfig: () => ctx.serviceConfig(),
    createClient: (o) => ctx.createClient(o),
    stores: () => ctx.stores(),
    // Asked for only when the list is read from standard input: setting process.stdin up costs ≈ 3 ms.
    get stdin() {
      return ctx.io.stdin;
    },
    get stdinIsTTY() {
      return ctx.io.stdinIsTTY;
    },
    stdout: ctx.io.stdout,
    lockDeps: processLockDeps(),
    // Standard output is written as the stream itself (a socket cannot be opened by path); standard input never
    // written.
    isStandardOutput: isStandardStream(1),
    isStandardError: isStandardStream(2),
    isStandardInput: isStandardStream(0),
    onEvent: show,
    // Not sure which columns hold the numbers: asked only with a person at both ends (a script gets exit 2).
    ...(ctx.io.stdinIsTTY && ctx.io.stderrIsTTY && input !== '-' ? { askColumns: askColumnsOn(ctx) } : {}),
    // Paying again for the answers of the last day: asked likewise (a script follows --reuse-within / --no-reuse).
    ...(ctx.io.stdinIsTTY && ctx.io.stderrIsTTY && input !== '-' ? { askReuse: askReuseOn(ctx) } : {}),
  });
}

/** Asks on the terminal whether to reuse the answers of the last day, pay again, or stop (end of input: stop). */
function askReuseOn(ctx: Context): NonNullable<BatchRunDeps['askReuse']> {
  return async (question) => {
    const { createInterface } = await import('node:readline/promises');
    const rl = createInterface({ input: ctx.io.stdin, output: ctx.io.stderr, terminal: true });
    const closed = new Promise<null>((resolve) => rl.once('close', () => resolve(null)));
    try {
      let prompt = reuseQuestion(question);
      for (let tries = 0; tries < 3; tries++) {
        const answer = await Promise.race([rl.question(prompt), closed]);
        if (answer === null) return 'stop';
        const a = answer.trim().toLowerCase();
        if (a === '' || a === 'r' || a === 'reuse') return 'reuse';
        if (a === 'p' || a === 'pay' || a === 'pay again') return 'pay_again';
        if (a === 's' || a === 'stop') return 'stop';
        prompt = 'Please answer r (reuse), p (pay again) or s (stop): ';
      }
      return 'stop';
    } finally {
      rl.close();
    }
  };
}

/** Asks on the terminal which of the candidate columns to scrub; null when the answer is empty (stop). */
function askColumnsOn(ctx: Context): NonNullable<BatchRunDeps['askColumns']> {
  return async ({ input, candidates }) => {
    const { createInterface } = await import('node:readline/promises');
    const rl = createInterface({ input: ctx.io.stdin, output: ctx.io.stderr, terminal: true });
    try {
      const answer = await rl.question(
        `dnc is not sure which columns of ${input} hold the phone numbers: ${candidates.join(', ')}\n` +
          'Scrub which? (names or numbers, comma-separated; empty to stop) ',
      );
      return answer.trim() === '' ? null : answer.trim();
    } finally {
      rl.close();
    }
  };
}

/** Shows the run's events: lines on stderr, progress on the spinner (or plain lines when not on a terminal). */
function showEvents(ctx: Context, progress: Awaited<ReturnType<typeof createProgress>>): (event: BatchEvent) => void {
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

/** The summary, what to do next, and the exit code of a batch that ran to an end (or a clean stop). */
async function finish(ctx: Context, r: Extract<BatchRunResult, { kind: 'finished' }>): Promise<number> {
  const { summary, counts: after, stopped } = r;
  // A list read from standard input is piped again to resume.
  const resume = r.resume.startsWith('dnc batch - ') ? `${r.resume} (piping the same list to it)` : r.resume;
  await showBatchSummary(ctx, summary, {
    uniqueNumbers: after.queued + after.in_flight + after.done + after.pending,
    creditsTotal: after.credits,
    creditsThisRun: r.creditsThisRun,
    sent: r.sent,
    elapsedMs: r.elapsedMs,
    stopped,
    pending: after.pending,
    journalPath: r.journalPath,
    summaryToStderr: r.outputPath === '-',
    unansweredSends: r.unansweredSends,
    error: r.fatal ? jsonErrorOf(r.fatal) : null,
    paidAgain: r.paidAgain ?? null,
    estimate: r.estimate ?? null,
  });
  // Stopped on an error after the output was written: the summary above, then the error (main prints it, exits with its
  // status).
  if (r.fatal) throw r.fatal;
  if (stopped === 'interrupted') {
    ctx.warn(`dnc: interrupted; ${formatInteger(after.queued)} number(s) not checked. Resume with: ${resume}`);
    return ExitCode.INTERRUPTED;
  }
  if (stopped === 'credit_limit' || stopped === 'budget_reached') {
    const why =
      stopped === 'credit_limit'
        ? 'the credit limit was reached (429)'
        : `the --max-credits budget of ${r.maxCredits} was reached`;
    const next =
      stopped === 'credit_limit'
        ? 'after a credit top-up or in the next billing period (`dnc usage` shows the balance)'
        : 'with a larger budget (credits already used by this batch count toward it; the journal remembers the ' +
          'budget, so name the new one)';
    // (A resume command that repeats the options, for -o -, names the old budget: the new one replaces it.)
    const command =
      stopped === 'budget_reached'
        ? `${resume.replace(/ \(piping the same list to it\)$/, '').replace(/ --max-credits \S+/, '')} ` +
          `--max-credits <N|none>`
        : resume;
    ctx.warn(
      `dnc: stopped: ${why}; ${formatInteger(after.queued)} number(s) not checked. Resume ${next} with: ${command}`,
    );
    return ExitCode.CREDIT;
  }
  if (after.pending > 0) {
    ctx.warn(
      `dnc: ${after.pending} webhook lookup(s) pending. Receive their results with: dnc listen --results ` +
        `${path.relative(ctx.cwd, r.outputPath) || r.outputPath}`,
    );
    return ExitCode.PENDING;
  }
  const unfinished = summary.byResult.not_checked + summary.byResult.failed;
  if (unfinished > 0) {
    const waiting = summary.webhookRequired;
    const charged = unfinished - waiting - summary.retryable - summary.unanswered - summary.notCalculated;
    const bare = resume.replace(/ \(piping the same list to it\)$/, '');
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
    ctx.warn(
      `dnc: finished, but ${unfinished} row(s) have no verdict (${summary.byResult.not_checked} not_checked, ` +
        `${summary.byResult.failed} failed): ${advice.join('; ')}`,
    );
    return ExitCode.UNFINISHED;
  }
  return ExitCode.OK;
}

/**
 * What finishes rows that failed after a charge: --resend-failed, naming what it costs; when it was given (they
 * failed again), a person's review (the --review-out list when there is one). Never a flag already given.
 */
function chargedAdvice(charged: number, r: Extract<BatchRunResult, { kind: 'finished' }>, bare: string): string {
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
