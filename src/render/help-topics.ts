// The topics of `dnc help TOPIC` (exit codes, environment, results, formats), printed from the same tables the code
// uses, so help can never drift from behaviour. Loaded by `dnc help` when a topic is asked for.
import { ENVIRONMENT_VARIABLES } from '../config.js';
import { ERROR_CODES, type ErrorCode } from '../errors.js';
import { CALLING_COLUMNS, DNC_COLUMNS, DNC_RESULTS } from '../results/columns.js';
import { CALLABLE_NUMBERS_COLUMN, phoneColumnNames } from '../results/row-cells.js';
import { MAX_RECORD_CHARS } from '../tables/csv-input.js';
import { DETECTABLE_DELIMITERS } from '../tables/delimiter.js';
import { PHONE_HEADER_NAMES } from '../tables/columns.js';
import { exitStatusLines, type TopicName } from './help-text.js';

/**
 * What each dnc_result value means (cli.md); keyed by the renderer's own list so a new result cannot go unexplained.
 */
const RESULT_MEANINGS = {
  callable: 'checked, on no register: the only result that may be called',
  do_not_call: 'on a register (or on your internal list: dnc_list_source internal:<list name>)',
  invalid: 'the number cannot be valid (refused locally, or the register answered invalid_phone_number)',
  unsupported_country: 'the service does not cover its country',
  pending: 'a webhook-mode lookup whose result has not arrived yet (dnc listen receives it)',
  not_checked: 'no lookup was made (credit limit, budget, interrupted, AU without a webhook URL); rerun to finish',
  failed: 'the service answered with a failure (billing_error, lookup_expired, upstream failures after retries)',
} as const;

const COLUMN_MEANINGS = {
  dnc_phone_e164: 'the normalised number, empty if it could not be normalised',
  dnc_country: 'ISO 3166-1 alpha-2',
  dnc_result: 'one of the results below',
  dnc_do_not_call: 'true, false or empty',
  dnc_list_source: 'the register URL that matched, when given',
  dnc_checked_at: "the service's timestamp of the result",
  dnc_correlation_id: "the lookup's correlation id (quote it to the service's support; dnc trace shows its story)",
  dnc_error_code:
    "the service's error_code, or a local reason (unparseable_number, missing_number, unknown_country, " +
    'webhook_required, credit_limit, budget_reached, interrupted, conflicting_pushes, …)',
  dnc_error: 'human-readable reason',
  dnc_credits: "credits charged for this row's lookup (0 when none; rows sharing a number show them once)",
  dnc_exemption: 'the exemption that made a registered number callable (basis and expiry), else empty',
  dnc_valid_until:
    "the last instant the register verdict may be relied on (dnc_checked_at + the country's window, or the " +
    "exemption's end if sooner), else empty",
} as const;

const CALLING_MEANINGS = {
  dnc_time_zones: "the number's IANA time zones, space-separated (all its country's zones when its place is not known)",
  dnc_calling_window:
    'when it may be called, local time in each of its zones, under the rules and the policy the batch was ' +
    'started with (e.g. Mon-Fri 08:00-20:00; Sat 09:00-17:00); empty for a number that could not be read',
} as const;

/** What each dnc_N_* column holds, in phoneColumnNames' order. */
const PER_NUMBER = [
  "column N's number, normalised (empty if it could not be read)",
  "that number's result",
  "its error code (missing_number for an empty cell, unknown_country, the service's …)",
  "its lookup's correlation id",
  "the service's timestamp of its result",
  'the last instant its register verdict may be relied on',
  "that number's time zones",
  'its weekly calling window',
];

interface Topic {
  summary: string;
  lines(): Promise<string[]>;
}

const TOPICS: Readonly<Record<TopicName, Topic>> = {
  'exit-codes': {
    summary: 'what each exit status means, and the error codes that give it',
    async lines() {
      const out = [
        'Exit codes',
        '',
        ...exitStatusLines(),
        '',
        'Error codes (printed as `dnc: error [CODE]: …`), by exit status:',
      ];
      const byExit = new Map<number, ErrorCode[]>();
      for (const code of Object.keys(ERROR_CODES) as ErrorCode[]) {
        const exit = ERROR_CODES[code].exit;
        byExit.set(exit, [...(byExit.get(exit) ?? []), code]);
      }
      for (const [exit, codes] of [...byExit].sort((a, b) => a[0] - b[0])) {
        out.push('', `  exit ${exit}`);
        for (const code of codes) out.push(`    ${code.padEnd(24)} ${ERROR_CODES[code].summary}`);
      }
      out.push('', 'Scripts should match on the exit status or the error code, never on the wording of a message.');
      return out;
    },
  },
  environment: {
    summary: 'the environment variables dnc reads',
    async lines() {
      const width = Math.max(...ENVIRONMENT_VARIABLES.map((v) => v.name.length));
      return [
        'Environment',
        '',
        ...ENVIRONMENT_VARIABLES.map((v) => `  ${v.name.padEnd(width)}  ${v.meaning}`),
        '',
        'Precedence: flag > environment > config file > default; an empty variable counts as unset.',
      ];
    },
  },
  results: {
    summary: 'the dnc_* columns a batch appends, and what each dnc_result means',
    async lines() {
      const columns: Record<(typeof DNC_COLUMNS)[number], string> = COLUMN_MEANINGS;
      const calling: Record<(typeof CALLING_COLUMNS)[number], string> = CALLING_MEANINGS;
      const results: Record<(typeof DNC_RESULTS)[number], string> = RESULT_MEANINGS;
      return [
        'Results of dnc batch',
        '',
        'Every input row, in input order, input columns unchanged, followed by:',
        ...DNC_COLUMNS.map((c) => `  ${c.padEnd(20)} ${columns[c]}`),
        ...CALLING_COLUMNS.map((c) => `  ${c.padEnd(20)} ${calling[c]}`),
        '',
        'The calling columns depend only on the number and the calling rules (docs/calling.md): they say',
        'when a number may be called, never whether; `dnc window` makes the list for a time slot.',
        '',
        'dnc_result:',
        ...DNC_RESULTS.map((r) => `  ${r.padEnd(20)} ${results[r]}`),
        '',
        'With several phone columns (--column A,B,C) the columns above describe the row: dnc_result is',
        'callable only when one of its numbers is callable and none is do_not_call, failed, pending or',
        'not_checked (an invalid or unsupported number decides nothing); do_not_call when any number is;',
        'else the first of failed, pending, not_checked, unsupported_country, invalid among its numbers.',
        'dnc_phone_e164 is its first callable number (else the number that decides dnc_result), and the',
        'calling columns are its. Each phone column N (its place in --column) then adds:',
        ...phoneColumnNames(1).map((c, i) => `  ${c.replace('_1_', '_N_').padEnd(24)} ${PER_NUMBER[i]}`),
        'and last:',
        `  ${CALLABLE_NUMBERS_COLUMN.padEnd(24)} the row's callable numbers, space-separated, in --column order`,
        '',
        'Only callable rows may be called, and only on the numbers dnc_callable_numbers lists; a row that is',
        'not callable lists the numbers that were found callable too (never one of its other numbers).',
      ];
    },
  },
  formats: {
    summary: 'the files dnc reads and writes',
    async lines() {
      const delimiters = DETECTABLE_DELIMITERS.map((d) => (d === '\t' ? 'tab' : d)).join(' ');
      return [
        'File formats',
        '',
        'Input (dnc batch INPUT, or - for stdin):',
        '  CSV, UTF-8 with or without a BOM; LF, CRLF and CR all end a record, also mixed in one file;',
        '  quoted fields may hold line breaks; a blank line is a row (invalid, missing_number); NUL bytes are refused.',
        `  Delimiter detected from the header line among: ${delimiters} (--delimiter overrides).`,
        `  Phone column detected from the header (${[...PHONE_HEADER_NAMES].slice(0, 8).join(', ')}, …, ignoring case,`,
        '  spaces and punctuation), or given with --column NAME or --column INDEX (1-based).',
        `  A record longer than ${(MAX_RECORD_CHARS / 1024 / 1024).toLocaleString('en-US')} MiB is refused (exit 3).`,
        '',
        'Output (-o OUTPUT, default INPUT.results.csv beside the input):',
        '  every input row plus the dnc_* columns (dnc help results); same delimiter, line ending and',
        '  BOM as the input; written to a temporary file and renamed, so never half a file.',
        '  Fields holding the delimiter, a quote, CR or LF are quoted (RFC 4180); - writes to stdout.',
        '  --callable-out: every row with a callable number, only its callable numbers kept in the phone',
        '  cells; --suppressed-out: the do_not_call rows; both input columns only.',
        '  --review-out: rows that need a person, with dnc_phone_e164, dnc_result, dnc_error_code, dnc_error.',
        '  --dial-out: the distinct callable numbers in E.164, one per line.',
        '',
        'Beside the output:',
        '  OUTPUT.journal.sqlite   the batch journal (SQLite): what was sent, answered and pushed; resume reads it',
        '  OUTPUT.manifest.json    evidence of the scrub: hashes, counts, credits, registers (dnc verify checks it)',
        '',
        'Other outputs:',
        '  --json                  one JSON document (NDJSON for several numbers in check) on stdout',
        '  dnc usage, piped        tab-separated records named by their first field (customer, period, country, …)',
        '  dnc sandbox             first two stdout lines DNC_BASE_URL=… and DNC_API_KEY=…; --detach prints ' +
          'export lines',
      ];
    },
  },
};

/** A topic's lines, or undefined when `name` is none. */
export async function topicLines(name: string): Promise<string[] | undefined> {
  return (TOPICS as Readonly<Record<string, Topic>>)[name]?.lines();
}
