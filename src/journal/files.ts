// Where a batch journal's files are, and their removal.
import { lstatSync, realpathSync, rmSync } from 'node:fs';

/** Where the journal of OUTPUT lives: beside it, named after it. */
export function journalPathFor(outputPath: string): string {
  // The journal stands beside the file the output really is: `-o link.csv` (a symbolic link) and
  // `dnc listen --results link.csv` find the same journal, beside the link's target.
  let real = outputPath;
  try {
    if (lstatSync(outputPath).isSymbolicLink()) real = realpathSync.native(outputPath);
  } catch {
    // Not there yet, or not a link: the path as given.
  }
  return `${real}.journal.sqlite`;
}

/** Removes a journal and its WAL files. */
export function deleteJournalFiles(path: string): void {
  for (const p of [path, `${path}-wal`, `${path}-shm`, `${path}.lock`, `${path}.listen.lock`])
    rmSync(p, { force: true });
}
