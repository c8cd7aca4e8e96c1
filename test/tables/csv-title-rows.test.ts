// Lines above a CSV file's header: title lines (--skip-rows N), as a CSV saved from a workbook with a title row has
// them, and Excel's `sep=;` line naming the delimiter. Outputs read back with Python's csv module.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runDnc } from '../helpers/cli.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { lookedUp, sandboxForFile } from '../batch/helpers.js';

const ctx = sandboxForFile();
let n = 0;
const file = (name: string, content: string) => {
  const f = path.join(ctx.dir, `${++n}-${name}`);
  writeFileSync(f, content);
  return f;
};
const batch = (...args: string[]) => runDnc(['batch', ...args], { env: ctx.env, cwd: ctx.dir });

describe('title lines above a CSV header', () => {
  const list = 'name,phone,city\nAnn,+1 202 555 0123,Boston\nBob,+1 202 555 0124,Austin\n';

  it('are skipped with --skip-rows N; the results start at the header, and verify reads the same rows', async () => {
    const input = file('titled.csv', `Quarterly call list\nExported 2026-12-01\n${list}`);
    const out = `${input}.results.csv`;
    const r = await batch(input, '-o', out, '--skip-rows', '2');
    expect(r.code, r.stderr).toBe(0);
    const rows = readCsvIndependently(out);
    expect(rows[0]!.slice(0, 4)).toEqual(['name', 'phone', 'city', 'dnc_phone_e164']);
    expect(rows.slice(1).map((x) => x.slice(0, 4))).toEqual([
      ['Ann', '+1 202 555 0123', 'Boston', '+12025550123'],
      ['Bob', '+1 202 555 0124', 'Austin', '+12025550124'],
    ]);
    const v = await runDnc(['verify', out], { env: ctx.env, cwd: ctx.dir });
    expect(v.code, v.stdout + v.stderr).toBe(0);
  });

  it('name the line read as the header, and the --skip-rows that gets past the title (LibreOffice pads it)', async () => {
    // LibreOffice (and Excel) save a workbook's title row padded with delimiters: a header of one named cell.
    for (const title of ['Quarterly call list', 'Quarterly call list,,']) {
      const input = file('title.csv', `${title}\n${list}`);
      const r = await batch(input, '--dry-run');
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain('[E_COLUMN_NOT_FOUND]');
      expect(r.stderr).toContain('the header is line 1');
      expect(r.stderr).toContain("line 2 ('name', 'phone', 'city') looks like the header: give --skip-rows 1");
      const fixed = await batch(input, '--dry-run', '--skip-rows', '1', '--json');
      expect(fixed.code, fixed.stderr).toBe(0);
      expect(JSON.parse(fixed.stdout)).toMatchObject({ rows: 2, unique_numbers: 2 });
    }
    expect(lookedUp(ctx.sb)).toEqual([]);
  });

  it('name the line that holds the header when several lines are above it (it took one try a line)', async () => {
    const input = file('two-titles.csv', `Quarterly call list\nExported 2026-12-01\n\n${list}`);
    const r = await batch(input, '--dry-run');
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain("line 4 ('name', 'phone', 'city') looks like the header: give --skip-rows 3");
    const fixed = await batch(input, '--dry-run', '--skip-rows', '3', '--json');
    expect(fixed.code, fixed.stderr).toBe(0);
  });

  it('keep messages on the lines of the file: a bad row below them is named by its own line', async () => {
    const input = file('bad.csv', `Quarterly call list\n${list}Cy,+1 202 555 0125\n`);
    const r = await batch(input, '--dry-run', '--skip-rows', '1');
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toContain('line 5: 2 field(s) where the header has 3');
  });

  it('end the file: exit 3 saying so', async () => {
    const input = file('short.csv', 'Quarterly call list\n');
    const r = await batch(input, '--dry-run', '--skip-rows', '1');
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toContain('the file has nothing below the 1 line(s) --skip-rows skips');
  });
});

describe("Excel's sep= line", () => {
  it('names the delimiter and is not read as a row; the results keep the delimiter', async () => {
    const input = file('sep.csv', 'sep=;\r\nname;phone\r\nAnn;+1 202 555 0126\r\n');
    const out = `${input}.results.csv`;
    const r = await batch(input, '-o', out);
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(out, 'utf8').split('\r\n')[0]!.startsWith('name;phone;dnc_phone_e164;')).toBe(true);
    const rows = readCsvIndependently(out, ';');
    expect(rows[1]!.slice(0, 3)).toEqual(['Ann', '+1 202 555 0126', '+12025550126']);
    const v = await runDnc(['verify', out], { env: ctx.env, cwd: ctx.dir });
    expect(v.code, v.stdout + v.stderr).toBe(0);
  });
});
