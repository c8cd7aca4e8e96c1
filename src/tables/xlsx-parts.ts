// The small parts of a workbook beside its sheets, read as they stream in through the scanner of xlsx-xml.ts: the
// shared strings, the cell styles' number formats, a sheet's column widths.
import { builtInFormat } from './xlsx-cells.js';
import {
  attributes,
  attributeValue,
  decodeEscapes,
  decodeText,
  MAX_COLUMNS,
  type StyleLookup,
  type XmlHandler,
} from './xlsx-xml.js';

/**
 * Reads every shared string (`<si>`) of xl/sharedStrings.xml, in order: its text runs joined, phonetic runs left out.
 */
export class SharedStringsHandler implements XmlHandler {
  private current = '';
  private run = '';
  private collecting = false;
  private phonetic = false;
  constructor(
    private readonly add: (text: string) => void,
    /** Told the count the table declares (`<sst uniqueCount>`), before the first string. */
    private readonly declared?: (count: number) => void,
  ) {}
  open(name: string, src: string, from: number, to: number): void {
    if (name === 't') {
      this.collecting = !this.phonetic;
      this.run = '';
    } else if (name === 'sst' && this.declared) {
      const a = attributes(src, from, to);
      const count = Number.parseInt(a.get('uniqueCount') ?? a.get('count') ?? '', 10);
      if (count > 0) this.declared(count);
    } else if (name === 'si') this.current = '';
    else if (name === 'rPh') this.phonetic = true;
  }
  close(name: string): void {
    if (name === 't') {
      // Each run is one ST_Xstring: its escapes are its own.
      if (this.collecting) this.current += decodeEscapes(this.run);
      this.collecting = false;
    } else if (name === 'si') this.add(this.current);
    else if (name === 'rPh') this.phonetic = false;
  }
  text(raw: string): void {
    if (this.collecting) this.run += decodeText(raw);
  }
  cdata(text: string): void {
    if (this.collecting) this.run += text;
  }
}

/**
 * Reads xl/styles.xml for what a cell's style says of its number: the custom formats (`<numFmts>`) and, for each
 * cell style (`<cellXfs>`, in order: a cell's `s` is its index), the format it uses, custom or built in.
 */
export class StylesHandler implements XmlHandler {
  private readonly custom = new Map<number, string>();
  private readonly formatIds: number[] = [];
  private inCellXfs = false;
  private inNumFmts = false;
  open(name: string, src: string, from: number, to: number): void {
    // A differential format (`<dxf>`, for conditional formatting) has a numFmt of its own: not a cell style's.
    if (name === 'numFmts') this.inNumFmts = true;
    else if (name === 'numFmt' && this.inNumFmts) {
      const id = Number.parseInt(attributeValue(src, from, to, 'numFmtId') ?? '', 10);
      const code = attributeValue(src, from, to, 'formatCode');
      if (Number.isInteger(id) && code !== undefined) this.custom.set(id, code);
    } else if (name === 'cellXfs') this.inCellXfs = true;
    else if (name === 'xf' && this.inCellXfs) {
      this.formatIds.push(Number.parseInt(attributeValue(src, from, to, 'numFmtId') ?? '0', 10) || 0);
    }
  }
  close(name: string): void {
    if (name === 'cellXfs') this.inCellXfs = false;
    else if (name === 'numFmts') this.inNumFmts = false;
  }
  text(): void {}
  cdata(): void {}

  /** Whether any cell style has a number format other than General. */
  formatsNumbers(): boolean {
    return this.formatIds.some((id) => id !== 0) || this.custom.has(0);
  }

  /**
   * A style's number format: a format the workbook defines under an id is that id's, built-in ids 0 (General) to 49
   * too (`<numFmt numFmtId="0" formatCode="0.000"/>`: Excel, LibreOffice and openpyxl show 1234.500); else the
   * built-in; none for General. null for no such style.
   */
  lookup(): StyleLookup {
    const numFmt = (id: number) => this.custom.get(id) ?? (id === 0 ? undefined : builtInFormat(id));
    const styles = this.formatIds.map((id) => ({ numFmt: numFmt(id) }));
    return (styleId) => styles[styleId] ?? null;
  }
}

/**
 * A worksheet's column widths (`<cols><col min max width>`, in characters of the default font), read up to
 * `<sheetData>`, where they end: `done` is then set and nothing more is read.
 */
export class ColumnWidthsHandler implements XmlHandler {
  /** By 0-based column. */
  readonly widths: Array<number | undefined> = [];
  done = false;
  open(name: string, src: string, from: number, to: number): void {
    if (this.done) return;
    if (name === 'sheetData') this.done = true;
    else if (name === 'col') {
      const min = Number(attributeValue(src, from, to, 'min'));
      const max = Math.min(Number(attributeValue(src, from, to, 'max')), MAX_COLUMNS);
      const width = Number(attributeValue(src, from, to, 'width'));
      // A range as wide as the sheet (`min="1" max="16384"`, LibreOffice's default) sizes nothing dnc writes.
      if (!(min >= 1 && max >= min && width > 0) || max - min > 1024) return;
      for (let c = min; c <= max; c++) this.widths[c - 1] = width;
    }
  }
  close(): void {}
  text(): void {}
  cdata(): void {}
}
