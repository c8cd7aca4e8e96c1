// Shared by the window tests: a scratch world whose call list is scrubbed against the sandbox once, for all tests.
import path from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { dnc, world, type World } from '../helpers/world.js';

export interface Scrubbed {
  w: World;
  input: string;
  results: string;
}

/** Scrubs `lines` (calls.csv) into calls.results.csv before the file's tests, expecting `exit`; cleans up after. */
export function scrubbedForFile(lines: string[], exit: number): Scrubbed {
  const s = {} as Scrubbed;
  beforeAll(async () => {
    s.w = await world();
    s.input = s.w.file('calls.csv', lines);
    s.results = path.join(s.w.dir, 'calls.results.csv');
    const b = await dnc(['batch', s.input, '-o', s.results], s.w.env);
    expect(b.code, b.stderr).toBe(exit);
  });
  afterAll(async () => {
    await s.w.cleanup();
  });
  return s;
}
