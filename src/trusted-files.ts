// Files dnc takes settings or a key from, judged as ssh judges its own: who may replace them, and who may read them.
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { usageError } from './errors.js';

/** A mode as `ls -l` and chmod show it: 0644. */
const octal = (mode: number) => `0${(mode & 0o777).toString(8)}`;

/** A file of settings or a key as judged: the file it names (a link resolved), to be read, and its mode. */
export interface JudgedFile {
  path: string;
  mode: number;
}

/** The user dnc runs as, and root: the only owners a file of settings or a key, and every folder above it, may have. */
const trustedOwner = (uid: number) => uid === 0 || uid === (process.getuid?.() ?? uid);

/**
 * As ssh treats its config and keys: the file a path names (through any symbolic link), and every folder above it up
 * to `/`, must belong to the user or root, and none may be writable by others (a sticky folder such as /tmp aside):
 * anyone who could replace the file, or a folder on its way, could point base_url at their own server and be sent the
 * key. Judged where the file really lies, since a link's own folder says nothing of who may replace what it points at;
 * the path returned is that file, so what is read is what was judged. Exit 2, naming the chmod to run. Null when the
 * path names no regular file: a pipe or a terminal (`--api-key-file <(pass show dnc)`) is no file anyone could
 * replace, and a missing one is the reader's to report.
 */
export async function judgeFile(file: string, what: string): Promise<JudgedFile | null> {
  const st = await stat(file).catch(() => null);
  if (!st?.isFile()) return null;
  const real = await realpath(file).catch(() => path.resolve(file));
  const named = real === path.resolve(file) ? `${what} ${file}` : `${what} ${file} (a link to ${real})`;
  const refuse = (problem: string, hint: string) =>
    usageError('E_CONFIG_INSECURE', `${problem}: dnc will not use it`, { hint });
  if (!trustedOwner(st.uid))
    throw refuse(
      `${named} belongs to another user (uid ${st.uid})`,
      `anyone who owns it can send the key elsewhere; use a file of your own`,
    );
  if (st.mode & 0o022)
    throw refuse(
      `${named} is writable by others (mode ${octal(st.mode)})`,
      `anyone who can write it can send the key elsewhere; make it yours alone: chmod go-w ${real}`,
    );
  for (let dir = path.dirname(real); ; dir = path.dirname(dir)) {
    const folder =
      dir === path.dirname(real) && named === `${what} ${file}`
        ? `the folder of ${named}`
        : `the folder ${dir} above ${named}`;
    const d = await stat(dir).catch(() => null);
    if (d && !trustedOwner(d.uid))
      throw refuse(
        `${folder} belongs to another user (uid ${d.uid})`,
        `anyone who owns the folder can replace the file; keep it in a folder of your own`,
      );
    if (d && d.mode & 0o022 && !(d.mode & 0o1000))
      throw refuse(
        `${folder} is writable by others (mode ${octal(d.mode)})`,
        `anyone who can write the folder can replace the file; run: chmod go-w ${dir}`,
      );
    if (dir === path.dirname(dir)) break;
  }
  return { path: real, mode: st.mode };
}

/** A warning when a file that holds a secret (`holdsKey`: what it holds) may be read by others. */
export function warnIfReadable(
  judged: JudgedFile | null,
  file: string,
  what: string,
  holdsKey: string | false,
  warnings: string[],
): void {
  if (judged && holdsKey && judged.mode & 0o044) {
    const readable = `${what} ${file} holds ${holdsKey} and others can read it (mode ${octal(judged.mode)})`;
    warnings.push(`warning: ${readable}; run: chmod 600 ${judged.path}`);
  }
}
