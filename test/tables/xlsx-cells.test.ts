// A workbook cell's text is what Excel shows: number formats applied, damaged numbers shown as Excel shows them (and refused).
import { beforeAll, describe, expect, it } from 'vitest';
import { PhoneCache } from '../../src/phone/phone-cache.js';
import { cellText, isDateFormat, loadNumberFormats, numberText, plainValue } from '../../src/tables/xlsx-cells.js';

// numfmt is loaded by the reader when a workbook formats numbers; these tests call the formatting directly.
beforeAll(loadNumberFormats);

describe('a number cell as Excel shows it', () => {
  it.each([
    [7912345602, '00000000000', '07912345602'],
    [7912345602, '0', '7912345602'],
    [7912345602, 'General', '7912345602'],
    [7912345602, undefined, '7912345602'],
    [2025550123, '(000) 000-0000', '(202) 555-0123'],
    [2025550123, '"+1 "000 000 0000', '+1 202 555 0123'],
    [1234567, '#,##0', '1,234,567'],
    [42, '0000;[Red]-0000', '0042'],
    [-42, '0000', '-0042'],
    [12, '@', '12'],
    [1.5, '0.00', '1.50'],
    [1.5, 'General', '1.5'],
    // A scientific format shows what Excel shows (and the text is refused as a damaged number, below).
    [447912345603, '0.00E+00', '4.48E+11'],
    // Past 15 digits a format of digits shows the 15 Excel kept and zeros, as Excel does (refused by its value).
    [4479123456031234, '0', '4479123456031230'],
    [12345678901234567890, 'General', '1.23457E+19'],
  ])('%d with format %s shows %s', (value, format, text) => {
    expect(numberText(value, format)).toBe(text);
  });

  it('refuses the scientific text of a damaged number as excel_damaged_number, and looks up the padded one', () => {
    const phones = new PhoneCache('GB');
    expect(phones.normalise(numberText(447912345603, '0.00E+00'))).toMatchObject({
      ok: false,
      code: 'excel_damaged_number',
    });
    // Its text is no phone number either; the cell itself is refused as excel_damaged_number by its value
    // (test/phone/row-numbers.test.ts).
    expect(phones.normalise(numberText(4479123456031234, '0'))).toMatchObject({ ok: false });
    expect(phones.normalise(numberText(7912345602, '00000000000'))).toMatchObject({ ok: true, e164: '+447912345602' });
  });

  it('reads dates, booleans, errors, rich text and formulas (as their cached values)', () => {
    expect(isDateFormat('yyyy\\-mm\\-dd')).toBe(true);
    expect(isDateFormat('mm-dd-yy')).toBe(true);
    expect(isDateFormat('0000')).toBe(false);
    expect(isDateFormat('[Red]0.00')).toBe(false);
    expect(cellText({ value: plainValue(45352, 'yyyy-mm-dd'), numFmt: 'yyyy-mm-dd' })).toBe('2024-03-01');
    expect(cellText({ value: plainValue(45352.5, 'yyyy-mm-dd hh:mm'), numFmt: 'yyyy-mm-dd hh:mm' })).toBe(
      '2024-03-01T12:00:00Z',
    );
    expect(cellText({ value: true })).toBe('TRUE');
    expect(cellText({ value: plainValue({ error: '#N/A' }, undefined) })).toBe('#N/A');
    expect(cellText({ value: plainValue({ richText: [{ text: '+44 ' }, { text: '7912' }] }, undefined) })).toBe(
      '+44 7912',
    );
    expect(cellText({ value: plainValue({ formula: 'A1&"x"', result: '+447912345604' }, undefined) })).toBe(
      '+447912345604',
    );
    expect(cellText({ value: plainValue({ formula: '1/0', result: Number.NaN }, undefined) })).toBe('#VALUE!');
    expect(cellText({ value: plainValue({ formula: 'NOW()' }, undefined) })).toBe('');
  });
});
