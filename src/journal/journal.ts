// The batch journal: one SQLite file per batch, the source of truth for every number's state and answer.
import type { TextEncoding } from '../tables/encoding.js';
import type { RecordDelimiter } from '../tables/csv-output.js';
import {
  closeSync,
  existsSync,
  lstatSync,
  openSync,
  readFileSync,
  readSync,
  realpathSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import type BetterSqlite3 from 'better-sqlite3';
import { DncError, inputError, usageError } from '../errors.js';
import { ensurePrivateFile, PRIVATE_FILE_MODE } from '../private-files.js';
import { DEFAULT_CLOCK_SKEW_MS, serviceTimestampMs, type Judgement } from '../service/answers.js';
import { pushMatchProblem, pushVerdict, pushVerdictKey, type SentLookup } from '../service/push-answers.js';
import type { LookupFailed, LookupResult, LookupSucceeded } from '../wire/types.js';
import type { WorkbookLayout } from '../tables/layout.js';

export const JOURNAL_SCHEMA_VERSION = 1;

/** Where the journal of OUTPUT lives: beside it, named after it. */
export function journalPathFor(outputPath: string): string {
  // The journal stands beside the file the output really is: `-o link.csv` (a symbolic link) and
  // `dnc listen --results link.csv` find the same journal, beside the link's target.
  let real = outputPath;
  try {
    if (lstatSync(outputPath).isSymbolicLink()) real = realpathSync.native(outputPath);
  } catch {
    // Not there yet, or not a link: the path as given.
  }
  return `${real}.journal.sqlite`;
}

/** Final results of a number (the dnc_result values a lookup can come to). */
export type NumberResult = 'callable' | 'do_not_call' | 'invalid' | 'unsupported_country' | 'not_checked' | 'failed';
export type NumberState = 'queued' | 'in_flight' | 'done' | 'pending';
// The run ended on an error, the output still written: auth_failed (401/403, a reseller header refused),
// configuration (the service refused the request itself: a 400 about a parameter or the webhook URL),
// service_failure (the service unreachable, failing or answering what it cannot have meant).
export type StoppedReason =
  'credit_limit' | 'budget_reached' | 'interrupted' | 'auth_failed' | 'configuration' | 'service_failure';

/** Options that change results: a journal made with other values is refused. */
export interface ResultOptions {
  country: string | null;
  delimiter: string;
  header: boolean;
  phoneIndex: number;
  webhookUrl: string | null;
  webhookAll: boolean;
}

export interface BatchMeta {
  schema: number;
  inputPath: string;
  inputSha256: string;
  inputSize: number;
  outputPath: string;
  callableOut: string | null;
  suppressedOut: string | null;
  options: ResultOptions;
  /** How the input is read and written back. */
  layout: {
    recordDelimiter: RecordDelimiter;
    header: string[] | null;
    columnCount: number;
    phoneLabel: string;
    bom: boolean;
    workbook?: WorkbookLayout | undefined;
    encoding?: TextEncoding | undefined;
  };
  createdAt: string;
  /** The base URL lookups went to (never the key). */
  serviceOrigin: string | null;
  /** --escape-formulas: formula-leading input cells get a leading ' in the outputs (changes no answer). */
  escapeFormulas?: boolean;
  /** Where the manifest goes when it cannot stand beside the output (`-o -`, a FIFO or a device). */
  manifestPath?: string;
  /** --review-out: rows that need a person, with their reasons. */
  reviewOut?: string | null;
  /** --dial-out: the distinct callable numbers, one per line. */
  dialOut?: string | null;
  /** --output-encoding of the CSV outputs; the input's when absent. */
  outputEncoding?: TextEncoding | undefined;
  /** --format of the results (csv or xlsx); by the output's extension when absent. */
  outputFormat?: 'csv' | 'xlsx';
  /** The options the batch was last run with (the command decides their shape), for a rerun without flags. */
  run?: Record<string, unknown>;
}

/**
 * A number's sends beyond the one whose answer (and credits) the journal holds, as SQL over a numbers row:
 * each was sent and its answer lost to an interrupted run, so it may have been charged unseen.
 */
export const UNANSWERED_SENDS =
  "MAX(0, attempts - (state IN ('done', 'pending') AND COALESCE(error_code, '') != 'unanswered_send'))";

/**
 * The dnc_error_code of a number whose send got no answer (a kill -9, a second Ctrl-C, a full disk): it may
 * have been charged, so a rerun does not send it again unless asked (--resend-unanswered). Its send is one
 * of the UNANSWERED_SENDS above (the row holds no answer of it).
 */
export const UNANSWERED_SEND = 'unanswered_send';
export const UNANSWERED_SEND_TEXT =
  'sent by an earlier run that stopped before the answer came: it may have been charged; a rerun sends it again ' +
  'only with --resend-unanswered';

/** One distinct number as the journal holds it. */
export interface NumberRow {
  id: number;
  e164: string;
  country: string;
  state: NumberState;
  result: NumberResult | null;
  attempts: number;
  correlation_id: string | null;
  answer: string | null;
  http_status: number | null;
  credits: number;
  do_not_call: number | null;
  list_source: string | null;
  error_code: string | null;
  error: string | null;
  checked_at: string | null;
  /** When the number's last request was sent (committed with its claim). */
  requested_at: string | null;
}

export type NumberVerdict = Pick<
  NumberRow,
  | 'id'
  | 'state'
  | 'result'
  | 'do_not_call'
  | 'list_source'
  | 'checked_at'
  | 'correlation_id'
  | 'error_code'
  | 'error'
  | 'credits'
> & {
  /** The user's exemption applied to this number at scrub time (src/compliance), if any. */
  exemption_basis?: string | null;
  exemption_until?: string | null;
};

/** An exemption of the user's list that held when the batch ran (kept in the journal so listen renders it too). */
export interface AppliedExemption {
  e164: string;
  basis: string;
  until: string;
  evidence: string | null;
}

/** A final answer about a number, ready to store: a judged answer's verdict, or a local decision. */
export interface FinalAnswer extends Omit<Judgement, 'result' | 'charged' | 'credits'> {
  result: NumberResult;
  credits: number;
  httpStatus: number | null;
  /** The service's full answer (JSON text), or null for a local decision. */
  answer: string | null;
}

/**
 * applied: the number's answer; adopted: a do_not_call verdict for a number whose send got no answer (see
 * adoptByNumber); duplicate: the same verdict again (counted); orphan: an unknown correlation id (kept); conflict: a
 * different verdict for a correlation id already pushed (kept; the number becomes failed/conflicting_pushes); refused:
 * it contradicts what was sent (kept as evidence, not applied); over_capacity: an orphan beyond the cap (not stored).
 */
export type PushOutcome = 'applied' | 'adopted' | 'duplicate' | 'orphan' | 'conflict' | 'refused' | 'over_capacity';

/** What storing one push did, and why when it was refused. */
export interface PushVerdict {
  outcome: PushOutcome;
  reason?: string;
}

/** The dnc_error_code of a number that received two different verdicts: never callable, never reused. */
export const CONFLICTING_PUSHES = 'conflicting_pushes';

export interface StorePushOptions {
  /** Clock skew allowed between the service and us (default 5 minutes). */
  skewMs?: number;
  /** Whether one more orphan of `bytes` may be kept; false: it is not stored (the caller answers 503). */
  admitOrphan?(bytes: number): boolean;
  /** Whether the evidence of one more refused push may be kept; false: it is refused without a trace in the journal. */
  admitRefused?(bytes: number): boolean;
}

/** A push as `dnc listen` hands it to the journal. */
export interface IncomingPushRecord {
  /** The body exactly as received. */
  raw: string;
  /** ISO 8601. */
  receivedAt: string;
  /** X-Service-Correlation-Id, used when the body does not carry one. */
  correlationId?: string | null;
  /** X-Service-Status, kept as the answer's http_status. */
  serviceStatus?: number | null;
  /** The request's headers (JSON text), kept with the push as evidence. */
  headers?: string | null;
  /** The peer's address. */
  peer?: string | null;
  /**
   * Set when the receiver already refused the push (its body or headers break the service's rules): kept as evidence
   * only.
   */
  refusedReason?: string;
}

export interface SummaryCounts {
  /** Distinct numbers by state. */
  queued: number;
  in_flight: number;
  done: number;
  pending: number;
  /** Credits recorded across every run of the batch (charged, plus held for pending lookups). */
  credits: number;
}

const SCHEMA = `
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
`;

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

interface SentNumber {
  id: number;
  e164: string;
  country: string;
  credits: number;
  state: NumberState;
  error_code: string | null;
  requested_at: string | null;
}

const sentOf = (n: SentNumber): SentLookup => ({ e164: n.e164, country: n.country, requestedAt: n.requested_at });

function verdictKeyOf(text: string): string | null {
  try {
    const body = JSON.parse(text) as unknown;
    return body !== null && typeof body === 'object'
      ? pushVerdictKey(body as LookupResult & Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

/**
 * Two pushes gave one correlation id different verdicts: one of them is forged (pushes are unsigned), and the
 * journal cannot tell which. The number is failed, never callable, and its held credits stay counted.
 */
function conflictAnswer(
  correlationId: string,
  credits: number,
  httpStatus: number | null,
  latest: string,
): FinalAnswer {
  return {
    result: 'failed',
    doNotCall: null,
    listSource: null,
    checkedAt: null,
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
    doNotCall: null,
    listSource: null,
    checkedAt: null,
    correlationId: null,
    errorCode,
    error,
    credits: 0,
    httpStatus,
    answer: answer === null ? null : JSON.stringify(answer),
  };
}

export interface OpenJournalOptions {
  /** Create the file when it does not exist (batch); listen opens existing journals only. */
  create: boolean;
  readonly?: boolean;
}

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
];

function addColumn(db: BetterSqlite3.Database, table: string, column: string, type: string): void {
  const columns = db.prepare<[], { name: string }>(`PRAGMA table_info(${table})`).all();
  if (!columns.some((c) => c.name === column)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${type}`);
}

/** Brings a journal to the current schema (see MIGRATIONS). */
function migrate(db: BetterSqlite3.Database): void {
  db.transaction(() => {
    const version = db.pragma('user_version', { simple: true }) as number;
    for (let i = version; i < MIGRATIONS.length; i++) MIGRATIONS[i]!(db);
    if (version < MIGRATIONS.length) db.pragma(`user_version = ${MIGRATIONS.length}`);
  }).immediate();
}

/** Numbers a rerun looks up again: no verdict, and nothing charged for them (see requeueUnfinished). */
const REQUEUE_WHERE = `state = 'done' AND credits = 0 AND (result = 'not_checked'
  OR (result = 'failed' AND error_code IN ('upstream_timeout', 'upstream_error', 'lookup_expired', 'billing_error')))`;

/** Bytes of write-ahead log above which a render checkpoints first (about 4,000 pages). */
const WAL_WORTH_A_CHECKPOINT = 16 * 1024 * 1024;

export class BatchJournal {
  readonly path: string;
  private readonly db: BetterSqlite3.Database;
  private readonly st: ReturnType<BatchJournal['prepare']>;
  private readonly now: () => Date;

  private constructor(path: string, db: BetterSqlite3.Database, now: () => Date) {
    this.path = path;
    this.db = db;
    this.now = now;
    this.st = this.prepare();
  }

  /** Opens (or creates) the journal at `path`: WAL, a busy timeout for `listen` running beside `batch`. */
  static async open(
    path: string,
    options: OpenJournalOptions,
    now: () => Date = () => new Date(),
  ): Promise<BatchJournal> {
    const { default: Database } = await import('better-sqlite3');
    if (!options.create && !existsSync(path)) {
      throw usageError('E_JOURNAL_MISSING', `no batch journal at ${path}`, {
        hint: 'run `dnc batch INPUT.csv -o OUTPUT.csv` first; its journal is OUTPUT.csv.journal.sqlite',
      });
    }
    let db: BetterSqlite3.Database;
    try {
      // Numbers, verdicts and the webhook URL (whose path is the listener's secret): the user's alone.
      if (!options.readonly) ensurePrivateFile(path, options.create);
      db = new Database(path, { readonly: options.readonly === true, timeout: 5_000 });
      if (!options.readonly) {
        db.pragma('journal_mode = WAL');
        // NORMAL in WAL mode survives a killed process (commits are in the OS's cache); only power loss can cost the
        // last commits.
        db.pragma('synchronous = NORMAL');
        // A checkpoint copies the log into the file and syncs both: every 1,000 pages (the default) it was a
        // tenth of a batch's CPU. 16,384 pages (64 MiB of log at most) copy each page once where the default
        // copied it many times; rendering checkpoints before it reads.
        db.pragma('wal_autocheckpoint = 16384');
        // Rendering looks numbers up in input order, not table order: keep the table in memory when it fits.
        db.pragma('cache_size = -32768');
        db.exec(SCHEMA);
        migrate(db);
      } else {
        db.prepare('SELECT 1 FROM meta LIMIT 1').get();
      }
    } catch (err) {
      throw inputError('E_JOURNAL_UNREADABLE', `cannot open the batch journal ${path}: ${(err as Error).message}`, {
        hint: 'if it is damaged, --restart starts the batch over: every number is looked up, and charged, again',
        cause: err,
      });
    }
    return new BatchJournal(path, db, now);
  }

  private prepare() {
    const db = this.db;
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
      verdict: db.prepare<[string], NumberVerdict>(
        `SELECT n.id, n.state, n.result, n.do_not_call, n.list_source, n.checked_at, n.correlation_id,
          n.error_code, n.error, n.credits,
                x.basis AS exemption_basis, x.until AS exemption_until
           FROM numbers n LEFT JOIN exemptions x ON x.number_id = n.id WHERE n.e164 = ?`,
      ),
      doneVerdictsAfter: db.prepare<[number, number], NumberVerdict & { e164: string }>(
        `SELECT n.e164, n.id, n.state, n.result, n.do_not_call, n.list_source, n.checked_at, n.correlation_id,
          n.error_code, n.error, n.credits,
                x.basis AS exemption_basis, x.until AS exemption_until
           FROM numbers n LEFT JOIN exemptions x ON x.number_id = n.id WHERE n.id > ?
             AND n.state = 'done' ORDER BY n.id LIMIT ?`,
      ),
      unansweredByE164: db.prepare<[string, string], SentNumber>(
        'SELECT id, e164, country, credits, state, error_code, requested_at FROM numbers WHERE e164 = ? AND ' +
          "state = 'done' AND error_code = ?",
      ),
      pendingByCorrelation: db.prepare<[string], SentNumber>(
        'SELECT id, e164, country, credits, state, error_code, COALESCE(requested_at, updated_at) AS ' +
          "requested_at FROM numbers WHERE correlation_id = ? AND state = 'pending'",
      ),
      // Rare (a conflicting push): done numbers are not in the partial index, so this scans.
      numberByCorrelation: db.prepare<[string], SentNumber>(
        'SELECT id, e164, country, credits, state, error_code, COALESCE(requested_at, updated_at) AS ' +
          'requested_at FROM numbers WHERE correlation_id = ? LIMIT 1',
      ),
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
        ]
      >(
        `UPDATE numbers SET state = 'done', result = ?, correlation_id = ?,
           http_status = ?, credits = ?, do_not_call = ?, list_source = ?,
           error_code = ?, error = ?, checked_at = ?, updated_at = ?
         WHERE id = ?`,
      ),
      pending: db.prepare(
        `UPDATE numbers SET state = 'pending', result = NULL, correlation_id = @correlationId,
           http_status = @httpStatus, credits = @credits, updated_at = @now WHERE id = @id`,
      ),
      counts: db.prepare<[], { state: NumberState; n: number; credits: number }>(
        'SELECT state, COUNT(*) AS n, COALESCE(SUM(credits), 0) AS credits FROM numbers GROUP BY state',
      ),
      pendingRows: db.prepare<
        [],
        { e164: string; country: string; correlation_id: string | null; credits: number; updated_at: string | null }
      >("SELECT e164, country, correlation_id, credits, updated_at FROM numbers WHERE state = 'pending' ORDER BY id"),
      pushesByCorrelation: db.prepare<[string], { id: number; body: string; outcome: string }>(
        "SELECT id, body, outcome FROM pushes WHERE correlation_id = ? AND outcome != 'refused' ORDER BY id",
      ),
      pushDuplicate: db.prepare<[number]>('UPDATE pushes SET duplicates = duplicates + 1 WHERE id = ?'),
      orphanToConflict: db.prepare<[string]>(
        "UPDATE pushes SET outcome = 'conflict' WHERE correlation_id = ? AND outcome = 'orphan'",
      ),
      insertPush: db.prepare<[string | null, string, string, string, string | null, string | null, string | null]>(
        'INSERT INTO pushes (correlation_id, body, received_at, outcome, headers, peer, reason) VALUES (?, ?, ' +
          '?, ?, ?, ?, ?)',
      ),
      markPush: db.prepare<[string, string | null, number]>('UPDATE pushes SET outcome = ?, reason = ? WHERE id = ?'),
      costs: db.prepare<[], { country: string; credits: number }>('SELECT country, credits FROM costs'),
      setCost: db.prepare<[string, number, string]>(
        'INSERT INTO costs (country, credits, seen_at) VALUES (?, ?, ?) ON CONFLICT (country) DO UPDATE SET ' +
          'credits = excluded.credits, seen_at = excluded.seen_at',
      ),
    };
  }

  /** The time of the transaction in progress (one clock read per commit, not per row). */
  private txStamp: string | null = null;

  private stamp(): string {
    return this.txStamp ?? this.now().toISOString();
  }

  meta(): BatchMeta | null {
    const row = this.st.getMeta.get('batch');
    return row ? (JSON.parse(row.value) as BatchMeta) : null;
  }

  setMeta(meta: BatchMeta): void {
    this.st.setMeta.run('batch', JSON.stringify(meta));
  }

  private flag(key: string): string | null {
    return this.st.getMeta.get(key)?.value ?? null;
  }

  /** True once every row of the input has been read into the journal. */
  get ingested(): boolean {
    return this.flag('ingested') === '1';
  }

  markIngested(): void {
    this.st.setMeta.run('ingested', '1');
  }

  /**
   * Inserts distinct numbers in one transaction; numbers already there are left as they are. Returns how many were new.
   */
  readonly insertNumbers = (numbers: Iterable<readonly [string, string]>): number => {
    try {
      return this.db.transaction((list: Iterable<readonly [string, string]>) => {
        let added = 0;
        for (const [e164, country] of list) added += this.st.insertNumber.run(e164, country).changes;
        return added;
      })(numbers);
    } catch (err) {
      throw journalWriteError(this.path, err) ?? err;
    }
  };

  /** Why the last run stopped before every number had an answer (rendered into not_checked rows). */
  stoppedReason(): StoppedReason | null {
    return this.flag('stopped_reason') as StoppedReason | null;
  }

  setStoppedReason(reason: StoppedReason | null): void {
    this.st.setMeta.run('stopped_reason', reason ?? '');
  }

  /** The service's supported_countries, learned from a 422; null until one is seen. */
  supportedCountries(): string[] | null {
    const v = this.flag('supported_countries');
    return v ? (JSON.parse(v) as string[]) : null;
  }

  setSupportedCountries(countries: string[]): void {
    this.st.setMeta.run('supported_countries', JSON.stringify(countries));
  }

  /** Countries a 422 of this batch named: their numbers are refused locally (uncharged) from then on. */
  unsupportedCountries(): string[] {
    const v = this.flag('unsupported_countries');
    return v ? (JSON.parse(v) as string[]) : [];
  }

  /** Records a country a 422 named, and the supported countries it listed (for the messages). */
  addUnsupportedCountry(country: string, supported: readonly string[]): void {
    const known = new Set(this.unsupportedCountries());
    if (!known.has(country)) this.st.setMeta.run('unsupported_countries', JSON.stringify([...known, country].sort()));
    if (supported.length > 0) this.setSupportedCountries([...supported]);
  }

  /** Credits per lookup seen (X-Credit-Cost) for each country. */
  learnedCosts(): Map<string, number> {
    return new Map(this.st.costs.all().map((r) => [r.country, r.credits]));
  }

  learnCost(country: string, credits: number): void {
    this.st.setCost.run(country, credits, this.stamp());
  }

  /** Numbers answered from the user's internal list (list_source `internal:…`) on an earlier run. */
  internalVerdicts(): Array<{ id: number; e164: string; list_source: string }> {
    return this.db
      .prepare<[], { id: number; e164: string; list_source: string }>(
        "SELECT id, e164, list_source FROM numbers WHERE state = 'done' AND list_source LIKE 'internal:%'",
      )
      .all();
  }

  /** Puts answered numbers back in the queue (a number taken off the internal list must be looked up after all). */
  requeue(ids: readonly number[]): void {
    const st = this.db.prepare(
      "UPDATE numbers SET state = 'queued', result = NULL, correlation_id = NULL, http_status = NULL, credits = " +
        '0, do_not_call = NULL, list_source = NULL, error_code = NULL, error = NULL, checked_at = NULL, ' +
        "updated_at = ? WHERE id = ? AND state = 'done'",
    );
    this.db.transaction(() => {
      for (const id of ids) st.run(this.stamp(), id);
    })();
  }

  /** Replaces the exemptions applied to this batch's numbers. */
  setExemptions(items: readonly AppliedExemption[]): void {
    const insert = this.db.prepare(
      'INSERT INTO exemptions (number_id, basis, until, evidence) SELECT id, ?, ?, ? FROM numbers WHERE e164 = ?',
    );
    this.db.transaction(() => {
      this.db.exec('DELETE FROM exemptions');
      for (const x of items) insert.run(x.basis, x.until, x.evidence, x.e164);
    })();
  }

  /** What src/compliance recorded about this batch (list identity, who scrubbed for whom), as JSON text. */
  complianceRecord(): string | null {
    return this.flag('compliance');
  }

  setComplianceRecord(json: string): void {
    this.st.setMeta.run('compliance', json);
  }

  /**
   * Folds a long write-ahead log into the database (reads of a long WAL are slow); never waits for other
   * connections. A short one is left to the checkpoint that closing the journal makes anyway: each costs
   * a sync of both files, and a few thousand answers' log is read as fast as the file. `always`: whatever its
   * length (a batch's render thread, every second while the lookups run). `truncate`: the log is emptied too, if
   * no other connection is reading or writing it at that moment (see early-render-worker.ts); it never waits for
   * them: a TRUNCATE that waits holds the journal's write lock meanwhile (a `dnc listen` storing a push, a reader
   * such as `dnc trace` or a backup tool held the batch's end up to the busy timeout, 5 s).
   */
  checkpoint(options: { always?: boolean; truncate?: boolean } = {}): void {
    if (
      !options.always &&
      !options.truncate &&
      (statSync(`${this.path}-wal`, { throwIfNoEntry: false })?.size ?? 0) < WAL_WORTH_A_CHECKPOINT
    )
      return;
    if (!options.truncate) {
      this.db.pragma('wal_checkpoint(PASSIVE)');
      return;
    }
    const waited = this.db.pragma('busy_timeout', { simple: true }) as number;
    this.db.pragma('busy_timeout = 0');
    try {
      // Busy: as much as a passive checkpoint folds in, the log left as it is.
      this.db.pragma('wal_checkpoint(TRUNCATE)');
    } finally {
      this.db.pragma(`busy_timeout = ${waited}`);
    }
  }

  /**
   * Runs `fn` against one consistent state of the journal: a read transaction held across its awaits (WAL keeps
   * its snapshot while other connections commit). Nothing may write through this connection meanwhile: such a
   * write would join the read transaction and be committed only when `fn` ends.
   */
  async snapshot<T>(fn: () => Promise<T>): Promise<T> {
    const end = this.beginSnapshot();
    try {
      return await fn();
    } finally {
      end();
    }
  }

  /**
   * Opens a snapshot as snapshot() does, for work begun before it (a render started while lookups ran); returns
   * the function that ends it. Within a transaction already open, it is that transaction's.
   */
  beginSnapshot(): () => void {
    if (this.db.inTransaction) return () => {};
    this.db.exec('BEGIN');
    this.st.getMeta.get('batch'); // the snapshot starts with the first read
    return () => {
      if (this.db.inTransaction) this.db.exec('COMMIT');
    };
  }

  /**
   * Changes when another connection (a `dnc listen` storing pushes) commits to the journal; never by this one's writes.
   */
  dataVersion(): number {
    return this.db.pragma('data_version', { simple: true }) as number;
  }

  /** Runs `fn` in one transaction (one commit for many writes). */
  atomically<T>(fn: () => T): T {
    if (this.db.inTransaction) return fn();
    this.txStamp = this.now().toISOString();
    try {
      return this.tx(fn);
    } finally {
      this.txStamp = null;
    }
  }

  /** One transaction wrapper for every commit (better-sqlite3 builds one per transaction() call). */
  private runInTx: ((fn: () => unknown) => unknown) | null = null;

  private tx<T>(fn: () => T): T {
    this.runInTx ??= this.db.transaction((f: () => unknown) => f());
    try {
      return this.runInTx(fn) as T;
    } catch (err) {
      throw journalWriteError(this.path, err) ?? err;
    }
  }

  get(e164: string): NumberRow | undefined {
    return this.st.byE164.get(e164);
  }

  /** What rendering needs of a number (without the stored answer). */
  verdict(e164: string): NumberVerdict | undefined {
    return this.st.verdict.get(e164);
  }

  /** Final verdicts of the numbers after `afterId`, in id order (the order of their first rows in the list). */
  doneVerdictsAfter(afterId: number, limit: number): Array<NumberVerdict & { e164: string }> {
    return this.st.doneVerdictsAfter.all(afterId, limit);
  }

  /** Numbers that still need a lookup, in input order, after `afterId`. */
  nextQueued(afterId: number, limit: number): Array<{ id: number; e164: string; country: string }> {
    return this.st.nextQueued.all(afterId, limit);
  }

  /** The id of the number read last (0 when none). */
  lastNumberId(): number {
    return (this.db.prepare('SELECT MAX(id) AS id FROM numbers').get() as { id: number | null }).id ?? 0;
  }

  /** Numbers after `afterId` in input order, whatever their state. */
  numbersAfter(afterId: number, limit: number): Array<{ id: number; e164: string; country: string }> {
    return this.st.numbersAfter.all(afterId, limit);
  }

  /** Marks numbers in flight (committed before their requests are sent). Returns those actually claimed. */
  claim(ids: readonly number[]): number[] {
    const now = this.stamp();
    if (ids.length > 1 && ids.every((id, i) => i === 0 || id === ids[i - 1]! + 1)) {
      // The range holds exactly these ids, so nothing else can be claimed by it.
      return this.st.claimRange.all(now, now, ids[0]!, ids[ids.length - 1]!);
    }
    return this.db.transaction(() => ids.filter((id) => this.st.claim.run(now, now, id).changes === 1))();
  }

  /** Puts an in-flight number back in the queue: its request was certainly not charged (429, refused connection). */
  release(id: number): void {
    this.st.release.run(this.stamp(), id);
  }

  /**
   * Requests sent whose answer never reached the journal (a crash while they were in flight), by country:
   * each may have been charged, and those credits are nowhere else in the journal.
   */
  unseenSends(): Map<string, number> {
    return new Map(
      this.st.unseenSends
        .all()
        .filter((r) => r.n > 0)
        .map((r) => [r.country, r.n]),
    );
  }

  /** At the start of a run: numbers left in flight by a crash go back to the queue. Returns how many. */
  requeueInFlight(): number {
    return this.st.requeueInFlight.run().changes;
  }

  /**
   * At the start of a rerun (the lock held: no run of this batch is alive): numbers left in flight by a run that
   * stopped without their answers (kill -9, a second Ctrl-C, a full disk) may have been charged. They are not
   * sent again: each becomes `failed` / unanswered_send, no credits recorded, its send counted among the unanswered
   * ones. Returns how many.
   */
  settleUnanswered(): number {
    return (
      this.db
        .prepare(
          `UPDATE numbers SET state = 'done', result = 'failed', correlation_id = NULL, http_status = NULL,
            credits = 0, do_not_call = NULL,
           list_source = NULL, checked_at = NULL, error_code = ?, error = ? WHERE state = 'in_flight'`,
        )
        // updated_at stays the moment of the send: \`dnc usage --reconcile\` dates the unanswered send by it.
        .run(UNANSWERED_SEND, UNANSWERED_SEND_TEXT).changes
    );
  }

  /**
   * --resend-unanswered: numbers whose send got no answer go back to the queue (the user accepts a second
   * charge). Their earlier sends stay counted (attempts): the answer of the next one is not theirs. Returns how many.
   */
  requeueUnanswered(): number {
    return this.db
      .prepare(
        `UPDATE numbers SET state = 'queued', result = NULL, error_code = NULL, error = NULL, updated_at = ?
          WHERE (state = 'done' AND error_code = ?) OR state = 'in_flight'`,
      )
      .run(this.stamp(), UNANSWERED_SEND).changes;
  }

  /** Sends of this batch that got no answer (each may have been charged; no credits of them are recorded). */
  unansweredSends(): number {
    return (
      this.db.prepare(`SELECT COALESCE(SUM(${UNANSWERED_SENDS}), 0) AS n FROM numbers WHERE attempts > 0`).get() as {
        n: number;
      }
    ).n;
  }

  /** Stores a final answer; the number is done once this returns. */
  recordFinal(id: number, a: FinalAnswer): void {
    // txStamp is set exactly while atomically() runs: the usual case (a commit's writes) asks nothing of SQLite.
    if (this.txStamp === null && !this.db.inTransaction) {
      this.atomically(() => this.recordFinal(id, a));
      return;
    }
    if (a.answer === null) this.st.clearAnswer.run(id);
    else this.st.setAnswer.run(id, a.answer);
    this.st.done.run(
      a.result,
      a.correlationId,
      a.httpStatus,
      a.credits,
      a.doNotCall === null ? null : a.doNotCall ? 1 : 0,
      a.listSource,
      a.errorCode,
      a.error,
      a.checkedAt,
      this.stamp(),
      id,
    );
  }

  /** Stores several final answers in one transaction. */
  recordFinals(items: ReadonlyArray<readonly [number, FinalAnswer]>): void {
    this.db.transaction(() => {
      for (const [id, a] of items) this.recordFinal(id, a);
    })();
  }

  /** Stores a 202 receipt: the number waits for its push; `creditsHeld` count as spent until then. */
  recordReceipt(id: number, correlationId: string, receipt: unknown, creditsHeld: number, receiptText?: string): void {
    if (this.txStamp === null && !this.db.inTransaction) {
      this.atomically(() => this.recordReceipt(id, correlationId, receipt, creditsHeld, receiptText));
      return;
    }
    this.st.setAnswer.run(id, receiptText ?? JSON.stringify(receipt));
    this.st.pending.run({
      id,
      correlationId,
      httpStatus: 202,
      credits: creditsHeld,
      now: this.stamp(),
    });
  }

  summaryCounts(): SummaryCounts {
    const out: SummaryCounts = { queued: 0, in_flight: 0, done: 0, pending: 0, credits: 0 };
    for (const r of this.st.counts.all()) {
      out[r.state] = r.n;
      out.credits += r.credits;
    }
    return out;
  }

  /** Numbers whose webhook result has not arrived (for `dnc listen`). */
  pendingNumbers(): Array<{
    e164: string;
    country: string;
    correlationId: string | null;
    creditsHeld: number;
    receivedAt: string | null;
  }> {
    return this.st.pendingRows.all().map((r) => ({
      e164: r.e164,
      country: r.country,
      correlationId: r.correlation_id,
      creditsHeld: r.credits,
      receivedAt: r.updated_at,
    }));
  }

  /**
   * Stores a webhook push durably (call before answering 2xx) and, when its correlation id is a pending
   * number, that number's final answer, atomically. A push seen before is counted, not applied again.
   */
  recordPush(
    body: string,
    receivedAt: string,
    correlationIdHeader?: string | null,
    serviceStatus?: number | null,
  ): PushOutcome {
    return this.recordPushes([
      { raw: body, receivedAt, correlationId: correlationIdHeader ?? null, serviceStatus: serviceStatus ?? null },
    ])[0]!;
  }

  /** recordPush for several pushes in one transaction (one commit for a burst of pushes); outcomes in order. */
  recordPushes(pushes: ReadonlyArray<IncomingPushRecord>, options: StorePushOptions = {}): PushOutcome[] {
    return this.storePushes(pushes, options).map((v) => v.outcome);
  }

  /** recordPushes, with the reason of each refusal. */
  storePushes(pushes: ReadonlyArray<IncomingPushRecord>, options: StorePushOptions = {}): PushVerdict[] {
    try {
      return this.db.transaction(() => pushes.map((p) => this.storePush(p, options)))();
    } catch (err) {
      // SQLITE_BUSY stays as it is: the listener retries it.
      throw journalWriteError(this.path, err) ?? err;
    }
  }

  private insertPush(
    push: IncomingPushRecord,
    correlationId: string | null,
    outcome: PushOutcome,
    reason: string | null = null,
  ): void {
    this.st.insertPush.run(
      correlationId,
      push.raw,
      push.receivedAt,
      outcome,
      push.headers ?? null,
      push.peer ?? null,
      reason,
    );
  }

  private refuse(
    push: IncomingPushRecord,
    correlationId: string | null,
    reason: string,
    options: StorePushOptions,
  ): PushVerdict {
    if (options.admitRefused?.(push.raw.length) ?? true) this.insertPush(push, correlationId, 'refused', reason);
    return { outcome: 'refused', reason };
  }

  private storePush(push: IncomingPushRecord, options: StorePushOptions): PushVerdict {
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(push.raw);
    } catch {
      parsed = null;
    }
    const fromBody = (parsed as { correlation_id?: unknown } | null)?.correlation_id;
    const correlationId = typeof fromBody === 'string' && fromBody !== '' ? fromBody : push.correlationId || null;
    if (push.refusedReason !== undefined) return this.refuse(push, correlationId, push.refusedReason, options);
    const body =
      parsed !== null && typeof parsed === 'object' ? (parsed as LookupResult & Record<string, unknown>) : null;
    const skew = options.skewMs ?? DEFAULT_CLOCK_SKEW_MS;
    if (correlationId !== null && body !== null) {
      const seen = this.st.pushesByCorrelation.all(correlationId);
      if (seen.length > 0) {
        const key = pushVerdictKey(body);
        const same = seen.find((s) => verdictKeyOf(s.body) === key);
        if (same) {
          this.st.pushDuplicate.run(same.id);
          return { outcome: 'duplicate' };
        }
        // A second verdict: believable only about the number sent; then neither can be trusted.
        const number = this.st.numberByCorrelation.get(correlationId);
        const problem = number ? pushMatchProblem(body, sentOf(number), skew) : null;
        if (problem) return this.refuse(push, correlationId, problem, options);
        this.st.orphanToConflict.run(correlationId);
        this.insertPush(push, correlationId, 'conflict');
        if (
          number &&
          (number.state === 'pending' || number.state === 'done') &&
          number.error_code !== CONFLICTING_PUSHES
        ) {
          this.recordFinal(
            number.id,
            conflictAnswer(correlationId, number.credits, push.serviceStatus ?? null, push.raw),
          );
        }
        return { outcome: 'conflict' };
      }
    }
    const number = correlationId === null ? undefined : this.st.pendingByCorrelation.get(correlationId);
    if (number && body !== null) {
      const problem = pushMatchProblem(body, sentOf(number), skew);
      if (problem) return this.refuse(push, correlationId, problem, options);
      this.recordFinal(
        number.id,
        finalAnswerOf(pushVerdict(body, number.credits), push.serviceStatus ?? null, push.raw, number.credits),
      );
      this.insertPush(push, correlationId, 'applied');
      return { outcome: 'applied' };
    }
    if (body !== null && this.adoptByNumber(body, skew)) {
      this.insertPush(push, correlationId, 'adopted');
      return { outcome: 'adopted' };
    }
    if (!(options.admitOrphan?.(push.raw.length) ?? true)) return { outcome: 'over_capacity' };
    this.insertPush(push, correlationId, 'orphan');
    return { outcome: 'orphan' };
  }

  /**
   * A push under a correlation id the journal never saw may be the answer to a webhook lookup whose receipt a killed
   * run never stored (its number ended `unanswered_send`). Pushes are unsigned, so it is adopted by its number only
   * when it errs on the safe side: a do_not_call verdict about a number of this batch sent without an answer,
   * timestamped after that send, makes the row do_not_call. A callable verdict is kept as an orphan (evidence) and
   * the row stays unanswered_send: a forged "callable" must never make a number callable.
   */
  private adoptByNumber(body: LookupResult & Record<string, unknown>, skewMs: number): boolean {
    if (body.status !== 'succeeded' || body.do_not_call !== true || typeof body.phone_number !== 'string') return false;
    const number = this.st.unansweredByE164.get(body.phone_number, UNANSWERED_SEND);
    if (!number || number.country !== body.country || !number.requested_at) return false;
    const sentAt = Date.parse(number.requested_at);
    if (!Number.isFinite(sentAt) || serviceTimestampMs(body.timestamp) < sentAt - skewMs) return false;
    this.recordFinal(number.id, finalAnswerOf(pushVerdict(body, 0), 200, JSON.stringify(body), 0));
    return true;
  }

  /**
   * Orphans kept before their number ended unanswered_send (the push came while the killed run's number was still in
   * flight) are adopted as a live push would be (adoptByNumber). Returns the e164 of the numbers adopted.
   */
  adoptKeptOrphans(skewMs = DEFAULT_CLOCK_SKEW_MS): string[] {
    const adopted: string[] = [];
    const orphans = this.db
      .prepare<[], { id: number; body: string }>("SELECT id, body FROM pushes WHERE outcome = 'orphan' ORDER BY id")
      .all();
    if (orphans.length === 0) return adopted;
    this.atomically(() => {
      for (const o of orphans) {
        let body: unknown;
        try {
          body = JSON.parse(o.body);
        } catch {
          continue;
        }
        if (
          body === null ||
          typeof body !== 'object' ||
          !this.adoptByNumber(body as LookupResult & Record<string, unknown>, skewMs)
        )
          continue;
        this.st.markPush.run('adopted', null, o.id);
        adopted.push((body as { phone_number: string }).phone_number);
      }
    });
    return adopted;
  }

  /**
   * Applies a kept push to its number once the receipt is recorded (a push faster than its receipt): the push is
   * checked against the number as a live one would be. Conflicting pushes make the number conflicting.
   */
  applyKeptPush(
    pushId: number,
    outcome: 'orphan' | 'conflict',
    correlationId: string,
    body: string,
    options: StorePushOptions = {},
  ): PushVerdict | null {
    const number = this.st.pendingByCorrelation.get(correlationId);
    if (!number) return null;
    return this.atomically(() => {
      if (outcome === 'conflict') {
        this.recordFinal(number.id, conflictAnswer(correlationId, number.credits, null, body));
        return { outcome: 'conflict' as const };
      }
      let parsed: unknown = null;
      try {
        parsed = JSON.parse(body);
      } catch {
        parsed = null;
      }
      const problem =
        parsed && typeof parsed === 'object'
          ? pushMatchProblem(
              parsed as LookupResult & Record<string, unknown>,
              sentOf(number),
              options.skewMs ?? DEFAULT_CLOCK_SKEW_MS,
            )
          : 'not a JSON object';
      if (problem) {
        this.st.markPush.run('refused', problem, pushId);
        return { outcome: 'refused' as const, reason: problem };
      }
      this.recordFinal(
        number.id,
        finalAnswerOf(pushVerdict(parsed as LookupResult, number.credits), null, body, number.credits),
      );
      this.st.markPush.run('applied', null, pushId);
      return { outcome: 'applied' as const };
    });
  }

  /** Numbers the batch has not sent yet or whose answer it has not journaled (queued or in flight). */
  unsentCount(): number {
    const c = this.summaryCounts();
    return c.queued + c.in_flight;
  }

  /**
   * Puts back in the queue every number without a verdict that no credit was spent on: not_checked of any
   * reason (a webhook-only country without a URL, say) and failures the service said it did not charge
   * (the register timed out or failed, the lookup expired and was refunded, a billing error with charged
   * false). A failure that may have been charged (an unreadable answer) stays as it is. The answered send of
   * a requeued failure no longer counts as a send in flight.
   */
  requeueUnfinished(): { notChecked: number; uncharged: number } {
    return this.db.transaction(() => {
      const count = (result: string) =>
        (
          this.db.prepare(`SELECT COUNT(*) AS n FROM numbers WHERE ${REQUEUE_WHERE} AND result = ?`).get(result) as {
            n: number;
          }
        ).n;
      const counts = { notChecked: count('not_checked'), uncharged: count('failed') };
      this.db
        .prepare(
          `UPDATE numbers SET state = 'queued', attempts = CASE WHEN result = 'failed' THEN MAX(0,
            attempts - 1) ELSE attempts END,
             result = NULL, correlation_id = NULL, http_status = NULL, do_not_call = NULL, list_source = NULL,
             error_code = NULL, error = NULL, checked_at = NULL
           WHERE ${REQUEUE_WHERE}`,
        )
        .run();
      return counts;
    })();
  }

  /** Marks verdicts taken from the results cache (--reuse-within): no request, no credits, and trace says so. */
  markReused(ids: readonly number[], at: string): void {
    const mark = this.db.prepare<[string, number]>('UPDATE numbers SET reused_at = ? WHERE id = ?');
    this.db.transaction(() => {
      for (const id of ids) mark.run(at, id);
    })();
  }

  /**
   * Starts writing the write-ahead log to disk on a thread of the pool, while this thread goes on (rendering).
   * The commits are durable against a crash already (synchronous = NORMAL); the checkpoint that closing the
   * journal makes syncs the log first, and a log never synced (every answer of the run) made the last step of a
   * batch wait ≈ 0.1 s for the disk. Nothing depends on this one: SQLite still syncs at close, with less to write.
   */
  async syncLogInBackground(): Promise<void> {
    const { open } = await import('node:fs/promises');
    const handle = await open(`${this.path}-wal`, 'r+').catch(() => null);
    if (!handle) return;
    try {
      await handle.datasync();
    } catch {
      // A hint only: the checkpoint at close syncs the log itself, and reports what fails.
    } finally {
      await handle.close().catch(() => {});
    }
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

/** Removes a journal and its WAL files. */
export function deleteJournalFiles(path: string): void {
  for (const p of [path, `${path}-wal`, `${path}-shm`, `${path}.lock`, `${path}.listen.lock`])
    rmSync(p, { force: true });
}

/**
 * Lock files beside the journal: 'batch' so two `dnc batch` runs never share one journal, 'listen' so that a
 * `--restart` never deletes the journal a `dnc listen` is storing pushes in (and two listeners never share it).
 */
export type LockKind = 'batch' | 'listen';

const lockPathOf = (journalPath: string, kind: LockKind) =>
  kind === 'batch' ? `${journalPath}.lock` : `${journalPath}.listen.lock`;
const holderName = (kind: LockKind) => (kind === 'batch' ? 'dnc batch' : 'dnc listen');

export interface JournalLock {
  release(): void;
}

export interface LockDeps {
  pid: number;
  /** Whether a process id is alive (injected: core modules do not touch process.*). */
  isAlive(pid: number): boolean;
  /**
   * When a process started (ms since the epoch), or null when unknown: a lock's pid reused by a later process is stale.
   */
  startTime?(pid: number): number | null;
}

/** Process start times are read in clock ticks (10 ms) and the lock's mtime in ms: within this, the same process. */
const START_SLACK_MS = 1_000;

/** Who holds the batch (or listen) lock of `journalPath`, if a live process does. */
export function lockHolder(journalPath: string, deps: LockDeps, kind: LockKind = 'batch'): number | null {
  const lockPath = lockPathOf(journalPath, kind);
  let text: string;
  let writtenAt: number;
  try {
    text = readFileSync(lockPath, 'utf8');
    writtenAt = statSync(lockPath).mtimeMs;
  } catch {
    return null;
  }
  const [pidText, startText] = text.split('\n');
  const pid = Number.parseInt(pidText ?? '', 10);
  if (!Number.isFinite(pid) || pid === deps.pid || !deps.isAlive(pid)) return null;
  const started = deps.startTime?.(pid) ?? null;
  if (started !== null) {
    const recorded = Number.parseInt(startText ?? '', 10);
    // The pid now names another process: one that started at another time than the holder, or (a lock from
    // before start times were recorded) after the lock was written.
    if (
      Number.isFinite(recorded) ? Math.abs(started - recorded) > START_SLACK_MS : started > writtenAt + START_SLACK_MS
    )
      return null;
  }
  return pid;
}

export function acquireJournalLock(journalPath: string, deps: LockDeps, kind: LockKind = 'batch'): JournalLock {
  const lockPath = lockPathOf(journalPath, kind);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lockPath, `${deps.pid}\n${deps.startTime?.(deps.pid) ?? ''}\n`, {
        flag: 'wx',
        mode: PRIVATE_FILE_MODE,
      });
      return {
        release() {
          try {
            if (readFileSync(lockPath, 'utf8').split('\n')[0]!.trim() === String(deps.pid)) unlinkSync(lockPath);
          } catch {
            /* already gone */
          }
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = lockHolder(journalPath, deps, kind);
      if (holder !== null) {
        throw usageError('E_JOURNAL_BUSY', `another ${holderName(kind)} (pid ${holder}) is using ${journalPath}`, {
          hint:
            kind === 'batch'
              ? 'wait for it to finish, or stop it (Ctrl-C) and run the command again to resume'
              : 'it already receives the pushes of this batch; stop it (Ctrl-C) first to start another',
        });
      }
      // A stale lock from a run that was killed: take it over.
      rmSync(lockPath, { force: true });
    }
  }
  throw usageError('E_JOURNAL_BUSY', `cannot lock ${journalPath}`);
}

/*
 * Reads of a batch journal by other modules (results cache, trace, dnc listen), on connections of their own:
 * the SQL stays here, with the schema and its migrations.
 */

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
  const { default: Database } = await import('better-sqlite3');
  const db = new Database(journalPath, { fileMustExist: true, timeout: 5_000 });
  try {
    return read(db);
  } finally {
    db.close();
  }
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

/** Whether a journal's numbers table (attached as `schema`) has the reused_at column. */
export function hasReusedAt(db: BetterSqlite3.Database, schema = 'main'): boolean {
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
  answer: string | null;
}

export interface JournalPushRow {
  body: string;
  received_at: string;
  outcome: string;
  duplicates: number;
  reason: string | null;
  peer: string | null;
}

/** Everything a journal holds about one correlation id (read only; journals of any age). */
export function journalLookup(
  journalPath: string,
  id: string,
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
                n.list_source, n.error_code, n.checked_at, n.updated_at,
                ${opt(n, 'n.', 'requested_at')}, ${opt(n, 'n.', 'reused_at')}, a.body AS answer
           FROM numbers n LEFT JOIN answers a ON a.number_id = n.id WHERE n.correlation_id = ?`,
      )
      .all(id);
    const pushes = db
      .prepare<[string], JournalPushRow>(
        `SELECT body, received_at, outcome, duplicates, ${opt(p, '', 'reason')}, ${opt(p, '', 'peer')} FROM ` +
          `pushes WHERE correlation_id = ? ORDER BY id`,
      )
      .all(id);
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

/** The statements dnc listen runs on its own connection to the journal. */
export function listenQueries(db: BetterSqlite3.Database) {
  // A pending number's updated_at is the moment its 202 receipt was recorded (BatchJournal.recordReceipt).
  return {
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
 * The options a journal's batch was last run with (BatchMeta.run), read without changing the journal (for a dry run).
 */
export function rememberedRunOf(journalPath: string, inUse: boolean): Promise<Record<string, unknown> | undefined> {
  return readUntouched(journalPath, inUse, (db) => {
    const row = db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?').get('batch');
    return row ? (JSON.parse(row.value) as BatchMeta).run : undefined;
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
  const { default: Database } = await import('better-sqlite3');
  if (inUse && existsSync(`${journalPath}-wal`) && existsSync(`${journalPath}-shm`)) {
    const db = new Database(journalPath, { readonly: true, fileMustExist: true, timeout: 5_000 });
    try {
      return read(db);
    } finally {
      db.close();
    }
  }
  const { mkdtempSync, copyFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
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
