// The journal's prepared statements, made once per open journal.
import type BetterSqlite3 from 'better-sqlite3';
import type { NumberRow, NumberState, NumberVerdict } from './types.js';
import { UNANSWERED_SENDS } from './schema.js';

export type JournalStatements = ReturnType<typeof prepareJournalStatements>;

export function prepareJournalStatements(db: BetterSqlite3.Database) {
  // A number sent again after a charged failure (--resend-failed) keeps that charge: its credits are the earlier
  // answers' (credits_before) plus the last one's. A journal opened read-only before its migration has no such column.
  const before = db
    .prepare<[], { name: string }>('PRAGMA table_info(numbers)')
    .all()
    .some((c) => c.name === 'credits_before')
    ? 'credits_before + '
    : '';
  return {
    getMeta: db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?'),
    setMeta: db.prepare<[string, string]>(
      'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
    ),
    insertNumber: db.prepare<[string, string]>('INSERT OR IGNORE INTO numbers (e164, country) VALUES (?, ?)'),
    byE164: db.prepare<[string], NumberRow>(
      'SELECT numbers.*, answers.body AS answer FROM numbers LEFT JOIN answers ON answers.number_id = ' +
        'numbers.id WHERE e164 = ?',
    ),
    setAnswer: db.prepare<[number, string]>('INSERT OR REPLACE INTO answers (number_id, body) VALUES (?, ?)'),
    clearAnswer: db.prepare<[number]>('DELETE FROM answers WHERE number_id = ?'),
    // An answered number put on the internal list meanwhile (src/compliance's applyLateOptOuts): its lookup kept.
    onInternalList: db.prepare<[string, string, string, number]>(
      "UPDATE numbers SET result = 'do_not_call', do_not_call = 1, list_source = ?, error = ?, updated_at = ? " +
        "WHERE id = ? AND state = 'done'",
    ),
    verdict: db.prepare<[string], NumberVerdict>(
      `SELECT n.id, n.state, n.result, n.do_not_call, n.list_source, n.checked_at, n.correlation_id,
        n.error_code, n.error, n.credits, n.country,
              x.basis AS exemption_basis, x.until AS exemption_until
         FROM numbers n LEFT JOIN exemptions x ON x.number_id = n.id WHERE n.e164 = ?`,
    ),
    // Rows as arrays (see doneVerdictOf): a list's verdicts are read this way, a million of them for a big list.
    doneVerdictsAfter: db
      .prepare<[number, number]>(
        `SELECT n.e164, n.id, n.state, n.result, n.do_not_call, n.list_source, n.checked_at, n.correlation_id,
        n.error_code, n.error, n.credits,
              x.basis AS exemption_basis, x.until AS exemption_until
         FROM numbers n LEFT JOIN exemptions x ON x.number_id = n.id WHERE n.id > ?
           AND n.state = 'done' ORDER BY n.id LIMIT ?`,
      )
      .raw(),
    nextQueued: db.prepare<[number, number], { id: number; e164: string; country: string }>(
      "SELECT id, e164, country FROM numbers WHERE state = 'queued' AND id > ? ORDER BY id LIMIT ?",
    ),
    numbersAfter: db.prepare<[number, number], { id: number; e164: string; country: string }>(
      'SELECT id, e164, country FROM numbers WHERE id > ? ORDER BY id LIMIT ?',
    ),
    claim: db.prepare<[string, string, number]>(
      "UPDATE numbers SET state = 'in_flight', attempts = attempts + 1, updated_at = ?, requested_at = ? " +
        "WHERE id = ? AND state = 'queued'",
    ),
    // Consecutive ids (the usual turn) in one statement; RETURNING says which were still queued.
    claimRange: db
      .prepare<[string, string, number, number], number>(
        "UPDATE numbers SET state = 'in_flight', attempts = attempts + 1, updated_at = ?, requested_at = ? " +
          "WHERE id BETWEEN ? AND ? AND state = 'queued' RETURNING id",
      )
      .pluck(),
    // The claim's attempt is taken back: that request certainly cost nothing (attempts counts sends that may have).
    release: db.prepare<[string, number]>(
      "UPDATE numbers SET state = 'queued', attempts = MAX(0, attempts - 1), updated_at = ? WHERE id = ? AND " +
        "state = 'in_flight'",
    ),
    unseenSends: db.prepare<[], { country: string; n: number }>(
      `SELECT country, SUM(${UNANSWERED_SENDS}) AS n FROM numbers WHERE attempts > 0 GROUP BY country`,
    ),
    requeueInFlight: db.prepare("UPDATE numbers SET state = 'queued' WHERE state = 'in_flight'"),
    // Positional parameters: binding by name costs a property lookup per parameter, per answer.
    done: db.prepare<
      [
        string,
        string | null,
        number | null,
        number,
        number | null,
        string | null,
        string | null,
        string | null,
        string | null,
        string,
        number,
      ],
      { e164: string; country: string; credits: number }
    >(
      // What the chain needs of the row beyond what was written (chain.ts: numberAs), in the same statement.
      `UPDATE numbers SET state = 'done', result = ?, correlation_id = ?,
         http_status = ?, credits = ${before}?, do_not_call = ?, list_source = ?,
         error_code = ?, error = ?, checked_at = ?, updated_at = ?
       WHERE id = ? RETURNING e164, country, credits`,
    ),
    pending: db.prepare(
      `UPDATE numbers SET state = 'pending', result = NULL, correlation_id = @correlationId,
         http_status = @httpStatus, credits = ${before}@credits, updated_at = @now WHERE id = @id`,
    ),
    counts: db.prepare<[], { state: NumberState; n: number; credits: number }>(
      'SELECT state, COUNT(*) AS n, COALESCE(SUM(credits), 0) AS credits FROM numbers GROUP BY state',
    ),
    pendingRows: db.prepare<
      [],
      { e164: string; country: string; correlation_id: string | null; credits: number; updated_at: string | null }
    >("SELECT e164, country, correlation_id, credits, updated_at FROM numbers WHERE state = 'pending' ORDER BY id"),
    costs: db.prepare<[], { country: string; credits: number }>('SELECT country, credits FROM costs'),
    setCost: db.prepare<[string, number, string]>(
      'INSERT INTO costs (country, credits, seen_at) VALUES (?, ?, ?) ON CONFLICT (country) DO UPDATE SET ' +
        'credits = excluded.credits, seen_at = excluded.seen_at',
    ),
  };
}

/** The columns of doneVerdictsAfter, in its order. */
export type DoneVerdictColumns = [
  e164: string,
  id: number,
  state: NumberState,
  result: NumberRow['result'],
  do_not_call: number | null,
  list_source: string | null,
  checked_at: string | null,
  correlation_id: string | null,
  error_code: string | null,
  error: string | null,
  credits: number,
  exemption_basis: string | null,
  exemption_until: string | null,
];

/**
 * A verdict read as an array, made an object here: objects of one shape built in JS cost half of those better-sqlite3
 * builds a column at a time (≈ 1.6 µs a verdict instead of 3).
 */
export function doneVerdictOf(r: DoneVerdictColumns): NumberVerdict & { e164: string } {
  return {
    e164: r[0],
    id: r[1],
    state: r[2],
    result: r[3],
    do_not_call: r[4],
    list_source: r[5],
    checked_at: r[6],
    correlation_id: r[7],
    error_code: r[8],
    error: r[9],
    credits: r[10],
    exemption_basis: r[11],
    exemption_until: r[12],
  } as NumberVerdict & { e164: string };
}
