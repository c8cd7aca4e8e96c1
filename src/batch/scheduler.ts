// The batch scheduler: sends the journal's queued numbers, concurrency-limited and within budget, and journals each
// answer.
import { WEBHOOK_ONLY_COUNTRIES } from '../wire/types.js';
import { EventEmitter } from 'node:events';
import { DncError, isDncError } from '../errors.js';
import { type Judgement } from '../service/answers.js';
import { type LookupOutcome, NOT_SENT_CODES, type ServiceClient } from '../service/client.js';
import { CreditBudget } from './budget.js';
import { CommitQueue } from './commit-queue.js';
import {
  localAnswer,
  UNANSWERED_SEND,
  SENT_WITHOUT_ANSWER_TEXT,
  type BatchJournal,
  type FinalAnswer,
  type StoppedReason,
  type SummaryCounts,
} from '../journal/journal.js';
import { formatInteger } from '../text/numbers.js';
import { unsupportedCountryText } from '../service/refusals.js';
import { sharedAnswerOf, type TeamClaims } from '../stores/team-claims.js';
import type { IncomingNumbers, SchedulerOutcome, SchedulerProgress } from './scheduler-types.js';
import { TeamGate, type GateHost, type QueueItem, type Starting } from './scheduler-team.js';

export type { IncomingNumbers, SchedulerOutcome, SchedulerProgress } from './scheduler-types.js';

export interface SchedulerOptions {
  journal: BatchJournal;
  client: Pick<ServiceClient, 'lookup'>;
  /** Lookups in flight at most (the client's connection pool is sized to it). */
  concurrency: number;
  /** --max-credits: credits the whole batch (every run of this journal) may use; null for no budget. */
  maxCredits: number | null;
  /** --webhook-url; none by default (a webhook-only country's numbers are then answered here, not sent). */
  webhookUrl?: string | null;
  /** --webhook-all: every lookup in webhook mode, not only the webhook-only countries. */
  webhookAll?: boolean;
  /** The countries the service answers only by webhook (by default the interface's, WEBHOOK_ONLY_COUNTRIES). */
  webhookOnlyCountries?: readonly string[];
  /**
   * Credits per lookup seen earlier for this service (the user's cost cache). A hint, not a fact: the price may
   * have changed since, so a country known only from it is still probed alone, at no less than its hint.
   */
  knownCosts?: ReadonlyMap<string, number>;
  /** Numbers still arriving (the input is being read while lookups run); without it, the queue is complete. */
  incoming?: IncomingNumbers;
  /** A team store's claims: each number claimed before it is sent, another machine's lookup waited for. */
  team?: TeamClaims | null;
}

/** A failure of the team store as the run's fatal error (a typed one as it is; anything else said as such). */
function storeFailure(err: unknown): DncError {
  return isDncError(err)
    ? err
    : new DncError('E_STORE_UNAVAILABLE', `the team store failed: ${(err as Error)?.message ?? String(err)}`);
}

export declare interface BatchScheduler {
  on(event: 'progress', listener: (p: SchedulerProgress) => void): this;
  /** Once, when nothing more will be sent (the list is all sent, or the run is stopping): only answers are awaited. */
  on(event: 'drained', listener: () => void): this;
}

/**
 * Runs the lookups of one batch. Every number is claimed (committed in flight) before its request is
 * sent and its answer is committed as it arrives, so a crash at any moment leaves a journal a rerun completes.
 * One scheduler runs once: run() sets up the run's state below, then pump() sends as answers make room.
 */
export class BatchScheduler extends EventEmitter {
  private stopping: StoppedReason | null = null;
  private fatal: DncError | null = null;
  private abandoned = false;
  /** Ends the run (resolves run()); null before it starts and once it has ended. */
  private resolveRun: ((outcome: SchedulerOutcome) => void) | null = null;

  // The run's state, set by run().
  private begun = false;
  private started = 0;
  private resent = 0;
  private before!: SummaryCounts;
  /** Numbers this run will look up (the guard's and --json credit_estimate's), growing while the input is read. */
  private total = 0;
  /** Countries this run does not send to (webhook-only without a webhook URL, not covered) when it began. */
  private excluded!: ReadonlySet<string>;
  private notSentLastId = 0;
  /** Countries a 422 named: their numbers are refused locally, uncharged (the full list is not shown, 1). */
  private unsupported!: Set<string>;
  private supportedList: readonly string[] = [];
  private budget!: CreditBudget;
  private inFlight = 0;
  private sent = 0;
  /** The journal's queue, read a page at a time after `cursor`; `exhausted` once read to its end. */
  private cursor = 0;
  private buffer: QueueItem[] = [];
  private exhausted = false;
  /**
   * Answers wait here for the next commit, which also claims the next numbers: one transaction per turn of the
   * event loop however many answers arrived in it. An answer counts (answered) only once committed.
   */
  private queue!: CommitQueue;
  private scheduled = false;
  private drained = false;
  private team: TeamClaims | null = null;
  private gate: TeamGate | null = null;

  private readonly options: Required<Pick<SchedulerOptions, 'webhookUrl' | 'webhookAll' | 'webhookOnlyCountries'>> &
    SchedulerOptions;

  constructor(
    options: SchedulerOptions,
    private readonly clock: () => number = () => performance.now(),
  ) {
    super();
    this.options = { webhookUrl: null, webhookAll: false, webhookOnlyCountries: WEBHOOK_ONLY_COUNTRIES, ...options };
  }

  /** Stops starting lookups; those in flight finish and are journaled. */
  stop(reason: StoppedReason): void {
    this.stopping ??= reason;
    if (this.stopping === reason && this.resolveRun) this.pump();
  }

  /**
   * Stops waiting: answers received are committed, run() resolves at once; later answers are dropped (those numbers
   * stay in flight).
   */
  abandon(): void {
    this.stopping ??= 'interrupted';
    if (this.begun) this.commit([]);
    this.abandoned = true;
    this.finish();
  }

  async run(): Promise<SchedulerOutcome> {
    const { journal } = this.options;
    this.team = this.options.team ?? null;
    this.started = this.clock();
    // The batch use case settles an earlier run's unanswered sends before this (src/batch/stages/read.ts: they are
    // sent again only with --resend-unanswered); a scheduler given a journal with numbers still in flight sends them.
    this.resent = journal.requeueInFlight();
    this.before = journal.summaryCounts();
    // The numbers this run will look up: not those of a country it does not send to, answered here uncounted.
    const { webhookUrl, webhookOnlyCountries } = this.options;
    this.excluded = new Set([...journal.unsupportedCountries(), ...(webhookUrl ? [] : webhookOnlyCountries)]);
    const notSent = journal.sends.queuedOf([...this.excluded]);
    this.notSentLastId = notSent.lastId;
    this.total = this.before.queued - notSent.numbers;
    this.unsupported = new Set(journal.unsupportedCountries());
    this.supportedList = journal.supportedCountries() ?? [];
    // Costs this batch has seen (X-Credit-Cost of its own answers) and older ones, hints from the cost cache. Sends of
    // earlier runs whose answers were lost may have been charged: the budget counts them as spent.
    const { maxCredits } = this.options;
    const unseen = maxCredits !== null ? journal.unseenSends() : new Map<string, number>();
    const hints = this.options.knownCosts ?? new Map<string, number>();
    this.budget = new CreditBudget(maxCredits, this.before.credits, journal.learnedCosts(), hints, unseen);
    this.queue = new CommitQueue(journal);
    this.begun = true;
    this.options.incoming?.subscribe((added) => {
      this.total += added;
      // Waiting for numbers (or for the end of reading to finish the run): look again.
      if (this.buffer.length === 0) this.schedulePump();
    });
    if (this.team) this.gate = new TeamGate(this.team, this.gateHost());
    return new Promise<SchedulerOutcome>((resolve) => {
      this.resolveRun = resolve;
      this.pump();
    });
  }

  /** Sends what the concurrency and the budget allow, then says how far the run is (and ends it when it is over). */
  private pump(): void {
    const { gate } = this;
    // Stopping: another machine's lookups are no longer waited for (those numbers stay queued for the rerun).
    if (this.stopping !== null && gate && gate.waitingCount > 0) gate.releaseWaiting();
    const starting: Starting[] = [];
    while (this.stopping === null && this.inFlight + starting.length < this.options.concurrency) {
      const item = this.peek();
      if (!item) break;
      if (this.answeredHere(item)) continue;
      const webhook = this.options.webhookAll || this.options.webhookOnlyCountries.includes(item.country);
      const admission = this.budget.admit(item.country, this.inFlight + starting.length > 0);
      if (admission.kind === 'wait') break;
      if (admission.kind === 'stop') {
        this.stopping = 'budget_reached';
        break;
      }
      this.buffer.shift();
      starting.push([item, admission.estimate, webhook]);
    }
    if (gate && starting.length > 0) gate.claimFirst(starting);
    else this.sendNow(starting);
    this.progress();
    this.team?.flushSoon(this.stopForStore);
    const waiting = gate?.waitingCount ?? 0;
    const over = this.stopping !== null || (this.buffer.length === 0 && this.exhausted && waiting === 0);
    if (!this.drained && over) {
      this.drained = true;
      this.emit('drained');
    }
    if (this.inFlight === 0 && over) this.finish();
  }

  /** The next number to send, read from the journal a page at a time; undefined when none is there (yet). */
  private peek(): QueueItem | undefined {
    if (this.buffer.length === 0 && !this.exhausted) {
      // Read before the query: numbers committed after it would otherwise be missed for good.
      const more = this.options.incoming?.reading === true;
      this.buffer = this.options.journal.nextQueued(this.cursor, 1000);
      if (this.buffer.length > 0) this.cursor = this.buffer[this.buffer.length - 1]!.id;
      else if (!more) this.exhausted = true;
    }
    return this.buffer[0];
  }

  /**
   * A number this run answers without a lookup, taken off the queue: its country is not covered, or webhook-only
   * without a webhook URL.
   */
  private answeredHere(item: QueueItem): boolean {
    const { journal, webhookUrl, webhookAll, webhookOnlyCountries } = this.options;
    let answer: FinalAnswer;
    if (this.unsupported.has(item.country)) {
      const text = unsupportedCountryText(item.country, this.supportedList);
      answer = localAnswer('unsupported_country', 'unsupported_country', text);
    } else if (!webhookUrl && (webhookAll || webhookOnlyCountries.includes(item.country))) {
      const text = `${item.country} lookups are webhook-only: pass --webhook-url and run \`dnc listen\``;
      answer = localAnswer('not_checked', 'webhook_required', text);
    } else return false;
    this.buffer.shift();
    this.queue.push(() => journal.recordFinal(item.id, answer));
    // Out of the run's count, unless it was left out of it at the start.
    if (item.id > this.notSentLastId || !this.excluded.has(item.country)) this.total--;
    return true;
  }

  private progress(): void {
    this.emit('progress', {
      answered: this.queue.answered,
      total: this.total,
      inFlight: this.inFlight,
      credits: this.budget.spent,
      sent: this.sent,
      reading: this.options.incoming?.reading === true,
    } satisfies SchedulerProgress);
  }

  private schedulePump(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (this.resolveRun) this.pump();
    });
  }

  /** Commits the answers received and claims `ids` (in flight) in one transaction; returns the ids claimed. */
  private commit(ids: number[]): number[] {
    const claimed = this.queue.commit(ids);
    // A failed commit (rolled back) ends the run: nothing more is sent. Thrown from a timer, it would end the
    // process with a stack trace. Answers received meanwhile stay in flight and are sent again, and reported.
    // Lookups in flight when the write failed still answer; their commits fail too and count as unstored.
    if (this.queue.failure) this.stopping ??= 'interrupted';
    return claimed;
  }

  /** Commits the claims of `starting` in the journal (in flight) and sends those claimed. */
  private sendNow(starting: readonly Starting[]): void {
    const claimed = new Set(this.commit(starting.map(([i]) => i.id)));
    for (const [item, estimate, webhook] of starting) {
      if (!claimed.has(item.id)) {
        this.budget.cancel(item.country, estimate);
        this.team?.settle(item.e164, { kind: 'released' });
        continue;
      }
      this.inFlight++;
      this.send(item, estimate, webhook);
    }
  }

  private send(item: QueueItem, estimate: number, webhook: boolean): void {
    this.sent++;
    const webhookUrl = webhook ? (this.options.webhookUrl ?? undefined) : undefined;
    this.options.client.lookup({ phoneNumber: item.e164, webhookUrl }).then(
      (outcome) => {
        if (this.abandoned) return;
        this.onOutcome(item, estimate, outcome);
        this.schedulePump();
      },
      (err: unknown) => {
        if (this.abandoned) return;
        this.onError(item, estimate, err);
        this.schedulePump();
      },
    );
  }

  /** A lookup is over; `answered`: its answer is among the writes (counted once committed). */
  private settle(item: QueueItem, estimate: number, credits: number, answered = true): void {
    this.inFlight--;
    this.budget.settle(item.country, estimate, credits);
    if (answered) this.queue.countAnswer();
  }

  /** The journal's record of a judged answer; credits it does not give believably count at the country's cost. */
  private answerOf(item: QueueItem, verdict: Judgement, outcome: LookupOutcome): FinalAnswer {
    return {
      result: verdict.result,
      doNotCall: verdict.doNotCall,
      listSource: verdict.listSource,
      checkedAt: verdict.checkedAt,
      correlationId: verdict.correlationId,
      errorCode: verdict.errorCode,
      error: verdict.error,
      credits: verdict.charged === false ? 0 : (verdict.credits ?? this.budget.costOf(item.country)),
      httpStatus: outcome.meta.status,
      answer: outcome.text ?? (outcome.raw === undefined ? null : JSON.stringify(outcome.raw)),
    };
  }

  private onOutcome(item: QueueItem, estimate: number, outcome: LookupOutcome): void {
    const { journal } = this.options;
    const { meta } = outcome;
    let credits = 0;
    if (outcome.kind === 'started') {
      // Credits held (3); a receipt that does not say how many counts at the country's cost.
      credits = meta.creditCost ?? this.budget.costOf(item.country);
      const correlationId = outcome.body.correlation_id;
      this.queue.push(() => journal.recordReceipt(item.id, correlationId, outcome.raw, credits, outcome.text));
      this.team?.settle(item.e164, { kind: 'pending', correlationId });
      if (meta.creditCost !== null && meta.creditCost > 0) this.learn(item.country, meta.creditCost);
    } else {
      const answer = this.answerOf(item, outcome.verdict, outcome);
      this.queue.push(() => journal.recordFinal(item.id, answer));
      credits = answer.credits;
      // A refused answer is no verdict for the others either: to them it is a send without an answer.
      this.team?.settle(
        item.e164,
        outcome.kind === 'bad_response'
          ? { kind: 'unanswered' }
          : { kind: 'answered', country: item.country, answer: sharedAnswerOf(answer) },
      );
      // A charged failure (invalid_phone_number) costs what a success costs: it teaches the cost too. A refused
      // answer teaches nothing: its cost is not believed.
      if (outcome.kind !== 'bad_response' && meta.creditCost !== null && meta.creditCost > 0)
        this.learn(item.country, meta.creditCost);
      if (outcome.kind === 'bad_response' && outcome.stop) {
        this.fatal ??= outcome.stop;
        this.stopping ??= 'service_failure';
      }
    }
    this.settle(item, estimate, credits);
  }

  private learn(country: string, credits: number): void {
    // With the next commit: a write here, in an answer's callback, could fail (a full disk) where nothing catches it.
    const { journal } = this.options;
    if (this.budget.learn(country, credits)) this.queue.push(() => journal.learnCost(country, credits));
  }

  private onError(item: QueueItem, estimate: number, err: unknown): void {
    const { journal } = this.options;
    const e = isDncError(err) ? err : null;
    const details = (e?.details ?? {}) as {
      body?: unknown;
      supportedCountries?: string[];
      country?: string | null;
      status?: number;
      errno?: string;
    };
    if (e?.code === 'E_UNSUPPORTED_COUNTRY') {
      // Free (7). Only the country the 422 names is refused locally from now on: the service places numbers by
      // calling code, so a number dnc reads as another region of +44 or +1 may well be covered.
      const named = details.country ?? null;
      if (named !== null) {
        this.unsupported.add(named);
        this.queue.push(() => journal.addUnsupportedCountry(named, details.supportedCountries ?? []));
      }
      if (details.supportedCountries && details.supportedCountries.length > 0)
        this.supportedList = details.supportedCountries;
      const answer = localAnswer('unsupported_country', 'unsupported_country', e.message, details.body ?? null, 422);
      this.queue.push(() => journal.recordFinal(item.id, answer));
      this.team?.settle(item.e164, { kind: 'released' });
    } else if (e?.code === 'E_CREDIT_LIMIT') {
      this.queue.push(() => journal.release(item.id));
      this.team?.settle(item.e164, { kind: 'released' });
      this.stopping ??= 'credit_limit';
    } else if (e && (e.exitCode === 4 || e.exitCode === 2 || NOT_SENT_CODES.has(String(details.errno)))) {
      // About the request (the key, a reseller header, the webhook URL, a parameter) or never sent (the service
      // unreachable): nothing was charged, no verdict is written; the number goes back to the queue for the rerun.
      this.queue.push(() => journal.release(item.id));
      this.team?.settle(item.e164, { kind: 'released' });
      this.fatal ??= e;
      this.stopping ??= e.exitCode === 4 ? 'auth_failed' : e.exitCode === 2 ? 'configuration' : 'service_failure';
    } else {
      // Sent, and no answer came that says what it cost (a timeout, a connection reset, a 5xx without a result):
      // it may have been charged. It is never sent again without --resend-unanswered, as a rerun would decide.
      // This run sent it and heard back (or not) itself: never "an earlier run that stopped" (issue 48).
      const why = `${SENT_WITHOUT_ANSWER_TEXT} (${e?.message ?? String(err)})`;
      this.queue.push(() => journal.recordFinal(item.id, localAnswer('failed', UNANSWERED_SEND, why)));
      this.team?.settle(item.e164, { kind: 'unanswered' });
      this.fatal ??= e ?? (err as DncError);
      this.stopping ??= 'service_failure';
    }
    this.settle(item, estimate, 0);
  }

  /** The team store failed: nothing more is sent, and that failure is the run's. */
  private readonly stopForStore = (err: unknown): void => {
    this.fatal ??= storeFailure(err);
    this.stopping ??= 'service_failure';
    this.schedulePump();
  };

  /** Ends the run (once): its outcome, after the last answers are shared with the team. */
  private finish(): void {
    const resolve = this.resolveRun;
    if (!resolve) return;
    this.resolveRun = null;
    if (this.queue.failure) this.fatal = this.writeFailure(this.queue.failure, this.queue.unstored);
    const outcome: SchedulerOutcome = {
      stoppedReason: this.stopping,
      fatal: this.fatal,
      resent: this.resent,
      doneBefore: this.before.done,
      total: this.total,
      sent: this.sent,
      creditsThisRun: this.budget.spent - this.before.credits,
      creditsTotal: this.budget.spent,
      elapsedMs: this.clock() - this.started,
      abandoned: this.abandoned,
      budgetStop: this.stopping === 'budget_reached' ? this.budget.stoppedBy : null,
    };
    this.gate?.close();
    if (!this.team) return resolve(outcome);
    // The last answers are shared before the run ends: the others may be waiting for them.
    this.team.flush().then(
      () => resolve(outcome),
      (err: unknown) => resolve({ ...outcome, fatal: outcome.fatal ?? storeFailure(err) }),
    );
  }

  /** The numbers in flight are what the user must know about: sent, maybe charged, their answers not stored. */
  private writeFailure(failure: Error, unstored: number): DncError {
    const e = isDncError(failure) ? failure : null;
    const lost =
      `${formatInteger(unstored)} lookup(s) answered (and maybe charged) could not be stored: ` +
      `they stay in flight in the journal; a rerun reports them and sends them again only with ` +
      `--resend-unanswered`;
    return e !== null
      ? new DncError(e.code, `${e.message}; ${lost}`, {
          hint: e.hint,
          cause: e.cause,
          details: { ...e.details, unstored },
        })
      : new DncError(
          'E_JOURNAL_WRITE',
          `cannot write the batch journal ${this.options.journal.path}: ${failure.message}; ${lost}`,
          {
            cause: failure,
            details: { unstored },
          },
        );
  }

  /** What the team gate asks of this run. */
  private gateHost(): GateHost {
    const run = this;
    return {
      journal: this.options.journal,
      queue: this.queue,
      budget: this.budget,
      get inFlight() {
        return run.inFlight;
      },
      set inFlight(n: number) {
        run.inFlight = n;
      },
      get stopping() {
        return run.stopping;
      },
      get abandoned() {
        return run.abandoned;
      },
      requeue: (item) => void this.buffer.unshift(item),
      commit: (ids) => this.commit(ids),
      send: (item, estimate, webhook) => this.send(item, estimate, webhook),
      schedulePump: () => this.schedulePump(),
      stopForStore: this.stopForStore,
    };
  }
}
