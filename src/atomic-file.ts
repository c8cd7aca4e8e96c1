// Whole-file writes a reader never sees half done: a temporary file beside the target, then a rename.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { open, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** A fresh temporary path beside `target` (same folder, so the rename is atomic): `.NAME.<8 hex>.tmp`. */
export function tempPathFor(target: string): string {
  return path.join(path.dirname(target), `.${path.basename(target)}.${randomBytes(4).toString('hex')}.tmp`);
}

// Through fs.fsync, as a write stream with `flush: true` syncs: one path to the disk for every output.
function fsync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.fsync(fd, (err) => (err ? reject(err) : resolve())));
}

/** Flushes a folder's entries to disk (after a rename into it); a platform that cannot is not an error. */
export async function syncFolder(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, 'r');
    await fsync(handle.fd);
  } catch {
    // Some file systems refuse fsync on a folder: the rename is still atomic, only not yet durable.
  } finally {
    await handle?.close();
  }
}

/**
 * Writes `text` to `target` atomically; on failure the temporary file is removed and the error rethrown.
 * `durable`: the temporary file is flushed to disk before the rename and the folder after it, so a power
 * loss leaves the old file or the new one (without it, only a crash of this process does).
 */
export async function writeFileAtomic(target: string, text: string, mode?: number, options: { durable?: boolean } = {}): Promise<void> {
  const tmp = tempPathFor(target);
  try {
    if (options.durable) {
      const handle = await open(tmp, 'wx', mode);
      try {
        await handle.writeFile(text);
        await fsync(handle.fd);
      } finally {
        await handle.close();
      }
    } else {
      await writeFile(tmp, text, { flag: 'wx', mode });
    }
    await rename(tmp, target);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  if (options.durable) await syncFolder(path.dirname(target));
}
