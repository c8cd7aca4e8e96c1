// Asked before paying again: what a batch does with the numbers this service answered less than a day ago (the
// results cache): reused or paid again, as the terminal answers, as --reuse-within or --no-reuse say, or (no
// terminal, neither flag) paid again and said so. Decided over the same plan the credit guard then weighs.
import type { BatchJournal } from '../journal/journal.js';
import { interruptedError } from '../errors.js';
import { formatInteger } from '../text/numbers.js';
import {
  planSends,
  queuedToSend,
  recordReused,
  RECENT_MS,
  reusedRecentNote,
  type RecentAnswer,
  type RecentAnswers,
  type PaidAgain,
  type ReuseDecision,
  type SendPlan,
} from './recent-answers.js';
import type { BatchOptions, RunContext } from './job.js';
import { webhookMissingFor } from './lookups.js';
import { readCosts } from '../stores/cost-cache.js';
import { claimLeaseMs } from '../stores/lease.js';
import { writtenBy, type CachedVerdict } from '../stores/interfaces.js';
import { cacheDir } from '../paths.js';
import { DEFAULT_RETRIES, DEFAULT_TIMEOUT_MS } from '../config.js';

/** What was decided for the numbers answered within the last day, and what became of them (the summary's). */
export interface RecentOutcome {
  decision: ReuseDecision;
  /** The numbers answered within the last day that the decision was about. */
  answers: readonly RecentAnswer[];
  /** Of them, reused: not sent. */
  reused: number;
  /** Numbers a colleague's dnc answered moments before this run (the team store): reused whatever the decision. */
  teamMoments: number;
}

/**
 * Decides, before the first lookup, what becomes of the numbers answered within the last day. The whole list is in
 * the journal (a batch with recent answers in the cache reads it before sending). An answer on a terminal is written
 * into the journal's remembered options as the flag that says it (--reuse-within 1d or --no-reuse), where the run
 * and its reruns read it. Returns the outcome; throws (exit 130, nothing sent) when the answer is to stop.
 */
export async function settleRecent(
  ctx: RunContext,
  journal: BatchJournal,
  recent: RecentAnswers,
  options: BatchOptions,
  sending: Sending,
): Promise<RecentOutcome | null> {
  let plan: SendPlan;
  try {
    plan = await planSends(queuedToSend(journal, sending.willSend), recent, sending.costs);
  } finally {
    await recent.close();
  }
  // A colleague's dnc answered these moments ago: the team store's claims take such answers as the same lookup's
  // ("never paying twice at the same moment"), so they are reused here, where the credit guard and the question
  // can count them.
  const lease = await teamLeaseOf(ctx);
  const moments = lease === null ? [] : plan.recent.filter((r) => r.ageMs <= lease);
  if (moments.length > 0) {
    recordReused(journal, moments, teamMomentNote, ctx.now());
    ctx.info(
      `${formatInteger(moments.length)} number(s) answered by another dnc of the team moments before this run ` +
        `(the team store): reused, not sent, no credits`,
    );
    plan = { ...plan, recent: plan.recent.filter((r) => r.ageMs > lease!) };
  }
  const answers = plan.recent;
  if (answers.length === 0) return moments.length > 0 ? none(moments.length) : null;
  let decision: ReuseDecision = options.noReuse ? 'pay_again' : 'default';
  if (!options.noReuse && ctx.askReuse) {
    const asked = await ctx.askReuse({
      numbers: answers.length,
      of: plan.toSend.length - moments.length,
      credits: plan.recentCredits,
      oldestMs: Math.max(...answers.map((a) => a.ageMs)),
    });
    if (asked === 'stop') {
      throw interruptedError('stopped before the first lookup, as answered: nothing was sent', {
        hint:
          'run the same command again to be asked again, or say it in the command: --reuse-within 1d reuses the ' +
          'answers of the last day, --no-reuse pays for them again',
      });
    }
    decision = asked;
    const settled =
      asked === 'reuse' ? { reuseWithinMs: RECENT_MS, noReuse: false } : { reuseWithinMs: null, noReuse: true };
    const meta = journal.meta();
    if (meta) {
      journal.setMeta({
        ...meta,
        run: { ...meta.run, ...settled },
        reuseAnswer: {
          answer: asked,
          at: ctx.now().toISOString(),
          numbers: answers.length,
          credits: plan.recentCredits,
        },
      });
    }
  }
  if (decision === 'reuse') {
    recordReused(journal, answers, reusedRecentNote, ctx.now());
    ctx.info(
      `${formatInteger(answers.length)} number(s) answered within the last day reused, as answered: not sent, ` +
        `no credits`,
    );
  } else if (decision === 'default') {
    // A notice, not a warning: the default was asked for, and the summary says it again (--quiet silences this).
    ctx.info(
      `dnc: ${formatInteger(answers.length)} of the ${formatInteger(plan.toSend.length - moments.length)} ` +
        `number(s) to look up were answered by this service within the last day: they are paid for again (about ` +
        `${formatInteger(plan.recentCredits)} credit(s)); --reuse-within 1d reuses them, --no-reuse says to pay again`,
    );
  }
  return { decision, answers, reused: decision === 'reuse' ? answers.length : 0, teamMoments: moments.length };
}

/** What a run sends: the countries it sends to, and what each costs (learned; the journal's over the cache's). */
export interface Sending {
  costs: Map<string, number>;
  willSend(country: string): boolean;
}

export async function sendingOf(
  ctx: RunContext,
  journal: BatchJournal,
  options: BatchOptions,
  service: string,
): Promise<Sending> {
  const costs = new Map([...(await readCosts(cacheDir(ctx.env, ctx.homedir), service)), ...journal.learnedCosts()]);
  const webhookMissing = await webhookMissingFor(options);
  const unsupported = new Set(journal.unsupportedCountries());
  return { costs, willSend: (country) => !webhookMissing(country) && !unsupported.has(country) };
}

/** How long the team store's claims take an answer for "the same moment" (null with the local store: no claims). */
async function teamLeaseOf(ctx: RunContext): Promise<number | null> {
  if (!(await ctx.stores()).claimsLookups) return null;
  return claimLeaseMs(ctx.flags.timeout ?? DEFAULT_TIMEOUT_MS, ctx.flags.retries ?? DEFAULT_RETRIES);
}

function none(teamMoments: number): RecentOutcome {
  return { decision: 'default', answers: [], reused: 0, teamMoments };
}

/** The row note of a number a colleague's dnc answered moments before this run. */
function teamMomentNote(v: Pick<CachedVerdict, 'checkedAt' | 'who'>): string {
  return (
    `reused: checked ${v.checkedAt} by another dnc of the team${writtenBy(v)}, whose lookup had finished before ` +
    `this run asked: ` +
    `its answer was in the team store; no lookup sent, no credits`
  );
}

/** What the summary says of them once the run is over: the numbers of the last day this run paid for again. */
export function paidAgain(
  journal: Pick<BatchJournal, 'verdict' | 'sends'>,
  outcome: RecentOutcome | null,
): PaidAgain | null {
  // Verdicts reused by --reuse-within (no question asked): nothing of them was paid again.
  outcome ??= journal.sends.reused() > 0 ? { ...none(0), decision: 'reuse' } : null;
  if (!outcome) return null;
  let numbers = 0;
  let credits = 0;
  for (const a of outcome.decision === 'reuse' ? [] : outcome.answers) {
    // Its verdict, not its row: the row brings the stored answer along, a body a number read for its credits alone.
    const row = journal.verdict(a.e164);
    if (!row || row.credits <= 0) continue;
    numbers++;
    credits += row.credits;
  }
  // Charged answers without a verdict are in no cache: a run over a list answered within the day pays them again.
  const chargedWithoutVerdict = journal.sends.chargedWithoutVerdict();
  if (numbers === 0 && chargedWithoutVerdict.numbers === 0) return null;
  return { numbers, credits, decision: outcome.decision, chargedWithoutVerdict };
}
