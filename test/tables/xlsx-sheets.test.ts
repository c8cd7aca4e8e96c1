// Which rows of which sheet dnc batch reads: worksheets only (a chart sheet is not counted), title rows above the list
// (--skip-rows, --no-header), and row numbers that lie (a gap of a million rows, rows past Excel's limits, out of order).
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runDnc } from '../helpers/cli.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { lookedUp, sandboxForFile, sha256 } from '../batch/helpers.js';
import { text, writeHandMadeWorkbook } from './workbook-zip.js';

const ctx = sandboxForFile();
let n = 0;
const file = (name: string) => path.join(ctx.dir, `${++n}-${name}`);
const row = (r: number, ...cells: string[]) => `<row r="${r}">${cells.join('')}</row>`;

describe('the sheet a batch reads', () => {
  const chartFirst = async () => {
    const book = file('chart-first.xlsx');
    await writeHandMadeWorkbook(book, {
      sheets: [
        { name: 'Chart1', chart: true },
        { name: 'Calls', rows: row(1, text('A1', 'phone')) + row(2, text('A2', '+447912345601')) },
        {
          name: 'Archive',
          rows: row(1, text('A1', 'phone')) + row(2, text('A2', '+447912345609')) + row(3, text('A3', '+447912345608')),
        },
      ],
    });
    return book;
  };

  it('is the first worksheet by default when a chart sheet comes first, and --sheet INDEX counts worksheets alone', async () => {
    const book = await chartFirst();
    const first = await runDnc(['batch', book, '--dry-run', '--json'], { env: ctx.env, cwd: ctx.dir });
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ rows: 1 });
    expect(first.stderr).toContain("sheet 'Calls'");
    for (const [sheet, rows] of [
      ['1', 1],
      ['2', 2],
      ['Archive', 2],
    ] as const) {
      const r = await runDnc(['batch', book, '--dry-run', '--json', '--sheet', sheet], { env: ctx.env, cwd: ctx.dir });
      expect(r.code, `--sheet ${sheet}: ${r.stderr}`).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ rows });
    }
  });

  it('refuses --sheet past the worksheets or naming the chart sheet, listing the worksheets as --sheet counts them', async () => {
    const book = await chartFirst();
    const past = await runDnc(['batch', book, '--dry-run', '--sheet', '3'], { env: ctx.env, cwd: ctx.dir });
    expect(past.code).toBe(2);
    expect(past.stderr).toContain("has no sheet '3'");
    expect(past.stderr).toContain('its worksheets are 1:Calls, 2:Archive');
    const chart = await runDnc(['batch', book, '--dry-run', '--sheet', 'chart1'], { env: ctx.env, cwd: ctx.dir });
    expect(chart.code).toBe(2);
    expect(chart.stderr).toContain("'Chart1' is a chart sheet or another kind, with no cells");
  });
});

describe('title rows above the list', () => {
  /** A workbook of one sheet 'Calls' of these rows. */
  const calls = async (name: string, rows: string) => {
    const book = file(name);
    await writeHandMadeWorkbook(book, { sheets: [{ name: 'Calls', rows }] });
    return book;
  };
  /** A one-cell title on row 1, an empty row 2, the header on row 3, two data rows. */
  const titled = async () => {
    const book = await calls(
      'titled.xlsx',
      row(1, text('A1', 'Quarterly call list')) +
        row(3, text('A3', 'name'), text('B3', 'phone')) +
        row(4, text('A4', 'Ann'), text('B4', '+447912345601')) +
        row(5, text('A5', 'Bob'), text('B5', '+447912345602')),
    );
    return book;
  };

  it('say what was read as the header and how to skip a title', async () => {
    const book = await titled();
    const none = await runDnc(['batch', book, '--dry-run'], { env: ctx.env, cwd: ctx.dir });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('no phone column found in the header');
    expect(none.stderr).toContain('the header is row 1');
    expect(none.stderr).toContain("row 3 ('name', 'phone') looks like the header: give --skip-rows 2");
    const r = await runDnc(['batch', book, '--dry-run', '--column', '1'], { env: ctx.env, cwd: ctx.dir });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(
      "sheet 'Calls' row 3: cell B3 is right of the header's last column (A); the header is row 1",
    );
    expect(r.stderr).toContain("if row 1 ('Quarterly call list') is a title above the header, give --skip-rows 1");
  });

  it('are skipped with --skip-rows N: the header is the first row below them, and verify reads the same rows', async () => {
    const book = await titled();
    const out = file('titled.results.csv');
    const r = await runDnc(['batch', book, '-o', out, '--skip-rows', '1', '--country', 'GB'], {
      env: ctx.env,
      cwd: ctx.dir,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(lookedUp(ctx.sb).sort()).toEqual(['+447912345601', '+447912345602']);
    const rows = readCsvIndependently(out);
    expect(rows.map((x) => x.slice(0, 3))).toEqual([
      ['name', 'phone', 'dnc_phone_e164'],
      ['Ann', '+447912345601', '+447912345601'],
      ['Bob', '+447912345602', '+447912345602'],
    ]);
    const v = await runDnc(['verify', out], { env: ctx.env, cwd: ctx.dir });
    expect(v.code, v.stdout).toBe(0);
    expect(v.stdout).toContain('rows compared with the journal and the input');
    // The journal remembers --skip-rows: a bare rerun resumes with it (nothing is sent again).
    ctx.sb.reset();
    const again = await runDnc(['batch', book, '-o', out], { env: ctx.env, cwd: ctx.dir });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain('--skip-rows 1');
    expect(lookedUp(ctx.sb)).toEqual([]);
    // Another --skip-rows reads other rows: another batch, refused without --restart.
    const other = await runDnc(['batch', book, '-o', out, '--skip-rows', '2'], { env: ctx.env, cwd: ctx.dir });
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('E_JOURNAL_MISMATCH');
  });

  it('with --no-header, take the width from the widest of the first rows, not from a one-cell title', async () => {
    const out = file('noheader.results.csv');
    const r = await runDnc(['batch', await titled(), '-o', out, '--no-header', '--column', '2', '--country', 'GB'], {
      env: ctx.env,
      cwd: ctx.dir,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toContain('header');
    const rows = readCsvIndependently(out);
    // Every stored row is a data row: the title (no number), the header's row (no phone number), Ann and Bob.
    expect(rows.map((x) => [x[0], x[1], x[4] === 'invalid'])).toEqual([
      ['Quarterly call list', '', true],
      ['name', 'phone', true],
      ['Ann', '+447912345601', false],
      ['Bob', '+447912345602', false],
    ]);
    expect(lookedUp(ctx.sb).sort()).toEqual(['+447912345601', '+447912345602']);
  });

  it('with --no-header, name the widest of the first 1,000 rows when a later row is wider (never a header)', async () => {
    const book = file('wide-late.xlsx');
    const rows =
      Array.from({ length: 1001 }, (_, i) =>
        row(i + 1, text(`A${i + 1}`, `+4479123${String(i).padStart(5, '0')}`)),
      ).join('') + row(1002, text('A1002', '+447912345601'), text('C1002', 'late'));
    await writeHandMadeWorkbook(book, { sheets: [{ name: 'Calls', rows }] });
    const r = await runDnc(['batch', book, '--dry-run', '--no-header'], { env: ctx.env, cwd: ctx.dir });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(
      "sheet 'Calls' row 1002: cell C1002 is right of the list's last column (A): with --no-header the list is as wide as the widest of its first 1,000 rows",
    );
    expect(r.stderr).not.toContain("header's");
  });

  it('name the row that holds the header below a title and a subtitle (each hint was one row short)', async () => {
    const book = await calls(
      'subtitled.xlsx',
      row(1, text('A1', 'Quarterly call list')) +
        row(2, text('A2', 'Exported 2026-12-01')) +
        row(4, text('A4', 'name'), text('B4', 'phone')) +
        row(5, text('A5', 'Ann'), text('B5', '+447912345601')),
    );
    const r = await runDnc(['batch', book, '--dry-run'], { env: ctx.env, cwd: ctx.dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("row 4 ('name', 'phone') looks like the header: give --skip-rows 3");
    const fixed = await runDnc(['batch', book, '--dry-run', '--skip-rows', '3', '--json'], {
      env: ctx.env,
      cwd: ctx.dir,
    });
    expect(fixed.code, fixed.stderr).toBe(0);
    expect(JSON.parse(fixed.stdout)).toMatchObject({ rows: 1 });
  });
});

describe('row numbers a workbook claims', () => {
  const bomb = async (name: string, rows: string) => {
    const book = file(name);
    await writeHandMadeWorkbook(book, {
      sheets: [{ name: 'Calls', rows: row(1, text('A1', 'phone')) + row(2, text('A2', '+447912345601')) + rows }],
    });
    return book;
  };

  it('refuse a row past Excel’s last row at once (exit 3, E_INPUT_LIMITS, file, sheet and row named)', async () => {
    const book = await bomb('row-bomb.xlsx', row(20_000_000, text('A20000000', '+447912345602')));
    const before = sha256(book);
    const started = Date.now();
    const r = await runDnc(['batch', book, '-o', file('bomb.results.csv')], { env: ctx.env, cwd: ctx.dir });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(
      `[E_INPUT_LIMITS]: ${book}: sheet 'Calls': row 20000000 is past Excel's last row (1,048,576)`,
    );
    // Before this was refused, the gap was made into 20 million empty rows: 4.7 GB and 2 minutes.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(lookedUp(ctx.sb)).toEqual([]);
    expect(sha256(book)).toBe(before);
  }, 30_000);

  it('cost no row for a gap: a row at 1,048,576 after row 2 is the second data row, and the output has two', async () => {
    const book = await bomb('gap.xlsx', row(1_048_576, text('A1048576', 'not a number')));
    const out = file('gap.results.csv');
    const started = Date.now();
    const r = await runDnc(['batch', book, '-o', out, '--country', 'GB'], { env: ctx.env, cwd: ctx.dir });
    expect(r.code, r.stderr).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
    const rows = readCsvIndependently(out);
    expect(rows).toHaveLength(3);
    expect(rows[2]!.slice(0, 1)).toEqual(['not a number']);
    // A message about the row names it by the number Excel shows.
    const dry = await runDnc(['batch', book, '--dry-run', '--country', 'GB'], { env: ctx.env, cwd: ctx.dir });
    expect(dry.stdout).toContain("sheet 'Calls' row 1048576:");
  }, 30_000);

  it('refuse a cell past column XFD, however far, and rows that go back or have no number', async () => {
    const cases: Array<[string, string, string]> = [
      ['xfe.xlsx', row(3, text('XFE3', 'x')), "cell XFE3 of row 3 is past Excel's last column (XFD, the 16,384th)"],
      ['far.xlsx', row(3, text('ZZZZZZZZZZ3', 'x')), "cell ZZZZZZZZZZ3 of row 3 is past Excel's last column"],
      ['back.xlsx', row(5, text('A5', 'x')) + row(3, text('A3', 'y')), 'row 3 comes after row 5 (rows out of order)'],
      ['twice.xlsx', row(2, text('A2', 'again')), 'row 2 comes after row 2 (rows out of order)'],
      [
        'nan.xlsx',
        '<row r="x1"><c t="inlineStr"><is><t>y</t></is></c></row>',
        "the row after row 2 has no row number ('x1')",
      ],
    ];
    for (const [name, rows, says] of cases) {
      const r = await runDnc(['batch', await bomb(name, rows), '--dry-run'], { env: ctx.env, cwd: ctx.dir });
      expect(r.code, name).toBe(3);
      expect(r.stderr, name).toContain(`sheet 'Calls': ${says}`);
    }
  });
});
