// What the batch scheduler is given and gives back: the numbers still arriving, its progress and its outcome.
import type { DncError } from '../errors.js';
import type { BudgetStop } from './budget.js';
import type { StoppedReason } from '../journal/journal.js';

/**
 * The journal's queue while the input is still being read into it: an empty queue means "not yet" until
 * reading ends. Every number is in the journal (committed, and checked against the user's lists) before the
 * scheduler hears of it, so it is claimed and sent exactly as a number read before the run began.
 */
export interface IncomingNumbers {
  /** True while more numbers may come. */
  readonly reading: boolean;
  /** `listener(added)` runs after each commit of new numbers, and once (added 0) when reading ends. */
  subscribe(listener: (added: number) => void): void;
}

/** Progress after each answer; the command renders it. */
export interface SchedulerProgress {
  /** Numbers with an answer (final or receipt) in this run. */
  answered: number;
  /** Numbers this run has to do: those queued when it began, plus those read since (while `reading`). */
  total: number;
  /** The input is still being read: `total` is a count so far. */
  reading: boolean;
  inFlight: number;
  /** Credits the batch has used in all its runs (charged, and held for pending lookups). */
  credits: number;
  /** Lookups sent in this run. */
  sent: number;
}

export interface SchedulerOutcome {
  stoppedReason: StoppedReason | null;
  /** A failure that ended the run (401/403, the service unreachable …). */
  fatal: DncError | null;
  /** Numbers left in flight by an earlier run, sent again (they may have been charged then). */
  resent: number;
  /** Numbers with a final answer before this run began. */
  doneBefore: number;
  total: number;
  sent: number;
  creditsThisRun: number;
  creditsTotal: number;
  elapsedMs: number;
  /** True when the run was abandoned (second Ctrl-C) without waiting for lookups in flight. */
  abandoned: boolean;
  /** Why --max-credits stopped the run (stoppedReason budget_reached), else null. */
  budgetStop: BudgetStop | null;
}
