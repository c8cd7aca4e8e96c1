// A journal's final verdicts read in id order, a window at a time: what reading a list's rows in order asks for.
import type { BatchJournal, NumberVerdict } from './journal.js';

/**
 * Final verdicts read ahead, a window at a time, in id order: ids are given in order of first appearance, so the
 * rows of a list (rendered, or read back by verify) ask for them nearly in that order, and one query for a window
 * costs less than one per row (≈ a third of a render's time, and of verify's, went to those). A row whose number is
 * not in the window (a repeat, a verdict not final when the window was read) is asked for alone, as before. Read in
 * the render's transaction, or, early, by a render that is dropped if another process writes meanwhile
 * (renderEarly): a verdict read ahead is the one a row would read.
 */
export class VerdictsAhead {
  private window = new Map<string, NumberVerdict>();
  /** Whether the last window was full (more may follow), or answers came since it was read. */
  private more = true;

  constructor(private readonly journal: Pick<BatchJournal, 'doneVerdictsAfter'>) {}

  /**
   * The final verdict of `e164` if it is read ahead (each is taken once: its number's first row); `after`: the highest
   * id rendered.
   */
  take(e164: string, after: number): NumberVerdict | undefined {
    if (this.window.size === 0 && this.more) this.read(after);
    const v = this.window.get(e164);
    if (v !== undefined) this.window.delete(e164);
    return v;
  }

  /** More numbers may be final now: the next window is read when this one is used up. */
  answered(): void {
    this.more = true;
  }

  private read(after: number): void {
    const rows = this.journal.doneVerdictsAfter(after, VERDICTS_AHEAD);
    this.window = new Map(rows.map((r) => [r.e164, r]));
    this.more = rows.length === VERDICTS_AHEAD;
  }
}

const VERDICTS_AHEAD = 512;
