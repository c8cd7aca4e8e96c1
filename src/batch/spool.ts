// A list read from standard input, kept in a private file first: a batch reads its input more than once.
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import path from 'node:path';
import { describeFsError, inputError, usageError } from '../errors.js';
import { makeFolder } from './paths.js';
import type { RunContext } from './job.js';
import { createHash } from 'node:crypto';
import { removeLeftoverTemps, tempPathFor } from '../atomic-file.js';
import { Transform } from 'node:stream';
import { hashFile } from '../file-hash.js';

/** Standard input copied to a private temporary file, hashed on the way. */
export async function spoolStdin(
  ctx: RunContext,
  source: string,
  dir: string,
): Promise<{ tmp: string; sha256: string }> {
  if (source === '-' && ctx.io.stdinIsTTY) ctx.info('Reading the call list from standard input (end it with Ctrl-D)');
  makeFolder(dir, 'the list read from standard input');
  // A run killed while spooling left its copy of the list here.
  await removeLeftoverTemps(path.join(dir, 'stdin.csv'), ctx.now().getTime());
  const tmp = tempPathFor(path.join(dir, 'stdin.csv'));
  const hash = createHash('sha256');
  const tee = new Transform({
    transform(chunk: Buffer, _enc, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
  try {
    await pipeline(
      source === '-' ? ctx.io.stdin : createReadStream(source),
      tee,
      createWriteStream(tmp, { flags: 'wx', mode: 0o600, flush: true }),
    );
  } catch (err) {
    await rm(tmp, { force: true });
    throw inputError(
      'E_INPUT_UNREADABLE',
      `cannot read the call list from ${source === '-' ? 'standard input' : source} into ${dir}: ` +
        `${describeFsError(err)}`,
      { cause: err },
    );
  }
  return { tmp, sha256: hash.digest('hex') };
}

/**
 * Puts the spooled list where the journal's batch reads it. A different list under a journal that holds a
 * batch is refused (its answers were paid for; --restart discards them), and the old list is kept.
 */
export async function placeSpool(
  spool: { tmp: string; sha256: string },
  target: string,
  journalPath: string,
  restart: boolean,
): Promise<string> {
  const existing = existsSync(target) ? await hashFile(target) : null;
  if (existing === spool.sha256) return target;
  if (existing !== null && existsSync(journalPath) && !restart) {
    throw usageError(
      'E_JOURNAL_MISMATCH',
      `the journal ${journalPath} belongs to a batch of another list read from standard input`,
      {
        hint:
          'pipe the same list to resume, write to another -o, or add --restart to start over (answers ' +
          'already paid for in it are discarded; --reuse-within reuses them)',
      },
    );
  }
  await rename(spool.tmp, target);
  return target;
}
