// Helpers for batch tests: a scratch folder, a sandbox, parsed CSV, file hashes.
import { PassThrough } from 'node:stream';
import type { BatchRunDeps } from '../../src/batch/job.js';
import type { Context } from '../../src/context.js';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startSandbox, type Sandbox, type SandboxOptions } from '../../src/sandbox/index.js';
import { REPO_ROOT } from '../helpers/cli.js';

export const FIXTURES = path.join(REPO_ROOT, 'fixtures');

export function scratch(): { dir: string; remove(): void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-batch-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export async function sandbox(options: SandboxOptions = {}): Promise<{ sb: Sandbox; env: Record<string, string> }> {
  const sb = await startSandbox({ port: 0, seed: 7, ...options });
  return { sb, env: { DNC_BASE_URL: sb.baseUrl, DNC_API_KEY: sb.apiKey } };
}

export function sha256(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

/** A CSV file parsed into records (header included). */
export function readCsv(file: string, delimiter = ','): string[][] {
  return parse(readFileSync(file), { delimiter, bom: true, relax_column_count: false }) as string[][];
}

/** Output rows as objects keyed by header. */
export function readCsvObjects(file: string, delimiter = ','): Array<Record<string, string>> {
  const [head, ...rows] = readCsv(file, delimiter);
  return rows.map((r) => Object.fromEntries(head!.map((h, i) => [h, r[i]!])));
}

/** The lookups the sandbox received (phone numbers of /check_phone_number requests, in order). */
export function lookedUp(sb: Sandbox): string[] {
  return sb
    .requests()
    .filter((r) => r.path === '/check_phone_number')
    .map((r) => r.query.phone_number!);
}

export function countBy<T>(items: T[], key: (t: T) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const i of items) out[key(i)] = (out[key(i)] ?? 0) + 1;
  return out;
}

/**
 * A sandbox and a scratch folder for the tests of one file: the sandbox starts before them, forgets its
 * requests after each, and both are removed after all. Read `sb` and `env` inside tests. The env names a state
 * folder in the scratch folder: the machine's, where dnc anchors what it writes (verify proves the file by it).
 */
export function sandboxForFile(): { dir: string; readonly sb: Sandbox; readonly env: Record<string, string> } {
  const tmp = scratch();
  let started: { sb: Sandbox; env: Record<string, string> } | undefined;
  beforeAll(async () => {
    started = await sandbox();
  });
  afterEach(() => started?.sb.reset());
  afterAll(async () => {
    await started?.sb.close();
    tmp.remove();
  });
  return {
    dir: tmp.dir,
    get sb() {
      return started!.sb;
    },
    get env() {
      return { ...started!.env, XDG_STATE_HOME: path.join(tmp.dir, 'state') };
    },
  };
}

/** XDG state, cache and config folders inside a test's scratch folder: nothing is written to the user's home. */
export function scratchFolders(dir: string): Record<string, string> {
  return {
    XDG_STATE_HOME: path.join(dir, 'state'),
    XDG_CACHE_HOME: path.join(dir, 'cache'),
    XDG_CONFIG_HOME: path.join(dir, 'config'),
  };
}

/**
 * What a test gives the batch use case when it runs it as a command would: the folders, a context's service
 * configuration and client, no terminal, this process as the lock's holder. `overrides` replaces any of it.
 */
export function batchDeps(
  dir: string,
  env: Record<string, string>,
  ctx: Pick<Context, 'serviceConfig' | 'createClient' | 'stores'>,
  overrides: Partial<BatchRunDeps> & Pick<BatchRunDeps, 'interrupts' | 'onEvent'>,
): BatchRunDeps {
  return {
    cwd: dir,
    env,
    homedir: dir,
    now: () => new Date(),
    tzdataVersion: process.versions.tz ?? 'unknown',
    flags: {},
    serviceConfig: () => ctx.serviceConfig(),
    createClient: (o) => ctx.createClient(o),
    stores: () => ctx.stores(),
    stdin: new PassThrough(),
    stdinIsTTY: false,
    stdout: new PassThrough(),
    lockDeps: { pid: process.pid, isAlive: () => false },
    isStandardOutput: () => false,
    isStandardInput: () => false,
    ...overrides,
  };
}
