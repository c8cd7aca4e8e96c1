// Workbooks as people save them (issue 39): files Excel and LibreOffice open that dnc once crashed on or misread.
// Each is made part by part, as the producer that writes it does (openpyxl, XlsxWriter, current Excel).
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runDnc } from '../helpers/cli.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { readWorkbookIndependently } from '../helpers/xlsx-oracle.js';
import { readSheetRows } from '../../src/tables/xlsx-input.js';
import { loadNumberFormats, numberText } from '../../src/tables/xlsx-cells.js';
import { sandboxForFile } from '../batch/helpers.js';
import { text, writeHandMadeWorkbook } from './workbook-zip.js';
import { pythonWithOpenpyxl } from '../helpers/python.js';

const ctx = sandboxForFile();
let n = 0;
const file = (name: string) => path.join(ctx.dir, `${++n}-${name}`);
const row = (r: number, ...cells: string[]) => `<row r="${r}">${cells.join('')}</row>`;
const num = (ref: string, value: string, style?: number) =>
  `<c r="${ref}"${style ? ` s="${style}"` : ''}><v>${value}</v></c>`;

/**
 * Runs a batch of `book` to a CSV and returns its rows as Python's csv module reads them; it must exit 0 (or 7, "some
 * rows have no verdict", when `unfinished`).
 */
async function batchToCsv(book: string, ...args: string[]): Promise<{ rows: string[][]; stderr: string; out: string }> {
  const unfinished = args[0] === 'unfinished';
  if (unfinished) args.shift();
  const out = book.replace(/\.xlsx$/, `.${++n}.results.csv`);
  const r = await runDnc(['batch', book, '-o', out, '--country', 'US', ...args], { env: ctx.env, cwd: ctx.dir });
  expect(r.code, r.stderr).toBe(unfinished ? 7 : 0);
  return { rows: readCsvIndependently(out), stderr: r.stderr, out };
}

describe('a workbook whose styles are all General', () => {
  it('reads a number that is not whole as General shows it (it crashed with exit 1, --dry-run too)', async () => {
    const book = file('general-fraction.xlsx');
    const rows =
      row(1, text('A1', 'phone'), text('B1', 'score')) + row(2, text('A2', '+12125550123'), num('B2', '0.5'));
    await writeHandMadeWorkbook(book, { sheets: [{ name: 'Calls', rows }] });
    const dry = await runDnc(['batch', book, '--dry-run', '--json'], { env: ctx.env, cwd: ctx.dir });
    expect(dry.code, dry.stderr).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({ rows: 1 });
    const { rows: out } = await batchToCsv(book);
    expect(out[1]!.slice(0, 2)).toEqual(['+12125550123', '0.5']);
  });
});

const X15 = 'http://schemas.microsoft.com/office/spreadsheetml/2010/11/main';
/** What Excel 2013 and later write into every workbook part: a workbookPr of another namespace, in extLst. */
const EXCEL_EXT = `<extLst><ext uri="{140A7094-0E35-4892-8432-C4D2E57EDEB5}" xmlns:x15="${X15}"><x15:workbookPr chartTrackingRefBase="1"/></ext></extLst>`;
/** Styles with one cell style (s="1") in built-in format 14, the short date. */
const DATE_STYLE = '<cellXfs count="2"><xf numFmtId="0"/><xf numFmtId="14" applyNumberFormat="1"/></cellXfs>';

describe('the 1904 date system', () => {
  it('holds when Excel adds its own workbookPr in extLst (dates read 1,462 days early)', async () => {
    const book = file('1904.xlsx');
    const rows =
      row(1, text('A1', 'phone'), text('B1', 'since')) + row(2, text('A2', '+12125550123'), num('B2', '1', 1));
    await writeHandMadeWorkbook(book, {
      sheets: [{ name: 'Calls', rows }],
      styles: DATE_STYLE,
      before: '<workbookPr date1904="1" defaultThemeVersion="166925"/>',
      after: `<calcPr calcId="191029"/>${EXCEL_EXT}`,
    });
    const { rows: out } = await batchToCsv(book);
    // Serial 1 in the 1904 system: Excel shows 1/2/1904 (its TEXT(B2,"yyyy-mm-dd") says 1904-01-02).
    expect(out[1]!.slice(0, 2)).toEqual(['+12125550123', '1904-01-02']);
  });
});

describe('the parts of a workbook', () => {
  it('are found through the package relationships: a workbook part at wtf/workbook.xml is read', async () => {
    const book = file('wtf.xlsx');
    const rows = row(1, text('A1', 'phone')) + row(2, text('A2', '+12125550123'));
    await writeHandMadeWorkbook(book, { sheets: [{ name: 'Calls', rows }], folder: 'wtf', styles: DATE_STYLE });
    const { rows: out } = await batchToCsv(book);
    expect(out.map((r) => r[0])).toEqual(['phone', '+12125550123']);
  });
});

describe('the sheet a batch reads by default', () => {
  const sheets = () => [
    { name: 'Old', state: 'hidden', rows: row(1, text('A1', 'phone')) + row(2, text('A2', '+12125550100')) },
    { name: 'Calls', rows: row(1, text('A1', 'phone')) + row(2, text('A2', '+12125550101')) },
    { name: 'Archive', rows: row(1, text('A1', 'phone')) + row(2, text('A2', '+12125550102')) },
  ];

  it('is the first visible worksheet: a hidden first sheet is read only when --sheet names it, and said to be', async () => {
    const book = file('hidden-first.xlsx');
    await writeHandMadeWorkbook(book, { sheets: sheets() });
    const { rows, stderr } = await batchToCsv(book);
    expect(rows.map((r) => r[0])).toEqual(['phone', '+12125550101']);
    expect(stderr).toContain("sheet 'Calls' (phone column");
    const hidden = await batchToCsv(book, '--sheet', 'Old');
    expect(hidden.rows.map((r) => r[0])).toEqual(['phone', '+12125550100']);
    expect(hidden.stderr).toContain("sheet 'Old', a hidden sheet (phone column");
    const wrong = await runDnc(['batch', book, '--dry-run', '--sheet', 'Nope'], { env: ctx.env, cwd: ctx.dir });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('its worksheets are 1:Old (hidden), 2:Calls, 3:Archive');
  });

  it("is the first window's active tab, as Excel opens it", async () => {
    const book = file('active-tab.xlsx');
    const before = '<bookViews><workbookView activeTab="2"/><workbookView activeTab="1"/></bookViews>';
    await writeHandMadeWorkbook(book, { sheets: sheets(), before });
    const { rows, stderr } = await batchToCsv(book);
    expect(rows.map((r) => r[0])).toEqual(['phone', '+12125550102']);
    expect(stderr).toContain("sheet 'Archive'");
  });
});

describe('formulas without a usable cached value', () => {
  const formula = (ref: string, f: string, v?: string) =>
    `<c r="${ref}"><f>${f}</f>${v === undefined ? '<v></v>' : `<v>${v}</v>`}</c>`;
  const objects = (rows: string[][]) =>
    rows.slice(1).map((r) => Object.fromEntries(rows[0]!.map((h, i) => [h, r[i]!])));

  it('keep their row, not_checked with a reason naming the cell (openpyxl saves no value: the row vanished)', async () => {
    const book = file('openpyxl-formulas.xlsx');
    const rows =
      row(1, text('A1', 'phone'), text('B1', 'next')) +
      row(2, text('A2', '+12125550123'), num('B2', '7')) +
      row(3, formula('A3', 'A2'), formula('B3', 'B2+1'));
    // openpyxl sets fullCalcOnLoad on every workbook it writes, formulas or not.
    await writeHandMadeWorkbook(book, {
      sheets: [{ name: 'Calls', rows }],
      after: '<calcPr calcId="124519" fullCalcOnLoad="1"/>',
    });
    const { rows: out, stderr, out: written } = await batchToCsv(book, 'unfinished');
    const [first, second] = objects(out);
    expect(out).toHaveLength(3);
    expect(first).toMatchObject({ phone: '+12125550123', next: '7', dnc_phone_e164: '+12125550123' });
    expect(second).toMatchObject({
      phone: '',
      next: '',
      dnc_result: 'not_checked',
      dnc_error_code: 'formula_not_calculated',
    });
    expect(second!.dnc_error).toContain('cell A3 is a formula whose value was never calculated');
    expect(stderr).toContain("2 formula cell(s) of sheet 'Calls' (the first A3) have no calculated value");
    expect(stderr.match(/formula cell/g)).toHaveLength(1);
    const verified = await runDnc(['verify', written], { env: ctx.env, cwd: ctx.dir });
    // verify agrees with the row as written (not fit to dial: a row is unchecked).
    expect(verified.stdout).toContain('rows compared with the journal and the input');
    expect(verified.stdout).toContain('cell A3 is a formula whose value was never calculated');
  });

  it("are never XlsxWriter's placeholder 0 in a workbook never calculated; calculated values are read", async () => {
    const book = file('xlsxwriter-formulas.xlsx');
    const rows =
      row(1, text('A1', 'phone'), text('B1', 'area'), text('C1', 'local')) +
      row(2, formula('A2', '"+1"&amp;B2&amp;C2', '0'), num('B2', '212'), num('C2', '5550123'));
    await writeHandMadeWorkbook(book, {
      sheets: [{ name: 'Sheet1', rows }],
      after: '<calcPr calcId="124519" fullCalcOnLoad="1"/>',
    });
    const dry = await runDnc(['batch', book, '--dry-run', '--country', 'US'], { env: ctx.env, cwd: ctx.dir });
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stderr).toContain("1 formula cell(s) of sheet 'Sheet1' (the first A2) have no calculated value");
    expect(dry.stderr).toContain('open the workbook in Excel or LibreOffice and save it, or export it as CSV');
    const { rows: out } = await batchToCsv(book, 'unfinished');
    expect(objects(out)[0]).toMatchObject({
      phone: '',
      dnc_result: 'not_checked',
      dnc_error_code: 'formula_not_calculated',
    });
    // The same formula as Excel saves it (its cached value, no fullCalcOnLoad) is read: no warning.
    const saved = file('excel-formulas.xlsx');
    const calculated =
      row(1, text('A1', 'phone')) + row(2, `<c r="A2" t="str"><f>"+1"&amp;"2125550123"</f><v>+12125550123</v></c>`);
    await writeHandMadeWorkbook(saved, {
      sheets: [{ name: 'Sheet1', rows: calculated }],
      after: '<calcPr calcId="191029"/>',
    });
    const ok = await batchToCsv(saved);
    expect(objects(ok.rows)[0]).toMatchObject({ phone: '+12125550123', dnc_phone_e164: '+12125550123' });
    expect(ok.stderr).not.toContain('formula cell');
  });
});

describe('a results workbook', () => {
  it('keeps each input cell as the input shows it: built-in dates by id, text byte for byte, text formats', async () => {
    const book = file('display.xlsx');
    const styles =
      '<numFmts count="1"><numFmt numFmtId="164" formatCode="_(@_)"/></numFmts>' +
      '<cellXfs count="4"><xf numFmtId="0"/><xf numFmtId="14" applyNumberFormat="1"/>' +
      '<xf numFmtId="22" applyNumberFormat="1"/><xf numFmtId="164" applyNumberFormat="1"/></cellXfs>';
    const rows =
      row(1, text('A1', 'phone'), text('B1', 'note'), text('C1', 'day'), text('D1', 'at'), text('E1', 'memo')) +
      row(
        2,
        text('A2', '+12125550123'),
        // CR LF as Excel writes it, and text that only looks like an escape (_x005F_ escapes its underscore).
        `<c r="B2" t="inlineStr"><is><t>a_x000D_\nb _x005F_x0041_</t></is></c>`,
        num('C2', '45352', 1),
        num('D2', '45352.5', 2),
        `<c r="E2" s="3" t="inlineStr"><is><t>memo</t></is></c>`,
      );
    await writeHandMadeWorkbook(book, { sheets: [{ name: 'Calls', rows }], styles });
    const out = file('display.results.xlsx');
    const r = await runDnc(['batch', book, '-o', out, '--country', 'US'], { env: ctx.env, cwd: ctx.dir });
    expect(r.code, r.stderr).toBe(0);
    // The parts as written, read by Python's zipfile: what Excel will be given.
    const parts = JSON.parse(
      execFileSync(
        pythonWithOpenpyxl(),
        [
          '-c',
          'import json,sys,zipfile; z=zipfile.ZipFile(sys.argv[1]); print(json.dumps({n: z.read(n).decode() for n in z.namelist()}))',
          out,
        ],
        { encoding: 'utf8' },
      ),
    ) as Record<string, string>;
    const sheet = parts['xl/worksheets/sheet1.xml']!;
    const stylesXml = parts['xl/styles.xml']!;
    expect(sheet).toContain('<t xml:space="preserve">a_x000D_\nb _x005F_x0041_</t>');
    // Formats 14 and 22 are Excel's built-ins (3/1/2024, 3/1/2024 12:00), never the literal mm-dd-yy (03-01-24).
    expect(stylesXml).not.toContain('mm-dd-yy');
    const xfs = [...stylesXml.matchAll(/<xf numFmtId="(\d+)"/g)].map((m) => m[1]);
    expect(xfs).toEqual(expect.arrayContaining(['14', '22']));
    // The text cell keeps its accounting padding format.
    expect(stylesXml).toMatch(/<numFmt numFmtId="\d+" formatCode="_\(@_\)"\/>/);
    const [sheetRead] = readWorkbookIndependently(out);
    const cells = sheetRead!.rows[1]!;
    expect(cells.slice(0, 5).map((c) => [c.v, c.fmt])).toEqual([
      ['+12125550123', 'General'],
      // openpyxl does not decode ST_Xstring escapes: it shows them as stored.
      ['a_x000D_\nb _x005F_x0041_', 'General'],
      ['2024-03-01T00:00:00', 'mm-dd-yy'],
      ['2024-03-01T12:00:00', 'm/d/yy h:mm'],
      ['memo', '_(@_)'],
    ]);
    // dnc reads its own output back as the input: the same text, CR included.
    const back: unknown[][] = [];
    for await (const r of readSheetRows(out, 'Results')) back.push(r.cells.slice(0, 2).map((c) => c?.value));
    expect(back[1]).toEqual(['+12125550123', 'a\r\nb _x0041_']);
  });
});

describe('number formats as Excel shows them where numfmt does not', () => {
  // Excel's own TEXT(value, format) results (Apache POI's format-test workbooks store them).
  const cases: Array<[string, number, string]> = [
    ['[h]:m:s.000', -1.5, '-36:0:0.000'],
    ['[h]:mm:ss', -0.25, '-6:00:00'],
    ['[h]:mm:ss', 1.25, '30:00:00'],
    ['[<=-10]#" Wow"', -11, '-11 Wow'],
    ['[<=-10]#" Wow";0', -5, '-5'],
    ['0;(0)', -3, '(3)'],
    ['[<0]"neg"', -3, 'neg'],
    ['h:mm a/p', 0.75, '6:00 p'],
    ['h:mm a/p', 0.25, '6:00 a'],
    ['h:mm A/P', 0.75, '6:00 P'],
    ['"a/p "0', 5, 'a/p 5'],
    ['[>0]"pos";[<0]"neg";"zero"', 5, 'pos'],
    ['[>0]"pos";[<0]"neg";"zero"', -5, 'neg'],
    ['[>0]"pos";[<0]"neg";"zero"', 0, 'zero'],
    ['# ?/?', 3.14159, '3 1/7'],
    ['(###) ###-####', 2125550123, '(212) 555-0123'],
  ];
  it.each(cases)('%s on %d is %s', async (format, value, shown) => {
    await loadNumberFormats();
    expect(numberText(value, format)).toBe(shown);
  });
});
