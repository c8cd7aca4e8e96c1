// Renders a batch's output files from its input and its journal: every row, in order, plus the dnc_* columns.
import type { BatchJournal } from '../journal/journal.js';
import { type EarlyGate, EarlyRenderDropped, type RenderOptions, renderSnapshot } from './snapshot.js';
import type { RenderSummary } from './cells.js';

export type { RenderSummary } from './cells.js';
export type { RenderOptions } from './snapshot.js';

export async function renderBatchOutput(journal: BatchJournal, options: RenderOptions): Promise<RenderSummary> {
  journal.checkpoint();
  // Every row from one state of the journal: pushes committed meanwhile (dnc listen) wait for the next render,
  // so two rows of one number never disagree.
  return journal.snapshot(() => renderSnapshot(journal, options));
}

/** A render begun while lookups run (see renderEarly). */
export interface EarlyRender {
  /** More answers are committed: rows that waited for them are written. */
  answered(): void;
  /**
   * The lookups are over and nothing more writes through this process's connection: finishes the render in one
   * snapshot of the journal. Null when it cannot (another process committed to the journal meanwhile, or the
   * early part failed or could not be done early): then render afresh with renderBatchOutput.
   */
  finish(): Promise<RenderSummary | null>;
  /** The run ends without this render: its temporary files are removed. */
  abort(): Promise<void>;
  /** Why finish() gave up, once it has. */
  readonly droppedBecause: string | null;
}

/**
 * How a render begun early is run from another thread (see early-render-thread.ts); by default, from the batch's own.
 */
export interface EarlyHooks {
  /** Whether finish() checkpoints a long log first (the batch's thread does it before it asks another to finish). */
  checkpoint?: boolean;
  /**
   * Asked by finish() once it holds its snapshot: whether no other process has committed to the journal since the
   * render began. By default this connection's data_version tells; a connection of another thread sees the batch's
   * own commits there too, so it asks the batch's connection.
   */
  unchanged?: () => Promise<boolean>;
}

/**
 * Renders a batch's outputs while its lookups run, starting when `ready` resolves: each row is written once its
 * number's verdict is final (done), in input order, so at the end only the rows answered last are left to write.
 * Sound because a done verdict never changes in the batch's own process; a change by another (dnc listen) moves
 * the journal's data_version, and then finish() gives up. Only regular files are written this way, and only CSV
 * from a CSV list (a stream cannot take back rows already written when the run stops; a workbook's summary
 * carries the time it is written).
 */
export function renderEarly(
  journal: BatchJournal,
  ready: Promise<unknown>,
  options: RenderOptions,
  hooks: EarlyHooks = {},
): EarlyRender {
  const version = hooks.unchanged ? null : journal.dataVersion();
  let state: 'early' | 'final' | 'dropped' = 'early';
  let roused = false;
  let wake: (() => void) | null = null;
  const gate: EarlyGate = {
    get final() {
      return state === 'final';
    },
    async next() {
      if (!roused && state === 'early') await new Promise<void>((resolve) => (wake = resolve));
      roused = false;
      if (state === 'dropped') throw new EarlyRenderDropped('the early render was dropped');
    },
  };
  const rouse = () => {
    roused = true;
    const w = wake;
    wake = null;
    w?.();
  };
  let ending: () => void = () => {};
  const ended = new Promise<void>((resolve) => (ending = resolve));
  let failedEarly: string | null = null;
  const rendering = Promise.race([ready, ended]).then(() => {
    if (state === 'dropped') throw new EarlyRenderDropped('the early render was dropped');
    return renderSnapshot(journal, options, gate).catch((err: unknown) => {
      // (An EarlyRenderDropped is thrown only while early, though it may reach here once finish() has begun.)
      if (state !== 'final' || err instanceof EarlyRenderDropped) failedEarly = (err as Error).message;
      throw err;
    });
  });
  rendering.catch(() => {});
  const drop = async () => {
    state = 'dropped';
    ending();
    rouse();
    await rendering.catch(() => {});
  };
  const early = {
    droppedBecause: null as string | null,
    answered: rouse,
    async finish(): Promise<RenderSummary | null> {
      if (failedEarly !== null) {
        early.droppedBecause = failedEarly;
        await drop();
        return null;
      }
      if (hooks.checkpoint !== false) journal.checkpoint();
      const endSnapshot = journal.beginSnapshot();
      try {
        if (!(hooks.unchanged ? await hooks.unchanged() : journal.dataVersion() === version)) {
          early.droppedBecause = 'another process wrote to the journal meanwhile';
          await drop();
          return null;
        }
        state = 'final';
        ending();
        rouse();
        return await rendering;
      } catch (err) {
        if (failedEarly === null) throw err;
        early.droppedBecause = failedEarly;
        return null;
      } finally {
        endSnapshot();
      }
    },
    abort: drop,
  };
  return early;
}
