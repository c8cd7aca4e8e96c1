// "Never paying twice across machines": the batch's side of a team store's claims. Numbers are claimed before they
// are sent; one another machine is looking up is waited for, and its answer written into this journal as reused;
// the lookups this run sends are settled with their answers, for the others. The scheduler calls it; it never prints.
import type { BatchJournal, FinalAnswer } from '../journal/journal.js';
import { localAnswer, UNANSWERED_SEND } from '../journal/journal.js';
import type { NumberResult } from '../journal/types.js';
import type { ClaimAnswer, LookupClaims, Settlement, SharedAnswer } from './interfaces.js';

export interface GatedItem {
  id: number;
  e164: string;
  country: string;
}

/** A journal write for the scheduler's next commit. */
export type JournalWrite = (journal: BatchJournal) => void;

/** What a claim (or a poll of those waited for) says to do with each number. */
export interface GateSorting {
  /** Ours: send them. */
  send: GatedItem[];
  /** Answered by another machine's lookup (or found unanswered): these writes record it; nothing is sent. */
  answered: Array<[GatedItem, JournalWrite]>;
  /** Another machine is looking them up: wait for its answer. */
  waiting: GatedItem[];
  /** Let go by their claimant without a lookup: to be claimed again. */
  retry: GatedItem[];
}

/**
 * How long answers wait to be settled in the store: one transaction for all the answers of that span rather than one
 * per turn of the batch (a machine waiting for one of them asks every 200 ms).
 */
export const SETTLE_DELAY_MS = 50;

const RESULTS: readonly NumberResult[] = ['callable', 'do_not_call', 'invalid', 'unsupported_country', 'failed'];

/**
 * How another machine's answer came to this run: in the store already when this run asked (that lookup had finished),
 * waited for while that lookup was in flight, or stored by its `dnc listen` (a webhook lookup).
 */
type ReuseWay = 'finished' | 'in_flight' | 'pushed';

/** The row of a number another machine's lookup answered: its verdict, marked reused, no credits. */
function reusedAnswer(a: SharedAnswer, claimant: string | null, way: ReuseWay): FinalAnswer {
  const result = (RESULTS as readonly string[]).includes(a.result) ? (a.result as NumberResult) : 'failed';
  const by = `by another dnc of the team${claimant === null ? '' : ` (${claimant})`}`;
  const how =
    way === 'finished'
      ? `${by}, whose lookup had finished before this run asked: its answer was in the team store`
      : way === 'in_flight'
        ? `${by} that was looking the same number up at the same time: this run waited for its answer`
        : `${by}: its webhook lookup, stored by its dnc listen`;
  // Whose lookup it was is the row's correlation id (dnc_correlation_id): that lookup's, not a new one.
  const note = `reused: checked ${a.checkedAt ?? '(time not given)'} ${how}; no lookup sent, no credits`;
  return {
    result,
    doNotCall: a.doNotCall,
    listSource: a.listSource,
    checkedAt: a.checkedAt,
    correlationId: a.correlationId,
    errorCode: a.errorCode,
    error: a.error ? `${a.error} (${note})` : note,
    credits: 0,
    httpStatus: a.httpStatus,
    answer: a.body,
  };
}

/** What a journal row shares with the team once answered: the service's answer, never the credits. */
export function sharedAnswerOf(a: FinalAnswer): SharedAnswer {
  return {
    result: a.result,
    doNotCall: a.doNotCall,
    listSource: a.listSource,
    checkedAt: a.checkedAt,
    correlationId: a.correlationId,
    errorCode: a.errorCode,
    error: a.error,
    httpStatus: a.httpStatus,
    body: a.answer,
  };
}

export class TeamClaims {
  private settling: Array<[string, Settlement]> = [];
  private flushing: Promise<void> = Promise.resolve();
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly claims: LookupClaims,
    /** --resend-unanswered: a claim whose lease ran out (its claimant was killed) is taken and sent again. */
    private readonly takeOverExpired: boolean,
    private readonly now: () => Date,
    /** How long a colleague's verdict of a number of this country stands (its validity window), in ms. */
    private readonly windowMs: ((country: string) => number) | null = null,
  ) {}

  /** Claims the numbers (one statement) and sorts them. */
  async claim(items: readonly GatedItem[]): Promise<GateSorting> {
    const windowMs = this.windowMs;
    const fates = await this.claims.claim(
      items.map((i) => i.e164),
      this.takeOverExpired,
      windowMs ? items.map((i) => windowMs(i.country)) : undefined,
    );
    const out: GateSorting = { send: [], answered: [], waiting: [], retry: [] };
    for (const item of items) {
      const fate = fates.get(item.e164) ?? { kind: 'held', claimant: 'another machine' };
      if (fate.kind === 'claimed') out.send.push(item);
      else if (fate.kind === 'held') out.waiting.push(item);
      else this.sort(item, fate, out, 'finished');
    }
    return out;
  }

  /** Records the claimed numbers as sending, as their requests leave: returns those still this run's own. */
  async sending(items: readonly GatedItem[]): Promise<Set<number>> {
    const marked = await this.claims.sending(items.map((i) => i.e164));
    return new Set(items.filter((i) => marked.has(i.e164)).map((i) => i.id));
  }

  /** Lets go of what was claimed and never sent, and leaves the team (the heartbeat stops). */
  close(): Promise<void> {
    return this.claims.close();
  }

  /** What became of the lookups waited for: those still running stay waiting. */
  async poll(items: readonly GatedItem[]): Promise<GateSorting> {
    const answers = await this.claims.answers(items.map((i) => i.e164));
    const out: GateSorting = { send: [], answered: [], waiting: [], retry: [] };
    for (const item of items) {
      const a = answers.get(item.e164);
      if (a) this.sort(item, a, out, 'in_flight');
      else out.waiting.push(item);
    }
    return out;
  }

  /** `way`: found so when this run claimed the number (`finished`), or when it polled a claim it waited on. */
  private sort(item: GatedItem, a: ClaimAnswer, out: GateSorting, way: 'finished' | 'in_flight'): void {
    const at = this.now().toISOString();
    if (a.kind === 'released') out.retry.push(item);
    else if (a.kind === 'suppressed') {
      // An opt-out recorded while this batch runs is honoured before the send, as the list applied at its start is.
      const answer: FinalAnswer = {
        result: 'do_not_call',
        doNotCall: true,
        listSource: `internal:${a.list}`,
        checkedAt: at,
        correlationId: null,
        errorCode: null,
        error: `on the internal do-not-call list since ${a.addedAt ?? '(time not given)'}; not sent`,
        credits: 0,
        httpStatus: null,
        answer: null,
      };
      out.answered.push([item, (j) => j.recordFinal(item.id, answer)]);
    } else if (a.kind === 'answered') {
      const answer = reusedAnswer(a.answer, a.claimant, way);
      out.answered.push([
        item,
        (j) => {
          j.recordFinal(item.id, answer);
          j.markReused([item.id], at);
        },
      ]);
    } else if (a.kind === 'pending') {
      // The push goes to the claimant's listener: this row waits for the verdict it stores in the team store.
      const receipt = { status: 'started', correlation_id: a.correlationId, reused_from: a.claimant };
      out.answered.push([item, (j) => j.recordReceipt(item.id, a.correlationId, receipt, 0)]);
    } else {
      const text =
        `sent by another dnc of the team (${a.claimant}, at ${a.claimedAt}) that stopped before the answer came: ` +
        'it may have been charged; sent again only with --resend-unanswered';
      out.answered.push([item, (j) => j.recordFinal(item.id, localAnswer('failed', UNANSWERED_SEND, text))]);
    }
  }

  /**
   * Rows left pending on another machine's webhook lookup (they hold no credits of this batch): their verdicts, once
   * that machine's `dnc listen` stored them in the team store, are written here as reused. Returns how many.
   */
  async adoptPending(journal: BatchJournal): Promise<number> {
    const theirs = journal.pendingNumbers().filter((p) => p.correlationId !== null && p.creditsHeld === 0);
    if (theirs.length === 0) return 0;
    const found = await this.claims.byCorrelation(theirs.map((p) => p.correlationId!));
    const at = this.now().toISOString();
    let adopted = 0;
    journal.atomically(() => {
      for (const p of theirs) {
        const answer = found.get(p.correlationId!);
        const row = answer ? journal.verdict(p.e164) : undefined;
        if (!answer || !row) continue;
        journal.recordFinal(row.id, reusedAnswer(answer, null, 'pushed'));
        journal.markReused([row.id], at);
        adopted++;
      }
    });
    return adopted;
  }

  /** How a lookup this run claimed ended (written to the store with the next flush). */
  settle(e164: string, settlement: Settlement): void {
    this.settling.push([e164, settlement]);
  }

  /** Writes the settlements within SETTLE_DELAY_MS; `onError` hears of a failure (the store's: it stops the run). */
  flushSoon(onError: (err: unknown) => void): void {
    if (this.timer !== null || this.settling.length === 0) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.flush().catch(onError);
    }, SETTLE_DELAY_MS);
  }

  /** Writes the settlements so far, one after another (a failure is the store's: the caller stops the run). */
  flush(): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.settling.length === 0) return this.flushing;
    const batch = this.settling;
    this.settling = [];
    this.flushing = this.flushing.then(() => this.claims.settle(batch));
    return this.flushing;
  }
}
