// When the first lookups of a batch are on the wire, told by undici's diagnostics channel.
import { channel } from 'node:diagnostics_channel';

/**
 * The first lookups on the wire: every lookup asked for from the first one until none is left waiting to be
 * written (its headers written to a socket, told by undici's diagnostics channel: its promise API has no such
 * hook), or until one of them is over (its exchange ended, written or not), or the pool closed (`close()` for
 * both). A batch's first turn asks for as many lookups as it may have in flight, and all but one wait for
 * connections of their own: work that would hold the one thread (reading the rest of the list, recording the run)
 * waits for them all, or they would leave up to 50 ms late and the run end as much later (docs/BENCHMARKS.md,
 * item 8). An answer ends the wait: a connection that never opens (a service that drops it) holds nothing back
 * beyond the first round trip. Listening starts at the first lookup and ends when the promise resolves; only the
 * request's origin and path are read, never the headers the channel carries.
 */
export function firstLookupsOnTheWire(origin: string): {
  promise: Promise<void>;
  watch: (path: string) => void;
  close: () => void;
} {
  let resolve: () => void = () => {};
  const promise = new Promise<void>((r) => (resolve = r));
  const sendHeaders = channel('undici:client:sendHeaders');
  // Paths of the lookups not yet written, with how many of each (the same number may be asked for twice at once).
  const waiting = new Map<string, number>();
  let state: 'idle' | 'watching' | 'done' = 'idle';
  function onSendHeaders(message: unknown): void {
    const request = (message as { request?: { origin?: unknown; path?: unknown } }).request;
    if (String(request?.origin) === origin) written(String(request?.path));
  }
  function written(path: string): void {
    const n = waiting.get(path);
    if (state !== 'watching' || n === undefined) return;
    if (n > 1) waiting.set(path, n - 1);
    else waiting.delete(path);
    if (waiting.size === 0) close();
  }
  function close(): void {
    if (state === 'watching') sendHeaders.unsubscribe(onSendHeaders);
    state = 'done';
    waiting.clear();
    resolve();
  }
  const watch = (path: string) => {
    if (state === 'done') return;
    if (state === 'idle') sendHeaders.subscribe(onSendHeaders);
    state = 'watching';
    waiting.set(path, (waiting.get(path) ?? 0) + 1);
  };
  return { promise, watch, close };
}
