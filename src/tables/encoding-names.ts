// The names of the text encodings a CSV call list may be in (kept apart from their codecs: the command line parses them
// at start-up).
import { usageError } from '../errors.js';

/** What --encoding and --output-encoding accept (Excel's "CSV" is Windows-1252; its "Unicode Text" UTF-16LE). */
export const TEXT_ENCODINGS = ['utf-8', 'windows-1252', 'latin1', 'utf-16le', 'utf-16be'] as const;
export type TextEncoding = (typeof TEXT_ENCODINGS)[number];

const ALIASES: Record<string, TextEncoding> = {
  utf8: 'utf-8',
  'utf-8': 'utf-8',
  'windows-1252': 'windows-1252',
  windows1252: 'windows-1252',
  cp1252: 'windows-1252',
  win1252: 'windows-1252',
  latin1: 'latin1',
  'latin-1': 'latin1',
  'iso-8859-1': 'latin1',
  iso88591: 'latin1',
  'utf-16le': 'utf-16le',
  utf16le: 'utf-16le',
  'utf-16be': 'utf-16be',
  utf16be: 'utf-16be',
};

export function parseEncodingOption(flag: string, raw: string | undefined): TextEncoding | undefined {
  if (raw === undefined) return undefined;
  const e = ALIASES[raw.trim().toLowerCase()];
  if (!e)
    throw usageError('E_USAGE', `${flag} must be one of ${TEXT_ENCODINGS.join(', ')}; got '${raw}'`, {
      hint: 'Excel\'s "CSV (Comma delimited)" is windows-1252',
    });
  return e;
}
