// The real-world corpus (fixtures/corpus/: workbooks and CSV files from xlsx2csv's, calamine's, exceljs's and
// csv-spectrum's test suites): every cell read by dnc agrees with openpyxl's reading, and every text dnc writes with
// the suite's own expected output, but for the cells fixtures/corpus/expected.json names, each with its reason.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openCsvLayout } from '../../src/tables/csv-input.js';
import type { CellValue } from '../../src/tables/xlsx-cells.js';
import { openXlsxLayout, readSheetRows, readXlsxRows } from '../../src/tables/xlsx-input.js';
import { DncError } from '../../src/errors.js';
import { runDnc } from '../helpers/cli.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import {
  readCellValuesIndependently,
  readWorkbookIndependently,
  type IndependentSheet,
} from '../helpers/xlsx-oracle.js';
import { FIXTURES, sandboxForFile } from '../batch/helpers.js';
import { readRows } from '../../src/tables/input.js';

const CORPUS = path.join(FIXTURES, 'corpus');
const ctx = sandboxForFile();

interface Substitution {
  row: number;
  col: number;
  suite: string;
  dnc: string;
  why: string;
}
const expected = JSON.parse(readFileSync(path.join(CORPUS, 'expected.json'), 'utf8')) as {
  xlsx2csv: { substitutions: Record<string, Substitution[]> };
  rows: Record<string, { rows: string[][]; source: string }>;
  rawExceptions: Record<string, Record<string, string>>;
  openpyxlCannotRead: Record<string, string>;
};

const workbooks = ['xlsx2csv', 'calamine', 'exceljs'].flatMap((d) =>
  readdirSync(path.join(CORPUS, d))
    .filter((f) => f.endsWith('.xlsx'))
    .map((f) => `${d}/${f}`),
);

function readAllWithOpenpyxl(): Record<string, IndependentSheet[] | null> {
  const byPath = readCellValuesIndependently(workbooks.map((w) => path.join(CORPUS, w)));
  return Object.fromEntries(workbooks.map((w) => [w, byPath[path.join(CORPUS, w)]!]));
}

const columnName = (n: number): string =>
  (n > 26 ? columnName(Math.floor((n - 1) / 26)) : '') + String.fromCharCode(65 + ((n - 1) % 26));

/** Whether dnc's value is openpyxl's: dates to the millisecond, numbers to a part in a million (openpyxl's times are rounded to microseconds). */
function same(ours: CellValue, kind: string, theirs: string | number | boolean): boolean {
  if (kind === 'd') return ours instanceof Date && Math.abs(ours.getTime() - Date.parse(String(theirs))) <= 1;
  if (kind === 'n')
    return typeof ours === 'number' && Math.abs(ours - Number(theirs)) <= 1e-6 * Math.max(1, Math.abs(Number(theirs)));
  if (kind === 'e')
    return typeof ours === 'object' && ours !== null && !(ours instanceof Date) && ours.error === theirs;
  return ours === theirs;
}

/** The text dnc shows for the first worksheet (the suites' outputs are of it): non-empty rows, trailing empties left out. */
async function shownRows(file: string): Promise<string[][]> {
  const layout = await openXlsxLayout(file, { header: false, columns: ['1'], sheet: '1' });
  const rows: string[][] = [];
  for await (const batch of readXlsxRows(layout)) rows.push(...batch.map(trimmed));
  return rows;
}

function trimmed(row: readonly string[]): string[] {
  const out = [...row];
  while (out.length > 0 && out.at(-1) === '') out.pop();
  return out;
}

describe('the real-world corpus (fixtures/corpus)', () => {
  it('has a few dozen workbooks and CSV files, each with its licence beside it', () => {
    expect(workbooks.length).toBeGreaterThanOrEqual(40);
    for (const [dir, licence] of [
      ['xlsx2csv', 'LICENSE.txt'],
      ['calamine', 'LICENSE-MIT.md'],
      ['exceljs', 'LICENSE'],
      ['csv-spectrum', 'LICENSE'],
    ]) {
      expect(readFileSync(path.join(CORPUS, dir!, licence!), 'utf8')).toMatch(/MIT|BSD/);
    }
  });

  it('reads every cell of every worksheet as openpyxl does (values, kinds, places), but for the exceptions listed', async () => {
    const oracle = readAllWithOpenpyxl();
    let compared = 0;
    for (const book of workbooks) {
      const file = path.join(CORPUS, book);
      const sheets = oracle[book];
      if (sheets === null) {
        expect(
          expected.openpyxlCannotRead[book],
          `${book}: openpyxl cannot read it, and expected.json does not say why`,
        ).toBeTruthy();
        continue;
      }
      const exceptions = expected.rawExceptions[book] ?? {};
      for (const [i, sheet] of sheets!.entries()) {
        const ours = new Map<string, CellValue>();
        for await (const row of readSheetRows(file, String(i + 1))) {
          row.cells.forEach(
            (c, col) =>
              c && c.value !== null && c.value !== '' && ours.set(`${columnName(col + 1)}${row.number}`, c.value),
          );
        }
        const theirs = new Map(
          sheet.cells
            .filter(([, , k, v]) => !(k === 's' && v === ''))
            .map(([row, col, k, v]) => [`${columnName(col)}${row}`, [k, v] as const]),
        );
        for (const [ref, [kind, value]] of theirs) {
          if (exceptions[ref]) continue;
          compared++;
          expect(
            same(ours.get(ref) ?? null, kind, value),
            `${book} ${sheet.title}!${ref}: dnc ${JSON.stringify(ours.get(ref))}, openpyxl ${kind} ${JSON.stringify(value)}`,
          ).toBe(true);
        }
        for (const ref of ours.keys())
          expect(
            theirs.has(ref) || exceptions[ref] !== undefined,
            `${book} ${sheet.title}!${ref}: read by dnc only`,
          ).toBe(true);
      }
    }
    expect(compared).toBeGreaterThan(1000);
  }, 120_000);

  it("writes each cell of xlsx2csv's workbooks as its expected output shows it (substitutions listed with their reasons)", async () => {
    const files = workbooks.filter((w) => w.startsWith('xlsx2csv/'));
    for (const book of files) {
      const name = path.basename(book, '.xlsx');
      const suite = readCsvIndependently(path.join(CORPUS, 'xlsx2csv', `${name}.csv`))
        .map(trimmed)
        .filter((r) => r.length > 0);
      for (const s of expected.xlsx2csv.substitutions[name] ?? []) {
        // A substitution names what the suite says: it must still say it (the file is the one described).
        expect(suite[s.row - 1]![s.col - 1], `${book} row ${s.row} column ${s.col}`).toBe(s.suite);
        suite[s.row - 1]![s.col - 1] = s.dnc;
      }
      expect(await shownRows(path.join(CORPUS, book)), book).toEqual(suite);
    }
    expect(files).toHaveLength(16);
  });

  it('writes the rows its suites assert for the others (calamine, exceljs), each with its source', async () => {
    for (const [book, { rows, source }] of Object.entries(expected.rows).filter(([key]) => key !== '_')) {
      expect(source).not.toBe('');
      expect(await shownRows(path.join(CORPUS, book)), book).toEqual(rows);
    }
  });

  it('dnc batch reads a workbook whose first tab is a chart sheet from its first worksheet, and writes what it shows', async () => {
    const book = path.join(CORPUS, 'exceljs', 'chart-sheet.xlsx');
    const [first] = readWorkbookIndependently(book, true);
    const out = path.join(ctx.dir, 'chart-sheet.results.csv');
    const r = await runDnc(['batch', book, '-o', out, '--no-header', '--column', '1'], { env: ctx.env, cwd: ctx.dir });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`sheet '${first!.title}'`);
    const written = readCsvIndependently(out).map((row) => trimmed(row.slice(0, first!.rows[0]!.length)));
    expect(written).toEqual(first!.rows.map((row) => trimmed(row.map((c) => (c.v === null ? '' : String(c.v))))));
    const percent = path.join(ctx.dir, 'percentage.results.csv');
    const p = await runDnc(
      ['batch', path.join(CORPUS, 'xlsx2csv', 'percentage.xlsx'), '-o', percent, '--no-header', '--column', '1'],
      { env: ctx.env, cwd: ctx.dir },
    );
    expect(p.code, p.stderr).toBe(0);
    expect(readCsvIndependently(percent).map((row) => row[0])).toEqual(
      readCsvIndependently(path.join(CORPUS, 'xlsx2csv', 'percentage.csv')).map((row) => row[0]),
    );
  });

  describe("csv-spectrum's CSV files", () => {
    const dir = path.join(CORPUS, 'csv-spectrum');
    const names = readdirSync(path.join(dir, 'csvs')).map((f) => f.replace(/\.csv$/, ''));

    for (const name of names.filter((n) => n !== 'location_coordinates')) {
      it(`${name}.csv reads as its json/${name}.json says`, async () => {
        const file = path.join(dir, 'csvs', `${name}.csv`);
        const layout = await openCsvLayout(file, { header: true, columns: ['1'] });
        const records: Array<Record<string, string>> = [];
        for await (const batch of readRows(layout))
          for (const row of batch) records.push(Object.fromEntries(layout.header!.map((h, i) => [h, row[i]!])));
        expect(records).toEqual(JSON.parse(readFileSync(path.join(dir, 'json', `${name}.json`), 'utf8')));
      });
    }

    it('location_coordinates.csv (a quote inside an unquoted field) is refused, naming the line, with the way out', async () => {
      const file = path.join(dir, 'csvs', 'location_coordinates.csv');
      // Python's csv module keeps the quote as text.
      expect(readCsvIndependently(file)[1]![1]).toBe('37\uFFFD36\'37.8"N 121\uFFFD2\'17.9"W');
      const layout = await openCsvLayout(file, { header: true, columns: ['1'] });
      const failure = await (async () => {
        for await (const _ of readRows(layout));
      })().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(failure).toBeInstanceOf(DncError);
      expect((failure as DncError).code).toBe('E_INPUT_MALFORMED');
      expect((failure as DncError).message).toContain('line 2');
      expect((failure as DncError).hint).toContain('quote the whole field');
    });
  });
});
