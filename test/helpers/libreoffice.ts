// A second reader of workbooks that shows text as a spreadsheet does: LibreOffice Calc headless (Debian's
// libreoffice-calc-nogui), each worksheet saved as CSV with "save cell contents as shown". Its CSV files are cached
// beside the corpus (fixtures/corpus/DIR/lo/) so the corpus test runs without LibreOffice.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * The CSV filter's options, by position: field separator 44 (,), text delimiter 34 ("), character set 76 (UTF-8),
 * first line 1, no column formats, language 1033 (en-US), quoted fields not as text, detect special numbers,
 * save cell contents as shown (true), cell formulas not exported, spaces not removed, every sheet (-1: one file
 * NAME-SHEET.csv per sheet).
 */
export const LIBREOFFICE_CSV_FILTER = 'csv:Text - txt - csv (StarCalc):44,34,76,1,,1033,false,true,true,false,false,-1';

/** One workbook as LibreOffice saved it: each sheet's CSV file (in LibreOffice's sheet order), or why it could not. */
export interface LibreOfficeBook {
  book: string;
  /** The workbook's SHA-256: a workbook changed since its CSV was made fails the test until it is made again. */
  sha256: string;
  sheets: Array<{ sheet: string; csv: string }>;
  error?: string;
}

/** LibreOffice's version line, or undefined when soffice is not installed. */
export function libreOfficeVersion(): string | undefined {
  const r = spawnSync('soffice', ['--version'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/**
 * Saves every sheet of each workbook (all in one folder, names unique) as CSV into outDir with one soffice run,
 * in a fresh user profile (a shared one is locked by a concurrent run), in the C.UTF-8 locale.
 */
export function convertWithLibreOffice(files: readonly string[], outDir: string): LibreOfficeBook[] {
  const profile = mkdtempSync(path.join(os.tmpdir(), 'dnc-lo-profile-'));
  try {
    const stdout = execFileSync(
      'soffice',
      [
        `-env:UserInstallation=file://${profile}`,
        '--headless',
        '--convert-to',
        LIBREOFFICE_CSV_FILTER,
        '--outdir',
        outDir,
        ...files,
      ],
      {
        encoding: 'utf8',
        env: { ...process.env, LC_ALL: 'C.UTF-8', LANG: 'C.UTF-8' },
        timeout: 600_000,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    return booksOf(stdout, files);
  } finally {
    rmSync(profile, { recursive: true, force: true });
  }
}

/** soffice's report, line by line: "convert FILE …", then "Writing sheet NAME -> PATH" per sheet, or an error. */
function booksOf(stdout: string, files: readonly string[]): LibreOfficeBook[] {
  const sha256 = (f: string): string => createHash('sha256').update(readFileSync(f)).digest('hex');
  const books = new Map(
    files.map((f) => [path.basename(f), { book: path.basename(f), sha256: sha256(f), sheets: [] } as LibreOfficeBook]),
  );
  let current: LibreOfficeBook | undefined;
  for (const line of stdout.split('\n')) {
    const convert = /^convert (.+?) (?:->|using filter)/.exec(line);
    if (convert) current = books.get(path.basename(convert[1]!));
    const sheet = /^Writing sheet (.*) -> (.+)$/.exec(line);
    if (sheet && current) current.sheets.push({ sheet: sheet[1]!, csv: path.basename(sheet[2]!) });
    if (/^Error:/.test(line) && current) current.error = line;
  }
  for (const b of books.values()) if (b.sheets.length === 0) b.error ??= 'LibreOffice wrote no sheet';
  return [...books.values()];
}

/** The cached conversions of one corpus folder (DIR/lo/sheets.json and the CSV files beside it). */
export function cachedLibreOfficeBooks(dir: string): { version: string; filter: string; books: LibreOfficeBook[] } {
  return JSON.parse(readFileSync(path.join(dir, 'lo', 'sheets.json'), 'utf8')) as {
    version: string;
    filter: string;
    books: LibreOfficeBook[];
  };
}
