// A journal proven before anything is built from it: its chain checked (chain.ts), and an altered or unproven journal
// refused with a typed error whose way out never trusts what it holds.
import { inputError } from '../errors.js';
import type { ChainCheck } from './chain.js';
import type { BatchJournal } from './journal.js';

/** The journal checked against its chain and the chain's anchor, in one state of the journal. */
export function checkJournal(
  journal: Pick<BatchJournal, 'beginSnapshot' | 'chain'>,
  upTo?: number,
): ReturnType<BatchJournal['chain']['check']> {
  const end = journal.beginSnapshot();
  let check;
  try {
    check = journal.chain.check(upTo);
  } finally {
    end();
  }
  // Another dnc committed between the snapshot and the anchor's read: the chain it extended, if it did, is the same.
  if (check.anchorAhead && journal.chain.caughtUp(check.at))
    return { ...check, state: 'intact', why: null, anchorAhead: undefined };
  return check;
}

/** What starts afresh without trusting the journal: said in every refusal. */
const FRESH_START =
  'scrub the list again into a new output (`-o NEW.csv`, with --reuse-within 30d to reuse the verdicts the ' +
  'results cache holds: only verdicts of checked journals are there; the rest are looked up and charged), or ' +
  'start this batch over with --restart (every number looked up and charged again)';

/**
 * Refuses a journal that is not what dnc committed (E_JOURNAL_ALTERED) or that cannot prove it is
 * (E_JOURNAL_UNPROVEN: kept by a dnc before chains, or its chain anchored nowhere in this state folder) unless the
 * user accepts it as it stands (`accept`: --accept-unproven-journal), which chains and anchors it from then on.
 * Called before an output is written, the results cache filled or a verdict shared from the journal.
 */
export function proveJournal(journal: BatchJournal, accept: boolean): ChainCheck {
  const check = checkJournal(journal);
  if (check.state === 'intact') {
    if (check.anchorNow) journal.atomically(() => journal.chain.anchorAsItStands());
    return check;
  }
  if (check.state === 'altered') throw journalAltered(journal.path, check);
  if (!accept) throw journalUnproven(journal.path, check);
  journal.atomically(() => journal.chain.adoptUnchained());
  return check;
}

/** The first altered numbers, for a message. */
function named(check: ChainCheck): string {
  const shown = check.altered.slice(0, 5).join(', ');
  return check.altered.length === 0 ? '' : ` (${shown}${check.altered.length > 5 ? ', …' : ''})`;
}

export function journalAltered(file: string, check: ChainCheck) {
  return inputError(
    'E_JOURNAL_ALTERED',
    `the batch journal ${file} was altered after dnc wrote it: ${check.why}${named(check)}; nothing is built ` +
      'from it (no output written, nothing cached or shared)',
    {
      hint: `restore the journal from a copy made before the change, or ${FRESH_START}`,
      details: { why: check.why, altered: check.altered, entries: check.at.entries },
    },
  );
}

export function journalUnproven(file: string, check: ChainCheck) {
  return inputError(
    'E_JOURNAL_UNPROVEN',
    `the batch journal ${file} cannot prove its answers: ${check.why}; nothing is built from it (no output ` +
      'written, nothing cached or shared)',
    {
      hint:
        'if you know it was not edited, `dnc batch … --accept-unproven-journal` accepts its answers as they stand ' +
        `(chained and anchored from then on, on your word); else ${FRESH_START}`,
      details: { why: check.why, state: check.state },
    },
  );
}
