// Delivery of webhook pushes (section 6): one POST per lookup, retries with backoff, deliberate duplicates, an attempt
// log.
import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { privateHostKind } from '../wire/webhook-url.js';
import { appendCapped, type Scheduler } from './clock.js';

/** The receiver must answer within this (service time). */
export const REPLY_LIMIT_MS = 10_000;
export const FIRST_BACKOFF_MS = 30_000;
export const MAX_BACKOFF_MS = 3_600_000;
export const MAX_ATTEMPTS = 10;
/**
 * The reply limit is 10 s × timeScale, but never under this many real milliseconds: at the scales
 * that make 24 h pass in seconds it would otherwise be shorter than a loopback round trip.
 */
export const MIN_REPLY_REAL_MS = 25;
/** Service time between a delivered push and its deliberate duplicate. */
export const DUPLICATE_DELAY_MS = 1_000;

export interface PushAttempt {
  correlationId: string;
  /** 1-based; duplicates continue the count. */
  attempt: number;
  url: string;
  /** The receiver's HTTP status, when it answered. */
  status?: number;
  /** Why no status: timeout, connection refused, refused address … */
  error?: string;
  /** When the attempt ended (ISO 8601). */
  at: string;
  duplicate: boolean;
  /** What happens next: delivered, retry, permanent (no more attempts), gave_up (10 attempts). */
  outcome: 'delivered' | 'retry' | 'permanent' | 'gave_up';
}

export interface Push {
  url: string;
  correlationId: string;
  headers: Record<string, string>;
  body: string;
}

export interface PushDeliveryOptions {
  scheduler: Scheduler;
  random: () => number;
  duplicateRate: number;
  allowInsecure: boolean;
  now: () => string;
  onAttempt?: ((attempt: PushAttempt) => void) | undefined;
}

/** Backoff before attempt `attempt + 1`: 30 s doubling, at most 1 h. */
export function backoffMs(attempt: number): number {
  return Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (attempt - 1));
}

/** 5xx, 408, 425 and 429 are retried; any other non-2xx (3xx included: redirects are not followed) is final. */
export function isRetryableStatus(status: number): boolean {
  return status >= 500 || status === 408 || status === 425 || status === 429;
}

type Result = { status: number } | { error: string };

export class PushDelivery {
  log: PushAttempt[] = [];
  private readonly inFlight = new Set<http.ClientRequest>();
  private readonly agent = new http.Agent({ keepAlive: true });
  private readonly tlsAgent = new https.Agent({ keepAlive: true });
  private generation = 0;

  constructor(private readonly o: PushDeliveryOptions) {}

  deliver(push: Push): void {
    this.attempt(push, 1, false);
  }

  /** Drops the log and abandons pushes in flight (their timers are cancelled by the scheduler). */
  reset(): void {
    this.generation++;
    for (const req of this.inFlight) req.destroy();
    this.inFlight.clear();
    this.log = [];
  }

  close(): void {
    this.reset();
    this.agent.destroy();
    this.tlsAgent.destroy();
  }

  private attempt(push: Push, n: number, duplicate: boolean): void {
    const generation = this.generation;
    // A request that cannot even be built is a failed attempt like any other, never a crash.
    const sent = this.send(push).catch((err: unknown): Result => ({
      error: err instanceof Error ? err.message : String(err),
    }));
    void sent.then((result) => {
      if (generation !== this.generation) return;
      const entry: PushAttempt = {
        correlationId: push.correlationId,
        attempt: n,
        url: push.url,
        at: this.o.now(),
        duplicate,
        outcome: 'delivered',
      };
      if ('status' in result) entry.status = result.status;
      else entry.error = result.error;
      const ok = 'status' in result && result.status >= 200 && result.status < 300;
      const retryable = !ok && ('error' in result || isRetryableStatus(result.status));
      if (ok) entry.outcome = 'delivered';
      else if (duplicate)
        entry.outcome = 'permanent'; // a deliberate extra copy is never retried
      else if (!retryable) entry.outcome = 'permanent';
      else entry.outcome = n >= MAX_ATTEMPTS ? 'gave_up' : 'retry';
      appendCapped(this.log, entry);
      this.o.onAttempt?.(entry);
      if (entry.outcome === 'retry') this.o.scheduler.after(backoffMs(n), () => this.attempt(push, n + 1, false));
      if (ok && !duplicate && this.o.duplicateRate > 0 && this.o.random() < this.o.duplicateRate) {
        this.o.scheduler.after(DUPLICATE_DELAY_MS, () => this.attempt(push, n + 1, true));
      }
    });
  }

  private async send(push: Push): Promise<Result> {
    let url: URL;
    try {
      url = new URL(push.url);
    } catch {
      return { error: 'invalid URL' };
    }
    // Section 6: the host is resolved again at delivery; private, loopback and link-local addresses are refused.
    try {
      const host = url.hostname.replace(/^\[|\]$/g, '');
      const { address } = await dnsLookup(host);
      const kind = privateHostKind(address);
      if (kind && !(kind === 'loopback' && this.o.allowInsecure))
        return { error: `refused: ${url.hostname} resolves to a ${kind} address` };
    } catch (err) {
      return { error: `cannot resolve ${url.hostname}: ${(err as NodeJS.ErrnoException).code ?? String(err)}` };
    }
    return new Promise<Result>((resolve) => {
      const mod = url.protocol === 'https:' ? https : http;
      let settled = false;
      const finish = (r: Result) => {
        if (settled) return;
        settled = true;
        cancelTimer();
        this.inFlight.delete(req);
        resolve(r);
      };
      const req = mod.request(url, {
        method: 'POST',
        headers: { ...push.headers, 'content-length': String(Buffer.byteLength(push.body)) },
        agent: url.protocol === 'https:' ? this.tlsAgent : this.agent,
      });
      this.inFlight.add(req);
      const limit = Math.max(MIN_REPLY_REAL_MS, this.o.scheduler.scaled(REPLY_LIMIT_MS));
      const cancelTimer = this.o.scheduler.afterReal(limit, () => {
        finish({ error: 'timeout: no answer within 10 s' });
        req.destroy();
      });
      req.on('response', (res) => {
        // The body is ignored; read it so the connection can be reused.
        res.resume();
        finish({ status: res.statusCode ?? 0 });
      });
      req.on('error', (err: NodeJS.ErrnoException) => finish({ error: err.code ?? err.message }));
      req.end(push.body);
    });
  }
}
