// An HTTP relay in front of the sandbox that can take "the service" down and bring it back on the same address,
// as an outage looks to a client: requests already taken in are answered, later connections are refused
// (ECONNREFUSED, so nothing of them reached the service). Every answer closes its connection, so no request
// can ride a kept-alive socket into the outage and be cut half-way (which a client must treat as maybe charged).
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ServiceProxy {
  /** The address to give dnc as DNC_BASE_URL. */
  baseUrl: string;
  /** Lookups (GET /check_phone_number) answered through the relay since it started. */
  lookupsAnswered(): number;
  /** Goes down once `count` lookups in all have been answered (at once when already so). */
  downAfter(count: number): void;
  /** Whether the relay is down. */
  isDown(): boolean;
  /** Holds every answer this long before relaying it, as a slower service would (0: none). */
  delay(ms: number): void;
  /** Listens again on the same address. */
  up(): Promise<void>;
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'host',
  'content-encoding',
]);

export async function serviceProxy(target: string): Promise<ServiceProxy> {
  let answered = 0;
  let threshold = Infinity;
  let down = false;
  let delayMs = 0;
  let closed: Promise<void> = Promise.resolve();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (!HOP_BY_HOP.has(k) && v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
      const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
      fetch(new URL(req.url ?? '/', target), { method: req.method, headers, body })
        .then(async (r) => {
          const payload = Buffer.from(await r.arrayBuffer());
          if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
          const out: Record<string, string> = { connection: 'close' };
          r.headers.forEach((v, k) => {
            if (!HOP_BY_HOP.has(k)) out[k] = v;
          });
          res.writeHead(r.status, out);
          res.end(payload);
          if ((req.url ?? '').startsWith('/check_phone_number')) {
            answered++;
            if (answered >= threshold) goDown();
          }
        })
        .catch(() => res.destroy());
    });
  });
  const goDown = () => {
    if (down) return;
    down = true;
    // Stops accepting at once; the connections in progress end after their answer (connection: close).
    closed = new Promise((resolve) => server.close(() => resolve()));
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    lookupsAnswered: () => answered,
    downAfter(count) {
      threshold = count;
      if (answered >= threshold) goDown();
    },
    isDown: () => down,
    delay(ms) {
      delayMs = ms;
    },
    async up() {
      if (!down) return;
      threshold = Infinity;
      await closed;
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => {
          server.off('error', reject);
          resolve();
        });
      });
      down = false;
    },
    async close() {
      threshold = Infinity;
      server.closeAllConnections();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
      else await closed;
    },
  };
}
