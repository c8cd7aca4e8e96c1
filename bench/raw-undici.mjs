// The floor for item 2 and the load generator for item 7: a minimal undici loop of synchronous lookups, nothing stored.
//   node bench/raw-undici.mjs --count N --offset K --concurrency C   (DNC_BASE_URL, DNC_API_KEY from the environment)
// Looks up usNumber(offset .. offset+N-1) with C in flight over one keep-alive Pool; prints one JSON line.
import { Pool } from 'undici';
import { parseArgs, usNumber } from './lib.mjs';

const args = parseArgs(process.argv.slice(2));
const count = Number(args.count ?? 20_000);
const offset = Number(args.offset ?? 0);
const concurrency = Number(args.concurrency ?? 32);
const base = new URL(process.env.DNC_BASE_URL);
const headers = { authorization: `Bearer ${process.env.DNC_API_KEY}`, accept: 'application/json' };
const pool = new Pool(base.origin, { connections: concurrency });
const statuses = {};
let next = 0;
const started = performance.now();
async function worker() {
  while (next < count) {
    const n = usNumber(offset + next++);
    const res = await pool.request({ method: 'GET', path: `/check_phone_number?phone_number=${encodeURIComponent(n)}`, headers });
    await res.body.json();
    statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
  }
}
await Promise.all(Array.from({ length: concurrency }, worker));
const ms = performance.now() - started;
await pool.close();
process.stdout.write(`${JSON.stringify({ count, concurrency, ms, perSecond: (count * 1000) / ms, statuses })}\n`);
