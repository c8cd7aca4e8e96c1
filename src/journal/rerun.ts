// What a rerun of a batch does with its failed numbers: those a bare rerun looks up again, and those it leaves (a
// failure that was charged, a send that got no answer) until --resend-failed says to pay for them again.
import type BetterSqlite3 from 'better-sqlite3';
import { REQUEUE_WHERE, RESEND_FAILED_WHERE } from './schema.js';
import { UNANSWERED_SEND, UNANSWERED_SEND_TEXT } from './types.js';

/**
 * Numbers a bare rerun looks up (queued, or without a verdict and nothing charged for them: requeueUnfinished), by
 * country: what a rerun will not send (webhook-only, unsupported countries) told apart.
 */
export function toLookUpOnRerunByCountry(db: BetterSqlite3.Database): Map<string, number> {
  const rows = db
    .prepare<[], { country: string; n: number }>(
      `SELECT country, COUNT(*) AS n FROM numbers WHERE state = 'queued' OR (${REQUEUE_WHERE}) GROUP BY country`,
    )
    .all();
  return new Map(rows.map((r) => [r.country, r.n]));
}

/**
 * The queued numbers of the countries in `countries` (those a run will not send: webhook-only without a webhook URL,
 * not covered by the service), and the highest queued id: numbers queued after it were not counted.
 */
export function queuedOf(
  db: BetterSqlite3.Database,
  countries: readonly string[],
): { numbers: number; lastId: number } {
  const all = db
    .prepare<[], { country: string; n: number; last: number }>(
      `SELECT country, COUNT(*) AS n, MAX(id) AS last FROM numbers WHERE state = 'queued' GROUP BY country`,
    )
    .all();
  const numbers = all.filter((r) => countries.includes(r.country)).reduce((a, r) => a + r.n, 0);
  return { numbers, lastId: Math.max(0, ...all.map((r) => r.last)) };
}

/** Numbers of webhook-only `countries` queued, or answered here as needing a webhook (not sent, no charge). */
export function webhookUnsentOf(db: BetterSqlite3.Database, countries: readonly string[]): number {
  if (countries.length === 0) return 0;
  return db
    .prepare<string[], { n: number }>(
      `SELECT COUNT(*) AS n FROM numbers WHERE country IN (${countries.map(() => '?').join(', ')})
         AND (state = 'queued' OR (state = 'done' AND error_code = 'webhook_required' AND credits = 0))`,
    )
    .get(...countries)!.n;
}

/** Numbers charged for an answer without a verdict (a charged failure, invalid_phone_number), and those credits. */
export function chargedWithoutVerdict(db: BetterSqlite3.Database): { numbers: number; credits: number } {
  return db
    .prepare<[], { numbers: number; credits: number }>(
      `SELECT COUNT(*) AS numbers, COALESCE(SUM(credits), 0) AS credits FROM numbers
        WHERE state = 'done' AND credits > 0 AND result IN ('failed', 'invalid')`,
    )
    .get()!;
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
 * counted among the unanswered ones (its attempt taken back), a send that got no answer still is. Returns their
 * ids (the journal chains them).
 */
export function requeueFailed(db: BetterSqlite3.Database, now: string): number[] {
  return db
    .prepare<[string, string], number>(
      `UPDATE numbers SET state = 'queued', credits_before = credits,
          attempts = CASE WHEN error_code = ? THEN attempts ELSE MAX(0, attempts - 1) END,
          result = NULL, correlation_id = NULL, http_status = NULL, do_not_call = NULL, list_source = NULL,
          error_code = NULL, error = NULL, checked_at = NULL, updated_at = ?
        WHERE ${RESEND_FAILED_WHERE} RETURNING id`,
    )
    .pluck()
    .all(UNANSWERED_SEND, now);
}

/** The counts of what a run sends, over a journal's database: BatchJournal.sends. */
export function runCountsOf(db: BetterSqlite3.Database) {
  return {
    queuedOf: (countries: readonly string[]) => queuedOf(db, countries),
    webhookUnsentOf: (countries: readonly string[]) => webhookUnsentOf(db, countries),
    toLookUpOnRerunByCountry: () => toLookUpOnRerunByCountry(db),
    chargedWithoutVerdict: () => chargedWithoutVerdict(db),
    /** Numbers whose verdict was reused from the results cache (--reuse-within, or the answer to the question). */
    reused: () =>
      db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM numbers WHERE reused_at IS NOT NULL').get()!.n,
  };
}

export type RunCounts = ReturnType<typeof runCountsOf>;

/** BatchJournal.settleUnanswered: numbers left in flight by a run that stopped become unanswered_send; their ids. */
export function settleUnanswered(db: BetterSqlite3.Database): number[] {
  // updated_at stays the moment of the send: `dnc usage --reconcile` dates the unanswered send by it.
  return db
    .prepare<[string, string], number>(
      `UPDATE numbers SET state = 'done', result = 'failed', correlation_id = NULL, http_status = NULL,
        credits = credits_before, do_not_call = NULL,
       list_source = NULL, checked_at = NULL, error_code = ?, error = ? WHERE state = 'in_flight' RETURNING id`,
    )
    .pluck()
    .all(UNANSWERED_SEND, UNANSWERED_SEND_TEXT);
}

/** BatchJournal.requeueUnanswered (--resend-unanswered): the numbers sent without an answer queued again; their ids. */
export function requeueUnanswered(db: BetterSqlite3.Database, now: string): number[] {
  return db
    .prepare<[string, string], number>(
      `UPDATE numbers SET state = 'queued', result = NULL, error_code = NULL, error = NULL, updated_at = ?
        WHERE (state = 'done' AND error_code = ?) OR state = 'in_flight' RETURNING id`,
    )
    .pluck()
    .all(now, UNANSWERED_SEND);
}

/** BatchJournal.requeueUnfinished: the numbers without a verdict nothing was charged for, queued again. */
export function requeueUnfinished(db: BetterSqlite3.Database): {
  counts: { notChecked: number; uncharged: number };
  ids: number[];
} {
  const count = (result: string) =>
    db
      .prepare<[string], { n: number }>(`SELECT COUNT(*) AS n FROM numbers WHERE ${REQUEUE_WHERE} AND result = ?`)
      .get(result)!.n;
  const counts = { notChecked: count('not_checked'), uncharged: count('failed') };
  const ids = db
    .prepare<[], number>(
      `UPDATE numbers SET state = 'queued', attempts = CASE WHEN result = 'failed' THEN MAX(0,
        attempts - 1) ELSE attempts END,
         result = NULL, correlation_id = NULL, http_status = NULL, do_not_call = NULL, list_source = NULL,
         error_code = NULL, error = NULL, checked_at = NULL
       WHERE ${REQUEUE_WHERE} RETURNING id`,
    )
    .pluck()
    .all();
  return { counts, ids };
}
