// Whole-file writes a reader never sees half done: a temporary file beside the target, then a rename.
import { randomBytes } from 'node:crypto';
import { rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** A fresh temporary path beside `target` (same folder, so the rename is atomic): `.NAME.<8 hex>.tmp`. */
export function tempPathFor(target: string): string {
  return path.join(path.dirname(target), `.${path.basename(target)}.${randomBytes(4).toString('hex')}.tmp`);
}

/** Writes `text` to `target` atomically; on failure the temporary file is removed and the error rethrown. */
export async function writeFileAtomic(target: string, text: string, mode?: number): Promise<void> {
  const tmp = tempPathFor(target);
  try {
    await writeFile(tmp, text, { flag: 'wx', mode });
    await rename(tmp, target);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}
