// Which kind of table a path names, by its extension: asked by every batch, so kept apart from the workbook reader
// (src/tables/xlsx-input.ts, its XML scanner and zip reader), which a CSV list and a CSV output never load.

/** Whether a path names a workbook dnc reads or writes (by its extension). */
export function isWorkbookPath(file: string): boolean {
  return /\.xlsx$/i.test(file);
}

/**
 * Whether a path names a workbook dnc reads: an .xlsx, or an .xlsm (the same package with macros, which are never
 * run: dnc reads cells). Outputs are .xlsx alone: a workbook dnc writes has no macros to be named for.
 */
export function isWorkbookInputPath(file: string): boolean {
  return /\.xls[xm]$/i.test(file);
}

/** How an output file is written. */
export type OutputFileFormat = 'csv' | 'xlsx';

/** The format of an output file: --format for the results, else its extension (.xlsx is a workbook). */
export function outputFormatOf(target: string, forced: OutputFileFormat | undefined): OutputFileFormat {
  return forced ?? (isWorkbookPath(target) ? 'xlsx' : 'csv');
}
