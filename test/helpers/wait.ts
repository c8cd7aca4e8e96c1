// Waiting for what a test needs, never for a fixed time: a fixed sleep is too short on a loaded machine and too long
// on a quiet one (test/test-hygiene.test.ts counts them). This file holds the suite's one poll: a condition checked
// every few milliseconds until it holds or its deadline passes.
import type { EventEmitter } from 'node:events';

export interface WaitOptions {
  /** The deadline, from the call: the test fails after it (default 15 s, generous for a loaded machine). */
  ms?: number;
  /** What is awaited, for the failure message. */
  what?: string;
  /** How often the condition is checked (default 5 ms). */
  everyMs?: number;
}

/** Resolves once `check` holds; throws, naming `what`, when it has not by the deadline. */
export async function waitFor(check: () => boolean | Promise<boolean>, options: WaitOptions = {}): Promise<void> {
  const { ms = 15_000, what = 'a condition', everyMs = 5 } = options;
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * The arguments of the next `event` that `accept` takes (any, by default), listened for from this call on: start
 * listening before doing what makes the event happen. Throws after the deadline.
 */
export function nextEvent<A extends unknown[]>(
  emitter: Pick<EventEmitter, 'on' | 'off'>,
  event: string,
  accept: (...args: A) => boolean = () => true,
  options: WaitOptions = {},
): Promise<A> {
  const { ms = 15_000, what = `the event ${event}` } = options;
  return new Promise<A>((resolve, reject) => {
    const listener = (...args: unknown[]) => {
      if (!accept(...(args as A))) return;
      done();
      resolve(args as A);
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`timed out after ${ms} ms waiting for ${what}`));
    }, ms);
    const done = () => {
      clearTimeout(timer);
      emitter.off(event, listener);
    };
    emitter.on(event, listener);
  });
}

/** Resolves after `n` more `event`s (say, status ticks: a session's every chance to act on what it has). */
export async function events(
  emitter: Pick<EventEmitter, 'on' | 'off'>,
  event: string,
  n: number,
  options: WaitOptions = {},
): Promise<void> {
  let seen = 0;
  await nextEvent(emitter, event, () => ++seen >= n, { what: `${n} ${event} events`, ...options });
}
