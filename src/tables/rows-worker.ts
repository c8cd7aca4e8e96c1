// The thread of readRowsInThread (rows-thread.ts): reads a table's rows and posts them, a few batches ahead of the
// thread that asked.
import { parentPort, workerData } from 'node:worker_threads';
import { readRows } from './input.js';
import { ROWS_AHEAD, rowsThreadError, type FromRowsThread, type RowsThreadData } from './rows-thread.js';

const port = parentPort!;
const { layout } = workerData as RowsThreadData;
const say = (m: FromRowsThread) => port.postMessage(m);

let credit = ROWS_AHEAD;
let wake: (() => void) | null = null;
port.on('message', () => {
  // ('more': the caller took a batch.)
  credit++;
  wake?.();
  wake = null;
});

try {
  for await (const rows of readRows(layout)) {
    while (credit === 0) await new Promise<void>((resolve) => (wake = resolve));
    credit--;
    say({ type: 'rows', rows });
  }
  say({ type: 'end' });
} catch (err) {
  say({ type: 'error', error: rowsThreadError(err) });
}
port.close();
