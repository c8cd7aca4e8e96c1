// Whole-file writes a reader never sees half done: a temporary file beside the target, then a rename.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { open, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { usageError } from './errors.js';
import { isRunning, thisProcess } from './process-identity.js';

/** The system's own links (/dev/stdout → /proc/self/fd/1): no one but root plants a link there. */
function isSystemPath(file: string): boolean {
  return /^\/(dev|proc)\//.test(file);
}

/**
 * Refuses (exit 2, `E_OUTPUT_LINK`) an output path that exists as something a write must not go through: a symbolic
 * link (one planted in a shared results folder would make dnc replace the file it names, or create one where its
 * planter chose), a FIFO or socket of another user (its planter would read every number), and, when `file` is to be
 * replaced by a regular file (`replaced`), anything that is not a regular file. Missing is fine: it is created.
 * Checked with lstat, so it is the path itself that is judged, never what it leads to.
 */
export function refuseLinkedOutput(file: string, what: string, options: { replaced?: boolean } = {}): void {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(file);
  } catch {
    return;
  }
  const refuse = (is: string, hint: string) =>
    usageError('E_OUTPUT_LINK', `${what} ${file} is ${is}: dnc never writes through it`, { hint });
  if (st.isSymbolicLink()) {
    if (isSystemPath(file)) return;
    let to = 'nothing';
    try {
      to = fs.realpathSync.native(file);
    } catch {
      /* a link to nothing */
    }
    throw refuse(
      `a symbolic link (to ${to})`,
      to === 'nothing' ? 'remove the link, or choose another path' : `name the file itself (${to}), or remove the link`,
    );
  }
  if (st.isFile()) return;
  const uid = process.getuid?.();
  if ((st.isFIFO() || st.isSocket()) && uid !== undefined && st.uid !== uid)
    throw refuse(
      `a ${st.isFIFO() ? 'FIFO' : 'socket'} of another user (uid ${st.uid})`,
      'remove it, or choose another path',
    );
  if (options.replaced)
    throw refuse('not a regular file', 'remove it, or choose another path (dnc replaces this file as a whole)');
}

/**
 * A fresh temporary path beside `target` (same folder, so the rename is atomic): `.NAME.<pid>-<start>.<8 hex>.tmp`,
 * naming its writer, so that a later run can tell the leftovers of a killed writer from a file being written.
 */
export function tempPathFor(target: string): string {
  const { pid, start } = thisProcess();
  const random = randomBytes(4).toString('hex');
  return path.join(path.dirname(target), `.${path.basename(target)}.${pid}-${start}.${random}.tmp`);
}

// A temporary file named before writers were (`.NAME.<8 hex>.tmp`) is judged by its age: a render takes seconds.
const UNNAMED_WRITER_STALE_MS = 10 * 60_000;

/**
 * Removes the temporary files of `target` whose writer no longer runs (a `kill -9` while writing leaves them, holding
 * numbers), never one a live process may still rename (a `dnc listen` rendering). Returns how many it removed.
 */
export async function removeLeftoverTemps(target: string, now: number): Promise<number> {
  const dir = path.dirname(target);
  const prefix = `.${path.basename(target)}.`;
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    if (!name.startsWith(prefix) || !name.endsWith('.tmp')) continue;
    const rest = name.slice(prefix.length);
    const named = /^(\d+)-(\d+)\.[0-9a-f]{8}\.tmp$/.exec(rest);
    if (!named && !/^[0-9a-f]{8}\.tmp$/.test(rest)) continue;
    const file = path.join(dir, name);
    try {
      const left = named
        ? !isRunning(Number(named[1]), Number(named[2]))
        : now - (await stat(file)).mtimeMs > UNNAMED_WRITER_STALE_MS;
      if (!left) continue;
      await rm(file, { force: true });
      removed++;
    } catch {
      // Gone already, or not ours to remove: either way nothing to do.
    }
  }
  return removed;
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
 * Writes `text` to `target` atomically (refused when `target` is a symbolic link, or a FIFO of another user, see
 * refuseLinkedOutput); on failure the temporary file is removed and the error rethrown.
 * `durable`: the temporary file is flushed to disk before the rename and the folder after it, so a power
 * loss leaves the old file or the new one (without it, only a crash of this process does).
 */
export async function writeFileAtomic(
  target: string,
  text: string,
  mode?: number,
  options: { durable?: boolean; what?: string } = {},
): Promise<void> {
  // A folder in the way fails the rename itself, as before (the caller says what could not be written).
  refuseLinkedOutput(target, options.what ?? 'the output');
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
