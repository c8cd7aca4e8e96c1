// The parts of a workbook dnc reads, scanned as they stream in: a sheet's rows and cells, the shared strings,
// the sheet list. A small scanner of its own instead of a general SAX parser: it makes no object per tag or
// attribute, so reading a sheet of any length leaves little garbage behind, and the peak memory of a batch
// does not grow with the rows (docs/BENCHMARKS.md, item 10).
import { isDateFormat, plainValue, serialDate, type CellValue, type TypedCell } from './xlsx-cells.js';
import { columnName } from './xlsx-writer.js';
import { formatInteger } from '../text/numbers.js';

/** The XML of a part is not what a workbook holds (the caller says which workbook). */
export class XmlFormatError extends Error {
  override name = 'XmlFormatError';
}

export interface XmlHandler {
  /** Set when `open` is to be given qualified names (`x15:workbookPr`), for a handler that resolves namespaces. */
  readonly qualifiedNames?: boolean;
  /**
   * A start tag: its local name (any `x:` prefix dropped), or its qualified name (see qualifiedNames); its attributes
   * are `src` from `from` to `to` (see attributeValue).
   */
  open(name: string, src: string, from: number, to: number): void;
  close(name: string): void;
  /** Character data as written (entities not yet decoded: see decodeText); never split inside an entity. */
  text(raw: string): void;
  /** A CDATA section's text (literal). */
  cdata(text: string): void;
}

function localName(qualified: string): string {
  const colon = qualified.indexOf(':');
  return colon < 0 ? qualified : qualified.slice(colon + 1);
}

/** Where the `>` ending a tag is, outside quoted attribute values (which may hold `>`); -1 when not yet read. */
function tagEnd(s: string, from: number): number {
  let quote = 0;
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (quote !== 0) {
      if (c === quote) quote = 0;
    } else if (c === 34 || c === 39) quote = c;
    else if (c === 62) return i;
  }
  return -1;
}

function nameEnd(s: string, from: number, limit: number): number {
  for (let i = from; i < limit; i++) {
    const c = s.charCodeAt(i);
    if (c === 32 || c === 9 || c === 10 || c === 13 || c === 47 || c === 62) return i;
  }
  return limit;
}

const MAX_PENDING = 4 << 20;

/**
 * Splits XML text, fed in chunks of any size, into tags and text for a handler. Well-formedness is not
 * checked beyond what reading needs; a document type declaration is refused (a workbook has none, and its
 * entities are how a hostile file would make a reader expand kilobytes into gigabytes).
 */
export class XmlScanner {
  private rest = '';
  private readonly qualified: boolean;
  constructor(private readonly handler: XmlHandler) {
    this.qualified = handler.qualifiedNames === true;
  }

  write(chunk: string): void {
    const s = this.rest.length > 0 ? this.rest + chunk : chunk;
    const h = this.handler;
    const n = s.length;
    let p = 0;
    while (p < n) {
      const lt = s.indexOf('<', p);
      // Text runs up to the next tag: kept until that tag arrives, so an entity is never cut in two.
      if (lt < 0) break;
      if (lt > p) h.text(s.slice(p, lt));
      p = lt;
      if (lt + 1 >= n) break;
      const c1 = s.charCodeAt(lt + 1);
      if (c1 === 47 /* / */) {
        const gt = s.indexOf('>', lt + 2);
        if (gt < 0) break;
        h.close(localName(s.slice(lt + 2, gt).trim()));
        p = gt + 1;
      } else if (c1 === 63 /* ? */) {
        const end = s.indexOf('?>', lt + 2);
        if (end < 0) break;
        p = end + 2;
      } else if (c1 === 33 /* ! */) {
        if (n - lt < 9) break;
        if (s.startsWith('<!--', lt)) {
          const end = s.indexOf('-->', lt + 4);
          if (end < 0) break;
          p = end + 3;
        } else if (s.startsWith('<![CDATA[', lt)) {
          const end = s.indexOf(']]>', lt + 9);
          if (end < 0) break;
          h.cdata(s.slice(lt + 9, end));
          p = end + 3;
        } else {
          throw new XmlFormatError('the XML has a document type declaration (DTD), which a workbook never has');
        }
      } else {
        const gt = tagEnd(s, lt + 1);
        if (gt < 0) break;
        const selfClosing = s.charCodeAt(gt - 1) === 47;
        const to = selfClosing ? gt - 1 : gt;
        const end = nameEnd(s, lt + 1, to);
        const tag = s.slice(lt + 1, end);
        const name = this.qualified ? tag : localName(tag);
        h.open(name, s, end, to);
        if (selfClosing) h.close(name);
        p = gt + 1;
      }
    }
    this.rest = p < n ? s.slice(p) : '';
    // What waits for its end is one tag or one text (a cell holds at most 32,767 characters): a part whose
    // tag never ends would otherwise be held whole and rescanned with every chunk.
    if (this.rest.length > MAX_PENDING)
      throw new XmlFormatError(`the XML has a tag or text longer than ${MAX_PENDING / (1 << 20)} Mi characters`);
  }

  /** The part's end: what is left must be text outside any tag (whitespace, in practice). */
  end(): void {
    if (this.rest.includes('<')) throw new XmlFormatError('the XML ends inside a tag');
    this.rest = '';
  }
}

const ENTITY = /&(?:(lt|gt|amp|quot|apos)|#([0-9]+)|#x([0-9a-fA-F]+));/g;
const UNDEFINED_ENTITY = /&(?!(?:lt|gt|amp|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);)/;
const NAMED: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

/**
 * Character data as a reader sees it: line ends normalized (XML 1.0 §2.11), the five entities and character references
 * decoded.
 */
export function decodeText(raw: string): string {
  let s = raw;
  if (s.includes('\r')) s = s.replace(/\r\n?/g, '\n');
  if (!s.includes('&')) return s;
  // Any other & is an entity a workbook cannot define (it has no DTD).
  if (UNDEFINED_ENTITY.test(s)) throw new XmlFormatError('the XML refers to an undefined entity');
  const decoded = s.replace(
    ENTITY,
    (_m, named: string | undefined, dec: string | undefined, hex: string | undefined) => {
      if (named) return NAMED[named]!;
      const code = dec !== undefined ? Number.parseInt(dec, 10) : Number.parseInt(hex!, 16);
      if (!(code >= 0 && code <= 0x10ffff))
        throw new XmlFormatError(`the XML has a character reference out of range (&#${dec ?? `x${hex}`};)`);
      return String.fromCodePoint(code);
    },
  );
  return decoded;
}

const ESCAPED = /_x([0-9A-Fa-f]{4})_/g;

/**
 * A string of a workbook as Excel reads it: ECMA-376 (§22.9.2.19, ST_Xstring) writes a character XML cannot hold as
 * `_xHHHH_` (its UTF-16 code unit in hex), and an underscore that would start one as `_x005F_`: `_x005F_x000D_` is the
 * text `_x000D_`, read left to right in one pass.
 */
export function decodeEscapes(text: string): string {
  if (!text.includes('_x')) return text;
  return text.replace(ESCAPED, (_m, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
}

function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13;
}

/**
 * The value of attribute `wanted` (its qualified name) among the attributes in `src` from `from` to `to`,
 * decoded; undefined when absent. Scans without allocating anything but the value.
 */
export function attributeValue(src: string, from: number, to: number, wanted: string): string | undefined {
  let i = from;
  while (i < to) {
    while (i < to && isSpace(src.charCodeAt(i))) i++;
    const nameStart = i;
    while (i < to && src.charCodeAt(i) !== 61 && !isSpace(src.charCodeAt(i))) i++;
    const nameLength = i - nameStart;
    while (i < to && src.charCodeAt(i) !== 34 && src.charCodeAt(i) !== 39) i++;
    if (i >= to) return undefined;
    const close = src.indexOf(src.charCodeAt(i) === 34 ? '"' : "'", i + 1);
    if (close < 0 || close >= to) return undefined;
    if (nameLength === wanted.length && src.startsWith(wanted, nameStart)) {
      const raw = src.slice(i + 1, close);
      return raw.includes('&') || raw.includes('\r') ? decodeText(raw) : raw;
    }
    i = close + 1;
  }
  return undefined;
}

/** All attributes by their qualified names, values decoded (for the few tags read outside the rows). */
export function attributes(src: string, from: number, to: number): Map<string, string> {
  const out = new Map<string, string>();
  let i = from;
  while (i < to) {
    while (i < to && isSpace(src.charCodeAt(i))) i++;
    const nameStart = i;
    while (i < to && src.charCodeAt(i) !== 61 && !isSpace(src.charCodeAt(i))) i++;
    const name = src.slice(nameStart, i);
    while (i < to && src.charCodeAt(i) !== 34 && src.charCodeAt(i) !== 39) i++;
    if (i >= to) break;
    const close = src.indexOf(src.charCodeAt(i) === 34 ? '"' : "'", i + 1);
    if (close < 0 || close >= to) break;
    const raw = src.slice(i + 1, close);
    out.set(name, raw.includes('&') || raw.includes('\r') ? decodeText(raw) : raw);
    i = close + 1;
  }
  return out;
}

/** Column number (1-based) of a cell reference such as `AB12`; 0 when it has no letters. */
export function columnOf(ref: string): number {
  let col = 0;
  for (let i = 0; i < ref.length; i++) {
    const c = ref.charCodeAt(i) | 32; // lower case
    if (c < 97 || c > 122) break;
    col = col * 26 + (c - 96);
  }
  return col;
}

/** One row of a sheet as stored (empty rows are absent): its Excel row number and its cells by column (sparse). */
export interface SheetRow {
  number: number;
  cells: TypedCell[];
}

/** A cell style's number format (`null` when the workbook has no such style). */
export type StyleLookup = (styleId: number) => { numFmt?: string } | null;

/** Excel's last row and column (XFD): a sheet has no cell past them, so a reference past them is a file that lies. */
export const MAX_ROWS = 1_048_576;
export const MAX_COLUMNS = 16_384;
// Grouped by formatInteger, not toLocaleString: this module is loaded by every batch, and the first Intl call loads
// ICU's locale data (≈ 10 ms before the first lookup).
const LAST_ROW = formatInteger(MAX_ROWS);
const LAST_COLUMN = formatInteger(MAX_COLUMNS);

/**
 * A row or cell past Excel's limits (`limit`), or a row number that is none or goes back (`order`): the caller
 * names the file and the sheet.
 */
export class SheetLimitError extends Error {
  override name = 'SheetLimitError';
  constructor(
    readonly kind: 'limit' | 'order',
    message: string,
    /** The row it is in (the last row number read, when the row's own is not a number). */
    readonly row: number,
  ) {
    super(message);
  }
}

/**
 * Reads a worksheet's `<sheetData>`: each finished row goes to `rows`. A cell is what Excel shows: a shared or
 * inline string, a number (a date when its format is one), a boolean, an error, or a formula's cached value
 * (never the formula); a cell with no value is no cell. Its number format is its style's, else its row's.
 */
export class SheetHandler implements XmlHandler {
  /** Rows finished since the caller last took them. */
  rows: SheetRow[] = [];
  /** Set at `</sheetData>`: nothing after it is a row. */
  done = false;
  /** Set at the first number that is not whole: General shows it through numfmt, which the caller then loads. */
  fraction = false;
  private inData = false;
  private inRow = false;
  private rowNumber = 0;
  private rowFmt: string | undefined;
  private cells: TypedCell[] = [];
  private inCell = false;
  private col = 0;
  private cellFmt: string | undefined;
  private type: string | undefined;
  private hasFormula = false;
  private hasValue = false;
  private inInline = false;
  private phonetic = false;
  private collecting = false;
  private value = '';
  private run = '';

  constructor(
    private readonly sharedString: (index: number) => string | undefined,
    private readonly style: StyleLookup,
    private readonly date1904: boolean,
    /** The workbook asks to be calculated when opened: a formula's cached `0` is a placeholder, not a result. */
    private readonly fullCalcOnLoad = false,
  ) {
    const first = style(0);
    this.defaultFormat = first?.numFmt !== undefined ? first : null;
  }

  /** Style 0's number format, when it has one (see the cell's `s` below). */
  private readonly defaultFormat: { numFmt?: string } | null;

  open(name: string, src: string, from: number, to: number): void {
    switch (name) {
      case 'sheetData':
        this.inData = true;
        break;
      case 'row': {
        if (!this.inData) break;
        const r = attributeValue(src, from, to, 'r');
        // A row without its number is the one after the last (some writers leave it out).
        const number = r !== undefined ? (/^\s*\d{1,15}\s*$/.test(r) ? Number(r) : Number.NaN) : this.rowNumber + 1;
        const previous = this.rowNumber;
        if (!(number >= 1)) {
          throw new SheetLimitError('order', `the row after row ${previous} has no row number ('${r}')`, previous);
        }
        if (number > MAX_ROWS) {
          throw new SheetLimitError('limit', `row ${number} is past Excel's last row (${LAST_ROW})`, number);
        }
        // A row that goes back would be read out of place, or be a second copy of a row: neither can be right.
        if (number <= previous) {
          throw new SheetLimitError('order', `row ${number} comes after row ${previous} (rows out of order)`, number);
        }
        this.rowNumber = number;
        const s = attributeValue(src, from, to, 's');
        this.rowFmt = s ? this.style(Number.parseInt(s, 10))?.numFmt : undefined;
        this.cells = [];
        this.col = 0;
        this.inRow = true;
        break;
      }
      case 'c': {
        if (!this.inRow) break;
        // One pass over the cell's attributes (a sheet has millions of cells): r, s and t are one letter each.
        let r: string | undefined;
        let s: string | undefined;
        let t: string | undefined;
        let i = from;
        while (i < to) {
          while (i < to && isSpace(src.charCodeAt(i))) i++;
          const nameStart = i;
          while (i < to && src.charCodeAt(i) !== 61 && !isSpace(src.charCodeAt(i))) i++;
          const oneLetter = i - nameStart === 1 ? src.charCodeAt(nameStart) : 0;
          while (i < to && src.charCodeAt(i) !== 34 && src.charCodeAt(i) !== 39) i++;
          if (i >= to) break;
          const close = src.indexOf(src.charCodeAt(i) === 34 ? '"' : "'", i + 1);
          if (close < 0 || close >= to) break;
          if (oneLetter === 114 /* r */) r = src.slice(i + 1, close);
          else if (oneLetter === 115 /* s */) s = src.slice(i + 1, close);
          else if (oneLetter === 116 /* t */) t = src.slice(i + 1, close);
          i = close + 1;
        }
        const col = r !== undefined ? columnOf(r) : 0;
        this.col = col > 0 ? col : this.col + 1;
        // A cell's place is an index into the row's cells: a column past XFD would make a row of millions of them.
        if (this.col > MAX_COLUMNS) {
          const where = `cell ${r ?? `number ${this.col}`} of row ${this.rowNumber}`;
          const why = `${where} is past Excel's last column (XFD, the ${LAST_COLUMN}th)`;
          throw new SheetLimitError('limit', why, this.rowNumber);
        }
        const styleId = s !== undefined ? Number.parseInt(s, 10) : 0;
        // Style 0 is the default one: the row's format stands (as exceljs reads it), unless style 0 has a format of
        // its own (a workbook that defines format id 0, or gives its first style another).
        const style = styleId ? this.style(styleId) : this.defaultFormat;
        this.cellFmt = style ? style.numFmt : this.rowFmt;
        this.type = t;
        this.hasFormula = false;
        this.hasValue = false;
        this.value = '';
        this.inCell = true;
        break;
      }
      case 'v':
        if (!this.inCell) break;
        this.hasValue = true;
        this.value = '';
        this.collecting = true;
        break;
      case 'f':
        if (this.inCell) this.hasFormula = true;
        break;
      case 'is':
        if (!this.inCell) break;
        this.hasValue = true;
        this.value = '';
        this.inInline = true;
        break;
      case 't':
        // An inline string's runs, joined; its phonetic runs are not its text.
        if (this.inInline && !this.phonetic) {
          this.collecting = true;
          this.run = '';
        }
        break;
      case 'rPh':
        if (this.inInline) this.phonetic = true;
        break;
      default:
        break;
    }
  }

  close(name: string): void {
    switch (name) {
      case 'v':
        this.collecting = false;
        break;
      case 't':
        // Each run of an inline string is one ST_Xstring, with its own escapes.
        if (this.collecting && this.inInline) this.value += decodeEscapes(this.run);
        this.collecting = false;
        break;
      case 'rPh':
        this.phonetic = false;
        break;
      case 'is':
        this.inInline = false;
        break;
      case 'c':
        if (this.inCell) this.endCell();
        break;
      case 'row':
        if (!this.inRow) break;
        this.rows.push({ number: this.rowNumber, cells: this.cells });
        this.inRow = false;
        break;
      case 'sheetData':
        this.inData = false;
        this.done = true;
        break;
      default:
        break;
    }
  }

  text(raw: string): void {
    if (!this.collecting) return;
    if (this.inInline) this.run += decodeText(raw);
    else this.value += decodeText(raw);
  }

  cdata(text: string): void {
    if (!this.collecting) return;
    if (this.inInline) this.run += text;
    else this.value += text;
  }

  private endCell(): void {
    this.inCell = false;
    this.collecting = false;
    const fmt = this.cellFmt;
    const text = this.value;
    const t = this.type;
    let raw: unknown;
    if (this.hasFormula) {
      // A formula is read as its cached result, of the type the cell says; never evaluated.
      // An empty <v/> is no cached value (a formula never calculated, as openpyxl writes them); nor is the 0 that
      // XlsxWriter writes for every formula of a workbook it marks to be calculated on load.
      const placeholder = this.fullCalcOnLoad && text === '0' && (t === undefined || t === 'n');
      if (!this.hasValue || (text === '' && t !== 'str') || placeholder) {
        this.cells[this.col - 1] = {
          value: null,
          numFmt: fmt,
          formula: `${columnName(this.col - 1)}${this.rowNumber}`,
        };
        return;
      }
      let result: unknown;
      // A cached text result is `str`, or an inline string as some streaming writers store it (node-xlsx-stream).
      if (t === 'str' || t === 'inlineStr') result = text;
      else if (t === 'e') result = { error: text };
      else if (t === 'b') result = Number.parseInt(text, 10) !== 0;
      else {
        const n = Number.parseFloat(text);
        if (!Number.isInteger(n)) this.fraction = true;
        result = (isDateFormat(fmt) && serialDate(n, this.date1904)) || n;
      }
      raw = { formula: '', result };
    } else if (this.hasValue) {
      // An empty value of a type other than text is no value.
      if (text === '' && t !== 'str' && t !== 'inlineStr') return;
      switch (t) {
        case 's':
          raw = this.sharedString(Number.parseInt(text, 10));
          break;
        case 'inlineStr':
        case 'str':
          raw = text;
          break;
        case 'e':
          raw = { error: text };
          break;
        case 'b':
          raw = Number.parseInt(text, 10) !== 0;
          break;
        case 'd': {
          // An ISO 8601 date (strict Open XML); a text that is no date stays text.
          const d = new Date(text);
          raw = Number.isNaN(d.getTime()) ? text : d;
          break;
        }
        default: {
          const n = Number.parseFloat(text);
          if (!Number.isInteger(n)) this.fraction = true;
          raw = (isDateFormat(fmt) && serialDate(n, this.date1904)) || n;
          break;
        }
      }
      if (raw === undefined || raw === null) return;
    } else {
      return;
    }
    const value: CellValue = plainValue(raw, fmt);
    this.cells[this.col - 1] = { value, numFmt: fmt };
  }
}
