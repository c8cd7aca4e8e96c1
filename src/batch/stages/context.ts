// One batch run as its stages share it. src/batch/stages/run.ts runs them in order over one BatchRun: read (the
// journal opened, the input read into it), plan (what is answered without a lookup, what will be sent and what it
// costs), look up, write (the outputs and their evidence), and settle (whatever the run holds, released).
import type { ResultOptions, BatchJournal } from '../../journal/journal.js';
import type { ServiceClient } from '../../service/client.js';
import type { ResultsCache } from '../../stores/interfaces.js';
import type { TableLayout } from '../../tables/layout.js';
import type { EarlyRender, RenderOptions } from '../../results/render.js';
import type { BatchOptions, RunContext } from '../job.js';
import type { BatchPaths } from '../paths.js';
import type { Reading } from '../read-input.js';
import type { JournalBatch } from '../resume.js';
import type { ReusableCounter } from '../reusable.js';
import type { RecentAnswers } from '../recent-answers.js';
import type { RecentOutcome } from '../repay.js';
import type { ThreadEarlyRender } from '../early-render-thread.js';
import type { PhoneCaches } from '../../phone/phone-cache.js';
import { BackgroundWork } from '../background.js';

/** What is decided before the journal opens: the options resolved, every path, the input's layout. */
export interface BatchJob {
  readonly ctx: RunContext;
  /** The input as given (`-` for standard input). */
  readonly input: string;
  /**
   * Resolved once, before the journal opens (remembered from it on a rerun), and written into it; from the read stage
   * on, the options as the journal records them (optionsOfJournal), taken again after the plan has written what it
   * settled (--reuse-within or --no-reuse, answered on a terminal).
   */
  options: BatchOptions;
  readonly paths: BatchPaths;
  readonly layout: TableLayout;
  readonly resultOptions: ResultOptions;
  readonly serviceOrigin: string;
  readonly journalPath: string;
  readonly manifestPath: string;
}

/** The run's resources: each taken by a stage, all released by the settle stage whatever happened. */
export interface BatchRun extends BatchJob {
  readonly startedAt: Date;
  /** Work beside the render, settled before the journal closes. */
  readonly background: BackgroundWork;
  /**
   * The client, needed only at the first lookup: loading it (undici) overlaps the journal's creation and the first
   * reads. Awaited by the look-up stage, or closed by the settle stage.
   */
  readonly clientReady: Promise<ServiceClient>;
  journal: BatchJournal | null;
  client: ServiceClient | null;
  /** The client's sockets closing (and the cost cache written) while the output renders. */
  clientClosed: Promise<void> | null;
  /** The second Ctrl-C: lookups in flight are dropped, not awaited. */
  abandoned: boolean;
  /** The input still being read while lookups run (null once read, or when it was read before). */
  reading: Reading | null;
  /** Fresh verdicts in the results cache, counted before the first lookup (closed once said). */
  reusable: ReusableCounter | null;
  /** The answers of the last day in the results cache (closed once the plan decided on them). */
  recent: RecentAnswers | null;
  /** The outputs rendered while the lookups run: on this thread, or in one of its own (`renderThread`). */
  early: EarlyRender | null;
  renderThread: ThreadEarlyRender | null;
  /** The early render on its way to starting (on this thread): awaited before it is finished or aborted. */
  renderStarting: Promise<void> | null;
  /** The results cache opened ahead while the last answers come, when the render runs in a thread. */
  cacheOpening: Promise<ResultsCache> | null;
  /** Tells the early render that the lookups are over (it starts then at the latest). */
  lookupsOver: () => void;
}

/** A run whose journal is open: what the read stage gives the others. */
export interface OpenRun extends BatchRun {
  journal: BatchJournal;
  readonly batch: JournalBatch;
  readonly rendering: RenderOptions;
  /** The phone numbers' parse caches, shared by reading and rendering. */
  readonly phones: PhoneCaches;
}

/** What the plan leaves the look-up and write stages. */
export interface Plan {
  /** Credits per lookup by country (the cost cache's, then the journal's own). */
  readonly costs: ReadonlyMap<string, number>;
  readonly willSend: (country: string) => boolean;
  /** The balance, asked as soon as lookups are known to come (null when none will). */
  readonly balance: ReturnType<ServiceClient['usage']> | null;
  readonly recentOutcome: RecentOutcome | null;
}

export function startRun(job: BatchJob): BatchRun {
  const clientReady = job.ctx.createClient({
    connections: job.options.concurrency,
    onClockSkew: (skew) => job.ctx.emit({ type: 'clock_skew', skew }),
  });
  // Its failure is met where it is awaited (the look-up stage); a run that never needs the client does not care.
  clientReady.catch(() => {});
  return {
    ...job,
    startedAt: job.ctx.now(),
    background: new BackgroundWork((text) => job.ctx.debug(text)),
    clientReady,
    journal: null,
    client: null,
    clientClosed: null,
    abandoned: false,
    reading: null,
    reusable: null,
    recent: null,
    early: null,
    renderThread: null,
    renderStarting: null,
    cacheOpening: null,
    lookupsOver: () => {},
  };
}
