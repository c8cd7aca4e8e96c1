// What a rerun of a batch does with its failed numbers: those a bare rerun looks up again, and those it leaves (a
// failure that was charged, a send that got no answer) until --resend-failed says to pay for them again.
import type BetterSqlite3 from 'better-sqlite3';
import { REQUEUE_WHERE, RESEND_FAILED_WHERE } from './schema.js';
import { UNANSWERED_SEND } from './types.js';

/** Numbers a bare rerun looks up: queued, or without a verdict and nothing charged for them (requeueUnfinished). */
export function toLookUpOnRerun(db: BetterSqlite3.Database): number {
  return db
    .prepare<[], { n: number }>(`SELECT COUNT(*) AS n FROM numbers WHERE state = 'queued' OR (${REQUEUE_WHERE})`)
    .get()!.n;
}

/**
 * The failed numbers a bare rerun does not send again (the failure was charged, or the send may have been): what
 * --resend-failed sends, and what it costs again (each number at its country's cost learned from the service's
 * answers, else at what its failure was charged, else 1 credit).
 */
export function failedToResend(db: BetterSqlite3.Database): { numbers: number; credits: number } {
  return db
    .prepare<[], { numbers: number; credits: number }>(
      `SELECT COUNT(*) AS numbers, COALESCE(SUM(COALESCE(c.credits, NULLIF(n.credits - n.credits_before, 0), 1)), 0)
         AS credits FROM (SELECT country, credits, credits_before FROM numbers WHERE ${RESEND_FAILED_WHERE}) n
         LEFT JOIN costs c ON c.country = n.country`,
    )
    .get()!;
}

/**
 * --resend-failed (after requeueUnfinished: what a bare rerun sends is not among them): the failed numbers a bare
 * rerun does not send go back to the queue, the user accepting a charge again. A charge already made stays in the
 * number's credits (credits_before: the next answer's credits are added to it); an answered send is no longer
 * counted among the unanswered ones (its attempt taken back), a send that got no answer still is. Returns how many.
 */
export function requeueFailed(db: BetterSqlite3.Database, now: string): number {
  return db
    .prepare(
      `UPDATE numbers SET state = 'queued', credits_before = credits,
          attempts = CASE WHEN error_code = ? THEN attempts ELSE MAX(0, attempts - 1) END,
          result = NULL, correlation_id = NULL, http_status = NULL, do_not_call = NULL, list_source = NULL,
          error_code = NULL, error = NULL, checked_at = NULL, updated_at = ?
        WHERE ${RESEND_FAILED_WHERE}`,
    )
    .run(UNANSWERED_SEND, now).changes;
}
