// Asked before paying again: the numbers of a batch that this service answered less than a day ago (the results
// cache: this machine's, or the team store's), the plan of what the run then sends, and the credit guard's estimate
// made over that same plan, so that what it says is what the run does.
import type { BatchJournal, FinalAnswer } from '../journal/journal.js';
import type { CachedVerdict, ResultsCache, StoreScope } from '../stores/interfaces.js';
import type { Stores } from '../stores/owner.js';
import { judgedResultsCache } from '../stores/judged-results-cache.js';
import { reusedNote } from '../stores/results-cache.js';
import { windowDays, type ValidityRules } from '../compliance/validity.js';
import { DAY_MS, parseServiceTime } from '../time.js';
import { UNKNOWN_COST_FLOOR } from './credit-guard.js';

/** "Answered less than a day ago": what a batch asks about before paying for it again. */
export const RECENT_MS = DAY_MS;

/** What a batch does with the numbers answered within the last day. */
export type ReuseDecision =
  /** Reused (the answer on a terminal, or --reuse-within): not sent, no credits. */
  | 'reuse'
  /** Paid again, as asked (on a terminal, or --no-reuse). */
  | 'pay_again'
  /** Paid again without anyone asked (no terminal, neither flag): the summary says so. */
  | 'default';

/**
 * What a batch run over answers of the last day paid for again: the numbers whose verdict was in the results cache,
 * and the charged answers without a verdict (a charged billing_error, invalid_phone_number), which no cache keeps,
 * so that every run pays for them.
 */
export interface PaidAgain {
  numbers: number;
  credits: number;
  decision: ReuseDecision;
  chargedWithoutVerdict: { numbers: number; credits: number };
}

export interface QueuedNumber {
  id: number;
  e164: string;
  country: string;
}

/** A number of the batch with a verdict of this service less than a day old, still valid for its country. */
export interface RecentAnswer extends QueuedNumber {
  verdict: CachedVerdict;
  ageMs: number;
}

/** What the run will send, and what it could reuse instead: the credit guard and the question read the same. */
export interface SendPlan {
  /** Numbers the run sends (queued, of a country it sends to), in the order it sends them. */
  toSend: QueuedNumber[];
  /** What they cost (learned costs; a country not learned yet at the floor of 1). */
  credits: number;
  /** Of them, those answered within the last day. */
  recent: RecentAnswer[];
  /** What those cost. */
  recentCredits: number;
}

/** The number of credits a list of numbers costs, country by country. */
export function creditsOf(numbers: ReadonlyArray<{ country: string }>, costs: ReadonlyMap<string, number>): number {
  let credits = 0;
  for (const n of numbers) credits += costs.get(n.country) ?? UNKNOWN_COST_FLOOR;
  return credits;
}

/**
 * The results cache, when it holds a verdict of this service from the last day (one indexed probe): else null, and a
 * batch reads and sends as before. Verdicts read back are judged (judgedResultsCache) and taken only while valid.
 */
export class RecentAnswers {
  private closing: Promise<void> | null = null;

  private constructor(
    private readonly cache: ResultsCache,
    private readonly now: Date,
    private readonly rules: ValidityRules,
  ) {}

  static async open(stores: Stores, scope: StoreScope, now: Date, rules: ValidityRules): Promise<RecentAnswers | null> {
    const cache = judgedResultsCache(await stores.resultsCache(scope, { create: false }).catch(() => null));
    if (!cache) return null;
    try {
      if (await cache.hasVerdictsSince(new Date(now.getTime() - RECENT_MS)))
        return new RecentAnswers(cache, now, rules);
    } catch {
      // An unreadable cache: nothing recent to say (a batch that fills it reports that).
    }
    await cache.close();
    return null;
  }

  /**
   * The numbers whose cached verdict is at most `withinMs` old (and within RECENT_MS) and still valid for their
   * country: a verdict past its country's validity window is never reused, whatever the window asked.
   */
  async find(numbers: readonly QueuedNumber[], withinMs = RECENT_MS): Promise<RecentAnswer[]> {
    return findValid(this.cache, numbers, this.now, this.rules, Math.min(withinMs, RECENT_MS));
  }

  /** Closes the cache (once, however often asked). */
  async close(): Promise<void> {
    await (this.closing ??= this.cache.close());
  }
}

/**
 * The numbers whose verdict in `cache` was checked at most `withinMs` before `now` and is still valid for the
 * number's country (its validity window, as the manifest judges it). Looked up 4,096 at a time.
 */
export async function findValid(
  cache: ResultsCache,
  numbers: readonly QueuedNumber[],
  now: Date,
  rules: ValidityRules,
  withinMs: number,
): Promise<RecentAnswer[]> {
  const out: RecentAnswer[] = [];
  const notBefore = new Date(now.getTime() - withinMs);
  for (let i = 0; i < numbers.length; i += 4096) {
    const page = numbers.slice(i, i + 4096);
    const found = await cache.getMany(
      page.map((n) => n.e164),
      notBefore,
    );
    for (const n of page) {
      const v = found.get(n.e164);
      const checkedMs = v ? parseServiceTime(v.checkedAt) : NaN;
      if (!v || !Number.isFinite(checkedMs)) continue;
      const ageMs = Math.max(0, now.getTime() - checkedMs);
      if (ageMs > withinMs || ageMs > windowDays(rules, n.country) * DAY_MS) continue;
      out.push({ ...n, verdict: v, ageMs });
    }
  }
  return out;
}

/** The numbers a run would send now: queued, of a country it sends to, in sending order. */
export function queuedToSend(
  journal: Pick<BatchJournal, 'nextQueued'>,
  willSend: (country: string) => boolean,
): QueuedNumber[] {
  const out: QueuedNumber[] = [];
  for (let after = 0, page = journal.nextQueued(0, 4096); page.length > 0; page = journal.nextQueued(after, 4096)) {
    after = page[page.length - 1]!.id;
    for (const q of page) if (willSend(q.country)) out.push(q);
  }
  return out;
}

/** The plan over the numbers to send, with those answered within the last day among them. */
export async function planSends(
  toSend: QueuedNumber[],
  recent: RecentAnswers | null,
  costs: ReadonlyMap<string, number>,
): Promise<SendPlan> {
  const found = recent ? await recent.find(toSend) : [];
  return { toSend, credits: creditsOf(toSend, costs), recent: found, recentCredits: creditsOf(found, costs) };
}

/**
 * Writes the recent answers into the journal as reused verdicts (original checked_at and correlation id, 0 credits,
 * not sent): `note` says why on the row.
 */
export function recordReused(
  journal: Pick<BatchJournal, 'recordFinals' | 'markReused'>,
  answers: readonly RecentAnswer[],
  note: (v: CachedVerdict) => string,
  now: Date,
): void {
  if (answers.length === 0) return;
  const finals: Array<[number, FinalAnswer]> = answers.map((a) => [
    a.id,
    {
      result: a.verdict.result,
      doNotCall: a.verdict.result === 'do_not_call',
      listSource: a.verdict.listSource,
      checkedAt: a.verdict.checkedAt,
      correlationId: a.verdict.correlationId,
      errorCode: null,
      error: note(a.verdict),
      credits: 0,
      httpStatus: null,
      answer: a.verdict.body,
    },
  ]);
  journal.recordFinals(finals);
  journal.markReused(
    finals.map(([id]) => id),
    now.toISOString(),
  );
}

/** The row note of a verdict reused by the answer to the question (as --reuse-within 1d would). */
export function reusedRecentNote(v: Pick<CachedVerdict, 'checkedAt' | 'who'>): string {
  return reusedNote(v, RECENT_MS);
}
