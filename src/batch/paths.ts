// Every file a batch reads or writes, decided and checked before anything is read or sent: no output may land on the
// input or on another output.
import { createHash, randomBytes } from 'node:crypto';
import { lstatSync, mkdirSync, realpathSync, type Stats, statSync } from 'node:fs';
import { open, rm, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describeFsError, inputError, usageError } from '../errors.js';
import { journalPathFor } from '../journal/journal.js';
import { refuseLinkedOutput } from '../atomic-file.js';

/** Where an output goes: a regular file (written atomically at its real path) or a stream written through. */
export type OutputTarget = { kind: 'file'; path: string } | { kind: 'stream'; path: string };

/**
 * Resolves an output path as given by the user: `-` is standard output; a FIFO or character device is
 * written through (replacing one with a plain file broke `-o /dev/stdout`); a symbolic link is refused
 * (`E_OUTPUT_LINK`: one planted in a shared folder would have dnc replace the file it names), except the system's
 * own (/dev/stdout, /dev/fd/N), as is a FIFO of another user.
 */
export function resolveOutputTarget(flag: string, given: string, cwd: string): OutputTarget {
  if (given === '-') return { kind: 'stream', path: '-' };
  const absolute = path.resolve(cwd, given);
  let link: Stats | null = null;
  try {
    link = lstatSync(absolute);
  } catch {
    link = null;
  }
  refuseLinkedOutput(absolute, flag);
  if (link === null) {
    const dir = path.dirname(absolute);
    let real: string;
    try {
      real = realpathSync(dir);
    } catch {
      throw usageError('E_USAGE', `${flag} ${given}: the folder ${dir} does not exist`, {
        hint: 'create it first, or choose another path',
      });
    }
    if (!statSync(real).isDirectory()) throw usageError('E_USAGE', `${flag} ${given}: ${dir} is not a folder`);
    return { kind: 'file', path: path.join(real, path.basename(absolute)) };
  }
  let target: Stats;
  try {
    // stat follows the link as open() will (/dev/stdout → /proc/self/fd/1 → a pipe has no path to resolve).
    target = statSync(absolute);
  } catch {
    throw usageError('E_USAGE', `${flag} ${given} is a symbolic link to nothing`, {
      hint: 'point it at a file, or choose another path',
    });
  }
  if (target.isDirectory())
    throw usageError('E_USAGE', `${flag} ${given} is a folder`, { hint: 'give a file name, e.g. results.csv' });
  if (target.isFile()) return { kind: 'file', path: link.isSymbolicLink() ? realpathSync.native(absolute) : absolute };
  if (target.isFIFO() || target.isCharacterDevice() || target.isSocket()) return { kind: 'stream', path: absolute };
  throw usageError('E_USAGE', `${flag} ${given} is a block device`, { hint: 'write the results to a file' });
}

/** One file a batch touches, named by the role it plays (for the collision message). */
export interface NamedFile {
  role: string;
  path: string;
}

/** Identity of a path: its device and inode when it exists, else its real folder and name. */
function identities(file: string): string[] {
  const ids: string[] = [];
  try {
    const st = statSync(file);
    ids.push(`ino:${st.dev}:${st.ino}`);
  } catch {
    // Not there yet: the path is its identity.
  }
  try {
    ids.push(`path:${path.join(realpathSync(path.dirname(file)), path.basename(file))}`);
  } catch {
    ids.push(`path:${path.resolve(file)}`);
  }
  return ids;
}

/**
 * Refuses (exit 2) any two files that are one: the input overwritten by the manifest, the input deleted
 * by --restart as a journal, a list overwritten by the manifest. Hard links and symbolic links count.
 */
export function refuseCollisions(files: readonly NamedFile[]): void {
  const seen = new Map<string, NamedFile>();
  for (const f of files) {
    for (const id of identities(f.path)) {
      const other = seen.get(id);
      if (other && other.role !== f.role) {
        const isInput = (role: string) => role === 'the input' || role === 'the spooled input';
        const written = isInput(other.role) ? f.role : other.role;
        // The journal, its locks and the manifest follow -o: naming -o anew moves them too.
        const rename = written.startsWith('--')
          ? `give ${written} another name`
          : written.startsWith('the')
            ? 'give -o (or --journal) another name'
            : `give ${written} another name`;
        throw usageError('E_PATH_COLLISION', `${other.role} and ${f.role} are the same file (${f.path})`, {
          hint:
            isInput(other.role) || isInput(f.role)
              ? `dnc never writes over its input: ${rename}`
              : `give each output its own file name: ${rename}`,
        });
      }
      seen.set(id, f);
    }
  }
}

/** The side files of a batch journal: what --restart deletes and a collision must never be. */
export function journalSideFiles(journal: string): NamedFile[] {
  return [
    { role: 'the journal', path: journal },
    { role: 'the journal', path: `${journal}-wal` },
    { role: 'the journal', path: `${journal}-shm` },
    { role: 'the journal lock', path: `${journal}.lock` },
    { role: 'the listen lock', path: `${journal}.listen.lock` },
  ];
}

// Room for the first block of a results file: a folder that cannot take this is found before any credit is spent.
const PROBE_BYTES = 64 * 1024;

/** Checks that a file can be created in `dir` and take a first write; exit 3 naming the folder when not. */
export async function checkWritableFolder(dir: string, why: string): Promise<void> {
  const probe = path.join(dir, `.dnc-probe-${randomBytes(4).toString('hex')}.tmp`);
  let handle;
  try {
    handle = await open(probe, 'wx', 0o600);
    const block = Buffer.alloc(PROBE_BYTES);
    // A nearly full disk takes part of a write and says nothing: only the count tells.
    const { bytesWritten } = await handle.write(block, 0, block.length, 0);
    if (bytesWritten < block.length) throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
    await handle.sync();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw inputError('E_OUTPUT_UNWRITABLE', `cannot write ${why} in ${dir}: ${describeFsError(err)}`, {
      hint:
        code === 'ENOSPC' || code === 'EDQUOT'
          ? 'free some space on that disk first; nothing was sent'
          : 'choose a folder you can write to; nothing was sent',
      cause: err,
    });
  } finally {
    await handle?.close().catch(() => {});
    await rm(probe, { force: true }).catch(() => {});
  }
}

/**
 * The journal of a batch whose output is not a file (`-o -`, a FIFO): in the user's state folder, keyed by
 * the input's content and the options that shape the answers, so running the same command again resumes.
 */
export function streamJournalPath(stateDir: string, inputSha256: string, resultOptions: unknown): string {
  const key = createHash('sha256')
    .update(inputSha256)
    .update('\0')
    .update(JSON.stringify(resultOptions))
    .digest('hex')
    .slice(0, 24);
  return path.join(stateDir, 'batches', key, 'journal.sqlite');
}

/** Where the list read from standard input is kept (beside the journal), so every render can read it again. */
export function spoolPathFor(journal: string): string {
  return journal.replace(/\.sqlite$/, '') + '.input.csv';
}

export { journalPathFor };

/** What a batch reads and writes, as resolved before anything is read or sent. */
export interface BatchPaths {
  /** The file the list is read from: the input, or the spool of standard input once it is read. */
  inputPath: string;
  fromStdin: boolean;
  output: OutputTarget;
  /** The output as it is stored and rendered: a real file path, a FIFO or device path, or `-`. */
  outputPath: string;
  callableOut: string | null;
  suppressedOut: string | null;
  reviewOut: string | null;
  dialOut: string | null;
  country: string | undefined;
}

/**
 * Creates a private folder dnc keeps files in; one that cannot be made is exit 3 naming it (never an internal error).
 */
export function makeFolder(dir: string, what: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw inputError('E_OUTPUT_UNWRITABLE', `cannot make the folder ${dir} for ${what}: ${describeFsError(err)}`, {
      hint: 'check XDG_STATE_HOME (or HOME), or give -o a file and --journal a path you can write to; nothing was sent',
      cause: err,
    });
  }
}

export async function refuseManifestOfAnotherOutput(manifestPath: string, outputPath: string): Promise<void> {
  let describes: string | undefined;
  try {
    describes = (JSON.parse(await readFile(manifestPath, 'utf8')) as { output?: { path?: string } }).output?.path;
  } catch {
    return; // None yet, or not a manifest: the batch writes its own.
  }
  if (describes && outputPath !== '-' && path.resolve(describes) !== path.resolve(outputPath)) {
    throw usageError(
      'E_PATH_COLLISION',
      `${manifestPath} is the manifest of another output (${describes}): this batch's would replace it`,
      {
        hint: 'give -o a name that differs from that output by more than its extension',
      },
    );
  }
}
