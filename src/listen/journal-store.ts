// The batch's journal as `dnc listen` uses it: pushes stored through the batch module, plus the queries listen alone needs.
import { closeSync, existsSync, fsync, fsyncSync, openSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type BetterSqlite3 from 'better-sqlite3';
import { BatchJournal, finalAnswerFromBody, journalPathFor, type BatchMeta } from '../batch/journal.js';
import { inputError } from '../errors.js';
import type { IncomingPush, StoreOutcome } from './receiver.js';
import type { RenderReply } from './render-worker.js';
import type { ListenJournal, PendingLookup, PendingSummary } from './session.js';

export interface OpenListenJournalOptions {
  now?: () => Date;
  /** Whether a `dnc batch` still holds this journal's lock (its numbers may not all be sent yet). */
  batchRunning?: () => boolean;
  /** Most overdue lookups listed per status (default 1000). */
  overdueLimit?: number;
  /** How long to wait for a just-created journal to hold its batch (default 10 s). */
  metaWaitMs?: number;
  /** Render in a worker thread when the compiled worker is there (default true); false renders in this thread. */
  renderInWorker?: boolean;
}

/** The compiled worker beside this module (absent when running from TypeScript sources, e.g. under vitest). */
const WORKER_FILE = fileURLToPath(new URL('./render-worker.js', import.meta.url));

interface PendingRow {
  e164: string;
  country: string;
  correlation_id: string;
  updated_at: string;
}

const BUSY_RETRIES = 5;
const isBusy = (err: unknown) => /^SQLITE_BUSY/.test(String((err as { code?: unknown }).code ?? ''));

const toLookup = (r: PendingRow): PendingLookup => ({
  correlationId: r.correlation_id,
  phoneNumber: r.e164,
  country: r.country,
  receivedAt: new Date(r.updated_at),
});

export class JournalPushStore implements ListenJournal {
  private wal: number | undefined;
  private worker: Worker | undefined;
  private renderSeq = 0;
  private readonly q;

  constructor(
    readonly journal: BatchJournal,
    readonly meta: BatchMeta,
    private readonly db: BetterSqlite3.Database,
    private readonly options: OpenListenJournalOptions,
  ) {
    // A pending number's updated_at is the moment its 202 receipt was recorded (BatchJournal.recordReceipt).
    this.q = {
      pendingCount: db.prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM numbers WHERE state = 'pending'"),
      unsentCount: db.prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM numbers WHERE state IN ('queued', 'in_flight')"),
      oldest: db.prepare<[], PendingRow>(
        "SELECT e164, country, correlation_id, updated_at FROM numbers WHERE state = 'pending' ORDER BY updated_at, id LIMIT 1",
      ),
      overdue: db.prepare<[string, number], PendingRow>(
        "SELECT e164, country, correlation_id, updated_at FROM numbers WHERE state = 'pending' AND updated_at < ? ORDER BY updated_at, id LIMIT ?",
      ),
      orphansNowKnown: db.prepare<[], { push_id: number; body: string; number_id: number; credits: number; correlation_id: string }>(
        `SELECT p.id AS push_id, p.body, n.id AS number_id, n.credits, p.correlation_id FROM pushes p
           JOIN numbers n ON n.correlation_id = p.correlation_id
          WHERE p.outcome = 'orphan' AND n.state = 'pending'`,
      ),
      markApplied: db.prepare<[number]>("UPDATE pushes SET outcome = 'applied' WHERE id = ? AND outcome = 'orphan'"),
    };
  }

  /** Where the batch journal of OUTPUT.csv is (the batch module decides). */
  static pathFor(resultsPath: string): string {
    return journalPathFor(resultsPath);
  }

  /**
   * Commits the group of pushes through the batch module (push rows and the numbers' final answers,
   * one transaction), then fsyncs the WAL once for the group, off the event loop: the journal runs
   * with synchronous=NORMAL, which survives a killed process but not a power cut, and an
   * acknowledged push is never sent again. Requests keep being read while the fsync runs.
   */
  async store(pushes: readonly IncomingPush[]): Promise<StoreOutcome[]> {
    const records = pushes.map((p) => ({ raw: p.raw, receivedAt: p.receivedAt.toISOString(), correlationId: p.correlationId, serviceStatus: p.serviceStatus }));
    let outcomes;
    for (let attempt = 1; ; attempt++) {
      try {
        outcomes = this.journal.recordPushes(records);
        break;
      } catch (err) {
        // recordPushes opens a deferred transaction that reads first: when `dnc batch` commits in between,
        // SQLite refuses the upgrade to a write at once ("database is locked", no busy wait). The
        // transaction was rolled back, so it is simply run again; only a lasting lock gets a 503.
        if (!isBusy(err) || attempt >= BUSY_RETRIES) throw err;
        await new Promise((resolve) => setTimeout(resolve, 2 * attempt));
      }
    }
    const fd = this.walFd();
    await new Promise<void>((resolve, reject) => fsync(fd, (err) => (err ? reject(err) : resolve())));
    return outcomes.map((o) => ({ duplicate: o === 'duplicate', orphan: o === 'orphan' }));
  }

  private walFd(): number {
    this.wal ??= openSync(`${this.journal.path}-wal`, 'r');
    return this.wal;
  }

  pendingSummary(overdueBefore: Date): PendingSummary {
    const running = this.options.batchRunning?.() ?? false;
    const oldest = this.q.oldest.get();
    return {
      pending: this.q.pendingCount.get()!.n,
      unsent: running ? this.q.unsentCount.get()!.n : 0,
      oldest: oldest ? toLookup(oldest) : null,
      overdue: this.q.overdue.all(overdueBefore.toISOString(), this.options.overdueLimit ?? 1000).map(toLookup),
      batchRunning: running,
    };
  }

  /**
   * A push can beat its receipt into the journal (a fast push while `dnc batch` is still
   * committing the 202): it is kept as an orphan, and applied here once its number is pending.
   * Returns the correlation ids applied.
   */
  reconcileOrphans(): string[] {
    const applied: string[] = [];
    for (const row of this.q.orphansNowKnown.all()) {
      const final = finalAnswerFromBody(JSON.parse(row.body), null, null, row.credits);
      if (!final) continue;
      this.journal.recordFinal(row.number_id, { ...final, correlationId: row.correlation_id });
      this.q.markApplied.run(row.push_id);
      applied.push(row.correlation_id);
    }
    if (applied.length > 0) fsyncSync(this.walFd());
    return applied;
  }

  /**
   * Rewrites OUTPUT.csv (temp file + rename, by the batch module). Rendering re-reads and
   * normalises every input row, tens of milliseconds per thousand rows of CPU: in a worker thread
   * that time never delays an acknowledgement.
   */
  async render(): Promise<Record<string, number>> {
    if (this.options.renderInWorker === false || !existsSync(WORKER_FILE)) {
      // Loaded only here: rendering pulls in libphonenumber's metadata, which the listener thread otherwise never needs.
      // A connection of its own, as the worker has: the render holds a read snapshot, and pushes stored through
      // this.journal meanwhile must commit at once, not join it.
      const { renderBatchOutput } = await import('../batch/render.js');
      const own = await BatchJournal.open(this.journal.path, { create: false });
      try {
        return (await renderBatchOutput(own)).byResult;
      } finally {
        own.close();
      }
    }
    const worker = (this.worker ??= this.startWorker());
    const id = ++this.renderSeq;
    return new Promise((resolve, reject) => {
      const onMessage = (reply: RenderReply) => {
        if (reply.id !== id) return;
        cleanup();
        if (reply.ok) resolve(reply.byResult);
        else reject(Object.assign(new Error(reply.message), { code: reply.code }));
      };
      const onError = (err: Error) => {
        cleanup();
        reject(err);
      };
      const cleanup = () => {
        worker.off('message', onMessage);
        worker.off('error', onError);
      };
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.postMessage({ id });
    });
  }

  private startWorker(): Worker {
    const worker = new Worker(WORKER_FILE, { workerData: { journalPath: this.journal.path } });
    // A worker that died is started again by the next render.
    worker.once('exit', () => {
      if (this.worker === worker) this.worker = undefined;
    });
    worker.once('error', () => {
      if (this.worker === worker) this.worker = undefined;
    });
    return worker;
  }

  close(): void {
    void this.worker?.terminate();
    this.worker = undefined;
    if (this.wal !== undefined) closeSync(this.wal);
    this.wal = undefined;
    if (this.db.open) this.db.close();
    this.journal.close();
  }
}

/**
 * Opens the journal of the batch whose output is `resultsPath`. Refuses a missing journal
 * (E_JOURNAL_MISSING, from the batch module) and one that holds no batch yet.
 */
export async function openListenJournal(resultsPath: string, options: OpenListenJournalOptions = {}): Promise<JournalPushStore> {
  const path = journalPathFor(resultsPath);
  const journal = await BatchJournal.open(path, { create: false }, options.now);
  // A batch started a moment ago may not have written its metadata yet: give it a few seconds.
  let meta = journal.meta();
  for (let waited = 0; !meta && waited < (options.metaWaitMs ?? 10_000); waited += 100) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    meta = journal.meta();
  }
  if (!meta) {
    journal.close();
    throw inputError('E_JOURNAL_EMPTY', `the journal ${path} holds no batch yet`, {
      hint: 'run `dnc batch INPUT.csv -o OUTPUT.csv --webhook-url URL` and wait until it has started',
    });
  }
  const { default: Database } = await import('better-sqlite3');
  // A second connection for listen's own queries; a short busy timeout keeps replies well inside 10 s.
  const db = new Database(path, { timeout: 2_000 });
  return new JournalPushStore(journal, meta, db, options);
}
