// The SHA-256 of a file, read as a stream: inputs a resumed batch checks, outputs and lists a manifest names.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { inputError } from './errors.js';

/** SHA-256 of a file (to check that a resumed batch's input is the one it began with, say). */
export async function hashFile(path: string): Promise<string> {
  const hash = createHash('sha256');
  try {
    for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) hash.update(chunk as Buffer);
  } catch (err) {
    throw inputError(
      'E_INPUT_UNREADABLE',
      `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
      { cause: err },
    );
  }
  return hash.digest('hex');
}
