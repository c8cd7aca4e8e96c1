// What a CSV batch loads: never the workbook reader (src/tables/xlsx-input.ts, with its XML scanner, package and zip
// readers), which it once loaded before its first lookup to ask whether a path ends in .xlsx (docs/BENCHMARKS.md,
// item 8). The built CLI runs with a loader hook that writes down each module Node loads; each bundle chunk is
// mapped to its sources by its source map.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, spawnDnc } from '../helpers/cli.js';
import { sandbox, scratch, scratchFolders } from './helpers.js';
import type { Sandbox } from '../../src/sandbox/index.js';

const tmp = scratch();
let sb: Sandbox;
let env: Record<string, string>;

beforeAll(async () => {
  ({ sb, env } = await sandbox());
});
afterAll(async () => {
  await sb.close();
  tmp.remove();
});

/** A hook for `node --import`: every module URL Node loads, a line each, appended to $DNC_TEST_LOADED. */
const HOOK = `
import { register } from 'node:module';
register('data:text/javascript,' + encodeURIComponent(\`
import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  appendFileSync(process.env.DNC_TEST_LOADED, url + '\\\\n');
  return next(url, context);
}\`));
`;

/** The source files of what a run loaded: a bundle chunk's from its source map, any other file as itself. */
function loadedSources(list: string): string[] {
  const sources: string[] = [];
  for (const url of readFileSync(list, 'utf8')
    .split('\n')
    .filter((u) => u.startsWith('file:'))) {
    const file = new URL(url).pathname;
    if (!existsSync(`${file}.map`)) {
      sources.push(file);
      continue;
    }
    const map = JSON.parse(readFileSync(`${file}.map`, 'utf8')) as { sources: string[] };
    sources.push(...map.sources.map((s) => path.resolve(path.dirname(file), s)));
  }
  return sources;
}

describe('the modules a batch loads', () => {
  it('a CSV list scrubbed into a CSV file loads no part of the workbook reader', async () => {
    const hook = path.join(tmp.dir, 'hook.mjs');
    writeFileSync(hook, HOOK);
    const input = path.join(tmp.dir, 'leads.csv');
    writeFileSync(input, 'name,phone\nAnn,+12025550100\nBob,+12025550101\n');
    const loaded = path.join(tmp.dir, 'loaded.txt');
    writeFileSync(loaded, '');
    const r = await spawnDnc(['batch', input, '--quiet'], {
      env: {
        ...env,
        ...scratchFolders(tmp.dir),
        DNC_TEST_LOADED: loaded,
        NODE_OPTIONS: `--import ${pathToFileURL(hook).href}`,
      },
      timeoutMs: 60_000,
    });
    expect(r.code, r.stderr).toBe(0);
    const sources = loadedSources(loaded).map((s) => path.relative(REPO_ROOT, s));
    // The hook saw the batch's own modules (its use case, the CSV reader and writer)...
    expect(sources).toEqual(expect.arrayContaining(['src/batch/run.ts', 'src/tables/csv-input.ts']));
    // ...and none of the workbook reader's.
    const workbook = ['xlsx-input.ts', 'xlsx-xml.ts', 'xlsx-package.ts', 'zip-file.ts'].map((f) => `src/tables/${f}`);
    expect(sources.filter((s) => workbook.includes(s))).toEqual([]);
  });
});
