// Reading numbers and exemptions from CSV files, and writing the list out again: every refusal names file, line and
// value.
import { open } from 'node:fs/promises';
import { describeFsError, ExitCode, inputError, usageError, type DncError } from '../errors.js';
import type { NormalizedPhone } from '../phone/normalize.js';
import { EXEMPTION_BASES, type ExemptionBasis } from '../stores/suppression-store.js';

export interface ParsedNumber {
  e164: string;
  country: string | null;
}

/** Normalises one number to E.164 (national format with `country`); throws a DncError saying where it was. */
export async function numberFrom(raw: string, where: string, country: string | undefined): Promise<ParsedNumber> {
  const { normalizePhone } = await import('../phone/normalize.js');
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

const PHONE_HEADERS = [
  'phone',
  'phone_number',
  'phonenumber',
  'number',
  'telephone',
  'tel',
  'mobile',
  'e164',
  'msisdn',
];

export interface ImportRow {
  line: number;
  number: ParsedNumber;
  cells: Record<string, string>;
}

/**
 * Reads a CSV with a header line: the phone column (--column, else a header such as "phone"), and
 * whatever `check` asks of each row. Every row is checked before anything is returned; bad rows are
 * listed by line and value and nothing is imported.
 */
/** The rows of a workbook's first sheet as import records (header included), each with its Excel row number. */
async function* workbookRecords(file: string): AsyncGenerator<{ record: string[]; info: { lines: number } }> {
  const { openXlsxLayout, readXlsxRows } = await import('../tables/xlsx-input.js');
  const layout = await openXlsxLayout(file, { header: false, column: '1' });
  for await (const batch of readXlsxRows(layout)) {
    for (const [i, cells] of batch.entries()) {
      const record = cells.map((c) => c.trim());
      if (record.some((c) => c !== '')) yield { record, info: { lines: batch.rowNumbers![i]! } };
    }
  }
}

export async function readImportFile(
  file: string,
  options: {
    column?: string | undefined;
    country?: string | undefined;
    required?: readonly string[];
    check?: (cells: Record<string, string>, where: string) => void;
  },
): Promise<ImportRow[]> {
  const { parse } = await import('csv-parse');
  // Opened first, so that a missing or unreadable file is an input error naming it, not a stream's unhandled error.
  const handle = await open(file, 'r').catch((err: unknown) => {
    throw inputError('E_INPUT_UNREADABLE', `cannot read ${file}: ${describeFsError(err)}`, {
      hint: 'check the path of the file to import',
      cause: err,
    });
  });
  // A workbook (.xlsx) is read as Excel shows its first sheet, row numbers as Excel numbers them.
  const { isWorkbookPath } = await import('../tables/xlsx-input.js');
  const parser: AsyncIterable<{ record: string[]; info: { lines: number } }> = isWorkbookPath(file)
    ? (await handle.close(), workbookRecords(file))
    : handle.createReadStream().pipe(
        parse({
          bom: true,
          relax_column_count: true,
          skip_empty_lines: true,
          info: true,
          trim: true,
          delimiter: [',', ';', '\t', '|'],
        }),
      );
  let header: string[] | null = null;
  let phoneIndex = -1;
  const rows: ImportRow[] = [];
  const problems: DncError[] = [];
  try {
    for await (const rec of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
      const line = rec.info.lines;
      if (!header) {
        header = rec.record.map((h) => h.toLowerCase());
        phoneIndex = phoneColumn(header, options.column, file);
        for (const need of options.required ?? []) {
          if (!header.includes(need))
            throw inputError('E_CSV_COLUMN', `${file}: line 1 has no "${need}" column (found: ${header.join(', ')})`, {
              hint: `add a "${need}" column`,
            });
        }
        continue;
      }
      const cells: Record<string, string> = {};
      header.forEach((h, i) => (cells[h] = rec.record[i] ?? ''));
      const where = `${file}: line ${line}: `;
      try {
        const raw = rec.record[phoneIndex] ?? '';
        const number = await numberFrom(raw, where, options.country);
        options.check?.(cells, where);
        rows.push({ line, number, cells });
      } catch (err) {
        if ((err as DncError).name !== 'DncError') throw err;
        // A bad value in a file is bad input data (exit 3), whatever the same value is as a flag.
        const e = err as DncError;
        problems.push(e.exitCode === ExitCode.INPUT ? e : inputError('E_INVALID_NUMBER', e.message, { hint: e.hint }));
      }
    }
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT')
      throw inputError('E_INPUT_MISSING', `${file} does not exist`, { cause: err });
    if ((err as DncError).name === 'DncError') throw err;
    throw inputError('E_CSV_MALFORMED', `${file}: ${(err as Error).message}`, {
      hint: 'it must be a CSV file with a header line',
      cause: err,
    });
  }
  if (!header)
    throw inputError('E_CSV_EMPTY', `${file} is empty`, {
      hint: 'it needs a header line such as "phone" and one number per line',
    });
  throwProblems(problems, rows.length + problems.length, 'row');
  return rows;
}

function phoneColumn(header: string[], column: string | undefined, file: string): number {
  if (column !== undefined) {
    if (/^\d+$/.test(column)) {
      const i = Number(column) - 1;
      if (i >= 0 && i < header.length) return i;
    } else {
      const i = header.indexOf(column.toLowerCase());
      if (i >= 0) return i;
    }
    throw usageError(
      'E_USAGE',
      `--column ${JSON.stringify(column)} is not a column of ${file} (found: ${header.join(', ')})`,
    );
  }
  if (header.length === 1) return 0;
  const i = header.findIndex((h) => PHONE_HEADERS.includes(h.replace(/[\s-]+/g, '_')));
  if (i >= 0) return i;
  throw usageError('E_USAGE', `${file}: no phone column found in the header (${header.join(', ')})`, {
    hint: 'name it with --column NAME or a 1-based index',
  });
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

/** A cell a spreadsheet would run as a formula gets a leading apostrophe; control characters are dropped. */
export function safeCell(value: string | null | undefined): string {
  // eslint-disable-next-line no-control-regex
  const v = (value ?? '').replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, '');
  // An E.164 number starts with "+" but is data, and must import again as it was exported.
  if (/^\+\d+$/.test(v)) return v;
  return /^[=+\-@\t\r]/.test(v) ? `'${v}` : v;
}

/** CSV text of rows (header first), with every cell made safe for a spreadsheet. */
export async function csvText(
  header: readonly string[],
  rows: ReadonlyArray<ReadonlyArray<string | null>>,
): Promise<string> {
  const { stringify } = await import('csv-stringify/sync');
  return stringify([header as string[], ...rows.map((r) => r.map(safeCell))]);
}
