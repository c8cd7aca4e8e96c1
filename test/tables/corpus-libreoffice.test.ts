// Every workbook of the corpus (fixtures/corpus/*/*.xlsx), every sheet LibreOffice saves, every cell: the text dnc
// reads in it is the text LibreOffice Calc shows ("save cell contents as shown", cached in DIR/lo/), but for the cells
// fixtures/corpus/expected.json's `libreoffice` section lists with their reasons; and no workbook makes dnc crash.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DncError } from '../../src/errors.js';
import { cellText, loadNumberFormats } from '../../src/tables/xlsx-cells.js';
import { readSheetRows } from '../../src/tables/xlsx-input.js';
import { spawnDnc } from '../helpers/cli.js';
import { CsvOracle } from '../helpers/csv-oracle.js';
import {
  cachedLibreOfficeBooks,
  convertWithLibreOffice,
  LIBREOFFICE_CSV_FILTER,
  libreOfficeVersion,
  type LibreOfficeBook,
} from '../helpers/libreoffice.js';
import { FIXTURES, scratch, sha256 } from '../batch/helpers.js';

const CORPUS = path.join(FIXTURES, 'corpus');
const DIRS = readdirSync(CORPUS, { withFileTypes: true })
  .filter((d) => d.isDirectory() && readdirSync(path.join(CORPUS, d.name)).some((f) => f.endsWith('.xlsx')))
  .map((d) => d.name);
const booksIn = (dir: string): string[] =>
  readdirSync(path.join(CORPUS, dir))
    .filter((f) => f.endsWith('.xlsx'))
    .sort();

/** expected.json's `libreoffice` section: cells are 'BOOK SHEET' -> A1 -> [dnc's text, LibreOffice's, reason]. */
interface Expected {
  reasons: Record<string, string>;
  cells: Record<string, Record<string, [string, string, string]>>;
  sheets: Record<string, string>;
  exits: Record<string, { code: number; why: string }>;
}
const expected = (JSON.parse(readFileSync(path.join(CORPUS, 'expected.json'), 'utf8')) as { libreoffice: Expected })
  .libreoffice;

const columnName = (n: number): string =>
  (n > 26 ? columnName(Math.floor((n - 1) / 26)) : '') + String.fromCharCode(65 + ((n - 1) % 26));

/** What dnc reads in each cell of a sheet that holds something, by reference (A1); or the error it refuses it with. */
async function dncCells(file: string, sheet: string): Promise<Map<string, string> | string> {
  const cells = new Map<string, string>();
  try {
    for await (const row of readSheetRows(file, sheet)) {
      row.cells.forEach((c, i) => {
        const text = cellText(c);
        if (text !== '') cells.set(`${columnName(i + 1)}${row.number}`, text);
      });
    }
  } catch (err) {
    if (err instanceof DncError) return `${err.code}: ${err.message}`;
    throw err;
  }
  return cells;
}

/** LibreOffice's text in each cell that holds something, by reference (its CSV starts at A1). */
function loCells(rows: string[][]): Map<string, string> {
  const cells = new Map<string, string>();
  rows.forEach((row, r) => row.forEach((text, c) => text !== '' && cells.set(`${columnName(c + 1)}${r + 1}`, text)));
  return cells;
}

describe('the corpus against LibreOffice (fixtures/corpus/*/lo/)', () => {
  it('has LibreOffice CSV cached for every workbook, and LibreOffice, when installed, still writes it', () => {
    const version = libreOfficeVersion();
    const update = process.env.DNC_UPDATE_LIBREOFFICE === '1';
    for (const dir of DIRS) {
      const books = booksIn(dir);
      // Another LibreOffice shows some cells otherwise: only the version that made the cache is held to it.
      const same =
        version !== undefined && (update || version === cachedLibreOfficeBooks(path.join(CORPUS, dir)).version);
      if (same) {
        const tmp = scratch();
        try {
          const fresh = convertWithLibreOffice(
            books.map((b) => path.join(CORPUS, dir, b)),
            tmp.dir,
          );
          const lo = path.join(CORPUS, dir, 'lo');
          if (update) {
            rmSync(lo, { recursive: true, force: true });
            mkdirSync(lo);
            for (const b of fresh)
              for (const s of b.sheets) writeFileSync(path.join(lo, s.csv), readFileSync(path.join(tmp.dir, s.csv)));
            const index = { version, filter: LIBREOFFICE_CSV_FILTER, books: fresh };
            writeFileSync(path.join(lo, 'sheets.json'), `${JSON.stringify(index, null, 1)}\n`);
          }
          const cached = cachedLibreOfficeBooks(path.join(CORPUS, dir));
          expect(fresh, dir).toEqual(cached.books);
          for (const b of fresh) {
            for (const s of b.sheets) {
              expect(readFileSync(path.join(tmp.dir, s.csv), 'utf8'), `${dir}/${b.book} ${s.sheet}`).toBe(
                readFileSync(path.join(CORPUS, dir, 'lo', s.csv), 'utf8'),
              );
            }
          }
        } finally {
          tmp.remove();
        }
      }
      const cached = cachedLibreOfficeBooks(path.join(CORPUS, dir));
      expect(cached.books.map((b) => b.book)).toEqual(books);
      for (const b of cached.books)
        expect(sha256(path.join(CORPUS, dir, b.book)), `${dir}/${b.book} changed: DNC_UPDATE_LIBREOFFICE=1`).toBe(
          b.sha256,
        );
      for (const b of cached.books)
        for (const s of b.sheets) expect(existsSync(path.join(CORPUS, dir, 'lo', s.csv)), s.csv).toBe(true);
    }
  }, 600_000);

  it('dnc batch --dry-run reads or refuses every workbook, never exit 1 but the known failures', async () => {
    const tmp = scratch();
    const exits: Record<string, { code: number; why: string }> = {};
    try {
      const books = DIRS.flatMap((dir) => booksIn(dir).map((b) => `${dir}/${b}`));
      // Two at a time, each in a fresh process: one that has loaded numfmt hides the General-fraction crash.
      const next = async (): Promise<void> => {
        for (let book = books.shift(); book !== undefined; book = books.shift()) {
          const out = path.join(tmp.dir, `${book.replace('/', '-')}.csv`);
          const r = await spawnDnc(
            ['batch', path.join(CORPUS, book), '--dry-run', '--no-header', '--column', '1', '-o', out],
            {
              cwd: tmp.dir,
              timeoutMs: 120_000,
            },
          );
          if (r.code !== 0)
            exits[book] = {
              code: r.code,
              why: expected.exits[book]?.why ?? r.stderr.split('\n').find((l) => l.startsWith('dnc:')) ?? r.stderr,
            };
        }
      };
      await Promise.all([next(), next()]);
    } finally {
      tmp.remove();
    }
    if (process.env.DNC_DUMP_DIFFERENCES)
      writeFileSync(`${process.env.DNC_DUMP_DIFFERENCES}.exits`, JSON.stringify(exits, null, 1));
    expect(exits).toEqual(expected.exits);
    for (const [book, { code }] of Object.entries(exits)) expect([1, 3], book).toContain(code);
  }, 600_000);

  it('reads every cell of every sheet as LibreOffice shows it, but for the differences listed', async () => {
    await loadNumberFormats();
    const oracle = new CsvOracle();
    const found: Record<string, Record<string, [string, string, string]>> = {};
    const sheetsFound: Record<string, string> = {};
    let compared = 0;
    try {
      for (const dir of DIRS) {
        for (const book of cachedLibreOfficeBooks(path.join(CORPUS, dir)).books as LibreOfficeBook[]) {
          const file = path.join(CORPUS, dir, book.book);
          if (book.error) sheetsFound[`${dir}/${book.book}`] = `LibreOffice: ${book.error}`;
          for (const { sheet, csv } of book.sheets) {
            const key = `${dir}/${book.book} ${sheet}`;
            const ours = await dncCells(file, sheet);
            const theirs = loCells(await oracle.read(path.join(CORPUS, dir, 'lo', csv), ','));
            if (typeof ours === 'string') {
              sheetsFound[key] = `dnc: ${ours}`;
              continue;
            }
            for (const ref of new Set([...ours.keys(), ...theirs.keys()])) {
              compared++;
              const d = ours.get(ref) ?? '';
              const l = theirs.get(ref) ?? '';
              if (d !== l) (found[key] ??= {})[ref] = [d, l, expected.cells[key]?.[ref]?.[2] ?? '?'];
            }
          }
        }
      }
    } finally {
      oracle.close();
    }
    if (process.env.DNC_DUMP_DIFFERENCES)
      writeFileSync(process.env.DNC_DUMP_DIFFERENCES, JSON.stringify({ compared, sheetsFound, found }, null, 1));
    // A sheet one reader cannot read: listed by who cannot (and, for dnc, its error code) with the reason.
    expect(Object.keys(sheetsFound).sort()).toEqual(Object.keys(expected.sheets).sort());
    for (const [key, said] of Object.entries(sheetsFound)) {
      const [who, code] = expected.sheets[key]!.split(' ');
      expect(
        said.startsWith(who!) && (who !== 'dnc:' || said.includes(code!.replace(/:$/, ''))),
        `${key}: ${said}`,
      ).toBe(true);
    }
    expect(found).toEqual(expected.cells);
    for (const cells of Object.values(found))
      for (const [, , why] of Object.values(cells)) expect(expected.reasons[why], why).toBeTruthy();
    expect(compared).toBeGreaterThan(6_000);
  }, 300_000);
});
