// Whether a results file is fit to dial: the one judgement `dnc verify`, `dnc report` and `dnc status` all show.
import { existsSync } from 'node:fs';
import { DncError, ExitCode } from '../errors.js';
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
import { manifestPathFor, RUN_ID, type Manifest } from '../evidence/manifest.js';
import { hashFile } from '../file-hash.js';
import type { AnchorsSeen } from './anchored.js';
import { BatchJournal } from '../journal/journal.js';
import { shownPath } from '../paths.js';
import { shellWord } from '../text/shell.js';
import { WEBHOOK_ONLY_COUNTRIES } from '../wire/types.js';
import { fitnessOf, fitnessRefused, type Fitness, type RerunFacts } from './fitness.js';

export interface FitToDialOptions extends Pick<
  VerifyOptions,
  'maxAgeMs' | 'asOf' | 'listLimit' | 'withoutJournal' | 'unanchored' | 'onRow' | 'onFlag'
> {
  /** Told when the internal list cannot be read (its rows are then not checked against it). */
  warn(line: string): void;
}

/** verify's report, with the judgement every reader shows of it (src/verify/fitness.ts). */
export type JudgedReport = VerifyReport & { fitness: Fitness };

/**
 * verifyOutput with everything it is judged against: the internal do-not-call list as it is now (the one the scrub
 * recorded, else the user's), and the state folder's anchor of what dnc last wrote for this output. The report
 * carries the one judgement of fitness, with what a rerun of its batch would do for the rows without a verdict.
 */
export async function fitToDial(
  ctx: ComplianceContext & Pick<VerifyOptions, 'tzdataVersion'>,
  output: string,
  o: FitToDialOptions,
): Promise<JudgedReport> {
  // A results file or manifest that is not there is said so before the list is opened (which may wait for a lock).
  const manifest = await manifestToVerify(output);
  const recordedList = manifest.compliance?.list ?? null;
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
  const anchors = await anchorsOf(ctx, output, manifest);
  try {
    // The list at the recorded path must be the one the scrub used, its history still holding the state it used.
    if (list && recordedList && listPath === recorded) {
      const same = await checkRecordedList(list, recordedList);
      if (same.state !== 'verified') throw listAlteredError(listPath, same.detail, consequence, true);
    }
    // Read once: every row of the output is asked about (a team list is a round trip away).
    const onList = list ? new Set((await list.suppressions()).map((s) => s.e164)) : null;
    const report = await verifyOutput(output, {
      ...o,
      tzdataVersion: ctx.tzdataVersion,
      anchors,
      stateDir: stateDir(ctx.env, ctx.homedir),
      suppressedNow: onList ? (e164) => onList.has(e164) : undefined,
    });
    const unfinished = (report.recheckByReason.failed ?? 0) + (report.recheckByReason.not_checked ?? 0) > 0;
    const rerun = unfinished && !report.tampered ? await rerunFacts(ctx.cwd, output, manifest) : null;
    return { ...report, fitness: fitnessOf(report, rerun) };
  } finally {
    await list?.close();
  }
}

/**
 * fitToDial's judgement, or, for a file that cannot be judged (its list altered or held, a file that does not read),
 * not fit with the error's words: `dnc status` and `dnc report` say it beside their other findings.
 */
export async function judgeFitness(
  ctx: ComplianceContext & Pick<VerifyOptions, 'tzdataVersion'>,
  output: string,
  o: FitToDialOptions,
): Promise<{ report: JudgedReport | null; fitness: Fitness }> {
  try {
    const report = await fitToDial(ctx, output, o);
    return { report, fitness: report.fitness };
  } catch (err) {
    if (err instanceof DncError && err.exitCode === ExitCode.INPUT)
      return { report: null, fitness: fitnessRefused(err) };
    throw err;
  }
}

/** What a rerun of the output's batch does with its rows without a verdict, from its journal (null: none is there). */
async function rerunFacts(cwd: string, output: string, manifest: Manifest): Promise<RerunFacts | null> {
  if (!existsSync(manifest.journal)) return null;
  const journal = await BatchJournal.open(manifest.journal, { create: false }).catch(() => null);
  if (!journal) return null;
  try {
    const word = (p: string) => shellWord(shownPath(cwd, p));
    const besideOutput = manifest.journal === `${output}.journal.sqlite`;
    const command =
      `dnc batch ${word(manifest.input.path)} -o ${word(output)}` +
      (besideOutput ? '' : ` --journal ${word(manifest.journal)}`);
    // A bare rerun sends no number of a webhook-only country (without --webhook-url) nor of one the service said
    // it does not cover: those are not among what it looks up.
    const unsupported = new Set(journal.unsupportedCountries());
    let lookUp = 0;
    const needWebhook = { numbers: 0, countries: [] as string[] };
    for (const [country, n] of [...journal.sends.toLookUpOnRerunByCountry()].sort(([a], [b]) => a.localeCompare(b))) {
      if (WEBHOOK_ONLY_COUNTRIES.includes(country)) {
        needWebhook.numbers += n;
        needWebhook.countries.push(country);
      } else if (!unsupported.has(country)) lookUp += n;
    }
    return { command, lookUp, needWebhook, resend: journal.failedToResend() };
  } finally {
    journal.close();
  }
}

/** The anchors this machine can see of an output: its state folder's, and the team store's of the manifest's run. */
async function anchorsOf(ctx: ComplianceContext, output: string, manifest: Manifest): Promise<AnchorsSeen> {
  const runId = manifest.run_id !== undefined && RUN_ID.test(manifest.run_id) ? manifest.run_id : null;
  const local = await readLocalAnchor(stateDir(ctx.env, ctx.homedir), output, manifestPathFor(output));
  try {
    // Null for one person's files: their anchors are the state folder's only.
    const team = await (await ctx.stores()).teamAnchors();
    if (!team) return { local, team: null, teamUnread: null, runId };
    return { local, team: runId ? await team.ofRun(runId) : [], teamUnread: null, runId };
  } catch (err) {
    return { local, team: null, teamUnread: (err as Error).message, runId };
  }
}

/** The state folder's anchor of this output's path, else of its manifest wherever it was written (moved since). */
async function readLocalAnchor(dir: string, output: string, manifest: string) {
  if (!existsSync(dir)) return null;
  try {
    const anchors = await Anchors.open(dir);
    try {
      return anchors.output(output) ?? anchors.outputWithManifest(await hashFile(manifest));
    } finally {
      anchors.close();
    }
  } catch {
    return null;
  }
}
