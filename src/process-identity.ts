// Which process is which: this one's pid and start time, whether another still runs. For the locks of a journal and
// the names of temporary files, whose writer must be told from a process that reuses its pid later.
import { readFileSync } from 'node:fs';

/**
 * When a process started (ms since the epoch), from /proc on Linux; null where that cannot be read. With the pid it
 * names one process for good: a pid reused by a later process has a later start.
 */
export function processStartTime(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: fields are counted after its closing ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[19]); // field 22, starttime, in clock ticks since boot
    bootTimeMs ??= Number(/^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'))?.[1]) * 1000;
    // USER_HZ is 100 on every Linux architecture node runs on.
    const start = bootTimeMs + ticks * 10;
    return Number.isFinite(start) ? start : null;
  } catch {
    return null;
  }
}
let bootTimeMs: number | undefined;

type LockProcesses = { pid: number; isAlive(pid: number): boolean; startTime(pid: number): number | null };

/** What the journal locks need to know about processes: this one's pid, and whether another still runs. */
export function processLockDeps(): LockProcesses {
  return { pid: process.pid, isAlive: isProcessAlive, startTime: processStartTime };
}

/** Whether another process is alive (e.g. the holder of a batch journal's lock); EPERM means alive but not ours. */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Start times are read in clock ticks (10 ms), and may be a little off from one reading to the next. */
const START_SLACK_MS = 1_000;

/** This process, as a temporary file names its writer: its pid and start time (0 where that cannot be read). */
export function thisProcess(): { pid: number; start: number } {
  return { pid: process.pid, start: processStartTime(process.pid) ?? 0 };
}

/**
 * Whether the process that named itself `pid` and `start` (thisProcess) still runs: alive, and not a later process
 * that took over its pid (another start time). A start of 0 was not known: the pid alone decides.
 */
export function isRunning(pid: number, start: number): boolean {
  if (!isProcessAlive(pid)) return false;
  const now = start === 0 ? null : processStartTime(pid);
  return now === null || Math.abs(now - start) <= START_SLACK_MS;
}
