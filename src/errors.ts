// Typed errors: every failure that reaches a user is a DncError with a stable code and an exit status.

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

export interface DncErrorOptions {
  /** What the user can do next; printed on its own line after the message. */
  hint?: string;
  cause?: unknown;
  /** Structured facts a caller may match on (HTTP status, body, row, column …). */
  details?: Record<string, unknown>;
}

/**
 * An error meant for the user. `code` is stable (scripts and tests match on it, as undici's
 * `err.code`); `exitCode` is what `dnc` exits with when it reaches src/main.ts.
 */
export class DncError extends Error {
  readonly code: string;
  readonly exitCode: ExitCodeValue;
  readonly hint: string | undefined;
  readonly details: Record<string, unknown>;

  constructor(code: string, exitCode: ExitCodeValue, message: string, options: DncErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'DncError';
    this.code = code;
    this.exitCode = exitCode;
    this.hint = options.hint;
    this.details = options.details ?? {};
  }
}

/** Exit 2: unknown flag, bad argument, conflicting options, missing configuration. */
export function usageError(code: string, message: string, options?: DncErrorOptions): DncError {
  return new DncError(code, ExitCode.USAGE, message, options);
}

/** Exit 3: unreadable or malformed input, a number that cannot be a phone number, unsupported country. */
export function inputError(code: string, message: string, options?: DncErrorOptions): DncError {
  return new DncError(code, ExitCode.INPUT, message, options);
}

/** Exit 4: the service refused the credentials (401, 403). */
export function authError(code: string, message: string, options?: DncErrorOptions): DncError {
  return new DncError(code, ExitCode.AUTH, message, options);
}

/** Exit 5: credit limit reached (429) or the user's --max-credits budget reached. */
export function creditError(code: string, message: string, options?: DncErrorOptions): DncError {
  return new DncError(code, ExitCode.CREDIT, message, options);
}

/** Exit 6: the service or the network failed, after any retries that were safe. */
export function serviceError(code: string, message: string, options?: DncErrorOptions): DncError {
  return new DncError(code, ExitCode.SERVICE, message, options);
}

/** Exit 130: the user interrupted; work done so far is kept. */
export function interruptedError(message: string, options?: DncErrorOptions): DncError {
  return new DncError('E_INTERRUPTED', ExitCode.INTERRUPTED, message, options);
}

/** How a DncError is shown on stderr: by src/main.ts, and by a command that reports one failure and goes on. */
export function errorLines(err: DncError): string[] {
  return err.hint ? [`dnc: error [${err.code}]: ${err.message}`, `  hint: ${err.hint}`] : [`dnc: error [${err.code}]: ${err.message}`];
}

export function isDncError(value: unknown): value is DncError {
  return value instanceof DncError;
}

/**
 * Replaces every occurrence of each secret in `text`. Applied to everything `dnc` writes to its
 * streams, as a second line of defence: no code path is meant to print the key at all.
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    // Very short "secrets" would shred ordinary text; real keys are long.
    if (secret.length < 4) continue;
    out = out.split(secret).join('***');
  }
  return out;
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
