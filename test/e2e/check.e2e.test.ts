// `dnc check` as a process (node bin/dnc.js → dist/): exit codes, stdin, pipes, and the key kept out of every stream.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { assertBuilt, spawnDnc, type SpawnOptions, type SpawnResult } from '../helpers/cli.js';
import { closedPort } from '../service/stub-server.js';

const KEY = 'sbx_e2e_check_key_77d2b0c4e9';
let sb: Sandbox;
const outputs: string[] = [];

beforeAll(async () => {
  assertBuilt();
  sb = await startSandbox({ port: 0, key: KEY, creditLimit: 500, seed: 11 });
});

afterAll(async () => {
  await sb.close();
  for (const text of outputs) expect(text).not.toContain(KEY);
});

beforeEach(() => sb.reset());

async function dnc(argv: string[], options: SpawnOptions = {}): Promise<SpawnResult> {
  const r = await spawnDnc(argv, { ...options, env: { DNC_BASE_URL: sb.baseUrl, DNC_API_KEY: KEY, ...options.env } });
  outputs.push(r.stdout, r.stderr);
  return r;
}

describe('exit codes of the process', () => {
  it('0 callable, 10 listed with --fail-on-dnc, 3 invalid_phone_number, 6 billing_error', async () => {
    const callable = await dnc(['check', '+12025550100']);
    expect([callable.code, callable.signal]).toEqual([0, null]);
    expect(callable.stdout).toMatch(/^callable\s+\+1 202 555 0100/);
    expect((await dnc(['check', '--fail-on-dnc', '+12025550101'])).code).toBe(10);
    expect((await dnc(['check', '+12025550990'])).code).toBe(3);
    expect((await dnc(['check', '+12025550995'])).code).toBe(6);
    expect(sb.requests()).toHaveLength(4);
  });

  it('5 at the credit limit, 4 for a wrong key', async () => {
    sb.setCreditLimit(0, KEY);
    const limit = await dnc(['check', '+12025550100']);
    expect(limit.code).toBe(5);
    expect(limit.stderr).toContain('[E_CREDIT_LIMIT]');
    const wrong = await dnc(['check', '+12025550100'], { env: { DNC_API_KEY: 'sbx_nope_0000000000' } });
    expect(wrong.code).toBe(4);
    expect(wrong.stderr).not.toContain('sbx_nope_0000000000');
  });

  it('2 without configuration, naming the three ways to give it; nothing sent', async () => {
    const r = await dnc(['check', '+12025550100'], { env: { DNC_BASE_URL: undefined } });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--base-url.*DNC_BASE_URL.*"base_url"/s);
    expect(sb.requests()).toEqual([]);
  });

  it('3 for a number that cannot be valid, 2 for AU without --webhook-url: nothing sent', async () => {
    const short = await dnc(['check', '+1202555']);
    expect(short.code).toBe(3);
    expect(short.stderr).toContain("'+1202555' is too short for US");
    const au = await dnc(['check', '+61412345000']);
    expect(au.code).toBe(2);
    expect(au.stderr).toContain('--webhook-url');
    expect(sb.requests()).toEqual([]);
  });

  it('6 when the service cannot be reached (connection refused, retried first)', async () => {
    const port = await closedPort();
    const r = await dnc(['--retries', '1', 'check', '+12025550100'], {
      env: { DNC_BASE_URL: `http://127.0.0.1:${port}` },
    });
    expect(r.code).toBe(6);
    expect(r.stderr).toContain('ECONNREFUSED');
    expect(r.stderr).toContain('hint:');
  });
});

describe('streams', () => {
  it('numbers piped on stdin with "-", NDJSON on stdout, the summary on stderr', async () => {
    const r = await dnc(['--json', 'check', '-'], {
      stdin: '+12025550100\n# skip me\n\n+12025550101\n+442079460124\n',
    });
    expect(r.code, r.stderr).toBe(0);
    const objs = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { phone_number: string; do_not_call: boolean; http_status: number });
    expect(objs.map((o) => [o.phone_number, o.do_not_call, o.http_status])).toEqual([
      ['+12025550100', false, 200],
      ['+12025550101', true, 200],
      ['+442079460124', false, 200],
    ]);
    expect(r.stderr).toContain('3 numbers: 2 callable, 1 on a register');
  });

  it('--quiet drops the summary; piped output has no colour codes even with FORCE_COLOR unset', async () => {
    const r = await dnc(['--quiet', 'check', '+12025550100', '+12025550102']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).not.toMatch(/\u001b\[/);
  });

  it('--verbose logs each request with Bearer *** and never the key', async () => {
    const r = await dnc(['--verbose', 'check', '+12025550992']);
    expect(r.code).toBe(0);
    expect(r.stderr.match(/→ GET \/check_phone_number/g)).toHaveLength(3);
    expect(r.stderr).toContain('Bearer ***');
    expect(r.stdout + r.stderr).not.toContain(KEY);
  });

  it('check --help documents the exit codes and exits 0 without configuration', async () => {
    const r = await dnc(['check', '--help'], { env: { DNC_BASE_URL: undefined, DNC_API_KEY: undefined } });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('--fail-on-dnc');
    expect(r.stdout).toContain('Exit codes');
  });
});
