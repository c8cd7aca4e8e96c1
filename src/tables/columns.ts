// Which columns of a list hold its phone numbers, and which its rows' countries: by --column and --country-column
// (names or 1-based indexes), else detected by name.
import { usageError } from '../errors.js';
import type { ColumnOptions, TableLayout } from './layout.js';

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
  'landline',
  'directline',
  'directdial',
]);

/** Names of the phone fields CRM and dialler exports carry: `Home Phone`, `Work Phone 2`, `Mobile Number`. */
const FIELD_KINDS = 'home|work|business|office|other|direct|main|primary|secondary|alternate|alt|company|personal';
const PHONE_FIELD = new RegExp(
  `^(${FIELD_KINDS}|private|mobile|cell|assistant)?(phone|mobile|cell|tel|telephone)(number|no|num)?\\d?$`,
);

/** Header names that name a column of countries. */
const COUNTRY_HEADER_NAMES = new Set([
  'country',
  'countrycode',
  'countryname',
  'countryiso',
  'countryiso2',
  'isocountry',
  'isocountrycode',
  'nation',
  'billingcountry',
  'mailingcountry',
  'shippingcountry',
]);

function normaliseHeaderName(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, '');
}

export function listColumns(header: readonly string[]): string {
  return header.map((h, i) => `${i + 1}:${h === '' ? '(empty)' : h}`).join(', ');
}

/** The phone columns a list's numbers are read from, in the order given (the N of the dnc_N_* columns). */
export interface PhoneColumns {
  indexes: number[];
  labels: string[];
  /** Found by their names in the header (no --column): said so when the batch starts. */
  detected: boolean;
}

/** One column named by the user: a header name (exact, else alone case-insensitively) or a 1-based index. */
export function resolveColumn(
  header: readonly string[] | null,
  columnCount: number,
  given: string,
  path: string,
  flag = '--column',
): { index: number; label: string } {
  const label = (i: number) => (header ? header[i]! : `column ${i + 1}`);
  const wanted = given.trim();
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
        `${flag} ${wanted} is both the name of column ${exact + 1} and the index of column ${wanted} ` +
          `('${header[Number(wanted) - 1]}')`,
        { hint: `columns are ${listColumns(header)}; rename the column, or give the other one's name` },
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
    throw usageError('E_COLUMN_NOT_FOUND', `${flag} ${wanted} is out of range: ${path} has ${columnCount} column(s)`, {
      hint: header ? `columns are ${listColumns(header)}` : 'column indexes start at 1',
    });
  }
  throw usageError('E_COLUMN_NOT_FOUND', `${flag} '${wanted}' is not a column of ${path}`, {
    hint: header
      ? `columns are ${listColumns(header)}; give ${flag} NAME or a 1-based INDEX`
      : 'with --no-header give a 1-based column index',
  });
}

/**
 * The columns `--column` names: each value is a list split at its commas, unless it is the exact name of a column
 * (a name that holds a comma is given whole, the flag repeated for the others).
 */
export function givenColumns(header: readonly string[] | null, values: readonly string[]): string[] {
  return values.flatMap((v) => (header?.includes(v) || !v.includes(',') ? [v] : v.split(',').filter((s) => s.trim())));
}

/** Chooses the phone columns from --column or the header; exit 2 when they are unsure or missing. */
export function choosePhoneColumns(
  header: string[] | null,
  columnCount: number,
  columns: readonly string[] | undefined,
  path: string,
  loneColumnIsPhone = false,
): PhoneColumns {
  const label = (i: number) => (header ? header[i]! : `column ${i + 1}`);
  const one = (index: number): PhoneColumns => ({ indexes: [index], labels: [label(index)], detected: false });
  if (columns === undefined && loneColumnIsPhone && columnCount === 1) return one(0);
  if (columns !== undefined && columns.length > 0) {
    const chosen = givenColumns(header, columns).map((c) => resolveColumn(header, columnCount, c, path));
    const repeated = chosen.find((c, i) => chosen.findIndex((d) => d.index === c.index) !== i);
    if (repeated) {
      throw usageError('E_USAGE', `--column names ${repeated.label} twice`, {
        hint: 'name each phone column once',
      });
    }
    return { indexes: chosen.map((c) => c.index), labels: chosen.map((c) => c.label), detected: false };
  }
  if (!header) {
    if (columnCount === 1) return one(0);
    throw usageError(
      'E_COLUMN_REQUIRED',
      `${path} has ${columnCount} columns and no header: say which hold the phone numbers`,
      { hint: 'pass --column INDEX (1-based; several as --column 2,5)' },
    );
  }
  const names = header.map(normaliseHeaderName);
  // A name on another delimiter is a header read with the wrong one, never a phone column.
  const plain = (i: number) => !/[,;\t|]/.test(header[i]!);
  const sure = names.flatMap((n, i) => ((PHONE_HEADER_NAMES.has(n) || PHONE_FIELD.test(n)) && plain(i) ? [i] : []));
  // Any other header that names a phone ("Phone (home)", "Tel. privat"): which column holds numbers to scrub is the
  // user's call, never a guess that leaves a registered number unchecked in a row a dialler is given.
  const phoneWord = /(^|[^a-z])(phone|mobile|cell|tel|telephone|msisdn)([^a-z]|$)/i;
  const loose = header.flatMap((h, i) => (!sure.includes(i) && plain(i) && phoneWord.test(h) ? [i] : []));
  if (sure.length > 0 && loose.length === 0) {
    return { indexes: sure, labels: sure.map(label), detected: true };
  }
  const candidates = [...sure, ...loose].sort((a, b) => a - b);
  if (candidates.length === 1) return { indexes: candidates, labels: candidates.map(label), detected: true };
  if (candidates.length === 0) {
    // A looser match, as before several columns were read: one name that holds a phone word anywhere.
    const inside = names.flatMap((n, i) => (/phone|mobile|cell|tel/.test(n) && plain(i) ? [i] : []));
    if (inside.length === 1) return { indexes: inside, labels: inside.map(label), detected: true };
    const oneColumn = header.length === 1 && /[,;\t|]/.test(header[0]!);
    throw usageError('E_COLUMN_NOT_FOUND', `no phone column found in the header of ${path}`, {
      hint: oneColumn
        ? `the header was read as one column '${header[0]}': pass the right --delimiter (, ; tab or |)`
        : `columns are ${listColumns(header)}; pass --column NAME or --column INDEX`,
    });
  }
  throw usageError(
    'E_COLUMN_AMBIGUOUS',
    `not sure which columns of ${path} hold the phone numbers: ${candidates.map((i) => header[i]).join(', ')}`,
    {
      hint:
        `pass --column with the ones to scrub (e.g. --column ${candidates.map((i) => header[i]).join(',')}); ` +
        `columns are ${listColumns(header)}`,
      details: { candidates: candidates.map((i) => header[i]!) },
    },
  );
}

/** The column of each row's country, from --country-column, else one column named as countries are (if asked). */
export function chooseCountryColumn(
  header: string[] | null,
  columnCount: number,
  column: string | undefined,
  path: string,
  detect: boolean,
): { index: number; label: string; detected: boolean } | null {
  if (column !== undefined)
    return { ...resolveColumn(header, columnCount, column, path, '--country-column'), detected: false };
  if (!detect || !header) return null;
  const found = header.flatMap((h, i) => (COUNTRY_HEADER_NAMES.has(normaliseHeaderName(h)) ? [i] : []));
  return found.length === 1 ? { index: found[0]!, label: header[found[0]!]!, detected: true } : null;
}

/** The layout's columns of a list whose header (or first row) is `header`: its phone columns and country column. */
export function chooseColumns(
  header: string[] | null,
  columnCount: number,
  options: ColumnOptions,
  path: string,
): Pick<
  TableLayout,
  'phoneIndexes' | 'phoneLabels' | 'phonesDetected' | 'countryIndex' | 'countryLabel' | 'countryDetected'
> {
  const phones = choosePhoneColumns(header, columnCount, options.columns, path, options.loneColumnIsPhone);
  const country = chooseCountryColumn(
    header,
    columnCount,
    options.countryColumn,
    path,
    options.detectCountryColumn === true,
  );
  if (country && phones.indexes.includes(country.index)) {
    throw usageError('E_USAGE', `${country.label} cannot be both a phone column and the country column`, {
      hint: "give --country-column the column of the rows' countries, and --column the phone columns",
    });
  }
  return {
    phoneIndexes: phones.indexes,
    phoneLabels: phones.labels,
    phonesDetected: phones.detected,
    countryIndex: country?.index ?? null,
    countryLabel: country?.label,
    countryDetected: country?.detected ?? false,
  };
}

/**
 * Whether a row read as a header would find the list's columns (a title above the header finds none): the row the
 * advice past a title names.
 */
export function namesPhoneColumn(names: string[], options: ColumnOptions): boolean {
  try {
    chooseColumns(names, names.length, options, '');
    return true;
  } catch {
    return false;
  }
}
