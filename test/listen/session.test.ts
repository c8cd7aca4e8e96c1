// The listen session over real HTTP with an in-memory journal: render throttling, the final render, --exit-when-done, lost lookups.
import { afterEach, describe, expect, it } from 'vitest';
import {
  createListenSession,
  type ListenJournal,
  type ListenSession,
  type PendingLookup,
  type PendingSummary,
  type RenderedEvent,
} from '../../src/listen/session.js';
import type { IncomingPush, StoreOutcome } from '../../src/listen/receiver-types.js';
import { events, nextEvent } from '../helpers/wait.js';

class MemoryJournal implements ListenJournal {
  readonly pending = new Map<string, PendingLookup>();
  readonly stored = new Set<string>();
  renders: number[] = [];
  renderMs = 0;
  /** Every render fails (as when the input changed since the batch began). */
  renderFails = false;
  batchRunning = false;
  closed = false;
  constructor(lookups: PendingLookup[]) {
    for (const l of lookups) this.pending.set(l.correlationId, l);
  }
  store(pushes: readonly IncomingPush[]): StoreOutcome[] {
    return pushes.map((p) => {
      const duplicate = this.stored.has(p.correlationId);
      this.stored.add(p.correlationId);
      const orphan = !duplicate && !this.pending.has(p.correlationId);
      this.pending.delete(p.correlationId);
      return { duplicate, orphan };
    });
  }
  pendingSummary(overdueBefore: Date): PendingSummary {
    const list = [...this.pending.values()].sort((a, b) => a.receivedAt.getTime() - b.receivedAt.getTime());
    return {
      pending: list.length,
      unsent: 0,
      oldest: list[0] ?? null,
      overdue: list.filter((l) => l.receivedAt < overdueBefore),
      batchRunning: this.batchRunning,
    };
  }
  async render(): Promise<Record<string, number>> {
    this.renders.push(Date.now());
    // Deliberate: a render that takes this long (a large file on a busy machine) is what these tests are about.
    await new Promise((r) => setTimeout(r, this.renderMs));
    if (this.renderFails) throw new Error('the input has changed since this batch began');
    return { pending: this.pending.size };
  }
  close(): void {
    this.closed = true;
  }
}

const lookup = (i: number, receivedAt = new Date()): PendingLookup => ({
  correlationId: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
  phoneNumber: `+6141234${String(5000 + i)}`,
  country: 'AU',
  receivedAt,
});

async function push(url: string, l: PendingLookup): Promise<number> {
  const body = {
    status: 'failed',
    error_code: 'lookup_expired',
    error: 'expired',
    charged: false,
    correlation_id: l.correlationId,
    phone_number: l.phoneNumber,
    country: 'AU',
  };
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-service-correlation-id': l.correlationId },
    body: JSON.stringify(body),
  });
  await res.text();
  return res.status;
}

let session: ListenSession | undefined;
afterEach(async () => {
  await session?.stop();
  session = undefined;
});

describe('listen session', () => {
  it('renders once more when the batch running beside it ends (its final render may have raced one of ours)', async () => {
    const journal = new MemoryJournal([lookup(1)]);
    journal.batchRunning = true;
    session = createListenSession({ journal, receiver: {}, statusIntervalMs: 20, renderIntervalMs: 20 });
    const first = nextEvent(session, 'rendered');
    await session.start();
    await first;
    // Status ticks, each a chance to render again (20 ms apart, as renders may be): none does, no push came.
    await events(session, 'status', 5);
    const whileRunning = journal.renders.length;
    expect(whileRunning).toBe(1); // the render at start, nothing since
    const again = nextEvent(session, 'rendered');
    journal.batchRunning = false;
    await again;
    await events(session, 'status', 5);
    expect(journal.renders.length).toBe(whileRunning + 1);
  });

  it('renders at most about once a second while pushes arrive, and once more on stop', async () => {
    const lookups = Array.from({ length: 60 }, (_, i) => lookup(i));
    const journal = new MemoryJournal(lookups);
    journal.renderMs = 50;
    session = createListenSession({ journal, receiver: { path: '/p' }, renderIntervalMs: 1000 });
    const { url } = await session.start();
    const started = Date.now();
    // A push every 40 ms for 2.4 s.
    for (const l of lookups) {
      expect(await push(url, l)).toBe(200);
      // Deliberate: pushes spread over seconds of real time are what the throttle is judged on.
      await new Promise((r) => setTimeout(r, 40));
    }
    const elapsed = Date.now() - started;
    const duringPushes = journal.renders.length;
    expect(duringPushes).toBeGreaterThanOrEqual(2);
    expect(duringPushes).toBeLessThanOrEqual(Math.ceil(elapsed / 1000) + 1);
    for (let i = 1; i < journal.renders.length; i++)
      expect(journal.renders[i]! - journal.renders[i - 1]!).toBeGreaterThanOrEqual(990);
    const final = await session.stop();
    expect(journal.renders.length).toBeGreaterThanOrEqual(duringPushes);
    expect(journal.closed).toBe(true);
    expect(final).toMatchObject({ received: 60, stored: 60, pending: 0, duplicates: 0 });
    session = undefined;
  });

  it('with exitWhenDone, resolves done once nothing is pending and the output is written', async () => {
    const lookups = [lookup(1), lookup(2)];
    const journal = new MemoryJournal(lookups);
    session = createListenSession({ journal, receiver: {}, exitWhenDone: true, renderIntervalMs: 100 });
    const { url } = await session.start();
    let done = false;
    void session.done.then(() => (done = true));
    // The render that holds the first push, and the status judged right after it: done had its chance, and is not.
    let renderedPush = false;
    session.on('rendered', (e: RenderedEvent) => (renderedPush ||= e.byResult.pending === 1));
    const judged = nextEvent(session, 'status', () => renderedPush);
    expect(await push(url, lookups[0]!)).toBe(200);
    await judged;
    expect(done).toBe(false);
    expect(await push(url, lookups[1]!)).toBe(200);
    const status = await session.done;
    expect(status.pending).toBe(0);
    expect(journal.renders.length).toBeGreaterThanOrEqual(1);
  });

  it('with exitWhenDone, is done when nothing is pending even while every render fails and takes most of each second', async () => {
    // Renders and status ticks both come once a second: a tick that keeps landing on a render in progress must not
    // keep the session from ever being done (it was, on a loaded machine). Done is judged after each render too.
    const lookups = [lookup(1)];
    const journal = new MemoryJournal(lookups);
    journal.renderFails = true;
    journal.renderMs = 150; // longer than the render interval: a render is in progress at almost every tick
    session = createListenSession({
      journal,
      receiver: {},
      exitWhenDone: true,
      renderIntervalMs: 100,
      statusIntervalMs: 100,
    });
    const failures: unknown[] = [];
    session.on('render-failed', (e) => failures.push(e));
    const { url } = await session.start();
    expect(await push(url, lookups[0]!)).toBe(200);
    const status = await Promise.race([session.done, new Promise<'never'>((r) => setTimeout(() => r('never'), 5_000))]);
    expect(status).not.toBe('never');
    expect(failures.length).toBeGreaterThanOrEqual(1);
    expect(session.renderError?.message).toMatch(/has changed/);
  });

  it('reports each lookup past receipt + 24 h once, with the 24 h deadline of the oldest', async () => {
    const now = new Date('2026-11-22T12:00:00Z');
    const old = lookup(1, new Date('2026-11-21T10:00:00Z'));
    const recent = lookup(2, new Date('2026-11-22T11:00:00Z'));
    const journal = new MemoryJournal([recent, old]);
    session = createListenSession({ journal, receiver: {}, now: () => now, statusIntervalMs: 50 });
    const lost: PendingLookup[][] = [];
    session.on('lost', (l) => lost.push(l));
    const ticks = events(session, 'status', 6);
    await session.start();
    await ticks; // the first status and five more, each of which could report the lost lookup again
    expect(lost).toEqual([[old]]);
    const status = session.status();
    expect(status.lost).toBe(1);
    expect(status.oldest).toMatchObject({
      correlationId: old.correlationId,
      deadline: new Date('2026-11-22T10:00:00Z'),
    });
  });
});
