// One JSON error shape: every command's failures with --json state {"error": {code, exit_status, message, hint}} on
// stdout (batch: inside its summary; check: in the number's line), exit_status is the process's exit code, and the
// message and hint are those printed on stderr.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestIO } from '../../src/io.js';
import { main } from '../../src/main.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { NO_HOME, runDnc, spawnDnc, type RunResult } from '../helpers/cli.js';

const KEY = 'sbx_json_errors_key_7c1e4a9d2b';
let sb: Sandbox;
/** A sandbox whose account has 1 credit: the second lookup gets a 429. */
let tight: Sandbox;
/** Made when the file loads (the table names files in it), removed after the last test. */
const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-json-errors-'));
/** A port something already listens on. */
let busy: net.Server;
let busyPort: number;

beforeAll(async () => {
  sb = await startSandbox({ port: 0, key: KEY, creditLimit: 1000, seed: 3 });
  tight = await startSandbox({ port: 0, key: KEY, creditLimit: 1, seed: 3 });
  // The tight account's one credit spent: its next lookup gets a 429.
  const spent = await runDnc(['check', '+12025550100'], { env: { DNC_BASE_URL: tight.baseUrl, DNC_API_KEY: KEY } });
  expect(spent.code, spent.stderr).toBe(0);
  busy = net.createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  busyPort = (busy.address() as net.AddressInfo).port;
  writeFileSync(path.join(dir, 'calls.csv'), 'name,phone\nAda,+12025550100\n');
  writeFileSync(path.join(dir, 'plain.csv'), 'name,phone\nAda,+12025550100\n');
});

afterAll(async () => {
  await sb?.close();
  await tight?.close();
  await new Promise((resolve) => busy?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

const at = (name: string) => path.join(dir, name);
const service = () => ({ DNC_BASE_URL: sb.baseUrl, DNC_API_KEY: KEY });
const UUID = '0b7c1d2e-5f60-4a8b-9c3d-2e1f0a9b8c7d';

interface Case {
  argv: string[];
  env?: () => Record<string, string>;
  exit: number;
  code: string;
}

/** Each command's failure modes: usage errors, typed errors, auth, the service, the store, files. */
const CASES: Record<string, Case[]> = {
  check: [
    { argv: ['--json', 'chek', '+12025550100'], exit: 2, code: 'E_USAGE' },
    { argv: ['check', '--json', '--contry', 'GB', '+12025550100'], exit: 2, code: 'E_USAGE' },
    { argv: ['check', '--json', '+12025550100'], exit: 2, code: 'E_CONFIG_MISSING' },
    { argv: ['check', '--json', 'not-a-number'], env: service, exit: 3, code: 'E_INVALID_NUMBER' },
    { argv: ['check', '--json', '--at', 'tomorrow', '+12025550100'], env: service, exit: 2, code: 'E_USAGE' },
    { argv: ['check', '--json', '+61412345000'], env: service, exit: 2, code: 'E_WEBHOOK_REQUIRED' },
    {
      argv: ['check', '--json', '+12025550100'],
      env: () => ({ ...service(), DNC_API_KEY: 'wrong-key-4242' }),
      exit: 4,
      code: 'E_AUTH_FORBIDDEN',
    },
    {
      argv: ['check', '--json', '+12025550102'],
      env: () => ({ DNC_BASE_URL: tight.baseUrl, DNC_API_KEY: KEY }),
      exit: 5,
      code: 'E_CREDIT_LIMIT',
    },
    { argv: ['check', '--json', '+12025550995'], env: service, exit: 6, code: 'E_LOOKUP_FAILED' },
    { argv: ['check', '--json', '+12025550990'], env: service, exit: 3, code: 'E_NUMBER_REJECTED' },
    { argv: ['check', '--json', '+33612345678'], env: service, exit: 3, code: 'E_UNSUPPORTED_COUNTRY' },
    {
      argv: ['check', '--json', '--retries', '0', '+12025550100'],
      env: () => ({ ...service(), DNC_BASE_URL: 'http://127.0.0.1:9' }),
      exit: 6,
      code: 'E_NETWORK',
    },
  ],
  batch: [
    { argv: ['batch', '--json', at('calls.csv'), '--concurrency', 'x'], env: service, exit: 2, code: 'E_USAGE' },
    { argv: ['batch', '--json', at('missing.csv')], env: service, exit: 3, code: 'E_INPUT_UNREADABLE' },
    {
      argv: ['batch', '--json', at('calls.csv'), '--suppression-list', at('no-list.sqlite')],
      env: service,
      exit: 2,
      code: 'E_LIST_MISSING',
    },
    {
      argv: ['batch', '--json', at('calls.csv'), '-o', at('b-auth.csv')],
      env: () => ({ ...service(), DNC_API_KEY: 'wrong-key-4242' }),
      exit: 4,
      code: 'E_AUTH_FORBIDDEN',
    },
    {
      argv: ['batch', '--json', at('calls.csv'), '-o', at('b-net.csv')],
      env: () => ({ ...service(), DNC_BASE_URL: 'http://127.0.0.1:9' }),
      exit: 6,
      code: 'E_NETWORK',
    },
  ],
  usage: [
    { argv: ['usage', '--json', '--periods', '0'], env: service, exit: 2, code: 'E_USAGE' },
    { argv: ['--json', '--timeout', 'abc', 'usage'], env: service, exit: 2, code: 'E_USAGE' },
    {
      argv: ['usage', '--json'],
      env: () => ({ ...service(), DNC_API_KEY: 'wrong-key-4242' }),
      exit: 4,
      code: 'E_AUTH_FORBIDDEN',
    },
    {
      argv: ['usage', '--json', '--retries', '0'],
      env: () => ({ ...service(), DNC_BASE_URL: 'http://127.0.0.1:9' }),
      exit: 6,
      code: 'E_NETWORK',
    },
  ],
  listen: [
    { argv: ['listen', '--json'], exit: 2, code: 'E_USAGE' },
    { argv: ['listen', '--json', '--results', at('plain.csv'), '--port', 'abc'], exit: 2, code: 'E_USAGE' },
    { argv: ['listen', '--json', '--results', at('plain.csv'), '--port', '0'], exit: 2, code: 'E_JOURNAL_MISSING' },
  ],
  verify: [
    { argv: ['verify', '--json', at('missing.csv')], exit: 3, code: 'E_INPUT_MISSING' },
    { argv: ['verify', '--json', at('plain.csv')], exit: 3, code: 'E_NO_MANIFEST' },
    { argv: ['verify', '--json', at('plain.csv'), '--max-age', 'old'], exit: 2, code: 'E_USAGE' },
  ],
  window: [
    { argv: ['window', '--json', at('plain.csv')], exit: 2, code: 'E_USAGE' },
    {
      argv: [
        'window',
        '--json',
        at('missing.csv'),
        '--from',
        '2026-12-01T14:00:00Z',
        '--until',
        '2026-12-01T16:00:00Z',
        '--dial-out',
        at('slot.txt'),
      ],
      exit: 3,
      code: 'E_INPUT_MISSING',
    },
  ],
  trace: [
    { argv: ['trace', '--json', 'abc'], exit: 2, code: 'E_USAGE' },
    { argv: ['trace', '--json', UUID], exit: 3, code: 'E_TRACE_NOT_FOUND' },
  ],
  status: [
    { argv: ['status', '--json', '--expiring-within', 'soon'], exit: 2, code: 'E_USAGE' },
    { argv: ['status', '--json', at('missing.csv')], exit: 3, code: 'E_INPUT_MISSING' },
  ],
  report: [
    { argv: ['report', '--json'], exit: 2, code: 'E_USAGE' },
    { argv: ['report', '--json', at('missing.csv')], exit: 3, code: 'E_INPUT_MISSING' },
  ],
  suppress: [
    { argv: ['suppress', 'add', '--json'], exit: 2, code: 'E_USAGE' },
    { argv: ['suppress', 'add', '--json', 'not-a-number'], exit: 3, code: 'E_INVALID_NUMBER' },
    { argv: ['suppress', 'import', '--json', at('missing.csv')], exit: 3, code: 'E_INPUT_UNREADABLE' },
  ],
  exempt: [
    { argv: ['exempt', 'add', '--json', '+12025550100', '--basis', 'consent'], exit: 2, code: 'E_USAGE' },
    {
      argv: ['exempt', 'add', '--json', 'not-a-number', '--basis', 'consent', '--until', '2027-01-01'],
      exit: 3,
      code: 'E_INVALID_NUMBER',
    },
    {
      argv: ['exempt', 'add', '--json', '+12025550100', '--basis', 'consent', '--until', 'someday'],
      exit: 2,
      code: 'E_USAGE',
    },
  ],
  store: [
    { argv: ['store', 'migrate', '--json'], exit: 2, code: 'E_STORE_INVALID' },
    { argv: ['--store', 'mysql://db/dnc', 'store', 'status', '--json'], exit: 2, code: 'E_STORE_INVALID' },
    {
      argv: ['store', 'status', '--json'],
      env: () => ({ DNC_STORE: 'postgresql://dnc:pw-1234@127.0.0.1:1/dnc?connect_timeout=2' }),
      exit: 6,
      code: 'E_STORE_UNAVAILABLE',
    },
  ],
  sandbox: [
    { argv: ['sandbox', '--json', '--port', 'abc'], exit: 2, code: 'E_USAGE' },
    { argv: ['sandbox', '--json', '--port', 'BUSY'], exit: 2, code: 'E_SANDBOX_LISTEN' },
  ],
};

/** The error object of a --json stdout: the summary's (batch), the number's line (check), or the whole document. */
/** dnc's error object: `error` alone on stdout, or `dnc_error` beside the service's body on a `check` line. */
function errorOf(stdout: string): Record<string, unknown> {
  const lines = stdout.trim().split('\n');
  expect(lines, stdout).toHaveLength(1);
  const doc = JSON.parse(lines[0]!) as { error?: Record<string, unknown>; dnc_error?: Record<string, unknown> };
  const error = doc.dnc_error ?? doc.error;
  expect(error, stdout).toBeTypeOf('object');
  return error!;
}

/** What every failure must say alike on both streams. */
function expectOneError(r: RunResult, exit: number, code: string): void {
  expect(r.code, r.stderr).toBe(exit);
  const error = errorOf(r.stdout);
  expect(error.code).toBe(code);
  expect(error.exit_status).toBe(r.code);
  expect(error.message).toBeTypeOf('string');
  expect(error.hint, JSON.stringify(error)).toBeTypeOf('string');
  expect((error.hint as string).length).toBeGreaterThan(0);
  // The same message and hint as on stderr: `dnc: error [CODE]: message` and `  hint: …`.
  expect(r.stderr).toContain(`dnc: error [${code}]: ${error.message as string}\n  hint: ${error.hint as string}\n`);
}

describe.each(Object.entries(CASES))('dnc %s --json, each way it fails', (_name, cases) => {
  it.each(cases.map((c) => [c.argv.join(' '), c] as const))('%s', async (_label, c) => {
    const argv = c.argv.map((a) => (a === 'BUSY' ? String(busyPort) : a));
    const r = await runDnc(argv, { env: { ...c.env?.() }, cwd: dir });
    expectOneError(r, c.exit, c.code);
  });
});

describe('the cases above, all of them', () => {
  it('name every command that can fail', () => {
    const named = new Set(Object.values(CASES).flatMap((cs) => cs.map((c) => c.argv.find((a) => !a.startsWith('-'))!)));
    for (const command of [
      'check',
      'batch',
      'usage',
      'listen',
      'verify',
      'window',
      'trace',
      'status',
      'report',
      'suppress',
      'exempt',
      'store',
      'sandbox',
    ])
      expect([...named]).toContain(command);
  });
});

describe('a failure the code did not foresee (exit 1)', () => {
  it('is E_INTERNAL with exit_status 1 and the hint to report it, on both streams', async () => {
    const io = createTestIO({});
    const code = await main(['status', '--json', dir], {
      io,
      env: {},
      homedir: NO_HOME,
      cwd: dir,
      now: () => {
        throw new Error('the clock broke');
      },
    });
    expectOneError({ code, stdout: io.out(), stderr: io.err() }, 1, 'E_INTERNAL');
    expect(JSON.parse(io.out()).error.message).toBe('internal error: the clock broke');
  });
});

describe('the built dnc, as a script runs it', () => {
  it("a refused key: the service's body as received, `jq .dnc_error.code` reads E_AUTH_FORBIDDEN", async () => {
    const r = await spawnDnc(['check', '--json', '+12025550100'], {
      env: { ...service(), DNC_API_KEY: 'wrong-key-4242' },
    });
    expectOneError(r, 4, 'E_AUTH_FORBIDDEN');
    const line = JSON.parse(r.stdout) as Record<string, unknown>;
    // The 403's body is {"error": "invalid API key"}: kept as it came, no phone_number added to it (cli.md).
    expect(line.error).toBe('invalid API key');
    expect(line).not.toHaveProperty('phone_number');
    expect(line).toMatchObject({ http_status: 403, dnc_phone_number: '+12025550100' });
    expect(line.dnc_error).not.toHaveProperty('service');
  });

  it('an unknown command keeps its "did you mean" and the hint stderr gives', async () => {
    const r = await spawnDnc(['--json', 'chek', '+12025550100']);
    expectOneError(r, 2, 'E_USAGE');
    expect(errorOf(r.stdout)).toMatchObject({
      message: "unknown command 'chek' (did you mean check?)",
      hint: "see 'dnc --help' for the usage",
    });
  });

  it("an option value refused by its parser has a hint pointing to the command's usage", async () => {
    const r = await spawnDnc(['--json', 'usage', '--timeout', 'abc']);
    expectOneError(r, 2, 'E_USAGE');
    expect(errorOf(r.stdout).hint).toBe("see 'dnc usage --help' for the usage");
    const sub = await spawnDnc(['--json', 'suppress', 'add']);
    expect(errorOf(sub.stdout).hint).toBe("see 'dnc suppress add --help' for the usage");
  });
});
