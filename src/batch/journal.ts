// The batch journal: one SQLite file per batch, the source of truth for every number's state and answer.
import type { WorkbookLayout } from './xlsx-input.js';
import type { TextEncoding } from './encoding.js';
import type { RecordDelimiter } from './csv-output.js';
import { existsSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import type BetterSqlite3 from 'better-sqlite3';
import { inputError, usageError } from '../errors.js';
import type { LookupFailed, LookupSucceeded } from '../wire/types.js';

export const JOURNAL_SCHEMA_VERSION = 1;

/** Where the journal of OUTPUT lives: beside it, named after it. */
export function journalPathFor(outputPath: string): string {
  return `${outputPath}.journal.sqlite`;
}

/** Final results of a number (the dnc_result values a lookup can come to). */
export type NumberResult = 'callable' | 'do_not_call' | 'invalid' | 'unsupported_country' | 'not_checked' | 'failed';
export type NumberState = 'queued' | 'in_flight' | 'done' | 'pending';
// service_failure: the run ended on an error (401/403, the service unreachable); the output is still written.
export type StoppedReason = 'credit_limit' | 'budget_reached' | 'interrupted' | 'service_failure';

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
  layout: { recordDelimiter: RecordDelimiter; header: string[] | null; columnCount: number; phoneLabel: string; bom: boolean; workbook?: WorkbookLayout | undefined; encoding?: TextEncoding | undefined };
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
export const UNANSWERED_SENDS = "MAX(0, attempts - (state IN ('done', 'pending')))";

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
  'id' | 'state' | 'result' | 'do_not_call' | 'list_source' | 'checked_at' | 'correlation_id' | 'error_code' | 'error' | 'credits'
>;

/** A final answer about a number, ready to store. */
export interface FinalAnswer {
  result: NumberResult;
  doNotCall: boolean | null;
  listSource: string | null;
  checkedAt: string | null;
  correlationId: string | null;
  errorCode: string | null;
  error: string | null;
  credits: number;
  httpStatus: number | null;
  /** The service's full answer (JSON text), or null for a local decision. */
  answer: string | null;
}

export type PushOutcome = 'applied' | 'duplicate' | 'orphan';

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
  outcome TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS pushes_correlation ON pushes (correlation_id) WHERE correlation_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS costs (country TEXT PRIMARY KEY, credits INTEGER NOT NULL, seen_at TEXT NOT NULL);
`;

/**
 * Reads a final answer out of a service body (synchronous answer or push). `heldCredits` is what a
 * 202 receipt held, used when a push does not say what was charged.
 */
export function finalAnswerFromBody(
  body: unknown,
  httpStatus: number | null,
  creditCost: number | null,
  heldCredits = 0,
  /** The body as received, stored as is when given (it is `body`'s JSON text). */
  text?: string,
): FinalAnswer | null {
  const b = body as (Partial<Omit<LookupSucceeded, 'status' | 'error_code'>> & Partial<Omit<LookupFailed, 'status' | 'error_code'>> & { status?: string; error_code?: string | null; timestamp?: string }) | null;
  if (!b || typeof b !== 'object') return null;
  const answer = text ?? JSON.stringify(body);
  const correlationId = typeof b.correlation_id === 'string' ? b.correlation_id : null;
  const costFromBody = typeof b.cost?.credits_used_for_query === 'number' ? b.cost.credits_used_for_query : null;
  if (b.status === 'succeeded') {
    return {
      result: b.do_not_call === true ? 'do_not_call' : 'callable',
      doNotCall: b.do_not_call === true,
      listSource: typeof b.dnc_list_source === 'string' && b.dnc_list_source !== '' ? b.dnc_list_source : null,
      checkedAt: typeof b.timestamp === 'string' ? b.timestamp : null,
      correlationId,
      errorCode: null,
      error: null,
      credits: creditCost ?? costFromBody ?? heldCredits,
      httpStatus,
      answer,
    };
  }
  if (b.status === 'failed' && typeof b.error_code === 'string') {
    const charged = b.charged === true;
    const credits = charged ? (creditCost ?? costFromBody ?? heldCredits) : 0;
    return {
      result: b.error_code === 'invalid_phone_number' ? 'invalid' : 'failed',
      doNotCall: null,
      listSource: null,
      checkedAt: typeof b.timestamp === 'string' ? b.timestamp : null,
      correlationId,
      errorCode: b.error_code,
      error: typeof b.error === 'string' ? b.error : null,
      credits,
      httpStatus,
      answer,
    };
  }
  return null;
}

/** A local (request-less) final decision. */
export function localAnswer(result: NumberResult, errorCode: string, error: string, answer: unknown = null, httpStatus: number | null = null): FinalAnswer {
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

/** Numbers a rerun looks up again: no verdict, and nothing charged for them (see requeueUnfinished). */
const REQUEUE_WHERE = `state = 'done' AND credits = 0 AND (result = 'not_checked'
  OR (result = 'failed' AND error_code IN ('upstream_timeout', 'upstream_error', 'lookup_expired', 'billing_error')))`;

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
  static async open(path: string, options: OpenJournalOptions, now: () => Date = () => new Date()): Promise<BatchJournal> {
    const { default: Database } = await import('better-sqlite3');
    if (!options.create && !existsSync(path)) {
      throw usageError('E_JOURNAL_MISSING', `no batch journal at ${path}`, {
        hint: 'run `dnc batch INPUT.csv -o OUTPUT.csv` first; its journal is OUTPUT.csv.journal.sqlite',
      });
    }
    let db: BetterSqlite3.Database;
    try {
      db = new Database(path, { readonly: options.readonly === true, timeout: 5_000 });
      if (!options.readonly) {
        db.pragma('journal_mode = WAL');
        // NORMAL in WAL mode survives a killed process (commits are in the OS's cache); only power loss can cost the last commits.
        db.pragma('synchronous = NORMAL');
        // A checkpoint copies the log into the file and syncs both: every 1,000 pages (the default) it was a
        // tenth of a batch's CPU. 16,384 pages (64 MiB of log at most) copy each page once where the default
        // copied it many times; rendering checkpoints before it reads.
        db.pragma('wal_autocheckpoint = 16384');
        // Rendering looks numbers up in input order, not table order: keep the table in memory when it fits.
        db.pragma('cache_size = -32768');
        db.exec(SCHEMA);
        // Journals made before requested_at existed get the column (empty for their earlier lookups). Checked
        // under the write lock: a batch resuming and a listener opening the same old journal must not both add it.
        const conn = db;
        conn
          .transaction(() => {
            const columns = conn.prepare<[], { name: string }>('PRAGMA table_info(numbers)').all();
            if (!columns.some((c) => c.name === 'requested_at')) conn.exec('ALTER TABLE numbers ADD COLUMN requested_at TEXT');
            // In journals made before release() took its attempt back, a 429 or a refused connection left an attempt
            // that cost nothing, so their attempts prove nothing; only a crash's send can still be told: one per number in flight.
            if (!conn.prepare("SELECT 1 FROM meta WHERE key = 'sends_counted'").get()) {
              conn.exec(
                "UPDATE numbers SET attempts = CASE WHEN state = 'in_flight' THEN 1 WHEN state IN ('done', 'pending') THEN MIN(attempts, 1) ELSE 0 END WHERE attempts > 0",
              );
              conn.exec("INSERT INTO meta (key, value) VALUES ('sends_counted', '1')");
            }
          })
          .immediate();
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
      setMeta: db.prepare<[string, string]>('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value'),
      insertNumber: db.prepare<[string, string]>('INSERT OR IGNORE INTO numbers (e164, country) VALUES (?, ?)'),
      byE164: db.prepare<[string], NumberRow>(
        'SELECT numbers.*, answers.body AS answer FROM numbers LEFT JOIN answers ON answers.number_id = numbers.id WHERE e164 = ?',
      ),
      setAnswer: db.prepare<[number, string]>('INSERT OR REPLACE INTO answers (number_id, body) VALUES (?, ?)'),
      clearAnswer: db.prepare<[number]>('DELETE FROM answers WHERE number_id = ?'),
      verdict: db.prepare<[string], NumberVerdict>(
        'SELECT id, state, result, do_not_call, list_source, checked_at, correlation_id, error_code, error, credits FROM numbers WHERE e164 = ?',
      ),
      pendingByCorrelation: db.prepare<[string], { id: number; credits: number }>(
        "SELECT id, credits FROM numbers WHERE correlation_id = ? AND state = 'pending'",
      ),
      nextQueued: db.prepare<[number, number], { id: number; e164: string; country: string }>(
        "SELECT id, e164, country FROM numbers WHERE state = 'queued' AND id > ? ORDER BY id LIMIT ?",
      ),
      claim: db.prepare<[string, string, number]>(
        "UPDATE numbers SET state = 'in_flight', attempts = attempts + 1, updated_at = ?, requested_at = ? WHERE id = ? AND state = 'queued'",
      ),
      // Consecutive ids (the usual turn) in one statement; RETURNING says which were still queued.
      claimRange: db
        .prepare<[string, string, number, number], number>(
          "UPDATE numbers SET state = 'in_flight', attempts = attempts + 1, updated_at = ?, requested_at = ? WHERE id BETWEEN ? AND ? AND state = 'queued' RETURNING id",
        )
        .pluck(),
      // The claim's attempt is taken back: that request certainly cost nothing (attempts counts sends that may have).
      release: db.prepare<[string, number]>(
        "UPDATE numbers SET state = 'queued', attempts = MAX(0, attempts - 1), updated_at = ? WHERE id = ? AND state = 'in_flight'",
      ),
      unseenSends: db.prepare<[], { country: string; n: number }>(
        `SELECT country, SUM(${UNANSWERED_SENDS}) AS n FROM numbers WHERE attempts > 0 GROUP BY country`,
      ),
      requeueInFlight: db.prepare("UPDATE numbers SET state = 'queued' WHERE state = 'in_flight'"),
      // Positional parameters: binding by name costs a property lookup per parameter, per answer.
      done: db.prepare<[string, string | null, number | null, number, number | null, string | null, string | null, string | null, string | null, string, number]>(
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
      pendingRows: db.prepare<[], { e164: string; country: string; correlation_id: string | null; credits: number; updated_at: string | null }>(
        "SELECT e164, country, correlation_id, credits, updated_at FROM numbers WHERE state = 'pending' ORDER BY id",
      ),
      pushByCorrelation: db.prepare<[string], { id: number }>('SELECT id FROM pushes WHERE correlation_id = ?'),
      pushDuplicate: db.prepare<[number]>('UPDATE pushes SET duplicates = duplicates + 1 WHERE id = ?'),
      insertPush: db.prepare<[string | null, string, string, string]>(
        'INSERT INTO pushes (correlation_id, body, received_at, outcome) VALUES (?, ?, ?, ?)',
      ),
      costs: db.prepare<[], { country: string; credits: number }>('SELECT country, credits FROM costs'),
      setCost: db.prepare<[string, number, string]>(
        'INSERT INTO costs (country, credits, seen_at) VALUES (?, ?, ?) ON CONFLICT (country) DO UPDATE SET credits = excluded.credits, seen_at = excluded.seen_at',
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

  /** Inserts distinct numbers in one transaction; numbers already there are left as they are. */
  readonly insertNumbers = (numbers: Iterable<readonly [string, string]>): void => {
    this.db.transaction((list: Iterable<readonly [string, string]>) => {
      for (const [e164, country] of list) this.st.insertNumber.run(e164, country);
    })(numbers);
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

  /** Credits per lookup seen (X-Credit-Cost) for each country. */
  learnedCosts(): Map<string, number> {
    return new Map(this.st.costs.all().map((r) => [r.country, r.credits]));
  }

  learnCost(country: string, credits: number): void {
    this.st.setCost.run(country, credits, this.stamp());
  }

  /** Folds the write-ahead log into the database (reads of a long WAL are slow); never waits for other connections. */
  checkpoint(): void {
    this.db.pragma('wal_checkpoint(PASSIVE)');
  }

  /**
   * Runs `fn` against one consistent state of the journal: a read transaction held across its awaits (WAL keeps
   * its snapshot while other connections commit). Nothing may write through this connection meanwhile: such a
   * write would join the read transaction and be committed only when `fn` ends.
   */
  async snapshot<T>(fn: () => Promise<T>): Promise<T> {
    if (this.db.inTransaction) return fn();
    this.db.exec('BEGIN');
    try {
      this.st.getMeta.get('batch'); // the snapshot starts with the first read
      return await fn();
    } finally {
      if (this.db.inTransaction) this.db.exec('COMMIT');
    }
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
    return this.runInTx(fn) as T;
  }

  get(e164: string): NumberRow | undefined {
    return this.st.byE164.get(e164);
  }

  /** What rendering needs of a number (without the stored answer). */
  verdict(e164: string): NumberVerdict | undefined {
    return this.st.verdict.get(e164);
  }

  /** Numbers that still need a lookup, in input order, after `afterId`. */
  nextQueued(afterId: number, limit: number): Array<{ id: number; e164: string; country: string }> {
    return this.st.nextQueued.all(afterId, limit);
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
    return new Map(this.st.unseenSends.all().filter((r) => r.n > 0).map((r) => [r.country, r.n]));
  }

  /** At the start of a run: numbers left in flight by a crash go back to the queue. Returns how many. */
  requeueInFlight(): number {
    return this.st.requeueInFlight.run().changes;
  }

  /** Stores a final answer; the number is done once this returns. */
  recordFinal(id: number, a: FinalAnswer): void {
    if (!this.db.inTransaction) {
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
    if (!this.db.inTransaction) {
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
  pendingNumbers(): Array<{ e164: string; country: string; correlationId: string | null; creditsHeld: number; receivedAt: string | null }> {
    return this.st.pendingRows
      .all()
      .map((r) => ({ e164: r.e164, country: r.country, correlationId: r.correlation_id, creditsHeld: r.credits, receivedAt: r.updated_at }));
  }

  /**
   * Stores a webhook push durably (call before answering 2xx) and, when its correlation id is a pending
   * number, that number's final answer, atomically. A push seen before is counted, not applied again.
   */
  recordPush(body: string, receivedAt: string, correlationIdHeader?: string | null, serviceStatus?: number | null): PushOutcome {
    return this.recordPushes([{ raw: body, receivedAt, correlationId: correlationIdHeader ?? null, serviceStatus: serviceStatus ?? null }])[0]!;
  }

  /** recordPush for several pushes in one transaction (one commit for a burst of pushes); outcomes in order. */
  recordPushes(pushes: ReadonlyArray<IncomingPushRecord>): PushOutcome[] {
    return this.db.transaction(() => pushes.map((p) => this.storePush(p)))();
  }

  private storePush(push: IncomingPushRecord): PushOutcome {
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(push.raw);
    } catch {
      parsed = null;
    }
    const fromBody = (parsed as { correlation_id?: unknown } | null)?.correlation_id;
    const correlationId = typeof fromBody === 'string' && fromBody !== '' ? fromBody : push.correlationId || null;
    if (correlationId !== null) {
      const seen = this.st.pushByCorrelation.get(correlationId);
      if (seen) {
        this.st.pushDuplicate.run(seen.id);
        return 'duplicate';
      }
    }
    const number = correlationId === null ? undefined : this.st.pendingByCorrelation.get(correlationId);
    let outcome: PushOutcome = 'orphan';
    if (number) {
      const final = finalAnswerFromBody(parsed, push.serviceStatus ?? null, null, number.credits);
      if (final) {
        this.recordFinal(number.id, { ...final, correlationId });
        outcome = 'applied';
      }
    }
    this.st.insertPush.run(correlationId, push.raw, push.receivedAt, outcome);
    return outcome;
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
        (this.db.prepare(`SELECT COUNT(*) AS n FROM numbers WHERE ${REQUEUE_WHERE} AND result = ?`).get(result) as { n: number }).n;
      const counts = { notChecked: count('not_checked'), uncharged: count('failed') };
      this.db
        .prepare(
          `UPDATE numbers SET state = 'queued', attempts = CASE WHEN result = 'failed' THEN MAX(0, attempts - 1) ELSE attempts END,
             result = NULL, correlation_id = NULL, http_status = NULL, do_not_call = NULL, list_source = NULL,
             error_code = NULL, error = NULL, checked_at = NULL
           WHERE ${REQUEUE_WHERE}`,
        )
        .run();
      return counts;
    })();
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

/** Removes a journal and its WAL files. */
export function deleteJournalFiles(path: string): void {
  for (const p of [path, `${path}-wal`, `${path}-shm`, `${path}.lock`, `${path}.listen.lock`]) rmSync(p, { force: true });
}

/**
 * Lock files beside the journal: 'batch' so two `dnc batch` runs never share one journal, 'listen' so that a
 * `--restart` never deletes the journal a `dnc listen` is storing pushes in (and two listeners never share it).
 */
export type LockKind = 'batch' | 'listen';

const lockPathOf = (journalPath: string, kind: LockKind) => (kind === 'batch' ? `${journalPath}.lock` : `${journalPath}.listen.lock`);
const holderName = (kind: LockKind) => (kind === 'batch' ? 'dnc batch' : 'dnc listen');

export interface JournalLock {
  release(): void;
}

export interface LockDeps {
  pid: number;
  /** Whether a process id is alive (injected: core modules do not touch process.*). */
  isAlive(pid: number): boolean;
}

/** Who holds the batch (or listen) lock of `journalPath`, if a live process does. */
export function lockHolder(journalPath: string, deps: LockDeps, kind: LockKind = 'batch'): number | null {
  const lockPath = lockPathOf(journalPath, kind);
  let text: string;
  try {
    text = readFileSync(lockPath, 'utf8');
  } catch {
    return null;
  }
  const pid = Number.parseInt(text, 10);
  if (Number.isFinite(pid) && pid !== deps.pid && deps.isAlive(pid)) return pid;
  return null;
}

export function acquireJournalLock(journalPath: string, deps: LockDeps, kind: LockKind = 'batch'): JournalLock {
  const lockPath = lockPathOf(journalPath, kind);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lockPath, `${deps.pid}\n`, { flag: 'wx' });
      return {
        release() {
          try {
            if (readFileSync(lockPath, 'utf8').trim() === String(deps.pid)) unlinkSync(lockPath);
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
