// An independent workbook reader for checking what dnc writes: Python's openpyxl (not exceljs, which dnc
// reads and writes with). Each cell comes with its type, number format, fill and boldness.
import { execFileSync } from 'node:child_process';
import { pythonWithOpenpyxl } from './python.js';

export { pythonWithOpenpyxl };

const READER = String.raw`
import json, sys, datetime, openpyxl
def cell(c):
    v = c.value
    if isinstance(v, (datetime.datetime, datetime.date)):
        v = v.isoformat()
    fill = c.fill.fgColor.rgb if c.fill is not None and c.fill.fill_type == 'solid' else None
    return {'v': v, 't': c.data_type, 'fmt': c.number_format, 'fill': fill if isinstance(fill, str) else None, 'bold': bool(c.font and c.font.b)}
# A file object: openpyxl refuses a path whose extension is not .xlsx (dnc writes --format xlsx to any name).
wb = openpyxl.load_workbook(open(sys.argv[1], 'rb'), data_only=len(sys.argv) > 2)
out = []
for ws in wb.worksheets:
    out.append({'title': ws.title, 'freeze': ws.freeze_panes, 'filter': ws.auto_filter.ref,
                'rows': [[cell(c) for c in row] for row in ws.iter_rows()]})
json.dump(out, sys.stdout)
`;

export interface OracleCell {
  v: string | number | boolean | null;
  /** openpyxl's data type: s text, n number, d date, b boolean, e error, f formula. */
  t: string;
  fmt: string;
  fill: string | null;
  bold: boolean;
}
export interface OracleSheet {
  title: string;
  freeze: string | null;
  filter: string | null;
  rows: OracleCell[][];
}

/** Every sheet of a workbook as openpyxl reads it; `cachedValues` reads a formula's cached value instead of the formula. */
export function readWorkbookIndependently(file: string, cachedValues = false): OracleSheet[] {
  return JSON.parse(
    execFileSync(pythonWithOpenpyxl(), ['-c', READER, file, ...(cachedValues ? ['cached'] : [])], {
      maxBuffer: 1 << 30,
      encoding: 'utf8',
    }),
  ) as OracleSheet[];
}

/** Changes one cell of a workbook with openpyxl and saves it (a user editing the results). */
export function editWorkbookCell(file: string, sheet: string, ref: string, value: string): void {
  const script = `import openpyxl, sys\nwb = openpyxl.load_workbook(sys.argv[1])\nwb[sys.argv[2]][sys.argv[3]] = sys.argv[4]\nwb.save(sys.argv[1])`;
  execFileSync(pythonWithOpenpyxl(), ['-c', script, file, sheet, ref, value]);
}

/**
 * openpyxl's values of every worksheet of each file (null for a file it cannot read): row, column, kind (s, n, b,
 * d, e) and value; dates as ISO with milliseconds, times of day and durations as fractions of a day (dnc reads them
 * as the numbers they are).
 */
const VALUES = String.raw`
import datetime, json, sys, warnings, openpyxl
warnings.simplefilter('ignore')
out = {}
for name in sys.argv[1:]:
    try:
        wb = openpyxl.load_workbook(open(name, 'rb'), data_only=True)
    except Exception:
        out[name] = None
        continue
    sheets = []
    for ws in wb.worksheets:
        cells = []
        for row in ws.iter_rows():
            for c in row:
                v = c.value
                if v is None: continue
                if isinstance(v, bool): k = 'b'
                elif isinstance(v, (int, float)): k = 'n'
                elif isinstance(v, datetime.datetime): k, v = 'd', v.isoformat(timespec='milliseconds') + 'Z'
                elif isinstance(v, datetime.date): k, v = 'd', v.isoformat() + 'T00:00:00.000Z'
                elif isinstance(v, datetime.time): k, v = 'n', (v.hour * 3600 + v.minute * 60 + v.second + v.microsecond / 1e6) / 86400
                elif isinstance(v, datetime.timedelta): k, v = 'n', v.total_seconds() / 86400
                elif c.data_type == 'e': k = 'e'
                else: k, v = 's', str(v)
                cells.append([c.row, c.column, k, v])
        sheets.append({'title': ws.title, 'cells': cells})
    out[name] = sheets
json.dump(out, sys.stdout)
`;

export interface IndependentSheet {
  title: string;
  cells: Array<[number, number, string, string | number | boolean]>;
}

export function readCellValuesIndependently(files: readonly string[]): Record<string, IndependentSheet[] | null> {
  return JSON.parse(
    execFileSync(pythonWithOpenpyxl(), ['-c', VALUES, ...files], { encoding: 'utf8', maxBuffer: 1 << 28 }),
  ) as Record<string, IndependentSheet[] | null>;
}
