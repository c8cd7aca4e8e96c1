// The thread of renderEarlyInThread (early-render-thread.ts): renderEarly over a connection of its own to the journal,
// looking for newly answered rows every pollMs, finished or dropped when the batch's thread says so.
import { parentPort, workerData } from 'node:worker_threads';
import type { FromRenderThread, RenderThreadData, ToRenderThread } from './early-render-thread.js';
import { BatchJournal } from '../journal/journal.js';
import { type EarlyRender, renderEarly } from '../results/render.js';
import { scrubRowsOf } from '../compliance/batch-compliance.js';

const port = parentPort!;
const { journalPath, pollMs, tzdataVersion } = workerData as RenderThreadData;
const say = (m: FromRenderThread) => port.postMessage(m);

// Not opened read-only (as listen's render worker says, such a connection failed with "disk I/O error"); it only reads.
const journal = await BatchJournal.open(journalPath, { create: false });
let early: EarlyRender | null = null;
let poll: ReturnType<typeof setInterval> | undefined;
let answerUnchanged: ((unchanged: boolean) => void) | null = null;

let ended = false;
const end = () => {
  ended = true;
  clearInterval(poll);
  clearInterval(folding);
  journal.close();
  // Said once this thread's connection is closed: the batch's close, the last, folds the log into the journal.
  say({ type: 'closed' });
  port.close();
};

// The log is folded into the journal every second on this thread (the batch's only writes it): kept short, it is
// written over from its start instead of growing with every answer, and closing the journal at the end of the run
// no longer deletes a log of the whole run (≈ 20 ms for 1,600 lookups' 12 MB, on a disk that discards freed blocks).
const folding = setInterval(() => {
  try {
    journal.checkpoint({ always: true });
  } catch {
    // Left to the batch's close, as without this thread.
  }
}, 1000);

port.on('message', (m: ToRenderThread) => {
  // A message the batch sent before it knew the end was asked (a 'go' after an early 'abort') starts nothing more.
  if (ended) return;
  if (m.type === 'go') {
    early = renderEarly(
      journal,
      Promise.resolve(),
      { scrubRows: scrubRowsOf, tzdataVersion },
      {
        checkpoint: false,
        unchanged: () =>
          new Promise<boolean>((resolve) => {
            answerUnchanged = resolve;
            say({ type: 'unchanged?' });
          }),
      },
    );
    poll = setInterval(() => early!.answered(), pollMs);
  } else if (m.type === 'unchanged') {
    answerUnchanged?.(m.unchanged);
    answerUnchanged = null;
  } else if (m.type === 'finish') {
    clearInterval(poll);
    void (async () => {
      let answer: FromRenderThread;
      try {
        const summary = early ? await early.finish() : null;
        answer = summary
          ? { type: 'done', summary }
          : { type: 'dropped', because: early?.droppedBecause ?? 'the render had not begun' };
      } catch (err) {
        answer = { type: 'dropped', because: `the render failed: ${(err as Error).message}` };
      }
      say(answer);
      if (answer.type === 'done') {
        // The log emptied here, while the batch writes its manifest: closing the journal on the batch's thread
        // then has nothing left to fold in, nor a long log to delete (≈ 20 ms where freed blocks are discarded).
        try {
          journal.checkpoint({ truncate: true });
        } catch {
          // Left to the batch's close.
        }
      }
      end();
    })();
  } else {
    clearInterval(poll);
    void (async () => {
      await early?.abort();
      say({ type: 'aborted' });
      end();
    })();
  }
});
say({ type: 'ready' });
