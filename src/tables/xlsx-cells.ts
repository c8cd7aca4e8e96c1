// What a workbook cell says, as text: what Excel shows in it (its number format applied by numfmt), never another.
import type * as Numfmt from 'numfmt';
import { excelFormat } from './excel-format.js';
import { internalError } from '../errors.js';

let numfmt: typeof Numfmt | undefined;

/**
 * Loads numfmt, once: 40 ms and 13 MB, paid only by a workbook whose styles format numbers (the reader calls this
 * before it reads such a sheet). Every function below that is given a number format needs it loaded.
 */
export async function loadNumberFormats(): Promise<void> {
  numfmt ??= await import('numfmt');
}

/** Whether numfmt is loaded (General shows a fraction with it: a sheet of General cells loads it at its first one). */
export function numberFormatsLoaded(): boolean {
  return numfmt !== undefined;
}

function formatter(): typeof Numfmt {
  if (!numfmt) throw internalError('number formats are used before loadNumberFormats() was awaited');
  return numfmt;
}

/** A cell value as the workbook reader gives it, reduced to what dnc keeps: a value of one of Excel's own types. */
export type CellValue = string | number | boolean | Date | { error: string } | null;

/** One input cell: its value (a formula's cached result, never the formula) and its number format. */
export interface TypedCell {
  value: CellValue;
  numFmt?: string | undefined;
  /**
   * Set (to the cell's reference, `B2`) when the cell is a formula without a usable cached value: none saved
   * (openpyxl), or the placeholder `0` of a workbook never calculated (XlsxWriter). Its value is then null: dnc never
   * evaluates.
   */
  formula?: string | undefined;
}

/**
 * Numbers at or above this have lost digits: Excel keeps 15 significant digits, so the 16th and later
 * of a long number typed or imported into a numeric cell are zeros, and the number is another one.
 */
const FIFTEEN_DIGITS = 1e15;

/** The serial numbers Excel shows as dates (1900-01-00 to 9999-12-31); outside them it shows ####, not a date. */
const LAST_SERIAL_DATE = 2_958_466;

/** How a format shows a number, decided once per format (a sheet has few formats and many cells). */
type FormatKind =
  /** General: integers in full, others as Excel's General shows them. */
  | 'general'
  /** A calendar date, with or without a time of day: shown as its ISO date (dnc's rule, docs/excel.md). */
  | 'date'
  /** A scientific format: what Excel shows, which is a damaged phone number (refused as excel_damaged_number). */
  | 'scientific'
  /** A time of day or a duration: as Excel shows it (a locale tag names its AM/PM words). */
  | 'time'
  /** Anything else (digits, percent, fractions, currency, sections, conditions): as Excel shows it. */
  | 'excel'
  /** A format numfmt cannot read: shown as General rather than lost. */
  | 'invalid';

/** A format's kind, and the pattern numfmt is given for it. */
interface Format {
  kind: FormatKind;
  pattern: string;
}

const formats = new Map<string, Format>();
const GENERAL: Format = { kind: 'general', pattern: 'General' };

function formatOf(numFmt: string | undefined): Format {
  if (numFmt === undefined || numFmt === '') return GENERAL;
  let f = formats.get(numFmt);
  if (f === undefined) {
    const kind = classify(numFmt);
    f = { kind, pattern: kind === 'excel' ? withoutLocale(numFmt) : numFmt };
    // Formats come from the file: a hostile one with millions of distinct formats must not grow this without end.
    if (formats.size > 4096) formats.clear();
    formats.set(numFmt, f);
  }
  return f;
}

function kindOf(numFmt: string | undefined): FormatKind {
  return formatOf(numFmt).kind;
}

/**
 * A number format without the locale of its currency tags (`[$€-407]` is `[$€]`): Excel takes the decimal and
 * group separators from the system, whatever the tag says (numfmt would take German ones from -407). dnc shows
 * numbers as Excel in en-US does, as its dates are ISO. The system formats (`[$-F800]`, `[$-F400]`) are kept.
 */
const LOCALE_TAG = /\[\$([^\]-]*)-(?!F[48]00\])[0-9A-Fa-f]{1,8}\]/g;

function withoutLocale(numFmt: string): string {
  if (!numFmt.includes('[$')) return numFmt;
  return numFmt.replace(LOCALE_TAG, (_m, symbol: string) => (symbol ? `[$${symbol}]` : ''));
}

function classify(numFmt: string): FormatKind {
  const { getFormatInfo, getFormatDateInfo } = formatter();
  let info: ReturnType<typeof getFormatInfo>;
  try {
    info = getFormatInfo(numFmt);
  } catch {
    return 'invalid';
  }
  // numfmt calls a format of text sections alone general (`[>0]"pos";[<0]"neg";"zero"`): Excel shows its text.
  if (info.type === 'general') return /general/i.test(numFmt) ? 'general' : 'excel';
  if (info.type === 'scientific') return 'scientific';
  if (info.isDate && info.type !== 'time') {
    // A calendar date has a year, a month or a day; `[s]` or `[mm]:ss` are durations, shown as Excel shows them.
    const parts = getFormatDateInfo(numFmt);
    if (parts.year || parts.month || parts.day) return 'date';
    return 'time';
  }
  if (info.type === 'time') return 'time';
  return 'excel';
}

/** Whether numbers in this format are dates (read as Date values, shown as their ISO date). */
export function isDateFormat(numFmt: string | undefined): boolean {
  return kindOf(numFmt) === 'date';
}

export function isScientificFormat(numFmt: string | undefined): boolean {
  return kindOf(numFmt) === 'scientific';
}

/** How Excel's General format shows a number too long for it: 6 significant digits and an exponent (1.23457E+15). */
function scientific(value: number): string {
  const [mantissa, exponent] = value.toExponential(5).split('e') as [string, string];
  const m = mantissa.replace(/\.?0+$/, '');
  const e = Number(exponent);
  return `${m}E${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
}

/** A time of day (a fraction of a day) as an ISO 8601 time, to the second as Excel rounds it: `12:00:00`. */
function timeOfDay(fraction: number): string {
  const seconds = Math.round(fraction * 86_400);
  if (seconds >= 86_400) return '24:00:00';
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(Math.floor(seconds / 3600))}:${two(Math.floor(seconds / 60) % 60)}:${two(seconds % 60)}`;
}

/** A date cell as text: the ISO date, with the time when it has one. */
function dateText(d: Date): string {
  if (Number.isNaN(d.getTime())) return '';
  const iso = d.toISOString();
  return iso.endsWith('T00:00:00.000Z') ? iso.slice(0, 10) : iso.replace('.000Z', 'Z');
}

function general(value: number): string {
  // An integer is shown in full (up to 15 digits, all of them kept): General switches a 12-digit number to
  // 4.47912E+11 only for want of column width, and that number is a phone number whose digits are all there.
  return Number.isInteger(value) ? String(value) : formatter().format('General', value);
}

/** A number as the cell shows it; a number Excel has damaged is shown as Excel shows it then (scientific). */
export function numberText(value: number, numFmt: string | undefined): string {
  if (!Number.isFinite(value)) return String(value);
  const { kind, pattern } = formatOf(numFmt);
  // Past 15 digits General shows what Excel's General does (1.23457E+15); a format of digits (`0`) shows the 15
  // digits Excel kept and zeros, as Excel does. Either way a phone cell is refused by its value (row-numbers.ts).
  if (Math.abs(value) >= FIFTEEN_DIGITS && (kind === 'general' || kind === 'invalid' || kind === 'date'))
    return scientific(value);
  // A time of day in a date format (a serial below 1, see serialDate): its time, as an ISO 8601 time.
  if (kind === 'date' && value >= 0 && value < 1) return timeOfDay(value);
  // A date format on a serial that is no date (read as a number, see serialDate) shows the number itself.
  if (kind === 'general' || kind === 'invalid' || kind === 'date') return general(value);
  try {
    return excelFormat(formatter(), pattern, value);
  } catch {
    return general(value);
  }
}

/** A text cell as its format shows it: a text section (`"Tel: "@`) adds to it; any other format leaves it as it is. */
function textText(value: string, numFmt: string | undefined): string {
  if (numFmt === undefined || numFmt === '@' || numFmt === 'General' || !numFmt.includes('@')) return value;
  try {
    return formatter().format(numFmt, value);
  } catch {
    return value;
  }
}

/** A cell's text: what a person reads in it. */
export function cellText(cell: TypedCell | undefined): string {
  if (!cell) return '';
  const v = cell.value;
  if (v === null) return '';
  if (typeof v === 'string') return textText(v, cell.numFmt);
  if (typeof v === 'number') return numberText(v, cell.numFmt);
  if (typeof v === 'boolean') return v ? 'TRUE' : 'FALSE';
  if (v instanceof Date) return dateText(v);
  return v.error;
}

/** Excel's epoch for serial dates in the 1900 system (serial 25569 is 1970-01-01); the 1904 one's is 1,462 days on. */
const EXCEL_EPOCH_MS = Date.UTC(1899, 11, 30);
const DAYS_1900_TO_1904 = 1462;

/**
 * Excel's 1900 system counts 1900-02-29, a day that never was (Lotus 1-2-3's leap-year bug, kept): serial 60 is that
 * day, and every serial before it is one day later than a count from 1899-12-30 makes it. Serial 60 is read as
 * 1900-02-28, as openpyxl reads it: a Date cannot be the day that never was.
 */
const FIRST_TRUE_SERIAL = 61;
const PHANTOM_LEAP_DAY = 60;

/**
 * A serial number as the date it is (1900 or 1904 date system); null when Excel would not show it as one, and, in the
 * 1900 system, for a serial below 1: a time of day with no date (Excel shows it on the day 1900-01-00).
 */
export function serialDate(serial: number, date1904 = false): Date | null {
  if (!(serial >= (date1904 ? 0 : 1) && serial < LAST_SERIAL_DATE)) return null;
  const days = date1904 ? serial + DAYS_1900_TO_1904 : serial < PHANTOM_LEAP_DAY ? serial + 1 : serial;
  return new Date(EXCEL_EPOCH_MS + Math.round(days * 86_400_000));
}

/** A date as the serial number of the 1900 system (serialDate's inverse): dates before 1900-03-01 one day less. */
export function dateSerial(d: Date): number {
  const days = (d.getTime() - EXCEL_EPOCH_MS) / 86_400_000;
  return days < FIRST_TRUE_SERIAL ? days - 1 : days;
}

/**
 * A built-in number format by its id (styles.xml names them by id alone): those ECMA-376 spells out (§18.8.30) as it
 * spells them (and exceljs and openpyxl read them); those it leaves to the locale (currency, accounting, East Asian
 * dates) as Excel in en-US shows them, from numfmt.
 */
const BUILT_IN: Readonly<Record<number, string>> = {
  0: 'General',
  1: '0',
  2: '0.00',
  3: '#,##0',
  4: '#,##0.00',
  9: '0%',
  10: '0.00%',
  11: '0.00E+00',
  12: '# ?/?',
  13: '# ??/??',
  14: 'mm-dd-yy',
  15: 'd-mmm-yy',
  16: 'd-mmm',
  17: 'mmm-yy',
  18: 'h:mm AM/PM',
  19: 'h:mm:ss AM/PM',
  20: 'h:mm',
  21: 'h:mm:ss',
  22: 'm/d/yy h:mm',
  37: '#,##0 ;(#,##0)',
  38: '#,##0 ;[Red](#,##0)',
  39: '#,##0.00 ;(#,##0.00)',
  40: '#,##0.00 ;[Red](#,##0.00)',
  45: 'mm:ss',
  46: '[h]:mm:ss',
  47: 'mm:ss.0',
  48: '##0.0E+0',
  49: '@',
};

/** The id of a built-in format by its code (`mm-dd-yy` is 14), as exceljs and openpyxl write them; else undefined. */
export function builtInFormatId(code: string): number | undefined {
  return BUILT_IN_IDS.get(code);
}

const BUILT_IN_IDS = new Map(
  Object.entries(BUILT_IN)
    .filter(([id]) => id !== '0')
    .map(([id, code]) => [code, Number(id)]),
);

export function builtInFormat(id: number): string | undefined {
  const known = BUILT_IN[id];
  if (known !== undefined) return known;
  const byLocale = (id >= 5 && id <= 8) || (id >= 23 && id <= 36) || (id >= 41 && id <= 44) || (id >= 50 && id <= 81);
  return byLocale ? formatter().getFormatFromId(id) : undefined;
}

/**
 * Reduces a value from the workbook reader to one of Excel's types. A formula becomes its cached result
 * (it is never evaluated, and no formula is ever written back); rich text and hyperlinks become their text.
 */
export function plainValue(raw: unknown, numFmt: string | undefined): CellValue {
  if (raw === null || raw === undefined) return null;
  if (typeof raw === 'string' || typeof raw === 'boolean') return raw;
  if (typeof raw === 'number') return (isDateFormat(numFmt) && serialDate(raw)) || raw;
  if (raw instanceof Date) return raw;
  if (typeof raw === 'object') {
    const o = raw as Record<string, unknown>;
    if ('formula' in o || 'sharedFormula' in o) {
      // A formula whose cached result is an error or absent (never calculated) has no value to read.
      const result = o.result;
      if (typeof result === 'number' && Number.isNaN(result)) return { error: '#VALUE!' };
      return plainValue(result, numFmt);
    }
    if (typeof o.error === 'string') return { error: o.error };
    if (Array.isArray(o.richText)) return (o.richText as Array<{ text?: string }>).map((r) => r.text ?? '').join('');
    if (typeof o.text === 'string') return o.text;
    if (o.text && typeof o.text === 'object') return plainValue(o.text, numFmt);
  }
  return String(raw);
}
