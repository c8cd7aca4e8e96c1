// What `dnc check` adds for evidence: each lookup recorded in the check history, verdicts cached, and reused with
// --reuse-within.
import type { LookupOutcome } from '../service/client.js';
import { scopeOf, type EvidenceEnv, type Say } from './batch-evidence.js';
import { unkeptStateNote } from '../paths.js';
import type { CachedVerdict } from '../stores/interfaces.js';
import { judgedResultsCache } from '../stores/judged-results-cache.js';

export interface CheckEvidence {
  /** The cached verdict to reuse for `e164` (only with --reuse-within), or null: look it up. */
  reusable(e164: string): Promise<CachedVerdict | null>;
  /** Records an answer: history (for trace and reconcile) and, for a final verdict, the results cache. */
  record(outcome: LookupOutcome, requestedAt: Date, webhookUrl: string | undefined, e164: string): Promise<void>;
  close(): Promise<void>;
}

export async function openCheckEvidence(
  e: EvidenceEnv,
  say: Say,
  service: string,
  reuseWithinMs: number | null,
): Promise<CheckEvidence> {
  // Evidence is a help, never a reason for a check to fail: folders that cannot be written are skipped.
  const attempt = async <T>(what: string, open: () => Promise<T>): Promise<T | null> => {
    try {
      return await open();
    } catch (err) {
      say.debug(`${what} not available: ${(err as Error).message}`);
      return null;
    }
  };
  // A home folder that does not exist is never made: then nothing is kept, and the check says so.
  const unkept = unkeptStateNote(e.env, e.homedir);
  if (unkept) say.info(`dnc: ${unkept}`);
  const stores = await e.stores();
  const history = await attempt('check history', () => stores.history({ create: true }));
  const scope = await scopeOf(e, service);
  const cache = judgedResultsCache(await attempt('results cache', () => stores.resultsCache(scope, { create: true })));
  return {
    async reusable(e164) {
      if (reuseWithinMs === null || !cache) return null;
      return cache.get(e164, new Date(e.now().getTime() - reuseWithinMs));
    },
    async record(outcome, requestedAt, webhookUrl, e164) {
      const b = (outcome.kind === 'bad_response' ? {} : outcome.body) as { correlation_id?: string; country?: string };
      const correlationId =
        outcome.kind === 'bad_response'
          ? (outcome.verdict.correlationId ?? outcome.meta.correlationId)
          : b.correlation_id;
      if (!correlationId) return;
      // What the judge believed: a refused answer's credits are not known (0 recorded, its kind says why).
      const credits =
        outcome.kind === 'started'
          ? (outcome.meta.creditCost ?? 0)
          : outcome.verdict.charged === false
            ? 0
            : (outcome.verdict.credits ?? 0);
      try {
        await history?.record(
          {
            correlationId,
            phoneNumber: e164,
            country: b.country ?? null,
            requestedAt: requestedAt.toISOString(),
            answeredAt: e.now().toISOString(),
            service,
            httpStatus: outcome.meta.status,
            kind: outcome.kind,
            credits,
            body: outcome.text ?? JSON.stringify(outcome.raw),
            webhookUrl: webhookUrl ?? null,
          },
          e.now(),
        );
        // Only a verdict the judge stood by is kept for reuse: never a refused answer, never a failure.
        if (outcome.kind === 'succeeded') {
          const v = outcome.verdict;
          await cache?.put([
            {
              e164,
              country: outcome.body.country,
              result: v.result as 'callable' | 'do_not_call',
              listSource: v.listSource,
              checkedAt: v.checkedAt!,
              correlationId,
              body: outcome.text ?? JSON.stringify(outcome.raw),
            },
          ]);
        }
      } catch (err) {
        // Not silence: the lookup was paid for, and `dnc trace` / `usage --reconcile` will not find it.
        say.warn(`dnc: warning: this check is not recorded in the history: ${(err as Error).message}`);
      }
    },
    async close() {
      await history?.close();
      await cache?.close();
    },
  };
}
