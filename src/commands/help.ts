// `dnc help [COMMAND|TOPIC]`: a command's help, or a topic (exit codes, environment, results, formats)
// printed from the same tables the code uses, so help can never drift from behaviour.
import type { Command } from 'commander';
import { ENVIRONMENT_VARIABLES } from '../config.js';
import type { Context } from '../context.js';
import {
  ERROR_CODES,
  EXIT_STATUS_MEANINGS,
  ExitCode,
  usageError,
  type ErrorCode,
  type ExitCodeValue,
} from '../errors.js';
import type { CommandHost } from './host.js';
import { suggest } from '../suggest.js';

/**
 * The exit statuses each command can give, with what a status means for that command where the
 * general meaning (EXIT_STATUS_MEANINGS) is not precise enough; null takes the general meaning.
 * A command not listed refers to `dnc help exit-codes`.
 */
const EXITS_BY_COMMAND: Readonly<Record<string, Partial<Record<ExitCodeValue, string | null>>>> = {
  check: {
    0: 'every number was answered (or, with --webhook-url, started)',
    2: 'bad option, unknown --country, bad --webhook-url, AU number without --webhook-url, missing configuration',
    3: 'a number is invalid (locally or invalid_phone_number) or its country is unsupported (422)',
    4: 'the key was refused (401/403); later numbers are not sent',
    5: 'credit limit reached (429); later numbers are not sent',
    6: 'service or network failure after retries (billing_error, lookup_expired, upstream_*, 5xx)',
    10: null,
    130: 'interrupted: the lookup in flight finishes and is shown, later numbers are not sent',
  },
  batch: {
    0: 'every row has a verdict',
    2:
      'bad option, phone column missing or ambiguous, two of input, outputs, journal and manifest on one file, ' +
      'journal of another input',
    3:
      'malformed CSV (file, line, record and what is wrong are printed), or an output folder that cannot be ' +
      'written; nothing was sent',
    4: 'the key was refused (401/403)',
    5: 'credit limit (429) or --max-credits reached: rerun to resume',
    6: 'the service failed or could not be reached: rerun to resume',
    7: null,
    8: 'finished, but webhook results are pending: run `dnc listen --results OUTPUT`',
    130: 'interrupted: rerun to resume',
  },
  usage: { 0: null, 2: 'bad option, or the service refused the query (400) or the period (404)', 4: null, 6: null },
  listen: {
    0: 'nothing pending: by itself with --exit-when-done, or when stopped',
    2: 'bad option, a busy port, or OUTPUT.csv has no batch journal',
    3: 'OUTPUT.csv cannot be written (the pushes received stay in the journal)',
    130: 'stopped (SIGINT/SIGTERM) with lookups still pending: run it again to go on',
  },
  verify: {
    0: 'fit to dial',
    2: 'bad option',
    3: 'not fit to dial: rows to re-check, the file changed after dnc wrote it, or no manifest',
  },
  window: {
    0: 'the list was written (it may hold no number: none was inside its window for the whole slot)',
    2: 'bad option (a time without its offset, a slot that ends before it starts), or --dial-out on the evidence',
    3: 'not fit to dial (altered, unproven or stale: nothing written), no manifest, or the list cannot be written',
  },
  trace: { 0: 'found', 2: 'bad option', 3: 'no record of that correlation id on this machine' },
  sandbox: {
    0: 'stopped by SIGINT/SIGTERM, or started in the background (--detach)',
    2: 'bad option, or the port cannot be bound',
  },
  suppress: {
    0: null,
    2: 'bad option, or the suppression list named does not exist',
    3: 'a number or a file that cannot be read (file, line and value are printed); nothing is changed',
  },
  exempt: {
    0: null,
    2: 'bad option (basis, date), or the suppression list named does not exist',
    3: 'a number or a file that cannot be read (file, line and value are printed); nothing is changed',
  },
  status: {
    0: 'every results file is valid beyond the --expiring window',
    2: 'bad option',
    3: 'a results file has expired, or will within --expiring, or cannot be read',
  },
  report: {
    0: null,
    2: 'bad option',
    3: 'the results file or its manifest cannot be read, or the report cannot be written',
  },
};

/** Lines listing exit statuses with their meanings, from errors.ts's table (or a command's own words for them). */
export function exitStatusLines(
  statuses: Partial<Record<ExitCodeValue, string | null>> = Object.fromEntries(
    Object.keys(EXIT_STATUS_MEANINGS).map((c) => [c, null]),
  ),
): string[] {
  return (Object.entries(statuses) as Array<[string, string | null]>)
    .map(([code, meaning]) => [Number(code) as ExitCodeValue, meaning] as const)
    .sort((a, b) => a[0] - b[0])
    .map(([code, meaning]) => `  ${String(code).padEnd(4)} ${meaning ?? EXIT_STATUS_MEANINGS[code]}`);
}

/**
 * Appends "Exit codes:" (generated from the table) to every command that lists its statuses, and a pointer to the
 * topics.
 */
export function addExitCodeHelp(program: Command): void {
  for (const command of program.commands) {
    const statuses = EXITS_BY_COMMAND[command.name()];
    if (!statuses) continue;
    // Written when that help is shown: a run shows one help at most, and start-up pays for nothing else.
    command.addHelpText('after', () =>
      ['', 'Exit codes:', ...exitStatusLines(statuses), '  (every code: dnc help exit-codes)'].join('\n'),
    );
  }
  program.addHelpText('after', () =>
    [
      '',
      'Exit codes:',
      ...exitStatusLines(),
      '',
      `Help topics: dnc help ${TOPIC_NAMES.join(' | ')}; a command: dnc help COMMAND`,
    ].join('\n'),
  );
}

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

const TOPICS: Readonly<Record<string, Topic>> = {
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
      const { CALLING_COLUMNS, DNC_COLUMNS, DNC_RESULTS } = await import('../results/columns.js');
      const { phoneColumnNames } = await import('../results/row-cells.js');
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
        'With several phone columns (--column A,B,C) the columns above describe the row: dnc_phone_e164 is',
        'its first callable number (else its first number), and the calling columns are its; dnc_result is',
        'callable when one of its numbers is, else the most telling of theirs (do_not_call, failed, pending,',
        'not_checked, unsupported_country, invalid). Each phone column N (its place in --column) then adds:',
        ...phoneColumnNames(1).map((c, i) => `  ${c.replace('_1_', '_N_').padEnd(24)} ${PER_NUMBER[i]}`),
        '',
        'Only callable rows (and callable numbers) may be called.',
      ];
    },
  },
  formats: {
    summary: 'the files dnc reads and writes',
    async lines() {
      const { MAX_RECORD_CHARS } = await import('../tables/csv-input.js');
      const { DETECTABLE_DELIMITERS } = await import('../tables/delimiter.js');
      const { PHONE_HEADER_NAMES } = await import('../tables/columns.js');
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
        '  --callable-out and --suppressed-out: the callable / do_not_call rows, input columns only.',
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

export const TOPIC_NAMES = Object.keys(TOPICS);

export async function topicLines(name: string): Promise<string[] | undefined> {
  return TOPICS[name]?.lines();
}

export function registerHelp(program: Command, host: CommandHost): void {
  program.helpCommand(false);
  const command = program
    .command('help')
    .description(`show help for a command, or a topic: ${TOPIC_NAMES.join(', ')}`)
    .argument(
      '[command-or-topic...]',
      `a command (\`suppress add\` for a command of a command), or one of: ${TOPIC_NAMES.join(', ')}`,
    );
  host.action(command, (ctx) => runHelp(ctx, program, (command.processedArgs[0] as string[] | undefined) ?? []));
}

function findCommand(parent: Command, name: string): Command | undefined {
  return parent.commands.find((c) => c.name() === name || c.aliases().includes(name));
}

async function runHelp(ctx: Context, program: Command, names: string[]): Promise<number> {
  const [name, ...rest] = names;
  if (name === undefined) {
    program.outputHelp();
    return ExitCode.OK;
  }
  let sub = findCommand(program, name);
  if (sub) {
    // `dnc help suppress add`, as `dnc suppress add --help`.
    let path = sub.name();
    for (const word of rest) {
      const next = findCommand(sub, word);
      if (!next) {
        const own = sub.commands.map((c) => c.name());
        if (own.length === 0)
          throw usageError('E_USAGE', `no command '${path} ${word}': ${path} has no commands of its own`, {
            hint: `see 'dnc ${path} --help'`,
          });
        const guess = suggest(word, own);
        throw usageError('E_USAGE', `no command '${path} ${word}'${guess ? ` (did you mean ${path} ${guess}?)` : ''}`, {
          hint: `commands of ${path}: ${own.join(', ')}`,
        });
      }
      sub = next;
      path = `${path} ${sub.name()}`;
    }
    sub.outputHelp();
    return ExitCode.OK;
  }
  if (rest.length > 0)
    throw usageError('E_USAGE', `help takes one topic: '${names.join(' ')}'`, {
      hint: `topics: ${TOPIC_NAMES.join(', ')}`,
    });
  const lines = await topicLines(name);
  if (lines) {
    ctx.io.stdout.write(`${lines.join('\n')}\n`);
    return ExitCode.OK;
  }
  const known = [...program.commands.map((c) => c.name()), ...TOPIC_NAMES];
  const guess = suggest(name, known);
  throw usageError('E_USAGE', `no command or help topic '${name}'${guess ? ` (did you mean ${guess}?)` : ''}`, {
    hint: `commands: ${program.commands.map((c) => c.name()).join(', ')}; topics: ${TOPIC_NAMES.join(', ')}`,
  });
}
