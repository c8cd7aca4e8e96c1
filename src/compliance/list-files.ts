// Reading numbers and exemptions from CSV files, and writing the list out again: every refusal names file, line and
// value.
import { DncError, ExitCode, inputError, usageError } from '../errors.js';
import type { NormalizedPhone } from '../phone/normalize.js';
import { EXEMPTION_BASES, type ExemptionBasis } from '../stores/suppression-types.js';
import { normalizePhone } from '../phone/normalize.js';
import { dataRecordLines, openInputLayout, readRows } from '../tables/input.js';
import { listCsv } from '../tables/csv-output.js';

export interface ParsedNumber {
  e164: string;
  country: string | null;
}

/** Normalises one number to E.164 (national format with `country`); throws a DncError saying where it was. */
export async function numberFrom(raw: string, where: string, country: string | undefined): Promise<ParsedNumber> {
  const p: NormalizedPhone = normalizePhone(raw, { defaultCountry: country });
  if (!p.ok) {
    throw inputError('E_INVALID_NUMBER', `${where}${JSON.stringify(raw)}: ${p.message}`, {
      hint: 'write numbers in E.164 (+12025550123), or give --country for national format',
    });
  }
  return { e164: p.e164, country: p.country ?? null };
}

/** Normalises every argument, refusing all when any is bad (a list half changed is worse than none). */
export async function numbersFromArgs(args: readonly string[], country: string | undefined): Promise<ParsedNumber[]> {
  const out: ParsedNumber[] = [];
  const problems: DncError[] = [];
  for (const a of args) {
    try {
      out.push(await numberFrom(a, '', country));
    } catch (err) {
      problems.push(err as DncError);
    }
  }
  throwProblems(problems, args.length, 'argument');
  return out;
}

function throwProblems(problems: DncError[], total: number, what: string): void {
  if (problems.length === 0) return;
  if (problems.length === 1)
    throw Object.assign(problems[0]!, { message: `${problems[0]!.message}; nothing was changed` });
  const shown = problems.slice(0, 20).map((p) => `  ${p.message}`);
  if (problems.length > 20) shown.push(`  … and ${problems.length - 20} more`);
  throw inputError(
    'E_INVALID_NUMBER',
    `${problems.length} of ${total} ${what}(s) refused; nothing was changed:\n${shown.join('\n')}`,
    {
      hint: 'fix or remove them and run the command again',
    },
  );
}

export interface ImportRow {
  line: number;
  number: ParsedNumber;
  cells: Record<string, string>;
}

/**
 * Reads a list to import, CSV or workbook, with the one table reader (src/tables): a header line, the phone column
 * (--column, else detected; a lone column is the phone column), and whatever `check` asks of each row. Every row is
 * checked before anything is returned; bad rows are listed by line and value and nothing is imported.
 */
export async function readImportFile(file: string, options: ImportOptions): Promise<ImportRow[]> {
  try {
    return await readImportRows(file, options);
  } catch (err) {
    // A file the table reader finds malformed (a stray quote, a ragged row…) is refused as an import's: the same
    // message, line and hint, under the import's own code (as an empty one is E_CSV_EMPTY).
    if (err instanceof DncError && err.code === 'E_INPUT_MALFORMED')
      throw inputError('E_CSV_MALFORMED', `${err.message}; nothing was changed`, {
        hint: err.hint,
        details: err.details,
        cause: err,
      });
    throw err;
  }
}

interface ImportOptions {
  column?: string | undefined;
  country?: string | undefined;
  required?: readonly string[];
  check?: (cells: Record<string, string>, where: string) => void;
}

async function readImportRows(file: string, options: ImportOptions): Promise<ImportRow[]> {
  const columns = options.column === undefined ? undefined : [options.column];
  const layout = await openInputLayout(file, { header: true, columns, loneColumnIsPhone: true }).catch(
    (err: unknown) => {
      // An empty file or a header without rows is no list to import (as ever: exit 3, naming the file).
      const code = (err as DncError).code;
      if (code === 'E_INPUT_EMPTY') throw inputError('E_CSV_EMPTY', `${file} is empty`, { hint: EMPTY_HINT });
      throw err;
    },
  );
  // A list of numbers to add has one: an import never takes a second column's numbers as read when it did not.
  if (layout.phoneIndexes.length > 1) {
    throw usageError(
      'E_COLUMN_AMBIGUOUS',
      `several columns of ${file} could hold the numbers: ${layout.phoneLabels.join(', ')}`,
      {
        hint: 'pass --column NAME for the one to import',
      },
    );
  }
  const header = (layout.header ?? []).map((h) => h.trim().toLowerCase());
  for (const need of options.required ?? []) {
    if (!header.includes(need))
      throw inputError('E_CSV_COLUMN', `${file}: line 1 has no "${need}" column (found: ${header.join(', ')})`, {
        hint: `add a "${need}" column`,
      });
  }
  const rows: Array<Omit<ImportRow, 'line'> & { index: number }> = [];
  const refused: Array<{ index: number; refusal: (where: string) => Promise<DncError> }> = [];
  let index = 0;
  for await (const batch of readRows(layout)) {
    for (const record of batch) {
      const i = index++;
      const values = record.map((c) => c.trim());
      if (values.every((v) => v === '')) continue;
      const cells: Record<string, string> = {};
      header.forEach((h, k) => (cells[h] = values[k] ?? ''));
      const raw = values[layout.phoneIndexes[0]!] ?? '';
      try {
        const number = await numberFrom(raw, '', options.country);
        options.check?.(cells, '');
        rows.push({ index: i, number, cells });
      } catch (err) {
        if (!(err instanceof DncError)) throw err;
        // Said again once the line is known (found for bad rows only: a second pass over the file).
        refused.push({ index: i, refusal: async (where) => refusalAt(where, raw, cells, options) });
      }
    }
  }
  const lines = await dataRecordLines(
    layout,
    [...rows, ...refused].map((r) => r.index),
  );
  const lineOf = (i: number) => lines.get(i)?.line ?? 0;
  const problems = await Promise.all(refused.map((r) => r.refusal(`${file}: line ${lineOf(r.index)}: `)));
  throwProblems(problems, rows.length + problems.length, 'row');
  return rows.map(({ index: i, ...r }) => ({ line: lineOf(i), ...r }));
}

const EMPTY_HINT = 'it needs a header line such as "phone" and one number per line';

/** A refused row's error, worded with where it is: the number's, or the check's; a bad value in a file is exit 3. */
async function refusalAt(
  where: string,
  raw: string,
  cells: Record<string, string>,
  options: { country?: string | undefined; check?: (cells: Record<string, string>, where: string) => void },
): Promise<DncError> {
  try {
    await numberFrom(raw, where, options.country);
    options.check?.(cells, where);
  } catch (err) {
    const e = err as DncError;
    return e.exitCode === ExitCode.INPUT ? e : inputError('E_INVALID_NUMBER', e.message, { hint: e.hint });
  }
  return inputError('E_INVALID_NUMBER', `${where}refused`);
}

/** --until: a date (the exemption holds through that day, UTC) or an ISO 8601 date-time. */
export function parseUntil(raw: string, where = '--until '): string {
  const text = raw.trim();
  let ms: number;
  if (/^\d{4}-\d{2}-\d{2}$/.test(text)) ms = Date.parse(`${text}T23:59:59.999Z`);
  else if (/^\d{4}-\d{2}-\d{2}T/.test(text)) ms = Date.parse(text);
  else ms = NaN;
  if (!Number.isFinite(ms)) {
    throw usageError('E_USAGE', `${where}${JSON.stringify(raw)} is not a date`, {
      hint: 'write YYYY-MM-DD (valid through that day, UTC) or an ISO 8601 date-time',
    });
  }
  return new Date(ms).toISOString();
}

export function parseBasis(raw: string, where = '--basis '): ExemptionBasis {
  const b = raw.trim().toLowerCase();
  if (!(EXEMPTION_BASES as readonly string[]).includes(b)) {
    throw usageError('E_USAGE', `${where}${JSON.stringify(raw)} is not a basis`, {
      hint: `one of ${EXEMPTION_BASES.join(', ')}`,
    });
  }
  return b as ExemptionBasis;
}

/** CSV text of rows (header first), written by the one writer with every cell made safe for a spreadsheet. */
export async function csvText(
  header: readonly string[],
  rows: ReadonlyArray<ReadonlyArray<string | null>>,
): Promise<string> {
  return listCsv(header, rows);
}
