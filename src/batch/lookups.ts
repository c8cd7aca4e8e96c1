// The lookups of a batch: what is sent, the costs learned, the numbers weighed by the credit guard.
import type { ServiceClient } from '../service/client.js';
import type { BatchJournal } from '../journal/journal.js';
import type { SchedulerOutcome, SchedulerProgress } from './scheduler.js';
import { formatInteger } from '../text/numbers.js';
import type { BatchOptions, RunContext } from './job.js';
import type { Reading } from './read-input.js';
import { writeCosts } from '../stores/cost-cache.js';
import { keptFolder } from '../paths.js';
import { BatchScheduler } from './scheduler.js';
import { WEBHOOK_ONLY_COUNTRIES } from '../wire/types.js';
import { createHash, randomUUID } from 'node:crypto';
import { DEFAULT_RETRIES, DEFAULT_TIMEOUT_MS, loadConfigFile } from '../config.js';
import { validityRules, windowDays } from '../compliance/validity.js';
import { DAY_MS } from '../time.js';
import { operatorOf } from '../compliance/settings.js';
import { claimLeaseMs } from '../stores/lease.js';
import { TeamClaims } from '../stores/team-claims.js';
import { adoptPushedVerdicts } from './team-adoption.js';
import { shareScrub } from './share-scrub.js';
import { journalVerdictSource } from '../evidence/batch-evidence.js';

export async function rememberCosts(ctx: RunContext, journal: BatchJournal): Promise<void> {
  const origin = journal.meta()?.serviceOrigin;
  if (!origin) return;
  const dir = keptFolder(ctx.env, ctx.homedir, 'cache');
  if (dir === null || !(await writeCosts(dir, origin, journal.learnedCosts(), ctx.now()))) {
    ctx.debug('could not write the cost cache (dry-run estimates will not know these costs)');
  }
}

/** The team store's claims for this run, or null with the local store (one person's: nothing to arbitrate). */
export async function teamClaimsFor(
  ctx: RunContext,
  journal: BatchJournal,
  service: string,
  options: BatchOptions,
): Promise<TeamClaims | null> {
  const stores = await ctx.stores();
  if (!stores.claimsLookups) return null;
  const claimant = `${operatorOf(ctx.env)} pid ${ctx.lockDeps.pid} run ${randomUUID().slice(0, 8)}`;
  // This batch, whoever runs it next: the journal (its lock says one run at a time) where it is, made when.
  const origin = createHash('sha256')
    .update(`${operatorOf(ctx.env)}\0${journal.path}\0${journal.meta()?.createdAt ?? ''}`)
    .digest('hex')
    .slice(0, 32);
  const lease = claimLeaseMs(ctx.flags.timeout ?? DEFAULT_TIMEOUT_MS, ctx.flags.retries ?? DEFAULT_RETRIES);
  const apiKey = (await ctx.serviceConfig()).apiKey.value;
  const claims = await stores.claims({ service, apiKey }, claimant, lease, origin);
  if (!claims) return null;
  // A colleague's verdict stands as long as the register's rules let it be relied on: its country's window. With
  // --no-reuse, only one of the same moment (within a lease) is taken: the user asked to pay for fresh answers.
  const rules = validityRules((await loadConfigFile(ctx.flags, ctx.env, ctx.homedir)).file.validity_days);
  const windowMs = options.noReuse ? null : (c: string) => windowDays(rules, c) * DAY_MS;
  const team = new TeamClaims(claims, options.resendUnanswered === true, ctx.now, windowMs);
  // Answers an earlier run of this batch kept while the store was away (or was killed before settling): in the store
  // before this run claims anything, so no colleague writes those numbers unanswered, or pays for them again.
  await team.settleEarlier((await journalVerdictSource(journal.path).rows()).verdicts);
  return team;
}

export async function runLookups(
  ctx: RunContext,
  journal: BatchJournal,
  client: ServiceClient,
  options: BatchOptions,
  knownCosts: ReadonlyMap<string, number>,
  reading: Reading | null,
  on: { answered: (progress: SchedulerProgress) => void; drained: () => void },
): Promise<SchedulerOutcome> {
  const service = journal.meta()?.serviceOrigin;
  const team = service ? await teamClaimsFor(ctx, journal, service, options) : null;
  // With a team store, other runners may help (`dnc batch --join`): not with numbers sent in webhook mode.
  const joinable = (country: string) => !options.webhookAll && !WEBHOOK_ONLY_COUNTRIES.includes(country);
  const apiKey = team ? (await ctx.serviceConfig()).apiKey.value : '';
  const shared = team && service ? await shareScrub(ctx, journal, team, { service, apiKey }, reading, joinable) : null;
  const scheduler = new BatchScheduler({
    team,
    journal,
    client,
    concurrency: options.concurrency,
    maxCredits: options.maxCredits,
    webhookUrl: options.webhookUrl ?? null,
    webhookAll: options.webhookAll,
    knownCosts,
    ...(reading ? { incoming: reading } : {}),
  });
  ctx.emit({ type: 'lookups-started' });
  scheduler.on('progress', (p: SchedulerProgress) => {
    ctx.emit({ type: 'progress', progress: p });
    on.answered(p);
  });
  scheduler.on('drained', on.drained);
  let quit = false;
  let ended = false;
  const off = ctx.interrupts.on((count) => {
    if (count === 1) {
      ctx.emit({ type: 'stopping' });
      scheduler.stop('interrupted');
    } else {
      quit = true;
      scheduler.abandon();
      reading?.abort();
    }
  });
  // A list that cannot be read to its end (malformed CSV): no new lookups; those in flight are awaited and kept.
  reading?.done.catch(() => scheduler.stop('interrupted'));
  try {
    let sentInFirstTurn = 0;
    const firstTurn = (p: SchedulerProgress) => (sentInFirstTurn = p.sent);
    scheduler.on('progress', firstTurn);
    // run() claims and sends the first lookups in its first turn, which is synchronous.
    const running = scheduler.run();
    scheduler.off('progress', firstTurn);
    // Reading goes on once the first turn's lookups are on the wire: connecting and writing them are callbacks that a
    // thousand rows normalised in between would hold back (a long list's first lookup came 100 ms after a short one's,
    // and the first turn's last lookups 25–50 ms after its first). When nothing was sent (the first numbers were all
    // answered locally), it goes on at once.
    if (reading) {
      if (sentInFirstTurn === 0) reading.lookupsStarted();
      else
        void Promise.race([client.firstLookupsSent?.() ?? Promise.resolve(), running]).then(
          reading.lookupsStarted,
          reading.lookupsStarted,
        );
    }
    const outcome = await running;
    ended = outcome.stoppedReason === null && outcome.fatal === null && !outcome.abandoned;
    // The output is rendered from every row: reading goes on to the end after the lookups (a first Ctrl-C
    // included, which costs no credit); a second Ctrl-C stops it.
    if (reading) {
      // Aborted by the second Ctrl-C: it rejects as it was told to, and the run is abandoned anyway.
      if (outcome.abandoned) await reading.done.catch(() => {});
      else {
        try {
          await reading.done;
        } catch (err) {
          if (quit) return { ...outcome, abandoned: true };
          const e = err as { hint?: string; code?: unknown };
          if (outcome.sent > 0 && typeof err === 'object' && err !== null) {
            // A fault of the list (its bytes, its CSV) is fixed in the list; anything else (a full disk) where it lies.
            const what =
              typeof e.code === 'string' && e.code.startsWith('E_INPUT') ? 'the list is fixed' : 'that is fixed';
            Object.assign(err, {
              hint:
                `${e.hint ? `${e.hint}; ` : ''}the ${formatInteger(outcome.sent)} lookup(s) sent while the ` +
                `list was read are kept in the journal: run the same command once ${what} and they are not ` +
                `sent, or paid for, again`,
            });
          }
          throw err;
        }
      }
    }
    return outcome;
  } finally {
    off();
    // Joiners stop: with every number answered, or because this run stopped.
    await shared?.end(ended ? 'done' : 'stopped');
    // What this run claimed and never sent is free for the others at once; its heartbeat stops. A close that fails
    // leaves what a crash leaves (claims that lapse with their lease), and every answer is journaled already.
    await team?.close().catch(() => {});
    ctx.emit({ type: 'lookups-ended' });
  }
}

/** The journal's queue as it is now, for a reader that runs later (the credit guard, once the balance comes). */
/** How many numbers of a list still being read the credit guard waits for (or the end of the list). */
const GUARD_SAMPLE = 1024;

/**
 * The numbers a run sends while its list is read, as the credit guard weighs them: the balance was asked before
 * any lookup, so it must cover those queued when the lookups began and every number read after (sent by then or
 * not). Weighed once the list is read or its first thousand numbers are, whichever comes first: the first lookups
 * go out after a few rows, and an estimate over those alone would say little.
 */
export async function numbersOfThisRun(
  journal: BatchJournal,
  reading: Reading,
): Promise<Pick<BatchJournal, 'nextQueued'>> {
  const numbers = pagesOf((after, limit) => journal.nextQueued(after, limit));
  const lastAtStart = journal.lastNumberId();
  await new Promise<void>((resolve) => {
    let read = numbers.length;
    reading.subscribe((added) => {
      read += added;
      if (read >= GUARD_SAMPLE || !reading.reading) resolve();
    });
    reading.done.then(resolve, resolve);
  });
  numbers.push(...pagesOf((after, limit) => journal.numbersAfter(Math.max(after, lastAtStart), limit)));
  return {
    nextQueued: (afterId, limit) => {
      const from = numbers.findIndex((q) => q.id > afterId);
      return from < 0 ? [] : numbers.slice(from, from + limit);
    },
  };
}

function pagesOf(
  page: (afterId: number, limit: number) => Array<{ id: number; e164: string; country: string }>,
): Array<{ id: number; e164: string; country: string }> {
  const all: Array<{ id: number; e164: string; country: string }> = [];
  for (let p = page(0, 4096); p.length > 0; p = page(p[p.length - 1]!.id, 4096)) all.push(...p);
  return all;
}

/**
 * Whether a country's numbers go unsent in this run: webhook mode (webhook-only, or --webhook-all) without
 * --webhook-url.
 */
export async function webhookMissingFor(options: BatchOptions): Promise<(country: string) => boolean> {
  return (country) => !options.webhookUrl && (options.webhookAll || WEBHOOK_ONLY_COUNTRIES.includes(country));
}

/** Rows pending on a colleague's webhook lookup whose verdict the team store now holds (none with the local store). */
export async function adoptTeamVerdicts(
  ctx: RunContext,
  journal: BatchJournal,
  service: string,
  options: BatchOptions,
): Promise<number> {
  if (!journal.pendingNumbers().some((p) => p.creditsHeld === 0)) return 0;
  const team = await teamClaimsFor(ctx, journal, service, options);
  if (!team) return 0;
  try {
    return await adoptPushedVerdicts(journal, team);
  } finally {
    // Nothing was claimed here (only adopted): a close that fails leaves the others nothing to wait for.
    await team.close().catch(() => {});
  }
}
