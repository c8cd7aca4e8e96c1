// The early render (renderEarly) run in a worker thread, beside the lookups rather than between them: on the batch's
// own thread, rendering a slice of rows between two answers held the next lookup back as long, so it began only
// when nothing more was to be sent, and most of a render was still to do when the last answer came. In a thread it
// follows the answers from the first lookup on, and the run ends with only the last rows, the fsync and the rename.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { BatchJournal } from '../journal/journal.js';
import type { EarlyRender, RenderSummary } from '../results/render.js';

/** What the batch's thread tells the render's. */
export type ToRenderThread =
  { type: 'go' } | { type: 'unchanged'; unchanged: boolean } | { type: 'finish' } | { type: 'abort' };

/** What the render's thread tells the batch's. */
export type FromRenderThread =
  | { type: 'ready' }
  | { type: 'unchanged?' }
  | { type: 'done'; summary: RenderSummary }
  | { type: 'dropped'; because: string }
  | { type: 'aborted' }
  /** The thread's connection to the journal is closed: it ends. */
  | { type: 'closed' };

/** What the render's thread is given. */
export interface RenderThreadData {
  journalPath: string;
  /** How often it looks for newly answered rows (it is not told of each answer: that would cost the batch's thread). */
  pollMs: number;
  /** The time-zone database's version (the batch's context's): the thread never reads process.* for it. */
  tzdataVersion: string;
}

/**
 * The thread's module: beside the calling chunk once bundled (scripts/bundle.mjs), beside this module in dist/.
 * Null where it is not there (the TypeScript sources, as the tests run commands in-process): the render then runs
 * on the batch's thread, unless the batch is given one (BatchRunDeps.renderThreadFile).
 */
export function bundledRenderWorker(): string | null {
  const file = fileURLToPath(new URL('./early-render-worker.js', import.meta.url));
  return existsSync(file) ? file : null;
}

/** How long abort() waits for the thread to remove its temporary files before it stops it. */
const ABORT_WAIT_MS = 10_000;

/** The early render of a thread. */
export interface ThreadEarlyRender extends EarlyRender {
  /**
   * Resolves once finish() has let the thread write its last rows (or it is gone): from then on this thread is
   * free while that one writes them. (Before, the thread waits for this one's answer that no other process wrote.)
   */
  whenConfirmed(): Promise<void>;
}

/**
 * Starts the render of `journal`'s batch in a worker thread, which reads the journal through a connection of its
 * own. As renderEarly's: finish() gives the summary, or null when the render could not be done early (then the
 * batch renders after the lookups as before): another process wrote to the journal, the render failed (the render
 * after the lookups meets the same error and reports it typed), or the thread could not start.
 */
export function renderEarlyInThread(
  journal: Pick<BatchJournal, 'path' | 'dataVersion' | 'checkpoint'>,
  workerFile: string,
  tzdataVersion: string,
  pollMs = 20,
): ThreadEarlyRender {
  const worker = new Worker(workerFile, {
    workerData: { journalPath: journal.path, pollMs, tzdataVersion } satisfies RenderThreadData,
  });
  const post = (m: ToRenderThread) => worker.postMessage(m);
  // The batch's connection's data_version when the thread began: another process's commit moves it (the thread's
  // reads and the batch's own commits do not).
  let version: number | null = null;
  /** The batch's data_version; null when it cannot be read (then the render is done after the lookups). */
  const dataVersion = (): number | null => {
    try {
      return journal.dataVersion();
    } catch {
      return null;
    }
  };
  let ended: Promise<FromRenderThread | null> | null = null;
  let waiting: ((m: FromRenderThread | null) => void) | null = null;
  let gone: string | null = null;
  worker.on('message', (m: FromRenderThread) => {
    if (m.type === 'ready') {
      // (Not once finish() or abort() has asked for the end: the thread is told nothing more.)
      if (ended !== null) return;
      version = dataVersion();
      if (version !== null) post({ type: 'go' });
    } else if (m.type === 'unchanged?') {
      post({ type: 'unchanged', unchanged: version !== null && dataVersion() === version });
      confirmed();
    } else if (m.type === 'closed') {
      closed();
      // Nothing is left to it: the thread never keeps the process alive from here (it ends by itself at once).
      worker.unref();
    } else {
      waiting?.(m);
      waiting = null;
    }
  });
  let confirmed: () => void = () => {};
  const confirmation = new Promise<void>((resolve) => (confirmed = resolve));
  const onGone = (why: string) => {
    gone ??= why;
    confirmed();
    waiting?.(null);
    waiting = null;
  };
  worker.on('error', (err) => onGone(`the render thread failed (${err.message})`));
  let closed: () => void = () => {};
  const connectionClosed = new Promise<void>((resolve) => {
    closed = resolve;
    worker.once('exit', () => resolve());
  });
  worker.on('exit', (code) => onGone(`the render thread ended (exit ${code})`));
  /** Sends `m` and resolves with the thread's answer (null once it is gone). */
  const ask = (m: ToRenderThread): Promise<FromRenderThread | null> => {
    if (gone !== null) return Promise.resolve(null);
    return new Promise((resolve) => {
      waiting = resolve;
      post(m);
    });
  };
  const early: ThreadEarlyRender = {
    droppedBecause: null,
    answered: () => {},
    whenConfirmed: () => confirmation,
    async finish() {
      if (version === null) {
        confirmed();
        (early as { droppedBecause: string | null }).droppedBecause = gone ?? 'the render thread had not started';
        await early.abort();
        return null;
      }
      // A long log is folded in by this connection (the thread's would wait for it), before the thread's snapshot.
      journal.checkpoint();
      ended ??= ask({ type: 'finish' });
      const answer = await ended;
      confirmed();
      if (answer?.type === 'done') return answer.summary;
      (early as { droppedBecause: string | null }).droppedBecause =
        answer?.type === 'dropped' ? answer.because : (gone ?? 'the render thread gave no summary');
      return null;
    },
    async abort() {
      if (gone !== null) return connectionClosed;
      if (ended) {
        // Finished: the thread ends by itself once it has said so (and emptied the log). Its connection is closed
        // before the batch closes its own, the last, which folds in what is left of the log.
        await ended;
        await connectionClosed;
        return;
      }
      ended = ask({ type: 'abort' });
      const timer = setTimeout(() => void worker.terminate(), ABORT_WAIT_MS);
      try {
        await ended;
        await connectionClosed;
      } finally {
        clearTimeout(timer);
      }
    },
  };
  return early;
}
