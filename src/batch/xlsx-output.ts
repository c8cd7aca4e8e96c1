// Writes a batch output as an .xlsx workbook, streaming: the input's rows with their values and types, the dnc_*
// columns as text, rows coloured by result, and a Summary sheet. No cell is ever a formula.
import { Writable } from 'node:stream';
import { DAY_MS, parseServiceTime } from '../evidence/duration.js';
import type { TypedCell } from './xlsx-cells.js';

/** Where the workbook's bytes go (the render's output sink: atomic file, FIFO or standard output). */
export interface ByteSink {
  write(bytes: Buffer): Promise<void> | undefined;
}

/** What the Summary sheet says about where the results came from. */
export interface SummaryContext {
  input: string;
  inputSha256: string;
  manifest: string | null;
  writtenAt: Date;
  dncVersion: string;
}

export interface WorkbookOptions {
  /** A header row comes first (bold, frozen, with an autofilter). */
  header: boolean;
  /** The main results carry a Summary sheet; the lists do not. */
  summary: SummaryContext | null;
  /** Max age of a verdict per country (`dnc verify`'s defaults), for the validity window. */
  maxAgeDays: { byCountry: Readonly<Record<string, number>>; other: number };
}

/** The fills of Excel's own "Good", "Bad" and "Neutral" cell styles. */
const FILL_ARGB: Record<string, string> = { callable: 'FFC6EFCE', do_not_call: 'FFFFC7CE', other: 'FFFFEB9C' };
const fill = (argb: string) => ({ type: 'pattern', pattern: 'solid', fgColor: { argb }, bgColor: { argb } }) as const;
const FILLS = Object.fromEntries(Object.entries(FILL_ARGB).map(([k, v]) => [k, fill(v)]));

const RESULTS = ['callable', 'do_not_call', 'invalid', 'unsupported_country', 'pending', 'not_checked', 'failed'] as const;

/**
 * A string cell as inline text (`t="inlineStr"`): a text cell in every reader, never a formula and never a
 * number, so `+447…` keeps its `+` and `=…` stays text. (exceljs writes a plain string as a formula's result.)
 */
const text = (s: string) => (s === '' ? null : { richText: [{ text: s }] });

interface ExcelCell {
  value: unknown;
  numFmt: string;
  fill: unknown;
  font: unknown;
}
interface ExcelRowWriter {
  getCell(col: number): ExcelCell;
  commit(): void;
}
interface ExcelSheetWriter {
  addRow(values: unknown[]): ExcelRowWriter;
  autoFilter: unknown;
  commit(): void;
  columns: unknown;
}
interface ExcelBookWriter {
  addWorksheet(name: string, options?: unknown): ExcelSheetWriter;
  commit(): Promise<void>;
}

/** Adds up the rows for the Summary sheet as they are written. */
class SummaryTally {
  rows = 0;
  credits = 0;
  readonly byResult = new Map<string, number>(RESULTS.map((r) => [r, 0]));
  readonly byCountry = new Map<string, Map<string, number>>();
  oldest: [number, string] | null = null;
  newest: [number, string] | null = null;
  /** The moment the first callable row's verdict grows older than its country's max age. */
  validUntil: number | null = null;

  constructor(private readonly maxAge: WorkbookOptions['maxAgeDays']) {}

  add(cells: readonly string[]): void {
    const [, country = '', result = '', , , checkedAt = '', , , , credits = '0'] = cells;
    this.rows++;
    this.byResult.set(result, (this.byResult.get(result) ?? 0) + 1);
    let c = this.byCountry.get(country);
    if (!c) this.byCountry.set(country, (c = new Map()));
    c.set(result, (c.get(result) ?? 0) + 1);
    this.credits += Number.parseInt(credits, 10) || 0;
    const at = parseServiceTime(checkedAt);
    if (!Number.isFinite(at)) return;
    if (!this.oldest || at < this.oldest[0]) this.oldest = [at, checkedAt];
    if (!this.newest || at > this.newest[0]) this.newest = [at, checkedAt];
    if (result === 'callable') {
      const until = at + (this.maxAge.byCountry[country] ?? this.maxAge.other) * DAY_MS;
      if (this.validUntil === null || until < this.validUntil) this.validUntil = until;
    }
  }
}

/** One .xlsx output: rows are added as the render reads them; `finish` writes the Summary sheet and closes the zip. */
export class WorkbookLane {
  private readonly book: ExcelBookWriter;
  private readonly sheet: ExcelSheetWriter;
  private readonly tally: SummaryTally;
  private readonly done: Promise<void>;
  private failed: unknown;

  constructor(
    ExcelJS: { stream: { xlsx: { WorkbookWriter: new (o: unknown) => unknown } } },
    sink: ByteSink,
    private readonly options: WorkbookOptions,
  ) {
    const stream = new Writable({
      write: (chunk: Buffer, _enc, callback) => {
        try {
          const wait = sink.write(chunk);
          if (wait) wait.then(() => callback(), callback);
          else callback();
        } catch (err) {
          callback(err as Error);
        }
      },
    });
    stream.on('error', (err) => (this.failed ??= err));
    this.done = new Promise((resolve) => stream.on('finish', resolve));
    this.book = new ExcelJS.stream.xlsx.WorkbookWriter({ stream, useStyles: true, useSharedStrings: false }) as ExcelBookWriter;
    this.sheet = this.book.addWorksheet('Results', options.header ? { views: [{ state: 'frozen', ySplit: 1 }] } : {});
    this.tally = new SummaryTally(options.maxAgeDays);
  }

  /** The header row: every name as text, bold, frozen, with an autofilter over all columns. */
  header(fields: readonly string[]): void {
    this.sheet.autoFilter = { from: { row: 1, column: 1 }, to: { row: 1, column: Math.max(1, fields.length) } };
    const row = this.sheet.addRow(fields.map(text));
    for (let i = 1; i <= fields.length; i++) row.getCell(i).font = { bold: true };
    row.commit();
  }

  /**
   * A data row: the input's cells (typed when the input was a workbook, else text), then `extra` as text.
   * With `result` the row is filled by it: do_not_call red, callable green, anything else amber.
   */
  row(input: readonly string[], typed: readonly TypedCell[] | undefined, extra: readonly string[], result?: string): void {
    const values: unknown[] = [];
    for (let i = 0; i < input.length; i++) {
      const cell = typed?.[i];
      const v = cell ? cell.value : input[i]!;
      values.push(typeof v === 'string' ? text(v) : v);
    }
    for (const e of extra) values.push(text(e));
    const row = this.sheet.addRow(values);
    if (typed) {
      for (let i = 0; i < typed.length; i++) {
        const f = typed[i]?.numFmt;
        if (f && typeof typed[i]!.value !== 'string') row.getCell(i + 1).numFmt = f;
      }
    }
    if (result !== undefined) {
      const paint = FILLS[result === 'callable' || result === 'do_not_call' ? result : 'other'];
      for (let i = 1; i <= values.length; i++) row.getCell(i).fill = paint;
    }
    row.commit();
    if (this.options.summary && extra.length >= 10) this.tally.add(extra);
  }

  /** Closes the results sheet, writes the Summary sheet, and finishes the zip (the sink then commits the file). */
  async finish(): Promise<void> {
    this.sheet.commit();
    if (this.options.summary) this.writeSummary(this.options.summary);
    await this.book.commit();
    await this.done;
    if (this.failed) throw this.failed;
  }

  private writeSummary(ctx: SummaryContext): void {
    const s = this.book.addWorksheet('Summary');
    const t = this.tally;
    const add = (cells: unknown[], bold = false) => {
      const row = s.addRow(cells.map((c) => (typeof c === 'string' ? text(c) : c)));
      if (bold) for (let i = 1; i <= cells.length; i++) row.getCell(i).font = { bold: true };
      row.commit();
    };
    const iso = (ms: number | null) => (ms === null ? '' : new Date(ms).toISOString().replace('.000Z', 'Z'));
    const days = this.options.maxAgeDays;
    add(['dnc batch results'], true);
    add(['input', ctx.input]);
    add(['input SHA-256', ctx.inputSha256]);
    add(['manifest (holds this workbook\'s SHA-256)', ctx.manifest ?? '']);
    add(['written at', iso(ctx.writtenAt.getTime())]);
    add(['dnc version', ctx.dncVersion]);
    add(['rows', t.rows]);
    add(['credits used', t.credits]);
    add(['oldest checked_at', t.oldest?.[1] ?? '']);
    add(['newest checked_at', t.newest?.[1] ?? '']);
    add([
      'validity window',
      `a verdict is valid ${Object.entries(days.byCountry).map(([c, d]) => `${d} days for ${c}`).join(', ')}${Object.keys(days.byCountry).length ? ', ' : ''}${days.other} days elsewhere, from its checked_at`,
    ]);
    add(['callable rows valid until', iso(t.validUntil)]);
    add([]);
    add(['result', 'rows'], true);
    for (const r of RESULTS) add([r, t.byResult.get(r) ?? 0]);
    add([]);
    add(['country', ...RESULTS, 'total'], true);
    const countries = [...t.byCountry.keys()].sort((a, b) => (a === '' ? 1 : b === '' ? -1 : a.localeCompare(b)));
    for (const c of countries) {
      const m = t.byCountry.get(c)!;
      add([c === '' ? '(no number)' : c, ...RESULTS.map((r) => m.get(r) ?? 0), [...m.values()].reduce((a, b) => a + b, 0)]);
    }
    s.commit();
  }
}

/** Opens a workbook output over `sink` (loads the workbook library: only a workbook pays for it). */
export async function openWorkbookLane(sink: ByteSink, options: WorkbookOptions): Promise<WorkbookLane> {
  const { default: ExcelJS } = await import('exceljs');
  return new WorkbookLane(ExcelJS as never, sink, options);
}
