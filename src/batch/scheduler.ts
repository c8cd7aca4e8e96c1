// The batch scheduler: sends the journal's queued numbers, concurrency-limited and within budget, and journals each
// answer.
import { EventEmitter } from 'node:events';
import { DncError, isDncError } from '../errors.js';
import { type Judgement } from '../service/answers.js';
import { type LookupOutcome, NOT_SENT_CODES, type ServiceClient } from '../service/client.js';
import { CreditBudget } from './budget.js';
import { CommitQueue } from './commit-queue.js';
import {
  localAnswer,
  UNANSWERED_SEND,
  UNANSWERED_SEND_TEXT,
  type BatchJournal,
  type FinalAnswer,
  type StoppedReason,
} from '../journal/journal.js';
import { formatInteger } from '../text/numbers.js';
import { unsupportedCountryText } from '../service/refusals.js';
import { sharedAnswerOf, type Adoption, type GateSorting, type TeamClaims } from '../stores/team-claims.js';
import { recordAdoption } from './team-adoption.js';
import type { IncomingNumbers, SchedulerOutcome, SchedulerProgress } from './scheduler-types.js';

export type { IncomingNumbers, SchedulerOutcome, SchedulerProgress } from './scheduler-types.js';

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
  /** A team store's claims: each number claimed before it is sent, another machine's lookup waited for. */
  team?: TeamClaims | null;
}

/** How often the answers of other machines' lookups are asked for while this run waits for them. */
const WAIT_POLL_MS = 200;
/** Numbers set aside for a colleague's answer asked for at most per poll. */
const POLL_MAX = 2_000;

interface QueueItem {
  id: number;
  e164: string;
  country: string;
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

  /**
   * Stops waiting: answers received are committed, run() resolves at once; later answers are dropped (those numbers
   * stay in flight).
   */
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
    const team = this.options.team ?? null;
    const started = this.clock();
    // The batch use case settles an earlier run's unanswered sends before this (src/batch/run.ts: they are sent
    // again only with --resend-unanswered); a scheduler given a journal with numbers still in flight sends them.
    const resent = journal.requeueInFlight();
    const before = journal.summaryCounts();
    const incoming = this.options.incoming;
    // The numbers this run will look up (the guard's and --json credit_estimate's): not those of a country it does
    // not send to (webhook-only without a webhook URL, one the service does not cover), answered here uncounted.
    const excluded = new Set([...journal.unsupportedCountries(), ...(webhookUrl ? [] : webhookOnlyCountries)]);
    const notSent = journal.sends.queuedOf([...excluded]);
    let total = before.queued - notSent.numbers;
    /** A number answered here without a lookup: out of the run's count, unless it was left out of it at the start. */
    const answeredUnsent = (item: QueueItem) => {
      if (item.id > notSent.lastId || !excluded.has(item.country)) total--;
    };
    // Costs this batch has seen (X-Credit-Cost of its own answers); `hints` are older ones, from the cost cache.
    const costs = journal.learnedCosts();
    const hints = this.options.knownCosts ?? new Map<string, number>();
    // Countries a 422 named: their numbers are refused locally, uncharged (the full list is not shown, 1).
    const unsupported = new Set(journal.unsupportedCountries());
    let supportedList = journal.supportedCountries() ?? [];
    // Sends of earlier runs whose answers were lost may have been charged: the budget counts them as spent.
    const budget = new CreditBudget(
      maxCredits,
      before.credits,
      costs,
      hints,
      maxCredits !== null ? journal.unseenSends() : new Map(),
    );
    const creditsAtStart = before.credits;
    let inFlight = 0;
    let sent = 0;
    let cursor = 0;
    let buffer: QueueItem[] = [];
    let exhausted = false;
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

    const progress = () =>
      this.emit('progress', {
        answered: queue.answered,
        total,
        inFlight,
        credits: budget.spent,
        sent,
        reading: incoming?.reading === true,
      } satisfies SchedulerProgress);
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

    /** The journal's record of a judged answer; credits it does not give believably count at the country's cost. */
    const answerOf = (item: QueueItem, verdict: Judgement, outcome: LookupOutcome): FinalAnswer => ({
      result: verdict.result,
      doNotCall: verdict.doNotCall,
      listSource: verdict.listSource,
      checkedAt: verdict.checkedAt,
      correlationId: verdict.correlationId,
      errorCode: verdict.errorCode,
      error: verdict.error,
      credits: verdict.charged === false ? 0 : (verdict.credits ?? budget.costOf(item.country)),
      httpStatus: outcome.meta.status,
      answer: outcome.text ?? (outcome.raw === undefined ? null : JSON.stringify(outcome.raw)),
    });

    const onOutcome = (item: QueueItem, estimate: number, outcome: LookupOutcome) => {
      const { meta } = outcome;
      let credits = 0;
      if (outcome.kind === 'started') {
        // Credits held (3); a receipt that does not say how many counts at the country's cost.
        credits = meta.creditCost ?? budget.costOf(item.country);
        const correlationId = outcome.body.correlation_id;
        queue.push(() => journal.recordReceipt(item.id, correlationId, outcome.raw, credits, outcome.text));
        team?.settle(item.e164, { kind: 'pending', correlationId });
        if (meta.creditCost !== null && meta.creditCost > 0) learn(item.country, meta.creditCost);
      } else {
        const answer = answerOf(item, outcome.verdict, outcome);
        queue.push(() => journal.recordFinal(item.id, answer));
        credits = answer.credits;
        // A refused answer is no verdict for the others either: to them it is a send without an answer.
        team?.settle(
          item.e164,
          outcome.kind === 'bad_response'
            ? { kind: 'unanswered' }
            : { kind: 'answered', country: item.country, answer: sharedAnswerOf(answer) },
        );
        // A charged failure (invalid_phone_number) costs what a success costs: it teaches the cost too. A refused
        // answer teaches nothing: its cost is not believed.
        if (outcome.kind !== 'bad_response' && meta.creditCost !== null && meta.creditCost > 0)
          learn(item.country, meta.creditCost);
        if (outcome.kind === 'bad_response' && outcome.stop) {
          this.fatal ??= outcome.stop;
          this.stopping ??= 'service_failure';
        }
      }
      settle(item, estimate, credits);
    };

    const learn = (country: string, credits: number) => {
      // With the next commit: a write here, in an answer's callback, could fail (a full disk) where nothing catches it.
      if (budget.learn(country, credits)) queue.push(() => journal.learnCost(country, credits));
    };

    const onError = (item: QueueItem, estimate: number, err: unknown) => {
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
          unsupported.add(named);
          queue.push(() => journal.addUnsupportedCountry(named, details.supportedCountries ?? []));
        }
        if (details.supportedCountries && details.supportedCountries.length > 0)
          supportedList = details.supportedCountries;
        const answer = localAnswer('unsupported_country', 'unsupported_country', e.message, details.body ?? null, 422);
        queue.push(() => journal.recordFinal(item.id, answer));
        team?.settle(item.e164, { kind: 'released' });
      } else if (e?.code === 'E_CREDIT_LIMIT') {
        queue.push(() => journal.release(item.id));
        team?.settle(item.e164, { kind: 'released' });
        this.stopping ??= 'credit_limit';
      } else if (e && (e.exitCode === 4 || e.exitCode === 2 || NOT_SENT_CODES.has(String(details.errno)))) {
        // About the request (the key, a reseller header, the webhook URL, a parameter) or never sent (the service
        // unreachable): nothing was charged, no verdict is written; the number goes back to the queue for the rerun.
        queue.push(() => journal.release(item.id));
        team?.settle(item.e164, { kind: 'released' });
        this.fatal ??= e;
        this.stopping ??= e.exitCode === 4 ? 'auth_failed' : e.exitCode === 2 ? 'configuration' : 'service_failure';
      } else {
        // Sent, and no answer came that says what it cost (a timeout, a connection reset, a 5xx without a result):
        // it may have been charged. It is never sent again without --resend-unanswered, as a rerun would decide.
        queue.push(() =>
          journal.recordFinal(
            item.id,
            localAnswer('failed', UNANSWERED_SEND, `${UNANSWERED_SEND_TEXT} (${e?.message ?? String(err)})`),
          ),
        );
        team?.settle(item.e164, { kind: 'unanswered' });
        this.fatal ??= e ?? (err as DncError);
        this.stopping ??= 'service_failure';
      }
      settle(item, estimate, 0);
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
          const lost =
            `${formatInteger(unstored)} lookup(s) answered (and maybe charged) could not be stored: ` +
            `they stay in flight in the journal; a rerun reports them and sends them again only with ` +
            `--resend-unanswered`;
          this.fatal =
            e !== null
              ? new DncError(e.code, `${e.message}; ${lost}`, {
                  hint: e.hint,
                  cause: e.cause,
                  details: { ...e.details, unstored },
                })
              : new DncError(
                  'E_JOURNAL_WRITE',
                  `cannot write the batch journal ${journal.path}: ${writeFailure.message}; ${lost}`,
                  { cause: writeFailure, details: { unstored } },
                );
        }
        const outcome: SchedulerOutcome = {
          stoppedReason: this.stopping,
          fatal: this.fatal,
          resent,
          doneBefore: before.done,
          total,
          sent,
          creditsThisRun: budget.spent - creditsAtStart,
          creditsTotal: budget.spent,
          elapsedMs: this.clock() - started,
          abandoned: this.abandoned,
        };
        if (polling) clearInterval(polling);
        if (!team) return resolve(outcome);
        // The last answers are shared before the run ends: the others may be waiting for them.
        team.flush().then(
          () => resolve(outcome),
          (err: unknown) => resolve({ ...outcome, fatal: outcome.fatal ?? storeFailure(err) }),
        );
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
            onError(item, estimate, err);
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
        commit([]);
      };
      // Lookups in flight when the write failed still answer; their commits fail too and count as unstored.
      /** Commits the claims of `starting` in the journal (in flight) and sends those claimed. */
      const sendNow = (starting: ReadonlyArray<[QueueItem, number, boolean]>) => {
        const claimed = new Set(commit(starting.map(([i]) => i.id)));
        for (const [item, estimate, webhook] of starting) {
          if (!claimed.has(item.id)) {
            budget.cancel(item.country, estimate);
            team?.settle(item.e164, { kind: 'released' });
            continue;
          }
          inFlight++;
          send(item, estimate, webhook);
        }
      };
      // With a team store, numbers are claimed there first (one statement per turn); until the claim answers, each
      // holds its place among those in flight. A number a colleague is looking up holds no place and no credits: it
      // is set aside (`waiting`), its answer asked for every WAIT_POLL_MS while this run goes on with other numbers,
      // and adopted when it lands. What the store says of a number let go meanwhile (the run stopping) is dropped.
      const gated = new Map<number, { estimate: number; webhook: boolean }>();
      const waiting = new Map<number, QueueItem>();
      let polling: ReturnType<typeof setInterval> | null = null;
      let pollBusy = false;
      const ungate = (item: QueueItem) => {
        const g = gated.get(item.id);
        if (!g) return null;
        gated.delete(item.id);
        inFlight--;
        return g;
      };
      const watch = () => {
        if (waiting.size > 0 && polling === null) polling = setInterval(() => void poll(), WAIT_POLL_MS);
        if (waiting.size === 0 && polling !== null) {
          clearInterval(polling);
          polling = null;
        }
      };
      /** Colleagues' lookups no longer waited for: those numbers stay queued in the journal, for the rerun. */
      const releaseWaiting = () => {
        waiting.clear();
        watch();
      };
      const stopForStore = (err: unknown) => {
        this.fatal ??= storeFailure(err);
        this.stopping ??= 'service_failure';
        schedulePump();
      };
      const adopt = (item: QueueItem, adoption: Adoption) => {
        queue.push(() => recordAdoption(journal, item.id, adoption));
        queue.countAnswer();
      };
      /** Back to the journal's queue and this run's buffer: committed in flight, but not sent. */
      const unsend = (item: QueueItem, estimate: number) => {
        budget.cancel(item.country, estimate);
        queue.push(() => journal.release(item.id));
      };
      /** Claimed `sending` in the store (and committed in flight in the journal before): sent. */
      const sendClaimed = (ours: ReadonlyArray<[QueueItem, number, boolean]>) => {
        inFlight += ours.length;
        for (const [item, estimate, webhook] of ours) send(item, estimate, webhook);
      };
      const applyClaim = (r: GateSorting) => {
        for (const [item, adoption] of r.answered) {
          const g = ungate(item);
          if (!g) continue;
          budget.settle(item.country, g.estimate, 0);
          adopt(item, adoption);
        }
        // Committed in flight before the claim, and not sent: back in the journal's queue.
        for (const item of r.retry) {
          const g = ungate(item);
          if (!g) continue;
          unsend(item, g.estimate);
          buffer.unshift(item);
        }
        for (const item of r.waiting) {
          const g = ungate(item);
          if (!g) continue;
          unsend(item, g.estimate);
          waiting.set(item.id, item);
        }
        const ours = r.send.flatMap((item): Array<[QueueItem, number, boolean]> => {
          const g = ungate(item);
          return g ? [[item, g.estimate, g.webhook]] : [];
        });
        if (this.stopping !== null) {
          // Stopped while the claim was made: claimed, but not sent after all.
          for (const [item, estimate] of ours) {
            unsend(item, estimate);
            team!.settle(item.e164, { kind: 'released' });
          }
          releaseWaiting();
        } else sendClaimed(ours);
        watch();
        schedulePump();
      };
      const applyPoll = (r: GateSorting) => {
        for (const [item, adoption] of r.answered) if (waiting.delete(item.id)) adopt(item, adoption);
        for (const item of r.retry) if (waiting.delete(item.id)) buffer.unshift(item);
        watch();
        schedulePump();
      };
      const poll = async () => {
        if (pollBusy || waiting.size === 0) return;
        pollBusy = true;
        try {
          // The longest waited for first; a bounded statement however many numbers are set aside.
          const sorted = await team!.poll([...waiting.values()].slice(0, POLL_MAX));
          if (!this.abandoned) applyPoll(sorted);
        } catch (err) {
          releaseWaiting();
          stopForStore(err);
        } finally {
          pollBusy = false;
        }
      };
      // Committed in flight in the journal first, then claimed `sending` in the store (one statement), then sent: a
      // crash at any point leaves the journal saying at least what the store says.
      const claimFirst = (starting: ReadonlyArray<[QueueItem, number, boolean]>) => {
        const committed = new Set(commit(starting.map(([i]) => i.id)));
        const claiming = starting.filter(([item, estimate]) => {
          if (committed.has(item.id)) return true;
          budget.cancel(item.country, estimate);
          return false;
        });
        if (claiming.length === 0) return;
        for (const [item, estimate, webhook] of claiming) gated.set(item.id, { estimate, webhook });
        inFlight += claiming.length;
        team!
          .claim(
            claiming.map(([item]) => item),
            true,
          )
          .then(
            (sorted) => {
              if (!this.abandoned) applyClaim(sorted);
            },
            (err: unknown) => {
              // Not claimed, not sent: back to the journal's queue for the rerun.
              for (const [item] of claiming) {
                const g = ungate(item);
                if (g) unsend(item, g.estimate);
              }
              stopForStore(err);
            },
          );
      };
      this.pump = () => {
        // Stopping: another machine's lookups are no longer waited for (those numbers stay queued for the rerun).
        if (this.stopping !== null && waiting.size > 0) releaseWaiting();
        const starting: Array<[QueueItem, number, boolean]> = [];
        while (this.stopping === null && inFlight + starting.length < concurrency) {
          const item = peek();
          if (!item) break;
          if (unsupported.has(item.country)) {
            buffer.shift();
            const answer = localAnswer(
              'unsupported_country',
              'unsupported_country',
              unsupportedCountryText(item.country, supportedList),
            );
            queue.push(() => journal.recordFinal(item.id, answer));
            answeredUnsent(item);
            continue;
          }
          const webhook = webhookAll || webhookOnlyCountries.includes(item.country);
          if (webhook && !webhookUrl) {
            buffer.shift();
            const answer = localAnswer(
              'not_checked',
              'webhook_required',
              `${item.country} lookups are webhook-only: pass --webhook-url and run \`dnc listen\``,
            );
            queue.push(() => journal.recordFinal(item.id, answer));
            answeredUnsent(item);
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
        if (team && starting.length > 0) claimFirst(starting);
        else sendNow(starting);
        progress();
        team?.flushSoon(stopForStore);
        const over = this.stopping !== null || (buffer.length === 0 && exhausted && waiting.size === 0);
        if (!drained && over) {
          drained = true;
          this.emit('drained');
        }
        if (inFlight === 0 && over) this.finish?.();
      };
      this.pump();
    });
  }
}
