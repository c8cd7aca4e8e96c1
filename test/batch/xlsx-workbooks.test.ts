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
  const out = book.replace(/\.xlsx$/, '.results.csv');
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
