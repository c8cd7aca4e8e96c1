// Writes a batch output as an .xlsx workbook, streaming: the input's rows with their values and types, the dnc_*
// columns as text, rows coloured by result (each phone cell by its own number's), and a Summary sheet. No cell is ever
// a formula.
import { parseServiceTime } from '../time.js';
import type { CellValue, TypedCell } from '../tables/xlsx-cells.js';
import { type ByteSink, type CellStyle, type SheetWriter, WorkbookWriter } from '../tables/xlsx-writer.js';
import { fastValidE164 } from '../phone/fast-e164.js';
import { C, DNC_COLUMN_COUNT, DNC_RESULTS } from './columns.js';
import { P, phoneCellsAt } from './row-cells.js';

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
  /** The scrub's validity windows in days, by country and for the rest (as the manifest records them). */
  maxAgeDays: { byCountry: Readonly<Record<string, number>>; other: number };
  /** The list's phone columns: with several, the countries are counted by number (each its own). */
  phones?: number;
  /**
   * Where the phone columns are among the input's (0-based, in --column order): with several, each phone cell and
   * its number's dnc_N_* cells are filled by that number's own result, not the row's.
   */
  phoneIndexes?: readonly number[];
  /** The input sheet's column widths (a workbook input's), kept in the results; undefined where it sets none. */
  inputWidths?: ReadonlyArray<number | undefined>;
}

/**
 * The widths of dnc's columns, in characters: what their values take (an E.164 number, a timestamp, a correlation id,
 * a register's URL), so that no cell shows `###` or is cut. Columns not named here take their header's width.
 */
const DNC_WIDTHS: Readonly<Record<string, number>> = {
  e164: 16,
  result: 14,
  list_source: 40,
  checked_at: 22,
  correlation_id: 38,
  error_code: 22,
  error: 60,
  valid_until: 22,
  callable_numbers: 32,
  time_zones: 22,
  calling_window: 36,
};

/** A column's width: the input's own, else what dnc's values take, else its header's (10 to 40 characters). */
function columnWidth(name: string, inputWidth: number | undefined, phone: boolean): number {
  if (inputWidth !== undefined) return inputWidth;
  const own = /^dnc_(?:\d+_)?(.+)$/.exec(name)?.[1];
  const known = own === undefined ? undefined : (DNC_WIDTHS[own] ?? (own === 'phone_e164' ? 16 : undefined));
  // A phone column's numbers are 12 to 15 digits: in a narrower column a number cell shows ###.
  const least = phone ? 16 : 10;
  return known ?? Math.min(40, Math.max(least, name.length + 2));
}

/** The fills of Excel's own "Good", "Bad" and "Neutral" cell styles. */
const FILL_ARGB: Record<string, string> = { callable: 'FFC6EFCE', do_not_call: 'FFFFC7CE', other: 'FFFFEB9C' };

/** Adds up the rows for the Summary sheet as they are written. */
class SummaryTally {
  rows = 0;
  credits = 0;
  readonly byResult = new Map<string, number>(DNC_RESULTS.map((r) => [r, 0]));
  readonly byCountry = new Map<string, Map<string, number>>();
  oldest: [number, string] | null = null;
  newest: [number, string] | null = null;
  /** The earliest dnc_valid_until of a callable row: the rows' own values, so the sheet cannot say otherwise. */
  validUntil: number | null = null;

  constructor(private readonly phones = 1) {}

  add(cells: readonly string[]): void {
    const [, country = '', result = '', , , checkedAt = '', , , , credits = '0', , validUntil = ''] = cells;
    this.rows++;
    this.byResult.set(result, (this.byResult.get(result) ?? 0) + 1);
    const count = (own: string, outcome: string) => {
      let c = this.byCountry.get(own);
      if (!c) this.byCountry.set(own, (c = new Map()));
      c.set(outcome, (c.get(outcome) ?? 0) + 1);
    };
    if (this.phones === 1) count(country, result);
    // Each phone cell that holds a number, by its own country and result (an empty cell is no number).
    for (let k = 0; this.phones > 1 && k < this.phones; k++) {
      const at = phoneCellsAt(k, true);
      if (cells[at + P.errorCode] === 'missing_number') continue;
      count(fastValidE164(cells[at + P.e164] ?? '')?.country ?? '', cells[at + P.result] ?? '');
    }
    this.credits += Number.parseInt(credits, 10) || 0;
    const at = parseServiceTime(checkedAt);
    if (!Number.isFinite(at)) return;
    if (!this.oldest || at < this.oldest[0]) this.oldest = [at, checkedAt];
    if (!this.newest || at > this.newest[0]) this.newest = [at, checkedAt];
    const until = Date.parse(validUntil);
    if (result === 'callable' && Number.isFinite(until) && (this.validUntil === null || until < this.validUntil))
      this.validUntil = until;
  }
}

/** One .xlsx output: rows are added as the render reads them; `finish` writes the Summary sheet and closes the zip. */
export class WorkbookLane {
  private readonly book: WorkbookWriter;
  private sheet: SheetWriter | null = null;
  private readonly tally: SummaryTally;

  constructor(
    sink: ByteSink,
    private readonly options: WorkbookOptions,
  ) {
    this.book = new WorkbookWriter(sink);
    this.tally = new SummaryTally(options.phones);
  }

  private async results(filterWidth: number | null, widths?: number[]): Promise<SheetWriter> {
    this.sheet ??= await this.book.sheet('Results', {
      frozenHeader: this.options.header,
      filterWidth,
      widths: widths ?? this.options.inputWidths ?? [],
      print: true,
    });
    return this.sheet;
  }

  /** Where dnc_credits is among the columns, written as a number (a spreadsheet's SUM of text is 0). */
  private creditsAt: number | undefined;

  /**
   * The header row: every name as text, bold, frozen, with an autofilter over all columns; the input's columns as
   * wide as in the input, dnc's as their values need.
   */
  async header(fields: readonly string[]): Promise<void> {
    const phones = new Set(this.options.phoneIndexes ?? []);
    const widths = fields.map((name, i) => columnWidth(name, this.options.inputWidths?.[i], phones.has(i)));
    const credits = fields.indexOf('dnc_credits');
    if (credits >= 0) this.creditsAt = credits;
    const sheet = await this.results(Math.max(1, fields.length), widths);
    sheet.row(fields, () => BOLD);
  }

  /**
   * A data row: the input's cells (typed when the input was a workbook, else text), then `extra` as text.
   * With `result` the row is filled by it: do_not_call red, callable green, anything else amber.
   */
  row(
    input: readonly string[],
    typed: readonly TypedCell[] | undefined,
    extra: readonly string[],
    result?: string,
  ): void {
    // header() made the sheet (or flush() will, for a file without a header: rows wait in `early` until then).
    const values: CellValue[] = [];
    for (let i = 0; i < input.length; i++) values.push(typed?.[i] ? typed[i]!.value : input[i]!);
    for (const e of extra) values.push(e);
    // Without a header dnc_credits is found by its place among the contract's columns.
    const credits =
      this.creditsAt ?? (!this.options.header && extra.length >= DNC_COLUMN_COUNT ? input.length + C.credits : -1);
    if (credits >= 0 && typeof values[credits] === 'string' && /^\d+$/.test(values[credits] as string))
      values[credits] = Number(values[credits]);
    const fill = fillOf(result);
    const plain = this.look(fill, undefined);
    const own = result === undefined ? null : this.numberFills(input.length, extra);
    const style = (col: number): CellStyle => {
      const f = own?.has(col) ? own.get(col) : fill;
      const t = col < input.length ? typed?.[col] : undefined;
      // Text keeps its format too: `_(@_)` pads it as accounting does, `"Tel: "@` adds to it.
      if (t && t.numFmt) return this.look(f, t.numFmt);
      return f === fill ? plain : this.look(f, undefined);
    };
    if (this.sheet) this.sheet.row(values, style);
    else this.early.push([values, style]);
    if (this.options.summary && extra.length >= 10) this.tally.add(extra);
  }

  /**
   * With several phone columns, the fill of each phone cell and of its number's dnc_N_* cells: its own number's
   * result (a do-not-call number is red in a row that may be called on another), none for an empty cell.
   */
  private numberFills(width: number, extra: readonly string[]): Map<number, string | undefined> | null {
    const phones = this.options.phoneIndexes;
    if (!phones || phones.length < 2 || extra.length < phoneCellsAt(phones.length, true)) return null;
    const fills = new Map<number, string | undefined>();
    phones.forEach((column, k) => {
      const at = phoneCellsAt(k, true);
      const f = extra[at + P.errorCode] === 'missing_number' ? undefined : fillOf(extra[at + P.result]);
      fills.set(column, f);
      for (let c = 0; c < P.window + 1; c++) fills.set(width + at + c, f);
    });
    return fills;
  }

  private early: Array<[CellValue[], (col: number) => CellStyle]> = [];
  /** One style object per look (fill and number format), so the writer finds each by identity. */
  private readonly looks = new Map<string, CellStyle>();
  private look(fill: string | undefined, numFmt: string | undefined): CellStyle {
    const key = `${fill ?? ''}\u0000${numFmt ?? ''}`;
    let style = this.looks.get(key);
    if (!style) this.looks.set(key, (style = { fill, numFmt }));
    return style;
  }

  async flush(): Promise<void> {
    if (!this.sheet) {
      const sheet = await this.results(null);
      for (const [values, style] of this.early.splice(0)) sheet.row(values, style);
    }
    await this.sheet!.flush();
  }

  /** Closes the results sheet, writes the Summary sheet, and finishes the zip (the sink then commits the file). */
  async finish(): Promise<void> {
    await this.flush();
    await this.sheet!.close();
    if (this.options.summary) await this.writeSummary(this.options.summary);
    await this.book.finish();
  }

  private async writeSummary(ctx: SummaryContext): Promise<void> {
    const s = await this.book.sheet('Summary');
    const t = this.tally;
    const add = (cells: CellValue[], bold = false) => s.row(cells, () => (bold ? BOLD : PLAIN));
    const iso = (ms: number | null) => (ms === null ? '' : new Date(ms).toISOString().replace('.000Z', 'Z'));
    const days = this.options.maxAgeDays;
    add(['dnc batch results'], true);
    add(['input', ctx.input]);
    add(['input SHA-256', ctx.inputSha256]);
    add(["manifest (holds this workbook's SHA-256)", ctx.manifest ?? '']);
    add(['written at', iso(ctx.writtenAt.getTime())]);
    add(['dnc version', ctx.dncVersion]);
    add(['rows', t.rows]);
    add(['credits used', t.credits]);
    add(['oldest checked_at', t.oldest?.[1] ?? '']);
    add(['newest checked_at', t.newest?.[1] ?? '']);
    add([
      'validity window',
      `a verdict is valid ${[...Object.entries(days.byCountry).map(([c, d]) => `${d} days for ${c}`), ''].join(', ')}` +
        `${days.other} days elsewhere, from its checked_at (an exemption that ends sooner ends it: dnc_valid_until)`,
    ]);
    add(['callable rows valid until', iso(t.validUntil)]);
    add([]);
    add(['result', 'rows'], true);
    for (const r of DNC_RESULTS) add([r, t.byResult.get(r) ?? 0]);
    add([]);
    add([(this.options.phones ?? 1) > 1 ? 'country (numbers)' : 'country', ...DNC_RESULTS, 'total'], true);
    const countries = [...t.byCountry.keys()].sort((a, b) => (a === '' ? 1 : b === '' ? -1 : a.localeCompare(b)));
    for (const c of countries) {
      const m = t.byCountry.get(c)!;
      add([
        c === '' ? '(unreadable)' : c,
        ...DNC_RESULTS.map((r) => m.get(r) ?? 0),
        [...m.values()].reduce((a, b) => a + b, 0),
      ]);
    }
    await s.close();
  }
}

/** The fill of a result: do_not_call red, callable green, anything else amber; none without one. */
function fillOf(result: string | undefined): string | undefined {
  if (result === undefined) return undefined;
  return FILL_ARGB[result === 'callable' || result === 'do_not_call' ? result : 'other'];
}

const BOLD: CellStyle = { bold: true };
const PLAIN: CellStyle = {};

/** Opens a workbook output over `sink`. */
export async function openWorkbookLane(sink: ByteSink, options: WorkbookOptions): Promise<WorkbookLane> {
  return new WorkbookLane(sink, options);
}
