// Opens a call list by what it is: an .xlsx workbook (loaded only then) or a CSV file.
import { usageError } from '../errors.js';
import { openCsvLayout, type CsvLayout } from './csv-input.js';
import type { TextEncoding } from './encoding.js';

export interface InputOptions {
  delimiter?: string | undefined;
  column?: string | undefined;
  header: boolean;
  /** --sheet, for a workbook. */
  sheet?: string | undefined;
  /** --skip-rows, for a workbook: the rows above its list (a title). */
  skipRows?: number | undefined;
  /** --encoding, for a CSV file. */
  encoding?: TextEncoding | undefined;
}

export async function openInputLayout(path: string, options: InputOptions): Promise<CsvLayout> {
  const { isWorkbookPath } = await import('./xlsx-input.js');
  if (isWorkbookPath(path)) {
    if (options.encoding !== undefined)
      throw usageError('E_USAGE', `--encoding is for a CSV input; ${path} is a workbook`, { hint: 'drop --encoding' });
    if (options.delimiter !== undefined)
      throw usageError('E_USAGE', `--delimiter is for a CSV input; ${path} is a workbook`, {
        hint: 'drop --delimiter',
      });
    const { openXlsxLayout } = await import('./xlsx-input.js');
    return openXlsxLayout(path, options);
  }
  if (options.sheet !== undefined)
    throw usageError('E_USAGE', `--sheet is for an .xlsx input; ${path} is read as CSV`, {
      hint: 'drop --sheet, or give the .xlsx workbook',
    });
  if (options.skipRows) {
    throw usageError('E_USAGE', `--skip-rows is for an .xlsx input; ${path} is read as CSV`, {
      hint: 'delete the lines above the header of the CSV file, or give the .xlsx workbook',
    });
  }
  return openCsvLayout(path, options);
}
