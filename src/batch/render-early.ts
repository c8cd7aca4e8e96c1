// Whether the outputs can be rendered while the lookups run, and when a thread of their own is worth it.
import { statSync } from 'node:fs';
import type { SchedulerProgress } from './scheduler.js';
import type { TableLayout } from '../tables/layout.js';
import type { BatchPaths } from './paths.js';
import type { BatchOptions } from './job.js';
import { outputFormatOf } from '../tables/table-format.js';

/**
 * Decides, as the lookups go, whether a render thread is worth starting: asked at each progress, it says yes
 * when, over the last quarter of a second, this thread was mostly waiting (its event loop busy under half the time: the
 * service's latency, not this thread, sets the pace) and the lookups left will take a second more at the pace so
 * far. A thread takes ≈ 0.1–0.2 s to be ready: a shorter run would pay for its start for nothing. A busy thread
 * (answers at once) is left alone: there the render thread's CPU time is taken from the lookups (on two cores,
 * 6,000 → 4,400 lookups/s at zero latency), where the render after the lookups costs the same time only once.
 */
export function threadWorth(): (p: SchedulerProgress) => boolean {
  const began = performance.now();
  let windowStart = began;
  let window = performance.eventLoopUtilization();
  return (p) => {
    const now = performance.now();
    if (now - windowStart < THREAD_WINDOW_MS) return false;
    const busy = performance.eventLoopUtilization(window).utilization;
    window = performance.eventLoopUtilization();
    windowStart = now;
    const leftMs = p.reading ? Infinity : ((p.total - p.answered) / Math.max(1, p.answered)) * (now - began);
    return busy < 0.5 && leftMs >= THREAD_WORTH_MS;
  };
}

/** How long the lookups left must take for a render thread to be started, and how often that is asked. */
const THREAD_WORTH_MS = 1000;

const THREAD_WINDOW_MS = 250;

/**
 * Whether the outputs can be rendered before the lookups end (renderEarly drops what cannot: a stream or a
 * workbook is written after them): asked before a thread is started for it.
 */
export async function renderableEarly(paths: BatchPaths, layout: TableLayout, options: BatchOptions): Promise<boolean> {
  if (paths.output.kind !== 'file' || layout.workbook) return false;
  if (outputFormatOf(paths.outputPath, options.format) !== 'csv') return false;
  const lists = [paths.callableOut, paths.suppressedOut, paths.reviewOut].filter((p) => p !== null);
  if (!lists.every((p) => outputFormatOf(p, undefined) === 'csv')) return false;
  // A FIFO, a device or standard output (a list there, or the dial list) is written after the lookups.
  return [paths.outputPath, ...lists, paths.dialOut].every(
    (p) => p === null || (p !== '-' && (statSync(p, { throwIfNoEntry: false })?.isFile() ?? true)),
  );
}
