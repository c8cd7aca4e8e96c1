// The one CSV writer of dnc's outputs (results, the lists written beside them, the internal list's exports) and the
// one formula escaper: RFC 4180 quoting, whatever the record delimiter; no cell a spreadsheet would run.
import type { OutputFileFormat } from './table-format.js';

/** Line endings a results file may use: the input's own. */
export type RecordDelimiter = '\r\n' | '\n' | '\r';

/** Characters that make a spreadsheet read a cell as a formula (OWASP "CSV Injection"). */
const FORMULA_LEAD = /^[=+\-@\t\r]/;
// C0 and C1 control characters and DEL: never part of a register URL, an error text or an id.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]+/g;

function escapeForClass(c: string): string {
  return c.replace(/[\\\]^-]/g, '\\$&');
}

/**
 * Writes records as text. A field is quoted when it holds the delimiter, a quote, CR or LF (any of
 * them, not only the record delimiter: a bare LF in a CRLF file split rows for every other reader),
 * and a record of one empty field is written `""` so that no reader takes it for a blank line.
 */
export class CsvWriter {
  private readonly needsQuotes: RegExp;
  constructor(
    readonly delimiter: string,
    readonly recordDelimiter: RecordDelimiter,
  ) {
    this.needsQuotes = new RegExp(`[${escapeForClass(delimiter)}"\\r\\n]`);
  }

  field(value: string): string {
    return this.needsQuotes.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
  }

  record(fields: readonly string[]): string {
    if (fields.length === 1 && fields[0] === '') return `""${this.recordDelimiter}`;
    let line = '';
    for (let i = 0; i < fields.length; i++) {
      if (i > 0) line += this.delimiter;
      line += this.field(fields[i]!);
    }
    return line + this.recordDelimiter;
  }

  records(rows: readonly (readonly string[])[]): string {
    let text = '';
    for (const row of rows) text += this.record(row);
    return text;
  }
}

// A formula behind spaces: an import that trims cells (LibreOffice's "Trim spaces") would find the formula.
// Control characters become spaces first, so "\t@x" from a service is one of these.
const FORMULA_AFTER_SPACES = /^\s+[=+\-@]/;
// Control characters an exported list drops: all but the tab and line breaks a CSV field may hold.
// eslint-disable-next-line no-control-regex
const DROPPED = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g;
const E164 = /^\+\d+$/;

/** How a cell is made safe for a spreadsheet (one rule, with the choices its kinds of text need). */
export interface CellEscaping {
  /** Control characters: kept (input cells are the user's), made one space (service text) or dropped (lists). */
  controls?: 'keep' | 'space' | 'drop';
  /**
   * A formula behind spaces is escaped too (false: as files written before that rule, which verify reads as written).
   */
  behindSpaces?: boolean;
  /** An E.164 number (`+` then digits) is data, left as it is: an exported list imports again as it was. */
  e164IsData?: boolean;
}

/** A cell with a formula-leading character (at the start, or after spaces) neutralised by a leading `'`. */
export function formulaSafeCell(value: string, o: CellEscaping = {}): string {
  const v =
    o.controls === 'space' ? value.replace(CONTROL, ' ') : o.controls === 'drop' ? value.replace(DROPPED, '') : value;
  if (o.e164IsData && E164.test(v)) return v;
  return FORMULA_LEAD.test(v) || (o.behindSpaces !== false && FORMULA_AFTER_SPACES.test(v)) ? `'${v}` : v;
}

/**
 * Text that came from the service or a push, made safe for a results cell of `format`: control characters become one
 * space, and in a CSV file a formula is neutralised by a leading `'` (what spreadsheets themselves use to mark text).
 * A workbook's cell is a text cell, which no spreadsheet runs: a `'` there would only show, so none is put. The
 * journal keeps the text as received; only the cell is changed.
 */
export function serviceTextCell(value: string | null | undefined, format: OutputFileFormat): string {
  if (!value) return '';
  return format === 'csv' ? formulaSafeCell(value, { controls: 'space' }) : value.replace(CONTROL, ' ');
}

/** An input cell for a file bound for a spreadsheet (--escape-formulas): formula-leading text gets a leading `'`. */
export function escapeFormulaCell(value: string, behindSpaces = true): string {
  return formulaSafeCell(value, { behindSpaces });
}

/** A cell of an exported list (suppressions, exemptions): controls dropped, E.164 numbers left as they are. */
export function listCell(value: string | null | undefined): string {
  return formulaSafeCell(value ?? '', { controls: 'drop', e164IsData: true });
}

/** CSV text of a list (header first, LF line ends), every cell made safe for a spreadsheet. */
export function listCsv(header: readonly string[], rows: ReadonlyArray<ReadonlyArray<string | null>>): string {
  const writer = new CsvWriter(',', '\n');
  return writer.records([header.map(listCell), ...rows.map((r) => r.map(listCell))]);
}

/** Whether a register source is what the interface promises: an https URL. */
// A batch's rows share a few register sources (one per country): each is parsed once, not once per row.
const httpsSeen = new Map<string, boolean>();

export function isHttpsUrl(value: string): boolean {
  if (!value.startsWith('https://')) return false;
  const known = httpsSeen.get(value);
  if (known !== undefined) return known;
  let https: boolean;
  try {
    https = new URL(value).protocol === 'https:';
  } catch {
    https = false;
  }
  if (httpsSeen.size >= 1024) httpsSeen.clear();
  httpsSeen.set(value, https);
  return https;
}
