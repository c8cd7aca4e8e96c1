// One `dnc listen` run: the receiver, the batch's journal, throttled renders of OUTPUT.csv, status, lost lookups,
// shutdown.
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { createReceiver, type Receiver } from './receiver.js';
import type { ListeningAddress, PushStore, ReceiverEvents, ReceiverOptions } from './receiver-types.js';

/** Section 8: a lookup expires 24 hours after its receipt; its lookup_expired push is due then. */
export const LOOKUP_EXPIRY_MS = 24 * 60 * 60 * 1000;

/** A webhook-mode lookup of the batch that has a receipt and no result yet. */
export interface PendingLookup {
  correlationId: string;
  phoneNumber: string;
  country: string;
  /** When the batch got the 202 receipt. */
  receivedAt: Date;
}

export interface PendingSummary {
  /** Lookups with a receipt and no result. */
  pending: number;
  /** Numbers the batch has not finished sending (it may still be running): not done while any remain. */
  unsent: number;
  oldest: PendingLookup | null;
  /** Pending lookups whose receipt is older than the cutoff given, oldest first. */
  overdue: PendingLookup[];
  /** A `dnc batch` is running on the journal (its lock held by a live process). */
  batchRunning?: boolean;
}

/** What the session needs from the batch's journal: storing pushes, reading what is still pending, rendering. */
export interface ListenJournal extends PushStore {
  pendingSummary(overdueBefore: Date): PendingSummary;
  /** Rewrites OUTPUT.csv from the input and the journal, atomically; returns its rows by dnc_result. */
  render(): Promise<Record<string, number>>;
  /** Applies pushes kept as orphans whose lookup has since become pending; returns their correlation ids. */
  reconcileOrphans?(): string[];
  close(): void;
}

export interface ListenStatus {
  received: number;
  stored: number;
  duplicates: number;
  /** Pushes kept as orphans when they arrived (in this run). */
  orphans: number;
  /** Orphans (of any run) applied once the batch had recorded their receipt: a push faster than its receipt. */
  reconciled: number;
  /** Correlation ids that received two different verdicts (the numbers are failed: conflicting_pushes). */
  conflicts: number;
  rejected: number;
  storeFailures: number;
  /** Orphans answered 503 because the journal already keeps as many as it may. */
  overCapacity: number;
  pending: number;
  unsent: number;
  oldest: (PendingLookup & { deadline: Date }) | null;
  /** Pending lookups past receipt + 24 h without a push. */
  lost: number;
  renders: number;
  uptimeMs: number;
}

export interface RenderedEvent {
  durationMs: number;
  final: boolean;
  /** Rows of OUTPUT.csv by dnc_result, as just written. */
  byResult: Record<string, number>;
}

export interface ListenEvents extends ReceiverEvents {
  status: [ListenStatus];
  /** Lookups newly found past their 24 h deadline with no push (reported once each). */
  lost: [PendingLookup[]];
  rendered: [RenderedEvent];
  /** Orphan pushes applied after their receipt was recorded. */
  reconciled: [string[]];
  'render-failed': [{ error: Error; final: boolean }];
  /** --exit-when-done: nothing is pending any more. */
  done: [ListenStatus];
}

export interface ListenSessionOptions {
  journal: ListenJournal;
  receiver: Omit<ReceiverOptions, 'store' | 'now'>;
  exitWhenDone?: boolean;
  now?: () => Date;
  /** Least time between two renders while pushes arrive (default 1000 ms). */
  renderIntervalMs?: number;
  /** How often status is computed and emitted (default 1000 ms). */
  statusIntervalMs?: number;
  expiryMs?: number;
}

export class ListenSession extends EventEmitter<ListenEvents> {
  readonly receiver: Receiver;
  private readonly journal: ListenJournal;
  private readonly now: () => Date;
  private readonly renderInterval: number;
  private readonly statusInterval: number;
  private readonly expiryMs: number;
  private readonly exitWhenDone: boolean;
  private readonly lostSeen = new Set<string>();
  private dirty = false;
  private batchWasRunning = false;
  private rendering: Promise<void> | undefined;
  private lastRenderAt = -Infinity;
  private lastRenderMs = 0;
  private renders = 0;
  private reconciled = 0;
  private renderTimer: NodeJS.Timeout | undefined;
  private statusTimer: NodeJS.Timeout | undefined;
  private readonly startedAt = performance.now();
  private lastStatus: ListenStatus | undefined;
  /** Why the latest render failed; null once one succeeds. Set after stop() when the final render failed. */
  renderError: Error | null = null;
  private stopped: Promise<ListenStatus> | undefined;
  private doneResolve!: (status: ListenStatus) => void;
  /** Resolves once nothing is pending (only with exitWhenDone). */
  readonly done: Promise<ListenStatus>;

  constructor(options: ListenSessionOptions) {
    super();
    this.journal = options.journal;
    this.now = options.now ?? (() => new Date());
    this.renderInterval = options.renderIntervalMs ?? 1_000;
    this.statusInterval = options.statusIntervalMs ?? 1_000;
    this.expiryMs = options.expiryMs ?? LOOKUP_EXPIRY_MS;
    this.exitWhenDone = options.exitWhenDone ?? false;
    this.done = new Promise((resolve) => (this.doneResolve = resolve));
    this.receiver = createReceiver({ ...options.receiver, store: this.journal, now: this.now });
    this.receiver.on('push', (e) => {
      if (!e.duplicate && !e.orphan) this.markDirty();
      this.emit('push', e);
    });
    this.receiver.on('rejected', (e) => this.emit('rejected', e));
    this.receiver.on('store-failed', (e) => this.emit('store-failed', e));
    this.receiver.on('client-error', (e) => this.emit('client-error', e));
  }

  /** Listens, emits a first status (and the lost lookups already known), then keeps status fresh. */
  async start(): Promise<ListeningAddress> {
    const address = await this.receiver.listen();
    // OUTPUT.csv may be behind the journal (a listener killed between storing pushes and rendering):
    // it is written once at start, and --exit-when-done waits for that.
    this.markDirty();
    // The first status follows whatever the caller prints about the address.
    setImmediate(() => this.tick());
    this.statusTimer = setInterval(() => this.tick(), this.statusInterval);
    return address;
  }

  /** The latest status (computed now). */
  status(): ListenStatus {
    const now = this.now();
    const summary = this.journal.pendingSummary(new Date(now.getTime() - this.expiryMs));
    // The batch has ended: its own final render may have raced one of ours and lost to an older snapshot;
    // one more render from the final journal settles the file.
    if (this.batchWasRunning && summary.batchRunning === false) this.markDirty();
    this.batchWasRunning = summary.batchRunning === true;
    const fresh = summary.overdue.filter((l) => !this.lostSeen.has(l.correlationId));
    for (const l of fresh) this.lostSeen.add(l.correlationId);
    if (fresh.length > 0) this.emit('lost', fresh);
    const s = this.receiver.stats;
    const status: ListenStatus = {
      received: s.received,
      stored: s.stored,
      duplicates: s.duplicates,
      orphans: s.orphans,
      reconciled: this.reconciled,
      conflicts: s.conflicts,
      rejected: s.rejected,
      storeFailures: s.storeFailures,
      overCapacity: s.overCapacity,
      pending: summary.pending,
      unsent: summary.unsent,
      oldest: summary.oldest && {
        ...summary.oldest,
        deadline: new Date(summary.oldest.receivedAt.getTime() + this.expiryMs),
      },
      lost: summary.overdue.length,
      renders: this.renders,
      uptimeMs: performance.now() - this.startedAt,
    };
    this.lastStatus = status;
    return status;
  }

  /**
   * Closes cleanly: stops accepting, lets in-flight pushes be stored and answered, renders a last
   * time if anything changed, closes the journal. Safe to call more than once.
   */
  stop(options: { force?: boolean } = {}): Promise<ListenStatus> {
    // Already stopping (a first Ctrl-C): a forced stop cuts the connections that close() is still waiting for.
    if (this.stopped && options.force) this.receiver.cutConnections();
    this.stopped ??= (async () => {
      clearInterval(this.statusTimer);
      clearTimeout(this.renderTimer);
      await this.receiver.close(options);
      if (this.rendering) await this.rendering;
      if (this.dirty) await this.render(true);
      let final: ListenStatus;
      try {
        final = this.status();
      } finally {
        this.journal.close();
      }
      return final;
    })();
    return this.stopped;
  }

  /** The journal was written from outside the receiver (verdicts adopted from a team store): render it again. */
  refresh(): void {
    if (!this.stopped) this.markDirty();
  }

  private tick(): void {
    if (this.stopped) return;
    let status: ListenStatus;
    try {
      // An orphan can only become known while a batch still records receipts; the query scans the
      // pushes, so it runs once at start, then only while a batch is running or orphans came in this run.
      const orphansMayResolve =
        this.lastStatus === undefined || this.lastStatus.unsent > 0 || this.receiver.stats.orphans > this.reconciled;
      const applied = orphansMayResolve ? (this.journal.reconcileOrphans?.() ?? []) : [];
      if (applied.length > 0) {
        this.reconciled += applied.length;
        this.emit('reconciled', applied);
        this.markDirty();
      }
      status = this.status();
    } catch (err) {
      // A busy journal (batch committing) must not end the session; the next tick reads again.
      this.emit('store-failed', {
        count: 0,
        correlationIds: [],
        error: err instanceof Error ? err : new Error(String(err)),
      });
      return;
    }
    this.emit('status', status);
    // Done does not wait for a render that keeps failing: stop() renders once more and reports it.
    if (
      this.exitWhenDone &&
      status.pending === 0 &&
      status.unsent === 0 &&
      !this.rendering &&
      (!this.dirty || this.renderError)
    ) {
      this.doneResolve(status);
      this.emit('done', status);
    }
  }

  private markDirty(): void {
    this.dirty = true;
    if (this.renderTimer || this.rendering || this.stopped) return;
    // About once a second; less often when a render itself takes long (a large call list on a busy machine),
    // so rewriting the file never takes more than a third of the time.
    const interval = Math.max(this.renderInterval, 3 * this.lastRenderMs);
    const wait = Math.max(0, this.lastRenderAt + interval - performance.now());
    this.renderTimer = setTimeout(() => {
      this.renderTimer = undefined;
      void this.render(false);
    }, wait);
  }

  private async render(final: boolean): Promise<void> {
    this.dirty = false;
    const started = performance.now();
    this.lastRenderAt = started;
    const run = this.journal.render();
    this.rendering = run.then(
      (byResult) => {
        this.renders++;
        this.lastRenderMs = performance.now() - started;
        this.renderError = null;
        this.emit('rendered', { durationMs: performance.now() - started, final, byResult });
      },
      (err: unknown) => {
        this.dirty = true;
        this.renderError = err instanceof Error ? err : new Error(String(err));
        this.emit('render-failed', { error: this.renderError, final });
      },
    );
    await this.rendering;
    this.rendering = undefined;
    // Pushes that came in while rendering are written by the next render, no sooner than the interval.
    if (this.dirty && !this.stopped) this.markDirty();
    // Done is judged right after every render, failed ones too: renders and status ticks both come once a second,
    // and a tick that keeps landing on a render in progress (a slow machine) would otherwise never see it done.
    if (this.exitWhenDone && !final && !this.stopped) this.tick();
  }
}

export function createListenSession(options: ListenSessionOptions): ListenSession {
  return new ListenSession(options);
}
