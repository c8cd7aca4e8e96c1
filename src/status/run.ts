// `dnc status`'s use case: each results file's scrub judged (its validity and whether it is fit to dial), or the latest
// scrubs the history recorded.
import type { ComplianceContext } from '../compliance/settings.js';
import type { ScrubRecord } from '../stores/interfaces.js';
import { judgeFitness } from '../verify/fit-to-dial.js';
import { scrubStatus, type ScrubStatus } from './status.js';
import type { VerifyOptions, VerifyReport } from '../verify/verify.js';

export type StatusOptions =
  /** --scrubs: the history's latest scrub records. */
  | { scrubs: true }
  | {
      scrubs?: false;
      /** Results CSVs, manifests or folders, resolved. */
      paths: string[];
      asOf: Date;
      /** --expiring: a scrub that expires within this many ms fails too (0: only expired ones). */
      withinMs: number;
      /** --unanchored: a file anchored nowhere this machine can see may be judged fit (its warning says so). */
      unanchored?: boolean;
    };

export type StatusEvent = { type: 'warning'; text: string };

export interface StatusDeps extends ComplianceContext, Pick<VerifyOptions, 'tzdataVersion'> {
  onEvent(event: StatusEvent): void;
}

export type StatusResult =
  | { kind: 'scrubs'; scrubs: ScrubRecord[]; /** The history's place (named when it holds none). */ where: string }
  | { kind: 'files'; files: ScrubStatus[]; /** Those expired, expiring or not fit to dial. */ failing: ScrubStatus[] };

export async function runStatus(options: StatusOptions, deps: StatusDeps): Promise<StatusResult> {
  if (options.scrubs) {
    const stores = await deps.stores();
    const history = await stores.history({ create: false });
    const scrubs = (await history?.scrubs(100)) ?? [];
    await history?.close();
    return { kind: 'scrubs', scrubs, where: stores.where };
  }
  const { asOf } = options;
  const unanchored = options.unanchored === true;
  const warn = (text: string) => deps.onEvent({ type: 'warning', text });
  // The same judgement as `dnc verify` (and the report's badge): a file verify refuses is never shown valid.
  const judge = (output: string) =>
    judgeFitness(deps, output, { maxAgeMs: null, asOf, listLimit: 0, warn, unanchored }).then(({ report, fitness }) => {
      if (report?.anchorUnchecked) warn(`dnc: ${output}: ${report.anchorUnchecked}`);
      return {
        fitness,
        onlyStale: report !== null && fitness.state === 'not_fit' && onlyStale(report),
      };
    });
  const files = await scrubStatus(options.paths, asOf, options.withinMs, judge);
  const failing = files.filter((f) => f.state === 'expired' || f.state === 'expiring' || f.state === 'not_fit');
  return { kind: 'files', files, failing };
}

/** Whether verify found nothing but age against the file (status then says expired, not "not fit"). */
function onlyStale(r: VerifyReport): boolean {
  return (
    !r.tampered &&
    !r.unproven &&
    (!r.unanchored || r.anchorUnchecked !== null) &&
    Object.keys(r.recheckByReason).every((k) => k === 'stale')
  );
}
