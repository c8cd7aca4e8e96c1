// Files that hold numbers, verdicts or the webhook secret are the user's alone: created 0600 in 0700 folders.
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import path from 'node:path';

export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_DIR_MODE = 0o700;

/** A folder dnc owns (state, cache): created 0700, and tightened to 0700 when it exists. */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  chmodSync(dir, PRIVATE_DIR_MODE);
}

/**
 * Creates `file` empty with mode 0600 when `create` and it is missing, and tightens it and its SQLite companions
 * (-wal, -shm) to 0600 when they exist: SQLite gives new -wal and -shm files the mode of the database file.
 */
export function ensurePrivateFile(file: string, create = true): void {
  if (create && !existsSync(file)) closeSync(openSync(file, 'a', PRIVATE_FILE_MODE));
  for (const p of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      chmodSync(p, PRIVATE_FILE_MODE);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}

/**
 * Tightens an existing file of a folder dnc owns (state, cache) to 0600, and the folder to 0700, before it is read
 * (written before modes were kept, or loosened since): best effort, since reading must not fail for this (a file of
 * another owner cannot be changed).
 */
export function tightenPrivateFile(file: string): void {
  for (const [p, mode] of [
    [path.dirname(file), PRIVATE_DIR_MODE],
    [file, PRIVATE_FILE_MODE],
  ] as const) {
    try {
      chmodSync(p, mode);
    } catch {
      /* missing, or not ours to change */
    }
  }
}
