// Reads of a batch journal by other parts (trace, listen, usage --reconcile, a dry run, the results cache), each on a
// connection of its own, read-only: the SQL stays in the journal package, with the schema it reads.
import { closeSync, existsSync, openSync, readSync, rmSync, statSync, mkdtempSync, copyFileSync } from 'node:fs';
import type BetterSqlite3 from 'better-sqlite3';
import { REQUEUE_WHERE, UNANSWERED_SENDS } from './schema.js';
import {
  CONFLICTING_PUSHES,
  rememberedOf,
  UNANSWERED_SEND,
  type BatchMeta,
  type NumberState,
  type RememberedRun,
} from './types.js';
import { default as Database } from 'better-sqlite3';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A final service verdict of a journal, as the results cache keeps it. */
export interface JournalVerdict {
  e164: string;
  country: string;
  result: 'callable' | 'do_not_call';
  listSource: string | null;
  checkedAt: string;
  correlationId: string;
  body: string | null;
}

async function readOnly<T>(journalPath: string, read: (db: BetterSqlite3.Database) => T): Promise<T> {
  const db = new Database(journalPath, { fileMustExist: true, timeout: 5_000 });
  try {
    return read(db);
  } finally {
    db.close();
  }
}

/** Where a journal's chain stands as its last entry says (null: a journal without a chain), for its manifest. */
export function chainHeadOf(journalPath: string): Promise<{ entries: number; head: string } | null> {
  return readOnly(journalPath, (db) => {
    if (columnsOf(db, 'chain').size === 0) return null;
    const last = db
      .prepare<[], { seq: number; head: string }>('SELECT seq, head FROM chain ORDER BY seq DESC LIMIT 1')
      .get();
    return last ? { entries: last.seq, head: last.head } : { entries: 0, head: '0'.repeat(64) };
  });
}

function columnsOf(db: BetterSqlite3.Database, table: string): Set<string> {
  return new Set(
    db
      .prepare<[], { name: string }>(`PRAGMA table_info(${table})`)
      .all()
      .map((c) => c.name),
  );
}

/**
 * The SELECT of a journal's callable/do_not_call verdicts that came from a lookup (reused ones are not a lookup
 * of this batch), over the journal attached as `schema`: e164, country, result, list_source, checked_at,
 * correlation_id, body. `reusedAt`: the journal has the reused_at column (older ones marked reuse in error).
 */
export function lookupVerdictsSql(schema: string, reusedAt: boolean): string {
  const notReused = reusedAt ? 'n.reused_at IS NULL' : "(n.error IS NULL OR n.error NOT LIKE 'reused:%')";
  return `SELECT n.e164, n.country, n.result, n.list_source, n.checked_at, n.correlation_id, a.body
    FROM ${schema}.numbers n
           LEFT JOIN ${schema}.answers a ON a.number_id = n.id
          WHERE n.state = 'done' AND n.result IN ('callable', 'do_not_call')
            AND n.correlation_id IS NOT NULL AND n.checked_at IS NOT NULL
            AND ${notReused}`;
}

/** The e164 of a journal's numbers whose pushes conflicted (one verdict is forged), as SQL over `schema`. */
export function conflictingNumbersSql(schema: string): string {
  return `SELECT e164 FROM ${schema}.numbers WHERE error_code = '${CONFLICTING_PUSHES}'`;
}

/**
 * A journal's final verdicts from lookups (lookupVerdictsSql) and the numbers whose pushes conflicted, read on a
 * read-only connection of their own (for a results cache that cannot attach the file).
 */
export function journalVerdictsOf(journalPath: string): { verdicts: JournalVerdictRow[]; conflicting: string[] } {
  const db = new Database(journalPath, { readonly: true, fileMustExist: true, timeout: 5_000 });
  try {
    const verdicts = db.prepare<[], JournalVerdictRow>(lookupVerdictsSql('main', hasReusedAt(db, 'main'))).all();
    const conflicting = db
      .prepare<[], { e164: string }>(conflictingNumbersSql('main'))
      .all()
      .map((r) => r.e164);
    return { verdicts, conflicting };
  } finally {
    db.close();
  }
}

/** A row of lookupVerdictsSql (a JournalVerdict as its columns are named). */
export interface JournalVerdictRow {
  e164: string;
  country: string;
  result: 'callable' | 'do_not_call';
  list_source: string | null;
  checked_at: string;
  correlation_id: string;
  body: string | null;
}

/** Whether a journal's numbers table (attached as `schema`) has the reused_at column. */
function hasReusedAt(db: BetterSqlite3.Database, schema = 'main'): boolean {
  return db
    .prepare<[], { name: string }>(`PRAGMA ${schema}.table_info(numbers)`)
    .all()
    .some((c) => c.name === 'reused_at');
}

/** A number of a journal as `dnc trace` shows it. */
export interface JournalLookupRow {
  e164: string;
  country: string;
  state: string;
  result: string | null;
  correlation_id: string | null;
  http_status: number | null;
  credits: number;
  list_source: string | null;
  error_code: string | null;
  checked_at: string | null;
  updated_at: string | null;
  requested_at: string | null;
  reused_at: string | null;
  /** The row's dnc_error: for a reused verdict, whose it was (a colleague's machine and role, or the cache). */
  error: string | null;
  answer: string | null;
}

export interface JournalPushRow {
  correlation_id: string | null;
  body: string;
  received_at: string;
  outcome: string;
  duplicates: number;
  reason: string | null;
  peer: string | null;
}

/** What a trace looks for: one lookup by its correlation id, or every lookup of one number (E.164). */
export type LookupQuery = { correlationId: string } | { e164: string };

/** Everything a journal holds about one correlation id, or one number (read only; journals of any age). */

export function journalLookup(
  journalPath: string,
  query: LookupQuery,
): Promise<{ numbers: JournalLookupRow[]; pushes: JournalPushRow[]; meta: string | null }> {
  return readOnly(journalPath, (db) => {
    // Journals made before a column existed answer NULL for it.
    const n = columnsOf(db, 'numbers');
    const p = columnsOf(db, 'pushes');
    const opt = (cols: Set<string>, prefix: string, name: string) =>
      cols.has(name) ? `${prefix}${name}` : `NULL AS ${name}`;
    const numbers = db
      .prepare<[string], JournalLookupRow>(
        `SELECT n.e164, n.country, n.state, n.result, n.correlation_id, n.http_status, n.credits,
                n.list_source, n.error_code, n.error, n.checked_at, n.updated_at,
                ${opt(n, 'n.', 'requested_at')}, ${opt(n, 'n.', 'reused_at')}, a.body AS answer
           FROM numbers n LEFT JOIN answers a ON a.number_id = n.id
          WHERE ${'e164' in query ? 'n.e164' : 'n.correlation_id'} = ?`,
      )
      .all('e164' in query ? query.e164 : query.correlationId);
    // The pushes of the lookup, or of the number's lookup (a push names the correlation id it answers).
    const ids =
      'e164' in query ? numbers.flatMap((r) => (r.correlation_id ? [r.correlation_id] : [])) : [query.correlationId];
    const pushesOf = db.prepare<[string], JournalPushRow>(
      `SELECT correlation_id, body, received_at, outcome, duplicates, ${opt(p, '', 'reason')}, ` +
        `${opt(p, '', 'peer')} FROM ` +
        `pushes WHERE correlation_id = ? ORDER BY id`,
    );
    const pushes = ids.flatMap((id) => pushesOf.all(id));
    const meta = db.prepare<[], { value: string }>("SELECT value FROM meta WHERE key = 'batch'").get()?.value ?? null;
    return { numbers, pushes, meta };
  });
}

/** A pending number as dnc listen watches it (its receipt's time is updated_at). */
export interface PendingRow {
  e164: string;
  country: string;
  correlation_id: string;
  updated_at: string;
}

/** The statements dnc listen runs on its own connection to the journal, and that connection's close. */
export type ListenQueries = ReturnType<typeof listenQueries>;

/**
 * Opens a second connection to the journal at `journalPath` for dnc listen's own queries: a short busy timeout
 * keeps its replies well inside the service's 10 s.
 */
export function openListenQueries(journalPath: string): ListenQueries {
  return listenQueries(new Database(journalPath, { fileMustExist: true, timeout: 2_000 }));
}

function listenQueries(db: BetterSqlite3.Database) {
  // A pending number's updated_at is the moment its 202 receipt was recorded (BatchJournal.recordReceipt).
  return {
    close: () => {
      if (db.open) db.close();
    },
    pendingCount: db.prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM numbers WHERE state = 'pending'"),
    unsentCount: db.prepare<[], { n: number }>(
      "SELECT COUNT(*) AS n FROM numbers WHERE state IN ('queued', 'in_flight')",
    ),
    oldest: db.prepare<[], PendingRow>(
      "SELECT e164, country, correlation_id, updated_at FROM numbers WHERE state = 'pending' ORDER BY " +
        'updated_at, id LIMIT 1',
    ),
    overdue: db.prepare<[string, number], PendingRow>(
      "SELECT e164, country, correlation_id, updated_at FROM numbers WHERE state = 'pending' AND updated_at < ? " +
        'ORDER BY updated_at, id LIMIT ?',
    ),
    orphansNowKnown: db.prepare<
      [],
      { push_id: number; body: string; outcome: 'orphan' | 'conflict'; correlation_id: string }
    >(
      `SELECT p.id AS push_id, p.body, p.outcome, p.correlation_id FROM pushes p
         JOIN numbers n ON n.correlation_id = p.correlation_id
        WHERE p.outcome IN ('orphan', 'conflict') AND n.state = 'pending' ORDER BY p.id`,
    ),
    kept: db.prepare<[string], { n: number; bytes: number }>(
      'SELECT COUNT(*) AS n, COALESCE(SUM(LENGTH(body)), 0) AS bytes FROM pushes WHERE outcome = ?',
    ),
  };
}

/**
 * What a journal spent between two instants, for `dnc usage --reconcile`: lookups and credits answered, and
 * sends an interrupted run left without an answer (dated by the number's last change: an approximation,
 * since the journal keeps no date for a send whose answer was lost). With `running`, numbers in flight are
 * lookups under way, not lost answers.
 */
export function journalSpendBetween(
  journalPath: string,
  start: string,
  end: string,
  running: boolean,
): Promise<{ service: string | null; lookups: number; credits: number; unansweredSends: number }> {
  return readOnly(journalPath, (db) => {
    const metaRow = db.prepare<[], { value: string }>("SELECT value FROM meta WHERE key = 'batch'").get();
    const service = metaRow
      ? ((JSON.parse(metaRow.value) as { serviceOrigin?: string | null }).serviceOrigin ?? null)
      : null;
    const r = db
      .prepare<[string, string], { n: number; credits: number }>(
        'SELECT COUNT(*) AS n, COALESCE(SUM(credits), 0) AS credits FROM numbers WHERE credits > 0 AND state IN ' +
          "('done', 'pending') AND updated_at >= ? AND updated_at < ?",
      )
      .get(start, end)!;
    const unanswered = db
      .prepare<[string, string, number], { n: number | null }>(
        `SELECT SUM(${UNANSWERED_SENDS}) AS n FROM numbers WHERE attempts > 0 AND updated_at >= ? AND ` +
          `updated_at < ? AND (state != 'in_flight' OR ? = 0)`,
      )
      .get(start, end, running ? 1 : 0)!;
    return { service, lookups: r.n, credits: r.credits, unansweredSends: unanswered.n ?? 0 };
  });
}

/** What a rerun of a journal's batch would do with its numbers, by country (for `dnc batch --dry-run`). */
export interface RerunPlan {
  meta: BatchMeta | null;
  /** Every row of the input is in the journal. */
  ingested: boolean;
  /** Credits the batch has recorded (charged, or held for pending lookups). */
  credits: number;
  /** Sends that got no answer (may have been charged), as the summary and `dnc usage --reconcile` count them. */
  unansweredSends: number;
  /** Countries a 422 of the batch named: not sent again. */
  unsupportedCountries: string[];
  /** Costs the batch learned (X-Credit-Cost), by country. */
  costs: Map<string, number>;
  byCountry: Map<string, { numbers: number; verdict: number; pending: number; toLookUp: number; unanswered: number }>;
}

/**
 * Reads a journal as a rerun would see it, without changing it (read-only: no checkpoint, no migration):
 * numbers with a final verdict (charged outcomes included), pending webhook lookups, numbers a rerun looks up
 * (queued, not_checked of any reason, uncharged failures) and numbers whose send got no answer (sent again only
 * with --resend-unanswered).
 */
export function rerunPlanOf(journalPath: string, inUse: boolean): Promise<RerunPlan> {
  return readUntouched(journalPath, inUse, (db) => {
    const meta = (key: string) =>
      db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?').get(key)?.value ?? null;
    const batch = meta('batch');
    const unsupported = meta('unsupported_countries');
    // One pass over the numbers (a million take about a second): counts, credits and unanswered sends together.
    const rows = db
      .prepare<
        [string],
        {
          country: string;
          kind: 'verdict' | 'pending' | 'look_up' | 'unanswered';
          n: number;
          credits: number;
          unanswered: number;
        }
      >(
        `SELECT country, CASE
            WHEN state = 'queued' OR (${REQUEUE_WHERE}) THEN 'look_up'
            WHEN state = 'in_flight' OR (state = 'done' AND error_code = ?) THEN 'unanswered'
            WHEN state = 'pending' THEN 'pending'
            ELSE 'verdict' END AS kind, COUNT(*) AS n,
            COALESCE(SUM(CASE WHEN state IN ('done', 'pending') THEN credits ELSE 0 END), 0) AS credits,
            COALESCE(SUM(CASE WHEN attempts > 0 THEN ${UNANSWERED_SENDS} ELSE 0 END), 0) AS unanswered
           FROM numbers GROUP BY country, kind`,
      )
      .all(UNANSWERED_SEND);
    const byCountry: RerunPlan['byCountry'] = new Map();
    let credits = 0;
    let unanswered = 0;
    for (const r of rows) {
      credits += r.credits;
      unanswered += r.unanswered;
      const c = byCountry.get(r.country) ?? { numbers: 0, verdict: 0, pending: 0, toLookUp: 0, unanswered: 0 };
      c.numbers += r.n;
      if (r.kind === 'look_up') c.toLookUp += r.n;
      else if (r.kind === 'unanswered') c.unanswered += r.n;
      else if (r.kind === 'pending') c.pending += r.n;
      else c.verdict += r.n;
      byCountry.set(r.country, c);
    }
    const costs = new Map(
      db
        .prepare<[], { country: string; credits: number }>('SELECT country, credits FROM costs')
        .all()
        .map((r) => [r.country, r.credits]),
    );
    return {
      meta: batch ? (JSON.parse(batch) as BatchMeta) : null,
      ingested: meta('ingested') === '1',
      credits,
      unansweredSends: unanswered,
      unsupportedCountries: unsupported ? (JSON.parse(unsupported) as string[]) : [],
      costs,
      byCountry,
    };
  });
}

/**
 * The options a journal's batch was last run with (rememberedOf), read without changing the journal (for a dry run).
 */
export function rememberedRunOf(journalPath: string, inUse: boolean): Promise<RememberedRun | undefined> {
  return readUntouched(journalPath, inUse, (db) => {
    const row = db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?').get('batch');
    return row ? rememberedOf(JSON.parse(row.value) as BatchMeta) : undefined;
  });
}

/**
 * Reads a journal leaving it, and the folder it is in, exactly as they were (a dry run changes nothing a real run
 * relies on). SQLite opens a WAL database read-only only with its -wal and -shm files, creating them when absent
 * (and leaving them behind), and rebuilds the -shm index of a killed writer's log. So unless a live process
 * (`inUse`: a batch or listener holding its lock) keeps those files as they must be, a private copy of the
 * journal and its log is read instead.
 */
async function readUntouched<T>(
  journalPath: string,
  inUse: boolean,
  read: (db: BetterSqlite3.Database) => T,
): Promise<T> {
  if (inUse && existsSync(`${journalPath}-wal`) && existsSync(`${journalPath}-shm`)) {
    const db = new Database(journalPath, { readonly: true, fileMustExist: true, timeout: 5_000 });
    try {
      return read(db);
    } finally {
      db.close();
    }
  }
  const dir = mkdtempSync(join(tmpdir(), 'dnc-journal-'));
  try {
    const copy = join(dir, 'journal.sqlite');
    copyFileSync(journalPath, copy);
    // A killed run's last commits are in its log: read with it.
    if (existsSync(`${journalPath}-wal`)) copyFileSync(`${journalPath}-wal`, `${copy}-wal`);
    const db = new Database(copy, { fileMustExist: true, timeout: 5_000 });
    try {
      return read(db);
    } finally {
      db.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Whether a file is a dnc batch journal: SQLite with the journal's tables. What is not (a CSV given as
 * --journal, another program's database) is never deleted by --restart nor written over.
 */
export async function isBatchJournalFile(file: string): Promise<boolean> {
  let head: Buffer;
  try {
    const fd = openSync(file, 'r');
    try {
      head = Buffer.alloc(16);
      readSync(fd, head, 0, 16, 0);
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
  // An empty file is what a crash between create and first write leaves: nothing to lose.
  if (head.every((b) => b === 0)) return statSync(file).size === 0;
  if (head.toString('latin1') !== 'SQLite format 3\0') return false;
  try {
    return await readOnly(
      file,
      (db) =>
        db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name IN ('numbers', 'meta')").all().length ===
        2,
    );
  } catch {
    return false;
  }
}

/**
 * Which of `e164s` a rerun of the journal's batch would not send again: answered, pending, or (unless `resend`)
 * sent without an answer. Read untouched, for a dry run (see readUntouched).
 */
export function settledNumbersOf(
  journalPath: string,
  inUse: boolean,
  e164s: readonly string[],
  resend: boolean,
): Promise<Set<string>> {
  return readUntouched(journalPath, inUse, (db) => {
    const stateOf = db.prepare<[string], { state: NumberState }>('SELECT state FROM numbers WHERE e164 = ?');
    const settled = new Set<string>();
    for (const e164 of e164s) {
      const state = stateOf.get(e164)?.state;
      if (state === 'done' || state === 'pending' || (state === 'in_flight' && !resend)) settled.add(e164);
    }
    return settled;
  });
}
