// The sandbox's sense of time and chance: an injectable clock and timers scaled by timeScale, a seeded PRNG, ids and
// timestamps.

/** Timers the sandbox schedules on; inject fake ones in tests to step time exactly. */
export interface SandboxTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realTimers: SandboxTimers = {
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    // A pending push must not keep a process alive on its own; close() cancels everything anyway.
    t.unref();
    return t;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** The longest delay a Node timer honours. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Schedules service durations (push delay, retry backoff, 24 h expiry, the receiver's 10 s) as
 * real delays of `serviceMs × timeScale`, and cancels every one of them on close.
 */
export class Scheduler {
  private readonly pending = new Set<unknown>();
  private closed = false;

  constructor(
    private readonly timers: SandboxTimers,
    readonly timeScale: number,
  ) {}

  /** Real milliseconds a service duration takes in this sandbox. */
  scaled(serviceMs: number): number {
    return serviceMs * this.timeScale;
  }

  /** Runs `fn` after a service duration; returns a cancel function. */
  after(serviceMs: number, fn: () => void): () => void {
    return this.afterReal(this.scaled(serviceMs), fn);
  }

  /** Runs `fn` after real milliseconds (e.g. --latency-ms); returns a cancel function. */
  afterReal(ms: number, fn: () => void): () => void {
    if (this.closed) return () => {};
    // Node fires a timer of more than 2^31 - 1 ms after 1 ms instead (24 h × a time scale above ~24 gets
    // there): a long delay is waited in steps, each under the limit.
    let remaining = Math.max(0, ms);
    let handle: unknown;
    const arm = () => {
      const step = Math.min(remaining, MAX_TIMER_MS);
      remaining -= step;
      handle = this.timers.setTimeout(() => {
        this.pending.delete(handle);
        if (remaining > 0) arm();
        else fn();
      }, step);
      this.pending.add(handle);
    };
    arm();
    return () => {
      if (this.pending.delete(handle)) this.timers.clearTimeout(handle);
    };
  }

  /** Cancels every pending timer (reset, close). */
  cancelAll(): void {
    for (const handle of this.pending) this.timers.clearTimeout(handle);
    this.pending.clear();
  }

  close(): void {
    this.cancelAll();
    this.closed = true;
  }
}

/** mulberry32: small, fast, good enough for deciding duplicates and random failures reproducibly. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** A version-4 UUID drawn from `random`, so a seeded sandbox gives the same ids every run. */
export function uuidFrom(random: () => number): string {
  const b = new Array<number>(16);
  for (let i = 0; i < 16; i += 4) {
    const r = (random() * 4294967296) >>> 0;
    b[i] = r & 0xff;
    b[i + 1] = (r >>> 8) & 0xff;
    b[i + 2] = (r >>> 16) & 0xff;
    b[i + 3] = (r >>> 24) & 0xff;
  }
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.map((x) => HEX[x]!);
  const hex = h.join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * ISO 8601 with microseconds and an explicit UTC offset, as the service writes timestamps:
 * 2026-11-21T23:08:03.123456+00:00. A Date has milliseconds only; the extra three digits come
 * from a counter so timestamps of one millisecond stay distinct and ordered.
 */
export function serviceTimestamp(date: Date, micro: number): string {
  const iso = date.toISOString(); // 2026-11-21T23:08:03.123Z
  return `${iso.slice(0, 23)}${String(micro % 1000).padStart(3, '0')}+00:00`;
}

/** Entries kept per log (requests, lookups, pushes); beyond it the oldest tenth is dropped. */
export const LOG_LIMIT = 500_000;

/** Appends to a log that a long-running sandbox must not let grow without bound. */
export function appendCapped<T>(log: T[], entry: T): void {
  if (log.length >= LOG_LIMIT) log.splice(0, LOG_LIMIT / 10);
  log.push(entry);
}
