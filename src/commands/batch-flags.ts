// `dnc batch`'s flags as one table: each row registers an option (in the order `--help` lists them) and names the
// field of BatchOptions it fills, so the registration and the options a run is given cannot drift apart.
import { Option, type Command } from 'commander';
import { COMPLIANCE_FLAGS, REMEMBERED_OPTIONS, type BatchOptions } from '../batch/job.js';
import {
  flagGiven,
  flagKey,
  integerOption,
  LIST_FILE_WHERE,
  parsedOption,
  readFlags,
  type Flag,
} from '../cli-options.js';
import type { ComplianceFlags } from '../compliance/settings.js';
import { MAX_CONCURRENCY, parseIntegerOption } from '../config.js';
import { usageError } from '../errors.js';
import type { TextEncoding } from '../tables/encoding.js';
import { parseEncodingOption } from '../tables/encoding-names.js';
import { parseDuration } from '../time.js';

/** What the table fills: the options, with the compliance flags beside them (they are nested in `compliance`). */
type BatchFlagValues = Omit<BatchOptions, 'compliance' | 'given'> & ComplianceFlags;

const plain = (flags: string, description: string) => new Option(flags, description);

export const BATCH_FLAGS: ReadonlyArray<Flag<BatchFlagValues>> = [
  {
    option: plain(
      '-o, --output <file>',
      'where to write the results, - for standard output (default: INPUT.results.csv beside the input; standard ' +
        'output when INPUT is -)',
    ),
  },
  {
    option: plain(
      '--column <names|indexes>',
      'the phone columns: header names or 1-based indexes, comma-separated (repeat the flag for a name that holds ' +
        'a comma; default: detected from the header)',
    ).argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]),
  },
  {
    option: plain(
      '--country-column <name|index>',
      "the column of each row's country (ISO codes, names, calling codes); --country is the default for rows " +
        'without one (default: a column named Country, for a new batch)',
    ),
  },
  { option: plain('--country <cc>', 'region for numbers in national format, e.g. US or GB') },
  {
    option: integerOption(
      '--concurrency <n>',
      `lookups in flight at once, 1 to ${MAX_CONCURRENCY}`,
      1,
      MAX_CONCURRENCY,
    ).default(8),
  },
  {
    option: plain(
      '--webhook-url <url>',
      'webhook mode for webhook-only countries (AU): results are pushed to this https URL',
    ),
  },
  { option: plain('--webhook-all', 'send every lookup in webhook mode (needs --webhook-url)') },
  {
    option: plain(
      '--allow-insecure-webhook-url',
      'allow an http:// or loopback --webhook-url (for `dnc sandbox --allow-insecure-webhooks`)',
    ),
  },
  {
    option: parsedOption(
      '--max-credits <n>',
      'never start a lookup that could take the batch past N credits (none: no budget, lifting one the batch ' +
        'was started with)',
      maxCreditsFlag,
    ),
    // `none` lifts a budget the journal remembers.
    value: (raw) => (typeof raw === 'number' ? raw : null),
  },
  {
    option: plain(
      '--dry-run',
      'send nothing: count rows, distinct numbers, countries, invalid rows; show balance and estimated cost',
    ),
  },
  { option: plain('--restart', 'discard the journal of an earlier run of this batch and start over') },
  {
    option: plain(
      '--resend-unanswered',
      'send again the numbers an earlier run sent without getting the answer (killed, or stopped at once): each ' +
        'may be charged twice',
    ),
  },
  {
    option: plain(
      '--resend-failed',
      'send again the failed numbers a rerun leaves (a charged billing_error, a send that got no answer): each is ' +
        'charged again',
    ),
  },
  {
    option: plain(
      '--accept-unproven-journal',
      "accept as they stand the answers of a journal that cannot prove them (an older dnc's, or anchored nowhere " +
        'here): only if you know it was not edited',
    ),
  },
  {
    option: plain(
      '--callable-out <file>',
      'also write the rows with a callable number to FILE, input columns only, only callable numbers kept',
    ),
  },
  { option: plain('--suppressed-out <file>', 'also write the do-not-call rows (input columns only) to FILE') },
  { option: plain('--delimiter <c>', "the input's delimiter: , ; | or tab (default: detected from the header line)") },
  {
    option: plain('--no-header', 'the first line is a data row (give --column INDEX when there are several columns)'),
  },
  {
    option: parsedOption(
      '--encoding <name>',
      'the CSV input\'s encoding: utf-8, windows-1252 (Excel\'s "CSV"), latin1, utf-16le or utf-16be ' +
        '(default: utf-8; UTF-16 is found by its byte-order mark)',
      encodingFlag,
    ),
  },
  {
    option: parsedOption('--output-encoding <name>', "the CSV outputs' encoding (default: the input's)", encodingFlag),
  },
  {
    option: plain(
      '--format <format>',
      'how the results are written (default: by the extension of -o: .xlsx is a workbook, anything else CSV)',
    ).choices(['csv', 'xlsx']),
  },
  {
    option: plain(
      '--sheet <name|index>',
      'the worksheet of an .xlsx input: a name or a 1-based index among worksheets (default: the one Excel opens on, ' +
        'its active tab)',
    ),
  },
  {
    option: integerOption(
      '--skip-rows <n>',
      'do not read the first N rows of an .xlsx sheet, or the first N lines of a CSV file (titles above the header, ' +
        'or above the data with --no-header)',
      0,
      1_048_575,
    ),
  },
  {
    option: plain(
      '--review-out <file>',
      'also write the rows that need a person (invalid, unsupported_country, not_checked, failed) with their reasons',
    ),
  },
  {
    option: plain(
      '--dial-out <file>',
      'also write the distinct callable numbers in E.164, one per line, for a dialler',
    ),
  },
  {
    option: plain(
      '--escape-formulas',
      "for files bound for a spreadsheet: input cells starting with = + - @ tab or CR get a leading ' (so + " +
        'numbers do too)',
    ),
  },
  {
    option: plain(
      '--journal <file>',
      'where to keep the journal (default: OUTPUT.journal.sqlite; with -o - or a FIFO, the state folder)',
    ),
  },
  {
    option: parsedOption(
      '--reuse-within <duration>',
      'reuse verdicts of numbers checked within DURATION (e.g. 7d, 12h) instead of looking them up again',
      (raw, flag) => parseDuration(flag, raw),
    ),
    key: 'reuseWithinMs',
    value: (raw) => raw ?? null,
  },
  {
    option: plain(
      '--no-reuse',
      'pay again for numbers this service answered within the last day, without asking (on a terminal dnc asks ' +
        'first; elsewhere it pays again and the summary says so)',
    ),
    key: 'noReuse',
    value: (raw) => raw === false,
  },
  { option: plain('--suppression-list <path>', `the internal do-not-call list and exemptions (${LIST_FILE_WHERE})`) },
  {
    option: plain(
      '--seller <name>',
      'the seller the scrub is for (config "seller"; recorded in the manifest and report)',
    ),
  },
  { option: plain('--san <id>', 'the seller\'s registry account number, e.g. the FTC SAN (config "san")') },
  { option: plain('--campaign <label>', 'a campaign label (config "campaign")') },
  {
    option: plain(
      '--calling-settings <file>',
      "the team's calling policy for dnc_calling_window (env DNC_CALLING_SETTINGS; else the config's calling)",
    ),
  },
];

/** The flags `--join` refuses: all but --concurrency and --max-credits are the scrub's owner's. */
export const JOIN_REFUSES: ReadonlyArray<keyof BatchFlagValues> = BATCH_FLAGS.map(flagKey).filter(
  (k) => k !== 'concurrency' && k !== 'maxCredits',
) as Array<keyof BatchFlagValues>;

/** The options of a run as the command line gives them, and which of those a rerun's journal remembers were given. */
export function batchOptionsOf(command: Command): BatchOptions {
  const values = readFlags(command, BATCH_FLAGS) as BatchFlagValues;
  const compliance: ComplianceFlags = {};
  const options: Record<string, unknown> = {};
  for (const flag of BATCH_FLAGS) {
    const key = flagKey(flag);
    if (key in COMPLIANCE_FLAGS) compliance[key as keyof ComplianceFlags] = values[key] as string | undefined;
    else options[key] = values[key];
  }
  const given = new Set(
    REMEMBERED_OPTIONS.filter((name) =>
      name === 'compliance'
        ? Object.keys(COMPLIANCE_FLAGS).some((k) => flagGiven(command, BATCH_FLAGS, k as keyof ComplianceFlags))
        : flagGiven(command, BATCH_FLAGS, name),
    ),
  );
  return { ...(options as Omit<BatchOptions, 'compliance' | 'given'>), given, compliance };
}

/** A budget, or 'none' (not null: commander turns a parsed null into '', which would read as a budget of 0). */
function maxCreditsFlag(raw: string, flag: string): number | 'none' {
  if (raw.trim() === 'none') return 'none';
  if (!/^-?\d+$/.test(raw.trim())) {
    throw usageError('E_USAGE', `${flag} must be a whole number of credits or none, got '${raw}'`, {
      hint: `${flag} none runs without a budget (lifting one the batch was started with)`,
    });
  }
  return parseIntegerOption(flag, raw, 0);
}

function encodingFlag(raw: string, flag: string): TextEncoding {
  return parseEncodingOption(flag, raw)!;
}
