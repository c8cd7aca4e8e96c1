// What a workbook cell says, as text: the number a person sees in Excel (its number format applied), never a different one.

/** A cell value as the workbook reader gives it, reduced to what dnc keeps: a value of one of Excel's own types. */
export type CellValue = string | number | boolean | Date | { error: string } | null;

/** One input cell: its value (a formula's cached result, never the formula) and its number format. */
export interface TypedCell {
  value: CellValue;
  numFmt?: string | undefined;
}

/**
 * Numbers at or above this have lost digits: Excel keeps 15 significant digits, so the 16th and later
 * of a long number typed or imported into a numeric cell are zeros, and the number is another one.
 */
const FIFTEEN_DIGITS = 1e15;

/** Removes quoted literals, escapes, colours and conditions: what is left decides the kind of format. */
function formatSkeleton(section: string): string {
  return section.replace(/"[^"]*"/g, '').replace(/\\./g, '').replace(/\[[^\]]*\]/g, '').replace(/_.|\*./g, '');
}

/** The format's first section (the one for positive numbers and zero), split on `;` outside quotes. */
function firstSection(numFmt: string): string {
  let quoted = false;
  for (let i = 0; i < numFmt.length; i++) {
    const c = numFmt[i];
    if (c === '"') quoted = !quoted;
    else if (c === '\\') i++;
    else if (c === ';' && !quoted) return numFmt.slice(0, i);
  }
  return numFmt;
}

export function isScientificFormat(numFmt: string | undefined): boolean {
  return numFmt !== undefined && /E[+-]/i.test(formatSkeleton(firstSection(numFmt)));
}

export function isDateFormat(numFmt: string | undefined): boolean {
  if (!numFmt) return false;
  const s = formatSkeleton(firstSection(numFmt));
  return !/^general$/i.test(s.trim()) && /[dmyhs]/i.test(s) && !/[0#?]/.test(s);
}

/** How Excel's General format shows a number too long for it: 6 significant digits and an exponent (1.23457E+15). */
function scientific(value: number): string {
  const [mantissa, exponent] = value.toExponential(5).split('e') as [string, string];
  const m = mantissa.replace(/\.?0+$/, '');
  const e = Number(exponent);
  return `${m}E${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
}

/**
 * An integer shown through a digit format such as `0000000`, `(000) 000-0000` or `#,##0`: digits fill the
 * placeholders from the right, `0` shows a zero where no digit is left, literals stay where they are.
 */
function placeDigits(section: string, digits: string): string {
  const tokens: Array<{ placeholder: '0' | '#' | '?' } | { literal: string }> = [];
  let grouping = false;
  for (let i = 0; i < section.length; i++) {
    const c = section[i]!;
    if (c === '"') {
      const end = section.indexOf('"', i + 1);
      tokens.push({ literal: section.slice(i + 1, end < 0 ? undefined : end) });
      i = end < 0 ? section.length : end;
    } else if (c === '\\') tokens.push({ literal: section[++i] ?? '' });
    else if (c === '[') i = Math.max(i, section.indexOf(']', i));
    else if (c === '_' || c === '*') i++;
    else if (c === '0' || c === '#' || c === '?') tokens.push({ placeholder: c });
    else if (c === ',') grouping = true;
    else if (c === '@') tokens.push({ literal: digits });
    else tokens.push({ literal: c });
  }
  const placeholders = tokens.filter((t) => 'placeholder' in t).length;
  if (placeholders === 0) return tokens.map((t) => ('literal' in t ? t.literal : '')).join('') || digits;
  if (grouping) digits = digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  let rest = digits;
  const out: string[] = new Array<string>(tokens.length).fill('');
  let seen = 0;
  for (let i = tokens.length - 1; i >= 0; i--) {
    const t = tokens[i]!;
    if ('literal' in t) {
      out[i] = t.literal;
      continue;
    }
    seen++;
    // The leftmost placeholder takes every digit that is left.
    const take = seen === placeholders ? rest : rest.slice(-1);
    rest = seen === placeholders ? '' : rest.slice(0, -1);
    out[i] = take !== '' ? take : t.placeholder === '0' ? '0' : t.placeholder === '?' ? ' ' : '';
  }
  return out.join('');
}

/** A date cell as text: the ISO date, with the time when it has one. */
function dateText(d: Date): string {
  if (Number.isNaN(d.getTime())) return '';
  const iso = d.toISOString();
  return iso.endsWith('T00:00:00.000Z') ? iso.slice(0, 10) : iso.replace('.000Z', 'Z');
}

/** A number as the cell shows it; a number Excel has damaged is shown as Excel shows it then (scientific). */
export function numberText(value: number, numFmt: string | undefined): string {
  if (!Number.isFinite(value)) return String(value);
  // Digits past the 15th are gone, whatever the format shows: the scientific text says so (and is refused as a number).
  if (Math.abs(value) >= FIFTEEN_DIGITS || isScientificFormat(numFmt)) return scientific(value);
  const section = numFmt ? firstSection(numFmt) : '';
  const skeleton = formatSkeleton(section).trim();
  if (!Number.isInteger(value) || skeleton === '' || /^general$/i.test(skeleton) || skeleton === '@' || /[.%]/.test(skeleton)) {
    if (/\./.test(skeleton) && /[0#]/.test(skeleton)) {
      const decimals = (skeleton.split('.')[1] ?? '').replace(/[^0#?]/g, '').length;
      return value.toFixed(decimals);
    }
    return String(value);
  }
  const sign = value < 0 ? '-' : '';
  return sign + placeDigits(section, String(Math.abs(value)));
}

/** A cell's text: what a person reads in it. */
export function cellText(cell: TypedCell | undefined): string {
  if (!cell) return '';
  const v = cell.value;
  if (v === null) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return numberText(v, cell.numFmt);
  if (typeof v === 'boolean') return v ? 'TRUE' : 'FALSE';
  if (v instanceof Date) return dateText(v);
  return v.error;
}

/** Excel's epoch for serial dates in the 1900 system (serial 25569 is 1970-01-01). */
const EXCEL_EPOCH_MS = Date.UTC(1899, 11, 30);

/**
 * Reduces a value from the workbook reader to one of Excel's types. A formula becomes its cached result
 * (it is never evaluated, and no formula is ever written back); rich text and hyperlinks become their text.
 */
export function plainValue(raw: unknown, numFmt: string | undefined): CellValue {
  if (raw === null || raw === undefined) return null;
  if (typeof raw === 'string' || typeof raw === 'boolean') return raw;
  if (typeof raw === 'number') return isDateFormat(numFmt) && Number.isFinite(raw) ? new Date(EXCEL_EPOCH_MS + Math.round(raw * 86_400_000)) : raw;
  if (raw instanceof Date) return raw;
  if (typeof raw === 'object') {
    const o = raw as Record<string, unknown>;
    if ('formula' in o || 'sharedFormula' in o) {
      // A formula whose cached result is an error or absent (never calculated) has no value to read.
      const result = o.result;
      if (typeof result === 'number' && Number.isNaN(result)) return { error: '#VALUE!' };
      return plainValue(result, numFmt);
    }
    if (typeof o.error === 'string') return { error: o.error };
    if (Array.isArray(o.richText)) return (o.richText as Array<{ text?: string }>).map((r) => r.text ?? '').join('');
    if (typeof o.text === 'string') return o.text;
    if (o.text && typeof o.text === 'object') return plainValue(o.text, numFmt);
  }
  return String(raw);
}
