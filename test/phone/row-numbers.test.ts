// A workbook row's numbers as the batch, its render and verify read them: a number cell is judged by its value, not
// only by the text its format shows (a rounded fraction or a 16-digit number reads as another valid number).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PhoneCaches } from '../../src/phone/phone-cache.js';
import { RowNumbers } from '../../src/phone/row-numbers.js';
import { openInputLayout, readRows } from '../../src/tables/input.js';
import type { WorkbookBatch } from '../../src/tables/xlsx-input.js';
import { text, writeHandMadeWorkbook } from '../tables/workbook-zip.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-row-numbers-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const row = (r: number, ...cells: string[]) => `<row r="${r}">${cells.join('')}</row>`;
const num = (ref: string, value: string, style?: number) =>
  `<c r="${ref}"${style ? ` s="${style}"` : ''}><v>${value}</v></c>`;

/** Each data row's phone cell as shown, and what the row's reading makes of it. */
async function readPhones(rows: string, styles?: string) {
  const book = path.join(dir, `${Math.random().toString(36).slice(2)}.xlsx`);
  await writeHandMadeWorkbook(book, { sheets: [{ name: 'Calls', rows }], ...(styles ? { styles } : {}) });
  const layout = await openInputLayout(book, { header: true });
  const numbers = new RowNumbers(new PhoneCaches('US'), layout.phoneIndexes, null);
  const out: Array<{ shown: string; e164: string; code: string | undefined; message: string | undefined }> = [];
  for await (const batch of readRows(layout)) {
    const typed = (batch as WorkbookBatch).typed!;
    batch.forEach((fields, r) => {
      const [cell] = numbers.read(fields, typed[r]);
      out.push({
        shown: fields[0]!,
        e164: cell!.e164,
        code: cell!.ok ? undefined : cell!.code,
        message: cell!.ok ? undefined : cell!.message,
      });
    });
  }
  return out;
}

describe('a phone cell that is a number', () => {
  it('with a fraction is excel_damaged_number, never the rounded number General shows (it was looked up)', async () => {
    const got = await readPhones(
      row(1, text('A1', 'phone')) + row(2, num('A2', '2025550123.5')) + row(3, num('A3', '2025550123')),
    );
    expect(got[0]).toMatchObject({ shown: '2025550124', e164: '', code: 'excel_damaged_number' });
    expect(got[0]!.message).toContain('2025550123.5');
    expect(got[1]).toMatchObject({ shown: '2025550123', e164: '+12025550123', code: undefined });
  });

  it('of 16 digits is excel_damaged_number whatever its format shows', async () => {
    // Format `0` shows every digit Excel kept (the 16th is a zero): text that would read as some number.
    const styles = '<cellXfs count="2"><xf numFmtId="0"/><xf numFmtId="1" applyNumberFormat="1"/></cellXfs>';
    const got = await readPhones(row(1, text('A1', 'phone')) + row(2, num('A2', '1202555012345670', 1)), styles);
    expect(got[0]).toMatchObject({ e164: '', code: 'excel_damaged_number' });
    expect(got[0]!.message).toContain('16 digits');
  });
});
