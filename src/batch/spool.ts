// A list read from standard input, kept in a private file first: a batch reads its input more than once.
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import path from 'node:path';
import { DncError, describeFsError, inputError, interruptedError, usageError } from '../errors.js';
import { MAX_RECORD_CHARS } from '../tables/csv-input.js';
import { makeFolder, spoolPathFor } from './paths.js';
import type { RunContext } from './job.js';
import { createHash } from 'node:crypto';
import { removeLeftoverTemps, tempPathFor } from '../atomic-file.js';
import { Transform } from 'node:stream';
import { hashFile } from '../file-hash.js';

/**
 * A line longer than this many bytes holds more than MAX_RECORD_CHARS characters (at most 4 bytes each): no record of
 * the list can hold it, so the list is refused as soon as such a line is seen, not after it was all copied.
 */
const MAX_LINE_BYTES = MAX_RECORD_CHARS * 4;

/**
 * Counts the bytes of the line being read and refuses one that no record could hold: as a file's list is refused by
 * its parser, but before the copy of standard input has grown by more than that line.
 */
function lineLimit(source: string): Transform {
  let line = 1;
  let current = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      let at = 0;
      for (;;) {
        const lf = chunk.indexOf(0x0a, at);
        const cr = chunk.indexOf(0x0d, at);
        const end = lf < 0 ? cr : cr < 0 ? lf : Math.min(lf, cr);
        current += (end < 0 ? chunk.length : end) - at;
        if (current > MAX_LINE_BYTES) {
          done(
            inputError('E_INPUT_MALFORMED', `${source}: line ${line} is longer than ${MAX_RECORD_CHARS} characters`, {
              hint: 'this does not look like a call list; nothing was sent, and nothing of it was kept',
            }),
          );
          return;
        }
        if (end < 0) break;
        // CRLF is one line end: its LF starts no new line.
        if (!(chunk[end] === 0x0a && end > 0 && chunk[end - 1] === 0x0d)) line++;
        current = 0;
        at = end + 1;
      }
      done(null, chunk);
    },
  });
}

/**
 * Standard input copied to a private temporary file as it is read, hashed on the way. A line no record could hold
 * refuses the list at once, and the copy is removed when the list is refused, unreadable, or the run is interrupted
 * (SIGINT, SIGTERM) while it is read: nothing of the list is left behind.
 */
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
  const named = source === '-' ? 'standard input' : source;
  const hash = createHash('sha256');
  const tee = new Transform({
    transform(chunk: Buffer, _enc, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
  const stop = new AbortController();
  const offInterrupt = ctx.interrupts.on(() => stop.abort());
  try {
    await pipeline(
      source === '-' ? ctx.io.stdin : createReadStream(source),
      lineLimit(named),
      tee,
      createWriteStream(tmp, { flags: 'wx', mode: 0o600, flush: true }),
      { signal: stop.signal },
    );
  } catch (err) {
    await rm(tmp, { force: true });
    if (stop.signal.aborted)
      throw interruptedError(`interrupted while reading the call list from ${named}; nothing of it was kept`, {
        hint: 'nothing was sent: run the same command again',
      });
    if (err instanceof DncError) throw err;
    throw inputError(
      'E_INPUT_UNREADABLE',
      `cannot read the call list from ${named} into ${dir}: ${describeFsError(err)}`,
      { cause: err },
    );
  } finally {
    offInterrupt();
  }
  return { tmp, sha256: hash.digest('hex') };
}

/**
 * Puts the spooled list where the journal's batch reads it. A different list under a journal that holds a
 * batch is refused (its answers were paid for; --restart discards them), and the old list is kept.
 * `dropIfRefused(err)`: a list placed by this run and then refused (`E_INPUT_*`: malformed, not text) is removed, since
 * nothing can resume from it; one kept from an earlier run stays.
 */
export async function placeSpool(
  spool: { tmp: string; sha256: string },
  target: string,
  journalPath: string,
  restart: boolean,
): Promise<{ path: string; dropIfRefused(err: unknown): Promise<void> }> {
  const existing = existsSync(target) ? await hashFile(target) : null;
  const placed = (fresh: boolean) => ({
    path: target,
    async dropIfRefused(err: unknown) {
      if (fresh && err instanceof DncError && err.code.startsWith('E_INPUT_')) await rm(target, { force: true });
    },
  });
  if (existing === spool.sha256) return placed(false);
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
  return placed(existing === null);
}

/**
 * Runs the batch on the list read from standard input, placed beside the journal (`kept`; null when the list is a
 * file): a list placed by this run and refused while read removed again.
 */
export async function withKeptInput<T>(
  spool: { tmp: string; sha256: string } | null,
  journalPath: string,
  restart: boolean,
  run: (kept: string | null) => Promise<T>,
): Promise<T> {
  if (!spool) return run(null);
  const placed = await placeSpool(spool, spoolPathFor(journalPath), journalPath, restart);
  try {
    return await run(placed.path);
  } catch (err) {
    await placed.dropIfRefused(err);
    throw err;
  }
}
