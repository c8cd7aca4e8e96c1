// What a batch does before its first lookup with the results cache and the balance: the journal registered, cached
// verdicts reused (--reuse-within), the credit guard's estimate and warning, and what the cache could spare.
import type { BatchJournal } from '../journal/journal.js';
import type { ServiceClient } from '../service/client.js';
import { keptFolder, unkeptStateNote } from '../paths.js';
import { registerJournal } from '../stores/registry.js';
import { reusedNote } from '../stores/results-cache.js';
import type { ValidityRules } from '../compliance/validity.js';
import type { StoreScope } from '../stores/interfaces.js';
import type { Stores } from '../stores/owner.js';
import { formatInteger } from '../text/numbers.js';
import { complianceSettings, type ComplianceContext, type ComplianceFlags } from '../compliance/settings.js';
import { settledNumbersOf } from '../journal/views.js';
import { type EvidenceEnv, openResultsCache, recordAccount, type Say, scopeOf } from '../evidence/batch-evidence.js';
import { forecastInOrder, forecastLines } from './credit-guard.js';
import { creditsOf, findValid, queuedToSend, RecentAnswers, recordReused } from './recent-answers.js';
import { reusableLine, ReusableCounter, type Reusable } from './reusable.js';

/**
 * --reuse-within: queued numbers with a verdict of the same service in the cache, checked within the window and still
 * valid for their country (a verdict past its validity window is never reused, whatever the window), get that verdict
 * (original checked_at and correlation id, 0 credits) and are not sent.
 */
export async function reuseCachedVerdicts(
  journal: BatchJournal,
  e: EvidenceEnv,
  service: string,
  windowMs: number,
  now: Date,
  rules: ValidityRules,
): Promise<number> {
  const cache = await openResultsCache(e, service);
  let reused = 0;
  try {
    let after = 0;
    for (;;) {
      const queued = journal.nextQueued(after, 4096);
      if (queued.length === 0) break;
      after = queued[queued.length - 1]!.id;
      const found = await findValid(cache, queued, now, rules, windowMs);
      recordReused(journal, found, (v) => reusedNote(v, windowMs), now);
      reused += found.length;
    }
  } finally {
    await cache.close();
  }
  return reused;
}

/**
 * The credit guard of a batch run, before its first lookup: the balance from /v2/usage_stats (free) against
 * what the queued numbers will cost, in the order they will be sent (learned X-Credit-Cost per country).
 * Returns the warning lines when credits fall short, else none. Never refuses: a 429 stops a batch cleanly,
 * and a balance that cannot be read (the endpoint down, a portal-only account) only skips the guard.
 */
export async function creditShortfall(
  client: Pick<ServiceClient, 'usage'>,
  journal: Pick<BatchJournal, 'nextQueued'>,
  costs: ReadonlyMap<string, number>,
  /** False for a country no lookup will be sent for in this run (webhook-only without --webhook-url, not covered). */
  willSend: (country: string) => boolean = () => true,
): Promise<{ lines: string[]; balanceError: unknown; estimate: { numbers: number; credits: number } }> {
  // The estimate is made over what the run sends, as it sends it (the answers of the last day reused or not).
  const toSend = queuedToSend(journal, willSend);
  const estimate = { numbers: toSend.length, credits: creditsOf(toSend, costs) };
  let remaining: number;
  try {
    const period = (await client.usage()).body.data[0];
    if (!period) return { lines: [], balanceError: null, estimate };
    remaining = period.credits_remaining;
  } catch (err) {
    return { lines: [], balanceError: err, estimate };
  }
  const f = forecastInOrder(
    toSend.map((q) => q.country),
    costs,
    remaining,
  );
  return { lines: f.short ? forecastLines(f, 'batch') : [], balanceError: null, estimate };
}

/** The credit guard's estimate, for --verbose. */
export function estimateLine(e: { numbers: number; credits: number }): string {
  return `credit guard: ${formatInteger(e.numbers)} number(s) to look up, about ${formatInteger(e.credits)} credit(s)`;
}

/**
 * The credit guard's word on the results cache, before the first lookup: how many of the numbers about to be
 * looked up (`sample`: the list, or its first thousand numbers while the rest is read) have a verdict there that
 * --reuse-within would reuse, and what that would save; null when none has. Closes the counter.
 */
export async function reusableGuardLine(
  counter: ReusableCounter,
  sample: Pick<BatchJournal, 'nextQueued'>,
  costs: ReadonlyMap<string, number>,
  willSend: (country: string) => boolean,
  stillReading: boolean,
  /** Numbers said already (the answers of the last day paid again). */
  except: ReadonlySet<number> = new Set(),
): Promise<string | null> {
  let numbers = 0;
  for (let after = 0, page = sample.nextQueued(0, 4096); page.length > 0; page = sample.nextQueued(after, 4096)) {
    after = page[page.length - 1]!.id;
    for (const q of page) {
      if (!willSend(q.country) || except.has(q.id)) continue;
      numbers++;
      counter.add(q.e164, q.country);
    }
  }
  const found = await counter.done(costs);
  if (!found) return null;
  const soFar = stillReading ? ' (of the numbers read so far: the list is still being read)' : '';
  return `credit guard: ${reusableLine(found, numbers)}${soFar}`;
}

/**
 * Counts the numbers a batch will look up against the results cache, when it holds recent verdicts of `service`
 * and --reuse-within was not given (null otherwise, or when there is no cache): judged by the validity windows
 * the scrub is made under.
 */
export function reusableCounter(
  e: EvidenceEnv & ComplianceContext,
  service: string,
  flags: ComplianceFlags,
): Promise<ReusableCounter | null> {
  return cacheViewOf(e, service, flags, (...a) => ReusableCounter.open(...a));
}

/**
 * The results cache when it holds answers of `service` from the last day (src/batch/repay.ts decides on them), else
 * null: judged by the validity windows the scrub is made under.
 */
export function recentAnswersOf(
  e: EvidenceEnv & ComplianceContext,
  service: string,
  flags: ComplianceFlags,
): Promise<RecentAnswers | null> {
  return cacheViewOf(e, service, flags, (...a) => RecentAnswers.open(...a));
}

/** A view of the results cache of `service` under the scrub's validity windows; null when it cannot be had. */
async function cacheViewOf<T>(
  e: EvidenceEnv & ComplianceContext,
  service: string,
  flags: ComplianceFlags,
  open: (stores: Stores, scope: StoreScope, now: Date, rules: ValidityRules) => Promise<T | null>,
): Promise<T | null> {
  try {
    const rules = (await complianceSettings(e, flags)).validity;
    return await open(await e.stores(), await scopeOf(e, service), e.now(), rules);
  } catch {
    return null; // (the config is read again, and its problems said, where the batch needs it)
  }
}

/**
 * What --reuse-within would spare of what a run would send (a dry run): the fresh verdicts found while the list was
 * read, less those of countries not covered and, when a stopped batch would resume (`rerun`), those of numbers its
 * journal has answered, has pending, or (without --resend-unanswered) sent without an answer: none is sent again.
 */
export async function reusableOfRun(
  counter: ReusableCounter,
  fresh: ReadonlyArray<{ e164: string; country: string; age: number }>,
  unsupported: ReadonlySet<string>,
  rerun: { path: string; inUse: boolean; resend: boolean } | null,
  costs: ReadonlyMap<string, number>,
): Promise<Reusable | null> {
  const sendable = fresh.filter((f) => !unsupported.has(f.country));
  const numbers = sendable.map((f) => f.e164);
  const settled = rerun
    ? await settledNumbersOf(rerun.path, rerun.inUse, numbers, rerun.resend).catch(() => null)
    : new Set<string>();
  if (settled === null) {
    await counter.close(); // a journal that cannot be read: no count rather than a wrong one
    return null;
  }
  for (const f of sendable) if (!settled.has(f.e164)) counter.count(f.age, f.country);
  return counter.done(costs);
}

/**
 * The run's bookkeeping, made once the first lookups are on the wire (it creates files a first scrub does not have yet,
 * with their syncs, which would otherwise delay them): the journal registered for trace and reconcile, and the
 * account its verdicts are cached under recorded in it (for `dnc listen`). Best effort, said with --verbose.
 */
export async function registerRun(e: EvidenceEnv, say: Say, journal: BatchJournal, service: string): Promise<void> {
  await recordAccount(e, journal, service);
  const state = keptFolder(e.env, e.homedir, 'state');
  const output = journal.meta()?.outputPath ?? '';
  if (state === null || !(await registerJournal(state, journal.path, output, e.now()))) {
    say.debug('could not register the journal in the state folder (dnc trace will need --journal)');
  }
}

/** Before any lookup: a state folder not kept is said, and cached verdicts reused when asked (--reuse-within). */
export async function beforeLookups(
  e: EvidenceEnv & ComplianceContext,
  say: Say,
  journal: BatchJournal,
  options: { service: string; reuseWithinMs: number | null; compliance: ComplianceFlags },
): Promise<void> {
  const unkept = unkeptStateNote(e.env, e.homedir);
  if (unkept) say.info(`dnc: ${unkept}`);
  if (options.reuseWithinMs === null) return;
  let reused = 0;
  try {
    const rules = (await complianceSettings(e, options.compliance)).validity;
    reused = await reuseCachedVerdicts(journal, e, options.service, options.reuseWithinMs, e.now(), rules);
  } catch (err) {
    // Without the cache every number is simply looked up: slower and dearer, never wrong.
    say.warn(
      `dnc: warning: --reuse-within: the results cache cannot be read (${(err as Error).message}); every number ` +
        `is looked up`,
    );
  }
  if (reused > 0)
    say.info(
      `${formatInteger(reused)} number(s) reused from earlier lookups (checked within the --reuse-within ` +
        `window): not sent, no credits`,
    );
}
