// What the webhook receiver is given and what it tells: its options, the store it writes pushes through, its
// events and counts.
import type { KeyTrace } from '../key-trace.js';
import type { Push, PushBody } from '../service/push-answers.js';
import type { LookupResult } from '../wire/types.js';

/** A push read (readPush), ready to be stored and judged: the typed value and the evidence it came with. */
export interface IncomingPush extends Push {
  /** The body exactly as received (UTF-8), kept for support. */
  raw: string;
  receivedAt: Date;
  /** The request's headers (credentials left out), kept as evidence. */
  headers?: Record<string, string>;
  /** The peer's address (the proxy's, behind one). */
  peer?: string;
}

/** A push the receiver refused, handed to the store to keep as evidence (never applied). */
export type RefusedPush = Omit<IncomingPush, 'result'> & { result: PushBody | null; refusedReason: string };

/**
 * What storing one push did: a repeat changes nothing; an orphan is a correlation id the journal does not know;
 * a conflict is a second, different verdict for one correlation id (kept; the number becomes failed); refused: the
 * push contradicts what was sent (kept as evidence; answered 422); overCapacity: too many orphans kept (503).
 */
export interface StoreOutcome {
  duplicate: boolean;
  orphan: boolean;
  conflict?: boolean;
  refused?: string;
  overCapacity?: boolean;
}

/**
 * Where pushes go. `store` must have committed every push durably when it returns (or its
 * promise resolves), with one outcome per push in order; it throws when it cannot, and then
 * none of them is acknowledged (503: the service retries). Pushes arriving together are handed
 * over together, so one commit (one fsync) serves them all.
 */
export interface PushStore {
  store(pushes: readonly IncomingPush[]): StoreOutcome[] | Promise<StoreOutcome[]>;
  /**
   * Keeps a refused push as evidence, bounded by the store, durably when it returns (or its promise resolves); it
   * throws when it cannot, and then the push is answered 503 (the service retries) rather than refused unkept.
   */
  keepRefused?(push: RefusedPush): void | Promise<void>;
}

export interface ReceiverOptions {
  store: PushStore;
  host?: string;
  /** 0 (default) picks a free port. */
  port?: number;
  /** Serve pushes only on this path (a secret one: pushes are not signed). Without it, any path but /healthz. */
  path?: string;
  tls?: { cert: string | Buffer; key: string | Buffer };
  now?: () => Date;
  maxBodyBytes?: number;
  /** An asynchronous store slower than this is answered 503, well inside the service's 10 s (default 5000). */
  storeTimeoutMs?: number;
  /** Most pushes committed in one transaction (default 256). */
  maxBatch?: number;
  /** Clock skew allowed between the service and this machine (default 5 minutes). */
  skewMs?: number;
  /**
   * Most connections open at once (default 256). At the cap, a new connection takes the place of an idle one, of
   * one whose request has been arriving for longer than `stalledMs` (default 1 s), or else of the one reading its
   * request longest; when every one is being answered, the new one is closed at once.
   */
  maxConnections?: number;
  stalledMs?: number;
  /** Time allowed for a request's headers (default 10 s), and for the whole request (default 15 s). */
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  /** The API key (and any other secret): masked in every push before it is judged or kept. */
  secrets?: readonly string[];
  /** Traces of keys the listener does not hold (the batch's, from its journal): each found in a push is masked too. */
  keyTraces?: readonly KeyTrace[];
}

/**
 * Where a connection is: its request arriving (or a TLS handshake), being stored and answered, or idle (keep-alive).
 */
export interface Connection {
  phase: 'reading' | 'handling' | 'idle';
  since: number;
}

export interface PushEvent {
  correlationId: string;
  status: LookupResult['status'];
  errorCode: string | null;
  phoneNumber: string;
  duplicate: boolean;
  orphan: boolean;
  /** A second, different verdict for this correlation id: the number is now failed (conflicting_pushes). */
  conflict: boolean;
  /** From the first byte of the request to the acknowledgement being written. */
  latencyMs: number;
}

export interface RejectedEvent {
  status: number;
  reason: string;
  method: string;
  path: string;
  remoteAddress: string | undefined;
  correlationId: string | undefined;
}

export interface StoreFailedEvent {
  /** How many pushes were answered 503 because of this failure. */
  count: number;
  correlationIds: string[];
  error: Error;
}

export interface ReceiverEvents {
  push: [PushEvent];
  rejected: [RejectedEvent];
  'store-failed': [StoreFailedEvent];
  /** A malformed HTTP exchange at the socket level (node's clientError); answered `status` and closed. */
  'client-error': [{ error: Error; status: number; remoteAddress: string | undefined }];
}

export interface ReceiverStats {
  received: number;
  stored: number;
  duplicates: number;
  orphans: number;
  conflicts: number;
  rejected: number;
  storeFailures: number;
  /** Orphans answered 503 because the journal holds as many as it may. */
  overCapacity: number;
}

export interface ListeningAddress {
  host: string;
  port: number;
  /** e.g. http://127.0.0.1:8787/hooks/… (or / when any path is served). */
  url: string;
}
