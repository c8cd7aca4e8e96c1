// What the team store's claims say to record of numbers this run did not look up, written into the batch journal:
// the batch's side of src/stores/team-claims.ts, which decides and never writes.
import type { BatchJournal } from '../journal/journal.js';
import type { Adoption, TeamClaims } from '../stores/team-claims.js';

/** Records one adoption for the number `id` (inside the caller's commit). */
export function recordAdoption(journal: BatchJournal, id: number, adoption: Adoption): void {
  if (adoption.kind === 'receipt') {
    journal.recordReceipt(id, adoption.correlationId, adoption.receipt, 0);
    return;
  }
  journal.recordFinal(id, adoption.answer);
  if (adoption.reused) journal.markReused([id], adoption.at);
}

/**
 * Rows left pending on another machine's webhook lookup (they hold no credits of this batch): their verdicts, once
 * that machine's `dnc listen` stored them in the team store, are recorded as reused. Returns how many.
 */
export async function adoptPushedVerdicts(journal: BatchJournal, team: TeamClaims): Promise<number> {
  const theirs = journal.pendingNumbers().filter((p) => p.correlationId !== null && p.creditsHeld === 0);
  const found = await team.pushedVerdicts(theirs.map((p) => p.correlationId!));
  let adopted = 0;
  journal.atomically(() => {
    for (const p of theirs) {
      const adoption = found.get(p.correlationId!);
      const row = adoption ? journal.verdict(p.e164) : undefined;
      if (!adoption || !row) continue;
      recordAdoption(journal, row.id, adoption);
      adopted++;
    }
  });
  return adopted;
}
