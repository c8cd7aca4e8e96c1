// Typed commander options: the value is parsed (and refused, exit 2, in dnc's error format) while commander reads
// the command line, so a command's action receives numbers and checked values, never raw strings to re-check.
import { Option, type Command } from 'commander';
import { parseIntegerOption } from './config.js';
import { usageError } from './errors.js';
import { parseDuration } from './time.js';

/** Where --suppression-list's list is, for every command that names it: a file, or the team store's list. */
export const LIST_FILE_WHERE =
  "env DNC_SUPPRESSION_LIST; default: the state folder; with a team store (--store): the team's list, no file";

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

/** The largest int64 (2.5: billing-period ids are int64). */
const INT64_MAX = 2n ** 63n - 1n;

/**
 * An int64 option (a billing-period id), kept as a bigint: a double would send 9007199254740993 as
 * 9007199254740992, another period's id.
 */
export function int64Option(flags: string, description: string, min: bigint): Option {
  return parsedOption(flags, description, (raw, flag) => {
    const text = raw.trim();
    if (!/^-?\d+$/.test(text)) throw usageError('E_USAGE', `${flag} must be a whole number, got '${raw}'`);
    const value = BigInt(text);
    if (value < min || value > INT64_MAX)
      throw usageError('E_USAGE', `${flag} must be from ${min} to ${INT64_MAX}, got ${raw}`);
    return value;
  });
}

/** A duration such as 7d or 12h, in milliseconds. */
export function durationOption(flags: string, description: string): Option {
  return parsedOption(flags, description, (raw, flag) => parseDuration(flag, raw));
}

/**
 * A non-empty string option (--base-url, --forwarded-host): an empty value, often an unset shell variable, is refused.
 */
export function nonEmptyOption(flags: string, description: string, hint?: string): Option {
  return parsedOption(flags, description, (raw, flag) => {
    if (raw.trim() === '') throw usageError('E_USAGE', `${flag} must not be empty`, hint ? { hint } : {});
    return raw;
  });
}

// Only the full form, with its offset: `new Date()` also takes "1", "2026", "March 7", RFC 2822 and
// "2026-11-22 10:00" (read as local time), each a different moment on another machine.
const ISO_DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|([+-])(\d{2}):(\d{2}))$/i;

/**
 * `--as-of`: an ISO 8601 date-time with Z or an offset, years 2000 to 9999, as a Date; anything else is a usage error.
 */
export function parseDateTimeOption(flag: string, raw: string): Date {
  const refuse = (why: string): never => {
    throw usageError('E_USAGE', `${flag} ${JSON.stringify(raw)} is not a date-time${why}`, {
      hint: 'write ISO 8601 with Z or an offset, e.g. 2026-12-01T09:00:00Z or 2026-12-01T09:00:00+01:00',
    });
  };
  const m = ISO_DATE_TIME.exec(raw.trim());
  if (!m) {
    const text = raw.trim();
    if (/^\d{4}-\d{2}-\d{2}$/.test(text)) return refuse(': give the time and its offset too (e.g. T00:00:00Z)');
    // Read as the machine's own time zone, it would name another instant on each machine.
    if (/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(text))
      return refuse(': give its offset too (Z for UTC, or +HH:MM / -HH:MM)');
    return refuse('');
  }
  const [year, month, day, hour, minute] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [
    number,
    number,
    number,
    number,
    number,
  ];
  const second = m[6] === undefined ? 0 : Number(m[6]);
  const ms = m[7] === undefined ? 0 : Math.floor(Number(`0.${m[7]}`) * 1000);
  if (year < 2000 || year > 9999) return refuse(': the year must be from 2000 to 9999');
  const local = Date.UTC(year, month - 1, day, hour, minute, second, ms);
  const back = new Date(local);
  if (
    month < 1 ||
    month > 12 ||
    hour > 23 ||
    minute > 59 ||
    second > 59 ||
    back.getUTCFullYear() !== year ||
    back.getUTCMonth() !== month - 1 ||
    back.getUTCDate() !== day
  ) {
    return refuse(': no such date or time');
  }
  let offsetMs = 0;
  if (m[8]!.toUpperCase() !== 'Z') {
    const [oh, om] = [Number(m[10]), Number(m[11])];
    if (oh > 23 || om > 59) return refuse(': no such offset');
    offsetMs = (m[9] === '-' ? -1 : 1) * (oh * 60 + om) * 60_000;
  }
  return new Date(local - offsetMs);
}

/** An ISO 8601 date-time with Z or an offset (e.g. --as-of), as a Date. */
export function dateTimeOption(flags: string, description: string): Option {
  return parsedOption(flags, description, (raw, flag) => parseDateTimeOption(flag, raw));
}

/**
 * One row of a command's table of flags: the commander option, and the field of the use case's options it fills.
 * Commands register their flags and read their options from one table, so a flag cannot be added to one and not
 * the other.
 */
export interface Flag<T> {
  option: Option;
  /** The options' field (by default the option's attribute name: `--max-credits` fills `maxCredits`). */
  key?: keyof T & string;
  /** The field's value from commander's (by default a boolean flag's true or false, any other value as parsed). */
  value?(raw: unknown): unknown;
}

/** The flags of a table, registered on `command` in the table's order (the order `--help` lists them). */
export function addFlags(command: Command, flags: ReadonlyArray<Flag<never>>): Command {
  for (const flag of flags) command.addOption(flag.option);
  return command;
}

/** The field a flag fills. */
export function flagKey<T>(flag: Flag<T>): keyof T & string {
  return flag.key ?? (flag.option.attributeName() as keyof T & string);
}

/** The options a table's flags fill from what commander read. */
export function readFlags<T>(command: Command, flags: ReadonlyArray<Flag<T>>): Partial<T> {
  const raw = command.opts<Record<string, unknown>>();
  const options: Record<string, unknown> = {};
  for (const flag of flags) {
    const value = raw[flag.option.attributeName()];
    const plain = flag.option.isBoolean() ? (flag.option.negate ? value !== false : value === true) : value;
    options[flagKey(flag)] = flag.value ? flag.value(value) : plain;
  }
  return options as Partial<T>;
}

/** Whether a flag of the table was given on the command line (not a default, nor an environment variable). */
export function flagGiven<T>(command: Command, flags: ReadonlyArray<Flag<T>>, key: keyof T): boolean {
  const flag = flags.find((f) => flagKey(f) === key);
  return flag !== undefined && command.getOptionValueSource(flag.option.attributeName()) === 'cli';
}

/**
 * --unanchored, as verify, status, report and window take it: a results file anchored nowhere this machine can see is
 * judged anyway, with the weaker check (said in what the command prints), instead of being unproven (exit 3).
 */
export function unanchoredOption(subject: 'a file' | 'files' = 'a file'): Option {
  return new Option(
    '--unanchored',
    `judge ${subject} anchored nowhere this machine can see (the weaker check: it says what it did not check)`,
  );
}
