// Where a record is, in words: kept apart from the CSV reader so that commands can say it without loading the reader.

/**
 * Where a record is, as the user can find it: the physical line it starts on and, where it differs
 * (a cell above it holds a line break), its record number, which is the spreadsheet's row number.
 */
export function describeRecordAt(line: number | undefined, record: number | undefined): string {
  if (line === undefined) return record === undefined ? '' : `record ${record}`;
  return record === undefined || record === line ? `line ${line}` : `line ${line} (record ${record})`;
}
