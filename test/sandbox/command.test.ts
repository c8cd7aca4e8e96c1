// `dnc sandbox` as a command: in-process (options, errors, clean stop on interrupt) and as the spawned binary (two lines, SIGTERM).
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createTestIO } from '../../src/io.js';
import { main } from '../../src/main.js';
import { BIN, NO_HOME, REPO_ROOT, runDnc } from '../helpers/cli.js';
import { testInterrupts } from '../helpers/interrupts.js';
import { waitFor } from '../helpers/wait.js';

async function waitForLines(read: () => string, n: number, ms = 10_000): Promise<string[]> {
  await waitFor(() => read().split('\n').length > n, { ms, what: `${n} lines` }).catch((err: Error) => {
    throw new Error(`${err.message}, got: ${read()}`);
  });
  return read().split('\n').slice(0, n);
}

describe('dnc sandbox (in-process)', () => {
  it('prints the base URL and key first, serves with the options given, and stops cleanly on an interrupt', async () => {
    const io = createTestIO();
    const interrupts = testInterrupts();
    const running = main(
      ['sandbox', '--port', '0', '--key', 'my-test-key', '--credit-limit', '3', '--costs', 'us=2', '--seed', '5'],
      {
        io,
        env: {},
        homedir: NO_HOME,
        interrupts,
      },
    );
    const [urlLine, keyLine] = await waitForLines(io.out, 2);
    expect(urlLine).toMatch(/^DNC_BASE_URL=http:\/\/127\.0\.0\.1:\d+$/);
    expect(keyLine).toBe('DNC_API_KEY=my-test-key');
    const base = urlLine!.slice('DNC_BASE_URL='.length);
    const r1 = await fetch(`${base}/check_phone_number?phone_number=%2B12025550123`, {
      headers: { authorization: 'my-test-key' },
    });
    expect(r1.headers.get('x-credit-cost')).toBe('2');
    const r2 = await fetch(`${base}/check_phone_number?phone_number=%2B12025550123`, {
      headers: { authorization: 'my-test-key' },
    });
    expect(r2.status).toBe(429);
    interrupts.fire();
    expect(await running).toBe(0);
    await expect(fetch(`${base}/usage_stats`)).rejects.toThrow();
    expect(io.err()).toMatch(/stopped/);
    expect(io.err()).not.toContain('my-test-key');
  });

  it('with --verbose, logs each request on stderr without the key', async () => {
    const io = createTestIO();
    const interrupts = testInterrupts();
    const running = main(['--verbose', 'sandbox', '--key', 'verbose-key-9'], {
      io,
      env: {},
      homedir: NO_HOME,
      interrupts,
    });
    const [urlLine] = await waitForLines(io.out, 2);
    const base = urlLine!.slice('DNC_BASE_URL='.length);
    await (
      await fetch(`${base}/check_phone_number?phone_number=%2B33612345678`, {
        headers: { authorization: 'Bearer verbose-key-9' },
      })
    ).text();
    interrupts.fire();
    expect(await running).toBe(0);
    expect(io.err()).toContain('GET /check_phone_number?phone_number=%2B33612345678 → 422 (Sandbox Customer)');
    expect(io.err()).not.toContain('verbose-key-9');
  });

  it('loads an accounts file and prints its first key', async () => {
    const io = createTestIO();
    const interrupts = testInterrupts();
    const running = main(['sandbox', '--accounts', 'fixtures/sandbox/accounts.json', '--plan', 'annual'], {
      io,
      env: {},
      homedir: NO_HOME,
      cwd: REPO_ROOT,
      interrupts,
    });
    const [, keyLine] = await waitForLines(io.out, 2);
    expect(keyLine).toBe('DNC_API_KEY=sbx_acme_annual_0001');
    interrupts.fire();
    expect(await running).toBe(0);
  });

  it('refuses bad options with exit 2 and says what to fix', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['--plan', 'weekly'], /--plan/],
      [['--time-scale', '0'], /--time-scale/],
      [['--duplicate-push-rate', '2'], /--duplicate-push-rate/],
      [['--costs', 'US:1'], /--costs/],
      [['--port', '70000'], /--port/],
      [['--accounts', 'no/such/file.json'], /cannot read accounts file/],
      [['--countries', 'USA'], /--countries/],
    ];
    for (const [args, message] of cases) {
      const r = await runDnc(['sandbox', ...args], { cwd: REPO_ROOT });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stdout).toBe('');
    }
  });

  it('says so when the port is taken', async () => {
    const blocker = http.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const r = await runDnc(['sandbox', '--port', String(port)]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/EADDRINUSE/);
      expect(r.stderr).toMatch(/--port 0/);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });
});

describe('dnc sandbox (spawned binary)', () => {
  it('prints exactly two eval-able lines first and exits 0 on SIGTERM', async () => {
    const child = spawn(process.execPath, [BIN, 'sandbox', '--port', '0'], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH, HOME: NO_HOME },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const [urlLine, keyLine] = await waitForLines(() => out, 2);
      const env = Object.fromEntries([urlLine!, keyLine!].map((l) => l.split('=') as [string, string]));
      expect(Object.keys(env)).toEqual(['DNC_BASE_URL', 'DNC_API_KEY']);
      expect(env.DNC_BASE_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const res = await fetch(`${env.DNC_BASE_URL}/check_phone_number?phone_number=%2B12025550124`, {
        headers: { authorization: `Bearer ${env.DNC_API_KEY}` },
      });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { do_not_call: boolean }).do_not_call).toBe(false);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(out.trim().split('\n')).toHaveLength(2);
    expect(err).toMatch(/stopped/);
  });
});
