// `dnc report`'s use case: one scrub's results file and manifest read, the internal list it used checked, each listed
// row's reason found in that list's history, the file judged fit to dial or not, and the HTML report written (0600).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../atomic-file.js';
import { checkRecordedList, type ListCheck } from '../compliance/batch-compliance.js';
import { openRecordedList, type ComplianceContext } from '../compliance/settings.js';
import { DncError, inputError, usageError } from '../errors.js';
import { hashFile } from '../file-hash.js';
import { C } from '../results/columns.js';
import type { SuppressionList } from '../stores/interfaces.js';
import type { AuditEntry } from '../stores/suppression-types.js';
import { dataRecordLines } from '../tables/input.js';
import { judgeFitness } from '../verify/fit-to-dial.js';
import type { Fitness } from '../verify/fitness.js';
import { manifestPathFor, outputLayout, readManifest, sideFilePath, walkOutput } from '../evidence/manifest.js';
import type { ReportData, ReportRow } from './data.js';
import type { VerifyOptions } from '../verify/verify.js';

export interface ReportOptions {
  /** The results file of `dnc batch`, resolved. */
  results: string;
  /** -o, as given (resolved against the working folder); default: RESULTS.report.html beside the results. */
  output?: string | undefined;
  /** --include-numbers: list the rows, at most `maxRows` of them. */
  includeNumbers: boolean;
  maxRows: number;
  /** --unanchored: a file anchored nowhere this machine can see may be judged fit (the report says what was not
   * checked). */
  unanchored?: boolean;
}

export type ReportEvent = { type: 'warning'; text: string };

export interface ReportDeps extends ComplianceContext, Pick<VerifyOptions, 'tzdataVersion'> {
  now(): Date;
  onEvent(event: ReportEvent): void;
  /** Draws the report's page (the command gives src/render/report-html.ts's, loaded when a report is written). */
  renderHtml(data: ReportData): string | Promise<string>;
}

export interface ReportResult {
  /** The report written. */
  output: string;
  /** The results file's SHA-256 is still the one the manifest recorded. */
  outputMatchesManifest: boolean;
  /** What `dnc verify` says of the file now (the report's badge), and what makes it fit. */
  fit: {
    fit: boolean;
    why: string | null;
    fitness: Fitness;
    /** What --unanchored left unchecked. */ unchecked: string | null;
  };
  callingRulesVersion: string | null;
}

export async function writeReport(options: ReportOptions, deps: ReportDeps): Promise<ReportResult> {
  const { results } = options;
  if (!existsSync(results))
    throw inputError('E_INPUT_MISSING', `${results} does not exist`, {
      hint: 'give the output of `dnc batch` (INPUT.results.csv by default)',
    });
  const manifestPath = manifestPathFor(results);
  const manifest = await readManifest(manifestPath);
  if (!manifest) {
    throw inputError(
      'E_NO_MANIFEST',
      `${results} has no manifest (${manifestPath} is missing): there is nothing to report on`,
      {
        hint: 'rerun `dnc batch` on its input with -o pointing to this file to write the manifest',
      },
    );
  }
  // Named as the manifest is: calls.results.xlsx.report.html when calls.results.csv's report takes the short name.
  const output = path.resolve(deps.cwd, options.output ?? sideFilePath(results, '.report.html'));
  for (const taken of [results, manifestPath, manifest.input.path, manifest.journal]) {
    if (path.resolve(taken) === output)
      throw usageError('E_USAGE', `-o ${output} would overwrite ${taken}`, {
        hint: 'write the report to another file',
      });
  }
  const internalRows: Record<string, number> = {};
  const exemptRows: Record<string, number> = {};
  const rows: Array<Omit<ReportRow, 'line' | 'why'> & { index: number }> = [];
  let omitted = 0;
  const walk = await walkOutput(results, manifest.format, (index, _fields, cells) => {
    const source = cells[C.source] ?? '';
    if (source.startsWith('internal:') && cells[C.result] === 'do_not_call')
      internalRows[source] = (internalRows[source] ?? 0) + 1;
    const exemption = cells[C.exemption] ?? '';
    if (exemption) {
      const basis = exemption.split(' ')[0]!;
      exemptRows[basis] = (exemptRows[basis] ?? 0) + 1;
    }
    if (!options.includeNumbers) return;
    if (rows.length >= options.maxRows) {
      omitted++;
      return;
    }
    rows.push({
      index,
      number: cells[C.e164] ?? '',
      country: cells[C.country] ?? '',
      result: cells[C.result] ?? '',
      source,
      checkedAt: cells[C.checkedAt] ?? '',
      exemption,
    });
  });
  // The list the scrub used: still there, same id, intact history holding the state recorded then?
  const recorded = manifest.compliance?.list ?? null;
  let store: SuppressionList | null = null;
  let listCheck: ListCheck | null = null;
  if (recorded) {
    try {
      // A team's list is read from the team store it was recorded in (this machine's, when it is the same).
      store = await openRecordedList(deps, recorded.path);
      listCheck = await checkRecordedList(store, recorded);
    } catch (err) {
      listCheck = { state: 'missing', detail: (err as Error).message };
    }
  }
  // Why each suppressed or exempt row was so: the audit entries that stood for its number when the
  // scrub ran (through the head it recorded), quoted only from a list whose history checked out.
  const appliedAt = Date.parse(manifest.compliance?.applied_at ?? '');
  const standing =
    options.includeNumbers && store && listCheck?.state === 'verified'
      ? await store.standingAt(new Set(rows.map((r) => r.number).filter(Boolean)), listCheck.entry)
      : null;
  const why = reasonOf(standing, appliedAt);
  const lines = options.includeNumbers
    ? await dataRecordLines(
        outputLayout(results, manifest.format),
        rows.map((r) => r.index),
      )
    : new Map<number, { line: number }>();
  const fit = await judgeFit(deps, results, options.unanchored === true);
  const html = await deps.renderHtml({
    manifest,
    manifestPath,
    manifestSha256: await hashFile(manifestPath),
    outputMatches: walk.sha256 === manifest.output.sha256,
    generatedAt: deps.now(),
    internalRows,
    exemptRows,
    rows: options.includeNumbers
      ? rows.map(({ index, ...r }) => ({ line: lines.get(index)?.line ?? 0, ...r, why: why(r) }))
      : null,
    rowsOmitted: omitted,
    listCheck,
    fit,
  });
  await store?.close();
  await writePrivately(output, html);
  return {
    output,
    outputMatchesManifest: walk.sha256 === manifest.output.sha256,
    fit,
    callingRulesVersion: manifest.calling_rules_version ?? null,
  };
}

type Standing = Awaited<ReturnType<SuppressionList['standingAt']>>;

/**
 * Why a listed row was suppressed or exempt: the audit entries that stood for its number when the scrub ran
 * (`standing`, null when the list's history did not check out), as the report quotes them.
 */
function reasonOf(
  standing: Standing | null,
  appliedAt: number,
): (r: { number: string; result: string; source: string; exemption: string }) => string {
  const stamp = (iso: string) => iso.replace('T', ' ').replace(/:\d\d(\.\d+)?Z$/, ' UTC');
  const untilText = (until: string | null) =>
    until?.endsWith('T23:59:59.999Z') ? until.slice(0, 10) : stamp(until ?? '');
  const entryText = (verb: string, e: AuditEntry) =>
    `${verb} ${stamp(e.at)} by ${e.who}${e.reason ? `: ${e.reason}` : ''}${e.source ? ` (${e.source})` : ''}` +
    `${e.evidence ? ` [evidence: ${e.evidence}]` : ''}`;
  const heldAtScrub = (e: { until: string | null }) => Date.parse(e.until ?? '') >= appliedAt;
  return (r: { number: string; result: string; source: string; exemption: string }): string => {
    const st = standing?.get(r.number);
    if (!st) return '';
    if (r.source.startsWith('internal:')) {
      if (!st.suppression) return '';
      const x = st.exemption;
      const overridden =
        x && heldAtScrub(x)
          ? `; its exemption (${x.basis} until ${untilText(x.until)}) is overridden: an opt-out revokes consent`
          : '';
      return entryText('added', st.suppression) + overridden;
    }
    if (r.exemption) return st.exemption ? entryText('exempted', st.exemption) : '';
    // A register verdict that an exemption would have turned, had it not ended: reported, not applied.
    const x = st.exemption;
    if (r.result === 'do_not_call' && x && !heldAtScrub(x))
      return `exemption ${x.basis} until ${untilText(x.until)} had expired: ignored (${entryText('exempted', x)})`;
    return '';
  };
}

/** The badge says what `dnc verify` says: one judgement of "fit to dial" for verify, window, status and the report. */
async function judgeFit(deps: ReportDeps, results: string, unanchored: boolean): Promise<ReportResult['fit']> {
  const { report, fitness } = await judgeFitness(deps, results, {
    unanchored,
    maxAgeMs: null,
    asOf: deps.now(),
    listLimit: 0,
    warn: (text) => deps.onEvent({ type: 'warning', text }),
  });
  return { fit: fitness.state === 'fit', why: fitness.because, fitness, unchecked: report?.anchorUnchecked ?? null };
}

/** The report written atomically and private (0600): a temporary file renamed, removed if the write fails. */
async function writePrivately(output: string, html: string): Promise<void> {
  try {
    await writeFileAtomic(output, html, 0o600, { what: 'the report' });
  } catch (err) {
    if (err instanceof DncError) throw err;
    throw inputError(
      'E_OUTPUT_UNWRITABLE',
      `cannot write ${output}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      { hint: 'check that the folder exists and is writable', cause: err },
    );
  }
}
