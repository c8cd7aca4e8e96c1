// Typed commander options: the value is parsed (and refused, exit 2, in dnc's error format) while commander reads
// the command line, so a command's action receives numbers and checked values, never raw strings to re-check.
import { Option } from 'commander';
import { parseIntegerOption } from './config.js';
import { usageError } from './errors.js';
import { parseDuration } from './evidence/duration.js';

/** The long flag of an option's flags, e.g. `--max-credits` of `--max-credits <n>`. */
function longFlag(flags: string): string {
  return /--[a-z0-9-]+/i.exec(flags)?.[0] ?? flags;
}

/** An option whose value goes through `parse` as it is read; a refusal (a DncError) ends the parse with exit 2. */
export function parsedOption<T>(flags: string, description: string, parse: (raw: string, flag: string) => T): Option {
  const flag = longFlag(flags);
  return new Option(flags, description).argParser((raw: string) => parse(raw, flag));
}

/** A whole-number option from `min` to `max`. */
export function integerOption(flags: string, description: string, min: number, max = Number.MAX_SAFE_INTEGER): Option {
  return parsedOption(flags, description, (raw, flag) => parseIntegerOption(flag, raw, min, max));
}

/** A duration such as 7d or 12h, in milliseconds. */
export function durationOption(flags: string, description: string): Option {
  return parsedOption(flags, description, (raw, flag) => parseDuration(flag, raw));
}

/** An ISO 8601 date-time (e.g. --as-of), as a Date. */
export function dateTimeOption(flags: string, description: string): Option {
  return parsedOption(flags, description, (raw, flag) => {
    const at = new Date(raw);
    if (raw.trim() === '' || Number.isNaN(at.getTime())) {
      throw usageError('E_USAGE', `${flag} ${JSON.stringify(raw)} is not a date-time`, { hint: 'write ISO 8601, e.g. 2026-12-01T09:00:00Z' });
    }
    return at;
  });
}
