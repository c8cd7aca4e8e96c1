// Which kind of file a call list is: CSV, a workbook dnc reads (.xlsx, .xlsm), or another spreadsheet, said to be
// what it is (each was read as CSV and refused for "a NUL byte").
import { copyFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runDnc } from '../helpers/cli.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { lookedUp, sandboxForFile } from '../batch/helpers.js';
import { text, writeHandMadeWorkbook, zipParts } from './workbook-zip.js';

const ctx = sandboxForFile();
let n = 0;
const file = (name: string) => path.join(ctx.dir, `${++n}-${name}`);
const row = (r: number, ...cells: string[]) => `<row r="${r}">${cells.join('')}</row>`;
/** The signature of an OLE2 compound file: what an .xls (or a password-protected workbook) starts with. */
const OLE2 = Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1, ...new Array(504).fill(0)]);

async function handBook(name: string): Promise<string> {
  const book = file(name);
  const rows = row(1, text('A1', 'name'), text('B1', 'phone')) + row(2, text('A2', 'Ann'), text('B2', '+12025550123'));
  await writeHandMadeWorkbook(book, { sheets: [{ name: 'Calls', rows }] });
  return book;
}

async function refused(input: string, what: string, hint: string): Promise<void> {
  const r = await runDnc(['batch', input, '-o', `${input}.results.csv`], { env: ctx.env, cwd: ctx.dir });
  expect(r.code, r.stderr).toBe(3);
  expect(r.stderr).toContain('[E_INPUT_FORMAT]');
  expect(r.stderr).toContain(`${input} is ${what}`);
  expect(r.stderr).toContain(hint);
  expect(r.stderr).not.toContain('NUL');
  expect(lookedUp(ctx.sb)).toEqual([]);
}

describe('the kind of a call list', () => {
  it('.xlsm is read as the workbook it is (macros are never run)', async () => {
    const book = (await handBook('calls.xlsx')).replace(/\.xlsx$/, '.xlsm');
    copyFileSync(book.replace(/\.xlsm$/, '.xlsx'), book);
    const out = `${book}.results.csv`;
    const r = await runDnc(['batch', book, '-o', out], { env: ctx.env, cwd: ctx.dir });
    expect(r.code, r.stderr).toBe(0);
    const rows = readCsvIndependently(out);
    expect(rows[1]!.slice(0, 3)).toEqual(['Ann', '+12025550123', '+12025550123']);
  });

  it('.xls, .xlsb and .ods are refused (exit 3) saying what they are and how to save them', async () => {
    const xls = file('calls.xls');
    writeFileSync(xls, OLE2);
    await refused(xls, 'an Excel 97-2003 workbook', 'Save As > Excel Workbook (.xlsx)');
    const xlsb = file('calls.xlsb');
    writeFileSync(xlsb, await zipParts({ '[Content_Types].xml': '<Types/>', 'xl/workbook.bin': 'binary' }));
    await refused(xlsb, 'an Excel binary workbook (.xlsb)', 'Save As > Excel Workbook (.xlsx)');
    const ods = file('calls.ods');
    writeFileSync(ods, await zipParts({ mimetype: 'application/vnd.oasis.opendocument.spreadsheet' }));
    await refused(ods, 'an OpenDocument spreadsheet (.ods)', 'in LibreOffice: File > Save As > Excel 2007-365 (.xlsx)');
  });

  it('a workbook named .csv is said to be one, not CSV with a NUL byte', async () => {
    const csv = file('calls.csv');
    copyFileSync(await handBook('real.xlsx'), csv);
    await refused(csv, 'a zip archive', 'read when its name ends in .xlsx');
    const old = file('old.csv');
    writeFileSync(old, OLE2);
    await refused(old, 'an Excel 97-2003 workbook or a password-protected one', 'Save As > Excel Workbook (.xlsx)');
  });
});
