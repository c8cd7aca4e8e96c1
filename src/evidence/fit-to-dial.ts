// Whether a results file is fit to dial: the one judgement `dnc verify`, `dnc report` and `dnc status` all show.
import { existsSync } from 'node:fs';
import { DncError } from '../errors.js';
import { checkRecordedList } from '../compliance/batch-compliance.js';
import {
  complianceSettings,
  listAlteredError,
  openListForScrub,
  type ComplianceContext,
} from '../compliance/settings.js';
import { Anchors } from '../stores/anchors.js';
import { stateDir } from '../paths.js';
import { manifestToVerify, verifyOutput, type VerifyOptions, type VerifyReport } from './verify.js';

export interface FitToDialOptions extends Pick<
  VerifyOptions,
  'maxAgeMs' | 'asOf' | 'listLimit' | 'withoutJournal' | 'onRow' | 'onFlag'
> {
  /** Told when the internal list cannot be read (its rows are then not checked against it). */
  warn(line: string): void;
}

/**
 * verifyOutput with everything it is judged against: the internal do-not-call list as it is now (the one the scrub
 * recorded, else the user's), and the state folder's anchor of what dnc last wrote for this output.
 */
export async function fitToDial(
  ctx: ComplianceContext & Pick<VerifyOptions, 'tzdataVersion'>,
  output: string,
  o: FitToDialOptions,
): Promise<VerifyReport> {
  // A results file or manifest that is not there is said so before the list is opened (which may wait for a lock).
  const recordedList = (await manifestToVerify(output)).compliance?.list ?? null;
  const recorded = recordedList?.path;
  const settings = await complianceSettings(ctx);
  const consequence = 'no results file can be judged fit against it';
  // The list the scrub used, deleted since: as `check` and `batch` refuse it, so do verify, report and status (a file
  // that no list vouches for is not fit). A team's list (a URL) is the store's to answer for.
  if (recordedList && recorded && !/^[a-z]+:\/\//i.test(recorded) && !existsSync(recorded))
    throw listAlteredError(
      recorded,
      `it is gone; the scrub used it with ${recordedList.audit_entries} audit entries`,
      consequence,
      true,
    );
  // The list the scrub recorded is a team's (it may be shared): opened as named, so its modes stay as they are.
  const useRecorded = recorded !== undefined && existsSync(recorded) && recorded !== settings.listPath;
  const listPath = useRecorded ? recorded : settings.listPath;
  const list = await openListForScrub(
    ctx,
    { ...settings, listPath, listExplicit: useRecorded || settings.listExplicit },
    undefined,
    consequence,
  ).catch((err: unknown) => {
    // A list altered outside dnc cannot vouch for anything, and a list kept locked cannot be read: either way no row
    // can be judged against it. No list at all leaves that check out.
    if (err instanceof DncError && (err.code === 'E_LIST_ALTERED' || err.code === 'E_LIST_BUSY')) throw err;
    if (existsSync(listPath))
      o.warn(
        `dnc: warning: the internal do-not-call list ${listPath} could not be read (${(err as Error).message}): ` +
          `rows are not checked against it`,
      );
    return null;
  });
  const anchor = await readAnchor(stateDir(ctx.env, ctx.homedir), output);
  try {
    // The list at the recorded path must be the one the scrub used, its history still holding the state it used.
    if (list && recordedList && listPath === recorded) {
      const same = await checkRecordedList(list, recordedList);
      if (same.state !== 'verified') throw listAlteredError(listPath, same.detail, consequence, true);
    }
    // Read once: every row of the output is asked about (a team list is a round trip away).
    const onList = list ? new Set((await list.suppressions()).map((s) => s.e164)) : null;
    return await verifyOutput(output, {
      ...o,
      tzdataVersion: ctx.tzdataVersion,
      anchor,
      suppressedNow: onList ? (e164) => onList.has(e164) : undefined,
    });
  } finally {
    await list?.close();
  }
}

async function readAnchor(dir: string, output: string) {
  if (!existsSync(dir)) return null;
  try {
    const anchors = await Anchors.open(dir);
    try {
      return anchors.output(output);
    } finally {
      anchors.close();
    }
  } catch {
    return null;
  }
}

/** Why a file is not fit to dial, in a few words (the report's badge, `dnc status`); null when it is fit. */
export function notFitBecause(r: VerifyReport): string | null {
  if (r.fit) return null;
  if (r.tampered) return 'the file is not what dnc wrote';
  if (r.unproven) return 'its batch journal is gone, so its rows cannot be proven';
  const reasons = Object.entries(r.recheckByReason)
    .map(([k, n]) => `${n} ${k}`)
    .join(', ');
  return `${r.recheckCount} row(s) to re-check (${reasons})`;
}
