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
  env = {
    DNC_BASE_URL: sandbox.baseUrl,
    DNC_API_KEY: sandbox.apiKey,
    XDG_STATE_HOME: path.join(dir, 'state'),
    XDG_CACHE_HOME: path.join(dir, 'cache'),
  };
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
  [
    ['batch', 'calls.csv', '--max-credits', 'None'],
    /--max-credits must be a whole number of credits or none, got 'None'/,
  ],
  [['batch', 'calls.csv', '--max-credits', 'x'], /--max-credits must be a whole number of credits or none, got 'x'/],
  [
    ['batch', 'calls.csv', '--max-credits', '99999999999999999999'],
    /--max-credits is too large: it must be from 0 to 9007199254740991, got 99999999999999999999/,
  ],
  [
    ['--timeout', '99999999999999999999', 'usage'],
    /--timeout is too large: it must be from 1 to 9007199254740991, got 99999999999999999999/,
  ],
  [
    ['batch', 'calls.csv', '--reuse-within', '99999999999d'],
    /--reuse-within "99999999999d" is too long: at most 3660d/,
  ],
  [['batch', 'calls.csv', '--reuse-within', '3661d'], /--reuse-within "3661d" is too long: at most 3660d/],
  [['batch', 'calls.csv', '--allow-insecure-webhook-url'], /--allow-insecure-webhook-url needs --webhook-url/],
  [['check', '+12025550100', '--allow-insecure-webhook-url'], /--allow-insecure-webhook-url needs --webhook-url/],
  [['--base-url', '', 'usage'], /--base-url must not be empty/],
  [['--base-url', ' ', 'check', '+12025550100'], /--base-url must not be empty/],
  [['--forwarded-host', '', 'usage'], /--forwarded-host must not be empty/],
  [['--forwarded-host', '', 'check', '+12025550100'], /--forwarded-host must not be empty/],
  [
    ['batch', 'calls.csv', '--format', 'ods'],
    /option '--format <format>' argument 'ods' is invalid\. Allowed choices are csv, xlsx\./,
  ],
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
  [['verify', 'r.csv', '--as-of', '1'], /--as-of "1" is not a date-time/],
  [['verify', 'r.csv', '--as-of', '2026'], /--as-of "2026" is not a date-time/],
  [['verify', 'r.csv', '--as-of', 'March 7'], /--as-of "March 7" is not a date-time/],
  [
    ['verify', 'r.csv', '--as-of', 'Sun, 22 Nov 2026 10:00:00 GMT'],
    /--as-of "Sun, 22 Nov 2026 10:00:00 GMT" is not a date-time/,
  ],
  [['verify', 'r.csv', '--as-of', '2026-11-22 10:00'], /--as-of "2026-11-22 10:00" is not a date-time/],
  [['verify', 'r.csv', '--as-of', '2026-11-22T10:00:00'], /--as-of "2026-11-22T10:00:00" is not a date-time/],
  [
    ['verify', 'r.csv', '--as-of', '2026-11-22'],
    /--as-of "2026-11-22" is not a date-time: give the time and its offset too/,
  ],
  [['verify', 'r.csv', '--as-of', '-000001-01-01T00:00:00Z'], /--as-of "-000001-01-01T00:00:00Z" is not a date-time/],
  [
    ['verify', 'r.csv', '--as-of', '1999-12-31T23:59:59Z'],
    /--as-of "1999-12-31T23:59:59Z" is not a date-time: the year must be from 2000 to 9999/,
  ],
  [
    ['verify', 'r.csv', '--as-of', '2026-02-30T00:00:00Z'],
    /--as-of "2026-02-30T00:00:00Z" is not a date-time: no such date or time/,
  ],
  [
    ['verify', 'r.csv', '--as-of', '2026-11-22T24:00:00Z'],
    /--as-of "2026-11-22T24:00:00Z" is not a date-time: no such date or time/,
  ],
  [['verify', 'r.csv', '--as-of', '2026-11-22T10:00:00+25:00'], /no such offset/],
  [['status', '--as-of', '2026'], /--as-of "2026" is not a date-time/],
  [['verify', 'r.csv', '--max-age', '99999999999d'], /--max-age "99999999999d" is too long: at most 3660d/],
  [['status', '--expiring', '523w'], /--expiring "523w" is too long: at most 3660d/],
  [['listen', '--results', ''], /--results must not be empty/],
  [['listen', '--results', ' ', '--exit-when-done'], /--results must not be empty/],
  [['verify', 'r.csv', '--list', '-3'], /--list must be at least 0, got -3/],
  [['status', '--expiring', 'soon'], /--expiring/],
  [
    ['sandbox', '--plan', 'weekly'],
    /option '--plan <plan>' argument 'weekly' is invalid\. Allowed choices are monthly, annual\./,
  ],
  [['sandbox', '--duplicate-push-rate', '1.5'], /--duplicate-push-rate must be a number from 0 to 1, got '1\.5'/],
  [['sandbox', '--time-scale', '0'], /--time-scale must be a number above 0, got '0'/],
  [['sandbox', '--costs', 'US:1'], /--costs: 'US:1' is not CC=N/],
  [['sandbox', '--countries', 'USA'], /--countries: 'USA' is not an ISO 3166-1 alpha-2 code/],
  [['sandbox', '--time-scale', '0x10'], /--time-scale must be a number above 0, got '0x10'/],
  [['sandbox', '--time-scale', '0b1'], /--time-scale must be a number above 0, got '0b1'/],
  [['sandbox', '--time-scale', 'Infinity'], /--time-scale must be a number above 0, got 'Infinity'/],
  [['sandbox', '--duplicate-push-rate', '0x1'], /--duplicate-push-rate must be a number from 0 to 1, got '0x1'/],
  [['sandbox', '--upstream-failure-rate', '0o1'], /--upstream-failure-rate must be a number from 0 to 1, got '0o1'/],
  [['sandbox', '--countries', ''], /--countries must not be empty/],
  [['sandbox', '--countries', 'US,,GB'], /--countries: 'US,,GB' has an empty item/],
  [['sandbox', '--countries', 'US,'], /--countries: 'US,' has an empty item/],
  [['sandbox', '--costs', ''], /--costs must not be empty/],
  [['sandbox', '--costs', 'US=1,,GB=2'], /--costs: 'US=1,,GB=2' has an empty item/],
  [
    ['sandbox', '--costs', 'US=99999999999999999999'],
    /--costs: the cost of US must be from 1 to 1000 credits, got 99999999999999999999/,
  ],
  [['sandbox', '--costs', 'US=0'], /--costs: the cost of US must be from 1 to 1000 credits, got 0/],
  [['sandbox', '--costs', 'US=1001'], /--costs: the cost of US must be from 1 to 1000 credits, got 1001/],
  [['sandbox', '--costs', 'US=1,us=2'], /--costs: US is given twice/],
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

  it('an empty DNC_FORWARDED_HOST (an unset $CLIENT) is refused, not read as "send none"; the flag still overrides it', async () => {
    const before = sandbox.requests().length;
    const r = await runDnc(['usage'], { env: { ...env, DNC_FORWARDED_HOST: '' }, cwd: dir });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/^dnc: error \[E_CONFIG_INVALID\]: DNC_FORWARDED_HOST is set but empty/);
    expect(sandbox.requests().length).toBe(before);
    expect(readdirSync(dir).sort()).toEqual(['calls.csv']);
    const flag = await runDnc(['--forwarded-host', 'calls.example.org', 'usage'], {
      env: { ...env, DNC_FORWARDED_HOST: '' },
      cwd: dir,
    });
    expect(flag.code, flag.stderr).toBe(0);
    expect(sandbox.requests().at(-1)?.headers['x-forwarded-host']).toBe('calls.example.org');
    rmSync(path.join(dir, 'state'), { recursive: true, force: true });
    rmSync(path.join(dir, 'cache'), { recursive: true, force: true });
  });

  it('--as-of takes ISO 8601 with Z or an offset, and the moment it names', async () => {
    const { parseDateTimeOption } = await import('../../src/cli-options.js');
    expect(parseDateTimeOption('--as-of', '2026-12-20T09:00:00Z').toISOString()).toBe('2026-12-20T09:00:00.000Z');
    expect(parseDateTimeOption('--as-of', '2026-12-20T09:00:00.123456+01:00').toISOString()).toBe(
      '2026-12-20T08:00:00.123Z',
    );
    expect(parseDateTimeOption('--as-of', '2026-12-20T09:00-05:30').toISOString()).toBe('2026-12-20T14:30:00.000Z');
    expect(parseDateTimeOption('--as-of', '2028-02-29T00:00:00Z').toISOString()).toBe('2028-02-29T00:00:00.000Z');
    expect(parseDateTimeOption('--as-of', '9999-12-31T23:59:59Z').toISOString()).toBe('9999-12-31T23:59:59.000Z');
  });

  it('durations are bounded at 3660d, the bound itself accepted', async () => {
    const { parseDuration } = await import('../../src/time.js');
    expect(parseDuration('--max-age', '3660d')).toBe(3660 * 86_400_000);
    expect(parseDuration('--max-age', '87840h')).toBe(3660 * 86_400_000);
  });

  it('defaults are typed values: the batch runs at --concurrency 8 unless told', async () => {
    const r = await runDnc(['batch', '--help'], { env, cwd: dir });
    expect(r.stdout).toMatch(/--concurrency <n>\s+lookups in flight at once, 1 to 64 \(default: 8\)/);
  });
});
