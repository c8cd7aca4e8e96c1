// `dnc sandbox --detach`: starts the sandbox as a background process, waits until it listens, and prints
// `export` lines for the shell to eval. The sandbox's stdout and stderr go to files, never to a pipe,
// so it outlives the shell's command substitution without a broken pipe.
import { rawStream } from '../redact.js';
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { mkdtemp, readFile, rm, rmdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Context } from '../context.js';
import { ExitCode, usageError } from '../errors.js';
import { writeLine } from '../io.js';

const READY_WITHIN_MS = 15_000;

/** bin/dnc.js, found from this module both as TypeScript source (src/commands/) and bundled (dist/bundle/). */
function dncEntry(): string {
  return fileURLToPath(new URL('../../bin/dnc.js', import.meta.url));
}

/** A value as one shell word: single quotes survive `eval` whatever the key holds. */
function shellQuote(value: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

const FOLDER_PREFIX = 'dnc-sandbox-';
const OUT_FILE = 'stdout';
const LOG_FILE = 'sandbox.log';

/**
 * Removes the folder `--detach` made for a background sandbox (its two files, then the folder): only a folder of
 * that name, and only those files, whatever path the hidden option is given.
 */
export async function removeDetachedFolder(dir: string): Promise<void> {
  if (!path.basename(dir).startsWith(FOLDER_PREFIX)) return;
  for (const name of [OUT_FILE, LOG_FILE]) await rm(path.join(dir, name), { force: true });
  await rmdir(dir).catch(() => {}); // something else in it: not ours to remove
}

export async function runDetached(ctx: Context, args: readonly string[]): Promise<number> {
  // Private: the log names the API key's account and every request.
  const dir = await mkdtemp(path.join(os.tmpdir(), FOLDER_PREFIX));
  const outPath = path.join(dir, OUT_FILE);
  const logPath = path.join(dir, LOG_FILE);
  const out = openSync(outPath, 'w', 0o600);
  const log = openSync(logPath, 'w', 0o600);
  // The sandbox removes the folder when stopped (kill $DNC_SANDBOX_PID, SIGINT); its log stays if it dies of an error.
  const child = spawn(process.execPath, [dncEntry(), 'sandbox', ...args, '--detached-folder', dir], {
    detached: true,
    stdio: ['ignore', out, log],
    env: ctx.env,
  });
  closeSync(out);
  closeSync(log);
  let exited: number | undefined;
  child.on('exit', (code, signal) => {
    exited = code ?? (signal ? 128 : 1);
  });
  const started = Date.now();
  const values: Record<string, string> = {};
  while (values.DNC_BASE_URL === undefined || values.DNC_API_KEY === undefined) {
    if (exited !== undefined) {
      // The sandbox printed its own error (dnc: error [CODE]: …): passed on, with its exit status; the folder goes.
      for (const line of (await readFile(logPath, 'utf8')).split('\n').filter(Boolean)) ctx.warn(line);
      await removeDetachedFolder(dir);
      return exited;
    }
    if (Date.now() - started > READY_WITHIN_MS) {
      // Killed outright, so that its log (named in the hint) is kept.
      child.kill('SIGKILL');
      throw usageError('E_SANDBOX_LISTEN', `the sandbox did not print its address within ${READY_WITHIN_MS / 1000} s`, {
        hint: `its log: ${logPath}`,
      });
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
    for (const line of (await readFile(outPath, 'utf8')).split('\n')) {
      const m = /^(DNC_BASE_URL|DNC_API_KEY)=(.*)$/.exec(line);
      if (m) values[m[1]!] = m[2]!;
    }
  }
  child.unref();
  writeLine(ctx.io.stdout, `export DNC_BASE_URL=${shellQuote(values.DNC_BASE_URL)}`);
  // The emulator's key is data here, printed to be eval'd: past the redaction (it may equal the configured key).
  writeLine(rawStream(ctx.io.stdout), `export DNC_API_KEY=${shellQuote(values.DNC_API_KEY)}`);
  writeLine(ctx.io.stdout, `export DNC_SANDBOX_PID=${child.pid}`);
  ctx.info(
    `sandbox: running in the background (pid ${child.pid}), log ${logPath}; stop it with: kill $DNC_SANDBOX_PID`,
  );
  return ExitCode.OK;
}
