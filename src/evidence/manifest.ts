// The proof-of-scrub manifest: OUTPUT.manifest.json beside a batch's output, describing exactly that file.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { writeFileAtomic } from '../atomic-file.js';
import { PRIVATE_FILE_MODE } from '../private-files.js';
import type { RecordDelimiter } from '../tables/csv-output.js';
import type { BatchMeta } from '../journal/journal.js';
import { outputFormatOf } from '../tables/table-format.js';
import type { TextEncoding } from '../tables/encoding.js';
import { inputError } from '../errors.js';
import { isRegularFile } from '../file-kind.js';
import { VERSION } from '../version.js';
import { SERVICE_INTERFACE_VERSION } from '../wire/types.js';
import { resultColumns } from '../results/row-cells.js';
import { phoneColumnsOf } from '../journal/types.js';
import { chainHeadOf } from '../journal/views.js';
import { TallyBuilder, type OutputTally } from '../results/tally.js';
import { manifestPathFor } from '../results/side-files.js';

export { manifestPathFor, sideFilePath } from '../results/side-files.js';
import { manifestCompliance, type ScrubCompliance } from '../compliance/batch-compliance.js';
import type { ValiditySummary } from '../compliance/validity.js';
import type { TableLayout, WorkbookLayout } from '../tables/layout.js';
import { readRows } from '../tables/input.js';
import { hashFile } from '../file-hash.js';
import { Anchors } from '../stores/anchors.js';

export const MANIFEST_VERSION = 1;

/** How to read the output again (its delimiter and header follow the input's). */
export interface OutputFormat {
  delimiter: string;
  record_delimiter: RecordDelimiter;
  header: boolean;
  bom: boolean;
  /** Columns of the input; the dnc_* columns follow. */
  input_columns: number;
  /** The first phone column (1-based). */
  phone_column: number;
  /** Every phone column (1-based, in --column order), when there are several: each adds its dnc_N_* columns. */
  phone_columns?: number[];
  /** The column of each row's country (1-based), when the batch read one. */
  country_column?: number;
  /** --escape-formulas: formula-leading input cells carry a leading ' in the output. */
  escape_formulas?: boolean;
  /** --escape-formulas also escaped cells with spaces before a formula character (absent: written before it did). */
  escape_formulas_behind_spaces?: boolean;
  /**
   * dnc_* columns after the input's (10 before dnc_exemption was added, absent in those manifests; 11 before
   * dnc_valid_until; 12, plus 6 per phone column with several, before dnc_time_zones and dnc_calling_window; 14
   * plus 8 per phone column with several, before dnc_callable_numbers).
   */
  dnc_columns?: number;
  /** The output is an .xlsx workbook (its first sheet holds the rows); delimiter and the like are then moot. */
  workbook?: boolean;
  /**
   * The workbook's service text (dnc_list_source to dnc_error) is written as received, controls made spaces, without
   * the `'` a CSV file puts before text that starts like a formula (absent: written by a release that put it).
   */
  service_text_unquoted?: boolean;
  /** The input was a sheet of an .xlsx workbook: which, and its header's row. */
  input_workbook?: WorkbookLayout;
  /** The CSV output's text encoding, when not UTF-8. */
  encoding?: TextEncoding;
  /** The CSV input's text encoding, when not UTF-8. */
  input_encoding?: TextEncoding;
  /** A CSV input's records above its header that are not read (--skip-rows, Excel's `sep=` line). */
  input_skip_records?: number;
}

export interface Manifest extends OutputTally {
  manifest_version: number;
  /**
   * The run's id (32 hex digits), the same in every rewrite of its manifest: how a verifier on another machine finds
   * the run's anchors in the team store. Absent in manifests of older releases.
   */
  run_id?: string;
  dnc_version: string;
  interface_version: string;
  service_base_url: string | null;
  started_at: string | null;
  finished_at: string | null;
  updated_at: string;
  journal: string;
  input: { path: string; sha256: string; bytes: number };
  output: { path: string; sha256: string; bytes: number };
  format: OutputFormat;
  /** --callable-out and --suppressed-out files written with the output (what a dialler loads). */
  lists: Array<{ kind: 'callable' | 'suppressed' | 'review' | 'dial'; path: string; sha256: string }>;
  /** The internal list and exemptions applied, who scrubbed for whom (src/compliance). */
  compliance?: ScrubCompliance | null;
  /** Validity windows and when the callable rows stop being valid, by country. */
  validity?: ValiditySummary;
  /**
   * Sends of this batch that got no answer (a run killed or stopped at once while they were in flight): each
   * may have been charged, and none is in credits_used (the output holds no answer of theirs). The same count
   * as `dnc usage --reconcile`'s unanswered_sends of the journal. Absent in manifests of older releases.
   */
  unanswered_sends?: number;
  /** The calling rules' version (src/calling) the batch's calling-window columns were computed under. */
  calling_rules_version?: string;
  /**
   * Where the journal's answer chain stood when this manifest was written (src/journal/chain.ts): anchored with the
   * manifest (its SHA-256, in the state folder and the team store), so a journal rewritten later, its chain recomputed,
   * no longer holds this head. Absent in manifests of older releases.
   */
  journal_chain?: { entries: number; head: string };
}

export function formatOf(meta: BatchMeta): OutputFormat {
  const workbook = outputFormatOf(meta.outputPath, meta.outputFormat) === 'xlsx';
  return {
    delimiter: meta.options.delimiter,
    record_delimiter: meta.layout.recordDelimiter,
    header: meta.layout.header !== null,
    bom: meta.layout.bom,
    input_columns: meta.layout.columnCount,
    phone_column: meta.options.phoneIndex + 1,
    ...(phoneColumnsOf(meta.options).length > 1
      ? { phone_columns: phoneColumnsOf(meta.options).map((i) => i + 1) }
      : {}),
    ...(meta.options.countryIndex !== null && meta.options.countryIndex !== undefined
      ? { country_column: meta.options.countryIndex + 1 }
      : {}),
    // A workbook's cells are typed: nothing is escaped in it.
    ...(meta.escapeFormulas && !workbook ? { escape_formulas: true, escape_formulas_behind_spaces: true } : {}),
    ...(workbook ? { workbook: true, service_text_unquoted: true } : {}),
    ...(meta.layout.workbook ? { input_workbook: meta.layout.workbook } : {}),
    ...(!workbook && (meta.outputEncoding ?? meta.layout.encoding ?? 'utf-8') !== 'utf-8'
      ? { encoding: meta.outputEncoding ?? meta.layout.encoding }
      : {}),
    ...(meta.layout.encoding && meta.layout.encoding !== 'utf-8' ? { input_encoding: meta.layout.encoding } : {}),
    ...(meta.layout.skipRecords ? { input_skip_records: meta.layout.skipRecords } : {}),
    dnc_columns: resultColumns(phoneColumnsOf(meta.options).length).length,
  };
}

/** Whether an output has the calling columns (dnc_time_zones, dnc_calling_window): outputs written before do not. */
export function hasCallingColumns(f: OutputFormat): boolean {
  const phones = (f.phone_columns ?? [f.phone_column]).length;
  return (
    f.dnc_columns === resultColumns(phones, true, false).length ||
    f.dnc_columns === resultColumns(phones, true, true).length
  );
}

/**
 * Whether an output of several phone columns has dnc_callable_numbers, and so rows under the row rule (rowResult):
 * outputs written before do not (their rows were `callable` when any number was).
 */
export function hasCallableNumbers(f: OutputFormat): boolean {
  const phones = (f.phone_columns ?? [f.phone_column]).length;
  return phones > 1 && f.dnc_columns === resultColumns(phones, true, true).length;
}

/** The layout that reads an output file with csv-input's reader. */
export function outputLayout(outputPath: string, f: OutputFormat, header: string[] | null = null): TableLayout {
  return {
    path: outputPath,
    delimiter: f.delimiter,
    recordDelimiter: f.record_delimiter,
    header: f.header ? (header ?? []) : null,
    columnCount: f.input_columns + (f.dnc_columns ?? 10),
    ...phoneColumnsOfOutput(f),
    bom: f.bom,
    ...(f.encoding ? { encoding: f.encoding } : {}),
    // dnc writes the rows on the first sheet, the header (if any) on row 1.
    ...(f.workbook ? { workbook: { sheet: 'Results', position: 1, headerRow: f.header ? 1 : 0 } } : {}),
  };
}

export interface WalkResult {
  sha256: string;
  bytes: number;
  tally: OutputTally;
}

/**
 * What a row's reader may answer walkOutput: the row repeats a row of its number already walked, with the same
 * checked_at (verify knows it, having compared their cells): the tally then counts the row alone, not its number
 * again (a lookup among every number, ≈ 0.5 µs, on each of a list's repeated rows).
 */
export const REPEATED_ROW = 'repeated_row';
export type RowAnswer = void | typeof REPEATED_ROW;

/** Streams an output file once: its hash, its tally, and each row (0-based index, all fields, the dnc_* cells). */
export async function walkOutput(
  outputPath: string,
  format: OutputFormat,
  onRow?: (index: number, fields: string[], cells: string[]) => RowAnswer | Promise<RowAnswer>,
  onHeader?: (fields: string[]) => void,
): Promise<WalkResult> {
  const hash = createHash('sha256');
  let bytes = 0;
  const tally = new TallyBuilder((format.phone_columns ?? [format.phone_column]).length, hasCallingColumns(format));
  let index = 0;
  // The header is read as a record (not skipped) so that it can be checked too.
  let header = format.header;
  const layout = outputLayout(outputPath, format);
  // The header is read as a row: a sheet is then read from its row 1.
  if (layout.workbook) layout.workbook = { ...layout.workbook, headerRow: 0 };
  for await (const batch of readRows(
    { ...layout, header: null },
    {
      onChunk: (c) => {
        hash.update(c);
        bytes += c.length;
      },
    },
  )) {
    for (const fields of batch) {
      if (header) {
        header = false;
        onHeader?.(fields);
        continue;
      }
      const cells = fields.slice(format.input_columns);
      // (Awaited only when it waits: an await for each of a million rows costs a second.)
      let answer = onRow?.(index, fields, cells);
      if (answer instanceof Promise) answer = await answer;
      tally.add(cells, answer === REPEATED_ROW);
      index++;
    }
  }
  return { sha256: hash.digest('hex'), bytes, tally: tally.done() };
}

export async function readManifest(file: string): Promise<Manifest | null> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return null;
  }
  try {
    const m = JSON.parse(text) as Manifest;
    if (m && typeof m === 'object' && m.manifest_version === MANIFEST_VERSION) return m;
  } catch {
    /* reported below */
  }
  throw inputError('E_MANIFEST_UNREADABLE', `${file} is not a dnc manifest (version ${MANIFEST_VERSION})`, {
    hint: 'rerun the batch (or `dnc listen`) to write it again; an edited manifest proves nothing',
  });
}

/** What a render wrote (its hashes and tally): the manifest of an output that cannot be read back is made from it. */
export interface RenderedOutputs {
  written: ReadonlyArray<{ path: string; sha256: string; bytes: number }>;
  tally: OutputTally | null;
  /** The compliance fields computed while the output was written (with the tally: nothing is read back). */
  compliance?: { compliance: ScrubCompliance | null; validity: ValiditySummary } | null;
  /** The calling rules' version the calling columns were computed under. */
  callingRulesVersion?: string;
}

export interface ManifestTimes {
  /** When this batch run started; kept from the manifest already there when absent (listen rewrites). */
  startedAt?: string;
  finishedAt?: string;
  /** The service's base URL (credentials stripped by the caller); kept from the manifest already there when absent. */
  baseUrl?: string;
  /** What the render wrote: used for outputs that are not regular files (standard output, a FIFO). */
  rendered?: RenderedOutputs;
  /** What src/compliance applied; kept from the manifest already there when absent (listen rewrites). */
  compliance?: ScrubCompliance | null;
  /** The journal's sends without an answer; kept from the manifest already there when absent (listen sends nothing). */
  unansweredSends?: number;
  /** The calling rules' version of the render (listen's rewrites); else the render's, else the manifest's. */
  callingRulesVersion?: string;
}

/**
 * Writes OUTPUT.manifest.json for the output the journal's batch renders, atomically (temp + rename),
 * from the output file as it is now. Returns the manifest and where it was written.
 */
export async function writeManifest(
  meta: BatchMeta,
  journalPath: string,
  now: Date,
  times: ManifestTimes = {},
): Promise<WrittenManifest> {
  const file = meta.manifestPath ?? manifestPathFor(meta.outputPath);
  const previous = await readManifest(file).catch(() => null);
  const format = formatOf(meta);
  const compliance = manifestCompliance(times.compliance ?? previous?.compliance);
  const rendered = times.rendered;
  const written = (p: string) => rendered?.written.find((w) => w.path === p);
  // What the render just wrote is described by what it wrote (its hash, its tally, in the same pass), file or
  // stream: reading it back would double the work after the last answer. Anything else (dnc listen's
  // rewrites) is read back.
  const renderedMain = written(meta.outputPath);
  const fromRender = renderedMain && rendered?.tally && (rendered.compliance || !isRegularFile(meta.outputPath));
  const walk: WalkResult = fromRender
    ? { sha256: renderedMain.sha256, bytes: renderedMain.bytes, tally: rendered.tally! }
    : await walkOutput(meta.outputPath, format, compliance.onRow);
  const lists: Manifest['lists'] = [];
  for (const [kind, list] of [
    ['callable', meta.callableOut],
    ['suppressed', meta.suppressedOut],
    ['review', meta.reviewOut],
    ['dial', meta.dialOut],
  ] as const) {
    if (!list) continue;
    const sha256 = (fromRender || !isRegularFile(list)) && written(list) ? written(list)!.sha256 : await hashFile(list);
    lists.push({ kind, path: list, sha256 });
  }
  const manifest: Manifest = {
    manifest_version: MANIFEST_VERSION,
    run_id: RUN_ID.test(previous?.run_id ?? '') ? previous!.run_id : runIdOf(meta, journalPath),
    dnc_version: VERSION,
    interface_version: SERVICE_INTERFACE_VERSION,
    service_base_url: times.baseUrl ?? previous?.service_base_url ?? meta.serviceOrigin,
    started_at: times.startedAt ?? previous?.started_at ?? meta.createdAt,
    finished_at: times.finishedAt ?? previous?.finished_at ?? null,
    updated_at: now.toISOString(),
    journal: journalPath,
    input: { path: meta.inputPath, sha256: meta.inputSha256, bytes: meta.inputSize },
    output: { path: meta.outputPath, sha256: walk.sha256, bytes: walk.bytes },
    format,
    lists,
    ...walk.tally,
    ...(fromRender && rendered?.compliance ? rendered.compliance : compliance.fields()),
    unanswered_sends: times.unansweredSends ?? previous?.unanswered_sends ?? 0,
  };
  const callingRulesVersion =
    times.callingRulesVersion ?? rendered?.callingRulesVersion ?? previous?.calling_rules_version;
  if (callingRulesVersion !== undefined) manifest.calling_rules_version = callingRulesVersion;
  const chain = await chainHeadOf(journalPath).catch(() => null);
  if (chain) manifest.journal_chain = chain;
  const text = `${JSON.stringify(manifest, null, 2)}\n`;
  try {
    // Evidence of what was paid for: on the disk, as the results are, before it is said to be written.
    await writeFileAtomic(file, text, PRIVATE_FILE_MODE, { durable: true });
  } catch (err) {
    throw inputError(
      'E_OUTPUT_UNWRITABLE',
      `cannot write ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      {
        hint: 'check that the output folder is writable',
        cause: err,
      },
    );
  }
  return { path: file, manifest, sha256: createHash('sha256').update(text).digest('hex') };
}

/**
 * A run's id: from what its journal recorded when the run began (when, where its journal is, which input), so a rerun
 * of the same journal keeps it even when the manifest was removed; not a secret, a key to find the run's anchors.
 */
export const RUN_ID = /^[0-9a-f]{32}$/;

export function runIdOf(meta: Pick<BatchMeta, 'createdAt' | 'inputSha256'>, journalPath: string): string {
  return createHash('sha256')
    .update(`dnc run\n${meta.createdAt}\n${journalPath}\n${meta.inputSha256}`)
    .digest('hex')
    .slice(0, 32);
}

/** A manifest as written: where, what it says, and the SHA-256 of its bytes (anchored in the state folder). */
export interface WrittenManifest {
  path: string;
  manifest: Manifest;
  sha256: string;
}

/**
 * Anchors what dnc just wrote (the output's and the manifest's SHA-256) in the state folder (src/evidence/anchors.ts),
 * best effort: false when the state folder cannot be written (verify then says the file is not anchored here).
 */
export async function anchorWritten(stateDir: string, written: WrittenManifest, now: Date): Promise<boolean> {
  try {
    const anchors = await Anchors.open(stateDir);
    try {
      const m = written.manifest;
      anchors.recordOutput({
        output: m.output.path,
        sha256: m.output.sha256,
        bytes: m.output.bytes,
        manifestSha256: written.sha256,
        journal: m.journal,
        writtenAt: now.toISOString(),
      });
    } finally {
      anchors.close();
    }
    return true;
  } catch {
    return false;
  }
}

/**
 * Rewrites the manifest after each render of OUTPUT.csv by `dnc listen` (so the output hash stays true):
 * one rewrite at a time, requests during a rewrite folded into one more. A rewrite reads the whole
 * output on the listener's thread (about 9 µs a row), so while pushes keep coming a rewrite waits
 * twice as long as the last one took: at most a third of the time goes to it, and the last one
 * always follows the last render.
 */
export function manifestRewriter(
  meta: BatchMeta,
  journalPath: string,
  now: () => Date,
  onError: (err: Error) => void,
  onWritten?: (written: WrittenManifest) => Promise<unknown>,
  times: Pick<ManifestTimes, 'callingRulesVersion'> = {},
) {
  let running: Promise<void> | null = null;
  let again = false;
  let lastMs = 0;
  const run = async (): Promise<void> => {
    const started = performance.now();
    await writeManifest(meta, journalPath, now(), times).then(
      (written) => onWritten?.(written),
      (err: unknown) => onError(err instanceof Error ? err : new Error(String(err))),
    );
    lastMs = performance.now() - started;
  };
  const loop = async () => {
    do {
      again = false;
      await run();
      if (again && lastMs > 50) await new Promise((resolve) => setTimeout(resolve, 2 * lastMs));
    } while (again);
    running = null;
  };
  return {
    request(): void {
      if (running) again = true;
      else running = loop();
    },
    /** Resolves once no rewrite is running or asked for. */
    async settled(): Promise<void> {
      while (running) await running;
    },
  };
}

/** The phone columns (0-based) and country column of the input an output was written from, as a layout has them. */
export function phoneColumnsOfOutput(
  f: OutputFormat,
): Pick<TableLayout, 'phoneIndexes' | 'phoneLabels' | 'countryIndex'> {
  const columns = f.phone_columns ?? [f.phone_column];
  return {
    phoneIndexes: columns.map((c) => c - 1),
    phoneLabels: columns.map((c) => `column ${c}`),
    countryIndex: f.country_column === undefined ? null : f.country_column - 1,
  };
}
