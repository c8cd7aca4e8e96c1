// Which column of a header holds the phone numbers: by --column (a name or a 1-based index), else detected by name.
import { usageError } from '../errors.js';

/** Header names (lowercased, letters and digits only) that name a phone column. */
export const PHONE_HEADER_NAMES = new Set([
  'phone',
  'phonenumber',
  'phoneno',
  'phonenum',
  'number',
  'mobile',
  'mobilenumber',
  'mobilephone',
  'mobileno',
  'cell',
  'cellphone',
  'cellnumber',
  'tel',
  'telephone',
  'telephonenumber',
  'telno',
  'msisdn',
  'e164',
  'contactnumber',
  'contactphone',
  'dialnumber',
]);

function normaliseHeaderName(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, '');
}

function listColumns(header: string[]): string {
  return header.map((h, i) => `${i + 1}:${h === '' ? '(empty)' : h}`).join(', ');
}

/** Chooses the phone column from --column or the header; exit 2 when it is ambiguous or missing. */
export function choosePhoneColumn(
  header: string[] | null,
  columnCount: number,
  column: string | undefined,
  path: string,
  loneColumnIsPhone = false,
): { index: number; label: string } {
  const label = (i: number) => (header ? header[i]! : `column ${i + 1}`);
  if (column === undefined && loneColumnIsPhone && columnCount === 1) return { index: 0, label: label(0) };
  if (column !== undefined) {
    const wanted = column.trim();
    if (header) {
      const exact = header.findIndex((h) => h === wanted);
      // `--column 3` with a column named "3" elsewhere: the name and the index disagree, and guessing picks a wrong
      // column.
      if (
        exact >= 0 &&
        /^\d+$/.test(wanted) &&
        Number(wanted) >= 1 &&
        Number(wanted) <= columnCount &&
        Number(wanted) - 1 !== exact
      ) {
        throw usageError(
          'E_COLUMN_AMBIGUOUS',
          `--column ${wanted} is both the name of column ${exact + 1} and the index of column ${wanted} ` +
            `('${header[Number(wanted) - 1]}')`,
          {
            hint: `columns are ${listColumns(header)}; rename the column, or give the other one's name`,
          },
        );
      }
      if (exact >= 0) return { index: exact, label: label(exact) };
      const loose = header
        .map((h, i) => [h, i] as const)
        .filter(([h]) => h.trim().toLowerCase() === wanted.toLowerCase());
      if (loose.length === 1) return { index: loose[0]![1], label: label(loose[0]![1]) };
    }
    if (/^\d+$/.test(wanted)) {
      const n = Number(wanted);
      if (n >= 1 && n <= columnCount) return { index: n - 1, label: label(n - 1) };
      throw usageError(
        'E_COLUMN_NOT_FOUND',
        `--column ${wanted} is out of range: ${path} has ${columnCount} column(s)`,
        {
          hint: header ? `columns are ${listColumns(header)}` : 'column indexes start at 1',
        },
      );
    }
    throw usageError('E_COLUMN_NOT_FOUND', `--column '${wanted}' is not a column of ${path}`, {
      hint: header
        ? `columns are ${listColumns(header)}; give --column NAME or a 1-based INDEX`
        : 'with --no-header give a 1-based column index',
    });
  }
  if (!header) {
    if (columnCount === 1) return { index: 0, label: label(0) };
    throw usageError(
      'E_COLUMN_REQUIRED',
      `${path} has ${columnCount} columns and no header: say which holds the phone numbers`,
      {
        hint: 'pass --column INDEX (1-based)',
      },
    );
  }
  const names = header.map(normaliseHeaderName);
  let matches = names.map((n, i) => [n, i] as const).filter(([n]) => PHONE_HEADER_NAMES.has(n));
  if (matches.length === 0) {
    // A looser match, but not on a name holding another delimiter: that is a header read with the wrong one.
    matches = names
      .map((n, i) => [n, i] as const)
      .filter(([n, i]) => /phone|mobile|cell|tel/.test(n) && !/[,;\t|]/.test(header[i]!));
  }
  // One well-known name beside another column that also names a phone ("Mobile Phone", "Home Phone"): which one
  // holds the numbers to scrub is the user's call, never a guess that leaves a registered number unchecked.
  const phoneWord = /(^|[^a-z])(phone|mobile|cell|tel|telephone|msisdn)([^a-z]|$)/i;
  const others = header
    .map((h, i) => [h, i] as const)
    .filter(([h, i]) => phoneWord.test(h) && !matches.some(([, m]) => m === i) && !/[,;\t|]/.test(h));
  if (matches.length === 1 && others.length > 0)
    matches = [...matches, ...others.map(([, i]) => [names[i]!, i] as const)];
  if (matches.length === 1) return { index: matches[0]![1], label: label(matches[0]![1]) };
  if (matches.length === 0) {
    const oneColumn = header.length === 1 && /[,;\t|]/.test(header[0]!);
    throw usageError('E_COLUMN_NOT_FOUND', `no phone column found in the header of ${path}`, {
      hint: oneColumn
        ? `the header was read as one column '${header[0]}': pass the right --delimiter (, ; tab or |)`
        : `columns are ${listColumns(header)}; pass --column NAME or --column INDEX`,
    });
  }
  throw usageError(
    'E_COLUMN_AMBIGUOUS',
    `several columns of ${path} could hold the phone numbers: ${matches.map(([, i]) => header[i]).join(', ')}`,
    {
      hint: `pass --column NAME or --column INDEX; columns are ${listColumns(header)}`,
    },
  );
}
