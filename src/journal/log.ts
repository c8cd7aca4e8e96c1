// A journal's write-ahead log made durable on demand: `dnc listen` acknowledges a push only once its commit is on
// disk, and the journal runs with synchronous = NORMAL (which survives a killed process, not a power cut).
import { closeSync, fsync, fsyncSync, openSync } from 'node:fs';

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
