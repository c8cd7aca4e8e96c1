// readRowsInThread (verify's input, read in a worker thread) gives exactly what readRows gives on this thread: the
// same rows over generated files, the same typed error for a broken one, and stops its thread when the caller does.
// The thread runs the built module (dist/tables/rows-worker.js: `npm test` builds first). The seed is printed on
// failure.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { DncError } from '../../src/errors.js';
import { readRows } from '../../src/tables/input.js';
import type { TableLayout } from '../../src/tables/layout.js';
import { readRowsAside, readRowsInThread, ROWS_THREAD_MIN_BYTES } from '../../src/tables/rows-thread.js';

const WORKER = fileURLToPath(new URL('../../dist/tables/rows-worker.js', import.meta.url));
const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-rows-thread-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const layoutOf = (file: string, columnCount: number): TableLayout => ({
  path: file,
  delimiter: ',',
  recordDelimiter: '\n',
  header: null,
  columnCount,
  phoneIndexes: [0],
  phoneLabels: ['phone'],
  bom: false,
});

async function collect(rows: AsyncGenerator<string[][]>): Promise<{ rows: string[][]; error: unknown }> {
  const out: string[][] = [];
  try {
    for await (const batch of rows) out.push(...batch);
    return { rows: out, error: null };
  } catch (err) {
    return { rows: out, error: err };
  }
}

const options = {
  numRuns: 25,
  ...(process.env.DNC_PROPERTY_SEED ? { seed: Number(process.env.DNC_PROPERTY_SEED) } : {}),
};
const cell = fc.stringMatching(/^[a-zé😀 "\n,+0-9]{0,6}$/);
const quote = (v: string) => (/[",\n\r]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);

describe('readRowsInThread', () => {
  it('gives the rows readRows gives, in the same order, over generated files of thousands of rows', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(cell, { minLength: 3, maxLength: 3 }), { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 200 }),
        async (seed, times) => {
          // Repeated to cross the reader's batches (1,024 rows) and its reads (64 KiB).
          const lines = Array.from({ length: times * seed.length }, (_, i) =>
            seed[i % seed.length]!.map(quote).join(','),
          );
          const file = path.join(dir, `list-${run++}.csv`);
          writeFileSync(file, `${lines.join('\r\n')}\r\n`);
          const here = await collect(readRows(layoutOf(file, 3)));
          const there = await collect(readRowsInThread(layoutOf(file, 3), WORKER));
          expect(here.error).toBeNull();
          expect(there.error).toBeNull();
          expect(there.rows).toEqual(here.rows);
        },
      ),
      options,
    );
  }, 120_000);

  it.each([
    ['a quote left open', Buffer.from('a,b,c\n"d,e,f\n')],
    ['a byte that is not UTF-8', Buffer.concat([Buffer.from('a,b,c\nd,'), Buffer.from([0xff]), Buffer.from(',f\n')])],
    ['a row of two fields', Buffer.from('a,b,c\nd,e\n')],
    ['a NUL byte', Buffer.from('a,b,c\nd,\0,f\n')],
  ])('%s: the same typed error, the same words, the same place', async (_what, bytes) => {
    const file = path.join(dir, 'broken.csv');
    writeFileSync(file, bytes);
    const here = await collect(readRows(layoutOf(file, 3)));
    const there = await collect(readRowsInThread(layoutOf(file, 3), WORKER));
    expect(here.error).toBeInstanceOf(DncError);
    expect(there.error).toBeInstanceOf(DncError);
    const e = (x: unknown) => ({
      code: (x as DncError).code,
      message: (x as DncError).message,
      hint: (x as DncError).hint,
      details: (x as DncError).details,
    });
    expect(e(there.error)).toEqual(e(here.error));
  });

  it('a caller that stops early stops the thread (the generator returns, nothing left waiting)', async () => {
    const file = path.join(dir, 'long.csv');
    writeFileSync(
      file,
      Array.from({ length: 50_000 }, (_, i) => `n${i},+1202555${String(i % 10_000).padStart(4, '0')},x`).join('\n'),
    );
    const rows = readRowsInThread(layoutOf(file, 3), WORKER);
    const first = await rows.next();
    expect(first.done).toBe(false);
    expect((first.value as string[][])[0]).toEqual(['n0', '+12025550000', 'x']);
    await expect(rows.return(undefined)).resolves.toEqual({ done: true, value: undefined });
  });

  // A caller that fails between two batches (verify: a journal's settings refused after the input's header was read)
  // never returns the reader: its thread, waiting for the word to read on, must not keep the process alive. A caller
  // that awaits its rows, with nothing else to wait for, must still get them all.
  it.each([
    ['a caller that takes one batch and forgets the reader', 'await rows.next(); console.log("took 1");', 'took 1'],
    [
      'a caller that awaits every batch, nothing else alive',
      'let n = 0; for await (const b of rows) n += b.length; console.log(`took ${n}`);',
      'took 50000',
    ],
  ])(
    '%s: the process ends by itself',
    async (_what, take, said) => {
      const file = path.join(dir, 'forgotten.csv');
      writeFileSync(
        file,
        Array.from({ length: 50_000 }, (_, i) => `n${i},+1202555${String(i % 10_000).padStart(4, '0')},x`).join('\n'),
      );
      const thread = pathToFileURL(fileURLToPath(new URL('../../dist/tables/rows-thread.js', import.meta.url))).href;
      const script = `import { readRowsInThread } from ${JSON.stringify(thread)};
      const rows = readRowsInThread(${JSON.stringify(layoutOf(file, 3))}, ${JSON.stringify(WORKER)});
      ${take}`;
      // (A file, not --eval: a thread inherits the process's flags, and --input-type stops it from starting.)
      const main = path.join(dir, 'caller.mjs');
      writeFileSync(main, script);
      const child = spawn(process.execPath, [main], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
      const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      const [code, signal] = await new Promise<[number | null, string | null]>((resolve) =>
        child.on('close', (c, s) => resolve([c, s])),
      );
      clearTimeout(killer);
      expect({ code, signal, out: out.trim() }).toEqual({ code: 0, signal: null, out: said });
    },
    20_000,
  );

  it('readRowsAside reads a small file here and a big one in the thread', async () => {
    const small = path.join(dir, 'small.csv');
    writeFileSync(small, 'a,b,c\n');
    // A thread module that is not there is never started for a small file...
    expect((await collect(readRowsAside(layoutOf(small, 3), path.join(dir, 'no-such-worker.js')))).rows).toEqual([
      ['a', 'b', 'c'],
    ]);
    // ... and is, for a big one (its failure to start says so).
    const big = path.join(dir, 'big.csv');
    writeFileSync(big, 'a,b,c\n'.repeat(Math.ceil(ROWS_THREAD_MIN_BYTES / 6)));
    const failed = await collect(readRowsAside(layoutOf(big, 3), path.join(dir, 'no-such-worker.js')));
    expect(String(failed.error)).toMatch(/no-such-worker|Cannot find module/);
    // A workbook is never read in the thread.
    const sheet = { ...layoutOf(big, 3), workbook: { sheet: 'Sheet1', headerRow: 1 } } as unknown as TableLayout;
    expect(String((await collect(readRowsAside(sheet, path.join(dir, 'no-such-worker.js')))).error)).not.toMatch(
      /no-such-worker/,
    );
    const read = await collect(readRowsAside(layoutOf(big, 3), WORKER));
    expect(read.error).toBeNull();
    expect(read.rows.length).toBe(Math.ceil(ROWS_THREAD_MIN_BYTES / 6));
  });
});
