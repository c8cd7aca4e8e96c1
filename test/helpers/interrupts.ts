// SIGINT/SIGTERM stand-ins for in-process command tests: the test fires them by hand.
import type { Interrupts } from '../../src/io.js';

export interface TestInterrupts extends Interrupts {
  /** Delivers one interrupt to every handler, as a signal would (handlers get the count so far). */
  fire(): void;
}

export function testInterrupts(): TestInterrupts {
  const handlers = new Set<(count: number) => void>();
  let count = 0;
  return {
    on(handler) {
      handlers.add(handler);
      return () => handlers.delete(handler);
    },
    fire() {
      count++;
      for (const h of [...handlers]) h(count);
    },
  };
}
