// `dnc window`'s use case: from a results file fit to dial, the numbers inside their calling window for a whole slot.
// It never prints and sends nothing: the file is judged by verify's own pass, which also reads each row's numbers.
import { statSync } from 'node:fs';
import path from 'node:path';
import type { Writable } from 'node:stream';
import type { ComplianceContext } from '../compliance/settings.js';
import { resolveCallingSettings } from '../calling-settings.js';
import { inputError, usageError } from '../errors.js';
import type { RecheckReason, VerifyReport } from '../verify/verify.js';
import { formatInteger } from '../text/numbers.js';
import { rowNumbersOf, type RowNumber } from './columns.js';
import { createCallingWindows, HORIZON_DAYS } from '../calling/index.js';
import { manifestToVerify } from '../verify/verify.js';
import { hasCallingColumns, manifestPathFor } from '../evidence/manifest.js';
import { fitToDial } from '../verify/fit-to-dial.js';
import type { Fitness } from '../verify/fitness.js';
import { openSink, outputError } from '../results/sinks.js';

export interface WindowOptions {
  /** The results file of `dnc batch`. */
  results: string;
  from: Date;
  until: Date;
  /** Where the numbers go, one E.164 a line; `-` is standard output. */
  dialOut: string;
  /** --max-age, as verify takes it; null: each country's validity window. */
  maxAgeMs: number | null;
  withoutJournal: boolean;
  /** --unanchored: a file anchored nowhere this machine can see is judged by the rest (a warning says so). */
  unanchored?: boolean;
  /** --calling-settings: the team's calling policy and overrides (else DNC_CALLING_SETTINGS, the config). */
  callingSettings?: string | undefined;
}

export type WindowEvent = { type: 'info' | 'warning' | 'debug'; text: string };

export interface WindowDeps extends ComplianceContext {
  now(): Date;
  /** The time-zone database's version, named in rules_version. */
  tzdataVersion: string;
  /** Where `--dial-out -` writes. */
  stdout: Writable;
  onEvent(event: WindowEvent): void;
}

export interface WindowResult {
  results: string;
  dialOut: string;
  from: string;
  until: string;
  /** Freshness is judged as of the end of the slot (or now, if later): a verdict must hold until the last call. */
  asOf: string;
  phoneColumns: number;
  /** Rows of the results file. */
  rows: number;
  /** Distinct numbers callable and fit to dial. */
  fit: number;
  /** Of those: written (inside their window for the whole slot), outside it, or with no window at all. */
  written: number;
  outsideWindow: number;
  neverCallable: number;
  /** Rows verify found to re-check that are left out (pending, not checked, failed, on the internal list now). */
  leftOut: Partial<Record<RecheckReason, number>>;
  /**
   * The file's judgement, as verify, report and status give it: a file with rows left out is not fit as a whole (the
   * list holds only numbers fit on their own), and says why and what makes it fit.
   */
  fitness: Fitness;
  /** The overrides that set the law's hours aside for numbers written, and for how many. */
  overrides: Array<{ reason: string; numbers: number }>;
  rulesVersion: string;
  /** The calling rules' version the results file's own columns were computed under, when its manifest says. */
  fileRulesVersion: string | null;
}

/** Rows that make the file unfit for any list: its callable verdicts are too old, or not evidenced. */
const BLOCKING: ReadonlySet<RecheckReason> = new Set(['stale', 'no_correlation_id', 'no_source', 'no_checked_at']);

const CALLABLE = 0;
const OUTSIDE = 1;
const NEVER = 2;

export async function runWindow(deps: WindowDeps, o: WindowOptions): Promise<WindowResult> {
  const results = path.resolve(deps.cwd, o.results);
  const dialOut = o.dialOut === '-' ? '-' : path.resolve(deps.cwd, o.dialOut);
  const { from, until } = slotOf(o);
  const manifest = await manifestToVerify(results);
  refuseCollision(dialOut, [
    [results, 'the results file'],
    [manifest.journal, 'its batch journal'],
    [manifest.input.path, 'its input'],
    ...(manifest.lists ?? []).map((l): [string, string] => [l.path, `its ${l.kind} list`]),
  ]);
  refuseCollision(dialOut, [[manifestPathFor(results), 'its manifest']]);
  const calling = await resolveCallingSettings(deps.flags, deps.env, deps.homedir, deps.cwd, o.callingSettings);
  const windows = createCallingWindows({
    tzdataVersion: deps.tzdataVersion,
    settings: calling.settings,
    settingsName: calling.name,
  });
  const now = deps.now().getTime();
  if (until <= now) {
    deps.onEvent({
      type: 'warning',
      text: `dnc: warning: the slot ended before now (${o.until.toISOString()}): the list is for a time gone by`,
    });
  }
  const asOf = new Date(Math.max(now, until));

  const rows = rowNumbersOf(manifest.format.phone_columns?.length ?? 1, hasCallingColumns(manifest.format));
  // Each callable number's answer for the slot, by first appearance; the numbers of rows verify flags are left out.
  const answers = new Map<string, number>();
  const excluded = new Set<string>();
  // The override that set the law aside for a number in the list (only asked when the team has settings).
  const overrideOf = new Map<string, string>();
  const withOverrides = calling.settings !== undefined;
  let current: RowNumber[] = [];
  let currentIndex = -1;
  const onRow = (index: number, _fields: readonly string[], cells: readonly string[]) => {
    currentIndex = index;
    current = rows.numbersOf(cells);
    for (const n of current) {
      if (n.result !== 'callable' || n.e164 === '' || answers.has(n.e164)) continue;
      const answer = windows.throughout(n, from, until);
      answers.set(n.e164, answer.callable ? CALLABLE : answer.reason === 'never_callable' ? NEVER : OUTSIDE);
      const override = withOverrides && answer.callable ? windows.window(n, from).override : null;
      if (override) overrideOf.set(n.e164, override.reason);
    }
  };
  // A row flagged as a whole leaves out all its numbers; a number flagged in its own phone column, that one.
  const onFlag = (index: number, _reason: RecheckReason, column: number | null) => {
    if (index !== currentIndex) return;
    for (const n of current) if (column === null || n.column === column) excluded.add(n.e164);
  };
  const report = await fitToDial(deps, results, {
    maxAgeMs: o.maxAgeMs,
    asOf,
    listLimit: 0,
    withoutJournal: o.withoutJournal,
    unanchored: o.unanchored === true,
    warn: (line) => deps.onEvent({ type: 'warning', text: line }),
    onRow,
    onFlag,
  });
  refuseUnfit(report, results, asOf);
  if (report.anchorUnchecked) deps.onEvent({ type: 'warning', text: `dnc: ${results}: ${report.anchorUnchecked}` });

  const leftOut: Partial<Record<RecheckReason, number>> = {};
  for (const [reason, count] of Object.entries(report.recheckByReason) as Array<[RecheckReason, number]>) {
    if (!BLOCKING.has(reason)) leftOut[reason] = count;
  }
  const counts = { fit: 0, written: 0, outsideWindow: 0, neverCallable: 0 };
  const overrides = new Map<string, number>();
  const sink = await openSink(dialOut, deps.stdout);
  try {
    let text = '';
    for (const [e164, answer] of answers) {
      if (excluded.has(e164)) continue;
      counts.fit++;
      if (answer === OUTSIDE) counts.outsideWindow++;
      else if (answer === NEVER) counts.neverCallable++;
      else {
        counts.written++;
        text += `${e164}\n`;
        if (text.length > 64_000) {
          await sink.write(text);
          text = '';
        }
        const reason = overrideOf.get(e164);
        if (reason !== undefined) overrides.set(reason, (overrides.get(reason) ?? 0) + 1);
      }
    }
    if (text) await sink.write(text);
    await sink.commit();
  } catch (err) {
    await sink.abort();
    throw err instanceof Error && err.name === 'DncError' ? err : outputError(err, dialOut);
  }
  return {
    results,
    dialOut,
    from: iso(from),
    until: iso(until),
    asOf: iso(asOf.getTime()),
    phoneColumns: rows.phoneColumns,
    rows: report.tally.rows.total,
    ...counts,
    leftOut,
    fitness: report.fitness,
    overrides: [...overrides].map(([reason, numbers]) => ({ reason, numbers })),
    rulesVersion: windows.rulesVersion,
    fileRulesVersion: report.callingRulesVersion,
  };
}

/** The slot [--from, --until) in milliseconds: exit 2 when it ends before it starts or spans more than the horizon. */
function slotOf(o: Pick<WindowOptions, 'from' | 'until'>): { from: number; until: number } {
  const from = o.from.getTime();
  const until = o.until.getTime();
  if (until <= from) {
    throw usageError('E_USAGE', `--until ${o.until.toISOString()} is not after --from ${o.from.toISOString()}`, {
      hint: 'the slot is [--from, --until): give an end after its start',
    });
  }
  if (until - from > HORIZON_DAYS * 86_400_000) {
    throw usageError('E_USAGE', `the slot is longer than ${HORIZON_DAYS} days`, {
      hint: 'a list is made for a slot of hours or days: make one per slot',
    });
  }
  return { from, until };
}

function iso(t: number): string {
  return new Date(t).toISOString().replace('.000Z', 'Z');
}

/** The list must never overwrite the evidence it is made from: the results, their manifest, journal, input, lists. */
function refuseCollision(dialOut: string, others: ReadonlyArray<readonly [string, string]>): void {
  if (dialOut === '-') return;
  const id = (file: string) => {
    try {
      const st = statSync(file);
      return `${st.dev}:${st.ino}`;
    } catch {
      return null;
    }
  };
  const mine = id(dialOut);
  for (const [file, what] of others) {
    if (path.resolve(file) === dialOut || (mine !== null && id(file) === mine)) {
      throw usageError(
        'E_PATH_COLLISION',
        `--dial-out ${dialOut} is ${what}: writing the list there would destroy it`,
        {
          hint: 'give the list a file of its own, e.g. --dial-out slot.dial.txt',
        },
      );
    }
  }
}

function alteredRows(r: VerifyReport): string {
  const n = (r.recheckByReason.edited ?? 0) + (r.recheckByReason.out_of_step ?? 0);
  return `${formatInteger(n)} row(s) differ from its journal or its input`;
}

/** The file is refused whole when verify finds it altered, unproven or stale: no list made from it can be trusted. */
function refuseUnfit(r: VerifyReport, results: string, asOf: Date): void {
  const nothing = 'nothing was written';
  const verify = `\`dnc verify ${results} --as-of ${iso(asOf.getTime())}\``;
  if (r.tampered) {
    throw inputError(
      'E_NOT_FIT_TO_DIAL',
      `${results} is not what dnc wrote (${r.differences[0] ?? alteredRows(r)}); ${nothing}`,
      { hint: `${verify} says what changed; regenerate it by running the same \`dnc batch\` command again` },
    );
  }
  if (r.unproven !== null) {
    throw inputError('E_NOT_FIT_TO_DIAL', `${results} cannot be proven: ${r.unproven}; ${nothing}`, {
      hint: '--without-journal judges the rest (the weaker check, as `dnc verify --without-journal` does)',
    });
  }
  if (r.unanchored !== null && r.anchorUnchecked === null) {
    throw inputError('E_NOT_FIT_TO_DIAL', `${results} cannot be proven: ${r.unanchored}; ${nothing}`, {
      hint: '--unanchored judges the rest (the weaker check, as `dnc verify --unanchored` does)',
    });
  }
  const blocking = Object.entries(r.recheckByReason).filter(([reason]) => BLOCKING.has(reason as RecheckReason));
  if (blocking.length > 0) {
    const parts = blocking.map(([reason, n]) => `${formatInteger(n)} ${reason}`);
    throw inputError(
      'E_NOT_FIT_TO_DIAL',
      `${results} is not fit to dial as of ${iso(asOf.getTime())} (the end of the slot): callable verdicts too old ` +
        `or not evidenced (${parts.join(', ')}); ${nothing}`,
      {
        hint:
          `${verify} lists them; scrub the list again into a new output with --reuse-within (e.g. 30d): only the ` +
          'stale numbers are paid for',
      },
    );
  }
}
