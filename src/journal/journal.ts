// The batch journal: one SQLite file per batch, the source of truth for every number's state and answer.
import { failedToResend, requeueFailed, runCountsOf, type RunCounts } from './rerun.js';
import { existsSync, statSync } from 'node:fs';
import type BetterSqlite3 from 'better-sqlite3';
import { DncError, inputError, usageError } from '../errors.js';
import { ensurePrivateFile } from '../private-files.js';
import { JournalLog } from './log.js';
import { JournalPushes } from './pushes.js';
import {
  type DoneVerdictColumns,
  doneVerdictOf,
  type JournalStatements,
  prepareJournalStatements,
} from './statements.js';
import { journalWriteError } from './records.js';
import {
  migrate,
  refuseNewerJournal,
  REQUEUE_WHERE,
  SCHEMA,
  UNANSWERED_SENDS,
  WAL_WORTH_A_CHECKPOINT,
} from './schema.js';
import {
  UNANSWERED_SEND,
  UNANSWERED_SEND_TEXT,
  type AppliedExemption,
  type BatchMeta,
  type FinalAnswer,
  type NumberRow,
  type NumberVerdict,
  type StoppedReason,
  type SummaryCounts,
} from './types.js';
import { default as Database } from 'better-sqlite3';
import { open } from 'node:fs/promises';

export * from './types.js';
export { finalAnswerOf, journalWriteError, localAnswer } from './records.js';
export { deleteJournalFiles, journalPathFor } from './files.js';
export { acquireJournalLock, lockHolder, type JournalLock, type LockDeps, type LockKind } from './lock.js';

export interface OpenJournalOptions {
  /** Create the file when it does not exist (batch); listen opens existing journals only. */
  create: boolean;
  readonly?: boolean;
}

export class BatchJournal {
  readonly path: string;
  private readonly db: BetterSqlite3.Database;
  private readonly st: JournalStatements;
  private readonly now: () => Date;

  private constructor(path: string, db: BetterSqlite3.Database, now: () => Date) {
    this.path = path;
    this.db = db;
    this.now = now;
    this.st = prepareJournalStatements(db);
    this.pushes = new JournalPushes(db, this);
    this.log = new JournalLog(path);
  }

  /** The write-ahead log, synced to disk when a caller must know its commits survive a power cut. */
  readonly log: JournalLog;

  /** Opens (or creates) the journal at `path`: WAL, a busy timeout for `listen` running beside `batch`. */
  static async open(
    path: string,
    options: OpenJournalOptions,
    now: () => Date = () => new Date(),
  ): Promise<BatchJournal> {
    if (!options.create && !existsSync(path)) {
      throw usageError('E_JOURNAL_MISSING', `no batch journal at ${path}`, {
        hint: 'run `dnc batch INPUT.csv -o OUTPUT.csv` first; its journal is OUTPUT.csv.journal.sqlite',
      });
    }
    let db: BetterSqlite3.Database | undefined;
    try {
      // Numbers, verdicts and the webhook URL (whose path is the listener's secret): the user's alone.
      if (!options.readonly) ensurePrivateFile(path, options.create);
      db = new Database(path, { readonly: options.readonly === true, timeout: 5_000 });
      if (!options.readonly) {
        refuseNewerJournal(db, path);
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
      if (db?.open) db.close();
      if (err instanceof DncError) throw err;
      throw inputError('E_JOURNAL_UNREADABLE', `cannot open the batch journal ${path}: ${(err as Error).message}`, {
        hint: 'if it is damaged, --restart starts the batch over: every number is looked up, and charged, again',
        cause: err,
      });
    }
    return new BatchJournal(path, db!, now);
  }

  /** The time of the transaction in progress (one clock read per commit, not per row). */
  private txStamp: string | null = null;

  private stamp(): string {
    return this.txStamp ?? this.now().toISOString();
  }

  meta(): BatchMeta | null {
    const row = this.st.getMeta.get('batch');
    if (!row) return null;
    try {
      return JSON.parse(row.value) as BatchMeta;
    } catch (err) {
      // dnc writes it as JSON, in one statement: what is not was written by something else.
      throw inputError('E_JOURNAL_UNREADABLE', `the batch journal ${this.path} holds a batch record that is not JSON`, {
        hint:
          'the journal was edited or damaged: restore it from a copy; without it, the file it proves cannot be ' +
          'proven (scrub the list again into a new output: --reuse-within reuses the verdicts the results cache ' +
          'keeps)',
        cause: err,
      });
    }
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

  /** Answered numbers put on the internal list meanwhile: do_not_call from it; the lookup's answer and cost kept. */
  markOnInternalList(ids: readonly number[], source: string, error: (id: number) => string): void {
    this.db.transaction(() => ids.forEach((id) => this.st.onInternalList.run(source, error(id), this.stamp(), id)))();
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
    return (this.st.doneVerdictsAfter.all(afterId, limit) as DoneVerdictColumns[]).map(doneVerdictOf);
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
            credits = credits_before, do_not_call = NULL,
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

  /** What a run sends, leaves unsent and was charged without a verdict, counted (rerun.ts). */
  get sends(): RunCounts {
    return runCountsOf(this.db);
  }

  /** The failed numbers a bare rerun does not send again, and what sending them again costs (--resend-failed). */
  failedToResend(): { numbers: number; credits: number } {
    return failedToResend(this.db);
  }

  /** --resend-failed: the failed numbers a bare rerun leaves go back to the queue (see requeueFailed). */
  requeueFailed(): number {
    return requeueFailed(this.db, this.stamp());
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

  /** The journal's pushes (src/journal/pushes.ts): stored, matched to what was sent, applied, kept as evidence. */
  readonly pushes: JournalPushes;

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
    this.log.close();
    if (this.db.open) this.db.close();
  }
}
