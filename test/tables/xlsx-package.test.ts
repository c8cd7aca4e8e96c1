// Packages no spreadsheet writes, made part by part: what dnc refuses to read rather than guess at.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runDnc } from '../helpers/cli.js';
import { lookedUp, sandboxForFile, sha256 } from '../batch/helpers.js';
import { text, writeHandMadeWorkbook } from './workbook-zip.js';

const ctx = sandboxForFile();
let n = 0;
const file = (name: string) => path.join(ctx.dir, `${++n}-${name}`);
const row = (r: number, ...cells: string[]) => `<row r="${r}">${cells.join('')}</row>`;
const MAIN = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';

describe('a package with two parts of one name up to case', () => {
  it('is refused (exit 3) naming both parts, nothing sent: it was read by the part no spreadsheet shows', async () => {
    // As Apache POI's duplicate-filename-case-insensitive.xlsx: xl/worksheets/sheet1.xml and xl/worksheets/Sheet1.xml.
    const book = file('case-twins.xlsx');
    const hidden = row(1, text('A1', 'phone')) + row(2, text('A2', '+12025550177'));
    await writeHandMadeWorkbook(book, {
      sheets: [{ name: 'Calls', rows: row(1, text('A1', 'phone')) + row(2, text('A2', '+12025550123')) }],
      extra: {
        'xl/worksheets/Sheet1.xml': `<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="${MAIN}"><sheetData>${hidden}</sheetData></worksheet>`,
      },
    });
    const before = sha256(book);
    const out = path.join(ctx.dir, 'case-twins.results.csv');
    const r = await runDnc(['batch', book, '-o', out, '--country', 'US'], { env: ctx.env, cwd: ctx.dir });
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toContain('[E_INPUT_MALFORMED]');
    expect(r.stderr).toContain(book);
    expect(r.stderr).toContain("'xl/worksheets/sheet1.xml' and 'xl/worksheets/Sheet1.xml'");
    expect(lookedUp(ctx.sb)).toEqual([]);
    expect(sha256(book)).toBe(before);
  });
});

describe('a shared-strings table that inflates like a zip bomb', () => {
  it('is refused (exit 3, E_INPUT_LIMITS) as it inflates, not held whole', async () => {
    // 2.5 million one-letter strings: 95 MB of XML that deflates to 0.6 MB (a 0.8 MB one inflated to 420 MB).
    const book = file('strings-bomb.xlsx');
    const rows = row(1, '<c r="A1" t="s"><v>0</v></c>') + row(2, text('A2', '+12025550123'));
    await writeHandMadeWorkbook(book, {
      sheets: [{ name: 'Calls', rows }],
      sharedStrings: ['phone', ...new Array<string>(2_500_000).fill('x')],
    });
    const out = path.join(ctx.dir, 'strings-bomb.results.csv');
    const r = await runDnc(['batch', book, '-o', out, '--country', 'US'], { env: ctx.env, cwd: ctx.dir });
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toContain('[E_INPUT_LIMITS]');
    expect(r.stderr).toMatch(/xl\/sharedStrings\.xml inflates past \d+\.\d MB from 0\.\d MB \(more than 100 times/);
    expect(lookedUp(ctx.sb)).toEqual([]);
  });
});
