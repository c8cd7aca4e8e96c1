// Workbooks as people save them (issue 39): files Excel and LibreOffice open that dnc once crashed on or misread.
// Each is made part by part, as the producer that writes it does (openpyxl, XlsxWriter, current Excel).
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runDnc } from '../helpers/cli.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { sandboxForFile } from './helpers.js';
import { text, writeHandMadeWorkbook } from './workbook-zip.js';

const ctx = sandboxForFile();
let n = 0;
const file = (name: string) => path.join(ctx.dir, `${++n}-${name}`);
const row = (r: number, ...cells: string[]) => `<row r="${r}">${cells.join('')}</row>`;
const num = (ref: string, value: string, style?: number) =>
  `<c r="${ref}"${style ? ` s="${style}"` : ''}><v>${value}</v></c>`;

/** Runs a batch of `book` to a CSV and returns its rows as Python's csv module reads them. */
async function batchToCsv(book: string, ...args: string[]): Promise<{ rows: string[][]; stderr: string }> {
  const out = book.replace(/\.xlsx$/, `.${++n}.results.csv`);
  const r = await runDnc(['batch', book, '-o', out, '--country', 'US', ...args], { env: ctx.env, cwd: ctx.dir });
  expect(r.code, r.stderr).toBe(0);
  return { rows: readCsvIndependently(out), stderr: r.stderr };
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
