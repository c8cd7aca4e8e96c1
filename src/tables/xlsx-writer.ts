// A streaming .xlsx writer: SpreadsheetML written as text straight into a zip whose entries are deflated as they
// come, with backpressure from the output. (exceljs's writer took 24 s and 250 MB for 200,000 rows.) Only what a
// results workbook needs: inline text cells, numbers, booleans, dates, errors, fills, bold, a frozen header, an
// autofilter, several sheets. Never a formula: there is no way to write one.
import { crc32, createDeflateRaw, type DeflateRaw } from 'node:zlib';
import { builtInFormatId, dateSerial, type CellValue } from './xlsx-cells.js';
import { inputError } from '../errors.js';

/** Where the workbook's bytes go; a promise means: wait before writing more. */
export interface ByteSink {
  write(bytes: Buffer): Promise<void> | undefined;
}

/** A zip archive written entry by entry (deflated, sizes in a data descriptor), then its central directory. */
export class ZipWriter {
  private offset = 0;
  private readonly entries: Array<{ name: Buffer; crc: number; compressed: number; size: number; offset: number }> = [];
  constructor(private readonly sink: ByteSink) {}

  private async put(bytes: Buffer): Promise<void> {
    this.offset += bytes.length;
    await this.sink.write(bytes);
  }

  /** Starts an entry; returns its writer (text in, deflated bytes out to the archive). */
  async entry(name: string): Promise<ZipEntry> {
    const nameBytes = Buffer.from(name, 'utf8');
    const header = Buffer.alloc(30);
    header.writeUInt32LE(0x04034b50, 0);
    header.writeUInt16LE(20, 4); // version needed: 2.0 (deflate)
    header.writeUInt16LE(0x0808, 6); // sizes in a data descriptor; UTF-8 names
    header.writeUInt16LE(8, 8); // deflate
    header.writeUInt16LE(0, 10); // time 00:00 and date 1980-01-01: the same bytes for the same content
    header.writeUInt16LE(0x21, 12);
    header.writeUInt16LE(nameBytes.length, 26);
    const offset = this.offset;
    await this.put(Buffer.concat([header, nameBytes]));
    return new ZipEntry(this, nameBytes, offset);
  }

  /** @internal */
  async deflated(bytes: Buffer): Promise<void> {
    await this.put(bytes);
  }

  /** @internal */
  async closeEntry(name: Buffer, offset: number, crc: number, compressed: number, size: number): Promise<void> {
    if (compressed > 0xffffffff || size > 0xffffffff || this.offset > 0xffffffff)
      throw inputError(
        'E_OUTPUT_TOO_LARGE',
        'the workbook would be larger than 4 GiB (its ZIP format cannot say more)',
        {
          hint: 'write CSV results instead (-o OUTPUT.csv): a CSV file has no such limit',
        },
      );
    const descriptor = Buffer.alloc(16);
    descriptor.writeUInt32LE(0x08074b50, 0);
    descriptor.writeUInt32LE(crc >>> 0, 4);
    descriptor.writeUInt32LE(compressed, 8);
    descriptor.writeUInt32LE(size, 12);
    await this.put(descriptor);
    this.entries.push({ name, crc, compressed, size, offset });
  }

  async finish(): Promise<void> {
    const start = this.offset;
    for (const e of this.entries) {
      const h = Buffer.alloc(46);
      h.writeUInt32LE(0x02014b50, 0);
      h.writeUInt16LE(20, 4);
      h.writeUInt16LE(20, 6);
      h.writeUInt16LE(0x0808, 8);
      h.writeUInt16LE(8, 10);
      h.writeUInt16LE(0, 12);
      h.writeUInt16LE(0x21, 14);
      h.writeUInt32LE(e.crc >>> 0, 16);
      h.writeUInt32LE(e.compressed, 20);
      h.writeUInt32LE(e.size, 24);
      h.writeUInt16LE(e.name.length, 28);
      h.writeUInt32LE(e.offset, 42);
      await this.put(Buffer.concat([h, e.name]));
    }
    const end = Buffer.alloc(22);
    end.writeUInt32LE(0x06054b50, 0);
    end.writeUInt16LE(this.entries.length, 8);
    end.writeUInt16LE(this.entries.length, 10);
    end.writeUInt32LE(this.offset - start, 12);
    end.writeUInt32LE(start, 16);
    await this.put(end);
  }
}

class ZipEntry {
  private crc = 0;
  private size = 0;
  private compressed = 0;
  // Level 3 deflates several times faster than 6 for a few percent more bytes.
  private readonly deflate: DeflateRaw = createDeflateRaw({ level: 3 });
  private waiting: Promise<void> = Promise.resolve();
  private failed: unknown;
  private readonly ended: Promise<void>;
  private text = '';

  constructor(
    private readonly zip: ZipWriter,
    private readonly name: Buffer,
    private readonly offset: number,
  ) {
    this.deflate.on('data', (chunk: Buffer) => {
      this.compressed += chunk.length;
      // Deflated bytes go out in order; the archive's sink says when to wait.
      this.waiting = this.waiting
        .then(() => this.zip.deflated(chunk))
        .catch((err: unknown) => {
          this.failed ??= err;
        });
    });
    this.ended = new Promise((resolve, reject) => {
      this.deflate.once('end', resolve);
      this.deflate.once('error', reject);
    });
  }

  /** Adds text; every 256 KiB it is deflated, and waits while the output is behind. */
  async write(text: string): Promise<void> {
    this.text += text;
    if (this.text.length >= 256 * 1024) await this.flush();
  }

  private async flush(): Promise<void> {
    if (this.failed) throw this.failed;
    const bytes = Buffer.from(this.text, 'utf8');
    this.text = '';
    this.crc = crc32(bytes, this.crc);
    this.size += bytes.length;
    // Up to 4 MiB may wait in zlib: the next rows are made while it deflates the last ones (in its own thread).
    if (!this.deflate.write(bytes) && this.deflate.writableLength > 4 * 1024 * 1024)
      await new Promise<void>((resolve) => this.deflate.once('drain', resolve));
    await this.waiting;
  }

  async close(): Promise<void> {
    await this.flush();
    this.deflate.end();
    await this.ended;
    await this.waiting;
    if (this.failed) throw this.failed;
    await this.zip.closeEntry(this.name, this.offset, this.crc, this.compressed, this.size);
  }
}

/** XML 1.0 cannot hold most control characters: they are written as Excel's `_xHHHH_` escapes. */
// eslint-disable-next-line no-control-regex
const NOT_XML = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g;
const NEEDS_ESCAPE = /[&<>"\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/;
function xmlText(s: string): string {
  // Most cells hold nothing to escape: one test instead of five replacements.
  if (!NEEDS_ESCAPE.test(s)) return s;
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(NOT_XML, (c) => `_x${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}_`);
}

const ESCAPE_LIKE = /_x([0-9A-Fa-f]{4})_/g;

/**
 * A text cell's text as ECMA-376 stores a string (ST_Xstring, §22.9.2.19), so that it reads back byte for byte: a
 * carriage return as `_x000D_` (XML turns a written CR into a line feed), text that looks like an escape with its
 * underscore escaped (`_x005F_x000D_` is the text `_x000D_`), control characters as `_xHHHH_`.
 */
function xstring(s: string): string {
  let t = s;
  if (t.includes('_x')) t = t.replace(ESCAPE_LIKE, '_x005F_x$1_');
  if (t.includes('\r')) t = t.replace(/\r/g, '_x000D_');
  return xmlText(t);
}

/** 0 → A, 25 → Z, 26 → AA. */
export function columnName(index: number): string {
  let s = '';
  for (let n = index + 1; n > 0; n = Math.floor((n - 1) / 26)) s = String.fromCharCode(65 + ((n - 1) % 26)) + s;
  return s;
}

/** A cell's look: its number format, bold or not, its fill (ARGB) or none. */
export interface CellStyle {
  numFmt?: string | undefined;
  bold?: boolean;
  fill?: string | undefined;
}

/** The workbook's styles, numbered as cells ask for them (written last, once all are known). */
class Styles {
  private readonly formats = new Map<string, number>();
  private readonly fills = new Map<string, number>();
  private readonly xfs = new Map<string, number>([['0|0|0', 0]]);
  /** Style objects are shared between cells (one per look): their ids are looked up by identity. */
  private readonly known = new WeakMap<CellStyle, number>();
  id(style: CellStyle): number {
    let id = this.known.get(style);
    if (id === undefined) this.known.set(style, (id = this.allocate(style)));
    return id;
  }
  private allocate(style: CellStyle): number {
    let fmt = 0;
    if (style.numFmt && style.numFmt !== 'General') {
      // A built-in format is written by its id: Excel shows id 14 as the reader's short date (3/1/2024), and the
      // code it is read as (`mm-dd-yy`) as written (03-01-24).
      fmt = builtInFormatId(style.numFmt) ?? this.formats.get(style.numFmt) ?? 164 + this.formats.size;
      if (fmt >= 164) this.formats.set(style.numFmt, fmt);
    }
    let fill = 0;
    if (style.fill) {
      // Fills 0 and 1 are the two every workbook has (none, gray125).
      fill = this.fills.get(style.fill) ?? 2 + this.fills.size;
      this.fills.set(style.fill, fill);
    }
    const key = `${fmt}|${style.bold ? 1 : 0}|${fill}`;
    let id = this.xfs.get(key);
    if (id === undefined) this.xfs.set(key, (id = this.xfs.size));
    return id;
  }
  xml(): string {
    const formats = [...this.formats]
      .map(([code, id]) => `<numFmt numFmtId="${id}" formatCode="${xmlText(code)}"/>`)
      .join('');
    const fills = [...this.fills.keys()]
      .map(
        (argb) =>
          `<fill><patternFill patternType="solid"><fgColor rgb="${argb}"/><bgColor ` +
          `rgb="${argb}"/></patternFill></fill>`,
      )
      .join('');
    const xfs = [...this.xfs.keys()]
      .map((key) => {
        const [fmt, bold, fill] = key.split('|');
        return (
          `<xf numFmtId="${fmt}" fontId="${bold}" fillId="${fill}" borderId="0" ` +
          `xfId="0"${fmt !== '0' ? ' applyNumberFormat="1"' : ''}${bold !== '0' ? ' applyFont="1"' : ''}` +
          `${fill !== '0' ? ' applyFill="1"' : ''}/>`
        );
      })
      .join('');
    return (
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<styleSheet xmlns="${MAIN_NS}">` +
      (this.formats.size ? `<numFmts count="${this.formats.size}">${formats}</numFmts>` : '') +
      '<fonts count="2"><font><sz val="11"/><name val="Calibri"/></font><font><b/><sz val="11"/><name ' +
      'val="Calibri"/></font></fonts>' +
      `<fills count="${2 + this.fills.size}"><fill><patternFill patternType="none"/></fill><fill><patternFill ` +
      `patternType="gray125"/></fill>${fills}</fills>` +
      '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>' +
      '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>' +
      `<cellXfs count="${this.xfs.size}">${xfs}</cellXfs>` +
      '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles></styleSheet>'
    );
  }
}

const MAIN_NS = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
const REL_NS = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';

/** One sheet being written: rows go straight into its zip entry. */
export class SheetWriter {
  private rowNumber = 0;
  private pending = '';
  /** Column letters, worked out once per column rather than per cell. */
  private readonly columns: string[] = [];
  constructor(
    readonly name: string,
    private readonly entry: ZipEntry,
    private readonly styles: Styles,
    private readonly filterWidth: number | null,
    private readonly print = false,
  ) {}

  /** Adds a row of cells, each with its style (it goes out with the next `flush`). */
  row(values: readonly CellValue[], style: (col: number) => CellStyle): void {
    const r = ++this.rowNumber;
    let xml = `<row r="${r}">`;
    for (let i = 0; i < values.length; i++) {
      const v = values[i] ?? null;
      const s = this.styles.id(style(i));
      const ref = `${(this.columns[i] ??= columnName(i))}${r}`;
      const sa = s === 0 ? '' : ` s="${s}"`;
      if (v === null || v === '') xml += s === 0 ? '' : `<c r="${ref}"${sa}/>`;
      else if (typeof v === 'string')
        xml += `<c r="${ref}"${sa} t="inlineStr"><is><t xml:space="preserve">${xstring(v)}</t></is></c>`;
      else if (typeof v === 'number')
        xml += Number.isFinite(v) ? `<c r="${ref}"${sa}><v>${v}</v></c>` : `<c r="${ref}"${sa} t="e"><v>#NUM!</v></c>`;
      else if (typeof v === 'boolean') xml += `<c r="${ref}"${sa} t="b"><v>${v ? 1 : 0}</v></c>`;
      else if (v instanceof Date)
        xml += Number.isNaN(v.getTime()) ? '' : `<c r="${ref}"${sa}><v>${dateSerial(v)}</v></c>`;
      else xml += `<c r="${ref}"${sa} t="e"><v>${xmlText(v.error)}</v></c>`;
    }
    this.pending += `${xml}</row>`;
  }

  /** Writes the rows added so far (waiting while the output is behind). */
  async flush(): Promise<void> {
    if (this.pending) await this.entry.write(this.pending);
    this.pending = '';
  }

  async close(): Promise<void> {
    await this.flush();
    const filter =
      this.filterWidth !== null && this.rowNumber > 0
        ? `<autoFilter ref="A1:${columnName(Math.max(0, this.filterWidth - 1))}1"/>`
        : '';
    // Landscape, one page wide and as many long as it takes (fitToHeight 0): 47 columns printed as 45 pages.
    const page = this.print
      ? '<pageMargins left="0.4" right="0.4" top="0.6" bottom="0.6" header="0.3" footer="0.3"/>' +
        '<pageSetup orientation="landscape" fitToWidth="1" fitToHeight="0"/>'
      : '';
    await this.entry.write(`</sheetData>${filter}${page}</worksheet>`);
    await this.entry.close();
  }
}

/** How a sheet looks: its frozen header, autofilter, column widths and print layout. */
export interface SheetOptions {
  frozenHeader?: boolean;
  /** An autofilter over that many columns of row 1. */
  filterWidth?: number | null;
  /** Each column's width in characters (undefined: the default). */
  widths?: ReadonlyArray<number | undefined>;
  /** Printed landscape, as wide as one page, row 1 repeated on every page. */
  print?: boolean;
}

/** `<cols>` for the widths given: one `<col>` per run of equal widths. */
function colsXml(widths: ReadonlyArray<number | undefined>): string {
  let xml = '';
  for (let i = 0; i < widths.length;) {
    const w = widths[i];
    let j = i;
    while (j + 1 < widths.length && widths[j + 1] === w) j++;
    if (w !== undefined)
      xml += `<col min="${i + 1}" max="${j + 1}" width="${Math.round(w * 100) / 100}" customWidth="1"/>`;
    i = j + 1;
  }
  return xml ? `<cols>${xml}</cols>` : '';
}

/** A workbook written sheet after sheet; `finish` adds the styles and the parts that name the sheets. */
export class WorkbookWriter {
  private readonly zip: ZipWriter;
  private readonly styles = new Styles();
  private readonly sheets: Array<{ name: string; filterWidth: number | null; printTitles: boolean }> = [];
  constructor(sink: ByteSink) {
    this.zip = new ZipWriter(sink);
  }

  /**
   * Starts the next sheet; `frozenHeader` freezes row 1, `filterWidth` puts an autofilter over that many columns of it.
   */
  async sheet(name: string, options: SheetOptions = {}): Promise<SheetWriter> {
    this.sheets.push({ name, filterWidth: options.filterWidth ?? null, printTitles: options.print === true });
    const entry = await this.zip.entry(`xl/worksheets/sheet${this.sheets.length}.xml`);
    const pane = options.frozenHeader
      ? '<pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/><selection pane="bottomLeft"/>'
      : '';
    // (The order of a worksheet's parts is fixed by the schema: sheetPr, sheetViews, cols, sheetData ...)
    const fitToPage = options.print ? '<sheetPr><pageSetUpPr fitToPage="1"/></sheetPr>' : '';
    await entry.write(
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<worksheet xmlns="${MAIN_NS}" xmlns:r="${REL_NS}">` +
        `${fitToPage}<sheetViews><sheetView ` +
        `workbookViewId="0"${this.sheets.length === 1 ? ' tabSelected="1"' : ''}>${pane}` +
        `</sheetView></sheetViews>${colsXml(options.widths ?? [])}<sheetData>`,
    );
    return new SheetWriter(name, entry, this.styles, options.filterWidth ?? null, options.print === true);
  }

  async finish(): Promise<void> {
    const part = async (name: string, xml: string) => {
      const e = await this.zip.entry(name);
      await e.write(xml);
      await e.close();
    };
    const head = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';
    await part('xl/styles.xml', this.styles.xml());
    const quoted = (name: string) => `'${name.replace(/'/g, "''")}'`;
    const names = this.sheets
      .map(
        (s, i) =>
          (s.filterWidth
            ? `<definedName name="_xlnm._FilterDatabase" localSheetId="${i}" ` +
              `hidden="1">${quoted(s.name)}!$A$1:$${columnName(s.filterWidth - 1)}$1</definedName>`
            : '') +
          (s.printTitles
            ? `<definedName name="_xlnm.Print_Titles" localSheetId="${i}">${quoted(s.name)}!$1:$1</definedName>`
            : ''),
      )
      .join('');
    await part(
      'xl/workbook.xml',
      `${head}<workbook xmlns="${MAIN_NS}" xmlns:r="${REL_NS}"><bookViews><workbookView/></bookViews><sheets>` +
        this.sheets.map((s, i) => `<sheet name="${xmlText(s.name)}" sheetId="${i + 1}" r:id="rId${i + 1}"/>`).join('') +
        `</sheets>${names ? `<definedNames>${names}</definedNames>` : ''}</workbook>`,
    );
    await part(
      'xl/_rels/workbook.xml.rels',
      `${head}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
        this.sheets
          .map(
            (_, i) =>
              `<Relationship Id="rId${i + 1}" Type="${REL_NS}/worksheet" Target="worksheets/sheet${i + 1}.xml"/>`,
          )
          .join('') +
        `<Relationship Id="rId${this.sheets.length + 1}" Type="${REL_NS}/styles" Target="styles.xml"/></Relationships>`,
    );
    await part(
      '_rels/.rels',
      `${head}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship ` +
        `Id="rId1" Type="${REL_NS}/officeDocument" Target="xl/workbook.xml"/></Relationships>`,
    );
    await part(
      '[Content_Types].xml',
      `${head}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
        '<Default Extension="rels" ' +
        'ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ' +
        'ContentType="application/xml"/>' +
        '<Override PartName="/xl/workbook.xml" ' +
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>' +
        this.sheets
          .map(
            (_, i) =>
              `<Override PartName="/xl/worksheets/sheet${i + 1}.xml" ` +
              `ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>`,
          )
          .join('') +
        '<Override PartName="/xl/styles.xml" ' +
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/></Types>',
    );
    await this.zip.finish();
  }
}
