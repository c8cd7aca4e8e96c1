// Renders a batch's output files from its input and its journal: every row, in order, plus the dnc_* columns.
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { chmod, rename, rm, stat } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { removeLeftoverTemps, syncFolder, tempPathFor } from '../atomic-file.js';
import path from 'node:path';
import { describeFsError, inputError } from '../errors.js';
import { unsupportedCountryText } from '../service/answers.js';
import { TallyBuilder, type OutputTally } from './tally.js';
import { CsvWriter, escapeFormulaCell, isHttpsUrl, serviceTextCell } from '../tables/csv-output.js';
import {
  UNANSWERED_SEND,
  type BatchJournal,
  type BatchMeta,
  type NumberVerdict,
  type StoppedReason,
} from '../journal/journal.js';
import { PhoneCache } from '../phone/phone-cache.js';
import {
  complianceRecordOf,
  manifestCompliance,
  rulesOf,
  withExemption,
  withValidUntil,
} from '../compliance/batch-compliance.js';
import type { ValidityRules } from '../compliance/validity.js';
import { isUtf16, textEncoder, type TextEncoding } from '../tables/encoding.js';
import { DNC_COLUMNS, DNC_RESULTS, REVIEW_COLUMNS, type DncResult } from './columns.js';
import type { TypedCell } from '../tables/xlsx-cells.js';
import { outputFormatOf, type WorkbookBatch } from '../tables/xlsx-input.js';
import { readRows } from '../tables/input.js';
import type { TableLayout } from '../tables/layout.js';

/** Failures a rerun looks up again when nothing was charged for them (as journal.requeueUnfinished decides). */
const UNCHARGED_FAILURES: ReadonlySet<string> = new Set([
  'upstream_timeout',
  'upstream_error',
  'lookup_expired',
  'billing_error',
]);

export interface RenderSummary {
  input: string;
  output: string;
  callableOut: string | null;
  suppressedOut: string | null;
  rows: number;
  /** Rows by dnc_result. */
  byResult: Record<DncResult, number>;
  /** Rows by country ('' when the number could not be read), then by result. */
  byCountry: Map<string, Record<DncResult, number>>;
  /** Rows whose register source is not an https URL (the interface promises one): shown, but flagged. */
  notHttpsSources: number;
  /** not_checked rows of webhook-only countries: a rerun finishes them only with --webhook-url. */
  webhookRequired: number;
  /** Rows without a verdict that a bare rerun looks up again (nothing was charged for them). */
  retryable: number;
  /**
   * Rows whose number was sent by a run that stopped before the answer came (unanswered_send): maybe charged, sent
   * again only with --resend-unanswered.
   */
  unanswered: number;
  /** What was written to each output, in the order output, callable list, suppressed list. */
  written: Array<{ path: string; sha256: string; bytes: number }>;
  /** The output's rows added up as the manifest states them (taken from this pass: the output is not read again). */
  tally: OutputTally | null;
  /** The manifest's compliance fields (the scrub's record, each country's valid-until), from the same pass. */
  compliance: ReturnType<ReturnType<typeof manifestCompliance>['fields']> | null;
}

export function emptyResultCounts(): Record<DncResult, number> {
  return Object.fromEntries(DNC_RESULTS.map((r) => [r, 0])) as Record<DncResult, number>;
}

const NOT_CHECKED_TEXT: Record<StoppedReason, string> = {
  credit_limit:
    'not checked: the credit limit was reached (429); run the same command again after a top-up or in the next ' +
    'billing period',
  budget_reached: 'not checked: the --max-credits budget was reached; run the same command again with a larger budget',
  interrupted: 'not checked: the batch was interrupted; run the same command again to resume',
  auth_failed:
    'not checked: the batch stopped when the service refused the key or the request (401/403); fix the cause ' +
    'and run the same command again to resume',
  configuration:
    'not checked: the batch stopped when the service refused the request itself (not the number); fix the cause ' +
    'and run the same command again to resume',
  service_failure:
    'not checked: the batch stopped when the service failed; fix the cause and run the same command again to resume',
};

/** What decides the reason of a number never sent: a country no lookup would be sent for says so after any stop. */
interface NotSentReasons {
  /** Webhook-only countries, when the batch has no webhook URL. */
  webhookRequired: ReadonlySet<string>;
  /** The countries a 422 named, and the supported countries it listed. */
  unsupported: ReadonlySet<string>;
  supportedList: readonly string[];
}

/** The dnc_* cells of a number the journal knows. */
function cellsFor(
  e164: string,
  country: string,
  row: NumberVerdict | undefined,
  stopped: StoppedReason | null,
  firstRow: boolean,
  notSent: NotSentReasons,
): string[] {
  // A lookup's credits stand on the first row with its number only, so the column sums to what was spent.
  const credits = firstRow && row ? String(row.credits) : '0';
  if (!row) {
    return [e164, country, 'not_checked', '', '', '', '', 'interrupted', NOT_CHECKED_TEXT.interrupted, '0'];
  }
  if (row.state === 'done') {
    return [
      e164,
      country,
      row.result ?? 'failed',
      row.do_not_call === null ? '' : row.do_not_call ? 'true' : 'false',
      serviceTextCell(row.list_source),
      serviceTextCell(row.checked_at),
      serviceTextCell(row.correlation_id),
      serviceTextCell(row.error_code),
      serviceTextCell(row.error),
      credits,
    ];
  }
  if (row.state === 'pending') {
    return [
      e164,
      country,
      'pending',
      '',
      '',
      '',
      serviceTextCell(row.correlation_id),
      '',
      'webhook result not received yet; run `dnc listen`',
      credits,
    ];
  }
  // Queued when the run stopped: say why it would not have been sent anyway, where that is so.
  if (notSent.webhookRequired.has(country)) {
    return [
      e164,
      country,
      'not_checked',
      '',
      '',
      '',
      '',
      'webhook_required',
      `${country} lookups are webhook-only: pass --webhook-url and run \`dnc listen\``,
      '0',
    ];
  }
  if (notSent.unsupported.has(country)) {
    return [
      e164,
      country,
      'unsupported_country',
      '',
      '',
      '',
      '',
      'unsupported_country',
      unsupportedCountryText(country, notSent.supportedList),
      '0',
    ];
  }
  const reason = stopped ?? 'interrupted';
  return [e164, country, 'not_checked', '', '', '', '', reason, NOT_CHECKED_TEXT[reason], '0'];
}

/** The CSV layout a journal's input was read with. */
export function layoutOf(meta: BatchMeta): TableLayout {
  return {
    path: meta.inputPath,
    delimiter: meta.options.delimiter,
    recordDelimiter: meta.layout.recordDelimiter,
    header: meta.layout.header,
    columnCount: meta.layout.columnCount,
    phoneIndex: meta.options.phoneIndex,
    phoneLabel: meta.layout.phoneLabel,
    bom: meta.layout.bom,
    workbook: meta.layout.workbook,
    encoding: meta.layout.encoding,
  };
}

function outputError(err: unknown, file: string) {
  const code = (err as NodeJS.ErrnoException).code;
  return inputError('E_OUTPUT_UNWRITABLE', `cannot write ${file}: ${describeFsError(err)}`, {
    hint:
      code === 'ENOSPC' || code === 'EDQUOT'
        ? 'free some space on that disk, then run the same command again'
        : 'check that the output folder exists and is writable',
    cause: err,
  });
}

/** Where rendered text goes; it hashes and counts what it is given, so the manifest can describe a stream too. */
abstract class OutputSink {
  private readonly hash = createHash('sha256');
  bytes = 0;
  /** The path as the journal names it (`-` for standard output). */
  path = '';
  protected failed: unknown;
  constructor(
    readonly target: string,
    protected readonly stream: Writable,
  ) {
    this.stream.on('error', (err) => {
      this.failed = err;
    });
  }
  get sha256(): string {
    return this.hash.copy().digest('hex');
  }
  /** Writes text; resolves when the stream can take more (backpressure). */
  write(text: string | Buffer): Promise<void> | undefined {
    if (this.failed) throw outputError(this.failed, this.target);
    const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
    this.hash.update(bytes);
    this.bytes += bytes.length;
    if (this.stream.write(bytes)) return undefined;
    return new Promise((resolve, reject) => {
      const onError = (err: unknown) => {
        this.stream.off('drain', onDrain);
        reject(outputError(err, this.target));
      };
      const onDrain = () => {
        this.stream.off('error', onError);
        resolve();
      };
      this.stream.once('drain', onDrain);
      this.stream.once('error', onError);
    });
  }
  protected async end(): Promise<void> {
    if (this.failed) throw this.failed;
    await new Promise<void>((resolve, reject) => {
      this.stream.once('error', reject);
      this.stream.end(resolve);
    });
    if (this.failed) throw this.failed;
  }
  /** Ends the writing and puts the data on the disk, where that applies (commit() does it too, if not done). */
  async written(): Promise<void> {}
  abstract commit(): Promise<void>;
  abstract abort(): Promise<void>;
}

/**
 * A regular file written beside its final path, flushed to disk, and renamed into place only when
 * complete (then the folder is flushed too, so the rename survives a power loss). A new file is
 * private to the user (0600); one that exists keeps the mode its owner gave it.
 */
class AtomicFileSink extends OutputSink {
  readonly tmp: string;
  constructor(target: string) {
    const tmp = tempPathFor(target);
    super(target, createWriteStream(tmp, { flags: 'wx', mode: 0o600, flush: true }));
    this.tmp = tmp;
  }
  private writing: Promise<void> | null = null;
  override written(): Promise<void> {
    // 'finish' comes before the fsync: a stream with `flush: true` syncs as it closes. The rename waits for the
    // close, so the name never points at data that is not on the disk yet, and a failed fsync fails the commit.
    this.writing ??= this.end().then(() => this.closed());
    return this.writing;
  }
  async commit(): Promise<void> {
    await this.written();
    const existing = await stat(this.target).catch(() => null);
    if (existing?.isFile()) await chmod(this.tmp, existing.mode & 0o777);
    await rename(this.tmp, this.target);
    await syncFolder(path.dirname(this.target));
  }
  async abort(): Promise<void> {
    this.stream.destroy();
    await rm(this.tmp, { force: true });
  }
  private closed(): Promise<void> {
    return new Promise((resolve, reject) => {
      const settle = () => (this.failed ? reject(this.failed) : resolve());
      if (this.stream.closed) settle();
      else this.stream.once('close', settle);
    });
  }
}

/** A FIFO, a character device or standard output: written through (it cannot be replaced, and must not be). */
class StreamSink extends OutputSink {
  constructor(
    target: string,
    stream: Writable,
    private readonly owned: boolean,
  ) {
    super(target, stream);
  }
  async commit(): Promise<void> {
    if (this.owned) await this.end();
    else
      await new Promise<void>((resolve) =>
        this.stream.writableNeedDrain ? this.stream.once('drain', resolve) : resolve(),
      );
  }
  async abort(): Promise<void> {
    if (this.owned) this.stream.destroy();
  }
}

/**
 * Opens the sink of an output path: `-` is standard output, a FIFO or device is written through, anything else
 * atomically.
 */
async function openSink(target: string, stdout: Writable | undefined): Promise<OutputSink> {
  if (target === '-') {
    if (!stdout) throw new Error('render: the output is standard output, but no stream was given');
    return new StreamSink('standard output', stdout, false);
  }
  const st = await stat(target).catch(() => null);
  if (st && !st.isFile()) return new StreamSink(target, createWriteStream(target, { flags: 'w' }), true);
  return new AtomicFileSink(target);
}

/** The encoding of the CSV outputs: --output-encoding, else the input's (a workbook's CSV results are UTF-8). */
export function outputEncodingOf(meta: BatchMeta): TextEncoding {
  return meta.outputEncoding ?? meta.layout.encoding ?? 'utf-8';
}

/** One output file as rows go into it: CSV text gathered a batch at a time, or rows added to a workbook. */
interface Lane {
  header(fields: readonly string[]): Promise<void>;
  /** Input cells (typed when read from a workbook), then dnc's; `result` colours a workbook row. */
  row(
    input: readonly string[],
    typed: readonly TypedCell[] | undefined,
    extra: readonly string[],
    result?: DncResult,
  ): void;
  flush(): Promise<void>;
  finish(): Promise<void>;
}

class CsvLane implements Lane {
  private text = '';
  constructor(
    private readonly sink: OutputSink,
    private readonly writer: CsvWriter,
    private readonly escapeInput: (fields: string[]) => string[],
    private readonly encode: (text: string) => Buffer,
  ) {}
  async header(fields: readonly string[]): Promise<void> {
    await this.sink.write(this.encode(this.writer.record(this.escapeInput([...fields]))));
  }
  row(input: readonly string[], _typed: unknown, extra: readonly string[]): void {
    this.text += this.writer.record(
      extra.length ? this.escapeInput([...input]).concat(extra) : this.escapeInput([...input]),
    );
  }
  async flush(): Promise<void> {
    if (this.text) await this.sink.write(this.encode(this.text));
    this.text = '';
  }
  async finish(): Promise<void> {}
}

/** Opens the lane of one output: its format decides how rows are written; the sink where they go. */
async function openLane(
  sink: OutputSink,
  target: string,
  meta: BatchMeta,
  layout: TableLayout,
  writer: CsvWriter,
  escapeInput: (fields: string[]) => string[],
  isResults: boolean,
  now: () => number,
  rules: ValidityRules,
): Promise<Lane> {
  if (outputFormatOf(target, isResults ? meta.outputFormat : undefined) === 'csv') {
    const encoding = outputEncodingOf(meta);
    const encode = await textEncoder(encoding);
    // An input with a byte-order mark (Excel's "CSV UTF-8") gets one back, so Excel reads the results as UTF-8 too;
    // a UTF-16 output always has one (nothing else tells a reader it is UTF-16).
    if (layout.bom || isUtf16(encoding)) await sink.write(encode('\uFEFF'));
    return new CsvLane(sink, writer, escapeInput, encode);
  }
  const { openWorkbookLane } = await import('./xlsx-output.js');
  const { manifestPathFor } = await import('../evidence/manifest.js');
  const { VERSION } = await import('../version.js');
  const book = await openWorkbookLane(sink, {
    header: layout.header !== null,
    summary: isResults
      ? {
          input: meta.inputPath,
          inputSha256: meta.inputSha256,
          manifest: meta.manifestPath ?? (target === '-' ? null : manifestPathFor(target)),
          writtenAt: new Date(now()),
          dncVersion: VERSION,
        }
      : null,
    // The scrub's windows, as each row's dnc_valid_until and the manifest use them.
    maxAgeDays: { byCountry: rules.byCountry, other: rules.otherDays },
  });
  return {
    header: (fields) => book.header(fields),
    row: (input, typed, extra, result) => book.row(input, typed, extra, result),
    flush: () => book.flush(),
    finish: () => book.finish(),
  };
}

/**
 * Writes OUTPUT (and the callable/suppressed lists named in the journal's metadata) from the input
 * and the journal, atomically. The input is re-read and must hash as it did when the batch began.
 * `dnc listen` calls this too, after pushes have changed the journal.
 */
export interface RenderOptions {
  /** The normalisation cache of a run that just read the same input (saves normalising every row twice). */
  phones?: PhoneCache;
  /** The clock that decides which leftover temporary files are stale (tests inject it). */
  now?: () => number;
  /** Where an output named `-` goes. */
  stdout?: Writable;
}

export async function renderBatchOutput(journal: BatchJournal, options: RenderOptions = {}): Promise<RenderSummary> {
  journal.checkpoint();
  // Every row from one state of the journal: pushes committed meanwhile (dnc listen) wait for the next render,
  // so two rows of one number never disagree.
  return journal.snapshot(() => renderSnapshot(journal, options));
}

/** A render begun while lookups run (see renderEarly). */
export interface EarlyRender {
  /** More answers are committed: rows that waited for them are written. */
  answered(): void;
  /**
   * The lookups are over and nothing more writes through this process's connection: finishes the render in one
   * snapshot of the journal. Null when it cannot (another process committed to the journal meanwhile, or the
   * early part failed or could not be done early): then render afresh with renderBatchOutput.
   */
  finish(): Promise<RenderSummary | null>;
  /** The run ends without this render: its temporary files are removed. */
  abort(): Promise<void>;
  /** Why finish() gave up, once it has. */
  readonly droppedBecause: string | null;
}

/**
 * How a render begun early is run from another thread (see early-render-thread.ts); by default, from the batch's own.
 */
export interface EarlyHooks {
  /** Whether finish() checkpoints a long log first (the batch's thread does it before it asks another to finish). */
  checkpoint?: boolean;
  /**
   * Asked by finish() once it holds its snapshot: whether no other process has committed to the journal since the
   * render began. By default this connection's data_version tells; a connection of another thread sees the batch's
   * own commits there too, so it asks the batch's connection.
   */
  unchanged?: () => Promise<boolean>;
}

/** How a render begun early waits for verdicts. */
interface EarlyGate {
  /** True once no verdict changes any more (finish() holds the snapshot). */
  readonly final: boolean;
  /** Resolves when more answers may be committed or the gate turned final; rejects when the render is dropped. */
  next(): Promise<void>;
}

/** Thrown inside an early render that is dropped, or that meets what only a render at the end may write. */
class EarlyRenderDropped extends Error {}

/**
 * Final verdicts read ahead, a window at a time, in id order: ids are given in order of first appearance, so the
 * rows ask for them nearly in that order, and one query for a window costs less than one per row (≈ a third of a
 * render's time went to those). A row whose number is not in the window (a repeat, a verdict not final when the
 * window was read) is asked for alone, as before. Read in the render's transaction, or, early, by a render that
 * is dropped if another process writes meanwhile (renderEarly): a verdict read ahead is the one a row would read.
 */
class VerdictsAhead {
  private window = new Map<string, NumberVerdict>();
  /** Whether the last window was full (more may follow), or answers came since it was read. */
  private more = true;

  constructor(private readonly journal: Pick<BatchJournal, 'doneVerdictsAfter'>) {}

  /**
   * The final verdict of `e164` if it is read ahead (each is taken once: its number's first row); `after`: the highest
   * id rendered.
   */
  take(e164: string, after: number): NumberVerdict | undefined {
    if (this.window.size === 0 && this.more) this.read(after);
    const v = this.window.get(e164);
    if (v !== undefined) this.window.delete(e164);
    return v;
  }

  /** More numbers may be final now: the next window is read when this one is used up. */
  answered(): void {
    this.more = true;
  }

  private read(after: number): void {
    const rows = this.journal.doneVerdictsAfter(after, VERDICTS_AHEAD);
    this.window = new Map(rows.map((r) => [r.e164, r]));
    this.more = rows.length === VERDICTS_AHEAD;
  }
}

const VERDICTS_AHEAD = 512;

/**
 * Renders a batch's outputs while its lookups run, starting when `ready` resolves: each row is written once its
 * number's verdict is final (done), in input order, so at the end only the rows answered last are left to write.
 * Sound because a done verdict never changes in the batch's own process; a change by another (dnc listen) moves
 * the journal's data_version, and then finish() gives up. Only regular files are written this way, and only CSV
 * from a CSV list (a stream cannot take back rows already written when the run stops; a workbook's summary
 * carries the time it is written).
 */
export function renderEarly(
  journal: BatchJournal,
  ready: Promise<unknown>,
  options: RenderOptions = {},
  hooks: EarlyHooks = {},
): EarlyRender {
  const version = hooks.unchanged ? null : journal.dataVersion();
  let state: 'early' | 'final' | 'dropped' = 'early';
  let roused = false;
  let wake: (() => void) | null = null;
  const gate: EarlyGate = {
    get final() {
      return state === 'final';
    },
    async next() {
      if (!roused && state === 'early') await new Promise<void>((resolve) => (wake = resolve));
      roused = false;
      if (state === 'dropped') throw new EarlyRenderDropped('the early render was dropped');
    },
  };
  const rouse = () => {
    roused = true;
    const w = wake;
    wake = null;
    w?.();
  };
  let ending: () => void = () => {};
  const ended = new Promise<void>((resolve) => (ending = resolve));
  let failedEarly: string | null = null;
  const rendering = Promise.race([ready, ended]).then(() => {
    if (state === 'dropped') throw new EarlyRenderDropped('the early render was dropped');
    return renderSnapshot(journal, options, gate).catch((err: unknown) => {
      // (An EarlyRenderDropped is thrown only while early, though it may reach here once finish() has begun.)
      if (state !== 'final' || err instanceof EarlyRenderDropped) failedEarly = (err as Error).message;
      throw err;
    });
  });
  rendering.catch(() => {});
  const drop = async () => {
    state = 'dropped';
    ending();
    rouse();
    await rendering.catch(() => {});
  };
  const early = {
    droppedBecause: null as string | null,
    answered: rouse,
    async finish(): Promise<RenderSummary | null> {
      if (failedEarly !== null) {
        early.droppedBecause = failedEarly;
        await drop();
        return null;
      }
      if (hooks.checkpoint !== false) journal.checkpoint();
      const endSnapshot = journal.beginSnapshot();
      try {
        if (!(hooks.unchanged ? await hooks.unchanged() : journal.dataVersion() === version)) {
          early.droppedBecause = 'another process wrote to the journal meanwhile';
          await drop();
          return null;
        }
        state = 'final';
        ending();
        rouse();
        return await rendering;
      } catch (err) {
        if (failedEarly === null) throw err;
        early.droppedBecause = failedEarly;
        return null;
      } finally {
        endSnapshot();
      }
    },
    abort: drop,
  };
  return early;
}

function refuseIncomplete(journal: BatchJournal, meta: BatchMeta): void {
  // The batch's list is still being read into the journal (lookups start before it is all there).
  if (!journal.ingested) {
    throw inputError(
      'E_JOURNAL_INCOMPLETE',
      `the journal ${journal.path} does not hold all of ${meta.inputPath} yet (its batch is still reading it, ` +
        `or stopped while reading)`,
      {
        hint: 'run the same `dnc batch` command again: it reads the rest of the list and writes the outputs',
      },
    );
  }
}

function notSentReasonsOf(journal: BatchJournal, meta: BatchMeta, webhookOnly: readonly string[]): NotSentReasons {
  return {
    webhookRequired: new Set(meta.options.webhookUrl ? [] : webhookOnly),
    unsupported: new Set(journal.unsupportedCountries()),
    supportedList: journal.supportedCountries() ?? [],
  };
}

async function renderSnapshot(journal: BatchJournal, options: RenderOptions, gate?: EarlyGate): Promise<RenderSummary> {
  const meta = journal.meta();
  if (!meta)
    throw inputError('E_JOURNAL_EMPTY', `the journal ${journal.path} holds no batch`, {
      hint: 'run `dnc batch` again with --restart',
    });
  // Begun early, a render checks what the end of the run settles once it turns final (below).
  let final = gate === undefined;
  if (final) refuseIncomplete(journal, meta);
  const layout = layoutOf(meta);
  // What only a render after the lookups may write, refused while early (finish() may have turned the gate already).
  const early = () => gate !== undefined && !gate.final;
  if (early() && layout.workbook) throw new EarlyRenderDropped('a workbook list is rendered after the lookups');
  let stopped = journal.stoppedReason();
  let inputSha256 = meta.inputSha256;
  const writer = new CsvWriter(layout.delimiter, layout.recordDelimiter);
  const escapeInput =
    meta.escapeFormulas === true
      ? (fields: string[]) => fields.map((v) => escapeFormulaCell(v))
      : (fields: string[]) => fields;

  const files: OutputSink[] = [];
  const open = async (target: string) => {
    if (early() && (target === '-' || (await stat(target).catch(() => null))?.isFile() === false)) {
      throw new EarlyRenderDropped(`${target} is not a regular file: it is written after the lookups`);
    }
    try {
      const f = await openSink(target, options.stdout);
      f.path = target;
      files.push(f);
      return f;
    } catch (err) {
      throw outputError(err, target);
    }
  };
  const now = options.now ?? Date.now;
  // What a killed writer left of these files and of the manifest (its writer dead: see removeLeftoverTemps).
  const { manifestPathFor } = await import('../evidence/manifest.js');
  const manifest = meta.manifestPath ?? (meta.outputPath === '-' ? null : manifestPathFor(meta.outputPath));
  const lists = [meta.callableOut, meta.suppressedOut, meta.reviewOut, meta.dialOut];
  for (const target of [meta.outputPath, ...lists, manifest]) {
    if (target && target !== '-') await removeLeftoverTemps(target, now());
  }
  const summary: RenderSummary = {
    input: meta.inputPath,
    output: meta.outputPath,
    callableOut: meta.callableOut,
    suppressedOut: meta.suppressedOut,
    rows: 0,
    byResult: emptyResultCounts(),
    byCountry: new Map(),
    notHttpsSources: 0,
    webhookRequired: 0,
    retryable: 0,
    unanswered: 0,
    written: [],
    tally: null,
    compliance: null,
  };
  const tally = new TallyBuilder();
  const record = complianceRecordOf(journal);
  const validity = manifestCompliance(record);
  // The windows the scrub recorded: each row's dnc_valid_until is computed under them.
  const rules = rulesOf(record);
  const hash = createHash('sha256');
  const country = meta.options.country ?? undefined;
  const phones = options.phones && options.phones.defaultCountry === country ? options.phones : new PhoneCache(country);
  try {
    const lane = async (target: string, header: readonly string[] | null, extra: readonly string[]) => {
      if (early() && outputFormatOf(target, target === meta.outputPath ? meta.outputFormat : undefined) !== 'csv') {
        throw new EarlyRenderDropped(`${target} is a workbook: it is written after the lookups`);
      }
      const sink = await open(target);
      const l = await openLane(sink, target, meta, layout, writer, escapeInput, target === meta.outputPath, now, rules);
      if (header) await l.header([...header, ...extra]);
      return l;
    };
    const main = await lane(meta.outputPath, layout.header, DNC_COLUMNS);
    const callable = meta.callableOut ? await lane(meta.callableOut, layout.header, []) : null;
    const suppressed = meta.suppressedOut ? await lane(meta.suppressedOut, layout.header, []) : null;
    const review = meta.reviewOut ? await lane(meta.reviewOut, layout.header, REVIEW_COLUMNS) : null;
    const dial = meta.dialOut ? await open(meta.dialOut) : null;
    // (The dial list never gets a byte-order mark: a dialler reads plain E.164 lines, and would take it for part of the
    // first number.)
    const lanes = [main, callable, suppressed, review].filter((l) => l !== null);
    const { WEBHOOK_ONLY_COUNTRIES } = await import('../wire/types.js');
    let notSent = notSentReasonsOf(journal, meta, WEBHOOK_ONLY_COUNTRIES);
    /** Waits for more answers; once the gate is final, reads again what the end of the run sets. */
    const waitForAnswers = async () => {
      await gate!.next();
      if (!gate!.final) return;
      final = true;
      const now = journal.meta()!;
      refuseIncomplete(journal, now);
      inputSha256 = now.inputSha256;
      stopped = journal.stoppedReason();
      notSent = notSentReasonsOf(journal, now, WEBHOOK_ONLY_COUNTRIES);
    };
    // Journal ids are given in order of first appearance, so a row whose number's id is above every id seen
    // so far is that number's first row: no set of seen numbers needs to be kept.
    let highestId = 0;
    const ahead = new VerdictsAhead(journal);
    for await (const batch of readRows(layout, { onChunk: (c) => hash.update(c) })) {
      // A workbook's rows come with their typed cells, which a workbook output keeps.
      const typedRows = (batch as WorkbookBatch).typed;
      let dialNumbers = '';
      for (let r = 0; r < batch.length; r++) {
        const input = batch[r]!;
        const typed = typedRows?.[r];
        const cell = phones.normalise(input[layout.phoneIndex] ?? '');
        let cells: string[];
        if (!cell.ok) {
          cells = [
            '',
            cell.country,
            'invalid',
            '',
            '',
            '',
            '',
            cell.code,
            cell.code === 'missing_number' ? `no number in ${layout.phoneLabel}` : cell.message,
            '0',
            '',
            '',
          ];
        } else {
          // Early, a row waits until its number's verdict is final (its number may not even be read yet).
          let current = ahead.take(cell.e164, highestId) ?? journal.verdict(cell.e164);
          while (!final && current?.state !== 'done') {
            await waitForAnswers();
            ahead.answered();
            current = journal.verdict(cell.e164);
          }
          const verdict = current; // (a const: TypeScript narrows it through firstRow below)
          const firstRow = verdict !== undefined && verdict.id > highestId;
          if (firstRow) highestId = verdict.id;
          cells = withValidUntil(
            withExemption(cellsFor(cell.e164, cell.country, verdict, stopped, firstRow, notSent), verdict),
            rules,
          );
          if (firstRow && cells[2] === 'callable') dialNumbers += `${cell.e164}\n`;
          if (cells[4] && !isHttpsUrl(cells[4]) && !cells[4].startsWith('internal:')) summary.notHttpsSources++;
        }
        const result = cells[2] as DncResult;
        if (cells[7] === 'webhook_required') summary.webhookRequired++;
        else if (
          result === 'not_checked' ||
          (result === 'failed' && UNCHARGED_FAILURES.has(cells[7]!) && cells[9] === '0')
        )
          summary.retryable++;
        else if (result === 'failed' && cells[7] === UNANSWERED_SEND) summary.unanswered++;
        summary.rows++;
        summary.byResult[result]++;
        let perCountry = summary.byCountry.get(cells[1]!);
        if (!perCountry) summary.byCountry.set(cells[1]!, (perCountry = emptyResultCounts()));
        perCountry[result]++;
        tally.add(cells);
        validity.onRow(0, input, cells);
        main.row(input, typed, cells, result);
        if (result === 'callable') callable?.row(input, typed, []);
        else if (result === 'do_not_call') suppressed?.row(input, typed, []);
        else if (result !== 'pending') review?.row(input, typed, [cells[0]!, result, cells[7]!, cells[8]!], result);
      }
      for (const l of lanes) await l.flush();
      if (dial && dialNumbers) await dial.write(dialNumbers);
    }
    while (!final) await waitForAnswers();
    if (hash.digest('hex') !== inputSha256) {
      throw inputError(
        'E_INPUT_CHANGED',
        `${meta.inputPath} has changed since this batch began (its SHA-256 differs)`,
        {
          hint: 'put the original file back, or start over with --restart',
        },
      );
    }
    for (const l of lanes) await l.finish();
    // Every file on the disk (each one's fsync, side by side) before the first is renamed into place.
    await Promise.all(files.map((f) => f.written().catch(() => {})));
    for (const f of files) {
      try {
        await f.commit();
      } catch (err) {
        throw outputError(err, f.target);
      }
      summary.written.push({ path: f.path, sha256: f.sha256, bytes: f.bytes });
    }
  } catch (err) {
    await Promise.all(files.map((f) => f.abort()));
    throw err;
  }
  summary.tally = tally.done();
  summary.compliance = validity.fields();
  return summary;
}
