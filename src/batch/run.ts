// The batch use case: checks paths and options, owns the journal's lifecycle and lock, runs the lookups,
// renders the outputs and evidence, and returns what happened. It never prints: it emits typed events,
// and `src/commands/batch.ts` shows them and picks the exit code.
import { createReadStream, createWriteStream, existsSync, mkdirSync, statSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import path from 'node:path';
import type { ComplianceFlags } from '../compliance/settings.js';
import type { TextEncoding } from '../tables/encoding.js';
import { checkWebhookUrlOption, parseCountryOption, type GlobalFlags, type ServiceConfig } from '../config.js';
import type { Interrupts } from '../context.js';
import { DncError, describeFsError, ExitCode, inputError, usageError } from '../errors.js';
import { isCharacterDevice, isStream, isSymbolicLink } from '../file-kind.js';
import type { Say } from '../evidence/batch-evidence.js';
import type { ServiceClient } from '../service/client.js';
import type {
  BatchJournal,
  BatchMeta,
  LockDeps,
  ResultOptions,
  StoppedReason,
  SummaryCounts,
} from '../journal/journal.js';
import type { OutputTarget } from './paths.js';
import type { PhoneCache } from '../phone/phone-cache.js';
import type { EarlyRender, RenderSummary } from '../results/render.js';
import type { ResultsCache } from '../stores/results-cache.js';
import type { Reusable, ReusableCounter } from '../evidence/reusable.js';
import type { ThreadEarlyRender } from './early-render-thread.js';
import type { IncomingNumbers, SchedulerOutcome, SchedulerProgress } from './scheduler.js';
import { COMPLIANCE_FLAGS, REMEMBERED_OPTIONS, type RememberedOption } from './remembered-options.js';
import { formatInteger } from '../text/numbers.js';
import type { TableLayout } from '../tables/layout.js';

export { COMPLIANCE_FLAGS, REMEMBERED_OPTIONS, type RememberedOption };

/** What the batch says while it runs; the command decides how each is shown. */
export type BatchEvent =
  | { type: 'info' | 'warning' | 'debug'; text: string }
  /** Lookups begin (after the input is read and the credit guard has spoken). */
  | { type: 'lookups-started' }
  | { type: 'progress'; progress: SchedulerProgress }
  /** The first interrupt: no new lookups; those in flight are awaited. */
  | { type: 'stopping' }
  | { type: 'lookups-ended' };

/** What the batch may use: nothing of the process but what is injected here. */
export interface BatchRunDeps {
  cwd: string;
  env: Record<string, string | undefined>;
  homedir: string;
  now(): Date;
  flags: GlobalFlags;
  interrupts: Interrupts;
  serviceConfig(): Promise<ServiceConfig>;
  createClient(options?: { connections?: number }): Promise<ServiceClient>;
  stdin: Readable;
  stdinIsTTY: boolean;
  /** Where `-o -` writes. */
  stdout: Writable;
  /** This process as the journal's lock sees it. */
  lockDeps: LockDeps;
  /** Whether a path names this process's standard output (/dev/stdout). */
  isStandardOutput(file: string): boolean;
  /** Whether a path names this process's standard input (/dev/stdin): never written to. */
  isStandardInput(file: string): boolean;
  /** Whether a path names this process's standard error (/dev/stderr), where progress and the summary go. */
  isStandardError?(file: string): boolean;
  onEvent(event: BatchEvent): void;
  /**
   * The module of the thread the outputs are rendered in while the lookups run (early-render-worker.ts). By
   * default the bundled one, if there; null: on the batch's own thread only.
   */
  renderThreadFile?: string | null;
}

/**
 * The parts of the run that speak: the dependencies plus info/warn/debug as events (the evidence and compliance hooks
 * take these).
 */
type RunContext = BatchRunDeps &
  Say & { io: { stdin: Readable; stdinIsTTY: boolean; stdout: Writable }; emit(event: BatchEvent): void };

function runContext(deps: BatchRunDeps): RunContext {
  // Copied with their getters, not their values: standard input is set up only when a list is read from it.
  const copied = Object.defineProperties({}, Object.getOwnPropertyDescriptors(deps)) as BatchRunDeps;
  return Object.assign(copied, {
    io: {
      get stdin() {
        return deps.stdin;
      },
      get stdinIsTTY() {
        return deps.stdinIsTTY;
      },
      stdout: deps.stdout,
    },
    emit: (event: BatchEvent) => deps.onEvent(event),
    info: (text: string) => deps.onEvent({ type: 'info', text }),
    warn: (text: string) => deps.onEvent({ type: 'warning', text }),
    debug: (text: string) => deps.onEvent({ type: 'debug', text }),
  });
}

/** A dry run's findings: counts, balance, estimate and the credit guard's lines. */
export interface DryRunReport {
  result: {
    input: string;
    rows: number;
    unique_numbers: number;
    invalid_rows: number;
    by_country: Record<string, number>;
    balance: { credits_remaining: number; credit_limit: number } | null;
    estimated_credits: number;
    estimate_complete: boolean;
    unknown_cost_countries: string[];
    webhook_required_countries: string[];
    /** Countries a 422 of an earlier run said the service does not cover: refused locally, never sent. */
    unsupported_countries: string[];
    /**
     * The batch's journal, when a rerun would resume it: by_country and estimated_credits then count only what the
     * rerun sends.
     */
    resuming: DryRunResume | null;
    /** Numbers to look up whose verdict of this service, in the results cache, is still valid (no --reuse-within). */
    reusable: Reusable | null;
  };
  guard: { lines: string[]; json: unknown };
  costs: Map<string, number>;
  invalidSamples: Array<{ line: number; record: number; value: string; message: string; where?: string }>;
  maxCredits: number | null;
}

/** What a rerun of a stopped batch would do, as its journal says (read only). */
export interface DryRunResume {
  journal: string;
  /** Distinct numbers of the list. */
  numbers: number;
  /** Numbers with a final verdict (charged outcomes included): never sent again. */
  with_verdict: number;
  /** Webhook lookups waiting for their push (`dnc listen`): not sent again. */
  pending: number;
  /** Numbers the rerun would send (the estimate's): queued, not_checked of any reason, uncharged failures. */
  to_look_up: number;
  /**
   * Numbers without a verdict the rerun would still not send (webhook-only countries without --webhook-url, countries
   * the service does not cover).
   */
  not_sent: number;
  /**
   * Numbers an earlier run sent without getting the answer: not sent again unless --resend-unanswered (then in
   * to_look_up).
   */
  unanswered: number;
  /**
   * Sends of the batch that got no answer (may have been charged), as the summary, manifest and `usage --reconcile`
   * count them.
   */
  unanswered_sends: number;
  /** Credits the batch has recorded so far (what --max-credits counts, with the unanswered sends). */
  credits_spent: number;
  resend_unanswered: boolean;
}

/** How a batch run ended (a fatal service error is thrown, after the output is written). */
export type BatchRunResult =
  | { kind: 'dry-run'; report: DryRunReport }
  /** A second interrupt: stopped at once, not rendered; the journal keeps every answer. */
  | { kind: 'abandoned' }
  | {
      kind: 'finished';
      summary: RenderSummary;
      counts: SummaryCounts;
      stopped: StoppedReason | null;
      creditsThisRun: number;
      sent: number;
      elapsedMs: number;
      journalPath: string;
      outputPath: string;
      maxCredits: number | null;
      /** The command that resumes or finishes this batch. */
      resume: string;
      /** Sends of this batch that got no answer (each may have been charged; not in counts.credits). */
      unansweredSends: number;
      /**
       * The error that stopped the run after the output was written (the command reports it and exits with its status).
       */
      fatal?: DncError;
    };

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
  /** --skip-rows N: the rows above an .xlsx input's list (titles) are not read. */
  skipRows?: number | undefined;
  /** --reuse-within: verdicts of the same service checked within this window are reused (src/evidence). */
  reuseWithinMs?: number | null;
  /**
   * --escape-formulas: formula-leading input cells get a leading ' in the outputs (for files bound for a spreadsheet).
   */
  escapeFormulas?: boolean;
  /**
   * --journal: where the journal goes (default: beside the output, or the state folder when the output is not a file).
   */
  journal?: string | undefined;
  /**
   * --review-out: the rows that need a person (invalid, unsupported_country, not_checked, failed) with their reasons.
   */
  reviewOut?: string | undefined;
  /** --dial-out: the distinct callable numbers in E.164, one per line, for a dialler. */
  dialOut?: string | undefined;
  /** The options given on the command line; the others are taken from the journal when it remembers them. */
  given?: ReadonlySet<RememberedOption>;
  /** --suppression-list, --seller, --san, --campaign (src/compliance). */
  compliance?: ComplianceFlags;
  /**
   * --resend-unanswered: numbers an earlier run sent without getting the answer (kill -9, a second Ctrl-C) are
   * sent again, although each may already have been charged. Never remembered: it is consent for this run only.
   */
  resendUnanswered?: boolean;
}

/** How each remembered option is written on a command line (for the resume line and messages). */
const FLAG: Record<RememberedOption, string> = {
  column: '--column',
  country: '--country',
  delimiter: '--delimiter',
  header: '--no-header',
  sheet: '--sheet',
  skipRows: '--skip-rows',
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
  compliance: '--suppression-list',
};

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

/**
 * Creates a private folder dnc keeps files in; one that cannot be made is exit 3 naming it (never an internal error).
 */
function makeFolder(dir: string, what: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw inputError('E_OUTPUT_UNWRITABLE', `cannot make the folder ${dir} for ${what}: ${describeFsError(err)}`, {
      hint: 'check XDG_STATE_HOME (or HOME), or give -o a file and --journal a path you can write to; nothing was sent',
      cause: err,
    });
  }
}

async function refuseManifestOfAnotherOutput(manifestPath: string, outputPath: string): Promise<void> {
  let describes: string | undefined;
  try {
    const { readFile } = await import('node:fs/promises');
    describes = (JSON.parse(await readFile(manifestPath, 'utf8')) as { output?: { path?: string } }).output?.path;
  } catch {
    return; // None yet, or not a manifest: the batch writes its own.
  }
  if (describes && outputPath !== '-' && path.resolve(describes) !== path.resolve(outputPath)) {
    throw usageError(
      'E_PATH_COLLISION',
      `${manifestPath} is the manifest of another output (${describes}): this batch's would replace it`,
      {
        hint: 'give -o a name that differs from that output by more than its extension',
      },
    );
  }
}

/** Checks options and paths before anything is read or sent (exit 2; exit 3 for a folder that cannot be written). */
async function checkOptions(ctx: RunContext, input: string, options: BatchOptions): Promise<BatchPaths> {
  const country = await parseCountryOption(options.country);
  if (options.webhookAll && options.webhookUrl === undefined) {
    throw usageError('E_USAGE', '--webhook-all needs --webhook-url', {
      hint: 'give the https URL the service should push results to',
    });
  }
  // The key is looked for in the URL only when lookups may be sent (a dry run needs no configuration).
  const keys = options.webhookUrl !== undefined && !options.dryRun ? [(await ctx.serviceConfig()).apiKey.value] : [];
  await checkWebhookUrlOption(options.webhookUrl, options.allowInsecureWebhookUrl, keys);
  const { resolveOutputTarget } = await import('./paths.js');
  // A list that is not a regular file (standard input, a FIFO, `<(…)`) is read once into a spool.
  const given = input === '-' || ctx.isStandardInput(path.resolve(ctx.cwd, input)) ? '-' : path.resolve(ctx.cwd, input);
  const fromStdin = given === '-' || isStream(given);
  const inputPath = given;
  const defaultOutput = fromStdin ? '-' : inputPath.replace(/(\.[^./\\]*)?$/, '.results.csv');
  let output = resolveOutputTarget('-o', options.output ?? defaultOutput, ctx.cwd);
  // /dev/stdout and /proc/self/fd/1 are this process's standard output, which cannot always be opened again
  // by path (a socket gives ENXIO): write to the stream itself. So too when they lead to a regular file
  // (`>> log.csv`): replacing that file would drop what it held, and the shell's append with it.
  if (
    output.path !== '-' &&
    ctx.isStandardOutput(output.path) &&
    (output.kind === 'stream' || isSymbolicLink(path.resolve(ctx.cwd, options.output ?? defaultOutput)))
  ) {
    output = { kind: 'stream', path: '-' };
  }
  const toStdin = (flag: string, file: string) => {
    // Only a list read from standard input can be overwritten through it (`dnc batch - -o calls.csv < calls.csv`);
    // a named list leaves standard input alone (in cron it is /dev/null, and so may -o be).
    if (given === '-' && file !== '-' && ctx.isStandardInput(file)) {
      throw usageError(
        'E_PATH_COLLISION',
        `${flag} ${file} is standard input: dnc never writes where its input comes from`,
        { hint: `give ${flag} a file name` },
      );
    }
  };
  const toStderr = (flag: string, file: string) => {
    // Progress, warnings and the summary go there: results mixed into them could be read by no one, and a
    // file behind it (`2>> log`) would be replaced, dropping what the shell appended.
    // A character device is not refused: with `2>/dev/null` (cron), `-o /dev/null` is the same device, and
    // writing there drops nothing (nor does a terminal).
    if (file !== '-' && ctx.isStandardError?.(file) && !isCharacterDevice(file)) {
      throw usageError('E_USAGE', `${flag} ${file} is standard error, where dnc writes its progress and summary`, {
        hint: `give ${flag} a file name${flag === '-o' ? ', or - for standard output' : ''}`,
      });
    }
  };
  toStdin('-o', output.path);
  toStderr('-o', output.path);
  const list = (flag: string, name: string | undefined): string | null => {
    if (name === undefined) return null;
    const target = name === '-' ? null : resolveOutputTarget(flag, name, ctx.cwd);
    // Standard output carries the results (-o -) or the summary: a list there would be mixed into either.
    if (target === null || ctx.isStandardOutput(target.path)) {
      throw usageError('E_USAGE', `${flag} ${name}: only the results (-o -) can go to standard output`, {
        hint: `give ${flag} a file name`,
      });
    }
    toStdin(flag, target.path);
    toStderr(flag, target.path);
    return target.path;
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
async function checkFiles(paths: BatchPaths, journalPath: string | null, manifestPath: string | null): Promise<void> {
  const { checkWritableFolder, journalSideFiles, refuseCollisions, spoolPathFor } = await import('./paths.js');
  const files = [
    ...(!paths.fromStdin
      ? [{ role: 'the input', path: paths.inputPath }]
      : journalPath
        ? [{ role: 'the spooled input', path: spoolPathFor(journalPath) }]
        : []),
    ...(paths.output.kind === 'file' ? [{ role: '-o', path: paths.outputPath }] : []),
    ...(paths.callableOut ? [{ role: '--callable-out', path: paths.callableOut }] : []),
    ...(paths.suppressedOut ? [{ role: '--suppressed-out', path: paths.suppressedOut }] : []),
    ...(paths.reviewOut ? [{ role: '--review-out', path: paths.reviewOut }] : []),
    ...(paths.dialOut ? [{ role: '--dial-out', path: paths.dialOut }] : []),
    ...(journalPath ? journalSideFiles(journalPath) : []),
    ...(manifestPath ? [{ role: 'the manifest', path: manifestPath }] : []),
  ];
  refuseCollisions(files);
  // Outputs whose names differ only in their extension (x.csv, x.tsv) would share x.manifest.json: one batch's
  // evidence would replace the other's.
  // (A stream's journal and manifest follow its input and options, whatever stream it goes to.)
  if (paths.output.kind === 'file' && manifestPath) await refuseManifestOfAnotherOutput(manifestPath, paths.outputPath);
  const folders = new Map<string, string>();
  const add = (file: string | null, what: string) => {
    if (file && file !== '-' && !folders.has(path.dirname(file))) folders.set(path.dirname(file), what);
  };
  if (paths.output.kind === 'file') add(paths.outputPath, 'the results');
  for (const f of [paths.callableOut, paths.suppressedOut, paths.reviewOut, paths.dialOut])
    if (f && statSafe(f)?.isFile() !== false) add(f, 'a list');
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
    sheet: options.sheet ?? null,
    skipRows: options.skipRows ?? null,
    encoding: options.encoding ?? null,
    outputEncoding: options.outputEncoding ?? null,
    compliance: options.compliance ?? {},
  };
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
  if (options.skipRows) parts.push('--skip-rows', String(options.skipRows));
  if (options.encoding !== undefined) parts.push('--encoding', options.encoding);
  if (options.outputEncoding !== undefined) parts.push('--output-encoding', options.outputEncoding);
  for (const name of ['webhookUrl', 'webhookAll', 'allowInsecureWebhookUrl', 'maxCredits', 'escapeFormulas'] as const) {
    const text = flagText(name, options[name]);
    if (text) parts.push(...text.split(' ').map((t, i) => (i === 0 ? t : q(t))));
  }
  if (options.concurrency !== 8) parts.push('--concurrency', String(options.concurrency));
  // The same internal list on resume: without it, numbers it suppressed would be looked up.
  if (options.compliance?.suppressionList !== undefined)
    parts.push('--suppression-list', q(options.compliance.suppressionList));
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
    a.country === b.country && a.delimiter === b.delimiter && a.header === b.header && a.phoneIndex === b.phoneIndex
  );
}

/** A remembered option as it is typed on a command line (`--max-credits 50`), for messages. */
function flagText(name: RememberedOption, value: unknown): string {
  if (name === 'compliance') {
    const flags = (value ?? {}) as Record<string, string | undefined>;
    return Object.entries(COMPLIANCE_FLAGS)
      .filter(([k]) => flags[k] !== undefined)
      .map(([k, flag]) => `${flag} ${flags[k]}`)
      .join(' ');
  }
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
async function withRememberedOptions(
  ctx: RunContext,
  input: string,
  options: BatchOptions,
): Promise<{ options: BatchOptions; resumedWith: string[] }> {
  const none = { options, resumedWith: [] };
  // --restart starts from nothing; a dry run takes what a rerun would (it only reads the journal).
  if (options.restart || !options.given) return none;
  const { resolveOutputTarget, journalPathFor } = await import('./paths.js');
  let journalPath: string;
  try {
    if (options.journal !== undefined) journalPath = resolveOutputTarget('--journal', options.journal, ctx.cwd).path;
    else {
      if (input === '-' && options.output === undefined) return none;
      const target = resolveOutputTarget(
        '-o',
        options.output ?? path.resolve(ctx.cwd, input).replace(/(\.[^./\\]*)?$/, '.results.csv'),
        ctx.cwd,
      );
      if (target.kind !== 'file') return none;
      journalPath = journalPathFor(target.path);
    }
  } catch {
    return none; // The same check runs again below and says what is wrong.
  }
  if (!existsSync(journalPath)) return none;
  const { BatchJournal } = await import('../journal/journal.js');
  const { rememberedRunOf } = await import('../journal/views.js');
  let remembered: Record<string, unknown> | undefined;
  try {
    if (options.dryRun) remembered = await rememberedRunOf(journalPath, await journalInUse(ctx, journalPath));
    else {
      const journal = await BatchJournal.open(journalPath, { create: false, readonly: true });
      try {
        remembered = journal.meta()?.run;
      } finally {
        journal.close();
      }
    }
  } catch {
    return none; // Opened again below, where an unreadable journal is reported.
  }
  if (!remembered) return none;
  const merged: Record<string, unknown> = { ...options };
  const resumedWith: string[] = [];
  for (const name of REMEMBERED_OPTIONS) {
    if (options.given.has(name) || !(name in remembered)) continue;
    // null is a value (no budget, no reuse window); for the rest it means not given.
    merged[name] = remembered[name] ?? (name === 'maxCredits' || name === 'reuseWithinMs' ? null : undefined);
    const text = flagText(name, remembered[name]);
    if (text && !(name === 'concurrency' && remembered[name] === 8)) resumedWith.push(text);
  }
  return { options: merged as unknown as BatchOptions, resumedWith };
}

export async function runBatchJob(input: string, given: BatchOptions, deps: BatchRunDeps): Promise<BatchRunResult> {
  const ctx = runContext(deps);
  const { options, resumedWith } = await withRememberedOptions(ctx, input, given);
  if (resumedWith.length > 0)
    ctx.info(`Resuming with the options this batch was started with: ${resumedWith.join(' ')}`);
  const paths = await checkOptions(ctx, input, options);
  const batchPaths = await import('./paths.js');
  const { manifestPathFor } = await import('../evidence/manifest.js');
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
  const { openInputLayout } = await import('../tables/input.js');
  const { keptFolder, stateDir } = await import('../paths.js');
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
    const layout = await openInputLayout(spool?.tmp ?? paths.inputPath, {
      delimiter: options.delimiter,
      column: options.column,
      header: options.header,
      sheet: options.sheet,
      skipRows: options.skipRows,
      encoding: options.encoding,
    });
    // A results file scrubbed again would carry two dnc_result columns: a reader taking the first sees the old verdict.
    const { DNC_COLUMNS } = await import('../results/columns.js');
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
      phoneIndex: layout.phoneIndex,
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
      const { hashFile } = await import('./ingest.js');
      const sha256 = spool?.sha256 ?? (await hashFile(paths.inputPath));
      journalPath = batchPaths.streamJournalPath(stateFolderFor(ctx, 'the journal'), sha256, resultOptions);
      makeFolder(path.dirname(journalPath), 'the journal');
    }
    const manifestPath = early?.manifestPath ?? journalPath.replace(/\.sqlite$/, '') + '.manifest.json';
    if (!early) await checkFiles(paths, journalPath, manifestPath);
    if (spool) {
      paths.inputPath = await placeSpool(spool, batchPaths.spoolPathFor(journalPath), journalPath, options.restart);
      layout.path = paths.inputPath;
    }
    return await runBatchJournal(
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
  } finally {
    if (spool) await rm(spool.tmp, { force: true });
  }
}

/** Standard input copied to a private temporary file, hashed on the way. */
async function spoolStdin(ctx: RunContext, source: string, dir: string): Promise<{ tmp: string; sha256: string }> {
  const { createHash } = await import('node:crypto');
  const { removeLeftoverTemps, tempPathFor } = await import('../atomic-file.js');
  if (source === '-' && ctx.io.stdinIsTTY) ctx.info('Reading the call list from standard input (end it with Ctrl-D)');
  makeFolder(dir, 'the list read from standard input');
  // A run killed while spooling left its copy of the list here.
  await removeLeftoverTemps(path.join(dir, 'stdin.csv'), ctx.now().getTime());
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
    await pipeline(
      source === '-' ? ctx.io.stdin : createReadStream(source),
      tee,
      createWriteStream(tmp, { flags: 'wx', mode: 0o600, flush: true }),
    );
  } catch (err) {
    await rm(tmp, { force: true });
    throw inputError(
      'E_INPUT_UNREADABLE',
      `cannot read the call list from ${source === '-' ? 'standard input' : source} into ${dir}: ` +
        `${describeFsError(err)}`,
      { cause: err },
    );
  }
  return { tmp, sha256: hash.digest('hex') };
}

/**
 * Puts the spooled list where the journal's batch reads it. A different list under a journal that holds a
 * batch is refused (its answers were paid for; --restart discards them), and the old list is kept.
 */
async function placeSpool(
  spool: { tmp: string; sha256: string },
  target: string,
  journalPath: string,
  restart: boolean,
): Promise<string> {
  const { hashFile } = await import('./ingest.js');
  const existing = existsSync(target) ? await hashFile(target) : null;
  if (existing === spool.sha256) return target;
  if (existing !== null && existsSync(journalPath) && !restart) {
    throw usageError(
      'E_JOURNAL_MISMATCH',
      `the journal ${journalPath} belongs to a batch of another list read from standard input`,
      {
        hint:
          'pipe the same list to resume, write to another -o, or add --restart to start over (answers ' +
          'already paid for in it are discarded; --reuse-within reuses them)',
      },
    );
  }
  await rename(spool.tmp, target);
  return target;
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
  const evidence = await import('../evidence/batch-evidence.js');
  const journalMod = await import('../journal/journal.js');
  const lockDeps = ctx.lockDeps;
  // A file at the journal's path that is not a dnc journal (a list given as --journal, say) is never deleted or written
  // over.
  if (existsSync(journalPath) && !(await (await import('../journal/views.js')).isBatchJournalFile(journalPath))) {
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
    const holder = journalMod.lockHolder(journalPath, lockDeps);
    if (holder !== null) {
      throw usageError('E_JOURNAL_BUSY', `cannot restart: another dnc batch (pid ${holder}) is using ${journalPath}`, {
        hint: 'stop it first (Ctrl-C), then run with --restart again',
      });
    }
    // A listener would go on acknowledging pushes into the removed journal: those results would be lost.
    const listener = journalMod.lockHolder(journalPath, lockDeps, 'listen');
    if (listener !== null) {
      throw usageError(
        'E_JOURNAL_BUSY',
        `cannot restart: dnc listen (pid ${listener}) is storing pushes in ${journalPath}`,
        {
          hint: 'stop it first (Ctrl-C; the pushes it has are kept until then), then run with --restart again',
        },
      );
    }
    journalMod.deleteJournalFiles(journalPath);
    ctx.info(`--restart: removed the journal ${journalPath}`);
  }
  // A list refused at its first read (malformed, a workbook bomb) must not leave an empty journal made by this run.
  const journalIsNew = !existsSync(journalPath);
  let discardJournal = false;
  const lock = journalMod.acquireJournalLock(journalPath, lockDeps);
  let journal: BatchJournal | undefined;
  let client: ServiceClient | undefined;
  let abandoned = false;
  let reading: Reading | null = null;
  // The journal's log on its way to disk while the output is rendered (see syncLogInBackground).
  let logSynced: Promise<void> | null = null;
  // After the last answer, the client's sockets close and the cost cache is written (a file synced) while the
  // output renders: both wait on the kernel, not on this thread. Awaited before the journal closes.
  let clientClosed: Promise<void> | null = null;
  let costsRemembered: Promise<void> | null = null;
  let early = null as EarlyRender | null;
  // The same, when it runs in a thread; and the results cache, opened ahead when it does (see below).
  let renderThread = null as ThreadEarlyRender | null;
  let cacheOpening = null as Promise<ResultsCache> | null;
  let renderStarting: Promise<void> | null = null;
  let reusable = null as ReusableCounter | null;
  let lookupsOver = () => {};
  let onProgress: (progress: SchedulerProgress) => void = () => {};
  // The client is needed only at the first lookup: loading it (undici) overlaps the journal's creation and
  // the first reads; the balance for the credit guard is asked as soon as lookups are known to come.
  const clientReady = ctx.createClient({ connections: options.concurrency });
  clientReady.catch(() => {}); // awaited below, or closed in the finally
  try {
    journal = await journalMod.BatchJournal.open(journalPath, { create: true }, ctx.now);
    const { PhoneCache } = await import('../phone/phone-cache.js');
    const phones = new PhoneCache(resultOptions.country ?? undefined);
    const batch: JournalBatch = {
      layout,
      resultOptions,
      paths,
      input,
      serviceOrigin,
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
    const compliance = await import('../compliance/batch-compliance.js');
    const applyLists = () => compliance.applyListsBeforeLookups(ctx, journal!, options.compliance ?? {});
    let listsApplied = false;
    // Fresh verdicts of these numbers in the results cache are said before the first lookup (see below): asked only
    // when --reuse-within was not given and the cache holds recent verdicts of this service.
    if ((options.reuseWithinMs ?? null) === null) {
      reusable = await evidence.reusableCounter(ctx, serviceOrigin, options.compliance ?? {});
    }
    if ((await prepareJournal(ctx, journal, batch, options.resendUnanswered === true)) === 'read') {
      // Lookups start while the list is read, unless a number read later would need treatment before it may
      // be sent: the internal list and its exemptions (applied from the list's side, over the journal's
      // numbers) and --reuse-within (verdicts taken from the results cache) need the whole list first.
      // Without a list nothing of what applyLists does depends on which numbers are read, so it runs first.
      let streaming = (options.reuseWithinMs ?? null) === null;
      if (streaming) streaming = listsApplied = (await applyLists()).list === null;
      reading = await readInput(ctx, journal, batch, phones, streaming);
    }
    const lookupsAhead = reading !== null || journal.unsentCount() > 0;
    const balance = lookupsAhead ? clientReady.then((c) => c.usage()) : null;
    balance?.catch(() => {}); // read by the guard below
    if (!listsApplied) await applyLists();
    await evidence.beforeLookups(ctx, ctx, journal, {
      service: serviceOrigin,
      reuseWithinMs: options.reuseWithinMs ?? null,
    });

    let outcome: SchedulerOutcome | null = null;
    // Lists and reused verdicts may have answered every number: then nothing is sent.
    if (reading !== null || journal.unsentCount() > 0) {
      client = await clientReady;
      const { readCosts } = await import('../stores/cost-cache.js');
      const { cacheDir } = await import('../paths.js');
      const costs = new Map([
        ...(await readCosts(cacheDir(ctx.env, ctx.homedir), serviceOrigin)),
        ...journal.learnedCosts(),
      ]);
      const webhookMissing = await webhookMissingFor(options);
      const unsupported = new Set(journal.unsupportedCountries());
      // The guard warns, it never blocks: while the list is read, lookups do not wait for the balance (it
      // is checked when it comes, and says "so far" while reading goes on).
      const willSend = (country: string) => !webhookMissing(country) && !unsupported.has(country);
      const toWeigh =
        reading === null
          ? Promise.resolve<Pick<BatchJournal, 'nextQueued'>>(journal)
          : numbersOfThisRun(journal, reading);
      // Fresh verdicts in the results cache are said before the first lookup: the lookups wait for the numbers
      // weighed (the list, or its first thousand numbers: a few milliseconds of reading), only when there are any.
      if (reusable) {
        reading?.lookupsStarted(); // (reading would otherwise wait for the first lookups before its second chunk)
        const line = evidence.reusableGuardLine(reusable, await toWeigh, costs, willSend, reading?.reading === true);
        reusable = null; // (closed)
        if (line) ctx.info(`dnc: ${line}`);
      }
      const usage = { usage: () => balance ?? client!.usage() };
      const guarding = toWeigh
        .then((unsent) => evidence.creditShortfall(usage, unsent, costs, willSend))
        .then(
          (guard) => {
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
          early = renderThread = thread.renderEarlyInThread(journal!, workerFile);
          ctx.debug('the outputs are rendered in a thread of their own while the lookups run');
        };
        // The results cache is filled on this thread while that one writes the last rows (see below): it is
        // opened while the last answers come, when this thread mostly waits.
        void nothingMoreToSend.then(() => {
          if (!renderThread) return;
          cacheOpening = evidence.openResultsCache(ctx);
          cacheOpening.catch(() => {}); // (said when it is filled)
        });
      } else {
        renderStarting = Promise.race([nothingMoreToSend, over]).then(async () => {
          const { renderEarly } = await import('../results/render.js');
          early = renderEarly(journal!, Promise.resolve(), { phones, stdout: ctx.io.stdout });
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
      if (!abandoned) logSynced = journal.syncLogInBackground();
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
      if (outcome.fatal) {
        // A stop like any other: the output shows every answer so far, the rest not_checked with the reason.
        const reason = outcome.stoppedReason ?? 'service_failure';
        let partial: RenderSummary | null = null;
        try {
          journal.setStoppedReason(reason);
          const { renderBatchOutput } = await import('../results/render.js');
          partial = await renderBatchOutput(journal, { phones, stdout: ctx.io.stdout });
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
        const fatal = Object.assign(outcome.fatal, {
          hint:
            `${outcome.fatal.hint ? `${outcome.fatal.hint}; then ` : ''}run \`${resume}\` to resume ` +
            `(answered numbers are not sent again)`,
        });
        if (!partial) throw fatal;
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
          unansweredSends: journal.unansweredSends(),
          fatal,
        };
      }
      journal.setStoppedReason(outcome.stoppedReason);
      costsRemembered = rememberCosts(ctx, journal);
      costsRemembered.catch(() => {}); // awaited below
    } else {
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
      const { renderBatchOutput } = await import('../results/render.js');
      summary = await renderBatchOutput(journal, { phones, stdout: ctx.io.stdout });
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
      unansweredSends,
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
    reusable?.close();
    await costsRemembered?.catch(() => {});
    await logSynced?.catch(() => {});
    journal?.close();
    lock.release();
    if (discardJournal) journalMod.deleteJournalFiles(journalPath);
  }
}

/**
 * Decides, as the lookups go, whether a render thread is worth starting: asked at each progress, it says yes
 * when, over the last quarter of a second, this thread was mostly waiting (its event loop busy under half the time: the
 * service's latency, not this thread, sets the pace) and the lookups left will take a second more at the pace so
 * far. A thread takes ≈ 0.1–0.2 s to be ready: a shorter run would pay for its start for nothing. A busy thread
 * (answers at once) is left alone: there the render thread's CPU time is taken from the lookups (on two cores,
 * 6,000 → 4,400 lookups/s at zero latency), where the render after the lookups costs the same time only once.
 */
function threadWorth(): (p: SchedulerProgress) => boolean {
  const began = performance.now();
  let windowStart = began;
  let window = performance.eventLoopUtilization();
  return (p) => {
    const now = performance.now();
    if (now - windowStart < THREAD_WINDOW_MS) return false;
    const busy = performance.eventLoopUtilization(window).utilization;
    window = performance.eventLoopUtilization();
    windowStart = now;
    const leftMs = p.reading ? Infinity : ((p.total - p.answered) / Math.max(1, p.answered)) * (now - began);
    return busy < 0.5 && leftMs >= THREAD_WORTH_MS;
  };
}

/** How long the lookups left must take for a render thread to be started, and how often that is asked. */
const THREAD_WORTH_MS = 1000;
const THREAD_WINDOW_MS = 250;

/**
 * Whether the outputs can be rendered before the lookups end (renderEarly drops what cannot: a stream or a
 * workbook is written after them): asked before a thread is started for it.
 */
async function renderableEarly(paths: BatchPaths, layout: TableLayout, options: BatchOptions): Promise<boolean> {
  if (paths.output.kind !== 'file' || layout.workbook) return false;
  const { outputFormatOf } = await import('../tables/xlsx-input.js');
  if (outputFormatOf(paths.outputPath, options.format) !== 'csv') return false;
  const lists = [paths.callableOut, paths.suppressedOut, paths.reviewOut].filter((p) => p !== null);
  if (!lists.every((p) => outputFormatOf(p, undefined) === 'csv')) return false;
  // A FIFO, a device or standard output (a list there, or the dial list) is written after the lookups.
  return [paths.outputPath, ...lists, paths.dialOut].every(
    (p) => p === null || (p !== '-' && (statSync(p, { throwIfNoEntry: false })?.isFile() ?? true)),
  );
}

/** What a journal's batch is made of: the input as read, the options that shape answers, where outputs go. */
interface JournalBatch {
  layout: TableLayout;
  resultOptions: ResultOptions;
  paths: { inputPath: string; outputPath: string; callableOut: string | null; suppressedOut: string | null };
  /** The input as the user named it. */
  input: string;
  serviceOrigin: string;
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
async function prepareJournal(
  ctx: RunContext,
  journal: BatchJournal,
  batch: JournalBatch,
  resendUnanswered: boolean,
): Promise<'resume' | 'read'> {
  const { resultOptions, paths, serviceOrigin, rendering, layout } = batch;
  const existing = journal.meta();
  if (existing && !journal.ingested) {
    // Read in part: the numbers it holds keep their answers (paid for); reading again adds the rest.
    checkSameBatch(journal, existing, resultOptions, serviceOrigin, layout);
    settleUnanswered(ctx, journal, resendUnanswered);
    requeueForRerun(ctx, journal);
    return 'read';
  }
  if (existing) {
    const { hashFile } = await import('./ingest.js');
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
    journal.setMeta({
      ...existing,
      options: { ...existing.options, webhookUrl: resultOptions.webhookUrl, webhookAll: resultOptions.webhookAll },
      inputPath: paths.inputPath,
      outputPath: paths.outputPath,
      callableOut: paths.callableOut,
      suppressedOut: paths.suppressedOut,
      ...rendering,
    });
    settleUnanswered(ctx, journal, resendUnanswered);
    requeueForRerun(ctx, journal);
    const c = journal.summaryCounts();
    ctx.info(
      `Resuming ${journal.path}: ${formatInteger(c.done)} number(s) done, ${formatInteger(c.pending)} pending ` +
        `(webhook), ${formatInteger(c.queued + c.in_flight)} to look up`,
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

/** The input being read into the journal while lookups run: the scheduler's incoming numbers. */
interface Reading extends IncomingNumbers {
  /** Resolves once every row is in the journal (and the batch's meta says so); rejects as reading does. */
  readonly done: Promise<void>;
  /** Stops reading (a second Ctrl-C, or the run failed before its lookups); `done` then rejects. */
  abort(): void;
  /** Lets reading go on past its first chunk: called once the first lookups are sent. */
  lookupsStarted(): void;
}

/**
 * Reads the input into the journal. `streaming`: returns at once, the reading going on while lookups run
 * (each chunk's numbers are committed, then announced); otherwise returns null once every row is read.
 * The batch's meta is written first (a crash while reading leaves a journal a rerun recognises) and
 * completed with the input's SHA-256 and size at the end, with the flag that says the input is all there.
 */
async function readInput(
  ctx: RunContext,
  journal: BatchJournal,
  batch: JournalBatch,
  phones: PhoneCache,
  streaming: boolean,
): Promise<Reading | null> {
  const { layout, resultOptions, paths, input, serviceOrigin, rendering } = batch;
  const { ingestInput } = await import('./ingest.js');
  ctx.info(readingLine(input, layout));
  const meta: BatchMeta = {
    schema: 1,
    inputPath: paths.inputPath,
    // Known once the input is read: until then a render refuses the journal (the input is not all there).
    inputSha256: '',
    inputSize: 0,
    outputPath: paths.outputPath,
    callableOut: paths.callableOut,
    suppressedOut: paths.suppressedOut,
    options: resultOptions,
    layout: {
      recordDelimiter: layout.recordDelimiter,
      header: layout.header,
      columnCount: layout.columnCount,
      phoneLabel: layout.phoneLabel,
      bom: layout.bom,
      workbook: layout.workbook,
      encoding: layout.encoding,
    },
    createdAt: journal.meta()?.createdAt ?? ctx.now().toISOString(),
    serviceOrigin,
    ...rendering,
  };
  journal.setMeta(meta);
  const read = (onNumbers?: (added: number) => void, signal?: AbortSignal, firstNumbersTaken?: Promise<void>) =>
    ingestInput(layout, resultOptions.country ?? undefined, journal, phones, {
      onNumbers,
      signal,
      firstNumbersTaken,
    }).then((scan) => {
      journal.atomically(() => {
        journal.setMeta({ ...meta, inputSha256: scan.sha256, inputSize: scan.bytes });
        journal.markIngested();
      });
      const c = journal.summaryCounts();
      ctx.info(
        `${formatInteger(scan.rows)} row(s), ${formatInteger(c.queued + c.in_flight + c.done + c.pending)} ` +
          `distinct number(s) to look up, ${formatInteger(scan.invalidRows)} row(s) with a number that cannot ` +
          `be valid (not sent)`,
      );
    });
  if (!streaming) {
    await read();
    return null;
  }
  const listeners: Array<(added: number) => void> = [];
  const controller = new AbortController();
  let lookupsStarted = () => {};
  const firstNumbersTaken = new Promise<void>((resolve) => (lookupsStarted = resolve));
  const reading = {
    reading: true,
    subscribe: (listener: (added: number) => void) => void listeners.push(listener),
    abort: () => {
      controller.abort(new Error('reading stopped'));
      lookupsStarted();
    },
    lookupsStarted: () => lookupsStarted(),
    done: Promise.resolve(),
  };
  reading.done = read(
    (added) => {
      for (const l of listeners) l(added);
    },
    controller.signal,
    firstNumbersTaken,
  ).finally(() => {
    reading.reading = false;
    for (const l of listeners) l(0);
  });
  // Awaited by the caller after the lookups; until then a failure must not count as unhandled.
  reading.done.catch(() => {});
  return reading;
}

async function rememberCosts(ctx: RunContext, journal: BatchJournal): Promise<void> {
  const { writeCosts } = await import('../stores/cost-cache.js');
  const origin = journal.meta()?.serviceOrigin;
  if (!origin) return;
  const { keptFolder } = await import('../paths.js');
  const dir = keptFolder(ctx.env, ctx.homedir, 'cache');
  if (dir === null || !(await writeCosts(dir, origin, journal.learnedCosts(), ctx.now()))) {
    ctx.debug('could not write the cost cache (dry-run estimates will not know these costs)');
  }
}

async function runLookups(
  ctx: RunContext,
  journal: BatchJournal,
  client: ServiceClient,
  options: BatchOptions,
  knownCosts: ReadonlyMap<string, number>,
  reading: Reading | null,
  on: { answered: (progress: SchedulerProgress) => void; drained: () => void },
): Promise<SchedulerOutcome> {
  const { BatchScheduler } = await import('./scheduler.js');
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
    ...(reading ? { incoming: reading } : {}),
  });
  ctx.emit({ type: 'lookups-started' });
  scheduler.on('progress', (p: SchedulerProgress) => {
    ctx.emit({ type: 'progress', progress: p });
    on.answered(p);
  });
  scheduler.on('drained', on.drained);
  let quit = false;
  const off = ctx.interrupts.on((count) => {
    if (count === 1) {
      ctx.emit({ type: 'stopping' });
      scheduler.stop('interrupted');
    } else {
      quit = true;
      scheduler.abandon();
      reading?.abort();
    }
  });
  // A list that cannot be read to its end (malformed CSV): no new lookups; those in flight are awaited and kept.
  reading?.done.catch(() => scheduler.stop('interrupted'));
  try {
    let sentInFirstTurn = 0;
    const firstTurn = (p: SchedulerProgress) => (sentInFirstTurn = p.sent);
    scheduler.on('progress', firstTurn);
    // run() claims and sends the first lookups in its first turn, which is synchronous.
    const running = scheduler.run();
    scheduler.off('progress', firstTurn);
    // Reading goes on once the first lookup is on the wire: connecting and writing it are callbacks that a
    // thousand rows normalised in between would hold back (a long list's first lookup came 100 ms after a short one's).
    // When nothing was sent (the first numbers were all answered locally), it goes on at once.
    if (reading) {
      if (sentInFirstTurn === 0) reading.lookupsStarted();
      else
        void Promise.race([client.firstSent?.() ?? Promise.resolve(), running]).then(
          reading.lookupsStarted,
          reading.lookupsStarted,
        );
    }
    const outcome = await running;
    // The output is rendered from every row: reading goes on to the end after the lookups (a first Ctrl-C
    // included, which costs no credit); a second Ctrl-C stops it.
    if (reading) {
      if (outcome.abandoned) await reading.done.catch(() => {});
      else {
        try {
          await reading.done;
        } catch (err) {
          if (quit) return { ...outcome, abandoned: true };
          const e = err as { hint?: string; code?: unknown };
          if (outcome.sent > 0 && typeof err === 'object' && err !== null) {
            // A fault of the list (its bytes, its CSV) is fixed in the list; anything else (a full disk) where it lies.
            const what =
              typeof e.code === 'string' && e.code.startsWith('E_INPUT') ? 'the list is fixed' : 'that is fixed';
            Object.assign(err, {
              hint:
                `${e.hint ? `${e.hint}; ` : ''}the ${formatInteger(outcome.sent)} lookup(s) sent while the ` +
                `list was read are kept in the journal: run the same command once ${what} and they are not ` +
                `sent, or paid for, again`,
            });
          }
          throw err;
        }
      }
    }
    return outcome;
  } finally {
    off();
    ctx.emit({ type: 'lookups-ended' });
  }
}

/** The journal's queue as it is now, for a reader that runs later (the credit guard, once the balance comes). */
/** How many numbers of a list still being read the credit guard waits for (or the end of the list). */
const GUARD_SAMPLE = 1024;

/**
 * The numbers a run sends while its list is read, as the credit guard weighs them: the balance was asked before
 * any lookup, so it must cover those queued when the lookups began and every number read after (sent by then or
 * not). Weighed once the list is read or its first thousand numbers are, whichever comes first: the first lookups
 * go out after a few rows, and an estimate over those alone would say little.
 */
async function numbersOfThisRun(journal: BatchJournal, reading: Reading): Promise<Pick<BatchJournal, 'nextQueued'>> {
  const numbers = pagesOf((after, limit) => journal.nextQueued(after, limit));
  const lastAtStart = journal.lastNumberId();
  await new Promise<void>((resolve) => {
    let read = numbers.length;
    reading.subscribe((added) => {
      read += added;
      if (read >= GUARD_SAMPLE || !reading.reading) resolve();
    });
    reading.done.then(resolve, resolve);
  });
  numbers.push(...pagesOf((after, limit) => journal.numbersAfter(Math.max(after, lastAtStart), limit)));
  return {
    nextQueued: (afterId, limit) => {
      const from = numbers.findIndex((q) => q.id > afterId);
      return from < 0 ? [] : numbers.slice(from, from + limit);
    },
  };
}

function pagesOf(
  page: (afterId: number, limit: number) => Array<{ id: number; e164: string; country: string }>,
): Array<{ id: number; e164: string; country: string }> {
  const all: Array<{ id: number; e164: string; country: string }> = [];
  for (let p = page(0, 4096); p.length > 0; p = page(p[p.length - 1]!.id, 4096)) all.push(...p);
  return all;
}

/**
 * Whether a country's numbers go unsent in this run: webhook mode (webhook-only, or --webhook-all) without
 * --webhook-url.
 */
async function webhookMissingFor(options: BatchOptions): Promise<(country: string) => boolean> {
  const { WEBHOOK_ONLY_COUNTRIES } = await import('../wire/types.js');
  return (country) => !options.webhookUrl && (options.webhookAll || WEBHOOK_ONLY_COUNTRIES.includes(country));
}

/** What is read, named as the user gave it, with what was detected in it. */
function readingLine(input: string, layout: TableLayout): string {
  if (layout.workbook) return `Reading ${input}, sheet '${layout.workbook.sheet}' (phone column: ${layout.phoneLabel})`;
  const encoding = layout.encoding && layout.encoding !== 'utf-8' ? `, encoding: ${layout.encoding}` : '';
  return (
    `Reading ${input === '-' ? 'standard input' : input} (phone column: ${layout.phoneLabel}, delimiter: ` +
    `${layout.delimiter === '\t' ? 'tab' : layout.delimiter}${encoding})`
  );
}

/** Whether a live batch or listener holds the journal (its files are then kept right by it). */
async function journalInUse(ctx: RunContext, journalPath: string): Promise<boolean> {
  const { lockHolder } = await import('../journal/journal.js');
  return lockHolder(journalPath, ctx.lockDeps) !== null || lockHolder(journalPath, ctx.lockDeps, 'listen') !== null;
}

/**
 * The journal of a stopped batch as a rerun would find it, or null when a rerun would start afresh (no journal) or
 * refuse it (another input or options that change answers: said as a warning; the estimate is then the whole list's).
 */
async function rerunPlan(
  ctx: RunContext,
  journalPath: string | null,
  sha256: string,
  resultOptions: ResultOptions,
  serviceOrigin: string | null,
) {
  if (journalPath === null || !existsSync(journalPath)) return null;
  const { rerunPlanOf } = await import('../journal/views.js');
  let plan: Awaited<ReturnType<typeof rerunPlanOf>>;
  try {
    plan = await rerunPlanOf(journalPath, await journalInUse(ctx, journalPath));
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

async function dryRun(
  ctx: RunContext,
  input: string,
  layout: TableLayout,
  resultOptions: ResultOptions,
  options: BatchOptions,
  journalOf: (sha256: string) => Promise<string | null>,
): Promise<DryRunReport> {
  const { scanInput } = await import('./ingest.js');
  const webhookMissing = await webhookMissingFor(options);
  ctx.info(readingLine(input, layout));
  // Distinct numbers as 8-byte doubles: memory stays small however many distinct numbers the list has.
  const { DistinctNumbers } = await import('../phone/distinct-numbers.js');
  const seen = new DistinctNumbers();
  const byCountry = new Map<string, number>();
  // Fresh verdicts in the results cache are looked for as the list is read (only those found are kept).
  const evidence = await import('../evidence/batch-evidence.js');
  const asked = (options.reuseWithinMs ?? null) !== null;
  const service = asked
    ? null
    : await ctx.serviceConfig().then(
        (c) => new URL(c.baseUrl.value).origin,
        () => null,
      );
  const reusable = service ? await evidence.reusableCounter(ctx, service, options.compliance ?? {}) : null;
  const fresh: Array<{ e164: string; country: string; age: number }> = [];
  const scan = await scanInput(layout, resultOptions.country ?? undefined, (cell) => {
    if (!seen.add(cell.e164)) return;
    byCountry.set(cell.country, (byCountry.get(cell.country) ?? 0) + 1);
    const age = reusable && !webhookMissing(cell.country) ? reusable.freshAge(cell.e164, cell.country) : null;
    if (age !== null) fresh.push({ e164: cell.e164, country: cell.country, age });
  }).catch((err: unknown) => {
    reusable?.close();
    throw err;
  });
  const { readCosts } = await import('../stores/cost-cache.js');
  const { cacheDir } = await import('../paths.js');
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
  // A stopped batch: only what a rerun would send is estimated (answered numbers are never sent again).
  const journalPath = await journalOf(scan.sha256);
  const plan = await rerunPlan(ctx, journalPath, scan.sha256, resultOptions, origin);
  let resuming: DryRunResume | null = null;
  let toSend = byCountry;
  if (plan) {
    const resend = options.resendUnanswered === true;
    toSend = new Map();
    resuming = {
      journal: journalPath!,
      numbers: seen.size,
      with_verdict: 0,
      pending: 0,
      to_look_up: 0,
      not_sent: 0,
      unanswered: 0,
      unanswered_sends: plan.unansweredSends,
      credits_spent: plan.credits,
      resend_unanswered: resend,
    };
    for (const [country, n] of byCountry) {
      const j = plan.byCountry.get(country);
      // A list read in part (a crash while reading): its numbers not in the journal yet are looked up too.
      const unread = plan.ingested ? 0 : Math.max(0, n - (j?.numbers ?? 0));
      const send = (j?.toLookUp ?? 0) + unread + (resend ? (j?.unanswered ?? 0) : 0);
      resuming.with_verdict += j?.verdict ?? 0;
      resuming.pending += j?.pending ?? 0;
      resuming.unanswered += j?.unanswered ?? 0;
      if (send > 0) toSend.set(country, send);
    }
    for (const [country, cost] of plan.costs) costs.set(country, cost);
  }
  const unsupported = new Set(plan ? [...toSend.keys()].filter((c) => plan.unsupportedCountries.includes(c)) : []);
  const countries = [...toSend.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const unknown: string[] = [];
  const notSent: string[] = [];
  for (const [country] of countries) {
    if (webhookMissing(country)) notSent.push(country);
    else if (unsupported.has(country)) continue;
    else if (!costs.has(country)) unknown.push(country);
  }
  const { dryRunGuard } = await import('../evidence/credit-guard.js');
  const guard = dryRunGuard(toSend, [...notSent, ...unsupported], costs, balance?.creditsRemaining ?? null);
  if (resuming) {
    resuming.to_look_up = guard.forecast.numbers;
    resuming.not_sent = [...toSend.values()].reduce((a, b) => a + b, 0) - guard.forecast.numbers;
  }
  const resend = options.resendUnanswered === true;
  const rerun = plan && journalPath ? { path: journalPath, inUse: await journalInUse(ctx, journalPath), resend } : null;
  const reuse = reusable ? await evidence.reusableOfRun(reusable, fresh, unsupported, rerun, costs) : null;
  if (reuse) {
    const { reusableLine } = await import('../evidence/reusable.js');
    guard.lines.push(`note: ${reusableLine(reuse, guard.forecast.numbers)}`);
  }
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
    unsupported_countries: [...unsupported].sort(),
    resuming,
    reusable: reuse,
  };
  return { result, guard, costs, invalidSamples: scan.invalidSamples, maxCredits: options.maxCredits };
}
