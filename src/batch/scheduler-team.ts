// The batch scheduler's gate to a team store: each number claimed there before it is sent, and a number a colleague
// is looking up set aside until that answer lands (src/stores/team-claims.ts holds the claims).
import type { BatchJournal, StoppedReason } from '../journal/journal.js';
import type { Adoption, GateSorting, TeamClaims } from '../stores/team-claims.js';
import type { CreditBudget } from './budget.js';
import type { CommitQueue } from './commit-queue.js';
import { recordAdoption } from './team-adoption.js';

/** How often the answers of other machines' lookups are asked for while this run waits for them. */
const WAIT_POLL_MS = 200;
/** Numbers set aside for a colleague's answer asked for at most per poll. */
const POLL_MAX = 2_000;

export interface QueueItem {
  id: number;
  e164: string;
  country: string;
}

/** A number about to be sent: its credits held (the estimate), whether it goes in webhook mode. */
export type Starting = [item: QueueItem, estimate: number, webhook: boolean];

/** What the gate asks of the run it gates. */
export interface GateHost {
  readonly journal: BatchJournal;
  readonly queue: CommitQueue;
  readonly budget: CreditBudget;
  /** Lookups in flight; a number being claimed holds its place among them. */
  inFlight: number;
  readonly stopping: StoppedReason | null;
  readonly abandoned: boolean;
  /** Back at the head of this run's queue (claimed again later). */
  requeue(item: QueueItem): void;
  /** Commits the answers received and claims `ids` in flight in the journal; the ids claimed. */
  commit(ids: number[]): number[];
  send(item: QueueItem, estimate: number, webhook: boolean): void;
  schedulePump(): void;
  /** The team store failed: the run stops, with that as its fatal error. */
  stopForStore(err: unknown): void;
}

/**
 * With a team store, numbers are claimed there first (one statement per turn); until the claim answers, each holds
 * its place among those in flight. A number a colleague is looking up holds no place and no credits: it is set aside
 * (`waiting`), its answer asked for every WAIT_POLL_MS while this run goes on with other numbers, and adopted when it
 * lands. What the store says of a number let go meanwhile (the run stopping) is dropped.
 */
export class TeamGate {
  private readonly gated = new Map<number, { estimate: number; webhook: boolean }>();
  private readonly waiting = new Map<number, QueueItem>();
  private polling: ReturnType<typeof setInterval> | null = null;
  private pollBusy = false;

  constructor(
    private readonly team: TeamClaims,
    private readonly host: GateHost,
  ) {}

  /** Numbers set aside for a colleague's answer. */
  get waitingCount(): number {
    return this.waiting.size;
  }

  /**
   * Committed in flight in the journal first, then claimed `sending` in the store (one statement), then sent: a crash
   * at any point leaves the journal saying at least what the store says.
   */
  claimFirst(starting: readonly Starting[]): void {
    const { host } = this;
    const committed = new Set(host.commit(starting.map(([i]) => i.id)));
    const claiming = starting.filter(([item, estimate]) => {
      if (committed.has(item.id)) return true;
      host.budget.cancel(item.country, estimate);
      return false;
    });
    if (claiming.length === 0) return;
    for (const [item, estimate, webhook] of claiming) this.gated.set(item.id, { estimate, webhook });
    host.inFlight += claiming.length;
    this.team
      .claim(
        claiming.map(([item]) => item),
        true,
      )
      .then(
        (sorted) => {
          if (!host.abandoned) this.applyClaim(sorted);
        },
        (err: unknown) => {
          // Not claimed, not sent: back to the journal's queue for the rerun.
          for (const [item] of claiming) {
            const g = this.ungate(item);
            if (g) this.unsend(item, g.estimate);
          }
          host.stopForStore(err);
        },
      );
  }

  /** Colleagues' lookups no longer waited for: those numbers stay queued in the journal, for the rerun. */
  releaseWaiting(): void {
    this.waiting.clear();
    this.watch();
  }

  /** The run is over: no more polls. */
  close(): void {
    if (this.polling) clearInterval(this.polling);
  }

  private ungate(item: QueueItem) {
    const g = this.gated.get(item.id);
    if (!g) return null;
    this.gated.delete(item.id);
    this.host.inFlight--;
    return g;
  }

  private watch(): void {
    if (this.waiting.size > 0 && this.polling === null)
      // poll() never rejects: a failure of the store stops the run (stopForStore).
      this.polling = setInterval(() => void this.poll(), WAIT_POLL_MS);
    if (this.waiting.size === 0 && this.polling !== null) {
      clearInterval(this.polling);
      this.polling = null;
    }
  }

  private adopt(item: QueueItem, adoption: Adoption): void {
    this.host.queue.push(() => recordAdoption(this.host.journal, item.id, adoption));
    this.host.queue.countAnswer();
  }

  /** Back to the journal's queue: committed in flight, but not sent (its place among those in flight given up). */
  private unsend(item: QueueItem, estimate: number): void {
    this.host.budget.cancel(item.country, estimate);
    this.host.queue.push(() => this.host.journal.release(item.id));
  }

  /** Claimed `sending` in the store (and committed in flight in the journal before): sent. */
  private sendClaimed(ours: readonly Starting[]): void {
    this.host.inFlight += ours.length;
    for (const [item, estimate, webhook] of ours) this.host.send(item, estimate, webhook);
  }

  private applyClaim(r: GateSorting): void {
    const { host } = this;
    for (const [item, adoption] of r.answered) {
      const g = this.ungate(item);
      if (!g) continue;
      host.budget.settle(item.country, g.estimate, 0);
      this.adopt(item, adoption);
    }
    // Committed in flight before the claim, and not sent: back in the journal's queue.
    for (const item of r.retry) {
      const g = this.ungate(item);
      if (!g) continue;
      this.unsend(item, g.estimate);
      host.requeue(item);
    }
    for (const item of r.waiting) {
      const g = this.ungate(item);
      if (!g) continue;
      this.unsend(item, g.estimate);
      this.waiting.set(item.id, item);
    }
    const ours = r.send.flatMap((item): Starting[] => {
      const g = this.ungate(item);
      return g ? [[item, g.estimate, g.webhook]] : [];
    });
    if (host.stopping !== null) {
      // Stopped while the claim was made: claimed, but not sent after all.
      for (const [item, estimate] of ours) {
        this.unsend(item, estimate);
        this.team.settle(item.e164, { kind: 'released' });
      }
      this.releaseWaiting();
    } else this.sendClaimed(ours);
    this.watch();
    host.schedulePump();
  }

  private applyPoll(r: GateSorting): void {
    for (const [item, adoption] of r.answered) if (this.waiting.delete(item.id)) this.adopt(item, adoption);
    for (const item of r.retry) if (this.waiting.delete(item.id)) this.host.requeue(item);
    this.watch();
    this.host.schedulePump();
  }

  private async poll(): Promise<void> {
    if (this.pollBusy || this.waiting.size === 0) return;
    this.pollBusy = true;
    try {
      // The longest waited for first; a bounded statement however many numbers are set aside.
      const sorted = await this.team.poll([...this.waiting.values()].slice(0, POLL_MAX));
      if (!this.host.abandoned) this.applyPoll(sorted);
    } catch (err) {
      this.releaseWaiting();
      this.host.stopForStore(err);
    } finally {
      this.pollBusy = false;
    }
  }
}
