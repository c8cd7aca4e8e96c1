// What a batch adds for evidence once its outputs are written (the manifest, the anchor, the scrub record, the results
// cache filled), and the results cache as batch, check and listen reach it. What a batch does with the cache and the
// balance before its first lookup is src/batch/before-lookups.ts's.
import { hostname } from 'node:os';
import { inputError } from '../errors.js';
import type { BatchJournal } from '../journal/journal.js';
import type { OutputTally } from '../results/tally.js';
import { complianceRecordOf } from '../compliance/batch-compliance.js';
import { writeManifest, type RenderedOutputs } from './manifest.js';
import { anchorEverywhere } from './anchor.js';
import { publicBaseUrl } from '../paths.js';
import type { ServiceConfig } from '../config.js';
import type { JournalVerdictSource, ResultsCache, StoreScope } from '../stores/interfaces.js';
import type { Stores } from '../stores/owner.js';
import { verdictFromRow } from '../stores/results-cache.js';
import { conflictingNumbersSql, journalVerdictsOf, lookupVerdictsSql } from '../journal/views.js';
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
  if (!journal.meta()) return;
  try {
    const a = await (await e.stores()).account(await scopeOf(e, service));
    // The meta as it is now (the run may have written it meanwhile: this runs beside the lookups).
    const meta = journal.meta();
    if (a && meta && meta.accounts?.[a.place] !== a.account)
      journal.setMeta({ ...meta, accounts: { ...meta.accounts, [a.place]: a.account } });
  } catch {
    // No cache can be kept (no home folder): listen then has nothing to fill either.
  }
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
    const anchored = await anchorEverywhere(e, written);
    if (!anchored.local) say.debug('could not anchor the output in the state folder (verify will say so)');
    if (typeof anchored.team === 'string')
      say.warn(
        `dnc: warning: the output is not anchored in the team store (${anchored.team}): \`dnc verify\` on ` +
          'another machine will call it unproven',
      );
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
    sql: (schema, columnsOf) => ({
      verdicts: lookupVerdictsSql(schema, columnsOf('numbers').includes('reused_at')),
      conflicting: conflictingNumbersSql(schema),
    }),
    async rows() {
      const { verdicts, conflicting } = journalVerdictsOf(journalPath);
      return { verdicts: verdicts.map(verdictFromRow), conflicting };
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
