// The corpus (fixtures/corpus/) against a second reader that shows cells as a spreadsheet does: LibreOffice Calc,
// headless, saving each sheet as CSV with "save cell contents as shown". Every cell of every sheet is compared with
// the text dnc reads; each difference is either one of dnc's rules (a date is its ISO date; a formula is never
// calculated) or listed in fixtures/corpus/expected.json (`libreoffice`) with its reason.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cellText } from '../../src/tables/xlsx-cells.js';
import { readSheetRows } from '../../src/tables/xlsx-input.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { spawnDnc } from '../helpers/cli.js';
import { FIXTURES } from './helpers.js';

const CORPUS = path.join(FIXTURES, 'corpus');
const FOLDERS = ['xlsx2csv', 'calamine', 'exceljs', 'sheetjs', 'readxl', 'made'];
const workbooks = FOLDERS.flatMap((d) =>
  readdirSync(path.join(CORPUS, d))
    .filter((f) => f.endsWith('.xlsx'))
    .map((f) => `${d}/${f}`),
);
const expected = (
  JSON.parse(readFileSync(path.join(CORPUS, 'expected.json'), 'utf8')) as {
    libreoffice: Record<string, Record<string, { dnc: string; libreoffice: string; why: string }>>;
  }
).libreoffice;

function soffice(): string | null {
  try {
    return execFileSync('sh', ['-c', 'command -v soffice'], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}

const columnName = (n: number): string =>
  (n > 26 ? columnName(Math.floor((n - 1) / 26)) : '') + String.fromCharCode(65 + ((n - 1) % 26));

/** Every sheet of every corpus workbook as LibreOffice shows it: book → sheet → rows (from A1). */
function readAllWithLibreOffice(bin: string, dir: string): Map<string, Map<string, string[][]>> {
  const books = path.join(dir, 'books');
  mkdirSync(books);
  const byCopy = new Map<string, string>();
  for (const book of workbooks) {
    const copy = `${book.replace('/', '__')}`;
    copyFileSync(path.join(CORPUS, book), path.join(books, copy));
    byCopy.set(copy.replace(/\.xlsx$/, ''), book);
  }
  // Field separator, quote, UTF-8, …, save cell contents as shown, not formulas, every sheet (-1) to NAME-SHEET.csv.
  const filter = 'csv:Text - txt - csv (StarCalc):44,34,76,1,,0,false,true,true,false,false,-1';
  const log = execFileSync(
    bin,
    [
      `-env:UserInstallation=file://${dir}/profile`,
      '--headless',
      '--convert-to',
      filter,
      '--outdir',
      `${dir}/csv`,
    ].concat(readdirSync(books).map((f) => path.join(books, f))),
    { encoding: 'utf8', timeout: 280_000, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const out = new Map<string, Map<string, string[][]>>();
  for (const m of log.matchAll(/^Writing sheet (.*) -> (.*)$/gm)) {
    const csv = m[2]!.trim();
    const copy = path.basename(csv).slice(0, -`-${m[1]}.csv`.length);
    const book = byCopy.get(copy);
    if (!book) continue;
    if (!out.has(book)) out.set(book, new Map());
    out.get(book)!.set(m[1]!, readCsvIndependently(csv));
  }
  return out;
}

/** The text dnc reads in each cell of a sheet, by reference; a date cell and an uncalculated formula say so. */
async function readWithDnc(file: string, sheet: string): Promise<Map<string, { text: string; rule?: string }>> {
  const cells = new Map<string, { text: string; rule?: string }>();
  for await (const row of readSheetRows(file, sheet)) {
    row.cells.forEach((c, i) => {
      if (!c) return;
      const rule = c.value instanceof Date ? 'date' : c.formula !== undefined ? 'formula' : undefined;
      cells.set(`${columnName(i + 1)}${row.number}`, { text: cellText(c), ...(rule ? { rule } : {}) });
    });
  }
  return cells;
}

/**
 * Whether LibreOffice's text of a date cell names the day of dnc's ISO date, where it can be read as one (`2024-03-01`,
 * `3/1/24`, `20/11/20`): a date a day, or 1,462 days, away is not dnc's rule but a misread. Other forms pass.
 */
function sameDay(iso: string, shown: string): boolean {
  const [y, m, d] = iso.slice(0, 10).split('-').map(Number) as [number, number, number];
  const isoLike = /^(\d{4})-(\d{2})-(\d{2})/.exec(shown);
  if (isoLike) return Number(isoLike[1]) === y && Number(isoLike[2]) === m && Number(isoLike[3]) === d;
  const us = /^(\d{1,2})\/(\d{1,2})\/(\d{2}|\d{4})\b/.exec(shown);
  if (!us) return true;
  const year = us[3]!.length === 4 ? Number(us[3]) : Number(us[3]) + (Number(us[3]) < 30 ? 2000 : 1900);
  // Month first or day first: the format says which, and either is a reading of the same day.
  const [a, b] = [Number(us[1]), Number(us[2])];
  return year === y && ((a === m && b === d) || (a === d && b === m));
}

/** A listed difference holds while both readers still show what it says. */
function sameAsListed(listed: { dnc: string; libreoffice: string } | undefined, ours: string, theirs: string): boolean {
  return listed !== undefined && listed.dnc === ours && listed.libreoffice === theirs;
}

const bin = soffice();
const dir = mkdtempSync(path.join(tmpdir(), 'dnc-corpus-lo-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the corpus, read by the built CLI', () => {
  it('never crashes on a workbook: each is read (exit 0) or refused with a typed error (exit 2 or 3)', async () => {
    const codes: Record<string, number> = {};
    const queue = [...workbooks];
    const worker = async () => {
      for (let book = queue.shift(); book; book = queue.shift()) {
        const args = ['batch', path.join(CORPUS, book), '--dry-run', '--no-header', '--column', '1', '--country', 'US'];
        // Spawned: each run loads its modules afresh, as a user's does (numfmt is loaded only when a sheet needs it).
        const r = await spawnDnc(args, { cwd: dir, timeoutMs: 60_000 });
        codes[book] = r.code ?? -1;
        expect([0, 2, 3], `${book}: exit ${r.code}: ${r.stderr}`).toContain(r.code);
      }
    };
    await Promise.all([worker(), worker(), worker()]);
    expect(Object.keys(codes)).toHaveLength(workbooks.length);
  }, 300_000);

  it('holds each source with its licence', () => {
    for (const [folder, licence] of [
      ['sheetjs', 'LICENSE'],
      ['readxl', 'LICENSE.md'],
    ]) {
      expect(readFileSync(path.join(CORPUS, folder!, licence!), 'utf8')).toMatch(/Apache License|MIT License/);
    }
  });
});

describe('the corpus against LibreOffice', () => {
  if (!bin) {
    if (process.env.CI === 'true')
      it('[libreoffice] is required in CI', () => {
        throw new Error('no soffice: .ci/run installs libreoffice-calc-nogui');
      });
    else it.skip('[libreoffice] skipped: no soffice (apt-get install libreoffice-calc-nogui)', () => {});
    return;
  }

  it('shows every cell of every sheet as dnc reads it, but for dnc rules and the differences listed', async () => {
    const shown = readAllWithLibreOffice(bin, dir);
    const unlisted: Record<string, Record<string, { dnc: string; libreoffice: string }>> = {};
    const counts = { compared: 0, dates: 0, formulas: 0, listed: 0 };
    for (const book of workbooks) {
      const sheets = shown.get(book);
      expect(sheets, `${book}: LibreOffice wrote no sheet`).toBeDefined();
      for (const [sheet, rows] of sheets!) {
        let ours: Map<string, { text: string; rule?: string }>;
        try {
          ours = await readWithDnc(path.join(CORPUS, book), sheet);
        } catch (err) {
          // A chart sheet: LibreOffice writes it as an empty CSV; dnc has no cells to read in it.
          expect(rows.flat().join(''), `${book} ${sheet}: ${(err as Error).message}`).toBe('');
          continue;
        }
        const refs = new Set(ours.keys());
        rows.forEach((r, i) => r.forEach((v, j) => v !== '' && refs.add(`${columnName(j + 1)}${i + 1}`)));
        for (const ref of refs) {
          const [, col, row] = /^([A-Z]+)(\d+)$/.exec(ref)!;
          const j = [...col!].reduce((n, ch) => n * 26 + ch.charCodeAt(0) - 64, 0) - 1;
          const theirs = rows[Number(row) - 1]?.[j] ?? '';
          const mine = ours.get(ref);
          counts.compared++;
          if ((mine?.text ?? '') === theirs) continue;
          if (mine?.rule === 'date' && sameDay(mine.text, theirs)) counts.dates++;
          else if (mine?.rule === 'formula') counts.formulas++;
          else if (sameAsListed(expected[book]?.[`${sheet}!${ref}`], mine?.text ?? '', theirs)) counts.listed++;
          else (unlisted[book] ??= {})[`${sheet}!${ref}`] = { dnc: mine?.text ?? '', libreoffice: theirs };
        }
      }
    }
    expect(unlisted, 'differences not listed in expected.json (libreoffice)').toEqual({});
    expect(counts.compared).toBeGreaterThan(1000);
    console.log(`corpus vs LibreOffice: ${JSON.stringify(counts)}`);
  }, 300_000);
});
