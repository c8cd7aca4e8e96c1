// `dnc batch`: scrubs a call list — one lookup per distinct number, a verdict on every row, resumable at any point.
import { existsSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import type { CsvLayout } from '../batch/csv-input.js';
import type { BatchJournal, BatchMeta, ResultOptions, StoppedReason } from '../batch/journal.js';
import type { PhoneCache } from '../batch/phone-cache.js';
import type { RenderSummary } from '../batch/render.js';
import type { SchedulerOutcome, SchedulerProgress } from '../batch/scheduler.js';
import { checkWebhookUrlOption, parseCountryOption, parseIntegerOption } from '../config.js';
import { isProcessAlive, type Context } from '../context.js';
import { ExitCode, usageError } from '../errors.js';
import { parseDuration } from '../evidence/duration.js';
import { createProgress, writeLine } from '../io.js';
import type { CommandHost } from '../main.js';
import type { ServiceClient } from '../service/client.js';

export interface BatchOptions {
  output?: string | undefined;
  column?: string | undefined;
  country?: string | undefined;
  concurrency: number;
  webhookUrl?: string | undefined;
  webhookAll: boolean;
  allowInsecureWebhookUrl: boolean;
  maxCredits: number | null;
  dryRun: boolean;
  restart: boolean;
  callableOut?: string | undefined;
  suppressedOut?: string | undefined;
  delimiter?: string | undefined;
  header: boolean;
  /** --reuse-within: verdicts of the same service checked within this window are reused (src/evidence). */
  reuseWithinMs?: number | null;
}

export const MAX_CONCURRENCY = 64;

const HELP = `
The output has every input row, in input order, input columns unchanged, then the columns
dnc_phone_e164, dnc_country, dnc_result, dnc_do_not_call, dnc_list_source, dnc_checked_at,
dnc_correlation_id, dnc_error_code, dnc_error, dnc_credits; same delimiter as the input.
Only rows whose dnc_result is "callable" may be called.

Each distinct number is looked up once. Progress is journaled in OUTPUT.journal.sqlite beside
the output: run the same command again to resume a stopped batch (nothing answered is sent
again); --restart starts over.

Examples:
  dnc batch leads.csv
  dnc batch leads.csv -o scrubbed.csv --country GB --callable-out call-these.csv
  dnc batch leads.csv --dry-run
  dnc batch leads.csv --max-credits 500 --concurrency 16`;

export function registerBatch(program: Command, host: CommandHost): void {
  const command = program
    .command('batch')
    .description('scrub a CSV call list: a do-not-call verdict on every row, one lookup per distinct number, resumable')
    .argument('<input>', 'the CSV file (UTF-8, with or without BOM; comma, semicolon, tab or pipe separated)')
    .option('-o, --output <file>', 'where to write the results (default: INPUT.results.csv beside the input)')
    .option('--column <name|index>', 'the phone column: a header name or a 1-based index (default: detected from the header)')
    .option('--country <cc>', 'region for numbers in national format, e.g. US or GB')
    .option('--concurrency <n>', `lookups in flight at once, 1 to ${MAX_CONCURRENCY}`, '8')
    .option('--webhook-url <url>', 'webhook mode for webhook-only countries (AU): results are pushed to this https URL')
    .option('--webhook-all', 'send every lookup in webhook mode (needs --webhook-url)')
    .option('--allow-insecure-webhook-url', 'allow an http:// or loopback --webhook-url (for `dnc sandbox --allow-insecure-webhooks`)')
    .option('--max-credits <n>', 'never start a lookup that could take the batch past N credits')
    .option('--dry-run', 'send nothing: count rows, distinct numbers, countries, invalid rows; show balance and estimated cost')
    .option('--restart', 'discard the journal of an earlier run of this batch and start over')
    .option('--callable-out <file>', 'also write the callable rows (input columns only) to FILE')
    .option('--suppressed-out <file>', 'also write the do-not-call rows (input columns only) to FILE')
    .option('--delimiter <c>', "the input's delimiter: , ; | or tab (default: detected from the header line)")
    .option('--no-header', 'the first line is a data row (give --column INDEX when there are several columns)')
    .option('--reuse-within <duration>', 'reuse verdicts of numbers checked within DURATION (e.g. 7d, 12h) instead of looking them up again')
    .addHelpText('after', HELP);
  host.action(command, async (ctx, cmd) => {
    const o = cmd.opts() as Record<string, unknown>;
    const options: BatchOptions = {
      output: o.output as string | undefined,
      column: o.column as string | undefined,
      country: o.country as string | undefined,
      concurrency: parseIntegerOption('--concurrency', String(o.concurrency), 1, MAX_CONCURRENCY),
      webhookUrl: o.webhookUrl as string | undefined,
      webhookAll: o.webhookAll === true,
      allowInsecureWebhookUrl: o.allowInsecureWebhookUrl === true,
      maxCredits: o.maxCredits === undefined ? null : parseIntegerOption('--max-credits', String(o.maxCredits), 0),
      dryRun: o.dryRun === true,
      restart: o.restart === true,
      callableOut: o.callableOut as string | undefined,
      suppressedOut: o.suppressedOut as string | undefined,
      delimiter: o.delimiter as string | undefined,
      header: o.header !== false,
      reuseWithinMs: o.reuseWithin === undefined ? null : parseDuration('--reuse-within', String(o.reuseWithin)),
    };
    return runBatch(ctx, cmd.args[0]!, options);
  });
}

function samePath(a: string, b: string): boolean {
  if (path.resolve(a) === path.resolve(b)) return true;
  try {
    return existsSync(a) && existsSync(b) && realpathSync(a) === realpathSync(b);
  } catch {
    return false;
  }
}

/** Checks options and paths before anything is read or sent (exit 2). */
async function checkOptions(ctx: Context, input: string, options: BatchOptions) {
  const country = await parseCountryOption(options.country);
  if (options.webhookAll && options.webhookUrl === undefined) {
    throw usageError('E_USAGE', '--webhook-all needs --webhook-url', { hint: 'give the https URL the service should push results to' });
  }
  await checkWebhookUrlOption(options.webhookUrl, options.allowInsecureWebhookUrl);
  const inputPath = path.resolve(ctx.cwd, input);
  const defaultOutput = inputPath.replace(/(\.[^./\\]*)?$/, '.results.csv');
  const outputPath = path.resolve(ctx.cwd, options.output ?? defaultOutput);
  const callableOut = options.callableOut ? path.resolve(ctx.cwd, options.callableOut) : null;
  const suppressedOut = options.suppressedOut ? path.resolve(ctx.cwd, options.suppressedOut) : null;
  const outputs: Array<[string, string]> = [['-o', outputPath]];
  if (callableOut) outputs.push(['--callable-out', callableOut]);
  if (suppressedOut) outputs.push(['--suppressed-out', suppressedOut]);
  for (const [flag, file] of outputs) {
    if (samePath(file, inputPath)) {
      throw usageError('E_USAGE', `${flag} ${file} is the input file; dnc never modifies its input`, { hint: 'write the results to another file' });
    }
    const dir = path.dirname(file);
    if (!existsSync(dir) || !statSync(dir).isDirectory()) {
      throw usageError('E_USAGE', `${flag} ${file}: the folder ${dir} does not exist`, { hint: 'create it first, or choose another path' });
    }
  }
  for (let i = 0; i < outputs.length; i++) {
    for (let j = i + 1; j < outputs.length; j++) {
      if (samePath(outputs[i]![1], outputs[j]![1])) {
        throw usageError('E_USAGE', `${outputs[i]![0]} and ${outputs[j]![0]} name the same file ${outputs[i]![1]}`);
      }
    }
  }
  return { country, inputPath, outputPath, callableOut, suppressedOut };
}

/** The command that resumes this batch, as the user would type it. */
function resumeCommand(input: string, options: BatchOptions, outputPath: string, cwd: string): string {
  const q = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);
  const rel = (p: string) => {
    const r = path.relative(cwd, p);
    return r.startsWith('..') || path.isAbsolute(r) ? p : r;
  };
  const parts = ['dnc', 'batch', q(input), '-o', q(rel(outputPath))];
  if (options.column !== undefined) parts.push('--column', q(options.column));
  if (options.country !== undefined) parts.push('--country', q(options.country));
  if (options.delimiter !== undefined) parts.push('--delimiter', q(options.delimiter));
  if (!options.header) parts.push('--no-header');
  if (options.webhookUrl !== undefined) parts.push('--webhook-url', q(options.webhookUrl));
  if (options.webhookAll) parts.push('--webhook-all');
  if (options.allowInsecureWebhookUrl) parts.push('--allow-insecure-webhook-url');
  if (options.concurrency !== 8) parts.push('--concurrency', String(options.concurrency));
  return parts.join(' ');
}

function describeOptions(o: ResultOptions): string {
  const parts = [
    `country=${o.country ?? '(none)'}`,
    `delimiter=${o.delimiter === '\t' ? 'tab' : o.delimiter}`,
    `header=${o.header}`,
    `phone column=${o.phoneIndex + 1}`,
    `webhook-url=${o.webhookUrl ?? '(none)'}`,
    `webhook-all=${o.webhookAll}`,
  ];
  return parts.join(', ');
}

function sameResultOptions(a: ResultOptions, b: ResultOptions): boolean {
  return (
    a.country === b.country &&
    a.delimiter === b.delimiter &&
    a.header === b.header &&
    a.phoneIndex === b.phoneIndex &&
    a.webhookUrl === b.webhookUrl &&
    a.webhookAll === b.webhookAll
  );
}


export async function runBatch(ctx: Context, input: string, options: BatchOptions): Promise<number> {
  const paths = await checkOptions(ctx, input, options);
  const { openCsvLayout } = await import('../batch/csv-input.js');
  const layout = await openCsvLayout(paths.inputPath, { delimiter: options.delimiter, column: options.column, header: options.header });
  const resultOptions: ResultOptions = {
    country: paths.country ?? null,
    delimiter: layout.delimiter,
    header: options.header,
    phoneIndex: layout.phoneIndex,
    webhookUrl: options.webhookUrl ?? null,
    webhookAll: options.webhookAll,
  };
  if (options.dryRun) return dryRun(ctx, input, layout, resultOptions, options);

  // Configuration problems surface before the input is read, not after.
  const serviceOrigin = new URL((await ctx.serviceConfig()).baseUrl.value).origin;
  const startedAt = ctx.now();
  const evidence = await import('../evidence/batch-evidence.js');
  const journalMod = await import('../batch/journal.js');
  const journalPath = journalMod.journalPathFor(paths.outputPath);
  const lockDeps = { pid: process.pid, isAlive: isProcessAlive };
  if (options.restart && existsSync(journalPath)) {
    const holder = journalMod.lockHolder(journalPath, lockDeps);
    if (holder !== null) {
      throw usageError('E_JOURNAL_BUSY', `cannot restart: another dnc batch (pid ${holder}) is using ${journalPath}`, {
        hint: 'stop it first (Ctrl-C), then run with --restart again',
      });
    }
    // A listener would go on acknowledging pushes into the removed journal: those results would be lost.
    const listener = journalMod.lockHolder(journalPath, lockDeps, 'listen');
    if (listener !== null) {
      throw usageError('E_JOURNAL_BUSY', `cannot restart: dnc listen (pid ${listener}) is storing pushes in ${journalPath}`, {
        hint: 'stop it first (Ctrl-C; the pushes it has are kept until then), then run with --restart again',
      });
    }
    journalMod.deleteJournalFiles(journalPath);
    ctx.info(`--restart: removed the journal ${journalPath}`);
  }
  const lock = journalMod.acquireJournalLock(journalPath, lockDeps);
  let journal: BatchJournal | undefined;
  let client: ServiceClient | undefined;
  let abandoned = false;
  try {
    journal = await journalMod.BatchJournal.open(journalPath, { create: true }, ctx.now);
    const { PhoneCache } = await import('../batch/phone-cache.js');
    const phones = new PhoneCache(resultOptions.country ?? undefined);
    await prepareJournal(ctx, journal, layout, resultOptions, paths, input, serviceOrigin, phones);
    await evidence.beforeLookups(ctx, ctx, journal, { service: serviceOrigin, reuseWithinMs: options.reuseWithinMs ?? null });

    const counts = journal.summaryCounts();
    const todo = counts.queued + counts.in_flight;
    let outcome: SchedulerOutcome | null = null;
    if (todo > 0) {
      client = await ctx.createClient({ connections: options.concurrency });
      const { cacheDir, readCosts } = await import('../batch/cost-cache.js');
      const costs = new Map([...(await readCosts(cacheDir(ctx.env, ctx.homedir), serviceOrigin)), ...journal.learnedCosts()]);
      const webhookMissing = await webhookMissingFor(options);
      const supported = journal.supportedCountries();
      const guard = await evidence.creditShortfall(client, journal, costs, (country) => !webhookMissing(country) && (!supported || supported.includes(country)));
      for (const line of guard.lines) ctx.warn(`dnc: ${line}`);
      if (guard.balanceError) ctx.debug(`credit guard skipped: the balance could not be read (${(guard.balanceError as Error).message})`);
      outcome = await runLookups(ctx, journal, client, options, costs);
      abandoned = outcome.abandoned;
      if (abandoned) {
        // Not rendered (the user asked to stop at once), but the journal says why the rest is not checked.
        try {
          journal.setStoppedReason('interrupted');
        } catch {
          // The answers are committed; a rerun records the reason again.
        }
        ctx.warn('dnc: stopped at once; every answer received so far is in the journal. Run the same command again to resume.');
        return ExitCode.INTERRUPTED;
      }
      if (outcome.fatal) {
        // A stop like any other: the output shows every answer so far, the rest not_checked.
        let rendered = false;
        try {
          journal.setStoppedReason('service_failure');
          const { renderBatchOutput } = await import('../batch/render.js');
          await renderBatchOutput(journal, { phones });
          rendered = true;
          await evidence.afterRender(ctx, ctx, journal, { baseUrl: (await ctx.serviceConfig()).baseUrl.value, startedAt });
          ctx.warn(`dnc: ${paths.outputPath} holds the answers so far; the rest are not_checked (service_failure)`);
        } catch (renderError) {
          const why = (renderError as Error).message;
          ctx.warn(
            rendered
              ? `dnc: ${paths.outputPath} holds the answers so far (the rest not_checked), but its evidence manifest could not be written (${why})`
              : `dnc: the output could not be written (${why}); the journal keeps every answer`,
          );
        }
        const resume = resumeCommand(input, options, paths.outputPath, ctx.cwd);
        throw Object.assign(outcome.fatal, {
          hint: `${outcome.fatal.hint ? `${outcome.fatal.hint}; then ` : ''}run \`${resume}\` to resume (answered numbers are not sent again)`,
        });
      }
      journal.setStoppedReason(outcome.stoppedReason);
      await rememberCosts(ctx, journal);
    } else {
      journal.setStoppedReason(null);
    }

    const { renderBatchOutput } = await import('../batch/render.js');
    const summary = await renderBatchOutput(journal, { phones });
    await evidence.afterRender(ctx, ctx, journal, { baseUrl: (await ctx.serviceConfig()).baseUrl.value, startedAt });
    const after = journal.summaryCounts();
    const stopped: StoppedReason | null = outcome?.stoppedReason ?? null;
    await report(ctx, summary, {
      uniqueNumbers: after.queued + after.in_flight + after.done + after.pending,
      creditsTotal: after.credits,
      creditsThisRun: outcome?.creditsThisRun ?? 0,
      sent: outcome?.sent ?? 0,
      elapsedMs: outcome?.elapsedMs ?? 0,
      stopped,
      pending: after.pending,
      journalPath,
    });
    const resume = resumeCommand(input, options, paths.outputPath, ctx.cwd);
    if (stopped === 'interrupted') {
      ctx.warn(`dnc: interrupted; ${after.queued} number(s) not checked. Resume with: ${resume}`);
      return ExitCode.INTERRUPTED;
    }
    if (stopped === 'credit_limit' || stopped === 'budget_reached') {
      const why = stopped === 'credit_limit' ? 'the credit limit was reached (429)' : `the --max-credits budget of ${options.maxCredits} was reached`;
      const next =
        stopped === 'credit_limit'
          ? 'after a credit top-up or in the next billing period (`dnc usage` shows the balance)'
          : 'with a larger --max-credits (credits already used by this batch count toward it)';
      ctx.warn(`dnc: stopped: ${why}; ${after.queued} number(s) not checked. Resume ${next} with: ${resume}`);
      return ExitCode.CREDIT;
    }
    if (after.pending > 0) {
      ctx.warn(
        `dnc: ${after.pending} webhook lookup(s) pending. Receive their results with: dnc listen --results ${path.relative(ctx.cwd, paths.outputPath) || paths.outputPath}`,
      );
      return ExitCode.PENDING;
    }
    return ExitCode.OK;
  } finally {
    // Second Ctrl-C: lookups still in flight are dropped, not awaited (their numbers stay in flight in the journal).
    if (abandoned) await (client?.destroy ?? client?.close)?.call(client).catch(() => {});
    else await client?.close();
    journal?.close();
    lock.release();
  }
}

/** Creates the journal's batch, or checks that an existing one is this batch; reads the input into it. */
async function prepareJournal(
  ctx: Context,
  journal: BatchJournal,
  layout: CsvLayout,
  resultOptions: ResultOptions,
  paths: { inputPath: string; outputPath: string; callableOut: string | null; suppressedOut: string | null },
  input: string,
  serviceOrigin: string,
  phones: PhoneCache,
): Promise<void> {
  const { ingestInput, hashFile } = await import('../batch/ingest.js');
  const existing = journal.meta();
  if (existing && journal.ingested) {
    const sha = await hashFile(paths.inputPath);
    if (sha !== existing.inputSha256) {
      throw usageError('E_JOURNAL_MISMATCH', `the journal ${journal.path} belongs to a batch of a different input (${existing.inputPath}, another SHA-256)`, {
        hint: `the input changed since that batch began; run with --restart to start over (answers already paid for in it are discarded), or write to another -o`,
      });
    }
    if (!sameResultOptions(existing.options, resultOptions)) {
      throw usageError('E_JOURNAL_MISMATCH', `the journal ${journal.path} was made with other options (${describeOptions(existing.options)})`, {
        hint: 'run the command with the same options to resume, or add --restart to start over with these',
      });
    }
    if (existing.serviceOrigin && existing.serviceOrigin !== serviceOrigin) {
      throw usageError('E_JOURNAL_MISMATCH', `the journal ${journal.path} holds answers from ${existing.serviceOrigin}, not ${serviceOrigin}`, {
        hint: 'use the same --base-url to resume, or --restart',
      });
    }
    journal.setMeta({ ...existing, inputPath: paths.inputPath, outputPath: paths.outputPath, callableOut: paths.callableOut, suppressedOut: paths.suppressedOut });
    const c = journal.summaryCounts();
    ctx.info(`Resuming ${journal.path}: ${c.done} number(s) done, ${c.pending} pending (webhook), ${c.queued + c.in_flight} to look up`);
    // A possible second charge is worth a warning (shown under --quiet too); --max-credits counts these as spent.
    if (c.in_flight > 0) {
      ctx.warn(`dnc: warning: ${c.in_flight} number(s) were in flight when the last run stopped and may have been charged: they are sent again`);
    }
    return;
  }
  ctx.info(readingLine(input, layout));
  const scan = await ingestInput(layout, resultOptions.country ?? undefined, journal, phones);
  const meta: BatchMeta = {
    schema: 1,
    inputPath: paths.inputPath,
    inputSha256: scan.sha256,
    inputSize: scan.bytes,
    outputPath: paths.outputPath,
    callableOut: paths.callableOut,
    suppressedOut: paths.suppressedOut,
    options: resultOptions,
    layout: { recordDelimiter: layout.recordDelimiter, header: layout.header, columnCount: layout.columnCount, phoneLabel: layout.phoneLabel, bom: layout.bom },
    createdAt: ctx.now().toISOString(),
    serviceOrigin,
  };
  journal.setMeta(meta);
  journal.markIngested();
  const c = journal.summaryCounts();
  ctx.info(
    `${scan.rows} row(s), ${c.queued} distinct number(s) to look up, ${scan.invalidRows} row(s) with a number that cannot be valid (not sent)`,
  );
}

async function rememberCosts(ctx: Context, journal: BatchJournal): Promise<void> {
  const { cacheDir, writeCosts } = await import('../batch/cost-cache.js');
  const origin = journal.meta()?.serviceOrigin;
  if (!origin) return;
  if (!(await writeCosts(cacheDir(ctx.env, ctx.homedir), origin, journal.learnedCosts(), ctx.now()))) {
    ctx.debug('could not write the cost cache (dry-run estimates will not know these costs)');
  }
}

function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

async function runLookups(
  ctx: Context,
  journal: BatchJournal,
  client: ServiceClient,
  options: BatchOptions,
  knownCosts: ReadonlyMap<string, number>,
): Promise<SchedulerOutcome> {
  const { BatchScheduler } = await import('../batch/scheduler.js');
  const { WEBHOOK_ONLY_COUNTRIES } = await import('../wire/types.js');
  const scheduler = new BatchScheduler({
    journal,
    client,
    concurrency: options.concurrency,
    maxCredits: options.maxCredits,
    webhookUrl: options.webhookUrl ?? null,
    webhookAll: options.webhookAll,
    webhookOnlyCountries: WEBHOOK_ONLY_COUNTRIES,
    knownCosts,
  });
  const progress = await createProgress(ctx.io, { quiet: ctx.quiet || ctx.json });
  const startedAt = performance.now();
  let shownAt = -Infinity;
  scheduler.on('progress', (p: SchedulerProgress) => {
    // Formatting is not free at 1,600 answers a second: a few updates a second are plenty.
    const now = performance.now();
    if (now - shownAt < 100 && p.answered < p.total) return;
    shownAt = now;
    const elapsed = (performance.now() - startedAt) / 1000;
    const rate = elapsed > 0.5 ? p.answered / elapsed : 0;
    const eta = rate > 0 ? ` · ETA ${formatDuration(((p.total - p.answered) / rate) * 1000)}` : '';
    progress.update(`${p.answered.toLocaleString('en-US')}/${p.total.toLocaleString('en-US')} numbers · ${Math.round(rate)}/s${eta} · ${p.credits.toLocaleString('en-US')} credits used`);
  });
  const off = ctx.interrupts.on((count) => {
    if (count === 1) {
      progress.info('dnc: stopping: no new lookups; waiting for those in flight (Ctrl-C again to quit at once)');
      scheduler.stop('interrupted');
    } else scheduler.abandon();
  });
  try {
    return await scheduler.run();
  } finally {
    off();
    progress.stop();
  }
}

interface ReportExtras {
  uniqueNumbers: number;
  creditsTotal: number;
  creditsThisRun: number;
  sent: number;
  elapsedMs: number;
  stopped: StoppedReason | null;
  pending: number;
  journalPath: string;
}

async function report(ctx: Context, summary: RenderSummary, extras: ReportExtras): Promise<void> {
  if (ctx.json) {
    writeLine(
      ctx.io.stdout,
      JSON.stringify({
        input: summary.input,
        output: summary.output,
        rows: summary.rows,
        unique_numbers: extras.uniqueNumbers,
        ...summary.byResult,
        credits_used: extras.creditsTotal,
        stopped_reason: extras.stopped,
      }),
    );
    return;
  }
  const { renderBatchSummary } = await import('../render/batch-summary.js');
  ctx.io.stdout.write(
    renderBatchSummary(summary, extras, { tty: ctx.io.stdoutIsTTY, color: ctx.io.stdoutColor, columns: ctx.io.columns }),
  );
}

/** Whether a country's numbers go unsent in this run: webhook mode (webhook-only, or --webhook-all) without --webhook-url. */
async function webhookMissingFor(options: BatchOptions): Promise<(country: string) => boolean> {
  const { WEBHOOK_ONLY_COUNTRIES } = await import('../wire/types.js');
  return (country) => !options.webhookUrl && (options.webhookAll || WEBHOOK_ONLY_COUNTRIES.includes(country));
}

/** What is read, named as the user gave it, with what was detected in it. */
function readingLine(input: string, layout: CsvLayout): string {
  return `Reading ${input} (phone column: ${layout.phoneLabel}, delimiter: ${layout.delimiter === '\t' ? 'tab' : layout.delimiter})`;
}

async function dryRun(ctx: Context, input: string, layout: CsvLayout, resultOptions: ResultOptions, options: BatchOptions): Promise<number> {
  const { scanInput } = await import('../batch/ingest.js');
  const webhookMissing = await webhookMissingFor(options);
  ctx.info(readingLine(input, layout));
  // Distinct numbers as 8-byte doubles: memory stays small however many distinct numbers the list has.
  const { DistinctNumbers } = await import('../phone/distinct-numbers.js');
  const seen = new DistinctNumbers();
  const byCountry = new Map<string, number>();
  const scan = await scanInput(layout, resultOptions.country ?? undefined, (cell) => {
    if (!seen.add(cell.e164)) return;
    byCountry.set(cell.country, (byCountry.get(cell.country) ?? 0) + 1);
  });
  const { cacheDir, readCosts } = await import('../batch/cost-cache.js');
  let balance: { creditsRemaining: number; creditLimit: number } | null = null;
  let origin: string | null = null;
  try {
    const cfg = await ctx.serviceConfig();
    origin = new URL(cfg.baseUrl.value).origin;
    const client = await ctx.createClient({ connections: 1 });
    try {
      const usage = await client.usage();
      const period = usage.body.data[0];
      if (period) balance = { creditsRemaining: period.credits_remaining, creditLimit: period.credit_limit };
    } finally {
      await client.close();
    }
  } catch (err) {
    ctx.warn(`dnc: warning: the current balance is not available: ${(err as Error).message}`);
  }
  const costs = origin ? await readCosts(cacheDir(ctx.env, ctx.homedir), origin) : new Map<string, number>();
  const countries = [...byCountry.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const unknown: string[] = [];
  const notSent: string[] = [];
  for (const [country] of countries) {
    if (webhookMissing(country)) notSent.push(country);
    else if (!costs.has(country)) unknown.push(country);
  }
  const { dryRunGuard } = await import('../evidence/credit-guard.js');
  const guard = dryRunGuard(byCountry, notSent, costs, balance?.creditsRemaining ?? null);
  const result = {
    input: layout.path,
    rows: scan.rows,
    unique_numbers: seen.size,
    invalid_rows: scan.invalidRows,
    by_country: Object.fromEntries(countries),
    balance: balance ? { credits_remaining: balance.creditsRemaining, credit_limit: balance.creditLimit } : null,
    // One estimate everywhere: the guard's, where a country whose cost is not learned yet counts at the floor.
    estimated_credits: guard.forecast.estimate,
    estimate_complete: unknown.length === 0,
    unknown_cost_countries: unknown,
    webhook_required_countries: notSent,
  };
  if (ctx.json) {
    writeLine(ctx.io.stdout, JSON.stringify({ dry_run: true, ...result, credit_guard: guard.json }));
    return ExitCode.OK;
  }
  const { renderDryRun } = await import('../render/batch-summary.js');
  ctx.io.stdout.write(
    renderDryRun(
      { ...result, costs, invalidSamples: scan.invalidSamples, maxCredits: options.maxCredits },
      { tty: ctx.io.stdoutIsTTY, color: ctx.io.stdoutColor, columns: ctx.io.columns },
    ),
  );
  for (const line of guard.lines) writeLine(ctx.io.stdout, line);
  return ExitCode.OK;
}
