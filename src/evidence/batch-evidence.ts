// What `dnc batch` adds for evidence: results reused from the cache, the credit guard, the manifest, the journal
// registry, the cache filled.
import { hostname } from 'node:os';
import { inputError } from '../errors.js';
import type { BatchJournal } from '../journal/journal.js';
import type { OutputTally } from '../results/tally.js';
import type { ServiceClient } from '../service/client.js';
import { complianceRecordOf } from '../compliance/batch-compliance.js';
import { forecastInOrder, forecastLines } from './credit-guard.js';
import { anchorWritten, writeManifest, type RenderedOutputs } from './manifest.js';
import { keptFolder, publicBaseUrl, unkeptStateNote } from '../paths.js';
import type { ServiceConfig } from '../config.js';
import type { JournalVerdictSource, ResultsCache, StoreScope } from '../stores/interfaces.js';
import type { Stores } from '../stores/owner.js';
import { registerJournal } from '../stores/registry.js';
import { reusedNote, verdictFromRow, type VerdictRow } from '../stores/results-cache.js';
import { creditsOf, findValid, queuedToSend, RecentAnswers, recordReused } from './recent-answers.js';
import type { ValidityRules } from '../compliance/validity.js';
import { formatInteger } from '../text/numbers.js';
import type { ComplianceContext, ComplianceFlags } from '../compliance/settings.js';
import { reusableLine, ReusableCounter, type Reusable } from './reusable.js';
import { conflictingNumbersSql, hasReusedAt, lookupVerdictsSql, settledNumbersOf } from '../journal/views.js';
import { complianceSettings } from '../compliance/settings.js';
import { judgedResultsCache } from '../stores/judged-results-cache.js';

/** How the hooks report (the command's context satisfies it). */
export interface Say {
  info(line: string): void;
  warn(line: string): void;
  debug(line: string): void;
}

export interface EvidenceEnv {
  env: Record<string, string | undefined>;
  homedir: string;
  now(): Date;
  /** The stores the `store` setting names (the context's). */
  stores(): Promise<Stores>;
  /** The service's configuration: its key scopes the results cache (as a salted HMAC, never the key). */
  serviceConfig(): Promise<ServiceConfig>;
}

/**
 * The results cache's scope for `service`: the configured key, else (`dnc listen` is given none) the accounts the
 * batch recorded in its journal.
 */
export async function scopeOf(
  e: Pick<EvidenceEnv, 'serviceConfig'>,
  service: string,
  accounts?: Readonly<Record<string, string>>,
): Promise<StoreScope> {
  try {
    return { service, apiKey: (await e.serviceConfig()).apiKey.value, accounts };
  } catch (err) {
    if (accounts) return { service, accounts };
    throw err;
  }
}

/**
 * Records in the journal the account its verdicts are cached under in this store (a salted HMAC, never the key), so
 * that `dnc listen`, which needs no key, fills the same cache. Best effort.
 */
export async function recordAccount(e: EvidenceEnv, journal: BatchJournal, service: string): Promise<void> {
  const meta = journal.meta();
  if (!meta) return;
  try {
    const a = await (await e.stores()).account(await scopeOf(e, service));
    if (a && meta.accounts?.[a.place] !== a.account)
      journal.setMeta({ ...meta, accounts: { ...meta.accounts, [a.place]: a.account } });
  } catch {
    // No cache can be kept (no home folder): listen then has nothing to fill either.
  }
}

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
export async function reusableCounter(
  e: EvidenceEnv & ComplianceContext,
  service: string,
  flags: ComplianceFlags,
): Promise<ReusableCounter | null> {
  try {
    const rules = (await complianceSettings(e, flags)).validity;
    return await ReusableCounter.open(await e.stores(), await scopeOf(e, service), e.now(), rules);
  } catch {
    return null; // (the config is read again, and its problems said, where the batch needs it)
  }
}

/**
 * The results cache when it holds answers of `service` from the last day (src/batch/repay.ts decides on them), else
 * null: judged by the validity windows the scrub is made under.
 */
export async function recentAnswersOf(
  e: EvidenceEnv & ComplianceContext,
  service: string,
  flags: ComplianceFlags,
): Promise<RecentAnswers | null> {
  try {
    const rules = (await complianceSettings(e, flags)).validity;
    return await RecentAnswers.open(await e.stores(), await scopeOf(e, service), e.now(), rules);
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

/** Before any lookup: the journal is registered (for trace and reconcile), and cached verdicts reused when asked. */
export async function beforeLookups(
  e: EvidenceEnv & ComplianceContext,
  say: Say,
  journal: BatchJournal,
  options: { service: string; reuseWithinMs: number | null; compliance: ComplianceFlags },
): Promise<void> {
  const meta = journal.meta();
  const unkept = unkeptStateNote(e.env, e.homedir);
  if (unkept) say.info(`dnc: ${unkept}`);
  await recordAccount(e, journal, options.service);
  const state = keptFolder(e.env, e.homedir, 'state');
  if (state === null || !(await registerJournal(state, journal.path, meta?.outputPath ?? '', e.now()))) {
    say.debug('could not register the journal in the state folder (dnc trace will need --journal)');
  }
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

/** After OUTPUT.csv is written: the manifest beside it, and the batch's verdicts into the results cache. */
export async function afterRender(
  e: EvidenceEnv,
  say: Say,
  journal: BatchJournal,
  options: {
    baseUrl: string;
    startedAt: Date;
    rendered?: RenderedOutputs;
    unansweredSends?: number;
    /** Set when the results cache is filled already, or is being filled (rememberVerdictsIn): why it could not be. */
    verdictsRemembered?: Promise<string | null>;
  },
): Promise<void> {
  const meta = journal.meta();
  if (!meta) return;
  const writing = writeManifest(meta, journal.path, e.now(), {
    rendered: options.rendered,
    baseUrl: publicBaseUrl(options.baseUrl),
    startedAt: options.startedAt.toISOString(),
    finishedAt: e.now().toISOString(),
    compliance: complianceRecordOf(journal),
    // (A scan of every number: the batch passes the count it has already taken.)
    unansweredSends: options.unansweredSends ?? journal.unansweredSends(),
  });
  // The results cache is filled while the manifest is on its way to disk: both wait on the disk.
  const remembering =
    options.verdictsRemembered?.then((failure) => sayUnremembered(say, failure)) ??
    rememberVerdicts(e, say, journal.path, meta.serviceOrigin, meta.accounts);
  try {
    const written = await writing;
    say.debug(`wrote ${written.path}`);
    // Where someone who can rewrite the results folder cannot: what was written, for `dnc verify` to compare.
    const state = keptFolder(e.env, e.homedir, 'state');
    if (!state || !(await anchorWritten(state, written, e.now())))
      say.debug('could not anchor the output in the state folder (verify will say so)');
    await recordScrub(e, say, journal, meta.outputPath, meta.serviceOrigin ?? '', options.rendered?.tally ?? null);
  } finally {
    await remembering;
  }
}

/**
 * Who scrubbed what, for whom and when, in the history (the team's, with a team store): `dnc status --scrubs` reads
 * it. A history that cannot be written is a warning (the output stands).
 */
async function recordScrub(
  e: EvidenceEnv,
  say: Say,
  journal: BatchJournal,
  output: string,
  service: string,
  tally: OutputTally | null,
): Promise<void> {
  try {
    const history = await (await e.stores()).history({ create: true });
    if (!history) return;
    const c = complianceRecordOf(journal);
    const counts = journal.summaryCounts();
    try {
      await history.recordScrub({
        finishedAt: e.now().toISOString(),
        operator: c?.parties.operator ?? '',
        seller: c?.parties.seller ?? null,
        san: c?.parties.san ?? null,
        campaign: c?.parties.campaign ?? null,
        output,
        host: hostname(),
        rows: tally?.rows.total ?? 0,
        callable: tally?.rows.by_result.callable ?? 0,
        credits: tally?.credits_used ?? counts.credits,
        service,
        listId: c?.list?.id ?? null,
        listHead: c?.list?.audit_head ?? null,
      });
    } finally {
      await history.close();
    }
  } catch (err) {
    // Not silence: an auditor asks for this record (a revoked INSERT, a full disk); the scrub itself is done.
    say.warn(`dnc: warning: the scrub is not recorded in the history: ${(err as Error).message}`);
  }
}

/** Puts a journal's final verdicts into the results cache (best effort), for later --reuse-within. */
export async function rememberVerdicts(
  e: EvidenceEnv,
  say: Say,
  journalPath: string,
  service: string | null,
  accounts?: Readonly<Record<string, string>>,
): Promise<void> {
  if (!service) return;
  sayUnremembered(say, await rememberVerdictsIn(openResultsCache(e, service, accounts), journalPath, service));
}

/** What rememberVerdictsIn resolved with, said (for --verbose) when the verdicts could not be put in the cache. */
function sayUnremembered(say: Say, failure: string | null): void {
  if (failure !== null) say.debug(`could not fill the results cache: ${failure}`);
}

/**
 * The results cache, opened before its verdicts are known (a batch opens it while its last answers come); an error
 * (said by its caller) when it cannot be kept: a home folder that does not exist.
 */
export async function openResultsCache(
  e: EvidenceEnv,
  service: string,
  accounts?: Readonly<Record<string, string>>,
): Promise<ResultsCache> {
  const cache = judgedResultsCache(
    await (await e.stores()).resultsCache(await scopeOf(e, service, accounts), { create: true }),
  );
  if (cache === null)
    throw inputError('E_OUTPUT_UNWRITABLE', `the home folder ${e.homedir} does not exist (dnc does not create it)`);
  return cache;
}

/** A journal's verdicts as a results cache takes them in (SQL over the attached file, or rows read from it). */
export function journalVerdictSource(journalPath: string): JournalVerdictSource {
  return {
    path: journalPath,
    sql: (db, schema) => ({
      verdicts: lookupVerdictsSql(schema, hasReusedAt(db, schema)),
      conflicting: conflictingNumbersSql(schema),
    }),
    async rows() {
      const { default: Database } = await import('better-sqlite3');
      const db = new Database(journalPath, { readonly: true, fileMustExist: true, timeout: 5_000 });
      try {
        const verdicts = db
          .prepare<[], VerdictRow>(lookupVerdictsSql('main', hasReusedAt(db, 'main')))
          .all()
          .map(verdictFromRow);
        const conflicting = db
          .prepare<[], { e164: string }>(conflictingNumbersSql('main'))
          .all()
          .map((r) => r.e164);
        return { verdicts, conflicting };
      } finally {
        db.close();
      }
    },
  };
}

/**
 * Puts a journal's final verdicts of `service` into a cache being opened (openResultsCache), which it closes:
 * resolves with why they could not be put there, or null.
 */
export async function rememberVerdictsIn(
  opening: Promise<ResultsCache>,
  journalPath: string,
  service: string | null,
): Promise<string | null> {
  try {
    const cache = await opening;
    try {
      // A verdict cached before a conflicting push showed it may be forged is taken back out.
      if (service) await cache.fill(journalVerdictSource(journalPath));
    } finally {
      await cache.close();
    }
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}
