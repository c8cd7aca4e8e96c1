// The batch's journal as `dnc listen` uses it: pushes stored through the batch module, plus the queries listen alone
// needs.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import {
  BatchJournal,
  type BatchMeta,
  type IncomingPushRecord,
  journalPathFor,
  type PushVerdict,
} from '../journal/journal.js';
import { inputError } from '../errors.js';
import type { RenderReply } from './render-worker.js';
import type { ListenJournal, PendingLookup, PendingSummary } from './session.js';
import { openListenQueries, type ListenQueries } from '../journal/views.js';
import { proveJournal } from '../journal/proof.js';
import { journalAnchorIn } from '../stores/anchors.js';
import type { IncomingPush, RefusedPush, StoreOutcome } from './receiver-types.js';
import { renderBatchOutput } from '../results/render.js';
import { scrubRowsOf } from '../compliance/batch-compliance.js';

export interface OpenListenJournalOptions {
  now?: () => Date;
  /** The state folder, where the journal's chain head is anchored (none: the chain is checked against itself). */
  stateDir?: string | null;
  /** The time-zone database's version (the context's), for the calling columns' rules version. */
  tzdataVersion: string;
  /** Whether a `dnc batch` still holds this journal's lock (its numbers may not all be sent yet). */
  batchRunning?: () => boolean;
  /** Most overdue lookups listed per status (default 1000). */
  overdueLimit?: number;
  /** How long to wait for a just-created journal to hold its batch (default 10 s). */
  metaWaitMs?: number;
  /** Render in a worker thread when the compiled worker is there (default true); false renders in this thread. */
  renderInWorker?: boolean;
  /** Most orphan pushes (and their bytes) the journal keeps; beyond, pushes are answered 503 (the service retries). */
  maxOrphans?: number;
  maxOrphanBytes?: number;
  /** Most refused pushes kept as evidence (and their bytes); beyond, they are refused without being kept. */
  maxRefused?: number;
  maxRefusedBytes?: number;
  /** Clock skew allowed between the service and this machine (default 5 minutes). */
  skewMs?: number;
}

/**
 * An orphan is a push nobody asked for (or one faster than its receipt): 10,000 of them is far beyond any real batch.
 */
export const DEFAULT_MAX_ORPHANS = 10_000;
export const DEFAULT_MAX_ORPHAN_BYTES = 16 * 1024 * 1024;
export const DEFAULT_MAX_REFUSED = 10_000;
export const DEFAULT_MAX_REFUSED_BYTES = 16 * 1024 * 1024;

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

/** A push as the journal keeps it: the value read at the edge, and the evidence it came with. */
const recordOf = (p: IncomingPush | RefusedPush): IncomingPushRecord => ({
  raw: p.raw,
  result: p.result,
  receivedAt: p.receivedAt.toISOString(),
  correlationId: p.correlationId,
  headers: p.headers === undefined ? null : JSON.stringify(p.headers),
  peer: p.peer ?? null,
});

const toLookup = (r: PendingRow): PendingLookup => ({
  correlationId: r.correlation_id,
  phoneNumber: r.e164,
  country: r.country,
  receivedAt: new Date(r.updated_at),
});

export class JournalPushStore implements ListenJournal {
  private worker: Worker | undefined;
  private renderSeq = 0;

  constructor(
    readonly journal: BatchJournal,
    readonly meta: BatchMeta,
    private readonly q: ListenQueries,
    private readonly options: OpenListenJournalOptions,
  ) {
    const orphans = this.q.kept.get('orphan')!;
    const refused = this.q.kept.get('refused')!;
    this.kept = { orphans: orphans.n, orphanBytes: orphans.bytes, refused: refused.n, refusedBytes: refused.bytes };
  }

  /** Orphans and refused pushes in the journal, kept within their caps. */
  private kept: { orphans: number; orphanBytes: number; refused: number; refusedBytes: number };

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
    const outcomes = await this.commit(pushes.map((p) => ({ ...recordOf(p), serviceStatus: p.serviceStatus })));
    return outcomes.map((v) => {
      const outcome: StoreOutcome = { duplicate: v.outcome === 'duplicate', orphan: v.outcome === 'orphan' };
      if (v.outcome === 'conflict') outcome.conflict = true;
      if (v.outcome === 'over_capacity') outcome.overCapacity = true;
      if (v.outcome === 'refused') outcome.refused = v.reason ?? 'refused';
      return outcome;
    });
  }

  /**
   * Keeps a push the receiver refused as evidence (within the cap), committed and synced as a stored push is: it is
   * never applied. Throws when it cannot be kept (the receiver then answers 503, and the service sends it again).
   */
  async keepRefused(push: RefusedPush): Promise<void> {
    await this.commit([{ ...recordOf(push), refusedReason: push.refusedReason }]);
  }

  /**
   * Stores records in one transaction within the caps on orphans and refused pushes, run again while `dnc batch`
   * holds the write lock a moment, then syncs the log: durable when it resolves.
   */
  private async commit(records: IncomingPushRecord[]): Promise<PushVerdict[]> {
    let outcomes;
    for (let attempt = 1; ; attempt++) {
      // Counted per attempt: a rolled-back transaction kept nothing.
      const added = { orphans: 0, orphanBytes: 0, refused: 0, refusedBytes: 0 };
      const o = this.options;
      try {
        outcomes = this.journal.pushes.store(records, {
          skewMs: o.skewMs,
          admitOrphan: (bytes) => {
            if (this.kept.orphans + added.orphans + 1 > (o.maxOrphans ?? DEFAULT_MAX_ORPHANS)) return false;
            if (this.kept.orphanBytes + added.orphanBytes + bytes > (o.maxOrphanBytes ?? DEFAULT_MAX_ORPHAN_BYTES))
              return false;
            added.orphans++;
            added.orphanBytes += bytes;
            return true;
          },
          admitRefused: (bytes) => {
            if (this.kept.refused + added.refused + 1 > (o.maxRefused ?? DEFAULT_MAX_REFUSED)) return false;
            if (this.kept.refusedBytes + added.refusedBytes + bytes > (o.maxRefusedBytes ?? DEFAULT_MAX_REFUSED_BYTES))
              return false;
            added.refused++;
            added.refusedBytes += bytes;
            return true;
          },
        });
        this.kept.orphans += added.orphans;
        this.kept.orphanBytes += added.orphanBytes;
        this.kept.refused += added.refused;
        this.kept.refusedBytes += added.refusedBytes;
        break;
      } catch (err) {
        // pushes.store opens a deferred transaction that reads first: when `dnc batch` commits in between,
        // SQLite refuses the upgrade to a write at once ("database is locked", no busy wait). The
        // transaction was rolled back, so it is simply run again; only a lasting lock gets a 503.
        if (!isBusy(err) || attempt >= BUSY_RETRIES) throw err;
        await new Promise((resolve) => setTimeout(resolve, 2 * attempt));
      }
    }
    await this.journal.log.sync();
    return outcomes;
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
      const verdict = this.journal.pushes.applyKept(row.push_id, row.outcome, row.correlation_id, row.body, {
        skewMs: this.options.skewMs,
      });
      if (!verdict || verdict.outcome === 'refused') continue;
      if (row.outcome === 'orphan') {
        this.kept.orphans--;
        this.kept.orphanBytes -= row.body.length;
      }
      applied.push(row.correlation_id);
    }
    // A rerun may have made numbers unanswered_send since: kept do_not_call pushes about them are adopted.
    const adopted = this.journal.pushes.adoptKeptOrphans(this.options.skewMs);
    if (adopted.length > 0) {
      this.kept.orphans -= adopted.length;
      applied.push(...adopted);
    }
    if (applied.length > 0) this.journal.log.syncNow();
    return applied;
  }

  /**
   * Rewrites OUTPUT.csv (temp file + rename, by the batch module). Rendering re-reads and
   * normalises every input row, tens of milliseconds per thousand rows of CPU: in a worker thread
   * that time never delays an acknowledgement.
   */
  async render(): Promise<Record<string, number>> {
    if (this.options.renderInWorker === false || !existsSync(WORKER_FILE)) {
      // Loaded only here: rendering pulls in libphonenumber's metadata, which the listener thread otherwise never
      // needs.
      // A connection of its own, as the worker has: the render holds a read snapshot, and pushes stored through
      // this.journal meanwhile must commit at once, not join it.
      const own = await BatchJournal.open(this.journal.path, { create: false });
      try {
        return (await renderBatchOutput(own, { scrubRows: scrubRowsOf, tzdataVersion: this.options.tzdataVersion }))
          .byResult;
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
    const worker = new Worker(WORKER_FILE, {
      workerData: { journalPath: this.journal.path, tzdataVersion: this.options.tzdataVersion },
    });
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
    this.q.close();
    this.journal.close();
  }
}

/**
 * Opens the journal of the batch whose output is `resultsPath`. Refuses a missing journal
 * (E_JOURNAL_MISSING, from the batch module) and one that holds no batch yet.
 */
export async function openListenJournal(
  resultsPath: string,
  options: OpenListenJournalOptions,
): Promise<JournalPushStore> {
  const path = journalPathFor(resultsPath);
  const now = options.now ?? (() => new Date());
  const anchor = await journalAnchorIn(options.stateDir ?? null, path, now);
  const journal = await BatchJournal.open(path, { create: false, anchor }, now);
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
  try {
    // Before the outputs are rebuilt at start, or a push is stored: an altered journal is refused (the batch's
    // --accept-unproven-journal is the only acceptance of an unproven one).
    proveJournal(journal, false);
  } catch (err) {
    journal.close();
    throw err;
  }
  return new JournalPushStore(journal, meta, openListenQueries(path), options);
}
