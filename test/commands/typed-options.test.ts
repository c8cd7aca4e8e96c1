// Option values are parsed by commander as it reads the command line (src/cli-options.ts): a bad value or a
// conflicting pair is refused with exit 2 in dnc's format, before any request, file or journal.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { runDnc } from '../helpers/cli.js';

let sandbox: Sandbox;
let dir: string;
let env: Record<string, string>;
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-typed-options-'));
  writeFileSync(path.join(dir, 'calls.csv'), 'phone\n+12025550100\n');
  env = { DNC_BASE_URL: sandbox.baseUrl, DNC_API_KEY: sandbox.apiKey, XDG_STATE_HOME: path.join(dir, 'state'), XDG_CACHE_HOME: path.join(dir, 'cache') };
});
afterAll(async () => {
  await sandbox.close();
  rmSync(dir, { recursive: true, force: true });
});

// [argv, what the error names]
const refused: Array<[string[], RegExp]> = [
  [['--timeout', '0', 'usage'], /--timeout must be at least 1, got 0/],
  [['--retries', '11', 'usage'], /--retries must be from 0 to 10, got 11/],
  [['--retries', '1.5', 'usage'], /--retries must be a whole number, got '1\.5'/],
  [['batch', 'calls.csv', '--concurrency', '65'], /--concurrency must be from 1 to 64, got 65/],
  [['batch', 'calls.csv', '--concurrency', '8x'], /--concurrency must be a whole number, got '8x'/],
  [['batch', 'calls.csv', '--max-credits', '-1'], /--max-credits must be at least 0, got -1/],
  [['batch', 'calls.csv', '--max-credits', 'None'], /--max-credits must be a whole number, got 'None'/],
  [['batch', 'calls.csv', '--format', 'ods'], /option '--format <format>' argument 'ods' is invalid\. Allowed choices are csv, xlsx\./],
  [['batch', 'calls.csv', '--encoding', 'ebcdic'], /--encoding must be one of utf-8, .*; got 'ebcdic'/],
  [['batch', 'calls.csv', '--reuse-within', '7 days'], /--reuse-within/],
  [['usage', '--periods', '101'], /--periods must be from 1 to 100, got 101/],
  [['usage', '--id', '2', '--periods', '3'], /option '--id <id>' cannot be used with option '--periods <n>'/],
  [['usage', '--cursor', ' '], /--cursor must not be empty/],
  [['listen', '--results', 'r.csv', '--port', '65536'], /--port must be from 0 to 65535, got 65536/],
  [['listen', '--results', 'r.csv', '--path', 'hooks'], /--path must be a URL path starting with \//],
  [['listen', '--results', 'r.csv', '--host', ' '], /--host must not be empty/],
  [['listen', '--results', 'r.csv', '--clock-skew', '86401'], /--clock-skew must be from 0 to 86400, got 86401/],
  [['verify', 'r.csv', '--as-of', 'yesterday'], /--as-of "yesterday" is not a date-time/],
  [['verify', 'r.csv', '--list', '-3'], /--list must be at least 0, got -3/],
  [['status', '--expiring', 'soon'], /--expiring/],
  [['sandbox', '--plan', 'weekly'], /option '--plan <plan>' argument 'weekly' is invalid\. Allowed choices are monthly, annual\./],
  [['sandbox', '--duplicate-push-rate', '1.5'], /--duplicate-push-rate must be a number from 0 to 1, got '1\.5'/],
  [['sandbox', '--time-scale', '0'], /--time-scale must be a number above 0, got '0'/],
  [['sandbox', '--costs', 'US:1'], /--costs: 'US:1' is not CC=N/],
  [['sandbox', '--countries', 'USA'], /--countries: 'USA' is not an ISO 3166-1 alpha-2 code/],
];

describe('typed options', () => {
  for (const [argv, named] of refused) {
    it(`dnc ${argv.join(' ')} → exit 2, nothing sent or written`, async () => {
      const before = sandbox.requests().length;
      const r = await runDnc(argv, { env, cwd: dir });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/^dnc: error \[E_USAGE\]: /);
      expect(r.stderr).toMatch(named);
      expect(r.stdout).toBe('');
      expect(sandbox.requests().length).toBe(before);
      expect(readdirSync(dir).sort()).toEqual(['calls.csv']);
    });
  }

  it('--max-credits none lifts a budget; 0 is a budget of nothing (never read as none)', async () => {
    const out = path.join(dir, 'budget', 'out.csv');
    const input = path.join(dir, 'calls.csv');
    mkdirSync(path.dirname(out));
    const zero = await runDnc(['batch', input, '-o', out, '--max-credits', '0'], { env, cwd: dir });
    expect(zero.code, zero.stderr).toBe(5);
    const lifted = await runDnc(['batch', input, '-o', out, '--max-credits', 'none'], { env, cwd: dir });
    expect(lifted.code, lifted.stderr).toBe(0);
    rmSync(path.join(dir, 'budget'), { recursive: true, force: true });
    rmSync(path.join(dir, 'state'), { recursive: true, force: true });
    rmSync(path.join(dir, 'cache'), { recursive: true, force: true });
  });

  it('defaults are typed values: the batch runs at --concurrency 8 unless told', async () => {
    const r = await runDnc(['batch', '--help'], { env, cwd: dir });
    expect(r.stdout).toMatch(/--concurrency <n>\s+lookups in flight at once, 1 to 64 \(default: 8\)/);
  });
});
