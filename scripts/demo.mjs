#!/usr/bin/env node
// `npm run demo`: scrubs fixtures/demo/call-list.csv against a local `dnc sandbox` (dist/ is built by predemo).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = path.join(root, 'bin', 'dnc.js');
const input = path.join('fixtures', 'demo', 'call-list.csv');
const outDir = path.join('.tmp', 'demo');
const output = path.join(outDir, 'call-list.results.csv');
const callable = path.join(outDir, 'call-list.callable.csv');

if (!existsSync(path.join(root, 'dist', 'bundle', 'dnc.js'))) {
  console.error('demo: dist/ is missing; run `npm run build` first');
  process.exit(1);
}
mkdirSync(path.join(root, outDir), { recursive: true });
// A fresh demo each time: the batch would otherwise resume the last one's journal.
for (const f of [output, callable]) rmSync(path.join(root, f), { force: true });
rmSync(path.join(root, `${output}.journal.sqlite`), { force: true });
rmSync(path.join(root, `${output}.journal.sqlite-wal`), { force: true });
rmSync(path.join(root, `${output}.journal.sqlite-shm`), { force: true });

// The demo leaves no trace in the user's home: dnc's state (journal registry, check history), cache
// (learned costs, reusable verdicts) and config folders point at a scratch folder removed at the end.
const scratch = mkdtempSync(path.join(os.tmpdir(), 'dnc-demo-'));
const scratchEnv = {
  XDG_STATE_HOME: path.join(scratch, 'state'),
  XDG_CACHE_HOME: path.join(scratch, 'cache'),
  XDG_CONFIG_HOME: path.join(scratch, 'config'),
  DNC_CONFIG: '',
};
process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));

const sandbox = spawn(process.execPath, [bin, 'sandbox', '--port', '0'], {
  cwd: root,
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...process.env, ...scratchEnv },
});
const env = {};
const lines = createInterface({ input: sandbox.stdout });
await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error('the sandbox did not start within 10 s')), 10_000);
  sandbox.once('exit', (code) => reject(new Error(`the sandbox exited (${code}) before printing its address`)));
  lines.on('line', (line) => {
    const m = /^(DNC_BASE_URL|DNC_API_KEY)=(.*)$/.exec(line);
    if (m) env[m[1]] = m[2];
    if (env.DNC_BASE_URL && env.DNC_API_KEY) {
      clearTimeout(timer);
      resolve();
    }
  });
}).catch((err) => {
  console.error(`demo: ${err.message}`);
  sandbox.kill('SIGTERM');
  process.exit(1);
});
sandbox.removeAllListeners('exit');
console.error(`demo: sandbox running at ${env.DNC_BASE_URL}`);
const args = ['batch', input, '-o', output, '--country', 'US', '--callable-out', callable];
console.error(`demo: dnc ${args.join(' ')}\n`);

const batch = spawn(process.execPath, [bin, ...args], { cwd: root, stdio: 'inherit', env: { ...process.env, ...scratchEnv, ...env } });
const code = await new Promise((resolve) => batch.on('exit', (c, signal) => resolve(c ?? (signal ? 128 : 1))));

console.error(`\ndemo: results in ${output} (every row plus dnc_* columns); callable rows only in ${callable}`);
sandbox.kill('SIGTERM');
await new Promise((resolve) => sandbox.once('exit', resolve));
// Exit 7 is the demo working as meant: its AU row is webhook-only, so it stays not_checked without --webhook-url.
if (code === 7) console.error('demo: exit 7 (finished, some rows without a verdict) is expected here: the AU row needs webhook mode');
process.exit(code === 7 ? 0 : code);
