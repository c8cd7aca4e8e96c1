// The journal's writes of a batch run, committed once per turn of the event loop together with the next claims:
// "claimed before sent, answered before counted" in one transaction however many answers arrived in the turn.
// Tested without HTTP; a commit that fails (a full disk) is rolled back and kept as the run's failure.
import { type BatchJournal, journalWriteError } from '../journal/journal.js';

export class CommitQueue {
  private writes: Array<() => void> = [];
  /** Answers among the writes: they count (answered) only once committed. */
  private uncommitted = 0;
  /** Answers committed. */
  answered = 0;
  /** Answers received that the journal could not store: their numbers stay in flight, as after a crash. */
  unstored = 0;
  /** The first commit that failed; nothing more is committed after it. */
  failure: Error | null = null;

  constructor(private readonly journal: Pick<BatchJournal, 'atomically' | 'claim' | 'path'>) {}

  /** A write for the next commit (recording an answer, a cost, a release …). */
  push(write: () => void): void {
    this.writes.push(write);
  }

  /** One more answer among the writes (counted as answered once committed). */
  countAnswer(): void {
    this.uncommitted++;
  }

  /** Commits the writes and claims `ids` (in flight) in one transaction; the ids claimed, or [] when it failed. */
  commit(ids: readonly number[]): number[] {
    if (this.writes.length === 0 && ids.length === 0) return [];
    const batch = this.writes;
    this.writes = [];
    let claimed: number[];
    try {
      claimed = this.journal.atomically(() => {
        for (const w of batch) w();
        return ids.length > 0 ? this.journal.claim(ids) : [];
      });
    } catch (err) {
      // Rolled back: nothing of this commit is in the journal.
      this.unstored += this.uncommitted;
      this.uncommitted = 0;
      this.failure ??=
        journalWriteError(this.journal.path, err) ?? (err instanceof Error ? err : new Error(String(err)));
      return [];
    }
    this.answered += this.uncommitted;
    this.uncommitted = 0;
    return claimed;
  }
}
