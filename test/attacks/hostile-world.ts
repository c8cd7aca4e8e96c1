// The hostile service (bench/hostile-service.mjs) for a test file: started once, honest again after each test, and
// machines of their own (folders, caches, state) with lists to scrub.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
// @ts-expect-error: a plain .mjs module shared with the soak (bench/soak.mjs), typed by use.
import { startHostileService } from '../../bench/hostile-service.mjs';
import { scratch, scratchFolders } from '../batch/helpers.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';

export interface Hostile {
  baseUrl: string;
  apiKey: string;
  requests: Array<{
    path: string;
    query: Record<string, string>;
    headers: Record<string, string | undefined>;
    e164?: string;
  }>;
  lookups(): string[];
  setBehaviour(b: string): void;
  close(): Promise<void>;
}

export interface HostileWorld {
  readonly svc: Hostile;
  /** A folder and environment of their own: a machine with its own results cache and state. */
  machine(extra?: Record<string, string>): { dir: string; env: Record<string, string> };
  /** A CSV list of `numbers` in `dir` (columns name, phone). */
  list(dir: string, numbers: string[]): string;
  /** The rows of a results file, read by the independent CSV reader. */
  rowsOf(file: string): Array<Record<string, string>>;
}

/** Registers the hooks of a test file that runs dnc against the hostile service. */
export function hostileWorld(): HostileWorld {
  const tmp = scratch();
  let svc: Hostile | undefined;
  let n = 0;
  beforeAll(async () => {
    svc = (await startHostileService()) as Hostile;
  });
  afterEach(() => svc?.setBehaviour('honest'));
  afterAll(async () => {
    await svc?.close();
    tmp.remove();
  });
  return {
    get svc() {
      return svc!;
    },
    machine(extra = {}) {
      const dir = path.join(tmp.dir, `m${++n}`);
      mkdirSync(dir);
      return { dir, env: { DNC_BASE_URL: svc!.baseUrl, DNC_API_KEY: svc!.apiKey, ...scratchFolders(dir), ...extra } };
    },
    list(dir, numbers) {
      const file = path.join(dir, 'calls.csv');
      writeFileSync(file, `name,phone\n${numbers.map((p, i) => `n${i},${p}`).join('\n')}\n`);
      return file;
    },
    rowsOf(file) {
      const [header, ...rows] = readCsvIndependently(file);
      return rows.map((r) => Object.fromEntries(header!.map((h, i) => [h, r[i]!])));
    },
  };
}
