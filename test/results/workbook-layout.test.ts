// How a results workbook reads in a spreadsheet and on paper: the input's column widths kept, dnc's columns sized,
// dnc_credits a number (a SUM of it adds up), the header frozen, one page wide when printed. Read with openpyxl.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runDnc } from '../helpers/cli.js';
import { pythonWithOpenpyxl } from '../helpers/xlsx-oracle.js';
import { sandboxForFile } from '../batch/helpers.js';
import { text, writeHandMadeWorkbook } from '../tables/workbook-zip.js';

const ctx = sandboxForFile();

const LAYOUT = String.raw`
import json, sys, openpyxl
from openpyxl.utils import get_column_letter
wb = openpyxl.load_workbook(open(sys.argv[1], 'rb'))
ws = wb['Results']
header = [c.value for c in ws[1]]
widths = {h: ws.column_dimensions[get_column_letter(i + 1)].width for i, h in enumerate(header)}
credits = header.index('dnc_credits') + 1
json.dump({
  'widths': widths,
  'credits': [(ws.cell(r, credits).value, ws.cell(r, credits).data_type) for r in range(2, ws.max_row + 1)],
  'freeze': ws.freeze_panes,
  'fitToPage': ws.sheet_properties.pageSetUpPr.fitToPage if ws.sheet_properties.pageSetUpPr else None,
  'fitToWidth': ws.page_setup.fitToWidth, 'fitToHeight': ws.page_setup.fitToHeight,
  'orientation': ws.page_setup.orientation,
  'printTitles': ws.print_title_rows,
}, sys.stdout)
`;

interface Layout {
  widths: Record<string, number>;
  credits: Array<[number | string, string]>;
  freeze: string | null;
  fitToPage: boolean | null;
  fitToWidth: number;
  fitToHeight: number;
  orientation: string;
  printTitles: string | null;
}

describe('a results workbook', () => {
  it("keeps the input's widths, sizes dnc's columns, writes credits as numbers, and prints one page wide", async () => {
    const book = path.join(ctx.dir, 'calls.xlsx');
    const rows =
      '<row r="1">' +
      text('A1', 'name') +
      text('B1', 'phone') +
      text('C1', 'notes') +
      '</row>' +
      '<row r="2">' +
      text('A2', 'Ann') +
      '<c r="B2"><v>12025550123</v></c>' +
      text('C2', 'x') +
      '</row>' +
      '<row r="3">' +
      text('A3', 'Bob') +
      '<c r="B3"><v>12025550124</v></c>' +
      text('C3', 'y') +
      '</row>';
    // Column A 30 characters wide, C 45; B has no width of its own (a numeric phone column).
    const cols = '<col min="1" max="1" width="30" customWidth="1"/><col min="3" max="3" width="45" customWidth="1"/>';
    await writeHandMadeWorkbook(book, { sheets: [{ name: 'Calls', rows, cols }] });
    const out = path.join(ctx.dir, 'calls.results.xlsx');
    const r = await runDnc(['batch', book, '-o', out, '--country', 'US'], { env: ctx.env, cwd: ctx.dir });
    expect(r.code, r.stderr).toBe(0);
    const got = JSON.parse(execFileSync(pythonWithOpenpyxl(), ['-c', LAYOUT, out], { encoding: 'utf8' })) as Layout;
    expect(got.widths.name).toBe(30);
    expect(got.widths.notes).toBe(45);
    // A numeric phone cell of 11 digits shows ### in a column of Excel's default width (8.43).
    expect(got.widths.phone).toBeGreaterThanOrEqual(16);
    expect(got.widths.dnc_list_source).toBeGreaterThanOrEqual(40);
    expect(got.widths.dnc_correlation_id).toBeGreaterThanOrEqual(36);
    expect(got.widths.dnc_checked_at).toBeGreaterThanOrEqual(20);
    for (const [name, width] of Object.entries(got.widths)) expect(width, name).toBeGreaterThanOrEqual(10);
    // Numbers, so that a spreadsheet's SUM adds them up (it gave 0 on text).
    expect(got.credits).toEqual([
      [1, 'n'],
      [1, 'n'],
    ]);
    expect(got.freeze).toBe('A2');
    expect([got.fitToPage, got.fitToWidth, got.fitToHeight, got.orientation]).toEqual([true, 1, 0, 'landscape']);
    expect(got.printTitles).toBe('$1:$1');
    // verify reads the workbook back: its numbers read as the digits the journal holds.
    const v = await runDnc(['verify', out], { env: ctx.env, cwd: ctx.dir });
    expect(v.code, v.stdout + v.stderr).toBe(0);
  });
});
