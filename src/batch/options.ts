// A batch's options checked before anything is read, and the options its journal remembers: what a rerun resumes
// with, how a resume is written on a command line.
import { shellWord } from '../text/shell.js';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { checkWebhookUrlOption, parseCountryOption } from '../config.js';
import { inputError, usageError, type DncError } from '../errors.js';
import { refuseLinkedOutput } from '../atomic-file.js';
import { formatDuration } from '../time.js';
import { isCharacterDevice, isStream, isSymbolicLink } from '../file-kind.js';
import {
  phoneColumnsOf,
  rememberedOf,
  type BatchMeta,
  type RememberedRun,
  type ResultOptions,
  type StoredRun,
} from '../journal/types.js';
import {
  type BatchOptions,
  COMPLIANCE_FLAGS,
  REMEMBERED_OPTIONS,
  type RememberedOption,
  type RunContext,
} from './job.js';
import {
  type BatchPaths,
  refuseManifestOfAnotherOutput,
  resolveOutputTarget,
  checkWritableFolder,
  journalSideFiles,
  refuseCollisions,
  spoolPathFor,
  journalPathFor,
} from './paths.js';
import { journalInUse } from '../journal/lock.js';
import { BatchJournal } from '../journal/journal.js';
import { rememberedRunOf } from '../journal/views.js';
import { isRememberedValue } from '../journal/remembered.js';

/** How each remembered option is written on a command line (for the resume line and messages). */
const FLAG: Record<RememberedOption, string> = {
  column: '--column',
  countryColumn: '--country-column',
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
  noReuse: '--no-reuse',
  escapeFormulas: '--escape-formulas',
  format: '--format',
  compliance: '--suppression-list',
};

/** Checks options and paths before anything is read or sent (exit 2; exit 3 for a folder that cannot be written). */
export async function checkOptions(ctx: RunContext, input: string, options: BatchOptions): Promise<BatchPaths> {
  const country = await parseCountryOption(options.country);
  if (options.noReuse && (options.reuseWithinMs ?? null) !== null) {
    throw usageError('E_USAGE', '--no-reuse and --reuse-within say opposite things', {
      hint: 'give one: --reuse-within DURATION reuses recent answers, --no-reuse pays for them again',
    });
  }
  if (options.webhookAll && options.webhookUrl === undefined) {
    throw usageError('E_USAGE', '--webhook-all needs --webhook-url', {
      hint: 'give the https URL the service should push results to',
    });
  }
  // The key is looked for in the URL only when lookups may be sent (a dry run needs no configuration).
  const keys = options.webhookUrl !== undefined && !options.dryRun ? [(await ctx.serviceConfig()).apiKey.value] : [];
  await checkWebhookUrlOption(options.webhookUrl, options.allowInsecureWebhookUrl, keys);
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
export async function checkFiles(
  paths: BatchPaths,
  journalPath: string | null,
  manifestPath: string | null,
): Promise<void> {
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
  // The files dnc makes beside the output (journal, locks, manifest, spool) are never links nor anything but files:
  // SQLite follows a planted journal link and chmods what it names. (The input is read, and may be a link; the
  // outputs were judged as they were resolved.)
  // (The manifest is replaced by a rename: a folder in its way fails that rename, and the batch says so.)
  for (const f of files)
    if (f.role.startsWith('the ') && f.role !== 'the input')
      refuseLinkedOutput(f.path, f.role, { replaced: f.role !== 'the manifest' });
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

/**
 * What the journal remembers of this run's options in its `run` (the outputs and the webhook it records in fields of
 * their own: see rememberedOf).
 */
export function rememberedRun(options: BatchOptions): StoredRun {
  return {
    column: options.column ?? null,
    countryColumn: options.countryColumn ?? null,
    country: options.country ?? null,
    delimiter: options.delimiter ?? null,
    header: options.header,
    concurrency: options.concurrency,
    allowInsecureWebhookUrl: options.allowInsecureWebhookUrl,
    maxCredits: options.maxCredits,
    reuseWithinMs: options.reuseWithinMs ?? null,
    noReuse: options.noReuse === true,
    sheet: options.sheet ?? null,
    skipRows: options.skipRows ?? null,
    encoding: options.encoding ?? null,
    compliance: options.compliance ?? {},
  };
}

/**
 * The run's options as its journal records them, once the journal holds them (the read stage on): every option it
 * remembers (resolved once: paths absolute; what the plan settled of --reuse-within and --no-reuse) taken from it, the
 * options of this run only (--restart, --resend-*, --journal …) from the command line. The stages read these.
 */
export function optionsOfJournal(options: BatchOptions, meta: BatchMeta | null): BatchOptions {
  const remembered = meta ? rememberedOf(meta) : undefined;
  if (!remembered) return options;
  const merged: Record<string, unknown> = { ...options };
  for (const name of REMEMBERED_OPTIONS) if (name in remembered) merged[name] = rememberedValue(remembered, name);
  return merged as unknown as BatchOptions;
}

/** A remembered option as BatchOptions holds it (null kept only where it is a value: no budget, no reuse window). */
function rememberedValue(remembered: RememberedRun, name: RememberedOption): unknown {
  const value = remembered[name] ?? (name === 'maxCredits' || name === 'reuseWithinMs' ? null : undefined);
  // Journals from before several phone columns were read remember one.
  return name === 'column' && typeof value === 'string' ? [value] : value;
}

function statSafe(file: string) {
  try {
    return statSync(file);
  } catch {
    return null;
  }
}

/** The command that resumes this batch, as the user would type it. */
export function resumeCommand(input: string, options: BatchOptions, outputPath: string, cwd: string): string {
  const q = shellWord;
  const rel = (p: string) => {
    const r = path.relative(cwd, p);
    return r.startsWith('..') || path.isAbsolute(r) ? p : r;
  };
  const parts = ['dnc', 'batch', q(input), '-o', outputPath === '-' ? '-' : q(rel(outputPath))];
  if (options.journal !== undefined) parts.push('--journal', q(options.journal));
  // A journal beside a file output remembers every option: the short command resumes with them all.
  if (outputPath !== '-' || options.journal !== undefined) return parts.join(' ');
  // Standard output: the journal is found by the options that shape answers, so they are repeated.
  for (const column of options.column ?? []) parts.push('--column', q(column));
  if (options.countryColumn !== undefined) parts.push('--country-column', q(options.countryColumn));
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

export function describeOptions(o: ResultOptions): string {
  const parts = [
    `country=${o.country ?? '(none)'}`,
    `delimiter=${o.delimiter === '\t' ? 'tab' : o.delimiter}`,
    `header=${o.header}`,
    `phone column${phoneColumnsOf(o).length > 1 ? 's' : ''}=${phoneColumnsOf(o)
      .map((i) => i + 1)
      .join(',')}`,
    `country column=${o.countryIndex === null || o.countryIndex === undefined ? '(none)' : o.countryIndex + 1}`,
    `webhook-url=${o.webhookUrl ?? '(none)'}`,
    `webhook-all=${o.webhookAll}`,
  ];
  return parts.join(', ');
}

/**
 * Whether options `b` read a batch made with `a`: 'same', 'added' (every phone column of `a` and more: the journal's
 * answers stand, the new columns' numbers are added) or 'other' (answers would differ: a --restart).
 */
export function resultOptionsChange(a: ResultOptions, b: ResultOptions): 'same' | 'added' | 'other' {
  const same =
    a.country === b.country &&
    a.delimiter === b.delimiter &&
    a.header === b.header &&
    (a.countryIndex ?? null) === (b.countryIndex ?? null);
  if (!same) return 'other';
  const before = phoneColumnsOf(a);
  const now = phoneColumnsOf(b);
  // The first columns keep their places (their dnc_N_* columns): new ones come after them.
  if (before.some((c, i) => now[i] !== c)) return 'other';
  return now.length === before.length ? 'same' : 'added';
}

export function sameResultOptions(a: ResultOptions, b: ResultOptions): boolean {
  return resultOptionsChange(a, b) !== 'other';
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
  if (name === 'reuseWithinMs') return `${FLAG[name]} ${formatDuration(Number(value))}`;
  if (Array.isArray(value)) return value.map((v) => `${FLAG[name]} ${String(v)}`).join(' ');
  return `${FLAG[name]} ${String(value)}`;
}

/** A remembered option of a value dnc never writes (the journal was changed outside dnc): refused, never taken. */
function alteredOption(journalPath: string, name: RememberedOption, value: unknown): DncError {
  const json = JSON.stringify(value) ?? String(value);
  const shown = json.length > 80 ? `${json.slice(0, 77)}...` : json;
  return inputError(
    'E_JOURNAL_UNREADABLE',
    `the batch journal ${journalPath} remembers ${FLAG[name]} as ${shown}, a value dnc never writes: it was changed ` +
      'outside dnc; nothing was sent',
    {
      hint:
        `give ${FLAG[name]} on the command line to replace it, or run with --restart to start over (answers already ` +
        'paid for in the journal are discarded)',
    },
  );
}

/**
 * Takes every option not given on this command line from the journal of the same output, when it remembers
 * them: `dnc batch INPUT -o OUT` alone resumes a batch as it was started (budget, lists, webhook URL …).
 * Returns the options and how to say what was taken.
 */
export async function withRememberedOptions(
  ctx: RunContext,
  input: string,
  options: BatchOptions,
): Promise<{ options: BatchOptions; resumedWith: string[]; resumed: boolean }> {
  const none = { options, resumedWith: [], resumed: false };
  // --restart starts from nothing; a dry run takes what a rerun would (it only reads the journal).
  if (options.restart || !options.given) return none;
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
  let remembered: RememberedRun | undefined;
  try {
    if (options.dryRun) remembered = await rememberedRunOf(journalPath, journalInUse(journalPath, ctx.lockDeps));
    else {
      const journal = await BatchJournal.open(journalPath, { create: false, readonly: true });
      try {
        const meta = journal.meta();
        remembered = meta ? rememberedOf(meta) : undefined;
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
    if (!isRememberedValue(name, remembered[name])) throw alteredOption(journalPath, name, remembered[name]);
    merged[name] = rememberedValue(remembered, name);
    // The one of --reuse-within and --no-reuse given now replaces the other remembered.
    if (name === 'reuseWithinMs' && options.given.has('noReuse') && options.noReuse) merged[name] = null;
    if (name === 'noReuse' && options.given.has('reuseWithinMs') && (options.reuseWithinMs ?? null) !== null)
      merged[name] = false;
    const text = flagText(name, merged[name]);
    if (text && !(name === 'concurrency' && remembered[name] === 8)) resumedWith.push(text);
  }
  return { options: merged as unknown as BatchOptions, resumedWith, resumed: true };
}
