// A batch journal's schema and its migrations, applied once under the write lock; the SQL its queries share.
import type BetterSqlite3 from 'better-sqlite3';
import { usageError } from '../errors.js';
import { CHAIN_SCHEMA, UNCHAINED_KEY } from './chain.js';

export const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS numbers (
  id INTEGER PRIMARY KEY,
  e164 TEXT NOT NULL UNIQUE,
  country TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued','in_flight','done','pending')),
  result TEXT,
  attempts INTEGER NOT NULL DEFAULT 0,
  correlation_id TEXT,
  http_status INTEGER,
  credits INTEGER NOT NULL DEFAULT 0,
  do_not_call INTEGER,
  list_source TEXT,
  error_code TEXT,
  error TEXT,
  checked_at TEXT,
  updated_at TEXT,
  -- When the number's (last) request was sent: committed with its claim, just before the request.
  requested_at TEXT
);
-- The service's full answers, apart so that the rows rendering reads stay small.
CREATE TABLE IF NOT EXISTS answers (number_id INTEGER PRIMARY KEY, body TEXT NOT NULL);
-- Only pending numbers are looked up by correlation id (pushes); other answers never touch this index.
CREATE INDEX IF NOT EXISTS numbers_pending ON numbers (correlation_id) WHERE state = 'pending';
CREATE TABLE IF NOT EXISTS pushes (
  id INTEGER PRIMARY KEY,
  correlation_id TEXT,
  body TEXT NOT NULL,
  received_at TEXT NOT NULL,
  duplicates INTEGER NOT NULL DEFAULT 0,
  outcome TEXT NOT NULL,
  headers TEXT,
  peer TEXT,
  reason TEXT
);
CREATE TABLE IF NOT EXISTS costs (country TEXT PRIMARY KEY, credits INTEGER NOT NULL, seen_at TEXT NOT NULL);
-- Exemptions of the user's list that held when the batch last ran (src/compliance applies them; render reads them).
CREATE TABLE IF NOT EXISTS exemptions (number_id INTEGER PRIMARY KEY, basis TEXT NOT NULL, until TEXT NOT NULL,
  evidence TEXT);
${CHAIN_SCHEMA}`;

/**
 * A number's sends beyond the one whose answer (and credits) the journal holds, as SQL over a numbers row:
 * each was sent and its answer lost to an interrupted run, so it may have been charged unseen.
 */
export const UNANSWERED_SENDS =
  "MAX(0, attempts - (state IN ('done', 'pending') AND COALESCE(error_code, '') != 'unanswered_send'))";

/**
 * The journal's migrations, in order; PRAGMA user_version counts those applied. Journals made before
 * user_version was kept are at 0 but may hold some of these changes already: each step checks before it acts.
 * Run under the write lock (BEGIN IMMEDIATE): a batch resuming and a listener opening one old journal at the
 * same moment must not both apply a step.
 */
const MIGRATIONS: ReadonlyArray<(db: BetterSqlite3.Database) => void> = [
  // 1. When each lookup was sent (empty for the lookups of older journals).
  (db) => addColumn(db, 'numbers', 'requested_at', 'TEXT'),
  // 2. Pushes keep their evidence (headers, peer, why refused), and one correlation id may have several: a
  //    conflicting verdict is kept beside the first, never dropped as a duplicate.
  (db) => {
    for (const column of ['headers', 'peer', 'reason']) addColumn(db, 'pushes', column, 'TEXT');
    db.exec('DROP INDEX IF EXISTS pushes_correlation');
    db.exec('CREATE INDEX IF NOT EXISTS pushes_by_correlation ON pushes (correlation_id)');
  },
  // 3. Before release() took its attempt back, a 429 or a refused connection left an attempt that cost
  //    nothing, so old attempts prove nothing; only a crash's send can still be told: one per number in flight.
  (db) => {
    if (db.prepare("SELECT 1 FROM meta WHERE key = 'sends_counted'").get()) return;
    db.exec(
      "UPDATE numbers SET attempts = CASE WHEN state = 'in_flight' THEN 1 WHEN state IN ('done', 'pending') " +
        'THEN MIN(attempts, 1) ELSE 0 END WHERE attempts > 0',
    );
    db.exec("INSERT INTO meta (key, value) VALUES ('sends_counted', '1')");
  },
  // 4. A verdict reused from the results cache (--reuse-within) says so in a column of its own, not in its error text.
  (db) => {
    addColumn(db, 'numbers', 'reused_at', 'TEXT');
    db.exec(
      "UPDATE numbers SET reused_at = updated_at WHERE reused_at IS NULL AND state = 'done' AND credits = 0 AND " +
        "error LIKE 'reused:%'",
    );
  },
  // 5. The credits of earlier answers of a number sent again after a charged failure (--resend-failed): kept in its
  //    credits, which are these plus the last answer's.
  (db) => addColumn(db, 'numbers', 'credits_before', 'INTEGER NOT NULL DEFAULT 0'),
  // 6. The meta keeps each option once (the outputs and the webhook no longer repeated in `run`: see rememberedOf).
  //    Nothing to change in an older journal, which repeats them; the version tells an older dnc, which would read
  //    them from `run` only and resume without its --callable-out, that it must not resume this one.
  () => {},
  // 7. Answers and pushes are hash-chained (src/journal/chain.ts). Those an older dnc kept were never chained: the
  //    journal says so, and proves nothing until the user accepts it as it stands (--accept-unproven-journal).
  (db) => {
    const kept = db
      .prepare(
        "SELECT EXISTS (SELECT 1 FROM numbers WHERE state IN ('done', 'pending')) OR EXISTS (SELECT 1 FROM pushes) " +
          'AS kept',
      )
      .get() as { kept: number };
    if (kept.kept && !db.prepare('SELECT 1 FROM chain LIMIT 1').get())
      db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES (?, '1')").run(UNCHAINED_KEY);
  },
];

function addColumn(db: BetterSqlite3.Database, table: string, column: string, type: string): void {
  const columns = db.prepare<[], { name: string }>(`PRAGMA table_info(${table})`).all();
  if (!columns.some((c) => c.name === column)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${type}`);
}

/**
 * Refuses a journal a newer dnc wrote (its user_version past MIGRATIONS), before anything writes to it: this dnc
 * does not know what its newer columns mean to a rerun, and must not resume it. As the local stores refuse their
 * files (src/stores/local-store.ts).
 */
export function refuseNewerJournal(db: BetterSqlite3.Database, file: string): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version > MIGRATIONS.length)
    throw usageError(
      'E_JOURNAL_TOO_NEW',
      `the batch journal ${file} is at schema version ${version}, newer than this dnc knows ` +
        `(${MIGRATIONS.length}): a newer dnc ran this batch`,
      { hint: 'upgrade dnc on this machine to resume it (the journal is left as it is)', details: { version } },
    );
}

/** Brings a journal to the current schema (see MIGRATIONS). */
export function migrate(db: BetterSqlite3.Database): void {
  db.transaction(() => {
    const version = db.pragma('user_version', { simple: true }) as number;
    for (let i = version; i < MIGRATIONS.length; i++) MIGRATIONS[i]!(db);
    if (version < MIGRATIONS.length) db.pragma(`user_version = ${MIGRATIONS.length}`);
  }).immediate();
}

/**
 * Numbers a rerun looks up again: no verdict, and nothing charged for them (see requeueUnfinished). (A number sent
 * again with --resend-failed keeps its earlier charge: a bare rerun leaves it, as it left it before.)
 */
/** How the dnc_error of an unanswered send a team colleague made begins (this batch adopted it, never sent it). */
export const COLLEAGUE_UNANSWERED_TEXT = 'sent by another dnc of the team';

// A colleague's unanswered send is asked of the team store again: its answer may have been settled there since (the
// colleague's rerun settles what its journal kept while the store was away). Nothing is sent unless the store says
// the number is free.
export const REQUEUE_WHERE = `state = 'done' AND credits = 0 AND (result = 'not_checked'
  OR (result = 'failed' AND error_code IN ('upstream_timeout', 'upstream_error', 'lookup_expired', 'billing_error'))
  OR (result = 'failed' AND error_code = 'unanswered_send'
      AND substr(error, 1, ${COLLEAGUE_UNANSWERED_TEXT.length}) = '${COLLEAGUE_UNANSWERED_TEXT}'))`;

/** Failed numbers a bare rerun does not look up again (see requeueFailed): --resend-failed sends them. */
export const RESEND_FAILED_WHERE = `state = 'done' AND result = 'failed' AND NOT COALESCE((${REQUEUE_WHERE}), 0)`;

/** Bytes of write-ahead log above which a render checkpoints first (about 4,000 pages). */
export const WAL_WORTH_A_CHECKPOINT = 16 * 1024 * 1024;
