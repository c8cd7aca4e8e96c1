// Renders OUTPUT.csv in a worker thread, so a rewrite of a large call list never holds up acknowledging pushes.
import { parentPort, workerData } from 'node:worker_threads';
import { BatchJournal } from '../journal/journal.js';
import { renderBatchOutput } from '../results/render.js';
import { scrubRowsOf } from '../compliance/batch-compliance.js';

export interface RenderRequest {
  id: number;
}

export type RenderReply =
  | { id: number; ok: true; byResult: Record<string, number> }
  | { id: number; ok: false; message: string; code?: string };

const { journalPath, tzdataVersion } = workerData as { journalPath: string; tzdataVersion: string };
// A connection of its own (only read from): WAL lets it read while the listener's connection commits
// pushes. Not opened read-only: such a connection failed with "disk I/O error" in the e2e tests.
const journal = BatchJournal.open(journalPath, { create: false });

parentPort!.on('message', (request: RenderRequest) => {
  void (async () => {
    let reply: RenderReply;
    try {
      reply = {
        id: request.id,
        ok: true,
        byResult: (await renderBatchOutput(await journal, { scrubRows: scrubRowsOf, tzdataVersion })).byResult,
      };
    } catch (err) {
      reply = {
        id: request.id,
        ok: false,
        message: err instanceof Error ? err.message : String(err),
        code: (err as { code?: string }).code,
      };
    }
    parentPort!.postMessage(reply);
  })();
});
