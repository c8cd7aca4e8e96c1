// Shared by bench.mjs and soak.mjs: the sandbox and dnc as child processes, resource usage, test numbers, tables.
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const BIN = path.join(ROOT, 'bin', 'dnc.js');
export const OUT_DIR = path.join(ROOT, 'bench', 'out');
const RUSAGE_HOOK = pathToFileURL(path.join(ROOT, 'bench', 'rusage-hook.mjs')).href;

export function assertBuilt() {
  if (!existsSync(path.join(ROOT, 'dist', 'bundle', 'dnc.js'))) {
    throw new Error('dist/ is missing: run `npm run build` first (npm ci builds it through prepare)');
  }
}

/** Parses `--name value`, `--name=value` and bare `--flag` into an object. */
export function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error(`unexpected argument '${a}'`);
    const eq = a.indexOf('=');
    if (eq > 0) out[a.slice(2, eq)] = a.slice(eq + 1);
    else if (i + 1 < argv.length && !argv[i + 1].startsWith('--')) out[a.slice(2)] = argv[++i];
    else out[a.slice(2)] = true;
  }
  return out;
}

export function machine() {
  const cpu = /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? os.cpus()[0]?.model ?? 'unknown';
  return { nproc: os.availableParallelism(), cpu, node: process.version, platform: `${os.platform()} ${os.release()}`, loadavg: os.loadavg().map((l) => Number(l.toFixed(2))), date: new Date().toISOString() };
}

export function stamp() {
  return new Date().toISOString().replace(/[:]/g, '-').replace(/\..*$/, '');
}

/** Resolves after `ms`; `unref`: a timer that does not keep the process alive (a deadline raced against work). */
export const sleep = (ms, { unref = false } = {}) =>
  new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    if (unref) t.unref();
  });

/** An E.164 US number (+1 202 NXX XXXX), distinct for every i below 7.9 million; never ends in 990–997. */
export function usNumber(i) {
  // Skip the sandbox's special endings: 8 of every 1,000 subscriber numbers.
  const k = Math.floor(i / 992) * 1000 + (i % 992 < 990 ? i % 992 : (i % 992) + 8);
  const exchange = 200 + Math.floor(k / 10_000);
  return `+1202${exchange}${String(k % 10_000).padStart(4, '0')}`;
}

/** An E.164 GB number (+44 20 7XXX XXXX), distinct for every i below 9.9 million; never ends in 990–997. */
export function gbNumber(i) {
  const k = Math.floor(i / 992) * 1000 + (i % 992 < 990 ? i % 992 : (i % 992) + 8);
  return `+44207${String(k).padStart(7, '0')}`;
}

/** An E.164 AU mobile (+61 41X XXX XXX) whose tens digit (its push delay in the sandbox: 30 s × 2^tens) is `tens`. */
export function auNumber(i, tens) {
  const ones = i % 10;
  const rest = Math.floor(i / 10);
  return `+6141${String(rest).padStart(5, '0')}${tens}${ones}`;
}

/** The dnc_result the sandbox's number rules give a number looked up synchronously or pushed. */
export function expectedResult(e164) {
  const tail = e164.slice(-3);
  if (tail === '990') return 'invalid';
  if (['993', '994', '995', '996', '997'].includes(tail)) return 'failed';
  return Number(e164.at(-1)) % 2 === 1 ? 'do_not_call' : 'callable';
}

/** Writes a CSV, streaming: `rows` yields arrays of cells (already CSV-safe). */
export async function writeCsv(file, header, count, row) {
  const ws = createWriteStream(file);
  const write = (s) => (ws.write(s) ? undefined : new Promise((r) => ws.once('drain', r)));
  await write(header.join(',') + '\n');
  let chunk = '';
  for (let i = 0; i < count; i++) {
    chunk += row(i).join(',') + '\n';
    if (chunk.length > 64 * 1024) {
      await write(chunk);
      chunk = '';
    }
  }
  if (chunk) await write(chunk);
  await new Promise((resolve, reject) => ws.end((err) => (err ? reject(err) : resolve())));
}

/** A scratch folder under the OS temp dir, removed by `remove()`. */
export function scratchDir(prefix) {
  const dir = path.join(os.tmpdir(), `${prefix}-${process.pid}-${Date.now()}`);
  mkdirSync(dir, { recursive: true });
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

let rusageSeq = 0;

/**
 * Runs `node [--import rusage-hook] script ...args` as a child. Resolves with its exit code, signal,
 * output, wall time and (when measured) the child's own CPU time and peak RSS.
 * `onStart(child)` lets a caller kill it; `env` is the child's whole environment (plus PATH).
 */
export function runNode(script, args, { env = {}, cwd = ROOT, rusage = true, stdin = '', onStart, timeoutMs = 30 * 60_000, nodeArgs = [] } = {}) {
  const rusageFile = rusage ? path.join(os.tmpdir(), `dnc-bench-rusage-${process.pid}-${++rusageSeq}.json`) : null;
  const fullEnv = { PATH: process.env.PATH ?? '', ...env };
  if (rusageFile) fullEnv.BENCH_RUSAGE_FILE = rusageFile;
  const argv = [...nodeArgs, ...(rusageFile ? ['--import', RUSAGE_HOOK] : []), script, ...args];
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, argv, { cwd, env: fullEnv, stdio: 'pipe' });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const wallMs = performance.now() - started;
      let usage = null;
      if (rusageFile && existsSync(rusageFile)) {
        usage = JSON.parse(readFileSync(rusageFile, 'utf8'));
        rmSync(rusageFile, { force: true });
      }
      resolve({ code, signal, stdout, stderr, wallMs, cpuMs: usage ? (usage.userUs + usage.systemUs) / 1000 : null, maxRssMb: usage ? usage.maxRssKb / 1024 : null });
    });
    child.stdin.end(stdin);
    onStart?.(child);
  });
}

/** `node bin/dnc.js ...args` (see runNode). */
export function runDnc(args, options = {}) {
  return runNode(BIN, args, options);
}

/**
 * `dnc sandbox --port 0 ...flags` as a child process: resolves once its two DNC_* lines are read.
 * The returned object talks to its /_sandbox/ introspection endpoints over HTTP.
 */
export async function startSandboxChild(flags = []) {
  assertBuilt();
  const child = spawn(process.execPath, [BIN, 'sandbox', '--port', '0', ...flags], { cwd: ROOT, env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  const env = await new Promise((resolve, reject) => {
    const fail = (why) => reject(new Error(`dnc sandbox did not start (${why}):\n${stderr}`));
    child.on('error', (err) => fail(err.message));
    child.on('exit', (code, signal) => fail(`exit ${code ?? signal}`));
    child.stdout.setEncoding('utf8').on('data', (d) => {
      stdout += d;
      const url = /^DNC_BASE_URL=(\S+)$/m.exec(stdout)?.[1];
      const key = /^DNC_API_KEY=(\S+)$/m.exec(stdout)?.[1];
      if (url && key) resolve({ DNC_BASE_URL: url, DNC_API_KEY: key });
    });
  });
  child.removeAllListeners('exit');
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const base = env.DNC_BASE_URL;
  const call = async (method, name) => {
    const res = await fetch(`${base}/_sandbox/${name}`, { method });
    if (!res.ok) throw new Error(`sandbox ${method} ${name}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  return {
    env,
    baseUrl: base,
    apiKey: env.DNC_API_KEY,
    pid: child.pid,
    stdout: () => stdout,
    stderr: () => stderr,
    requests: () => call('GET', 'requests'),
    lookups: () => call('GET', 'lookups'),
    pushes: () => call('GET', 'pushes'),
    account: () => call('GET', 'account'),
    reset: () => call('POST', 'reset'),
    setCreditLimit: (limit) => call('POST', `credit-limit?limit=${limit}`),
    async close() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** Lookup requests per second at the sandbox: first to last arrival (+ one latency for the last answer). */
export function lookupRate(requests, latencyMs = 0) {
  const times = requests.filter((r) => r.path === '/check_phone_number').map((r) => Date.parse(r.receivedAt));
  if (times.length < 2) return { count: times.length, ms: 0, perSecond: 0 };
  const ms = Math.max(...times) - Math.min(...times) + latencyMs;
  return { count: times.length, ms, perSecond: ms > 0 ? (times.length * 1000) / ms : 0 };
}

export function median(values) {
  const s = [...values].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** A plain-text table: columns padded to their widest cell. */
export function table(header, rows) {
  const all = [header, ...rows].map((r) => r.map((c) => String(c ?? '')));
  const widths = header.map((_, i) => Math.max(...all.map((r) => r[i].length)));
  const line = (r) => r.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd();
  return [line(all[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...all.slice(1).map(line)].join('\n');
}

export const fmt = {
  n: (x, d = 0) => (x === null || x === undefined || Number.isNaN(x) ? '—' : Number(x).toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d })),
  ratio: (x) => (x === null || x === undefined || !Number.isFinite(x) ? '—' : `${x.toFixed(2)}×`),
};
