// The settle stage: whatever a run holds released, in order, however it ended (finished, stopped, failed, abandoned).
import type { BatchRun } from './context.js';

export async function settleStage(run: BatchRun): Promise<void> {
  const { client } = run;
  if (run.abandoned) {
    // Second Ctrl-C: lookups still in flight are dropped, not awaited (their numbers stay in flight in the journal).
    // A failure to drop them cannot matter: the user asked to stop at once, and every answer had is committed.
    await (client?.destroy ?? client?.close)?.call(client).catch(() => {});
  } else await (run.clientClosed ?? client?.close());
  // A client made but never used (the run failed first, or nothing was sent); one that could not be made is nothing
  // to close.
  if (!client) await (await run.clientReady.catch(() => null))?.close();
  // A run that failed before or during its lookups: reading stops before the journal closes under it.
  if (run.reading?.reading) {
    run.reading.abort();
    // Rejects as it was aborted: the run's own error (or its result) is what the user is told.
    await run.reading.done.catch(() => {});
  }
  // A run that failed on its way: the render begun early (or beginning) leaves no temporary file behind.
  run.lookupsOver();
  await run.renderStarting;
  await run.early?.abort();
  // A run that stopped before filling it: not awaited (the cache's close waits on nothing this run wrote), and its
  // failure cannot matter: nothing was written through it.
  void run.cacheOpening?.then((c) => c.close()).catch(() => {});
  await run.reusable?.close();
  await run.recent?.close();
  await run.background.settled();
  run.journal?.close();
}
