// Where rendered rows go: an output file written atomically, or a stream written through; one lane per output.
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { refuseLinkedOutput, syncFolder, tempPathFor } from '../atomic-file.js';
import path from 'node:path';
import { describeFsError, DncError, inputError } from '../errors.js';
import { CsvWriter } from '../tables/csv-output.js';
import type { BatchMeta } from '../journal/journal.js';
import type { ValidityRules } from '../compliance/validity.js';
import { isUtf16, textEncoder, type TextEncoding } from '../tables/encoding.js';
import type { DncResult } from './columns.js';
import type { TypedCell } from '../tables/xlsx-cells.js';
import { outputFormatOf } from '../tables/table-format.js';
import type { TableLayout } from '../tables/layout.js';
import { manifestPathFor } from './side-files.js';
import { VERSION } from '../version.js';

export function outputError(err: unknown, file: string) {
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
export abstract class OutputSink {
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
 * complete (then the folder is flushed too, so the rename survives a power loss). It holds numbers: it is private
 * to the user (0600, or narrower by the umask), also when it replaces a file another mode had let others read.
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
export async function openSink(target: string, stdout: Writable | undefined): Promise<OutputSink> {
  if (target === '-') {
    if (!stdout) throw new DncError('E_INTERNAL', 'render: the output is standard output, but no stream was given');
    return new StreamSink('standard output', stdout, false);
  }
  refuseLinkedOutput(target, 'the output');
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
export async function openLane(
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
  // A workbook input's column widths are kept (read from its sheet before its rows: the header goes out first).
  const inputWidths = layout.workbook
    ? await (await import('../tables/xlsx-input.js')).workbookColumnWidths(layout)
    : undefined;
  const book = await openWorkbookLane(sink, {
    ...(inputWidths ? { inputWidths } : {}),
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
    phones: layout.phoneIndexes.length,
    phoneIndexes: layout.phoneIndexes,
  });
  return {
    header: (fields) => book.header(fields),
    row: (input, typed, extra, result) => book.row(input, typed, extra, result),
    flush: () => book.flush(),
    finish: () => book.finish(),
  };
}
