// The batch use case: checks paths and options, reads where the input and the journal are, and hands the run to its
// stages (src/batch/stages/: read → plan → look up → write → settle), which own the journal's lifecycle and lock. It
// never prints: it emits typed events, and `src/commands/batch.ts` shows them and picks the exit code.
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { DncError, inputError } from '../errors.js';
import type { ResultOptions } from '../journal/journal.js';
import type { TableLayout } from '../tables/layout.js';
import { checkFiles, checkOptions, withRememberedOptions } from './options.js';
import { spoolStdin, withKeptInput } from './spool.js';
import { type BatchOptions, type BatchRunDeps, type BatchRunResult, runContext, type RunContext } from './job.js';
import { dryRun } from './dry-run.js';
import type { BatchPaths } from './paths.js';
import { manifestPathFor } from '../evidence/manifest.js';
import { openInputLayout } from '../tables/input.js';
import { keptFolder, stateDir } from '../paths.js';
import { DNC_COLUMNS } from '../results/columns.js';
import { hashFile } from '../file-hash.js';
import * as batchPaths from './paths.js';
import { runBatchJournal } from './stages/run-journal.js';

/** The journal's and the manifest's files. */
interface JournalFiles {
  journalPath: string;
  manifestPath: string;
}

/** What is settled before the input is read: the options (a rerun's remembered), the paths, the service. */
interface Resolved {
  options: BatchOptions;
  /** A rerun: its rows are read as it began. */
  resumed: boolean;
  paths: BatchPaths;
  /** Known before the input is read unless they follow its content (-o -, a FIFO). */
  early: JournalFiles | null;
  /** Null for a dry run, which needs no service configured. */
  serviceOrigin: string | null;
}

type Spool = { tmp: string; sha256: string } | null;

export async function runBatchJob(input: string, given: BatchOptions, deps: BatchRunDeps): Promise<BatchRunResult> {
  const ctx = runContext(deps);
  const resolved = await resolveJob(ctx, input, given);
  const { paths, early } = resolved;
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
    const { layout, options } = await openLayout(ctx, input, resolved, spool);
    refuseResultsFile(input, layout);
    const resultOptions = resultOptionsOf(paths, layout, options);
    if (options.dryRun) {
      // The journal a real run would use, to say what a rerun would send (read only: a dry run never creates or
      // changes it).
      const journalOf = async (sha256: string): Promise<string | null> => {
        if (options.restart) return null;
        if (options.journal !== undefined)
          return batchPaths.resolveOutputTarget('--journal', options.journal, ctx.cwd).path;
        if (paths.output.kind === 'file') return batchPaths.journalPathFor(paths.outputPath);
        return batchPaths.streamJournalPath(stateDir(ctx.env, ctx.homedir), spool?.sha256 ?? sha256, resultOptions);
      };
      return { kind: 'dry-run', report: await dryRun(ctx, input, layout, resultOptions, options, journalOf) };
    }
    const { journalPath, manifestPath } = early ?? (await lateJournalFiles(ctx, paths, spool, resultOptions));
    return await withKeptInput(spool, journalPath, options.restart, (kept) => {
      if (kept) paths.inputPath = layout.path = kept;
      return runBatchJournal({
        ctx,
        input,
        options,
        paths,
        layout,
        resultOptions,
        serviceOrigin: resolved.serviceOrigin!,
        journalPath,
        manifestPath,
      });
    });
  } finally {
    if (spool) await rm(spool.tmp, { force: true });
  }
}

/** The options (a rerun resumes with those its journal remembers) and every path checked, before anything is read. */
async function resolveJob(ctx: RunContext, input: string, given: BatchOptions): Promise<Resolved> {
  const { options, resumedWith, resumed } = await withRememberedOptions(ctx, input, given);
  if (resumedWith.length > 0)
    ctx.info(`Resuming with the options this batch was started with: ${resumedWith.join(' ')}`);
  const paths = await checkOptions(ctx, input, options);
  // Where the journal and manifest go is known now unless they follow the input's content (-o -, a FIFO):
  // then no file can collide or be refused before the input is read.
  let early: JournalFiles | null = null;
  if (!options.dryRun && (options.journal !== undefined || paths.output.kind === 'file')) {
    const journalPath =
      options.journal !== undefined
        ? batchPaths.resolveOutputTarget('--journal', options.journal, ctx.cwd).path
        : batchPaths.journalPathFor(paths.outputPath);
    const manifestPath = paths.output.kind === 'file' ? manifestPathFor(paths.outputPath) : manifestBeside(journalPath);
    await checkFiles(paths, journalPath, manifestPath);
    early = { journalPath, manifestPath };
  } else if (!options.dryRun) {
    // The journal and manifest follow the input's content: the files already named are checked before it is read.
    await checkFiles(paths, null, null);
  }
  // Configuration problems surface before the input is read, not after.
  const serviceOrigin = options.dryRun ? null : new URL((await ctx.serviceConfig()).baseUrl.value).origin;
  // A team store that cannot be reached (or is newer than this dnc) stops the batch before anything is read or sent.
  if (!options.dryRun) await (await ctx.stores()).ready();
  return { options, resumed, paths, early, serviceOrigin };
}

/** The manifest of a batch whose output is not a file: beside its journal. */
function manifestBeside(journalPath: string): string {
  return journalPath.replace(/\.sqlite$/, '') + '.manifest.json';
}

/** The state folder, where a batch whose output is not a file keeps its journal: exit 3 when it cannot be. */
function stateFolderFor(c: RunContext, what: string): string {
  const dir = keptFolder(c.env, c.homedir, 'state');
  if (dir !== null) return dir;
  const why = `the home folder ${c.homedir} does not exist (dnc does not create it)`;
  throw inputError('E_OUTPUT_UNWRITABLE', `cannot keep ${what} in the state folder: ${why}`, {
    hint: 'give --journal PATH, or set HOME to a folder that exists (or XDG_STATE_HOME); nothing was sent',
  });
}

/**
 * The input's layout (its columns, delimiter, sheet), with the options it settles: the column asked for on a terminal
 * when dnc is not sure which holds the numbers, the country column found by its name.
 */
async function openLayout(
  ctx: RunContext,
  input: string,
  resolved: Resolved,
  spool: Spool,
): Promise<{ layout: TableLayout; options: BatchOptions }> {
  let { options } = resolved;
  const open = (columns: string[] | undefined) =>
    openInputLayout(spool?.tmp ?? resolved.paths.inputPath, {
      delimiter: options.delimiter,
      columns,
      countryColumn: options.countryColumn,
      // A country column is found by its name for a new batch only: a resumed one reads its rows as it began.
      detectCountryColumn: !resolved.resumed,
      header: options.header,
      sheet: options.sheet,
      skipRows: options.skipRows,
      encoding: options.encoding,
    });
  const layout = await open(options.column).catch(async (err: unknown) => {
    // Not sure which columns hold the numbers: asked on a terminal, else exit 2 naming them.
    const candidates = (err as DncError).details?.candidates as string[] | undefined;
    if (!(err instanceof DncError) || err.code !== 'E_COLUMN_AMBIGUOUS' || !candidates || !ctx.askColumns) throw err;
    const answer = await ctx.askColumns({ input, candidates });
    if (!answer) throw err;
    options = { ...options, column: [answer] };
    return open(options.column);
  });
  if (layout.countryDetected && layout.countryIndex !== null && layout.countryIndex !== undefined) {
    // Remembered as if given: a rerun reads the rows as this run does.
    options = { ...options, countryColumn: layout.header ? layout.countryLabel : String(layout.countryIndex + 1) };
  }
  return { layout, options };
}

/** A results file scrubbed again would carry two dnc_result columns: a reader taking the first sees the old verdict. */
function refuseResultsFile(input: string, layout: TableLayout): void {
  const stale = (layout.header ?? []).filter((h) => (DNC_COLUMNS as readonly string[]).includes(h.trim()));
  if (stale.length === 0) return;
  throw inputError(
    'E_INPUT_HAS_RESULTS',
    `${input === '-' ? 'standard input' : input} already has dnc columns (${stale.join(', ')}): it is a results file`,
    {
      hint:
        'scrub the original call list, or remove the dnc_* columns first (a second set would sit beside ' +
        'the first, and a dialler reading the first would see old verdicts)',
    },
  );
}

/** How the journal reads and writes the input's rows: its delimiter, header, phone and country columns, webhook. */
function resultOptionsOf(paths: BatchPaths, layout: TableLayout, options: BatchOptions): ResultOptions {
  return {
    country: paths.country ?? null,
    delimiter: layout.delimiter,
    header: options.header,
    phoneIndex: layout.phoneIndexes[0]!,
    ...(layout.phoneIndexes.length > 1 ? { phoneIndexes: layout.phoneIndexes } : {}),
    ...(layout.countryIndex !== null && layout.countryIndex !== undefined ? { countryIndex: layout.countryIndex } : {}),
    webhookUrl: options.webhookUrl ?? null,
    webhookAll: options.webhookAll,
  };
}

/** The journal and manifest of a batch whose output is not a file: in the state folder, named by the input's hash. */
async function lateJournalFiles(
  ctx: RunContext,
  paths: BatchPaths,
  spool: Spool,
  resultOptions: ResultOptions,
): Promise<JournalFiles> {
  const sha256 = spool?.sha256 ?? (await hashFile(paths.inputPath));
  const journalPath = batchPaths.streamJournalPath(stateFolderFor(ctx, 'the journal'), sha256, resultOptions);
  batchPaths.makeFolder(path.dirname(journalPath), 'the journal');
  const manifestPath = manifestBeside(journalPath);
  await checkFiles(paths, journalPath, manifestPath);
  return { journalPath, manifestPath };
}
