// Renders a batch's output files from its input and its journal: every row, in order, plus the dnc_* columns.
import { createHash } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import { readdir, rename, rm, stat } from 'node:fs/promises';
import { tempPathFor } from '../atomic-file.js';
import path from 'node:path';
import { inputError } from '../errors.js';
import { readRows, type CsvLayout } from './csv-input.js';
import type { BatchJournal, BatchMeta, NumberVerdict, StoppedReason } from './journal.js';
import { PhoneCache } from './phone-cache.js';
import { withExemption } from '../compliance/batch-compliance.js';

/** The columns appended to every row, in order (cli.md). */
export const DNC_COLUMNS = [
  'dnc_phone_e164',
  'dnc_country',
  'dnc_result',
  'dnc_do_not_call',
  'dnc_list_source',
  'dnc_checked_at',
  'dnc_correlation_id',
  'dnc_error_code',
  'dnc_error',
  'dnc_credits',
  'dnc_exemption',
] as const;

export const DNC_RESULTS = ['callable', 'do_not_call', 'invalid', 'unsupported_country', 'pending', 'not_checked', 'failed'] as const;
export type DncResult = (typeof DNC_RESULTS)[number];

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
}

export function emptyResultCounts(): Record<DncResult, number> {
  return Object.fromEntries(DNC_RESULTS.map((r) => [r, 0])) as Record<DncResult, number>;
}

const NOT_CHECKED_TEXT: Record<StoppedReason, string> = {
  credit_limit: 'not checked: the credit limit was reached (429); run the same command again after a top-up or in the next billing period',
  budget_reached: 'not checked: the --max-credits budget was reached; run the same command again with a larger budget',
  interrupted: 'not checked: the batch was interrupted; run the same command again to resume',
  service_failure: 'not checked: the batch stopped when the service failed or refused the key; fix the cause and run the same command again to resume',
};

/** The dnc_* cells of a number the journal knows. */
function cellsFor(e164: string, country: string, row: NumberVerdict | undefined, stopped: StoppedReason | null, firstRow: boolean): string[] {
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
      row.list_source ?? '',
      row.checked_at ?? '',
      row.correlation_id ?? '',
      row.error_code ?? '',
      row.error ?? '',
      credits,
    ];
  }
  if (row.state === 'pending') {
    return [e164, country, 'pending', '', '', '', row.correlation_id ?? '', '', 'webhook result not received yet; run `dnc listen`', credits];
  }
  const reason = stopped ?? 'interrupted';
  return [e164, country, 'not_checked', '', '', '', '', reason, NOT_CHECKED_TEXT[reason], '0'];
}

/** The CSV layout a journal's input was read with. */
export function layoutOf(meta: BatchMeta): CsvLayout {
  return {
    path: meta.inputPath,
    delimiter: meta.options.delimiter,
    recordDelimiter: meta.layout.recordDelimiter,
    header: meta.layout.header,
    columnCount: meta.layout.columnCount,
    phoneIndex: meta.options.phoneIndex,
    phoneLabel: meta.layout.phoneLabel,
    bom: meta.layout.bom,
  };
}

function outputError(err: unknown, file: string) {
  const code = (err as NodeJS.ErrnoException).code;
  return inputError('E_OUTPUT_UNWRITABLE', `cannot write ${file}: ${code ?? (err as Error).message}`, {
    hint: 'check that the output folder exists and is writable',
    cause: err,
  });
}

// A render takes seconds; a temporary file this old was left by a process killed while rendering.
const STALE_TEMP_MS = 10 * 60_000;

/** Removes temporary files of `target` that a killed render left behind (never one a live render is writing). */
async function removeStaleTemps(target: string, now: number): Promise<void> {
  const dir = path.dirname(target);
  const prefix = `.${path.basename(target)}.`;
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.startsWith(prefix) || !/^[0-9a-f]{8}\.tmp$/.test(name.slice(prefix.length))) continue;
    const file = path.join(dir, name);
    try {
      if (now - (await stat(file)).mtimeMs > STALE_TEMP_MS) await rm(file, { force: true });
    } catch {
      // Gone already, or not ours to remove: either way nothing to do.
    }
  }
}

/** A file written beside its final path and renamed into place only when complete. */
class AtomicCsv {
  readonly tmp: string;
  private readonly stream: WriteStream;
  private failed: unknown;
  constructor(readonly target: string) {
    this.tmp = tempPathFor(target);
    this.stream = createWriteStream(this.tmp, { flags: 'wx' });
    this.stream.on('error', (err) => {
      this.failed = err;
    });
  }
  /** Writes text; resolves when the stream can take more (backpressure). */
  write(text: string): Promise<void> | undefined {
    if (this.failed) throw outputError(this.failed, this.target);
    if (this.stream.write(text)) return undefined;
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
  async commit(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.stream.once('error', reject);
      this.stream.end(resolve);
    });
    if (this.failed) throw this.failed;
    await rename(this.tmp, this.target);
  }
  async abort(): Promise<void> {
    this.stream.destroy();
    await rm(this.tmp, { force: true });
  }
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
}

export async function renderBatchOutput(journal: BatchJournal, options: RenderOptions = {}): Promise<RenderSummary> {
  journal.checkpoint();
  // Every row from one state of the journal: pushes committed meanwhile (dnc listen) wait for the next render,
  // so two rows of one number never disagree.
  return journal.snapshot(() => renderSnapshot(journal, options));
}

async function renderSnapshot(journal: BatchJournal, options: RenderOptions): Promise<RenderSummary> {
  const meta = journal.meta();
  if (!meta) throw inputError('E_JOURNAL_EMPTY', `the journal ${journal.path} holds no batch`, { hint: 'run `dnc batch` again with --restart' });
  const layout = layoutOf(meta);
  const stopped = journal.stoppedReason();
  const { stringify } = await import('csv-stringify/sync');
  const csvOptions = { delimiter: layout.delimiter, record_delimiter: layout.recordDelimiter === '\r\n' ? ('windows' as const) : ('unix' as const) };

  const files: AtomicCsv[] = [];
  const open = (target: string) => {
    try {
      const f = new AtomicCsv(target);
      files.push(f);
      return f;
    } catch (err) {
      throw outputError(err, target);
    }
  };
  for (const target of [meta.outputPath, meta.callableOut, meta.suppressedOut]) if (target) await removeStaleTemps(target, (options.now ?? Date.now)());
  const main = open(meta.outputPath);
  const callable = meta.callableOut ? open(meta.callableOut) : null;
  const suppressed = meta.suppressedOut ? open(meta.suppressedOut) : null;

  const summary: RenderSummary = {
    input: meta.inputPath,
    output: meta.outputPath,
    callableOut: meta.callableOut,
    suppressedOut: meta.suppressedOut,
    rows: 0,
    byResult: emptyResultCounts(),
    byCountry: new Map(),
  };
  const hash = createHash('sha256');
  const country = meta.options.country ?? undefined;
  const phones = options.phones && options.phones.defaultCountry === country ? options.phones : new PhoneCache(country);
  try {
    // An input with a byte-order mark (Excel's "CSV UTF-8") gets one back, so Excel reads the results as UTF-8 too.
    if (layout.bom) for (const f of files) await f.write('\uFEFF');
    if (layout.header) {
      await main.write(stringify([[...layout.header, ...DNC_COLUMNS]], csvOptions));
      await callable?.write(stringify([layout.header], csvOptions));
      await suppressed?.write(stringify([layout.header], csvOptions));
    }
    // Journal ids are given in order of first appearance, so a row whose number's id is above every id seen
    // so far is that number's first row: no set of seen numbers needs to be kept.
    let highestId = 0;
    for await (const batch of readRows(layout, { onChunk: (c) => hash.update(c) })) {
      const out: string[][] = [];
      const callableRows: string[][] = [];
      const suppressedRows: string[][] = [];
      for (const fields of batch) {
        const cell = phones.normalise(fields[layout.phoneIndex] ?? '');
        let cells: string[];
        if (!cell.ok) {
          cells = ['', cell.country, 'invalid', '', '', '', '', 'unparseable_number', cell.message, '0', ''];
        } else {
          const verdict = journal.verdict(cell.e164);
          const firstRow = verdict !== undefined && verdict.id > highestId;
          if (firstRow) highestId = verdict.id;
          cells = withExemption(cellsFor(cell.e164, cell.country, verdict, stopped, firstRow), verdict);
        }
        const result = cells[2] as DncResult;
        summary.rows++;
        summary.byResult[result]++;
        let perCountry = summary.byCountry.get(cells[1]!);
        if (!perCountry) summary.byCountry.set(cells[1]!, (perCountry = emptyResultCounts()));
        perCountry[result]++;
        out.push(fields.concat(cells));
        if (result === 'callable') callableRows.push(fields);
        else if (result === 'do_not_call') suppressedRows.push(fields);
      }
      await main.write(stringify(out, csvOptions));
      if (callable && callableRows.length) await callable.write(stringify(callableRows, csvOptions));
      if (suppressed && suppressedRows.length) await suppressed.write(stringify(suppressedRows, csvOptions));
    }
    if (hash.digest('hex') !== meta.inputSha256) {
      throw inputError('E_INPUT_CHANGED', `${meta.inputPath} has changed since this batch began (its SHA-256 differs)`, {
        hint: 'put the original file back, or start over with --restart',
      });
    }
    for (const f of files) {
      try {
        await f.commit();
      } catch (err) {
        throw outputError(err, f.target);
      }
    }
  } catch (err) {
    await Promise.all(files.map((f) => f.abort()));
    throw err;
  }
  return summary;
}
