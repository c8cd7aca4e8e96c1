// dnc's own workbook reader (src/batch/xlsx-xml.ts, zip-file.ts) against two others on generated workbooks:
// exceljs's streaming WorkbookReader as dnc used it before (same values and number formats), and openpyxl
// (same values). Property style: random sheets from a printed seed (XLSX_SEED=N to repeat one), written by
// exceljs (shared strings), exceljs's streaming writer, openpyxl, and by hand (XML that other writers produce).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import ExcelJS from 'exceljs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadNumberFormats, plainValue, type CellValue } from '../../src/tables/xlsx-cells.js';
import { readSheetRows } from '../../src/tables/xlsx-input.js';
import { decodeText, XmlScanner, type XmlHandler } from '../../src/tables/xlsx-xml.js';
import { seededRandom } from '../../src/sandbox/clock.js';
import { pythonWithOpenpyxl, readCellValuesIndependently } from '../helpers/xlsx-oracle.js';

// numfmt is loaded by the reader when a workbook formats numbers; these tests call the formatting directly.
beforeAll(loadNumberFormats);

const dir = mkdtempSync(path.join(tmpdir(), 'dnc-xlsx-reader-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SEED = Number(process.env.XLSX_SEED ?? Date.now() % 1_000_000);
// Printed so that a failure can be replayed.
console.log(`xlsx-reader: XLSX_SEED=${SEED}`);

/** A comparable form of a cell: kind and value (dates as ISO, numbers exact). */
type Plain = [string, string | number | boolean] | null;
function plain(v: CellValue | undefined): Plain {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return ['s', v];
  if (typeof v === 'number') return ['n', v];
  if (typeof v === 'boolean') return ['b', v];
  if (v instanceof Date) return ['d', v.toISOString()];
  return ['e', v.error];
}

interface ReadCell {
  row: number;
  col: number;
  value: Plain;
  numFmt?: string | undefined;
}

async function readWithDnc(file: string): Promise<ReadCell[]> {
  const out: ReadCell[] = [];
  for await (const row of readSheetRows(file)) {
    row.cells.forEach((c, i) => {
      if (c && c.value !== null) out.push({ row: row.number, col: i + 1, value: plain(c.value), numFmt: c.numFmt });
    });
  }
  return out;
}

/** What dnc read before this reader: exceljs's streaming reader, each cell through plainValue. */
async function readWithExceljs(file: string): Promise<ReadCell[]> {
  // exceljs's whole-file reader, not its streaming one: the streaming reader spools a sheet stored before the styles
  // and, on a loaded machine, now and then emitted its rows before the number formats were read (an oracle race).
  const book = new ExcelJS.Workbook();
  await book.xlsx.readFile(file);
  const out: ReadCell[] = [];
  book.worksheets[0]!.eachRow({ includeEmpty: false }, (row) => {
    row.eachCell({ includeEmpty: false }, (cell, col) => {
      // The whole-file reader shows a merged range's value in every cell it covers; the file holds it in the first.
      if (cell.isMerged && cell.master !== cell) return;
      const value = plainValue(cell.value, cell.numFmt);
      if (value !== null) out.push({ row: row.number, col, value: plain(value), numFmt: cell.numFmt });
    });
  });
  return out;
}

function readWithOpenpyxl(file: string): Array<[number, number, string, string | number | boolean]> {
  return readCellValuesIndependently([file])[file]![0]!.cells;
}

const CHARS = ['a', 'Z', ' ', '0', '7', '+', '&', '<', '>', '"', "'", 'é', 'ß', '中', '😀', '\n', '\t', '=', '-', ';'];
function randomText(r: () => number): string {
  const n = 1 + Math.floor(r() * 12);
  let s = '';
  for (let i = 0; i < n; i++) s += CHARS[Math.floor(r() * CHARS.length)];
  // Leading and trailing spaces are kept by the writers; a text that is only spaces too.
  return s;
}

const FORMATS = ['0000000', '#,##0', '0.00', '(000) 000-0000', '@', '0.00E+00', 'General', '00000000000'];
const DATE_FORMATS = ['yyyy-mm-dd', 'dd/mm/yyyy hh:mm', 'mm-dd-yy'];

/** One random cell for exceljs: a value and, maybe, a number format. */
function randomCell(r: () => number): { value: ExcelJS.CellValue; numFmt?: string } | null {
  const k = Math.floor(r() * 11);
  switch (k) {
    case 0:
      return null;
    case 1:
    case 2:
      return { value: randomText(r) };
    case 3:
      return {
        value: Math.floor(r() * 1e10) * (r() < 0.2 ? -1 : 1),
        numFmt: FORMATS[Math.floor(r() * FORMATS.length)]!,
      };
    case 4:
      return { value: Math.round(r() * 1e6) / 1000 };
    case 5:
      return { value: 447912345600 + Math.floor(r() * 1e4) * 1e5 + Math.floor(r() * 1e5) * 10_000 };
    case 6:
      return {
        value: new Date(
          Date.UTC(
            1990 + Math.floor(r() * 40),
            Math.floor(r() * 12),
            1 + Math.floor(r() * 28),
            r() < 0.5 ? 0 : Math.floor(r() * 24),
            r() < 0.5 ? 0 : Math.floor(r() * 60),
          ),
        ),
        numFmt: DATE_FORMATS[Math.floor(r() * DATE_FORMATS.length)]!,
      };
    case 7:
      return { value: r() < 0.5 };
    case 8:
      return {
        value:
          r() < 0.5
            ? { formula: 'A1*2', result: Math.floor(r() * 1000) }
            : { formula: 'A1&"x"', result: randomText(r) },
      };
    case 9:
      return { value: { richText: [{ text: randomText(r), font: { bold: true } }, { text: randomText(r) }] } };
    default:
      return { value: { error: '#N/A' } as ExcelJS.CellErrorValue };
  }
}

interface Sheet {
  rows: Array<{ row: number; cells: Array<{ col: number; value: ExcelJS.CellValue; numFmt?: string }> }>;
  merges: string[];
}

function randomSheet(r: () => number): Sheet {
  const rows: Sheet['rows'] = [];
  const width = 1 + Math.floor(r() * 7);
  let rowNumber = 0;
  const count = Math.floor(r() * 40);
  for (let i = 0; i < count; i++) {
    // Empty rows between rows.
    rowNumber += r() < 0.15 ? 2 + Math.floor(r() * 3) : 1;
    const cells: Sheet['rows'][number]['cells'] = [];
    for (let c = 1; c <= width; c++) {
      const cell = randomCell(r);
      if (cell) cells.push({ col: c, ...cell });
    }
    rows.push({ row: rowNumber, cells });
  }
  const merges: string[] = [];
  if (rowNumber > 2 && width > 1 && r() < 0.7) merges.push(`A${rowNumber + 2}:B${rowNumber + 3}`);
  return { rows, merges };
}

async function writeWithExceljs(sheet: Sheet, file: string): Promise<void> {
  const wb = new ExcelJS.Workbook();
  const ws = wb.addWorksheet('Data');
  for (const row of sheet.rows) {
    for (const cell of row.cells) {
      const c = ws.getCell(row.row, cell.col);
      c.value = cell.value;
      if (cell.numFmt) c.numFmt = cell.numFmt;
    }
  }
  for (const m of sheet.merges) {
    ws.getCell(m.split(':')[0]!).value = 'merged';
    ws.mergeCells(m);
  }
  wb.addWorksheet('Other').addRow(['not read']);
  await wb.xlsx.writeFile(file);
}

async function writeWithExceljsStream(sheet: Sheet, file: string, useSharedStrings: boolean): Promise<void> {
  const wb = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: file, useStyles: true, useSharedStrings });
  const ws = wb.addWorksheet('Data');
  for (const row of sheet.rows) {
    const r = ws.getRow(row.row);
    for (const cell of row.cells) {
      const c = r.getCell(cell.col);
      c.value = cell.value;
      if (cell.numFmt) c.numFmt = cell.numFmt;
    }
    r.commit();
  }
  ws.commit();
  await wb.commit();
}

/** The same cells written by openpyxl (shared strings, its own styles and date system handling). */
function writeWithOpenpyxl(sheet: Sheet, file: string): void {
  const cells = sheet.rows.flatMap((row) =>
    row.cells.map((c) => {
      const v = c.value as unknown;
      let value: unknown = v;
      if (v instanceof Date) value = { date: v.toISOString() };
      else if (v && typeof v === 'object' && 'richText' in v)
        value = (v as ExcelJS.CellRichTextValue).richText.map((t) => t.text).join('');
      else if (v && typeof v === 'object' && 'formula' in v) value = (v as ExcelJS.CellFormulaValue).result;
      else if (v && typeof v === 'object' && 'error' in v) value = null;
      return [row.row, c.col, value, c.numFmt ?? null];
    }),
  );
  const script = String.raw`
import json, sys, datetime, openpyxl
wb = openpyxl.Workbook(); ws = wb.active; ws.title = 'Data'
for r, c, v, fmt in json.loads(sys.stdin.read()):
    if v is None: continue
    if isinstance(v, dict): v = datetime.datetime.fromisoformat(v['date'].replace('Z', ''))
    cell = ws.cell(row=r, column=c, value=v)
    if fmt: cell.number_format = fmt
wb.save(sys.argv[1])
`;
  execFileSync(pythonWithOpenpyxl(), ['-c', script, file], { input: JSON.stringify(cells) });
}

const sorted = (cells: ReadCell[]) => [...cells].sort((a, b) => a.row - b.row || a.col - b.col);

describe('the workbook reader, against exceljs and openpyxl (seed printed above)', () => {
  it('reads what exceljs reads (values and number formats) and what openpyxl reads (values), on random workbooks', async () => {
    const r = seededRandom(SEED);
    for (let round = 0; round < 3; round++) {
      const sheet = randomSheet(r);
      // exceljs reads only the last run of an inline rich text (dnc and openpyxl read them all): compared with openpyxl alone.
      const rich = new Set(
        sheet.rows.flatMap((row) =>
          row.cells
            .filter((c) => c.value && typeof c.value === 'object' && 'richText' in c.value)
            .map((c) => `${row.row}:${c.col}`),
        ),
      );
      const files: Array<[string, 'all' | 'not rich' | 'none']> = [];
      const a = path.join(dir, `${SEED}-${round}-exceljs.xlsx`);
      await writeWithExceljs(sheet, a);
      files.push([a, 'all']);
      const b = path.join(dir, `${SEED}-${round}-stream-inline.xlsx`);
      await writeWithExceljsStream(sheet, b, false);
      files.push([b, 'not rich']);
      const c = path.join(dir, `${SEED}-${round}-stream-shared.xlsx`);
      await writeWithExceljsStream(sheet, c, true);
      files.push([c, 'all']);
      const d = path.join(dir, `${SEED}-${round}-openpyxl.xlsx`);
      writeWithOpenpyxl(sheet, d);
      files.push([d, 'all']);
      for (const [file, asExceljs] of files) {
        const ours = sorted(await readWithDnc(file));
        const where = `${path.basename(file)} (XLSX_SEED=${SEED})`;
        const keep = (x: ReadCell) => asExceljs === 'all' || !rich.has(`${x.row}:${x.col}`);
        expect(ours.filter(keep), where).toEqual(sorted(await readWithExceljs(file)).filter(keep));
        const oracle = readWithOpenpyxl(file).map(([row, col, k, v]) => ({ row, col, value: [k, v] }));
        // openpyxl reads a date format's number as a date by its own rules, and a whole float as a float: compare kinds and values.
        expect(
          ours.map((x) => ({ row: x.row, col: x.col, value: x.value })),
          where,
        ).toEqual(oracle);
      }
    }
  }, 120_000);

  it('reads XML other writers produce: inline rich text, phonetic runs, CDATA, references, prefixes, rows and cells without r', async () => {
    const base = path.join(dir, 'base.xlsx');
    const wb = new ExcelJS.Workbook();
    wb.addWorksheet('Data').addRow(['x']);
    await wb.xlsx.writeFile(base);
    const sheetXml = [
      '<?xml version="1.0" encoding="UTF-8"?>',
      '<!-- written by hand -->',
      '<x:worksheet xmlns:x="http://schemas.openxmlformats.org/spreadsheetml/2006/main">',
      '<x:sheetData>',
      '  <x:row r="1">',
      '    <x:c r="A1" t="inlineStr"><x:is><x:r><x:rPr><x:b/></x:rPr><x:t>+44 </x:t></x:r><x:r><x:t xml:space="preserve">7912 345601</x:t></x:r></x:is></x:c>',
      '    <x:c r="B1" t="inlineStr"><x:is><x:t>漢字</x:t><x:rPh sb="0" eb="2"><x:t>かんじ</x:t></x:rPh></x:is></x:c>',
      '    <x:c r="C1" t="inlineStr"><x:is><x:t><![CDATA[a<b & c]]></x:t></x:is></x:c>',
      '    <x:c r="D1" t="inlineStr"><x:is><x:t>&#43;&#x34;4 &amp; &lt;co&gt; &quot;q&quot; &apos;</x:t></x:is></x:c>',
      '  </x:row>',
      '  <x:row>',
      '    <x:c t="inlineStr"><x:is><x:t>no r</x:t></x:is></x:c>',
      '    <x:c><x:v>42</x:v></x:c>',
      '    <x:c t="b"><x:v>1</x:v></x:c>',
      '    <x:c t="e"><x:v>#DIV/0!</x:v></x:c>',
      '  </x:row>',
      '  <x:row r="5"><x:c r="C5" t="str"><x:f>A1&amp;""</x:f><x:v>+447912345601</x:v></x:c><x:c r="D5" t="b"><x:f>TRUE()</x:f><x:v>1</x:v></x:c><x:c r="E5" t="e"><x:f>NA()</x:f><x:v>#N/A</x:v></x:c><x:c r="F5"><x:f>1+1</x:f></x:c></x:row>',
      '</x:sheetData>',
      '<x:mergeCells count="1"><x:mergeCell ref="A7:B7"/></x:mergeCells>',
      '</x:worksheet>',
    ].join('\n');
    const odd = path.join(dir, 'odd.xlsx');
    const script = [
      'import sys, zipfile',
      'with zipfile.ZipFile(sys.argv[1]) as a, zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_DEFLATED) as b:',
      '    for i in a.infolist(): b.writestr(i.filename, sys.stdin.read() if i.filename == "xl/worksheets/sheet1.xml" else a.read(i.filename))',
    ].join('\n');
    execFileSync(pythonWithOpenpyxl(), ['-c', script, base, odd], { input: sheetXml });
    const ours = await readWithDnc(odd);
    expect(ours.map((c) => [c.row, c.col, c.value])).toEqual([
      [1, 1, ['s', '+44 7912 345601']],
      [1, 2, ['s', '漢字']],
      [1, 3, ['s', 'a<b & c']],
      [1, 4, ['s', '+44 & <co> "q" \'']],
      [2, 1, ['s', 'no r']],
      [2, 2, ['n', 42]],
      [2, 3, ['b', true]],
      [2, 4, ['e', '#DIV/0!']],
      [5, 3, ['s', '+447912345601']],
      [5, 4, ['b', true]],
      [5, 5, ['e', '#N/A']],
    ]);
    // openpyxl reads the same values (a formula with no cached value is no value to either).
    expect(readWithOpenpyxl(odd).map(([row, col, k, v]) => [row, col, [k, v]])).toEqual(
      ours.map((c) => [c.row, c.col, c.value]),
    );
  });
});

describe('the XML scanner', () => {
  const xml =
    '<?xml version="1.0"?><!-- c --><x:a k="1&amp;2" g=\'a>b\'><b/><t xml:space="preserve">A&lt;B &#x1F600;&#233;</t><![CDATA[<raw>&amp;]]>\r\n<c r="A1"><v>12</v></c></x:a>';
  function events(chunks: string[]): string[] {
    const out: string[] = [];
    const h: XmlHandler = {
      open: (name, src, from, to) => out.push(`<${name}${src.slice(from, to)}>`),
      close: (name) => out.push(`</${name}>`),
      text: (raw) => out.push(`text:${decodeText(raw)}`),
      cdata: (text) => out.push(`cdata:${text}`),
    };
    const scanner = new XmlScanner(h);
    for (const c of chunks) scanner.write(c);
    scanner.end();
    // Adjacent texts are one text however the chunks fell.
    return out.reduce<string[]>(
      (acc, e) =>
        e.startsWith('text:') && acc.at(-1)?.startsWith('text:')
          ? [...acc.slice(0, -1), acc.at(-1)! + e.slice(5)]
          : [...acc, e],
      [],
    );
  }

  it('gives the same tags and text however the XML is cut into chunks (inside tags, entities, CDATA)', () => {
    const whole = events([xml]);
    expect(whole).toEqual([
      '<a k="1&amp;2" g=\'a>b\'>',
      '<b>',
      '</b>',
      '<t xml:space="preserve">',
      'text:A<B 😀é',
      '</t>',
      'cdata:<raw>&amp;',
      'text:\n',
      '<c r="A1">',
      '<v>',
      'text:12',
      '</v>',
      '</c>',
      '</a>',
    ]);
    for (let i = 1; i < xml.length; i++) expect(events([xml.slice(0, i), xml.slice(i)]), `cut at ${i}`).toEqual(whole);
    expect(events([...xml])).toEqual(whole);
  });

  it('refuses a DTD, an undefined entity, a document cut inside a tag, and a tag that never ends', () => {
    expect(() => events(['<!DOCTYPE x [<!ENTITY a "b">]><x/>'])).toThrow(/document type declaration/);
    expect(() => events(['<t>&lol;</t>'])).toThrow(/undefined entity/);
    expect(() => events(['<a><b x="1"'])).toThrow(/ends inside a tag/);
    const scanner = new XmlScanner({ open() {}, close() {}, text() {}, cdata() {} });
    scanner.write('<a x="');
    expect(() => {
      for (let i = 0; i < 40; i++) scanner.write('y'.repeat(256 * 1024));
    }).toThrow(/longer than 4 Mi characters/);
  });
});

describe('a workbook whose zip directory lies', () => {
  it('reads the same cells when the directory claims a 4 GB shared-strings part (no buffer sized from it)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'dnc-xlsx-lie-'));
    try {
      const honest = path.join(dir, 'honest.xlsx');
      const wb = new ExcelJS.Workbook();
      const ws = wb.addWorksheet('S');
      ws.addRow(['name', 'phone']);
      for (let i = 0; i < 5; i++) ws.addRow([`n${i}`, `+1202555${String(100 + i).padStart(4, '0')}`]);
      await wb.xlsx.writeFile(honest);
      // The central directory's uncompressed size of xl/sharedStrings.xml becomes 0xFFFFFFF0.
      const bytes = readFileSync(honest);
      let patched = 0;
      for (let p = bytes.indexOf('PK\x01\x02', 0, 'latin1'); p >= 0; p = bytes.indexOf('PK\x01\x02', p + 4, 'latin1')) {
        const nameLength = bytes.readUInt16LE(p + 28);
        if (bytes.toString('latin1', p + 46, p + 46 + nameLength) === 'xl/sharedStrings.xml') {
          bytes.writeUInt32LE(0xfffffff0, p + 24);
          patched++;
        }
      }
      expect(patched).toBe(1);
      const lying = path.join(dir, 'lying.xlsx');
      writeFileSync(lying, bytes);
      const cells = async (file: string) => {
        const out: unknown[] = [];
        for await (const row of readSheetRows(file)) out.push(row.cells.map((c) => c?.value));
        return out;
      };
      const expected = await cells(honest);
      expect(expected[1]).toEqual(['n0', '+12025550100']);
      expect(await cells(lying)).toEqual(expected);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
