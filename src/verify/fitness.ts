// One judgement of whether a results file is fit to dial, and why not, and what makes it fit: `dnc verify`, `dnc
// window`, `dnc report` and `dnc status` each render it, so they never disagree.
import type { DncError } from '../errors.js';
import { formatInteger } from '../text/numbers.js';
import type { RecheckReason, VerifyReport } from './verify.js';

/** unproven: nothing proves the rows (the journal is gone, or no anchor vouches for the file); never fit. */
export type FitnessState = 'fit' | 'not_fit' | 'unproven';

/** What a rerun of the file's batch does with the rows left without a verdict, from its journal. */
export interface RerunFacts {
  /** The command that reruns the batch, as the user types it. */
  command: string;
  /** Numbers a bare rerun looks up (nothing was charged for them). */
  lookUp: number;
  /**
   * Numbers without a verdict that only a rerun with --webhook-url looks up (their countries answer by webhook
   * only), by country: a bare rerun leaves them not_checked.
   */
  needWebhook: { numbers: number; countries: string[] };
  /** Failed numbers a bare rerun leaves (charged, or sent without an answer): --resend-failed sends them. */
  resend: { numbers: number; credits: number };
}

export interface Fitness {
  state: FitnessState;
  /** Why the file is not fit, in a few words; null when it is. */
  because: string | null;
  /** What makes it fit, each a sentence naming the command (none when fit, or when nothing can). */
  wayOut: string[];
}

/** What makes a file of an altered journal fit: never a rerun from that journal (it refuses, and should). */
const JOURNAL_ALTERED_WAY_OUT = [
  'restore the batch journal from a copy made before the change, then run `dnc verify` again',
  'or scrub the list again into a new output (`dnc batch INPUT -o NEW.csv --reuse-within 30d`): the results ' +
    'cache holds only verdicts of checked journals, the rest are looked up and charged',
  'or start the batch over with `--restart`: every number is looked up, and charged, again',
];

/** The judgement of a file verify read through. */
export function fitnessOf(r: VerifyReport, rerun: RerunFacts | null): Fitness {
  if (r.fit) return { state: 'fit', because: null, wayOut: [] };
  const again = rerun ? `\`${rerun.command}\`` : 'the same `dnc batch` command';
  // Before the file's own findings: a rerun builds from the journal, and refuses this one (E_JOURNAL_ALTERED).
  if (r.journalChain === 'altered')
    return {
      state: 'not_fit',
      because: `its batch journal was altered after dnc wrote it (${r.journalChainWhy})`,
      wayOut: JOURNAL_ALTERED_WAY_OUT,
    };
  if (r.tampered)
    return {
      state: 'not_fit',
      because: 'the file is not what dnc wrote',
      wayOut: [`regenerate it by running ${again} again (answered numbers are not sent again)`],
    };
  if (r.unproven)
    return {
      state: 'unproven',
      because: 'its batch journal is gone, so its rows cannot be proven',
      wayOut: ['`--without-journal` asks for the weaker check (the rest of it), which then says what it did not check'],
    };
  if (r.unanchored && !r.anchorUnchecked)
    return {
      state: 'unproven',
      because: `it is anchored nowhere this machine can see (${r.anchorsLookedIn.join(', ')})`,
      wayOut: [
        'verify it where it was anchored: on the machine that wrote it, or with the team store its writer used ' +
          '(--store, DNC_STORE)',
        '`--unanchored` asks for the weaker check (the rest of it), which then says what it did not check',
      ],
    };
  const settled = settledNote(r);
  return {
    state: 'not_fit',
    because: recheckWords(r) + (settled ? `; ${settled}` : ''),
    wayOut: recheckWayOut(r, rerun, again),
  };
}

/**
 * What is to re-check, by reason: "N row(s)" when each finding is a row's, else "N number(s) on M row(s)" (a row of
 * several phone numbers has a finding for each of its numbers).
 */
export function recheckWords(r: Pick<VerifyReport, 'recheckCount' | 'recheckRows' | 'recheckByReason'>): string {
  const what =
    r.recheckCount === r.recheckRows
      ? `${formatInteger(r.recheckRows)} row(s)`
      : `${formatInteger(r.recheckCount)} number(s) on ${formatInteger(r.recheckRows)} row(s)`;
  return `${what} to re-check (${reasonWords(r.recheckByReason)})`;
}

/** The numbers without a verdict on do_not_call rows, which no re-check makes callable; null when there are none. */
export function settledNote(r: Pick<VerifyReport, 'settledUnfinished'>): string | null {
  const { rows, numbers, byReason } = r.settledUnfinished;
  if (numbers === 0) return null;
  return (
    `${formatInteger(numbers)} number(s) without a verdict (${reasonWords(byReason)}) on ${formatInteger(rows)} ` +
    'do_not_call row(s) left aside: no verdict of theirs can make such a row callable, and a dialler never gets ' +
    'them (only dnc_callable_numbers)'
  );
}

function reasonWords(byReason: Partial<Record<RecheckReason, number>>): string {
  return Object.entries(byReason)
    .map(([k, n]) => `${formatInteger(n)} ${k}`)
    .join(', ');
}

/** A file that could not be judged (its list altered or held, say): not fit, and the error's hint is the way out. */
export function fitnessRefused(err: DncError): Fitness {
  return { state: 'not_fit', because: err.message, wayOut: err.hint ? [err.hint] : [] };
}

/**
 * What finishes the rows to re-check, by reason, at the least cost: never --restart, which pays for the whole list
 * again and drops the journal's record of what was spent. Failed numbers a rerun leaves are sent again only when
 * asked (--resend-failed): each is charged again, and the line says how much.
 */
function recheckWayOut(r: VerifyReport, rerun: RerunFacts | null, again: string): string[] {
  const has = (...reasons: RecheckReason[]) => reasons.some((k) => (r.recheckByReason[k] ?? 0) > 0);
  const out: string[] = [];
  if (has('not_checked', 'failed')) {
    if (!rerun)
      out.push(
        `not_checked and failed rows: ${again} sends the numbers without a verdict that nothing was charged for ` +
          '(answered ones are not sent again)',
      );
    else {
      if (rerun.lookUp > 0)
        out.push(
          `not_checked and failed rows: ${again} looks up the ${formatInteger(rerun.lookUp)} number(s) without a ` +
            'verdict that nothing was charged for (answered ones are not sent again)',
        );
      if (rerun.needWebhook.numbers > 0)
        out.push(
          `not_checked rows: ${formatInteger(rerun.needWebhook.numbers)} number(s) of ` +
            `${rerun.needWebhook.countries.join(', ')} are looked up only with a webhook: ` +
            `\`${rerun.command} --webhook-url URL\` sends them, with \`dnc listen\` receiving the answers at URL ` +
            '(a rerun without it leaves them not_checked)',
        );
      const { numbers, credits } = rerun.resend;
      if (numbers > 0)
        out.push(
          `failed rows: ${formatInteger(numbers)} number(s) failed after a charge (or were sent without an ` +
            `answer), which a rerun does not send again: \`${rerun.command} --resend-failed\` sends them again, ` +
            `each charged again (about ${formatInteger(credits)} credit(s))`,
        );
    }
  }
  if (has('pending')) out.push('pending rows: `dnc listen --results FILE` receives their pushes');
  if (has('stale', 'no_correlation_id', 'no_source', 'no_checked_at'))
    out.push(
      'stale rows: scrub the list again into a new output with --reuse-within (e.g. 30d): verdicts still fresh ' +
        'are reused, only the stale numbers are paid for',
    );
  if (has('row_rule'))
    out.push(
      `row_rule rows: written by a dnc that called a row callable while one of its numbers was not; run ${again} ` +
        'again: it writes the file again from its journal, and sends nothing',
    );
  if (has('suppressed'))
    out.push(
      'suppressed rows: on the internal do-not-call list since the scrub; never dial them (a new scrub marks them ' +
        'do_not_call)',
    );
  return out;
}
