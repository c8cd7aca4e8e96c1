// What verify found to re-check, counted as findings and as rows, with the numbers without a verdict on do_not_call
// rows set aside: no verdict of theirs can make such a row callable, and a dialler never gets them.

/** Why a row must be looked up again (or the file regenerated) before it is dialled. */
export type RecheckReason =
  | 'edited'
  | 'out_of_step'
  | 'pending'
  | 'not_checked'
  | 'failed'
  | 'stale'
  | 'no_correlation_id'
  | 'no_source'
  | 'no_checked_at'
  | 'suppressed'
  /** A row of several numbers written before the row rule, whose verdict the rule changes (a rerun renders it). */
  | 'row_rule';

/** A number without a verdict yet. */
const UNFINISHED: ReadonlySet<RecheckReason> = new Set(['pending', 'not_checked', 'failed']);

/**
 * Numbers without a verdict (pending, not_checked, failed) on do_not_call rows of several numbers: no verdict of
 * theirs can make the row callable, so they are not among those to re-check (a dialler never gets them).
 */
export interface SettledUnfinished {
  rows: number;
  numbers: number;
  byReason: Partial<Record<RecheckReason, number>>;
}

export class RecheckTally {
  /** Findings to re-check. */
  count = 0;
  /** Every finding, those set aside too (a number's cells judged unfit must not be kept as fit). */
  findings = 0;
  readonly byReason: Partial<Record<RecheckReason, number>> = {};
  /** Set while the numbers of a do_not_call row of several are judged. */
  settledRow = false;
  private readonly rows = new Set<number>();
  private readonly settled = {
    rows: new Set<number>(),
    numbers: 0,
    byReason: {} as Partial<Record<RecheckReason, number>>,
  };

  /** Counts a finding of row `index`: true when it is to re-check, false when set aside. */
  add(index: number, reason: RecheckReason): boolean {
    this.findings++;
    const [rows, byReason] =
      this.settledRow && UNFINISHED.has(reason)
        ? [this.settled.rows, this.settled.byReason]
        : [this.rows, this.byReason];
    rows.add(index);
    byReason[reason] = (byReason[reason] ?? 0) + 1;
    if (rows === this.settled.rows) {
      this.settled.numbers++;
      return false;
    }
    this.count++;
    return true;
  }

  /** Whether any finding to re-check is for one of `reasons`. */
  anyOf(reasons: ReadonlySet<RecheckReason>): boolean {
    return [...reasons].some((r) => (this.byReason[r] ?? 0) > 0);
  }

  /** The report's counts. */
  counts(): {
    recheckCount: number;
    recheckRows: number;
    recheckByReason: Partial<Record<RecheckReason, number>>;
    settledUnfinished: SettledUnfinished;
  } {
    const settled = { rows: this.settled.rows.size, numbers: this.settled.numbers, byReason: this.settled.byReason };
    return {
      recheckCount: this.count,
      recheckRows: this.rows.size,
      recheckByReason: this.byReason,
      settledUnfinished: settled,
    };
  }
}
