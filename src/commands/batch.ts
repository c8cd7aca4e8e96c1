// `dnc batch`: scrubs a call list — one lookup per distinct number, a verdict on every row, resumable at any point.
import { createWriteStream, existsSync, fstatSync, mkdirSync, statSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import path from 'node:path';
import type { Command } from 'commander';
import type { CsvLayout } from '../batch/csv-input.js';
import type { OutputTarget } from '../batch/paths.js';
import type { BatchJournal, BatchMeta, ResultOptions, StoppedReason } from '../batch/journal.js';
import type { PhoneCache } from '../batch/phone-cache.js';
import type { RenderSummary } from '../batch/render.js';
import type { SchedulerOutcome, SchedulerProgress } from '../batch/scheduler.js';
import { checkWebhookUrlOption, parseCountryOption, parseIntegerOption } from '../config.js';
import { isProcessAlive, type Context } from '../context.js';
import { describeFsError, ExitCode, inputError, usageError } from '../errors.js';
import { parseEncodingOption, type TextEncoding } from '../batch/encoding-names.js';
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
  /** --encoding: the CSV input's text encoding (default UTF-8, or UTF-16 by its byte-order mark). */
  encoding?: TextEncoding | undefined;
  /** --output-encoding: the CSV outputs' text encoding (default: the input's). */
  outputEncoding?: TextEncoding | undefined;
  /** --format csv|xlsx: how the results are written (default: by the output's extension). */
  format?: 'csv' | 'xlsx' | undefined;
  /** --sheet NAME|INDEX: the sheet of an .xlsx input (the first by default). */
  sheet?: string | undefined;
  /** --reuse-within: verdicts of the same service checked within this window are reused (src/evidence). */
  reuseWithinMs?: number | null;
  /** --escape-formulas: formula-leading input cells get a leading ' in the outputs (for files bound for a spreadsheet). */
  escapeFormulas?: boolean;
  /** --journal: where the journal goes (default: beside the output, or the state folder when the output is not a file). */
  journal?: string | undefined;
  /** --review-out: the rows that need a person (invalid, unsupported_country, not_checked, failed) with their reasons. */
  reviewOut?: string | undefined;
  /** --dial-out: the distinct callable numbers in E.164, one per line, for a dialler. */
  dialOut?: string | undefined;
  /** The options given on the command line; the others are taken from the journal when it remembers them. */
  given?: ReadonlySet<RememberedOption>;
}

/** Options a journal remembers: a rerun without them resumes with what the batch was started with. */
export const REMEMBERED_OPTIONS = [
  'column',
  'country',
  'delimiter',
  'header',
  'sheet',
  'encoding',
  'outputEncoding',
  'concurrency',
  'webhookUrl',
  'webhookAll',
  'allowInsecureWebhookUrl',
  'maxCredits',
  'callableOut',
  'suppressedOut',
  'reviewOut',
  'dialOut',
  'reuseWithinMs',
  'escapeFormulas',
  'format',
] as const satisfies ReadonlyArray<keyof BatchOptions>;
export type RememberedOption = (typeof REMEMBERED_OPTIONS)[number];
/** Options that change answers: a different value needs --restart (the others may change on any rerun). */
const ANSWER_OPTIONS: ReadonlySet<RememberedOption> = new Set(['column', 'country', 'delimiter', 'header', 'sheet', 'encoding']);
/** How each remembered option is written on a command line (for the resume line and messages). */
const FLAG: Record<RememberedOption, string> = {
  column: '--column',
  country: '--country',
  delimiter: '--delimiter',
  header: '--no-header',
  sheet: '--sheet',
  encoding: '--encoding',
  outputEncoding: '--output-encoding',
  concurrency: '--concurrency',
  webhookUrl: '--webhook-url',
  webhookAll: '--webhook-all',
  allowInsecureWebhookUrl: '--allow-insecure-webhook-url',
  maxCredits: '--max-credits',
  callableOut: '--callable-out',
  suppressedOut: '--suppressed-out',
  reviewOut: '--review-out',
  dialOut: '--dial-out',
  reuseWithinMs: '--reuse-within',
  escapeFormulas: '--escape-formulas',
  format: '--format',
};
/** Commander's attribute names of the remembered options that differ from ours. */
const ATTRIBUTE: Partial<Record<RememberedOption, string>> = { reuseWithinMs: 'reuseWithin' };

export const MAX_CONCURRENCY = 64;

const HELP = `
The output has every input row, in input order, input columns unchanged, then the columns
dnc_phone_e164, dnc_country, dnc_result, dnc_do_not_call, dnc_list_source, dnc_checked_at,
dnc_correlation_id, dnc_error_code, dnc_error, dnc_credits; same delimiter as the input.
Only rows whose dnc_result is "callable" may be called.

Each distinct number is looked up once. Progress is journaled in OUTPUT.journal.sqlite beside
the output, with the options the batch was started with: \`dnc batch INPUT -o OUTPUT\` alone
resumes a stopped batch with them (nothing answered is sent again) and looks up again the rows
left without a verdict that no credit was spent on. Options that change no answer (budget,
lists, concurrency, webhook URL, --reuse-within) may change on a rerun; --restart starts over.

Exit codes:
  0    every row has a verdict
  2    bad option, phone column missing or ambiguous, -o equal to the input
  3    malformed CSV (file, line and what is wrong are printed); nothing was sent
  4    the key was refused (401/403)
  5    credit limit (429) or --max-credits reached: rerun to resume
  6    the service failed or could not be reached: rerun to resume
  7    finished, but some rows have no verdict (not_checked or failed): rerun to
       finish those no credit was spent on; --review-out FILE lists them all
  8    finished, but webhook results are pending: run \`dnc listen --results OUTPUT\`
  130  interrupted: rerun to resume

Examples:
  dnc batch leads.csv
  dnc batch leads.csv -o scrubbed.csv --country GB --callable-out call-these.csv
  dnc batch leads.csv --dry-run
  dnc batch leads.csv --max-credits 500 --concurrency 16
  dnc batch leads.xlsx -o scrubbed.xlsx --sheet Leads    (docs/excel.md)
  dnc batch export.csv --encoding windows-1252`;

export function registerBatch(program: Command, host: CommandHost): void {
  const command = program
    .command('batch')
    .description('scrub a CSV call list: a do-not-call verdict on every row, one lookup per distinct number, resumable')
    .argument('<input>', 'the CSV file (UTF-8 unless --encoding; comma, semicolon, tab or pipe separated), an .xlsx workbook, or - for standard input')
    .option('-o, --output <file>', 'where to write the results, - for standard output (default: INPUT.results.csv beside the input; standard output when INPUT is -)')
    .option('--column <name|index>', 'the phone column: a header name or a 1-based index (default: detected from the header)')
    .option('--country <cc>', 'region for numbers in national format, e.g. US or GB')
    .option('--concurrency <n>', `lookups in flight at once, 1 to ${MAX_CONCURRENCY}`, '8')
    .option('--webhook-url <url>', 'webhook mode for webhook-only countries (AU): results are pushed to this https URL')
    .option('--webhook-all', 'send every lookup in webhook mode (needs --webhook-url)')
    .option('--allow-insecure-webhook-url', 'allow an http:// or loopback --webhook-url (for `dnc sandbox --allow-insecure-webhooks`)')
    .option('--max-credits <n>', 'never start a lookup that could take the batch past N credits (none: no budget, lifting one the batch was started with)')
    .option('--dry-run', 'send nothing: count rows, distinct numbers, countries, invalid rows; show balance and estimated cost')
    .option('--restart', 'discard the journal of an earlier run of this batch and start over')
    .option('--callable-out <file>', 'also write the callable rows (input columns only) to FILE')
    .option('--suppressed-out <file>', 'also write the do-not-call rows (input columns only) to FILE')
    .option('--delimiter <c>', "the input's delimiter: , ; | or tab (default: detected from the header line)")
    .option('--no-header', 'the first line is a data row (give --column INDEX when there are several columns)')
    .option('--encoding <name>', 'the CSV input\'s encoding: utf-8, windows-1252 (Excel\'s "CSV"), latin1, utf-16le or utf-16be (default: utf-8; UTF-16 is found by its byte-order mark)')
    .option('--output-encoding <name>', 'the CSV outputs\' encoding (default: the input\'s)')
    .option('--format <csv|xlsx>', 'how the results are written (default: by the extension of -o: .xlsx is a workbook, anything else CSV)')
    .option('--sheet <name|index>', 'the sheet of an .xlsx input: a name or a 1-based index (default: the first)')
    .option('--review-out <file>', 'also write the rows that need a person (invalid, unsupported_country, not_checked, failed) with their reasons')
    .option('--dial-out <file>', 'also write the distinct callable numbers in E.164, one per line, for a dialler')
    .option('--escape-formulas', "for files bound for a spreadsheet: input cells starting with = + - @ tab or CR get a leading ' (so + numbers do too)")
    .option('--journal <file>', 'where to keep the journal (default: OUTPUT.journal.sqlite; with -o - or a FIFO, the state folder)')
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
      // `none` lifts a budget the journal remembers.
      maxCredits: o.maxCredits === undefined || o.maxCredits === 'none' ? null : parseIntegerOption('--max-credits', String(o.maxCredits), 0),
      dryRun: o.dryRun === true,
      restart: o.restart === true,
      callableOut: o.callableOut as string | undefined,
      suppressedOut: o.suppressedOut as string | undefined,
      delimiter: o.delimiter as string | undefined,
      header: o.header !== false,
      sheet: o.sheet as string | undefined,
      encoding: parseEncodingOption('--encoding', o.encoding as string | undefined),
      outputEncoding: parseEncodingOption('--output-encoding', o.outputEncoding as string | undefined),
      format: parseFormatOption(o.format as string | undefined),
      reuseWithinMs: o.reuseWithin === undefined ? null : parseDuration('--reuse-within', String(o.reuseWithin)),
      escapeFormulas: o.escapeFormulas === true,
      journal: o.journal as string | undefined,
      reviewOut: o.reviewOut as string | undefined,
      dialOut: o.dialOut as string | undefined,
      given: new Set(REMEMBERED_OPTIONS.filter((name) => cmd.getOptionValueSource(ATTRIBUTE[name] ?? name) === 'cli')),
    };
    return runBatch(ctx, cmd.args[0]!, options);
  });
}

/** What a batch reads and writes, as resolved before anything is read or sent. */
interface BatchPaths {
  /** The file the list is read from: the input, or the spool of standard input once it is read. */
  inputPath: string;
  fromStdin: boolean;
  output: OutputTarget;
  /** The output as it is stored and rendered: a real file path, a FIFO or device path, or `-`. */
  outputPath: string;
  callableOut: string | null;
  suppressedOut: string | null;
  reviewOut: string | null;
  dialOut: string | null;
  country: string | undefined;
}

/** Checks options and paths before anything is read or sent (exit 2; exit 3 for a folder that cannot be written). */
async function checkOptions(ctx: Context, input: string, options: BatchOptions): Promise<BatchPaths> {
  const country = await parseCountryOption(options.country);
  if (options.webhookAll && options.webhookUrl === undefined) {
    throw usageError('E_USAGE', '--webhook-all needs --webhook-url', { hint: 'give the https URL the service should push results to' });
  }
  await checkWebhookUrlOption(options.webhookUrl, options.allowInsecureWebhookUrl);
  const { resolveOutputTarget } = await import('../batch/paths.js');
  const fromStdin = input === '-';
  const inputPath = fromStdin ? '-' : path.resolve(ctx.cwd, input);
  const defaultOutput = fromStdin ? '-' : inputPath.replace(/(\.[^./\\]*)?$/, '.results.csv');
  let output = resolveOutputTarget('-o', options.output ?? defaultOutput, ctx.cwd);
  // /dev/stdout and /proc/self/fd/1 are this process's standard output, which cannot always be opened again
  // by path (a socket gives ENXIO): write to the stream itself.
  if (output.kind === 'stream' && output.path !== '-' && isStandardOutput(output.path)) output = { kind: 'stream', path: '-' };
  const list = (flag: string, given: string | undefined): string | null => {
    if (given === undefined) return null;
    if (given === '-') throw usageError('E_USAGE', `${flag} - : only the results (-o -) can go to standard output`, { hint: `give ${flag} a file name` });
    return resolveOutputTarget(flag, given, ctx.cwd).path;
  };
  return {
    inputPath,
    fromStdin,
    output,
    outputPath: output.path,
    callableOut: list('--callable-out', options.callableOut ?? undefined),
    suppressedOut: list('--suppressed-out', options.suppressedOut ?? undefined),
    reviewOut: list('--review-out', options.reviewOut ?? undefined),
    dialOut: list('--dial-out', options.dialOut ?? undefined),
    country,
  };
}

/**
 * Refuses two roles on one file, and folders that cannot take a first write, before the journal is made
 * or --restart deletes anything: nothing is read from the service until every output can be written.
 */
async function checkFiles(paths: BatchPaths, journalPath: string, manifestPath: string): Promise<void> {
  const { checkWritableFolder, journalSideFiles, refuseCollisions, spoolPathFor } = await import('../batch/paths.js');
  const files = [
    ...(paths.fromStdin ? [{ role: 'the spooled input', path: spoolPathFor(journalPath) }] : [{ role: 'the input', path: paths.inputPath }]),
    ...(paths.output.kind === 'file' ? [{ role: '-o', path: paths.outputPath }] : []),
    ...(paths.callableOut ? [{ role: '--callable-out', path: paths.callableOut }] : []),
    ...(paths.suppressedOut ? [{ role: '--suppressed-out', path: paths.suppressedOut }] : []),
    ...(paths.reviewOut ? [{ role: '--review-out', path: paths.reviewOut }] : []),
    ...(paths.dialOut ? [{ role: '--dial-out', path: paths.dialOut }] : []),
    ...journalSideFiles(journalPath),
    { role: 'the manifest', path: manifestPath },
  ];
  refuseCollisions(files);
  const folders = new Map<string, string>();
  const add = (file: string | null, what: string) => {
    if (file && file !== '-' && !folders.has(path.dirname(file))) folders.set(path.dirname(file), what);
  };
  if (paths.output.kind === 'file') add(paths.outputPath, 'the results');
  for (const f of [paths.callableOut, paths.suppressedOut, paths.reviewOut, paths.dialOut]) if (f && statSafe(f)?.isFile() !== false) add(f, 'a list');
  add(journalPath, 'the journal');
  add(manifestPath, 'the manifest');
  for (const [dir, what] of folders) await checkWritableFolder(dir, what);
}

/** What the journal remembers of this run's options (paths resolved, so a rerun from elsewhere finds them). */
function rememberedRun(options: BatchOptions, paths: BatchPaths): Record<string, unknown> {
  return {
    column: options.column ?? null,
    country: options.country ?? null,
    delimiter: options.delimiter ?? null,
    header: options.header,
    sheet: options.sheet ?? null,
    encoding: options.encoding ?? null,
    outputEncoding: options.outputEncoding ?? null,
    concurrency: options.concurrency,
    webhookUrl: options.webhookUrl ?? null,
    webhookAll: options.webhookAll,
    allowInsecureWebhookUrl: options.allowInsecureWebhookUrl,
    maxCredits: options.maxCredits,
    callableOut: paths.callableOut,
    suppressedOut: paths.suppressedOut,
    reviewOut: paths.reviewOut,
    dialOut: paths.dialOut,
    reuseWithinMs: options.reuseWithinMs ?? null,
    escapeFormulas: options.escapeFormulas === true,
    format: options.format ?? null,
  };
}

function parseFormatOption(raw: string | undefined): 'csv' | 'xlsx' | undefined {
  if (raw === undefined) return undefined;
  const f = raw.trim().toLowerCase();
  if (f === 'csv' || f === 'xlsx') return f;
  throw usageError('E_USAGE', `--format must be csv or xlsx, got '${raw}'`, { hint: 'or leave it out: the extension of -o decides' });
}

function isStandardOutput(file: string): boolean {
  try {
    const a = statSync(file);
    const b = fstatSync(1);
    return a.dev === b.dev && a.ino === b.ino;
  } catch {
    return false;
  }
}

function statSafe(file: string) {
  try {
    return statSync(file);
  } catch {
    return null;
  }
}

/** The command that resumes this batch, as the user would type it. */
function resumeCommand(input: string, options: BatchOptions, outputPath: string, cwd: string): string {
  const q = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);
  const rel = (p: string) => {
    const r = path.relative(cwd, p);
    return r.startsWith('..') || path.isAbsolute(r) ? p : r;
  };
  const parts = ['dnc', 'batch', q(input), '-o', outputPath === '-' ? '-' : q(rel(outputPath))];
  if (options.journal !== undefined) parts.push('--journal', q(options.journal));
  // A journal beside a file output remembers every option: the short command resumes with them all.
  if (outputPath !== '-' || options.journal !== undefined) return parts.join(' ');
  // Standard output: the journal is found by the options that shape answers, so they are repeated.
  if (options.column !== undefined) parts.push('--column', q(options.column));
  if (options.country !== undefined) parts.push('--country', q(options.country));
  if (options.delimiter !== undefined) parts.push('--delimiter', q(options.delimiter));
  if (!options.header) parts.push('--no-header');
  if (options.sheet !== undefined) parts.push('--sheet', q(options.sheet));
  if (options.encoding !== undefined) parts.push('--encoding', options.encoding);
  if (options.outputEncoding !== undefined) parts.push('--output-encoding', options.outputEncoding);
  for (const name of ['webhookUrl', 'webhookAll', 'allowInsecureWebhookUrl', 'maxCredits', 'escapeFormulas'] as const) {
    const text = flagText(name, options[name]);
    if (text) parts.push(...text.split(' ').map((t, i) => (i === 0 ? t : q(t))));
  }
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
    a.phoneIndex === b.phoneIndex
  );
}

/** A remembered option as it is typed on a command line (`--max-credits 50`), for messages. */
function flagText(name: RememberedOption, value: unknown): string {
  if (typeof value === 'boolean') return name === 'header' ? (value ? '' : FLAG.header) : value ? FLAG[name] : '';
  if (value === null || value === undefined) return '';
  if (name === 'reuseWithinMs') return `${FLAG[name]} ${Math.round(Number(value) / 3_600_000)}h`;
  return `${FLAG[name]} ${String(value)}`;
}

/**
 * Takes every option not given on this command line from the journal of the same output, when it remembers
 * them: `dnc batch INPUT -o OUT` alone resumes a batch as it was started (budget, lists, webhook URL …).
 * Returns the options and how to say what was taken.
 */
async function withRememberedOptions(ctx: Context, input: string, options: BatchOptions): Promise<{ options: BatchOptions; resumedWith: string[] }> {
  const none = { options, resumedWith: [] };
  if (options.restart || !options.given) return none;
  const { resolveOutputTarget, journalPathFor } = await import('../batch/paths.js');
  let journalPath: string;
  try {
    if (options.journal !== undefined) journalPath = resolveOutputTarget('--journal', options.journal, ctx.cwd).path;
    else {
      if (input === '-' && options.output === undefined) return none;
      const target = resolveOutputTarget('-o', options.output ?? path.resolve(ctx.cwd, input).replace(/(\.[^./\\]*)?$/, '.results.csv'), ctx.cwd);
      if (target.kind !== 'file') return none;
      journalPath = journalPathFor(target.path);
    }
  } catch {
    return none; // The same check runs again below and says what is wrong.
  }
  if (!existsSync(journalPath)) return none;
  const { BatchJournal } = await import('../batch/journal.js');
  let remembered: Record<string, unknown> | undefined;
  try {
    const journal = await BatchJournal.open(journalPath, { create: false, readonly: true });
    try {
      remembered = journal.meta()?.run;
    } finally {
      journal.close();
    }
  } catch {
    return none; // Opened again below, where an unreadable journal is reported.
  }
  if (!remembered) return none;
  const merged: Record<string, unknown> = { ...options };
  const resumedWith: string[] = [];
  for (const name of REMEMBERED_OPTIONS) {
    if (options.given.has(name) || !(name in remembered)) continue;
    merged[name] = remembered[name] ?? undefined;
    const text = flagText(name, remembered[name]);
    if (text && !(name === 'concurrency' && remembered[name] === 8)) resumedWith.push(text);
  }
  return { options: merged as unknown as BatchOptions, resumedWith };
}


export async function runBatch(ctx: Context, input: string, given: BatchOptions): Promise<number> {
  const { options, resumedWith } = await withRememberedOptions(ctx, input, given);
  if (resumedWith.length > 0) ctx.info(`Resuming with the options this batch was started with: ${resumedWith.join(' ')}`);
  const paths = await checkOptions(ctx, input, options);
  const batchPaths = await import('../batch/paths.js');
  const { manifestPathFor } = await import('../evidence/manifest.js');
  // Where the journal and manifest go is known now unless they follow the input's content (-o -, a FIFO):
  // then no file can collide or be refused before the input is read.
  let early: { journalPath: string; manifestPath: string } | null = null;
  if (!options.dryRun && (options.journal !== undefined || paths.output.kind === 'file')) {
    const journalPath =
      options.journal !== undefined ? batchPaths.resolveOutputTarget('--journal', options.journal, ctx.cwd).path : batchPaths.journalPathFor(paths.outputPath);
    const manifestPath = paths.output.kind === 'file' ? manifestPathFor(paths.outputPath) : journalPath.replace(/\.sqlite$/, '') + '.manifest.json';
    await checkFiles(paths, journalPath, manifestPath);
    early = { journalPath, manifestPath };
  }
  // Configuration problems surface before the input is read, not after.
  const serviceOrigin = options.dryRun ? null : new URL((await ctx.serviceConfig()).baseUrl.value).origin;
  const { openInputLayout } = await import('../batch/open-input.js');
  const { stateDir } = await import('../evidence/paths.js');
  // Standard input is read once, into a spool that every render reads again (as it reads an input file).
  const spool = paths.fromStdin ? await spoolStdin(ctx, paths.output.kind === 'file' ? path.dirname(paths.outputPath) : path.join(stateDir(ctx.env, ctx.homedir), 'batches')) : null;
  try {
    const layout = await openInputLayout(spool?.tmp ?? paths.inputPath, { delimiter: options.delimiter, column: options.column, header: options.header, sheet: options.sheet, encoding: options.encoding });
    const resultOptions: ResultOptions = {
      country: paths.country ?? null,
      delimiter: layout.delimiter,
      header: options.header,
      phoneIndex: layout.phoneIndex,
      webhookUrl: options.webhookUrl ?? null,
      webhookAll: options.webhookAll,
    };
    if (options.dryRun) return await dryRun(ctx, input, layout, resultOptions, options);
    let journalPath = early?.journalPath;
    if (journalPath === undefined) {
      const { hashFile } = await import('../batch/ingest.js');
      journalPath = batchPaths.streamJournalPath(stateDir(ctx.env, ctx.homedir), spool?.sha256 ?? (await hashFile(paths.inputPath)), resultOptions);
      mkdirSync(path.dirname(journalPath), { recursive: true, mode: 0o700 });
    }
    const manifestPath = early?.manifestPath ?? journalPath.replace(/\.sqlite$/, '') + '.manifest.json';
    if (!early) await checkFiles(paths, journalPath, manifestPath);
    if (spool) {
      paths.inputPath = await placeSpool(spool, batchPaths.spoolPathFor(journalPath), journalPath, options.restart);
      layout.path = paths.inputPath;
    }
    return await runBatchJournal(ctx, input, options, paths, layout, resultOptions, serviceOrigin!, journalPath, manifestPath);
  } finally {
    if (spool) await rm(spool.tmp, { force: true });
  }
}

/** Standard input copied to a private temporary file, hashed on the way. */
async function spoolStdin(ctx: Context, dir: string): Promise<{ tmp: string; sha256: string }> {
  const { createHash } = await import('node:crypto');
  const { tempPathFor } = await import('../atomic-file.js');
  if (ctx.io.stdinIsTTY) ctx.info('Reading the call list from standard input (end it with Ctrl-D)');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = tempPathFor(path.join(dir, 'stdin.csv'));
  const hash = createHash('sha256');
  const { Transform } = await import('node:stream');
  const tee = new Transform({
    transform(chunk: Buffer, _enc, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
  try {
    await pipeline(ctx.io.stdin, tee, createWriteStream(tmp, { flags: 'wx', mode: 0o600, flush: true }));
  } catch (err) {
    await rm(tmp, { force: true });
    throw inputError('E_INPUT_UNREADABLE', `cannot read the call list from standard input into ${dir}: ${describeFsError(err)}`, { cause: err });
  }
  return { tmp, sha256: hash.digest('hex') };
}

/**
 * Puts the spooled list where the journal's batch reads it. A different list under a journal that holds a
 * batch is refused (its answers were paid for; --restart discards them), and the old list is kept.
 */
async function placeSpool(spool: { tmp: string; sha256: string }, target: string, journalPath: string, restart: boolean): Promise<string> {
  const { hashFile } = await import('../batch/ingest.js');
  const existing = existsSync(target) ? await hashFile(target) : null;
  if (existing === spool.sha256) return target;
  if (existing !== null && existsSync(journalPath) && !restart) {
    throw usageError('E_JOURNAL_MISMATCH', `the journal ${journalPath} belongs to a batch of another list read from standard input`, {
      hint: 'pipe the same list to resume, write to another -o, or add --restart to start over (answers already paid for in it are discarded; --reuse-within reuses them)',
    });
  }
  await rename(spool.tmp, target);
  return target;
}

async function runBatchJournal(
  ctx: Context,
  input: string,
  options: BatchOptions,
  paths: BatchPaths,
  layout: CsvLayout,
  resultOptions: ResultOptions,
  serviceOrigin: string,
  journalPath: string,
  manifestPath: string,
): Promise<number> {
  const startedAt = ctx.now();
  const evidence = await import('../evidence/batch-evidence.js');
  const journalMod = await import('../batch/journal.js');
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
    await prepareJournal(ctx, journal, layout, resultOptions, paths, input, serviceOrigin, phones, {
      escapeFormulas: options.escapeFormulas === true,
      outputFormat: options.format,
      outputEncoding: options.outputEncoding,
      manifestPath: paths.output.kind === 'file' ? undefined : manifestPath,
      reviewOut: paths.reviewOut,
      dialOut: paths.dialOut,
      run: rememberedRun(options, paths),
    });
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
          const partial = await renderBatchOutput(journal, { phones, stdout: ctx.io.stdout });
          rendered = true;
          await evidence.afterRender(ctx, ctx, journal, { baseUrl: (await ctx.serviceConfig()).baseUrl.value, startedAt, rendered: partial });
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
    const summary = await renderBatchOutput(journal, { phones, stdout: ctx.io.stdout });
    await evidence.afterRender(ctx, ctx, journal, { baseUrl: (await ctx.serviceConfig()).baseUrl.value, startedAt, rendered: summary });
    if (summary.notHttpsSources > 0) {
      ctx.warn(`dnc: warning: ${summary.notHttpsSources} row(s) have a register source that is not an https URL (the service promises one); check them with \`dnc trace\``);
    }
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
      summaryToStderr: paths.outputPath === '-',
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
    const unfinished = summary.byResult.not_checked + summary.byResult.failed;
    if (unfinished > 0) {
      const waiting = summary.webhookRequired;
      const advice = [
        ...(waiting > 0 ? [`${waiting} row(s) of webhook-only countries need --webhook-url (then \`dnc listen\`): ${resume} --webhook-url URL`] : []),
        ...(unfinished > waiting ? [`run \`${resume}\` again to look up the rest that no credit was spent on; --review-out FILE lists every row that needs a person`] : []),
      ];
      ctx.warn(`dnc: finished, but ${unfinished} row(s) have no verdict (${summary.byResult.not_checked} not_checked, ${summary.byResult.failed} failed): ${advice.join('; ')}`);
      return ExitCode.UNFINISHED;
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
  rendering: Pick<BatchMeta, 'escapeFormulas' | 'manifestPath' | 'reviewOut' | 'dialOut' | 'run' | 'outputFormat' | 'outputEncoding'>,
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
    if (
      !sameResultOptions(existing.options, resultOptions) ||
      existing.layout.workbook?.position !== layout.workbook?.position ||
      (existing.layout.encoding ?? 'utf-8') !== (layout.encoding ?? 'utf-8')
    ) {
      const c = journal.summaryCounts();
      const numbers = c.queued + c.in_flight + c.done + c.pending;
      throw usageError('E_JOURNAL_MISMATCH', `the journal ${journal.path} was made with other options that change answers (${describeOptions(existing.options)})`, {
        hint:
          `run it without them to resume, or add --restart to start over with these: ${numbers} number(s) are looked up again ` +
          `(this batch has spent ${c.credits} credit(s) so far); add --reuse-within 30d to reuse verdicts already paid for instead of paying twice`,
      });
    }
    if (existing.serviceOrigin && existing.serviceOrigin !== serviceOrigin) {
      throw usageError('E_JOURNAL_MISMATCH', `the journal ${journal.path} holds answers from ${existing.serviceOrigin}, not ${serviceOrigin}`, {
        hint: 'use the same --base-url to resume, or --restart',
      });
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
    // A rerun finishes the job: rows with no verdict and no credit spent on them are looked up again.
    const again = journal.requeueUnfinished();
    if (again.notChecked + again.uncharged > 0) {
      ctx.info(`${again.notChecked + again.uncharged} number(s) without a verdict are looked up again (${again.notChecked} not checked, ${again.uncharged} failed without a charge)`);
    }
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
    layout: { recordDelimiter: layout.recordDelimiter, header: layout.header, columnCount: layout.columnCount, phoneLabel: layout.phoneLabel, bom: layout.bom, workbook: layout.workbook, encoding: layout.encoding },
    createdAt: ctx.now().toISOString(),
    serviceOrigin,
    ...rendering,
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
  /** The results went to standard output (-o -): the summary goes to stderr, so stdout holds only the CSV. */
  summaryToStderr: boolean;
}

async function report(ctx: Context, summary: RenderSummary, extras: ReportExtras): Promise<void> {
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
        stopped_reason: extras.stopped,
      }),
    );
    return;
  }
  const { renderBatchSummary } = await import('../render/batch-summary.js');
  if (extras.summaryToStderr && ctx.quiet) return;
  out.write(
    renderBatchSummary(summary, extras, extras.summaryToStderr ? { tty: ctx.io.stderrIsTTY, color: ctx.io.stderrColor, columns: ctx.io.columns } : { tty: ctx.io.stdoutIsTTY, color: ctx.io.stdoutColor, columns: ctx.io.columns }),
  );
}

/** Whether a country's numbers go unsent in this run: webhook mode (webhook-only, or --webhook-all) without --webhook-url. */
async function webhookMissingFor(options: BatchOptions): Promise<(country: string) => boolean> {
  const { WEBHOOK_ONLY_COUNTRIES } = await import('../wire/types.js');
  return (country) => !options.webhookUrl && (options.webhookAll || WEBHOOK_ONLY_COUNTRIES.includes(country));
}

/** What is read, named as the user gave it, with what was detected in it. */
function readingLine(input: string, layout: CsvLayout): string {
  if (layout.workbook) return `Reading ${input}, sheet '${layout.workbook.sheet}' (phone column: ${layout.phoneLabel})`;
  const encoding = layout.encoding && layout.encoding !== 'utf-8' ? `, encoding: ${layout.encoding}` : '';
  return `Reading ${input === '-' ? 'standard input' : input} (phone column: ${layout.phoneLabel}, delimiter: ${layout.delimiter === '\t' ? 'tab' : layout.delimiter}${encoding})`;
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
    input: input === '-' ? '-' : layout.path,
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
