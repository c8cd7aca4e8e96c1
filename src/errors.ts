// Typed errors: every failure that reaches a user is a DncError with a stable code and an exit status.
import { maskSecrets } from './secrets.js';

/** Exit statuses, as fixed by the CLI contract (shared/spec/cli.md). */
export const ExitCode = {
  OK: 0,
  INTERNAL: 1,
  USAGE: 2,
  INPUT: 3,
  AUTH: 4,
  CREDIT: 5,
  SERVICE: 6,
  UNFINISHED: 7,
  PENDING: 8,
  ON_DNC_LIST: 10,
  INTERRUPTED: 130,
} as const;
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/**
 * What each exit status means: `dnc help exit-codes`, every command's help and docs/exit-codes.md are made from this.
 */
export const EXIT_STATUS_MEANINGS: Readonly<Record<ExitCodeValue, string>> = {
  0: 'success',
  1: 'unexpected internal error (prints a hint to report it)',
  2: 'usage error: unknown flag, bad argument, conflicting options, missing configuration',
  3:
    'input data error: unreadable or malformed CSV, a number that cannot be a phone number, unsupported ' +
    'country (check)',
  4: 'authentication or authorization failed (401, 403)',
  5: 'credit limit reached (429) or the --max-credits budget reached; a batch stopped and can resume',
  6: 'service or network failure after retries (5xx, timeouts, connection refused)',
  7: 'batch finished, but some rows have no verdict (not_checked or failed); rerun to finish them',
  8: 'batch finished but webhook results are still pending',
  10: 'check --fail-on-dnc: the number is on a do-not-call register',
  130: 'interrupted (SIGINT); a batch can resume',
};

/**
 * Every error code `dnc` prints, with the exit status it gives and what it means. The one place a
 * code meets a number: throw sites name a code, and scripts match on it (as undici's `err.code`).
 */
export const ERROR_CODES = {
  E_INTERNAL: {
    exit: ExitCode.INTERNAL,
    summary: 'a bug in dnc: please report it with the command and --verbose output',
  },
  E_USAGE: { exit: ExitCode.USAGE, summary: 'an unknown flag or command, a bad argument, or conflicting options' },
  E_CONFIG_MISSING: { exit: ExitCode.USAGE, summary: 'the base URL or the API key is not configured' },
  E_CONFIG_INVALID: {
    exit: ExitCode.USAGE,
    summary: 'a configuration value (flag, environment or config file) is not valid',
  },
  E_CONFIG_UNREADABLE: { exit: ExitCode.USAGE, summary: 'the config file or the --api-key-file cannot be read' },
  E_CONFIG_INSECURE: { exit: ExitCode.USAGE, summary: 'a config or key file, or its folder, is writable by others' },
  E_COLUMN_NOT_FOUND: { exit: ExitCode.USAGE, summary: 'batch: the --column named is not in the input' },
  E_COLUMN_REQUIRED: { exit: ExitCode.USAGE, summary: 'batch: no phone column could be detected; give --column' },
  E_COLUMN_AMBIGUOUS: {
    exit: ExitCode.USAGE,
    summary: 'batch: several columns could be the phone column; give --column',
  },
  E_JOURNAL_BUSY: { exit: ExitCode.USAGE, summary: "another dnc process holds this batch's journal" },
  E_SCRUB_UNKNOWN: {
    exit: ExitCode.USAGE,
    summary: 'batch --join: no scrub of that id that this runner may help (another store, service or API key)',
  },
  E_JOURNAL_MISMATCH: {
    exit: ExitCode.USAGE,
    summary: 'the journal belongs to another input or other result-changing options (see --restart)',
  },
  E_JOURNAL_TOO_NEW: {
    exit: ExitCode.USAGE,
    summary: 'the batch journal was written by a newer dnc: upgrade dnc to resume it',
  },
  E_JOURNAL_MISSING: { exit: ExitCode.USAGE, summary: 'listen: the batch has no journal beside its output' },
  E_WEBHOOK_URL: { exit: ExitCode.USAGE, summary: 'a --webhook-url the service would refuse' },
  E_BAD_REQUEST: {
    exit: ExitCode.USAGE,
    summary: 'the service refused the request itself (400), not the number; nothing charged',
  },
  E_WEBHOOK_REQUIRED: { exit: ExitCode.USAGE, summary: 'an AU number without --webhook-url (AU is webhook-only)' },
  E_USAGE_QUERY_REJECTED: { exit: ExitCode.USAGE, summary: 'usage: the service refused the query (400)' },
  E_NOT_FOUND: {
    exit: ExitCode.USAGE,
    summary: 'usage: the billing period is unknown or belongs to another account (404)',
  },
  E_PORT_IN_USE: { exit: ExitCode.USAGE, summary: 'listen: the port is already in use' },
  E_CANNOT_LISTEN: { exit: ExitCode.USAGE, summary: 'listen: the address cannot be bound' },
  E_SANDBOX_LISTEN: { exit: ExitCode.USAGE, summary: 'sandbox: the port cannot be bound' },
  E_TLS_UNREADABLE: { exit: ExitCode.USAGE, summary: 'listen: --tls-cert or --tls-key cannot be read' },
  E_TLS_INVALID: { exit: ExitCode.USAGE, summary: 'listen: --tls-cert and --tls-key are not a valid pair' },
  E_SHEET_NOT_FOUND: { exit: ExitCode.USAGE, summary: 'batch: the --sheet named is not in the workbook' },
  E_GUESSABLE_PATH: { exit: ExitCode.USAGE, summary: 'listen: a non-loopback --host needs an unguessable --path' },
  E_PATH_COLLISION: {
    exit: ExitCode.USAGE,
    summary: 'batch, window: two of the input, the outputs, the journal and the manifest are one file',
  },
  E_OUTPUT_LINK: {
    exit: ExitCode.USAGE,
    summary: 'an output path is a symbolic link, a FIFO of another user, or not a file where one is replaced',
  },
  E_LIST_MISSING: { exit: ExitCode.USAGE, summary: 'the suppression list named does not exist (nothing was sent)' },
  E_STORE_INVALID: {
    exit: ExitCode.USAGE,
    summary: 'the --store setting is not a store dnc can use, or conflicts with another setting',
  },
  E_STORE_REFUSED: {
    exit: ExitCode.USAGE,
    summary: "the team store refused dnc's role (password, grants, a schema it may not change)",
  },
  E_STORE_TOO_NEW: {
    exit: ExitCode.USAGE,
    summary: 'a store (the team store, or a local file: cache, history, anchors, list) was written by a newer dnc',
  },
  E_INPUT_MISSING: { exit: ExitCode.INPUT, summary: 'the input file does not exist' },
  E_INPUT_UNREADABLE: { exit: ExitCode.INPUT, summary: 'the input cannot be read' },
  E_INPUT_EMPTY: { exit: ExitCode.INPUT, summary: 'the input is empty' },
  E_INPUT_NO_ROWS: { exit: ExitCode.INPUT, summary: 'the input has a header but no rows' },
  E_INPUT_BINARY: { exit: ExitCode.INPUT, summary: 'the input is not text' },
  E_INPUT_ENCODING: { exit: ExitCode.INPUT, summary: 'the input is not UTF-8' },
  E_INPUT_MALFORMED: { exit: ExitCode.INPUT, summary: 'malformed CSV (named with its line)' },
  E_INPUT_FORMAT: {
    exit: ExitCode.INPUT,
    summary: 'batch: the input is not a file dnc can read (a renamed CSV, .xls, .xlsb, .ods, encrypted)',
  },
  E_INPUT_LIMITS: {
    exit: ExitCode.INPUT,
    summary: "a workbook row or cell past Excel's limits (row 1,048,576, column XFD), or a zip bomb",
  },
  E_INPUT_HAS_RESULTS: {
    exit: ExitCode.INPUT,
    summary: 'batch: the input already has dnc_* columns (it is a results file)',
  },
  E_INPUT_CHANGED: { exit: ExitCode.INPUT, summary: 'the input changed since the batch began' },
  E_OUTPUT_UNWRITABLE: {
    exit: ExitCode.INPUT,
    summary: 'an output file or folder cannot be written (found before any lookup)',
  },
  E_OUTPUT_TOO_LARGE: {
    exit: ExitCode.INPUT,
    summary: 'a workbook output would pass 4 GiB, the limit of its ZIP format: write CSV results instead',
  },
  E_DISK_FULL: { exit: ExitCode.INPUT, summary: 'the disk is full: the batch journal cannot be written' },
  E_JOURNAL_WRITE: { exit: ExitCode.INPUT, summary: 'the batch journal cannot be written' },
  E_LIST_UNREADABLE: { exit: ExitCode.INPUT, summary: 'the suppression list cannot be read' },
  E_LIST_BUSY: {
    exit: ExitCode.INPUT,
    summary: 'the suppression list stayed locked by another process (30 s); nothing was changed or sent',
  },
  E_LIST_ALTERED: {
    exit: ExitCode.INPUT,
    summary: 'the suppression list was changed outside dnc (its audit log does not account for it); nothing sent',
  },
  E_CSV_COLUMN: { exit: ExitCode.INPUT, summary: 'suppress/exempt import: the file has no column of numbers' },
  E_CSV_MALFORMED: {
    exit: ExitCode.INPUT,
    summary: 'suppress/exempt import: a malformed file (a stray quote, a ragged row; named with its line)',
  },
  E_CSV_EMPTY: { exit: ExitCode.INPUT, summary: 'suppress/exempt import: the file has no rows' },
  E_INVALID_NUMBER: { exit: ExitCode.INPUT, summary: 'a number that cannot be a phone number (nothing sent)' },
  E_NUMBER_REJECTED: {
    exit: ExitCode.INPUT,
    summary: 'check: the register rejected the number (invalid_phone_number; charged)',
  },
  E_UNSUPPORTED_COUNTRY: { exit: ExitCode.INPUT, summary: "the service does not cover the number's country (422)" },
  E_JOURNAL_EMPTY: { exit: ExitCode.INPUT, summary: 'the journal holds no batch' },
  E_JOURNAL_INCOMPLETE: {
    exit: ExitCode.INPUT,
    summary: 'the journal holds no complete reading of the input yet (rerun the batch)',
  },
  E_JOURNAL_UNREADABLE: { exit: ExitCode.INPUT, summary: 'the journal cannot be read' },
  E_JOURNAL_ALTERED: {
    exit: ExitCode.INPUT,
    summary: 'the batch journal was changed behind dnc (its chain or anchor differs): nothing is built from it',
  },
  E_JOURNAL_UNPROVEN: {
    exit: ExitCode.INPUT,
    summary:
      'the batch journal cannot prove its answers (an older dnc, or anchored nowhere): see --accept-unproven-journal',
  },
  E_NO_MANIFEST: { exit: ExitCode.INPUT, summary: 'verify: the output has no manifest beside it' },
  E_MANIFEST_UNREADABLE: { exit: ExitCode.INPUT, summary: 'verify: the manifest cannot be read' },
  E_NOT_FIT_TO_DIAL: {
    exit: ExitCode.INPUT,
    summary: 'window: the results file is altered, unproven or stale (as `dnc verify` finds it); nothing written',
  },
  E_TRACE_NOT_FOUND: { exit: ExitCode.INPUT, summary: 'trace: this machine has no record of the correlation id' },
  E_AUTH_MISSING: { exit: ExitCode.AUTH, summary: 'the service refused the key (401)' },
  E_AUTH_FORBIDDEN: { exit: ExitCode.AUTH, summary: 'the key is not allowed to do this (403)' },
  E_RESELLER_HEADER: {
    exit: ExitCode.AUTH,
    summary: 'a reseller key without (or with a refused) X-Forwarded-Host: see --forwarded-host',
  },
  E_WEBHOOKS_DISABLED: { exit: ExitCode.AUTH, summary: 'webhook lookups are disabled for the account' },
  E_CREDIT_LIMIT: { exit: ExitCode.CREDIT, summary: 'the credit limit of the billing period is reached (429)' },
  E_SERVICE: { exit: ExitCode.SERVICE, summary: 'the service failed (5xx, or an answer that was not expected)' },
  E_LOOKUP_FAILED: {
    exit: ExitCode.SERVICE,
    summary: 'check: the lookup failed (billing_error, lookup_expired, the register failing after retries)',
  },
  E_BAD_RESPONSE: { exit: ExitCode.SERVICE, summary: "the service's answer was not what its description says" },
  E_CLOCK_SKEW: {
    exit: ExitCode.SERVICE,
    summary: "this machine's clock and the service's disagree so far that its answers cannot be dated",
  },
  E_CURSOR_REPEATED: {
    exit: ExitCode.SERVICE,
    summary: 'usage --all: the service handed back a cursor it already gave',
  },
  E_NETWORK: { exit: ExitCode.SERVICE, summary: 'the service cannot be reached' },
  E_TIMEOUT: { exit: ExitCode.SERVICE, summary: 'the service did not answer within --timeout' },
  E_STORE_UNAVAILABLE: {
    exit: ExitCode.SERVICE,
    summary: 'the team store (PostgreSQL) cannot be reached, or went away; a batch stops and can resume',
  },
  E_INTERRUPTED: { exit: ExitCode.INTERRUPTED, summary: 'interrupted (Ctrl-C, SIGTERM); work done so far is kept' },
} as const satisfies Record<string, { exit: ExitCodeValue; summary: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;
/** The codes whose exit status is `E`: the typed helpers below accept only those. */
type CodeWithExit<E extends ExitCodeValue> = {
  [K in ErrorCode]: (typeof ERROR_CODES)[K]['exit'] extends E ? K : never;
}[ErrorCode];

export interface DncErrorOptions {
  /** What the user can do next; printed on its own line after the message. */
  hint?: string;
  cause?: unknown;
  /** Structured facts a caller may match on (HTTP status, body, row, column …). */
  details?: Record<string, unknown>;
}

/**
 * An error meant for the user. `code` is stable (scripts and tests match on it, as undici's
 * `err.code`); `exitCode` follows from the code through ERROR_CODES.
 */
export class DncError extends Error {
  readonly code: ErrorCode;
  readonly exitCode: ExitCodeValue;
  readonly hint: string | undefined;
  readonly details: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, options: DncErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'DncError';
    this.code = code;
    this.exitCode = ERROR_CODES[code].exit;
    this.hint = options.hint;
    this.details = options.details ?? {};
  }
}

/** Exit 2: unknown flag, bad argument, conflicting options, missing configuration. */
export function usageError(
  code: CodeWithExit<typeof ExitCode.USAGE>,
  message: string,
  options?: DncErrorOptions,
): DncError {
  return new DncError(code, message, options);
}

/** What the user is told of an E_INTERNAL error: it is dnc's fault, not theirs. */
export const INTERNAL_ERROR_HINT =
  'this is a bug in dnc; please report it with the command you ran and the output of --verbose';

/**
 * Exit 1: an internal invariant broken (a module used before it was ready, a callee breaking its contract): a bug in
 * dnc, never a state the user can cause or fix. Thrown where the code knows it cannot go on.
 */
export function internalError(message: string, options?: Omit<DncErrorOptions, 'hint'>): DncError {
  return new DncError('E_INTERNAL', `internal error: ${message}`, { ...options, hint: INTERNAL_ERROR_HINT });
}

/** Exit 3: unreadable or malformed input, a number that cannot be a phone number, unsupported country. */
export function inputError(
  code: CodeWithExit<typeof ExitCode.INPUT>,
  message: string,
  options?: DncErrorOptions,
): DncError {
  return new DncError(code, message, options);
}

/** Exit 4: the service refused the credentials (401, 403). */
export function authError(
  code: CodeWithExit<typeof ExitCode.AUTH>,
  message: string,
  options?: DncErrorOptions,
): DncError {
  return new DncError(code, message, options);
}

/** Exit 5: credit limit reached (429) or the user's --max-credits budget reached. */
export function creditError(
  code: CodeWithExit<typeof ExitCode.CREDIT>,
  message: string,
  options?: DncErrorOptions,
): DncError {
  return new DncError(code, message, options);
}

/** Exit 6: the service or the network failed, after any retries that were safe. */
export function serviceError(
  code: CodeWithExit<typeof ExitCode.SERVICE>,
  message: string,
  options?: DncErrorOptions,
): DncError {
  return new DncError(code, message, options);
}

/** Exit 130: the user interrupted; work done so far is kept. */
export function interruptedError(message: string, options?: DncErrorOptions): DncError {
  return new DncError('E_INTERRUPTED', message, options);
}

/** How a DncError is shown on stderr: by src/main.ts, and by a command that reports one failure and goes on. */
export function errorLines(err: DncError): string[] {
  return err.hint
    ? [`dnc: error [${err.code}]: ${err.message}`, `  hint: ${err.hint}`]
    : [`dnc: error [${err.code}]: ${err.message}`];
}

export function isDncError(value: unknown): value is DncError {
  return value instanceof DncError;
}

/**
 * Replaces every occurrence of each secret in `text` (any case, percent-encoded too: src/secrets.ts). Applied to
 * everything `dnc` writes to its streams, as a second line of defence: no code path is meant to print the key at all.
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  return maskSecrets(text, secrets);
}

const FS_ERRORS: Record<string, string> = {
  ENOENT: 'no such file or folder',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'the file system is read-only',
  ENOSPC: 'no space left on the disk',
  EDQUOT: 'the disk quota is exceeded',
  EISDIR: 'it is a folder',
  ENOTDIR: 'a part of the path is not a folder',
  EEXIST: 'it exists already',
  ELOOP: 'too many symbolic links',
  ENAMETOOLONG: 'the name is too long',
};

/** A file-system error in words ("permission denied (EACCES)"), for messages that name the path themselves. */
export function describeFsError(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code && FS_ERRORS[code]) return `${FS_ERRORS[code]} (${code})`;
  return code ?? (err instanceof Error ? err.message : String(err));
}
