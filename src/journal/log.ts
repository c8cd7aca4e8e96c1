// A journal's write-ahead log made durable on demand: `dnc listen` acknowledges a push only once its commit is on
// disk, and the journal runs with synchronous = NORMAL (which survives a killed process, not a power cut).
import { closeSync, fsync, fsyncSync, openSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import type BetterSqlite3 from 'better-sqlite3';
import { WAL_WORTH_A_CHECKPOINT } from './schema.js';

export class JournalLog {
  private fd: number | undefined;

  constructor(private readonly journalPath: string) {}

  /** Syncs the log to disk off the event loop (requests keep being read meanwhile). */
  async sync(): Promise<void> {
    const fd = this.open();
    await new Promise<void>((resolve, reject) => fsync(fd, (err) => (err ? reject(err) : resolve())));
  }

  /** Syncs the log to disk before returning. */
  syncNow(): void {
    fsyncSync(this.open());
  }

  /**
   * Starts writing the write-ahead log to disk on a thread of the pool, while this thread goes on (rendering).
   * The commits are durable against a crash already (synchronous = NORMAL); the checkpoint that closing the
   * journal makes syncs the log first, and a log never synced (every answer of the run) made the last step of a
   * batch wait ≈ 0.1 s for the disk. Nothing depends on this one: SQLite still syncs at close, with less to write.
   */
  async syncInBackground(): Promise<void> {
    const handle = await open(`${this.journalPath}-wal`, 'r+').catch(() => null);
    if (!handle) return;
    try {
      await handle.datasync();
    } catch {
      // A hint only: the checkpoint at close syncs the log itself, and reports what fails.
    } finally {
      await handle.close().catch(() => {});
    }
  }

  /** Opened once, at the first sync: the log exists from the journal's first commit in WAL mode. */
  private open(): number {
    this.fd ??= openSync(`${this.journalPath}-wal`, 'r');
    return this.fd;
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

/** BatchJournal.checkpoint: the log folded into the database when it is long (see there). */
export function checkpointLog(
  db: BetterSqlite3.Database,
  journalPath: string,
  options: { always?: boolean; truncate?: boolean },
): void {
  if (
    !options.always &&
    !options.truncate &&
    (statSync(`${journalPath}-wal`, { throwIfNoEntry: false })?.size ?? 0) < WAL_WORTH_A_CHECKPOINT
  )
    return;
  if (!options.truncate) {
    db.pragma('wal_checkpoint(PASSIVE)');
    return;
  }
  const waited = db.pragma('busy_timeout', { simple: true }) as number;
  db.pragma('busy_timeout = 0');
  try {
    // Busy: as much as a passive checkpoint folds in, the log left as it is.
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.pragma(`busy_timeout = ${waited}`);
  }
}
