// A table's rows read in a worker thread, beside the caller's own work: verify reads its input in step with the
// output, and the input's CSV parse then runs on another core.
import { existsSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { DncError, type ErrorCode } from '../errors.js';
import { readRows } from './input.js';
import type { TableLayout } from './layout.js';

export interface RowsThreadData {
  layout: TableLayout;
}

export type ToRowsThread = { type: 'more' };

/** A DncError as a message can carry it (its class does not cross threads). */
export interface RowsThreadError {
  code: ErrorCode | null;
  message: string;
  hint?: string | undefined;
  details?: Record<string, unknown> | undefined;
}

export type FromRowsThread =
  { type: 'rows'; rows: string[][] } | { type: 'end' } | { type: 'error'; error: RowsThreadError };

/** Batches the thread reads ahead of the caller: enough to keep it busy, few enough to keep memory flat. */
export const ROWS_AHEAD = 4;

/**
 * Below this size a file is read here: a thread takes ≈ 50 ms to start, and under a few megabytes the whole read
 * takes less. Above it the parse (≈ 1.4 s for 1,000,000 rows of three columns) runs beside the caller's work.
 */
export const ROWS_THREAD_MIN_BYTES = 8 * 1024 * 1024;

/**
 * The thread's module: beside this module's chunk once bundled (scripts/bundle.mjs), beside it in dist/. Null where
 * it is not there (the TypeScript sources, as the tests run commands in-process).
 */
export function bundledRowsWorker(): string | null {
  const file = fileURLToPath(new URL('./rows-worker.js', import.meta.url));
  return existsSync(file) ? file : null;
}

/**
 * The rows of `layout` as readRows gives them, read in a thread when it is a CSV file big enough to gain from it and
 * the thread's module is there, else here.
 */
export function readRowsAside(
  layout: TableLayout,
  workerFile: string | null = bundledRowsWorker(),
): AsyncGenerator<string[][]> {
  let size = 0;
  try {
    size = statSync(layout.path).size;
  } catch {
    // readRows says what is wrong with it.
  }
  // (A CSV only: a workbook's reading is mostly unzipping and its XML, and its reader is not tried in a thread.)
  const inThread = workerFile !== null && layout.workbook === undefined && size >= ROWS_THREAD_MIN_BYTES;
  return inThread ? readRowsInThread(layout, workerFile) : readRows(layout);
}

/** The rows of `layout` read by a worker thread running `workerFile` (rows-worker.ts); its errors are rethrown here. */
export async function* readRowsInThread(layout: TableLayout, workerFile: string): AsyncGenerator<string[][]> {
  const worker = new Worker(workerFile, { workerData: { layout } satisfies RowsThreadData });
  // The thread keeps the process alive only while the caller waits for it: a caller that fails between two batches
  // and never returns this generator (verify: a journal's settings refused after the input's header was read) must
  // not leave a process that never ends, its thread waiting for the word to read on.
  worker.unref();
  const arrived: FromRowsThread[] = [];
  let waiting: ((m: FromRowsThread) => void) | null = null;
  const deliver = (m: FromRowsThread) => {
    const waiter = waiting;
    waiting = null;
    if (waiter === null) arrived.push(m);
    else {
      worker.unref();
      waiter(m);
    }
  };
  worker.on('message', deliver);
  worker.on('error', (err: Error) => deliver({ type: 'error', error: { code: null, message: err.message } }));
  // (After 'end' or an error, nobody is waiting for this one.)
  worker.on('exit', (code) =>
    deliver({
      type: 'error',
      error: { code: null, message: `the thread reading ${layout.path} stopped (exit ${code})` },
    }),
  );
  const next = () => {
    if (arrived.length > 0) return Promise.resolve(arrived.shift()!);
    worker.ref();
    return new Promise<FromRowsThread>((r) => (waiting = r));
  };
  try {
    for (;;) {
      const m = await next();
      if (m.type === 'end') return;
      if (m.type === 'error') throw errorFrom(m.error);
      worker.postMessage({ type: 'more' } satisfies ToRowsThread);
      yield m.rows;
    }
  } finally {
    await worker.terminate();
  }
}

function errorFrom(e: RowsThreadError): Error {
  return e.code === null
    ? new Error(e.message)
    : new DncError(e.code, e.message, { hint: e.hint, details: e.details ?? {} });
}

/** What the thread sends of an error it met. */
export function rowsThreadError(err: unknown): RowsThreadError {
  if (err instanceof DncError) return { code: err.code, message: err.message, hint: err.hint, details: err.details };
  return { code: null, message: err instanceof Error ? err.message : String(err) };
}
