// The docs name source and test files by path: each path they name exists, so a newcomer who follows one lands on
// the file (docs/excel.md once named nine paths of files that had moved).
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/cli.js';

/** Every `src/…` or `test/…` path a Markdown text names, with its line. */
export function namedPaths(text: string): Array<{ path: string; line: number }> {
  const found: Array<{ path: string; line: number }> = [];
  text.split('\n').forEach((line, i) => {
    for (const m of line.matchAll(/(?<![\w/.-])((?:src|test)\/[A-Za-z0-9_./-]*[A-Za-z0-9_/])/g)) {
      found.push({ path: m[1]!, line: i + 1 });
    }
  });
  return found;
}

describe('paths named in the docs', () => {
  it('exist: every src/ and test/ path of README.md and docs/*.md', () => {
    const docs = [
      'README.md',
      ...readdirSync(path.join(REPO_ROOT, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => `docs/${f}`),
    ];
    const missing = docs.flatMap((doc) =>
      namedPaths(readFileSync(path.join(REPO_ROOT, doc), 'utf8'))
        .filter((p) => !existsSync(path.join(REPO_ROOT, p.path)))
        .map((p) => `${doc}:${p.line}: ${p.path}`),
    );
    expect(missing).toEqual([]);
  });

  it('are found in prose and code spans alike', () => {
    expect(namedPaths('see `src/tables/xlsx-writer.ts` and src/batch/run.ts.').map((p) => p.path)).toEqual([
      'src/tables/xlsx-writer.ts',
      'src/batch/run.ts',
    ]);
  });
});
