// The final answers a journal stores: a judged answer of the service, a local decision, a conflict of pushes; and a
// write the disk refused, as the user must see it.
import { DncError, inputError } from '../errors.js';
import { NO_VERDICT, type Judgement } from '../service/answers.js';
import { CONFLICTING_PUSHES, type FinalAnswer, type NumberResult } from './types.js';

/**
 * A judged answer (src/service/answers.ts) as the journal stores it. Credits the answer does not give believably
 * count at `unknownCredits` (the country's highest known cost; what a receipt held).
 */
export function finalAnswerOf(
  j: Judgement,
  httpStatus: number | null,
  answer: string | null,
  unknownCredits: number,
): FinalAnswer {
  return {
    result: j.result,
    doNotCall: j.doNotCall,
    listSource: j.listSource,
    checkedAt: j.checkedAt,
    correlationId: j.correlationId,
    errorCode: j.errorCode,
    error: j.error,
    credits: j.charged === false ? 0 : (j.credits ?? unknownCredits),
    httpStatus,
    answer,
  };
}

/**
 * Two pushes gave one correlation id different verdicts: one of them is forged (pushes are unsigned), and the
 * journal cannot tell which. The number is failed, never callable, and its held credits stay counted.
 */
export function conflictAnswer(
  correlationId: string,
  credits: number,
  httpStatus: number | null,
  latest: string,
): FinalAnswer {
  return {
    result: 'failed',
    ...NO_VERDICT,
    correlationId,
    errorCode: CONFLICTING_PUSHES,
    error:
      `pushes with different verdicts arrived for correlation id ${correlationId}; one is forged. See ` +
      `\`dnc trace ${correlationId}\` and check the number again`,
    credits,
    httpStatus,
    answer: latest,
  };
}

/**
 * A write the disk refused, as the user must see it: exit 3, naming the file. SQLite rolled the transaction back, so
 * the journal is as it was before it. Null for any other error.
 */
export function journalWriteError(path: string, err: unknown): DncError | null {
  if (err instanceof DncError) return err;
  const code = String((err as { code?: unknown } | null)?.code ?? '');
  if (code === 'SQLITE_FULL' || code === 'ENOSPC' || code === 'EDQUOT') {
    return inputError('E_DISK_FULL', `the disk is full: cannot write the batch journal ${path} (${code})`, {
      hint:
        'free some space on that disk (or give an output on another one) and run the same command again; ' +
        'the journal is consistent',
      cause: err,
    });
  }
  if (code.startsWith('SQLITE_IOERR') || code === 'EIO' || code === 'EROFS' || code === 'SQLITE_READONLY') {
    return inputError('E_JOURNAL_WRITE', `cannot write the batch journal ${path} (${code})`, {
      hint:
        'check the disk and the permissions of that folder, then run the same command again; the journal is ' +
        'consistent',
      cause: err,
    });
  }
  return null;
}

/** A local (request-less) final decision. */
export function localAnswer(
  result: NumberResult,
  errorCode: string,
  error: string,
  answer: unknown = null,
  httpStatus: number | null = null,
): FinalAnswer {
  return {
    result,
    ...NO_VERDICT,
    correlationId: null,
    errorCode,
    error,
    credits: 0,
    httpStatus,
    answer: answer === null ? null : JSON.stringify(answer),
  };
}
