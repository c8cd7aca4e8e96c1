// The lock files beside a batch journal: one `dnc batch` and one `dnc listen` at a time, a dead holder's lock taken
// over.
import { readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { usageError } from '../errors.js';
import { PRIVATE_FILE_MODE } from '../private-files.js';

/**
 * Lock files beside the journal: 'batch' so two `dnc batch` runs never share one journal, 'listen' so that a
 * `--restart` never deletes the journal a `dnc listen` is storing pushes in (and two listeners never share it).
 */
export type LockKind = 'batch' | 'listen';

const lockPathOf = (journalPath: string, kind: LockKind) =>
  kind === 'batch' ? `${journalPath}.lock` : `${journalPath}.listen.lock`;

const holderName = (kind: LockKind) => (kind === 'batch' ? 'dnc batch' : 'dnc listen');

export interface JournalLock {
  release(): void;
}

export interface LockDeps {
  pid: number;
  /** Whether a process id is alive (injected: core modules do not touch process.*). */
  isAlive(pid: number): boolean;
  /**
   * When a process started (ms since the epoch), or null when unknown: a lock's pid reused by a later process is stale.
   */
  startTime?(pid: number): number | null;
}

/** Process start times are read in clock ticks (10 ms) and the lock's mtime in ms: within this, the same process. */
const START_SLACK_MS = 1_000;

/** Who holds the batch (or listen) lock of `journalPath`, if a live process does. */
export function lockHolder(journalPath: string, deps: LockDeps, kind: LockKind = 'batch'): number | null {
  const lockPath = lockPathOf(journalPath, kind);
  let text: string;
  let writtenAt: number;
  try {
    text = readFileSync(lockPath, 'utf8');
    writtenAt = statSync(lockPath).mtimeMs;
  } catch {
    return null;
  }
  const [pidText, startText] = text.split('\n');
  const pid = Number.parseInt(pidText ?? '', 10);
  if (!Number.isFinite(pid) || pid === deps.pid || !deps.isAlive(pid)) return null;
  const started = deps.startTime?.(pid) ?? null;
  if (started !== null) {
    const recorded = Number.parseInt(startText ?? '', 10);
    // The pid now names another process: one that started at another time than the holder, or (a lock from
    // before start times were recorded) after the lock was written.
    if (
      Number.isFinite(recorded) ? Math.abs(started - recorded) > START_SLACK_MS : started > writtenAt + START_SLACK_MS
    )
      return null;
  }
  return pid;
}

export function acquireJournalLock(journalPath: string, deps: LockDeps, kind: LockKind = 'batch'): JournalLock {
  const lockPath = lockPathOf(journalPath, kind);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lockPath, `${deps.pid}\n${deps.startTime?.(deps.pid) ?? ''}\n`, {
        flag: 'wx',
        mode: PRIVATE_FILE_MODE,
      });
      return {
        release() {
          try {
            if (readFileSync(lockPath, 'utf8').split('\n')[0]!.trim() === String(deps.pid)) unlinkSync(lockPath);
          } catch {
            /* already gone */
          }
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = lockHolder(journalPath, deps, kind);
      if (holder !== null) {
        throw usageError('E_JOURNAL_BUSY', `another ${holderName(kind)} (pid ${holder}) is using ${journalPath}`, {
          hint:
            kind === 'batch'
              ? 'wait for it to finish, or stop it (Ctrl-C) and run the command again to resume'
              : 'it already receives the pushes of this batch; stop it (Ctrl-C) first to start another',
        });
      }
      // A stale lock from a run that was killed: take it over.
      rmSync(lockPath, { force: true });
    }
  }
  throw usageError('E_JOURNAL_BUSY', `cannot lock ${journalPath}`);
}

/** Whether a `dnc batch` or a `dnc listen` holds the journal at `journalPath`. */
export function journalInUse(journalPath: string, deps: LockDeps): boolean {
  return lockHolder(journalPath, deps) !== null || lockHolder(journalPath, deps, 'listen') !== null;
}
