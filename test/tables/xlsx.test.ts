// `dnc batch` on .xlsx workbooks against the sandbox: what a cell says is the number, damaged numbers are refused,
// results keep the input's values and types, and every output is read back by openpyxl (not exceljs) cell by cell.
import { execFileSync } from 'node:child_process';
import { copyFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ExcelJS from 'exceljs';
import { describe, expect, it } from 'vitest';
import { runDnc } from '../helpers/cli.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import {
  editWorkbookCell,
  readWorkbookIndependently,
  type OracleCell,
  type OracleSheet,
} from '../helpers/xlsx-oracle.js';
import { FIXTURES, lookedUp, sandboxForFile, sha256 } from '../batch/helpers.js';
import { pythonWithOpenpyxl } from '../helpers/python.js';

const ctx = sandboxForFile();
const tmp = { dir: ctx.dir };

// Written out here (not imported): the test states the contract the output must meet.
const DNC_COLUMNS = [
  'dnc_phone_e164',
  'dnc_country',
  'dnc_result',
  'dnc_do_not_call',
  'dnc_list_source',
  'dnc_checked_at',
  'dnc_correlation_id',
  'dnc_error_code',
  'dnc_error',
  'dnc_credits',
  'dnc_exemption',
  'dnc_valid_until',
  'dnc_time_zones',
  'dnc_calling_window',
];
const FILL: Record<string, string> = { callable: 'FFC6EFCE', do_not_call: 'FFFFC7CE' };
const AMBER = 'FFFFEB9C';

let n = 0;
const file = (name: string) => path.join(tmp.dir, `${++n}-${name}`);

/**
 * The test workbook: a merged header cell, numbers as text, as a number with a 0… format, in scientific
 * format, past 15 digits, a formula's cached value, a date and a formula in other columns, an empty row,
 * a text cell that looks like a formula, a repeated number, and a second sheet.
 */
async function callsWorkbook(): Promise<string> {
  const wb = new ExcelJS.Workbook();
  const ws = wb.addWorksheet('Calls');
  ws.addRow(['Contact', '', 'Phone', 'Signed up', 'Check']);
  ws.mergeCells('A1:B1');
  ws.addRow(['Zoë', 'Ltd', '+447912345601', new Date(Date.UTC(2024, 2, 1)), { formula: 'LEN(A2)', result: 3 }]);
  ws.addRow(['Ann', 'Co', 7912345602, new Date(Date.UTC(2024, 2, 2)), 42]).getCell(3).numFmt = '00000000000';
  ws.addRow(['Sci', '', 447912345603, null, 1.5]).getCell(3).numFmt = '0.00E+00';
  // Row 5 stays empty.
  ws.getRow(6).values = ['Long', '', 4479123456031234];
  ws.getRow(7).values = ['Formula', '', { formula: '"+44"&"7912345604"', result: '+447912345604' }];
  ws.getRow(8).values = ['Text', '=HYPERLINK("http://evil.invalid")', '+447912345601', true];
  wb.addWorksheet('Archive').addRows([['phone'], ['+447912345609']]);
  const out = file('calls.xlsx');
  await wb.xlsx.writeFile(out);
  return out;
}

/**
 * Copies a workbook's zip with Python's zipfile: entries replaced, and those named in `last` moved to the end
 * (in that order), as other writers store them.
 */
function rezip(src: string, dst: string, o: { replace?: Record<string, string>; last?: string[] }): void {
  const script = [
    'import json, sys, zipfile',
    'src, dst, o = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])',
    'with zipfile.ZipFile(src) as a, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as b:',
    '    names = [i.filename for i in a.infolist() if i.filename not in o.get("last", [])] + o.get("last", [])',
    '    for n in names: b.writestr(n, o.get("replace", {}).get(n, a.read(n)))',
  ].join('\n');
  execFileSync(pythonWithOpenpyxl(), ['-c', script, src, dst, JSON.stringify(o)]);
}

const col = (sheet: OracleSheet, name: string) => sheet.rows[0]!.findIndex((c) => c.v === name);
const dnc = (sheet: OracleSheet, row: number, name: string) => sheet.rows[row]![col(sheet, name)]?.v ?? null;

describe('an .xlsx call list', () => {
  it('is read as Excel shows it and written back with its values and types, the dnc columns as text (credits a number), rows filled by result', async () => {
    const input = await callsWorkbook();
    const before = sha256(input);
    const out = file('results.xlsx');
    const r = await runDnc(['batch', input, '-o', out, '--country', 'GB'], { env: ctx.env, cwd: tmp.dir });
    expect(r.stderr).toContain("sheet 'Calls' (phone column: Phone)");
    expect(r.code).toBe(0);
    expect(sha256(input)).toBe(before);
    // Three distinct valid numbers, each looked up once: the damaged ones are never sent as another number.
    expect(lookedUp(ctx.sb).sort()).toEqual(['+447912345601', '+447912345602', '+447912345604']);

    const [inSheet] = readWorkbookIndependently(input, true);
    const book = readWorkbookIndependently(out);
    expect(book.map((s) => s.title)).toEqual(['Results', 'Summary']);
    const [results, summary] = book as [OracleSheet, OracleSheet];
    expect(results.freeze).toBe('A2');
    expect(results.filter).toBe('A1:S1');
    expect(results.rows[0]!.map((c) => c.v)).toEqual(['Contact', null, 'Phone', 'Signed up', 'Check', ...DNC_COLUMNS]);
    expect(results.rows[0]!.every((c) => c.bold || c.v === null)).toBe(true);
    // Rows 2 to 8 of the input, in order, but for the empty row 5: an empty row is not a row (docs/excel.md).
    const stored = [2, 3, 4, 6, 7, 8];
    expect(inSheet!.rows[4]!.every((c) => c.v === null)).toBe(true);
    expect(results.rows).toHaveLength(stored.length + 1);
    for (let r = 1; r <= stored.length; r++) {
      const inRow = inSheet!.rows[stored[r - 1]! - 1] ?? [];
      for (let c = 0; c < 5; c++) {
        // An empty text cell is no cell; a formula is its cached value.
        const want: Partial<OracleCell> =
          inRow[c] && inRow[c]!.v !== '' && inRow[c]!.v !== null ? { v: inRow[c]!.v, t: inRow[c]!.t } : { v: null };
        const got = results.rows[r]![c]!;
        expect({ v: got.v, t: want.t === undefined ? undefined : got.t }, `row ${r + 1} column ${c + 1}`).toEqual({
          v: want.v,
          t: want.t,
        });
        if (inRow[c]?.t === 'n') expect(got.fmt).toBe(inRow[c]!.fmt);
      }
      const dncCells = results.rows[r]!.slice(5);
      const credits = results.rows[0]!.findIndex((h) => h.v === 'dnc_credits') - 5;
      // Every dnc cell is text (or empty): the E.164 keeps its +, true/false stay words; but dnc_credits, a
      // number (a spreadsheet's SUM of text is 0).
      dncCells.forEach((c, i) =>
        expect(c.v === null || c.t === (i === credits ? 'n' : 's'), JSON.stringify(c)).toBe(true),
      );
      const result = String(dnc(results, r, 'dnc_result'));
      for (const c of results.rows[r]!) expect(c.fill).toBe(FILL[result] ?? AMBER);
    }
    // No cell of any sheet is a formula.
    for (const s of book) for (const row of s.rows) for (const c of row) expect(c.t).not.toBe('f');
    expect(results.rows[6]![1]).toMatchObject({ v: '=HYPERLINK("http://evil.invalid")', t: 's' });

    expect(dnc(results, 1, 'dnc_phone_e164')).toBe('+447912345601');
    expect(dnc(results, 2, 'dnc_phone_e164')).toBe('+447912345602');
    expect([dnc(results, 3, 'dnc_result'), dnc(results, 3, 'dnc_error_code')]).toEqual([
      'invalid',
      'excel_damaged_number',
    ]);
    expect(dnc(results, 3, 'dnc_error')).toContain('scientific notation');
    expect([dnc(results, 4, 'dnc_result'), dnc(results, 4, 'dnc_error_code')]).toEqual([
      'invalid',
      'excel_damaged_number',
    ]);
    expect(dnc(results, 5, 'dnc_phone_e164')).toBe('+447912345604');
    expect(dnc(results, 6, 'dnc_phone_e164')).toBe('+447912345601');

    // The Summary adds up the Results sheet.
    const value = (label: string) => summary.rows.find((row) => row[0]?.v === label)?.[1]?.v;
    expect(value('rows')).toBe(6);
    const counted = new Map<string, number>();
    for (let r = 1; r < 7; r++)
      counted.set(String(dnc(results, r, 'dnc_result')), (counted.get(String(dnc(results, r, 'dnc_result'))) ?? 0) + 1);
    for (const result of ['callable', 'do_not_call', 'invalid'])
      expect(value(result), result).toBe(counted.get(result) ?? 0);
    expect(value('credits used')).toBe(results.rows.slice(1).reduce((sum, row) => sum + Number(row[14]!.v ?? 0), 0));
    expect(value('input SHA-256')).toBe(before);
    expect(String(value('callable rows valid until') ?? '')).toMatch(
      counted.get('callable') ? /^\d{4}-\d\d-\d\dT/ : /^$/,
    );

    const v = await runDnc(['verify', out], { env: ctx.env, cwd: tmp.dir });
    expect(v.stdout).toContain('rows compared with the journal and the input');
    expect(v.code).toBe(0);
  });

  it('names the sheet and the Excel row in messages (dry run)', async () => {
    const input = await callsWorkbook();
    const r = await runDnc(['batch', input, '--dry-run', '--country', 'GB'], { env: ctx.env, cwd: tmp.dir });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/rows: 6\s+distinct numbers: 3\s+rows with an invalid number: 2/);
    // What Excel shows in a cell formatted 0.00E+00.
    expect(r.stdout).toContain("sheet 'Calls' row 4: '4.48E+11' is a number Excel turned into scientific notation");
    // The empty row 5 is no row; the row after it keeps its Excel number.
    expect(r.stdout).not.toContain("sheet 'Calls' row 5");
    expect(r.stdout).toContain("sheet 'Calls' row 6: '4.47912E+15' is a number of 16 digits or more (Excel keeps 15");
  });

  it('reads another sheet with --sheet NAME or INDEX, and lists the sheets when there is no such sheet', async () => {
    const input = await callsWorkbook();
    for (const sheet of ['Archive', 'archive', '2']) {
      const r = await runDnc(['batch', input, '--dry-run', '--sheet', sheet, '--json'], { env: ctx.env, cwd: tmp.dir });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ rows: 1, unique_numbers: 1 });
    }
    const missing = await runDnc(['batch', input, '--dry-run', '--sheet', 'Leads'], { env: ctx.env, cwd: tmp.dir });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("has no sheet 'Leads'");
    expect(missing.stderr).toContain('1:Calls, 2:Archive');
    const csv = file('list.csv');
    writeFileSync(csv, 'phone\n+447912345601\n');
    const onCsv = await runDnc(['batch', csv, '--dry-run', '--sheet', '2'], { env: ctx.env, cwd: tmp.dir });
    expect(onCsv.code).toBe(2);
    expect(onCsv.stderr).toContain('--sheet is for an .xlsx input');
  });

  it('reads a workbook LibreOffice saved (sheets before shared strings) and writes CSV results a CSV reader reads back', async () => {
    const input = file('libreoffice-calls.xlsx');
    copyFileSync(path.join(FIXTURES, 'xlsx', 'libreoffice-calls.xlsx'), input);
    const out = file('lo.results.csv');
    const r = await runDnc(['batch', input, '-o', out, '--country', 'GB'], { env: ctx.env, cwd: tmp.dir });
    expect(r.code, r.stderr).toBe(0);
    const raw = readFileSync(out);
    // What Excel's "CSV UTF-8" is: a byte-order mark and CRLF.
    expect(raw.subarray(0, 3)).toEqual(Buffer.from([0xef, 0xbb, 0xbf]));
    expect(raw.toString('utf8')).toContain('\r\n');
    const rows = readCsvIndependently(out);
    expect(rows[0]).toEqual(['Name', 'Mobile', 'Signed up', 'Note', ...DNC_COLUMNS]);
    const pick = (row: string[]) => [...row.slice(0, 4), row[4], row[11]];
    expect(rows.slice(1).map(pick)).toEqual([
      ['Zoë Brontë', '+447912345601', '2024-03-01', '10', '+447912345601', ''],
      ['Ángel Núñez', '07912345602', '2024-03-02', '=HYPERLINK("http://evil.invalid")', '+447912345602', ''],
      ['Sci', '4.48E+11', '', 'scientific', '', 'excel_damaged_number'],
      ['Formula', '+447912345604', '', 'cached value', '+447912345604', ''],
    ]);
    const v = await runDnc(['verify', out], { env: ctx.env, cwd: tmp.dir });
    expect(v.code, v.stdout).toBe(0);
  });

  it('writes --callable-out and --suppressed-out by their own extensions, and resumes a stopped batch like a CSV one', async () => {
    const input = await callsWorkbook();
    const out = file('stopped.xlsx');
    const callable = file('callable.xlsx');
    const suppressed = file('suppressed.csv');
    const first = await runDnc(
      [
        'batch',
        input,
        '-o',
        out,
        '--country',
        'GB',
        '--max-credits',
        '1',
        '--concurrency',
        '1',
        '--callable-out',
        callable,
        '--suppressed-out',
        suppressed,
      ],
      { env: ctx.env, cwd: tmp.dir },
    );
    expect(first.code).toBe(5);
    // At most one lookup fits the budget (none when a GB lookup is known to cost more than 1 credit).
    expect(lookedUp(ctx.sb).length).toBeLessThanOrEqual(1);
    const again = await runDnc(['batch', input, '-o', out], { env: ctx.env, cwd: tmp.dir });
    expect(again.stderr).toContain('--max-credits 1');
    const rest = await runDnc(['batch', input, '-o', out, '--max-credits', 'none'], { env: ctx.env, cwd: tmp.dir });
    expect(rest.code, rest.stderr).toBe(0);
    // Nothing answered was sent again.
    expect(new Set(lookedUp(ctx.sb)).size).toBe(lookedUp(ctx.sb).length);
    expect(lookedUp(ctx.sb)).toHaveLength(3);
    const [results] = readWorkbookIndependently(out) as [OracleSheet];
    const callableRows = results.rows
      .slice(1)
      .filter((row) => row[7]!.v === 'callable')
      .map((row) => row.slice(0, 5).map((c) => c.v));
    const list = readWorkbookIndependently(callable);
    expect(list.map((s) => s.title)).toEqual(['Results']);
    expect(list[0]!.rows[0]!.map((c) => c.v)).toEqual(['Contact', null, 'Phone', 'Signed up', 'Check']);
    expect(list[0]!.rows.slice(1).map((row) => row.slice(0, 5).map((c) => c.v))).toEqual(callableRows);
    const suppressedRows = readCsvIndependently(suppressed).slice(1);
    expect(suppressedRows).toHaveLength(results.rows.slice(1).filter((row) => row[7]!.v === 'do_not_call').length);
    expect((await runDnc(['verify', out], { env: ctx.env, cwd: tmp.dir })).code).toBe(0);
  });

  it('--format decides over the extension, and the journal remembers it', async () => {
    const input = await callsWorkbook();
    const out = file('results.dat');
    const r = await runDnc(['batch', input, '-o', out, '--country', 'GB', '--format', 'xlsx'], {
      env: ctx.env,
      cwd: tmp.dir,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(out).subarray(0, 4)).toEqual(Buffer.from('PK\x03\x04', 'latin1'));
    expect(readWorkbookIndependently(out).map((s) => s.title)).toEqual(['Results', 'Summary']);
    // A bare rerun renders it again as a workbook.
    expect((await runDnc(['batch', input, '-o', out], { env: ctx.env, cwd: tmp.dir })).code).toBe(0);
    expect(readWorkbookIndependently(out)[0]!.rows).toHaveLength(7);
    expect((await runDnc(['verify', out], { env: ctx.env, cwd: tmp.dir })).code).toBe(0);
    const csv = file('results.xlsx');
    expect(
      (await runDnc(['batch', input, '-o', csv, '--country', 'GB', '--format', 'csv'], { env: ctx.env, cwd: tmp.dir }))
        .code,
    ).toBe(0);
    expect(readCsvIndependently(csv)).toHaveLength(7);
    const bad = await runDnc(['batch', input, '--format', 'ods', '--dry-run'], { env: ctx.env, cwd: tmp.dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(
      "option '--format <format>' argument 'ods' is invalid. Allowed choices are csv, xlsx.",
    );
  });

  it('is not fit once a cell of the results workbook is edited', async () => {
    const input = await callsWorkbook();
    const out = file('edited.xlsx');
    expect((await runDnc(['batch', input, '-o', out, '--country', 'GB'], { env: ctx.env, cwd: tmp.dir })).code).toBe(0);
    editWorkbookCell(out, 'Results', 'H5', 'callable');
    const v = await runDnc(['verify', out], { env: ctx.env, cwd: tmp.dir });
    expect(v.code).not.toBe(0);
    expect(v.stdout).toMatch(/not fit/i);
    expect(v.stdout).toMatch(/row 5 .* callable +no_correlation_id/);
  });

  it('never expands XML entities of a hostile workbook (billion laughs), and refuses a truncated one', async () => {
    const wb = new ExcelJS.Workbook();
    wb.addWorksheet('Calls').addRows([['phone'], ['+447912345601']]);
    const book = file('laughs.xlsx');
    await wb.xlsx.writeFile(book);
    const entities = Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i};`.repeat(10)}">`).join('');
    const sst = `<?xml version="1.0"?><!DOCTYPE sst [<!ENTITY lol0 "lol">${entities}]><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="2" uniqueCount="2"><si><t>phone</t></si><si><t>&lol9;</t></si></sst>`;
    const hostile = file('laughs-hostile.xlsx');
    rezip(book, hostile, { replace: { 'xl/sharedStrings.xml': sst } });
    const r = await runDnc(['batch', hostile, '--dry-run', '--column', '1'], { env: ctx.env, cwd: tmp.dir });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('the workbook cannot be read');
    expect(r.stderr.length).toBeLessThan(2_000);
    // A real run refuses it the same way, and leaves no empty journal beside the output it would have written.
    const run = await runDnc(['batch', hostile, '--column', '1'], { env: ctx.env, cwd: tmp.dir });
    expect(run.code).toBe(3);
    expect(readdirSync(path.dirname(hostile)).filter((f) => f.startsWith('laughs-hostile.results'))).toEqual([]);
    const truncated = file('truncated.xlsx');
    writeFileSync(truncated, readFileSync(book).subarray(0, Math.floor(readFileSync(book).length / 2)));
    const t = await runDnc(['batch', truncated, '--dry-run'], { env: ctx.env, cwd: tmp.dir });
    expect(t.code).toBe(3);
    expect(lookedUp(ctx.sb)).toEqual([]);
  });

  it('reads a workbook whose sheets are stored before its workbook part (names unknown until then: by position)', async () => {
    const input = await callsWorkbook();
    const reordered = file('reordered.xlsx');
    rezip(input, reordered, { last: ['xl/workbook.xml'] });
    const r = await runDnc(['batch', reordered, '--dry-run', '--country', 'GB', '--json'], {
      env: ctx.env,
      cwd: tmp.dir,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ rows: 6, unique_numbers: 3, invalid_rows: 2 });
    const second = await runDnc(['batch', reordered, '--dry-run', '--sheet', '2', '--json'], {
      env: ctx.env,
      cwd: tmp.dir,
    });
    expect(JSON.parse(second.stdout)).toMatchObject({ rows: 1, unique_numbers: 1 });
  });

  it('refuses a file that is not a workbook, and a cell right of the header', async () => {
    const fake = file('fake.xlsx');
    writeFileSync(fake, 'phone\n+447912345601\n');
    const r = await runDnc(['batch', fake, '--dry-run'], { env: ctx.env, cwd: tmp.dir });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('is not an .xlsx workbook');
    const wb = new ExcelJS.Workbook();
    const ws = wb.addWorksheet('Calls');
    ws.addRows([
      ['name', 'phone'],
      ['a', '+447912345601'],
    ]);
    ws.getCell('D3').value = 'note';
    const wide = file('wide.xlsx');
    await wb.xlsx.writeFile(wide);
    const w = await runDnc(['batch', wide, '--dry-run'], { env: ctx.env, cwd: tmp.dir });
    expect(w.code).toBe(3);
    expect(w.stderr).toContain("sheet 'Calls' row 3: cell D3 is right of the header's last column (B)");
  });
});
