// `dnc verify`'s core: is a batch output exactly what dnc wrote (manifest, journal, input), and is every callable row
// fresh enough to dial?
import { existsSync } from 'node:fs';
import { DncError, inputError } from '../errors.js';
import { isRegularFile } from '../file-kind.js';
import { DAY_MS } from '../time.js';
import { DEFAULT_VALIDITY_DAYS, VALIDITY_DAYS } from '../compliance/validity.js';
import {
  hasCallingColumns,
  manifestPathFor,
  outputLayout,
  phoneColumnsOfOutput,
  readManifest,
  walkOutput,
  type Manifest,
} from '../evidence/manifest.js';
import { TallyBuilder, type OutputTally } from '../results/tally.js';
import { formatInteger } from '../text/numbers.js';
import { dataRecordLines } from '../tables/input.js';
import { readRowsAside } from '../tables/rows-thread.js';
import { RowCursor } from '../tables/row-cursor.js';
import { hashFile } from '../file-hash.js';
import { BatchJournal, type ChainState } from '../journal/journal.js';
import { checkJournal } from '../journal/proof.js';
import { journalAnchorIn } from '../stores/anchors.js';
import { callingCheckOf } from './calling.js';
import type { RecheckReason, SettledUnfinished } from './recheck-tally.js';
import { judgeAnchors, type AnchoredBy } from './anchored.js';
import { VerifyPass, type PassSources, type RecheckRow, type VerifyOptions } from './verify-pass.js';

/**
 * Default --max-age per country: the validity windows of src/compliance/validity.ts (US/CA 31, GB 28, AU 30, others
 * 30).
 */
export const DEFAULT_MAX_AGE_DAYS: Readonly<Record<string, number>> = VALIDITY_DAYS;
export const DEFAULT_MAX_AGE_OTHER_DAYS = DEFAULT_VALIDITY_DAYS;

export type { RecheckReason } from './recheck-tally.js';

export const TAMPER_REASONS: ReadonlySet<RecheckReason> = new Set(['edited', 'out_of_step']);

export type { RecheckRow, VerifyOptions } from './verify-pass.js';

export interface VerifyReport {
  output: string;
  manifest: string;
  fit: boolean;
  tampered: boolean;
  sha256: { manifest: string; actual: string; matches: boolean };
  /** Differences between the manifest's counts and the file's. */
  differences: string[];
  comparedWithJournal: boolean;
  comparedWithInput: boolean;
  /** Why the rows cannot be proven (the journal is gone), or null. Such a file is never fit. */
  unproven: string | null;
  /**
   * The journal against its chain (src/journal/chain.ts): intact, altered (then never fit: the rows were compared
   * with answers dnc did not commit), unchained (an older dnc's) or unanchored here; null without a journal.
   */
  journalChain: ChainState | null;
  /** Why the journal is altered, unchained or unanchored; null when intact. */
  journalChainWhy: string | null;
  /**
   * What the anchors the verifier can see say (the state folder's, the team store's): the file and manifest are what
   * dnc wrote, differ, or are anchored nowhere it can see ("not_here").
   */
  anchored: 'matches' | 'differs' | 'not_here';
  /** Who anchored what the file is, and where. */
  anchoredBy: AnchoredBy | null;
  /** Where the verifier looked for anchors. */
  anchorsLookedIn: string[];
  /**
   * Why the file is anchored nowhere the verifier can see, or null. Such a file is unproven (never fit), unless
   * --unanchored: then `anchorUnchecked` says so.
   */
  unanchored: string | null;
  /** --unanchored judged a file anchored nowhere: what that did not check; null otherwise. */
  anchorUnchecked: string | null;
  tally: OutputTally;
  manifestInfo: Pick<
    Manifest,
    'dnc_version' | 'interface_version' | 'service_base_url' | 'started_at' | 'finished_at' | 'updated_at' | 'journal'
  >;
  /** Findings to re-check (a row's, or a number's of a row of several), the rows they are on: recheck-tally.ts. */
  recheckCount: number;
  recheckRows: number;
  recheckByReason: Partial<Record<RecheckReason, number>>;
  settledUnfinished: SettledUnfinished;
  recheck: RecheckRow[];
  maxAge: { days: number | null; byCountry: Record<string, number>; otherDays: number };
  asOf: string;
  /** The calling rules' version the file's calling columns were computed under, when its manifest records it. */
  callingRulesVersion: string | null;
  /** Why the file's calling columns were not checked (other calling rules than this dnc's), or null. */
  callingUnchecked: string | null;
}

function compareTallies(m: OutputTally, f: OutputTally): string[] {
  const out: string[] = [];
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  if (m.rows.total !== f.rows.total)
    out.push(`rows: ${formatInteger(f.rows.total)} in the file, ${formatInteger(m.rows.total)} in the manifest`);
  for (const r of new Set([...Object.keys(m.rows.by_result), ...Object.keys(f.rows.by_result)])) {
    const a = m.rows.by_result[r] ?? 0;
    const b = f.rows.by_result[r] ?? 0;
    if (a !== b) out.push(`${r} rows: ${formatInteger(b)} in the file, ${formatInteger(a)} in the manifest`);
  }
  if (m.numbers.distinct !== f.numbers.distinct)
    out.push(
      `distinct numbers: ${formatInteger(f.numbers.distinct)} in the file, ${formatInteger(m.numbers.distinct)} ` +
        `in the manifest`,
    );
  if (m.credits_used !== f.credits_used)
    out.push(`credits: ${formatInteger(f.credits_used)} in the file, ${formatInteger(m.credits_used)} in the manifest`);
  if (!same(m.register_sources, f.register_sources)) out.push('register sources differ from the manifest');
  if (!same(m.checked_at, f.checked_at)) out.push('oldest/newest checked_at differ from the manifest');
  if (out.length === 0 && (!same(m.rows.by_country, f.rows.by_country) || !same(m.numbers, f.numbers)))
    out.push('counts by country differ from the manifest');
  return out;
}

/** The manifest of a results file to verify; a typed error when the file or its manifest is not there. */
export async function manifestToVerify(outputPath: string): Promise<Manifest> {
  const manifestPath = manifestPathFor(outputPath);
  if (!existsSync(outputPath)) {
    throw inputError('E_INPUT_MISSING', `${outputPath} does not exist`, {
      hint: 'give the output of `dnc batch` (INPUT.results.csv by default)',
    });
  }
  const manifest = await readManifest(manifestPath);
  if (!manifest) {
    throw inputError(
      'E_NO_MANIFEST',
      `${outputPath} has no manifest (${manifestPath} is missing): nothing proves how it was scrubbed`,
      {
        hint:
          'rerun `dnc batch` on its input with -o pointing to this file (answered numbers are not sent ' +
          'again) to write the manifest',
      },
    );
  }
  return manifest;
}

export async function verifyOutput(outputPath: string, o: VerifyOptions): Promise<VerifyReport> {
  const manifest = await manifestToVerify(outputPath);
  // The input, read in step with the output, finds a deleted, inserted or edited row (only if it is unchanged).
  const input = await inputCursorOf(manifest);
  let journal: BatchJournal | null = null;
  if (existsSync(manifest.journal)) {
    // Its chain's anchor read where dnc keeps it (nothing is created for it: verify writes nothing).
    const dir = o.stateDir && existsSync(o.stateDir) ? o.stateDir : null;
    const anchor = await journalAnchorIn(dir, manifest.journal, () => o.asOf).catch(() => null);
    journal = await BatchJournal.open(manifest.journal, { create: false, anchor }).catch(() => null);
  }
  // One state of the journal for the whole pass, as a render reads it: a number's rows are judged alike (fit-rows.ts)
  // even when a run or `dnc listen` writes to it meanwhile.
  // (The chain is checked first, in a read of its own: its anchor may move on while a run writes.)
  const chain = journal ? journalChainOf(journal, manifest) : null;
  const endSnapshot = journal?.beginSnapshot();
  /** What the pass holds open: let go after the walk, or at once when what comes before it fails. */
  const release = async () => {
    endSnapshot?.();
    journal?.close();
    await input?.close();
  };
  let inputHeader: string[] | undefined;
  let callingCheck: ReturnType<typeof callingCheckOf>;
  try {
    // The input's header, read first: the output's must be it, then the dnc_* columns.
    inputHeader = input && manifest.format.header ? ((await input.next()) ?? undefined) : undefined;
    callingCheck = hasCallingColumns(manifest.format)
      ? callingCheckOf(manifest.calling_rules_version, journal?.meta() ?? null, o.tzdataVersion)
      : { check: null, unchecked: null };
  } catch (err) {
    await release();
    throw err;
  }
  const pass = new VerifyPass({ manifest, input, journal, inputHeader, callingCheck }, o);
  let walk;
  try {
    walk = await walkOutput(outputPath, manifest.format, pass.onRow, pass.checkHeader);
    if (pass.aligned && input && (await input.next()) !== null) {
      pass.flag(
        walk.tally.rows.total - 1,
        ['', '', ''],
        'out_of_step',
        'the output ends before the input does (rows deleted at the end)',
      );
    }
  } catch (err) {
    // A file a dialler cannot read as CSV (rows split, fields shifted, a NUL) is not fit, and says where.
    if (!(err instanceof DncError) || !['E_INPUT_MALFORMED', 'E_INPUT_BINARY', 'E_INPUT_ENCODING'].includes(err.code))
      throw err;
    walk = { sha256: await hashFile(outputPath), bytes: 0, tally: new TallyBuilder().done() };
    pass.structure.push(`it does not read as the CSV dnc wrote: ${err.message}`);
  } finally {
    await release();
  }
  return reportOf(outputPath, o, manifest, pass, walk, { journal, input, callingCheck, chain });
}

/**
 * The journal's chain checked, and against the head the manifest records (anchored with the manifest, in the team
 * store too): a journal rewritten with its chain recomputed differs from it on any member's machine.
 */
function journalChainOf(journal: BatchJournal, manifest: Manifest): { state: ChainState; why: string | null } {
  const recorded = manifest.journal_chain;
  const check = checkJournal(journal, recorded?.entries);
  if (check.state === 'altered' || !recorded) return check;
  if (check.headAt !== recorded.head)
    return {
      state: 'altered',
      why:
        `its chain at entry ${recorded.entries} is not the one the manifest records ` +
        `(${recorded.head.slice(0, 16)}…)`,
    };
  // The manifest is anchored (its SHA-256): where it vouches for the chain, the state folder need not.
  return check.state === 'unanchored' ? { state: 'intact', why: null } : check;
}

/** The input of a results file as a cursor over its rows, when it is there unchanged (its SHA-256 the manifest's). */
async function inputCursorOf(manifest: Manifest): Promise<RowCursor | null> {
  if (!existsSync(manifest.input.path) || (await hashFile(manifest.input.path)) !== manifest.input.sha256) return null;
  const f = manifest.format;
  return new RowCursor(
    // (In a thread when it is big: its parse then runs beside this pass's.)
    readRowsAside({
      path: manifest.input.path,
      delimiter: f.delimiter,
      recordDelimiter: f.record_delimiter,
      // The header is read as a row, to compare with the output's.
      header: null,
      columnCount: f.input_columns,
      ...phoneColumnsOfOutput(f),
      bom: f.bom,
      encoding: f.input_encoding,
      skipRecords: f.input_skip_records,
      // A sheet is read from its header's row, the header included (as above).
      workbook: f.input_workbook
        ? { ...f.input_workbook, headerRow: Math.max(0, f.input_workbook.headerRow - 1) }
        : undefined,
    }),
  );
}

/** The verdict on the file once its rows are walked: the manifest, the callable lists and the anchor compared too. */
async function reportOf(
  outputPath: string,
  o: VerifyOptions,
  manifest: Manifest,
  pass: VerifyPass,
  walk: { sha256: string; tally: OutputTally },
  compared: Pick<PassSources, 'journal' | 'input' | 'callingCheck'> & {
    chain: { state: ChainState; why: string | null } | null;
  },
): Promise<VerifyReport> {
  const { found, structure, tally, rules } = pass;
  const { journal, input, callingCheck, chain } = compared;
  const lines = await dataRecordLines(
    outputLayout(outputPath, manifest.format),
    found.map((f) => Math.max(0, f.index)),
  );
  const sheet = manifest.format.workbook ? { sheet: 'Results' } : {};
  const recheck = found.map(({ index, ...rest }) => ({
    ...(lines.get(Math.max(0, index)) ?? { line: 0, record: 0 }),
    ...sheet,
    ...rest,
  }));
  const differences = [...structure, ...(structure.length > 0 ? [] : compareTallies(manifest, walk.tally))];
  // The callable list is what a dialler loads: it must be the one written with this output.
  // (A list written through a FIFO or a device was read once, by whoever read it: there is nothing to read again, and
  // opening a FIFO would wait for a writer for ever.)
  for (const list of manifest.lists ?? []) {
    if (isRegularFile(list.path) && (await hashFile(list.path)) !== list.sha256)
      differences.push(`the ${list.kind} list ${list.path} changed after dnc wrote it`);
  }
  const shaMatches = walk.sha256 === manifest.output.sha256;
  // The anchors stand outside the results folder: a file, manifest and journal rewritten to agree still differ from
  // them, and a file none vouches for is not proven.
  const anchors = judgeAnchors(
    o.anchors ?? { local: null, team: null, teamUnread: null, runId: manifest.run_id ?? null },
    walk.sha256,
    await hashFile(manifestPathFor(outputPath)),
    o.unanchored === true,
  );
  differences.push(...anchors.differences);
  const { unanchored, anchorUnchecked } = anchors;
  const unproven =
    journal === null && !o.withoutJournal
      ? `the batch journal ${manifest.journal} is not where the manifest says: without it the rows cannot be ` +
        `proven (a file and its manifest can be rewritten together)`
      : null;
  const tampered = !shaMatches || differences.length > 0 || tally.anyOf(TAMPER_REASONS);
  return {
    output: outputPath,
    manifest: manifestPathFor(outputPath),
    fit:
      !tampered &&
      unproven === null &&
      chain?.state !== 'altered' &&
      tally.count === 0 &&
      (unanchored === null || o.unanchored === true),
    tampered,
    sha256: { manifest: manifest.output.sha256, actual: walk.sha256, matches: shaMatches },
    differences,
    comparedWithJournal: journal !== null,
    comparedWithInput: input !== null,
    unproven,
    journalChain: chain?.state ?? null,
    journalChainWhy: chain?.why ?? null,
    anchored: anchors.anchored,
    anchoredBy: anchors.by,
    anchorsLookedIn: anchors.lookedIn,
    unanchored,
    anchorUnchecked,
    tally: walk.tally,
    manifestInfo: {
      dnc_version: manifest.dnc_version,
      interface_version: manifest.interface_version,
      service_base_url: manifest.service_base_url,
      started_at: manifest.started_at,
      finished_at: manifest.finished_at,
      updated_at: manifest.updated_at,
      journal: manifest.journal,
    },
    ...tally.counts(),
    recheck,
    maxAge: {
      days: o.maxAgeMs === null ? null : o.maxAgeMs / DAY_MS,
      byCountry: { ...rules.byCountry },
      otherDays: rules.otherDays,
    },
    asOf: o.asOf.toISOString(),
    callingRulesVersion: typeof manifest.calling_rules_version === 'string' ? manifest.calling_rules_version : null,
    callingUnchecked: callingCheck.unchecked,
  };
}
