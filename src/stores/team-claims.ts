// "Never paying twice across machines": the batch's side of a team store's claims. Numbers are claimed before they
// are sent; one another machine is looking up is waited for, and its answer written into this journal as reused;
// the lookups this run sends are settled with their answers, for the others. The scheduler calls it; it never prints,
// and never writes the journal: it says what to record (an Adoption), and the batch code records it.
import type { FinalAnswer } from '../journal/journal.js';
import { localAnswer, UNANSWERED_SEND } from '../journal/journal.js';
import type { NumberResult } from '../journal/types.js';
import { COLLEAGUE_UNANSWERED_TEXT } from '../journal/schema.js';
import {
  memberName,
  type CachedVerdict,
  type ClaimAnswer,
  type LookupClaims,
  type Settlement,
  type SharedAnswer,
} from './interfaces.js';

export interface GatedItem {
  id: number;
  e164: string;
  country: string;
}

/**
 * What the journal records of a number this run did not look up: a final answer (`reused`: another machine's verdict,
 * marked reused at `at`), or the receipt of a colleague's webhook lookup whose push is still to come.
 */
export type Adoption =
  | { kind: 'final'; answer: FinalAnswer; reused: boolean; at: string }
  | { kind: 'receipt'; correlationId: string; receipt: Record<string, unknown> };

/** What a claim (or a poll of those waited for) says to do with each number. */
export interface GateSorting {
  /** Ours: send them. */
  send: GatedItem[];
  /** Answered by another machine's lookup (or found unanswered): what to record; nothing is sent. */
  answered: Array<[GatedItem, Adoption]>;
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
    private readonly windowMs: ((country: string) => number | null) | null = null,
  ) {}

  /** Who this run is, as its claims name it. */
  get claimant(): string {
    return this.claims.claimant;
  }

  /** How long a colleague's verdict of a number of `country` stands for this run (ms); null: one of this run only. */
  windowOf(country: string): number | null {
    return this.windowMs ? this.windowMs(country) : null;
  }

  /**
   * Claims the numbers (one statement) and sorts them. `sendNow`: the requests of those claimed leave as soon as this
   * answers (they are claimed `sending`, and `sending()` is not called for them).
   */
  async claim(items: readonly GatedItem[], sendNow = false): Promise<GateSorting> {
    const windowMs = this.windowMs;
    const fates = await this.claims.claim(
      items.map((i) => i.e164),
      this.takeOverExpired,
      windowMs ? items.map((i) => windowMs(i.country)) : undefined,
      sendNow,
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

  /** Verdicts an earlier run of this batch received but could not settle: settled now (see LookupClaims). */
  settleEarlier(verdicts: readonly CachedVerdict[]): Promise<number> {
    return this.claims.settleEarlier(verdicts);
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
    // --resend-unanswered: a send no one answered (its claimant died while this run waited) is claimed again, and
    // taken over by that claim; anything a colleague answered since comes back from the store instead.
    if (a.kind === 'released' || (a.kind === 'unanswered' && this.takeOverExpired)) out.retry.push(item);
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
      out.answered.push([item, { kind: 'final', answer, reused: false, at }]);
    } else if (a.kind === 'answered') {
      out.answered.push([
        item,
        { kind: 'final', answer: reusedAnswer(a.answer, memberName(a), way), reused: true, at },
      ]);
    } else if (a.kind === 'pending') {
      // The push goes to the claimant's listener: this row waits for the verdict it stores in the team store.
      const receipt = { status: 'started', correlation_id: a.correlationId, reused_from: memberName(a) };
      out.answered.push([item, { kind: 'receipt', correlationId: a.correlationId, receipt }]);
    } else {
      const text =
        `${COLLEAGUE_UNANSWERED_TEXT} (${memberName(a)}, at ${a.claimedAt}) that stopped before the answer came: ` +
        'it may have been charged; sent again only with --resend-unanswered';
      const answer = localAnswer('failed', UNANSWERED_SEND, text);
      out.answered.push([item, { kind: 'final', answer, reused: false, at }]);
    }
  }

  /**
   * Verdicts of other machines' webhook lookups (by correlation id) that their `dnc listen` stored in the team store
   * since: each as the row to record, marked reused at `at`. Those still awaited are left out.
   */
  async pushedVerdicts(correlationIds: readonly string[]): Promise<Map<string, Adoption>> {
    if (correlationIds.length === 0) return new Map();
    const found = await this.claims.byCorrelation(correlationIds);
    const at = this.now().toISOString();
    const out = new Map<string, Adoption>();
    for (const [id, answer] of found)
      out.set(id, { kind: 'final', answer: reusedAnswer(answer, null, 'pushed'), reused: true, at });
    return out;
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
