// What a path names (a regular file, a link, a FIFO or device), asked without throwing: a path that is not
// there, or cannot be looked at, is none of them.
import { lstatSync, statSync, type Stats } from 'node:fs';

function statOf(file: string, follow: boolean): Stats | null {
  try {
    return follow ? statSync(file) : lstatSync(file);
  } catch {
    return null;
  }
}

export function isRegularFile(file: string): boolean {
  return statOf(file, true)?.isFile() === true;
}

/** The path itself is a symbolic link (not followed). */
export function isSymbolicLink(file: string): boolean {
  return statOf(file, false)?.isSymbolicLink() === true;
}

export function isCharacterDevice(file: string): boolean {
  return statOf(file, true)?.isCharacterDevice() === true;
}

/** A FIFO, a device or a socket: read once, or written through, never replaced by a file. */
export function isStream(file: string): boolean {
  const st = statOf(file, true);
  return st !== null && (st.isFIFO() || st.isCharacterDevice() || st.isSocket());
}
