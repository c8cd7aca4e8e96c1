#!/usr/bin/env node
// Durable pushes per second and ack latency of `dnc listen`, beside a bare node:http server that stores nothing, same load, same run.
//
//   node bench/listen-bench.mjs [--pushes 4000] [--concurrency 16] [--warmup 200]
//
// Needs dist/ (npx tsc -p tsconfig.json). A real webhook batch is run against the sandbox first, so
// the listener stores real pushes for pending lookups into a real journal (each push one applied
// result, committed and fsynced before its 200). Prints one JSON object on stdout.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(ROOT, 'bin', 'dnc.js');
const GOAL = { pushes_per_s: 1000, p99_ms: 50 };

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
}
const PUSHES = arg('pushes', 4000);
const CONCURRENCY = arg('concurrency', 16);
const WARMUP = arg('warmup', 200);
const PUSH_PATH = '/hooks/bench-Jr6tQm2yVb0sXw9LkPz3dA';

const { startSandbox } = await import(path.join(ROOT, 'dist', 'sandbox', 'index.js'));
const { Pool } = await import('undici');
const { parse } = await import('csv-parse/sync');

function run(argv, options) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...argv], { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

/** Starts a server process and resolves with its URL once it prints `listening on URL`. */
function startServer(command, args, options) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
      const m = /listening on (\S+)/.exec(stderr);
      if (m) resolve({ child, url: m[1], stderr: () => stderr });
    });
    child.on('error', reject);
    child.on('close', (code) => reject(new Error(`server exited (${code}) before listening:\n${stderr}`)));
  });
}

function stop(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    child.removeAllListeners('close');
    child.on('close', (code) => resolve(code));
    child.kill('SIGTERM');
  });
}

/** Sends every push through one undici Pool, `concurrency` in flight; returns latencies (ms) and throughput. */
async function load(url, pushes, concurrency) {
  const u = new URL(url);
  const pool = new Pool(u.origin, { connections: concurrency, pipelining: 1 });
  const latencies = [];
  const statuses = {};
  let next = 0;
  const started = performance.now();
  async function worker() {
    while (next < pushes.length) {
      const p = pushes[next++];
      const t0 = performance.now();
      const res = await pool.request({
        path: u.pathname,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Service-Webhooks/1.0',
          'x-service-correlation-id': p.correlationId,
          'x-service-phone-number': p.phone,
          'x-service-country': 'AU',
          'x-service-status': '200',
        },
        body: p.body,
      });
      await res.body.text();
      latencies.push(performance.now() - t0);
      statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  await pool.close();
  latencies.sort((a, b) => a - b);
  const q = (f) => latencies[Math.min(latencies.length - 1, Math.floor(f * latencies.length))];
  const round = (x) => Math.round(x * 100) / 100;
  return {
    pushes: pushes.length,
    seconds: round(seconds),
    pushes_per_s: Math.round(pushes.length / seconds),
    p50_ms: round(q(0.5)),
    p99_ms: round(q(0.99)),
    max_ms: round(latencies.at(-1)),
    statuses,
  };
}

function pushBody(row) {
  return JSON.stringify({
    status: 'succeeded',
    error_code: null,
    correlation_id: row.dnc_correlation_id,
    phone_number: row.dnc_phone_e164,
    country: 'AU',
    do_not_call: Number(row.dnc_phone_e164.at(-1)) % 2 === 1,
    // Now: the listener refuses a verdict dated before its lookup was sent (a fixed date went stale, and every
    // push was refused 422 while the bench still counted them as pushes/s).
    timestamp: new Date().toISOString().replace('Z', '000+00:00'),
    dnc_list_source: 'https://sandbox.dnc.invalid/registers/AU',
    cost: { credits_used_for_query: 3, total_credits_used: 3, credit_limit: 1_000_000 },
  });
}

const BARE_SERVER = `
const http = require('node:http');
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => { res.writeHead(200, { 'content-type': 'application/json', 'content-length': 2 }); res.end('{}'); });
});
server.listen(0, '127.0.0.1', () => console.error('listening on http://127.0.0.1:' + server.address().port + '${PUSH_PATH}'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`;

const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-listen-bench-'));
try {
  // A webhook batch whose pushes the sandbox would only send hours later: the bench sends them instead.
  const total = PUSHES + WARMUP;
  const input = path.join(dir, 'calls.csv');
  const output = path.join(dir, 'calls.results.csv');
  const rows = Array.from({ length: total }, (_, i) => `n${i},+614${String(12_000_000 + i).padStart(8, '0')}`);
  writeFileSync(input, `name,phone\n${rows.join('\n')}\n`);
  const sandbox = await startSandbox({ port: 0, allowInsecureWebhooks: true, timeScale: 10, creditLimit: 1_000_000, seed: 1 });
  const batch = await run(
    ['batch', input, '-o', output, '--webhook-url', `http://127.0.0.1:9${PUSH_PATH}`, '--allow-insecure-webhook-url', '--concurrency', '16', '--quiet'],
    { cwd: dir, env: { ...process.env, DNC_BASE_URL: sandbox.baseUrl, DNC_API_KEY: sandbox.apiKey } },
  );
  await sandbox.close();
  if (batch.code !== 8) throw new Error(`dnc batch exited ${batch.code}, expected 8 (pending):\n${batch.stderr}`);
  const pending = parse(readFileSync(output, 'utf8'), { columns: true }).filter((r) => r.dnc_result === 'pending');
  if (pending.length !== total) throw new Error(`expected ${total} pending rows, got ${pending.length}`);
  const pushes = pending.map((r) => ({ correlationId: r.dnc_correlation_id, phone: r.dnc_phone_e164, body: pushBody(r) }));
  const warm = pushes.slice(0, WARMUP);
  const measured = pushes.slice(WARMUP);

  // The bare server first, then dnc listen: each gets the same warm-up and the same measured pushes.
  const bare = await startServer(process.execPath, ['-e', BARE_SERVER], { cwd: dir });
  await load(bare.url, warm, CONCURRENCY);
  const bareResult = await load(bare.url, measured, CONCURRENCY);
  await stop(bare.child);

  const listener = await startServer(process.execPath, [BIN, 'listen', '--results', output, '--port', '0', '--path', PUSH_PATH], { cwd: dir });
  await load(listener.url, warm, CONCURRENCY);
  const durable = await load(listener.url, measured, CONCURRENCY);
  const exitCode = await stop(listener.child);

  // What the listener acknowledged must be in the journal.
  const { default: Database } = await import('better-sqlite3');
  const db = new Database(`${output}.journal.sqlite`, { readonly: true });
  const stored = db.prepare("SELECT COUNT(*) AS n FROM pushes WHERE outcome = 'applied'").get().n;
  db.close();
  const result = {
    bench: 'listen',
    node: process.version,
    cpus: os.cpus().length,
    concurrency: CONCURRENCY,
    warmup: WARMUP,
    durable: { ...durable, stored_in_journal: stored, listener_exit: exitCode },
    bare: bareResult,
    goal: GOAL,
    goal_met: durable.pushes_per_s >= GOAL.pushes_per_s && durable.p99_ms < GOAL.p99_ms && stored === total,
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  if (!result.goal_met) process.exitCode = 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
