// The sandbox's scheduler: service durations scaled, long delays kept long, everything cancelled on close.
import { describe, expect, it } from 'vitest';
import { MAX_TIMER_MS, Scheduler, type SandboxTimers } from '../../src/sandbox/clock.js';

/** Timers that record what was asked of them and fire only when the test says. */
function manualTimers() {
  const armed = new Map<number, { fn: () => void; ms: number }>();
  let next = 0;
  const timers: SandboxTimers = {
    setTimeout(fn, ms) {
      armed.set(++next, { fn, ms });
      return next;
    },
    clearTimeout(handle) {
      armed.delete(handle as number);
    },
  };
  const fireAll = () => {
    const due = [...armed.entries()];
    armed.clear();
    for (const [, t] of due) t.fn();
    return due.map(([, t]) => t.ms);
  };
  return { timers, armed, fireAll };
}

describe('sandbox scheduler', () => {
  it('waits a delay beyond the 2^31 ms timer limit in steps instead of firing at once', () => {
    const { timers, armed, fireAll } = manualTimers();
    const scheduler = new Scheduler(timers, 100);
    let fired = false;
    // 24 h at time scale 100 is 8.64e9 ms: four full steps and a remainder.
    scheduler.after(24 * 3_600_000, () => {
      fired = true;
    });
    const steps: number[] = [];
    while (armed.size > 0) steps.push(...fireAll());
    expect(fired).toBe(true);
    expect(steps.every((ms) => ms <= MAX_TIMER_MS)).toBe(true);
    expect(steps.reduce((a, b) => a + b, 0)).toBe(24 * 3_600_000 * 100);
    expect(steps.length).toBe(5);
  });

  it('cancels a long delay between its steps, and everything on close', () => {
    const { timers, armed, fireAll } = manualTimers();
    const scheduler = new Scheduler(timers, 100);
    let fired = 0;
    const cancel = scheduler.after(24 * 3_600_000, () => fired++);
    fireAll(); // first step done, second armed
    expect(armed.size).toBe(1);
    cancel();
    expect(armed.size).toBe(0);
    scheduler.after(1_000, () => fired++);
    scheduler.close();
    expect(armed.size).toBe(0);
    expect(fired).toBe(0);
  });
});
