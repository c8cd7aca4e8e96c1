// The batch scheduler: sends the journal's queued numbers, concurrency-limited and within budget, and journals each answer.
import { EventEmitter } from 'node:events';
import { DncError, ExitCode, isDncError, usageError } from '../errors.js';
import { NOT_SENT_CODES, type LookupOutcome, type ServiceClient } from '../service/client.js';
import { CreditBudget } from './budget.js';
import { CommitQueue } from './commit-queue.js';
import { WebhookUrlProbe } from './webhook-probe.js';
import { finalAnswerFromBody, localAnswer, type BatchJournal, type FinalAnswer, type StoppedReason } from './journal.js';
import { formatInteger } from '../render/numbers.js';

export interface SchedulerOptions {
  journal: BatchJournal;
  client: Pick<ServiceClient, 'lookup'>;
  /** Lookups in flight at most (the client's connection pool is sized to it). */
  concurrency: number;
  /** --max-credits: credits the whole batch (every run of this journal) may use; null for no budget. */
  maxCredits: number | null;
  webhookUrl: string | null;
  /** --webhook-all: every lookup in webhook mode, not only the webhook-only countries. */
  webhookAll: boolean;
  webhookOnlyCountries: readonly string[];
  /**
   * Credits per lookup seen earlier for this service (the user's cost cache). A hint, not a fact: the price may
   * have changed since, so a country known only from it is still probed alone, at no less than its hint.
   */
  knownCosts?: ReadonlyMap<string, number>;
  /** Numbers still arriving (the input is being read while lookups run); without it, the queue is complete. */
  incoming?: IncomingNumbers;
}

/**
 * The journal's queue while the input is still being read into it: an empty queue means "not yet" until
 * reading ends. Every number is in the journal (committed, and checked against the user's lists) before the
 * scheduler hears of it, so it is claimed and sent exactly as a number read before the run began.
 */
export interface IncomingNumbers {
  /** True while more numbers may come. */
  readonly reading: boolean;
  /** `listener(added)` runs after each commit of new numbers, and once (added 0) when reading ends. */
  subscribe(listener: (added: number) => void): void;
}

/** Progress after each answer; the command renders it. */
export interface SchedulerProgress {
  /** Numbers with an answer (final or receipt) in this run. */
  answered: number;
  /** Numbers this run has to do: those queued when it began, plus those read since (while `reading`). */
  total: number;
  /** The input is still being read: `total` is a count so far. */
  reading: boolean;
  inFlight: number;
  /** Credits the batch has used in all its runs (charged, and held for pending lookups). */
  credits: number;
  /** Lookups sent in this run. */
  sent: number;
}

export interface SchedulerOutcome {
  stoppedReason: StoppedReason | null;
  /** A failure that ended the run (401/403, the service unreachable …). */
  fatal: DncError | null;
  /** Numbers left in flight by an earlier run, sent again (they may have been charged then). */
  resent: number;
  /** Numbers with a final answer before this run began. */
  doneBefore: number;
  total: number;
  sent: number;
  creditsThisRun: number;
  creditsTotal: number;
  elapsedMs: number;
  /** True when the run was abandoned (second Ctrl-C) without waiting for lookups in flight. */
  abandoned: boolean;
}

interface QueueItem {
  id: number;
  e164: string;
  country: string;
}



export declare interface BatchScheduler {
  on(event: 'progress', listener: (p: SchedulerProgress) => void): this;
  /** Once, when nothing more will be sent (the list is all sent, or the run is stopping): only answers are awaited. */
  on(event: 'drained', listener: () => void): this;
}

/**
 * Runs the lookups of one batch. Every number is claimed (committed in flight) before its request is
 * sent and its answer is committed as it arrives, so a crash at any moment leaves a journal a rerun completes.
 */
export class BatchScheduler extends EventEmitter {
  private stopping: StoppedReason | null = null;
  private fatal: DncError | null = null;
  private abandoned = false;
  private finish: (() => void) | null = null;

  constructor(
    private readonly options: SchedulerOptions,
    private readonly clock: () => number = () => performance.now(),
  ) {
    super();
  }

  /** Stops starting lookups; those in flight finish and are journaled. */
  stop(reason: StoppedReason): void {
    this.stopping ??= reason;
    if (this.stopping === reason) this.pump?.();
  }

  /** Stops waiting: answers received are committed, run() resolves at once; later answers are dropped (those numbers stay in flight). */
  abandon(): void {
    this.stopping ??= 'interrupted';
    this.flush?.();
    this.abandoned = true;
    this.finish?.();
  }

  private pump: (() => void) | null = null;
  private flush: (() => void) | null = null;

  async run(): Promise<SchedulerOutcome> {
    const { journal, client, concurrency, maxCredits, webhookUrl, webhookAll, webhookOnlyCountries } = this.options;
    const started = this.clock();
    // The batch use case settles an earlier run's unanswered sends before this (src/batch/run.ts: they are sent
    // again only with --resend-unanswered); a scheduler given a journal with numbers still in flight sends them.
    const resent = journal.requeueInFlight();
    const before = journal.summaryCounts();
    const incoming = this.options.incoming;
    let total = before.queued;
    // Costs this batch has seen (X-Credit-Cost of its own answers); `hints` are older ones, from the cost cache.
    const costs = journal.learnedCosts();
    const hints = this.options.knownCosts ?? new Map<string, number>();
    let supported = journal.supportedCountries();
    // Sends of earlier runs whose answers were lost may have been charged: the budget counts them as spent.
    const budget = new CreditBudget(maxCredits, before.credits, costs, hints, maxCredits !== null ? journal.unseenSends() : new Map());
    const creditsAtStart = before.credits;
    let inFlight = 0;
    let sent = 0;
    let cursor = 0;
    let buffer: QueueItem[] = [];
    let exhausted = false;
    // Webhook-mode numbers whose 400 came before any 202: about the number or the URL, not known yet.
    const probe = new WebhookUrlProbe<QueueItem>();
    // Answers wait here for the next commit, which also claims the next numbers: one transaction per turn of the
    // event loop however many answers arrived in it. An answer counts (answered) only once committed.
    const queue = new CommitQueue(journal);
    let scheduled = false;
    let drained = false;
    const schedulePump = () => {
      if (scheduled) return;
      scheduled = true;
      setImmediate(() => {
        scheduled = false;
        this.pump?.();
      });
    };

    const progress = () => this.emit('progress', { answered: queue.answered, total, inFlight, credits: budget.spent, sent, reading: incoming?.reading === true } satisfies SchedulerProgress);
    const peek = (): QueueItem | undefined => {
      if (buffer.length === 0 && !exhausted) {
        // Read before the query: numbers committed after it would otherwise be missed for good.
        const more = incoming?.reading === true;
        buffer = journal.nextQueued(cursor, 1000);
        if (buffer.length > 0) cursor = buffer[buffer.length - 1]!.id;
        else if (!more) exhausted = true;
      }
      return buffer[0];
    };
    incoming?.subscribe((added) => {
      total += added;
      // Waiting for numbers (or for the end of reading to finish the run): look again.
      if (buffer.length === 0) schedulePump();
    });

    /** A lookup is over; `answered`: its answer is among the writes (counted once committed). */
    const settle = (item: QueueItem, estimate: number, credits: number, answered = true) => {
      inFlight--;
      budget.settle(item.country, estimate, credits);
      if (answered) queue.countAnswer();
    };

    const onOutcome = (item: QueueItem, estimate: number, outcome: LookupOutcome) => {
      const { meta } = outcome;
      let credits = 0;
      if (outcome.kind === 'started') {
        acceptWebhook();
        credits = meta.creditCost ?? 0;
        const correlationId = outcome.body.correlation_id ?? meta.correlationId ?? '';
        queue.push(() => journal.recordReceipt(item.id, correlationId, outcome.raw, credits, outcome.text));
        if (meta.creditCost !== null && meta.creditCost > 0) learn(item.country, meta.creditCost);
      } else {
        const final = finalAnswerFromBody(outcome.raw, meta.status, meta.creditCost, 0, outcome.text, item.e164);
        const answer: FinalAnswer = final ?? localAnswer('failed', 'bad_response', 'the service answered with a body dnc cannot read', outcome.raw, meta.status);
        queue.push(() => journal.recordFinal(item.id, answer));
        credits = answer.credits;
        // A charged failure (invalid_phone_number) costs what a success costs: it teaches the cost too.
        if (answer.credits > 0) learn(item.country, answer.credits);
      }
      settle(item, estimate, credits);
    };

    const learn = (country: string, credits: number) => {
      // With the next commit: a write here, in an answer's callback, could fail (a full disk) where nothing catches it.
      if (budget.learn(country, credits)) queue.push(() => journal.learnCost(country, credits));
    };

    const onError = (item: QueueItem, estimate: number, err: unknown, webhook: boolean) => {
      const e = isDncError(err) ? err : null;
      const details = (e?.details ?? {}) as { body?: unknown; supportedCountries?: string[]; status?: number; errno?: string };
      if (e?.code === 'E_UNSUPPORTED_COUNTRY') {
        if (details.supportedCountries && details.supportedCountries.length > 0) {
          supported = details.supportedCountries;
          const learned = supported;
          queue.push(() => journal.setSupportedCountries(learned));
        }
        const answer = localAnswer('unsupported_country', 'unsupported_country', e.message.replace(/ \(422\)/, ''), details.body ?? null, 422);
        queue.push(() => journal.recordFinal(item.id, answer));
      } else if (e?.code === 'E_BAD_REQUEST' && (!webhook || probe.accepted)) {
        queue.push(() => journal.recordFinal(item.id, rejected(e.message, details.body)));
      } else if (e?.code === 'E_BAD_REQUEST' && probe.park(item, e.message, details.body)) {
        // A 400 is about the number or the webhook URL (the description says no more). Before the service has
        // accepted the URL once (a 202), the number waits, uncharged either way: a 202 says the 400 was about it,
        // PARKED_AT_MOST such 400s in a row (or none accepted by the end) say the URL is refused.
        settle(item, estimate, 0, false);
        return;
      } else if (e?.code === 'E_CREDIT_LIMIT') {
        queue.push(() => journal.release(item.id));
        this.stopping ??= 'credit_limit';
      } else {
        // 401/403, an invalid webhook URL, the service unreachable: nothing more can succeed in this run.
        if (e && (e.exitCode === 4 || e.exitCode === 2 || e.code === 'E_BAD_REQUEST' || NOT_SENT_CODES.has(String(details.errno)))) {
          queue.push(() => journal.release(item.id));
        }
        // Otherwise (a timeout, a broken answer) the request may have been charged: it stays in flight and is reported when re-sent.
        if (e?.code === 'E_BAD_REQUEST') {
          refuseWebhook(e.message);
        } else {
          this.fatal ??= e ?? (err as DncError);
          this.stopping ??= 'interrupted';
        }
      }
      settle(item, estimate, 0);
    };

    const rejected = (message: string, body: unknown) => localAnswer('invalid', 'rejected_by_service', message, body ?? null, 400);
    /** A 202: the service takes the webhook URL, so the 400s before it were about their numbers. */
    const acceptWebhook = () => {
      for (const p of probe.accept()) {
        queue.push(() => journal.recordFinal(p.item.id, rejected(p.message, p.body)));
        queue.countAnswer();
      }
    };
    /** The service refuses the webhook URL: nothing more can succeed in this run; the waiting numbers go back to the queue. */
    const refuseWebhook = (message: string) => {
      this.fatal ??= usageError('E_WEBHOOK_URL', message.replace(/^the service rejected the request \(400\): /, 'the service refused --webhook-url: '), {
        hint: 'nothing was charged; give a webhook URL the service accepts',
      });
      this.stopping ??= 'interrupted';
      releaseParked();
    };
    const releaseParked = () => {
      for (const p of probe.drain()) queue.push(() => journal.release(p.item.id));
    };

    return new Promise<SchedulerOutcome>((resolve) => {
      let resolved = false;
      this.finish = () => {
        if (resolved) return;
        resolved = true;
        this.pump = null;
        const writeFailure = queue.failure;
        const unstored = queue.unstored;
        if (writeFailure) {
          // The numbers in flight are what the user must know about: sent, maybe charged, their answers not stored.
          const e = isDncError(writeFailure) ? writeFailure : null;
          const lost = `${formatInteger(unstored)} lookup(s) answered (and maybe charged) could not be stored: they stay in flight in the journal; a rerun reports them and sends them again only with --resend-unanswered`;
          this.fatal =
            e !== null
              ? new DncError(e.code, `${e.message}; ${lost}`, { hint: e.hint, cause: e.cause, details: { ...e.details, unstored } })
              : new DncError('E_JOURNAL_WRITE', `cannot write the batch journal ${journal.path}: ${writeFailure.message}; ${lost}`, { cause: writeFailure, details: { unstored } });
        }
        resolve({
          stoppedReason: this.fatal ? null : this.stopping,
          fatal: this.fatal,
          resent,
          doneBefore: before.done,
          total,
          sent,
          creditsThisRun: budget.spent - creditsAtStart,
          creditsTotal: budget.spent,
          elapsedMs: this.clock() - started,
          abandoned: this.abandoned,
        });
      };
      const send = (item: QueueItem, estimate: number, webhook: boolean) => {
        sent++;
        client.lookup({ phoneNumber: item.e164, webhookUrl: webhook ? (webhookUrl ?? undefined) : undefined }).then(
          (outcome) => {
            if (this.abandoned) return;
            onOutcome(item, estimate, outcome);
            schedulePump();
          },
          (err: unknown) => {
            if (this.abandoned) return;
            onError(item, estimate, err, webhook);
            schedulePump();
          },
        );
      };
      /** Commits the answers received and claims `ids` (in flight) in one transaction; returns the ids claimed. */
      const commit = (ids: number[]): number[] => {
        const claimed = queue.commit(ids);
        // A failed commit (rolled back) ends the run: nothing more is sent. Thrown from a timer, it would end the
        // process with a stack trace. Answers received meanwhile stay in flight and are sent again, and reported.
        if (queue.failure) this.stopping ??= 'interrupted';
        return claimed;
      };
      this.flush = () => {
        releaseParked();
        commit([]);
      };
      // Lookups in flight when the write failed still answer; their commits fail too and count as unstored.
      this.pump = () => {
        const starting: Array<[QueueItem, number, boolean]> = [];
        while (this.stopping === null && inFlight + starting.length < concurrency) {
          const item = peek();
          if (!item) break;
          if (supported && !supported.includes(item.country)) {
            buffer.shift();
            const answer = localAnswer('unsupported_country', 'unsupported_country', `the service does not cover ${item.country || 'this number\'s country'} (supported: ${supported.join(', ')})`);
            queue.push(() => journal.recordFinal(item.id, answer));
            queue.countAnswer();
            continue;
          }
          const webhook = webhookAll || webhookOnlyCountries.includes(item.country);
          if (webhook && !webhookUrl) {
            buffer.shift();
            const answer = localAnswer('not_checked', 'webhook_required', `${item.country} lookups are webhook-only: pass --webhook-url and run \`dnc listen\``);
            queue.push(() => journal.recordFinal(item.id, answer));
            queue.countAnswer();
            continue;
          }
          const admission = budget.admit(item.country, inFlight + starting.length > 0);
          if (admission.kind === 'wait') break;
          if (admission.kind === 'stop') {
            this.stopping = 'budget_reached';
            break;
          }
          const estimate = admission.estimate;
          buffer.shift();
          starting.push([item, estimate, webhook]);
        }
        if (probe.waiting > 0 && inFlight === 0 && starting.length === 0) {
          // Nothing in flight can bring a 202 any more: the URL was refused, unless the run stopped for another reason.
          if (this.stopping !== null) releaseParked();
          else refuseWebhook(probe.firstMessage!);
        }
        const ids = starting.map(([i]) => i.id);
        const claimed = new Set(commit(ids));
        if (starting.length > 0) {
          for (const [item, estimate, webhook] of starting) {
            if (!claimed.has(item.id)) {
              budget.cancel(item.country, estimate);
              continue;
            }
            inFlight++;
            send(item, estimate, webhook);
          }
        }
        if (starting.length > 0 || ids.length === 0) progress();
        if (!drained && (this.stopping !== null || (buffer.length === 0 && exhausted))) {
          drained = true;
          this.emit('drained');
        }
        if (inFlight === 0 && (this.stopping !== null || (buffer.length === 0 && exhausted))) this.finish?.();
      };
      this.pump();
    });
  }
}
