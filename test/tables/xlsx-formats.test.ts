// Number formats as Excel shows them (numfmt), dates by dnc's ISO rule, and strings with ECMA-376's _xHHHH_ escapes decoded.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { PhoneCache } from '../../src/phone/phone-cache.js';
import { builtInFormat, cellText, loadNumberFormats, numberText, plainValue } from '../../src/tables/xlsx-cells.js';
import { readSheetRows } from '../../src/tables/xlsx-input.js';
import { decodeEscapes } from '../../src/tables/xlsx-xml.js';
import { runDnc } from '../helpers/cli.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { readWorkbookIndependently } from '../helpers/xlsx-oracle.js';
import { sandboxForFile } from '../batch/helpers.js';
import { text, writeHandMadeWorkbook } from './workbook-zip.js';

// numfmt is loaded by the reader when a workbook formats numbers; these tests call the formatting directly.
beforeAll(loadNumberFormats);

const ctx = sandboxForFile();
let n = 0;
const file = (name: string) => path.join(ctx.dir, `${++n}-${name}`);

describe('a number as its format shows it', () => {
  // Each as Excel shows it: the issue's cases (xlsx2csv percentage.xlsx, float2.xlsx, timeformat.xlsx; calamine date.xlsx)
  // and one of each part of the format language.
  it.each([
    [0.01234, '0.00%', '1.23%'],
    [0.5, '0%', '50%'],
    [0.005, '0%', '1%'],
    [5e-5, '0.00%', '0.01%'],
    [0.6114583333333333, 'hh:mm', '14:40'],
    [0.6114583333333333, 'h:mm:ss AM/PM', '2:40:30 PM'],
    [10.423726851851852, '[hh]:mm:ss', '250:10:10'],
    [1.5, '[h]:mm', '36:00'],
    [0.000694444, 'mm:ss', '01:00'],
    [1.25, '# ?/?', '1 1/4'],
    [0.75, '# ?/?', ' 3/4'],
    [2025550123, '[<=9999999]###-####;(###) ###-####', '(202) 555-0123'],
    [5550123, '[<=9999999]###-####;(###) ###-####', '555-0123'],
    [-5, '0;[Red]"minus "0', 'minus 5'],
    [0, '0;-0;"zero"', 'zero'],
    [123456789, '0.0,,"M"', '123.5M'],
    [1234.5, '#,##0.00', '1,234.50'],
    [1.005, '0.00', '1.01'],
    [12, '"+1 "000', '+1 012'],
    [0.1 + 0.2, 'General', '0.3'],
    [123456789.123, 'General', '123456789.1'],
    [1e-10, 'General', '1E-10'],
  ])('%d with %s shows %s', (value, format, shown) => {
    expect(numberText(value, format)).toBe(shown);
  });

  it('keeps every digit of a whole number in General (a phone number), and refuses what Excel damaged', () => {
    const phones = new PhoneCache('GB');
    // General shows a 12-digit number as 4.47912E+11 only for want of column width: its digits are all kept.
    expect(numberText(447912345603, 'General')).toBe('447912345603');
    expect(numberText(447912345603, undefined)).toBe('447912345603');
    expect(phones.normalise(numberText(447912345603, 'General'))).toMatchObject({ ok: true, e164: '+447912345603' });
    // A scientific format shows what Excel shows; the text is refused as a damaged number, never looked up.
    expect(numberText(447912345603, '0.00E+00')).toBe('4.48E+11');
    expect(numberText(447912345603, '##0.0E+0')).toBe('447.9E+9');
    expect(phones.normalise(numberText(447912345603, '##0.0E+0'))).toMatchObject({
      ok: false,
      code: 'excel_damaged_number',
    });
    // Past 15 digits the number is another one: General shows it scientific; a format of digits shows the 15 digits
    // Excel kept and a zero, as Excel does (it showed 4.47912E+15). A phone cell is refused by its value either way.
    expect(numberText(4479123456031234, 'General')).toBe('4.47912E+15');
    expect(numberText(4479123456031234, '00000000000000000')).toBe('04479123456031230');
    expect(numberText(1234567890123456, '0')).toBe('1234567890123460');
  });

  it('shows dates by their ISO date, and a serial no date can be as the number it is', () => {
    for (const fmt of [
      'yyyy-mm-dd',
      'mm-dd-yy',
      '[$-F800]dddd\\,\\ mmmm\\ dd\\,\\ yyyy',
      'd-mmm',
      'mmm-yy',
      '[$-409]mmmm d, yyyy;@',
    ]) {
      expect(cellText({ value: plainValue(45352, fmt), numFmt: fmt }), fmt).toBe('2024-03-01');
    }
    expect(cellText({ value: plainValue(45352.75, 'm/d/yy h:mm'), numFmt: 'm/d/yy h:mm' })).toBe(
      '2024-03-01T18:00:00Z',
    );
    // Before 1900-03-01 Excel's serials count its 1900-02-29 that never was: serial 1 is 1900-01-01 (it read a day
    // early), 60 is read as 1900-02-28 (as openpyxl reads it), 61 is 1900-03-01.
    const date = (serial: number, fmt = 'mm-dd-yy') => cellText({ value: plainValue(serial, fmt), numFmt: fmt });
    expect([1, 59, 60, 61, 59.5].map((v) => date(v))).toEqual([
      '1900-01-01',
      '1900-02-28',
      '1900-02-28',
      '1900-03-01',
      '1900-02-28T12:00:00Z',
    ]);
    // A serial below 1 in a date format is a time of day with no date (it showed 1899-12-30T12:00:00Z).
    expect(plainValue(0.5, 'm/d/yy h:mm')).toBe(0.5);
    expect([date(0.5, 'm/d/yy h:mm'), date(0.75, 'mm-dd-yy'), date(0, 'mm-dd-yy')]).toEqual([
      '12:00:00',
      '18:00:00',
      '00:00:00',
    ]);
    // A time of day or a duration is not a date: it stays a number, shown as Excel shows it.
    expect(plainValue(0.5, 'hh:mm')).toBe(0.5);
    expect(cellText({ value: plainValue(0.5, 'hh:mm'), numFmt: 'hh:mm' })).toBe('12:00');
    expect(plainValue(100, '[s]')).toBe(100);
    // Excel shows ##### for a negative serial or one past 9999-12-31 in a date format: the number is kept instead.
    expect(cellText({ value: plainValue(-1, 'yyyy-mm-dd'), numFmt: 'yyyy-mm-dd' })).toBe('-1');
    expect(cellText({ value: plainValue(3e6, 'yyyy-mm-dd'), numFmt: 'yyyy-mm-dd' })).toBe('3000000');
  });

  it('applies a text section to a text cell, and leaves text alone under any other format', () => {
    expect(cellText({ value: '07912 345602', numFmt: '0;-0;0;"Tel: "@' })).toBe('Tel: 07912 345602');
    expect(cellText({ value: 'abc', numFmt: '"<"@">"' })).toBe('<abc>');
    expect(cellText({ value: '07912345602', numFmt: '00000000000' })).toBe('07912345602');
    expect(cellText({ value: '07912345602', numFmt: '@' })).toBe('07912345602');
  });

  it("shows a currency's locale tag as Excel does: separators from the system (en-US), the symbol kept", () => {
    expect(numberText(1234.5, '[$€-407]#,##0.00')).toBe('€1,234.50');
    expect(numberText(1234.5, '#,##0.00 [$€-407]')).toBe('1,234.50 €');
    expect(numberText(1.5, '[$-407]0.00')).toBe('1.50');
    expect(numberText(1234.5, '[$$-409]#,##0.00')).toBe('$1,234.50');
    // A time format keeps its locale: the AM/PM words are the locale's.
    expect(numberText(0.75, '[$-409]h:mm AM/PM')).toBe('6:00 PM');
  });

  it('falls back to General for a format numfmt cannot read, never losing the number', () => {
    expect(numberText(7912345602, '0.0.0"')).toBe('7912345602');
    expect(numberText(1.5, '[Unknown')).toBe('1.5');
  });

  it('knows the built-in formats by id as ECMA-376 spells them, the locale ones as Excel in en-US', () => {
    expect(builtInFormat(0)).toBe('General');
    expect(builtInFormat(10)).toBe('0.00%');
    expect(builtInFormat(14)).toBe('mm-dd-yy');
    expect(builtInFormat(22)).toBe('m/d/yy h:mm');
    expect(builtInFormat(46)).toBe('[h]:mm:ss');
    expect(builtInFormat(47)).toBe('mm:ss.0');
    expect(numberText(1234.5, builtInFormat(5))).toBe('$1,235 ');
    expect(numberText(-1234.5, builtInFormat(8))).toBe('($1,234.50)');
    expect(builtInFormat(164)).toBeUndefined();
  });
});

describe('_xHHHH_ escapes (ECMA-376 Part 1, 22.9.2.19)', () => {
  it.each([
    ['_x005F_x000D_', '_x000D_'],
    ['ABC_x000D_\nDEF', 'ABC\r\nDEF'],
    ['_x0041__x0042_', 'AB'],
    ['_x000d_', '\r'],
    ['_xD83D__xDE00_', '😀'],
    ['_x00G1_ and _x41_', '_x00G1_ and _x41_'],
    ['a_x005F_b', 'a_b'],
    ['+44_x0020_7912', '+44 7912'],
  ])('%j reads %j', (raw, read) => {
    expect(decodeEscapes(raw)).toBe(read);
  });

  it('are decoded in shared strings and inline strings, run by run, and nowhere else', async () => {
    const book = file('escapes.xlsx');
    await writeHandMadeWorkbook(book, {
      sharedStrings: ['_x005F_x000D_', 'ABC_x000D_\nDEF'],
      sheets: [
        {
          name: 'S',
          rows:
            '<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c>' +
            `${text('C1', 'x_x0009_y')}<c r="D1" t="inlineStr"><is><r><t>_x00</t></r><r><t>41_</t></r></is></c></row>`,
        },
      ],
    });
    const rows: unknown[][] = [];
    for await (const row of readSheetRows(book)) rows.push(row.cells.map((c) => c?.value));
    // A run is one string: an escape cut across two runs is two texts, as Excel writes and reads them.
    expect(rows).toEqual([['_x000D_', 'ABC\r\nDEF', 'x\ty', '_x0041_']]);
  });
});

describe('a workbook with number formats of its own, read by dnc batch', () => {
  it('writes each cell as Excel shows it: custom and built-in formats from styles.xml', async () => {
    const book = file('formats.xlsx');
    // Styles: 0 General, 1 custom 164 (a phone layout), 2 built-in 10 (0.00%), 3 built-in 20 (h:mm), 4 built-in 46, 5 built-in 14.
    const styles =
      '<numFmts count="1"><numFmt numFmtId="164" formatCode="&quot;+44 &quot;0000 000000"/></numFmts>' +
      '<cellXfs count="6"><xf numFmtId="0"/><xf numFmtId="164"/><xf numFmtId="10"/><xf numFmtId="20"/><xf numFmtId="46"/><xf numFmtId="14"/></cellXfs>';
    const row = (r: number, phone: string, cells: string) => `<row r="${r}">${phone}${cells}</row>`;
    await writeHandMadeWorkbook(book, {
      styles,
      sheets: [
        {
          name: 'Calls',
          rows:
            row(
              1,
              text('A1', 'phone'),
              text('B1', 'share') + text('C1', 'at') + text('D1', 'took') + text('E1', 'on'),
            ) +
            row(
              2,
              '<c r="A2" s="1"><v>7912345601</v></c>',
              '<c r="B2" s="2"><v>0.01234</v></c><c r="C2" s="3"><v>0.6114583333333333</v></c><c r="D2" s="4"><v>10.423726851851852</v></c><c r="E2" s="5"><v>45352</v></c>',
            ) +
            row(3, '<c r="A3"><v>447912345602</v></c>', '<c r="B3" s="2"><v>0.00005</v></c>'),
        },
      ],
    });
    const out = file('formats.results.csv');
    const r = await runDnc(['batch', book, '-o', out, '--country', 'GB'], { env: ctx.env, cwd: ctx.dir });
    expect(r.code, r.stderr).toBe(0);
    const rows = readCsvIndependently(out);
    expect(rows.slice(1).map((x) => x.slice(0, 6))).toEqual([
      ['+44 7912 345601', '1.23%', '14:40', '250:10:10', '2024-03-01', '+447912345601'],
      ['447912345602', '0.01%', '', '', '', '+447912345602'],
    ]);
    expect(readFileSync(out, 'utf8')).not.toContain('1899');
  });
});

describe('formats a workbook defines under built-in ids, and dates before 1900-03-01, through a batch', () => {
  it('reads ids 0-2 as the workbook defines them and writes early dates back to the day openpyxl reads', async () => {
    const book = file('redefined.xlsx');
    // Style 0 is format id 0 redefined as 0.000 (Excel, LibreOffice and openpyxl show 1234.500; dnc showed 1234.5),
    // style 1 id 1 as 0.0, style 2 id 2 as #,##0.000; style 3 the built-in date 14, style 4 a custom `0`.
    const styles =
      '<numFmts count="4"><numFmt numFmtId="0" formatCode="0.000"/><numFmt numFmtId="1" formatCode="0.0"/>' +
      '<numFmt numFmtId="2" formatCode="#,##0.000"/><numFmt numFmtId="164" formatCode="0"/></numFmts>' +
      '<cellXfs count="5"><xf numFmtId="0"/><xf numFmtId="1"/><xf numFmtId="2"/><xf numFmtId="14"/><xf numFmtId="164"/></cellXfs>';
    const v = (ref: string, value: string, s?: number) => `<c r="${ref}"${s ? ` s="${s}"` : ''}><v>${value}</v></c>`;
    const header = ['phone', 'a', 'b', 'c', 'born', 'id'].map((h, i) => text(`${'ABCDEF'[i]}1`, h)).join('');
    const data =
      text('A2', '+12025550123') +
      v('B2', '1234.5') +
      v('C2', '1234.5', 1) +
      v('D2', '1234.5', 2) +
      v('E2', '1', 3) +
      v('F2', '1234567890123456', 4);
    await writeHandMadeWorkbook(book, {
      styles,
      sheets: [{ name: 'Calls', rows: `<row r="1">${header}</row><row r="2">${data}</row>` }],
    });
    const csv = file('redefined.results.csv');
    const r = await runDnc(['batch', book, '-o', csv, '--country', 'US'], { env: ctx.env, cwd: ctx.dir });
    expect(r.code, r.stderr).toBe(0);
    expect(readCsvIndependently(csv)[1]!.slice(1, 6)).toEqual([
      '1234.500',
      '1234.5',
      '1,234.500',
      '1900-01-01',
      '1234567890123460',
    ]);
    // The results workbook keeps the date: openpyxl reads back serial 1's day, 1900-01-01 (it read 1900-01-02).
    const xlsx = file('redefined.results.xlsx');
    const w = await runDnc(['batch', book, '-o', xlsx, '--country', 'US'], { env: ctx.env, cwd: ctx.dir });
    expect(w.code, w.stderr).toBe(0);
    const [results] = readWorkbookIndependently(xlsx);
    expect(results!.rows[1]![4]).toMatchObject({ v: '1900-01-01T00:00:00', t: 'd' });
  });
});
