// `dnc check` in-process against the sandbox (and a stub for answers the sandbox never gives): output, exit codes, what was sent.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { VERSION } from '../../src/version.js';
import { runDnc, type RunOptions, type RunResult } from '../helpers/cli.js';
import { testInterrupts } from '../helpers/interrupts.js';
import { startStub } from '../service/stub-server.js';

const KEY = 'sbx_check_test_key_5f0d1c9a7b3e';
const LIMIT = 1000;
let sb: Sandbox;
/** Every stdout/stderr produced, to prove the key never appears in any of it. */
const outputs: string[] = [];

beforeAll(async () => {
  sb = await startSandbox({ port: 0, key: KEY, creditLimit: LIMIT, seed: 7, allowInsecureWebhooks: true });
});

afterAll(async () => {
  await sb.close();
  for (const text of outputs) expect(text).not.toContain(KEY);
});

beforeEach(() => {
  sb.reset();
});

async function dnc(argv: string[], options: RunOptions = {}): Promise<RunResult> {
  const r = await runDnc(argv, { ...options, env: { DNC_BASE_URL: sb.baseUrl, DNC_API_KEY: KEY, ...options.env } });
  outputs.push(r.stdout, r.stderr);
  return r;
}

const lookupRequests = () => sb.requests().filter((r) => r.path === '/check_phone_number');

describe('a synchronous verdict', () => {
  it('callable: verdict, international number, country, register, credits, balance and correlation id', async () => {
    const r = await dnc(['check', '+12025550100']);
    expect(r.code, r.stderr).toBe(0);
    const [lookup] = sb.lookups();
    expect(lookup).toMatchObject({
      phoneNumber: '+12025550100',
      country: 'US',
      mode: 'sync',
      state: 'succeeded',
      charged: true,
      credits: 1,
    });
    expect(r.stdout).toContain('callable');
    expect(r.stdout).toContain('+1 202 555 0100');
    expect(r.stdout).toContain('not on the US do-not-call register');
    expect(r.stdout).toContain('https://sandbox.dnc.invalid/registers/US');
    expect(r.stdout).toContain('1 credit charged');
    // One voice with `dnc usage`: thousands separators (en-US), whatever the locale.
    expect(r.stdout).toContain('balance 999 / 1,000');
    expect(r.stdout).toContain(lookup!.correlationId);
    // Piped: plain words, no symbols or colour codes.
    expect(r.stdout).not.toMatch(/[✓✗]|\u001b\[/);
  });

  it('listed: exit 0, or 10 with --fail-on-dnc; a terminal gets the ✗ symbol', async () => {
    const plain = await dnc(['check', '+12025550101']);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain('DO NOT CALL');
    expect(plain.stdout).toContain('on the US do-not-call register');
    const failing = await dnc(['check', '+12025550103', '--fail-on-dnc'], { tty: true });
    expect(failing.code).toBe(10);
    expect(failing.stdout).toContain('✗ DO NOT CALL');
    const callable = await dnc(['check', '+12025550102', '--fail-on-dnc'], { tty: true });
    expect(callable.code).toBe(0);
    expect(callable.stdout).toContain('✓ callable');
  });

  it('national format with --country (any case) is sent as E.164, "+" arriving as "+" (sent %2B)', async () => {
    const r = await dnc(['check', '020 7946 0123', '--country', 'gb']);
    expect(r.code, r.stderr).toBe(0);
    const [req] = lookupRequests();
    // Had "+" been sent raw it would decode as a space.
    expect(req!.query.phone_number).toBe('+442079460123');
    expect(r.stdout).toContain('+44 20 7946 0123');
  });

  it('sends Bearer <key>, User-Agent dnc/<version>, and X-Forwarded-Host when configured', async () => {
    await dnc(['--forwarded-host', 'calls.reseller.example', 'check', '+12025550100']);
    const [req] = lookupRequests();
    expect(req!.headers.authorization).toBe('Bearer ***');
    expect(req!.headers['user-agent']).toBe(`dnc/${VERSION}`);
    expect(req!.headers['x-forwarded-host']).toBe('calls.reseller.example');
    await dnc(['check', '+12025550100']);
    expect(lookupRequests()[1]!.headers['x-forwarded-host']).toBeUndefined();
  });
});

describe('--json', () => {
  it('one object: the body as received plus http_status and credit_cost', async () => {
    const r = await dnc(['--json', 'check', '+12025550101']);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const obj = JSON.parse(lines[0]!) as Record<string, unknown>;
    const [lookup] = sb.lookups();
    expect(obj).toMatchObject({
      status: 'succeeded',
      error_code: null,
      correlation_id: lookup!.correlationId,
      phone_number: '+12025550101',
      country: 'US',
      do_not_call: true,
      dnc_list_source: 'https://sandbox.dnc.invalid/registers/US',
      cost: { credits_used_for_query: 1, total_credits_used: 1, credit_limit: LIMIT },
      http_status: 200,
      credit_cost: 1,
    });
    expect(obj.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$/);
  });

  it('several numbers: NDJSON in input order, failures and 422 included with their bodies and an error object', async () => {
    const r = await dnc(['--json', 'check', '+12025550100', '+12025550990', '+33612345678', '+442079460123']);
    expect(r.code).toBe(3);
    const objs = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(objs.map((o) => [o.dnc_phone_number, o.http_status, o.credit_cost])).toEqual([
      ['+12025550100', 200, 1],
      ['+12025550990', 400, 1],
      ['+33612345678', 422, 0],
      ['+442079460123', 200, 1],
    ]);
    // The service's bodies as received; dnc's error object beside a failure's as dnc_error, none beside a verdict.
    expect(objs.map((o) => (o.dnc_error as { code?: string } | undefined)?.code ?? null)).toEqual([
      null,
      'E_NUMBER_REJECTED',
      'E_UNSUPPORTED_COUNTRY',
      null,
    ]);
    expect(objs[1]).toMatchObject({
      status: 'failed',
      error_code: 'invalid_phone_number',
      charged: true,
      error: 'the register rejected the number',
      http_status: 400,
      dnc_error: { exit_status: 3 },
    });
    expect(objs[2]).toMatchObject({
      country: 'FR',
      error: 'country FR is not supported',
      http_status: 422,
      dnc_phone_number: '+33612345678',
      dnc_error: { exit_status: 3 },
    });
    expect(objs[2]).not.toHaveProperty('phone_number');
    expect(objs[2]!.supported_countries).toEqual(expect.arrayContaining(['US', 'GB', 'AU']));
    expect(r.stderr).toContain('invalid_phone_number');
  });
});

describe('failures answered by the service', () => {
  it('990 invalid_phone_number: exit 3, charged, not retried; the error and correlation id are shown', async () => {
    const r = await dnc(['check', '+12025550990']);
    expect(r.code).toBe(3);
    expect(lookupRequests()).toHaveLength(1);
    const [lookup] = sb.lookups();
    expect(lookup).toMatchObject({ errorCode: 'invalid_phone_number', charged: true });
    expect(r.stdout).toContain('invalid_phone_number');
    expect(r.stdout).toContain(lookup!.correlationId);
    expect(r.stdout).toMatch(/charged\s+yes, 1 credit/);
  });

  it('995 billing_error (charged) and 996 (not charged): exit 6, never retried', async () => {
    const charged = await dnc(['check', '+12025550995']);
    expect(charged.code).toBe(6);
    expect(charged.stdout).toContain('billing_error');
    expect(charged.stdout).toMatch(/charged\s+yes/);
    const uncharged = await dnc(['check', '+12025550996']);
    expect(uncharged.code).toBe(6);
    expect(uncharged.stdout).toMatch(/charged\s+no/);
    expect(lookupRequests()).toHaveLength(2);
  });

  it('997 lookup_expired: exit 6, not retried', async () => {
    const r = await dnc(['check', '+12025550997']);
    expect(r.code).toBe(6);
    expect(r.stdout).toContain('lookup_expired');
    expect(lookupRequests()).toHaveLength(1);
  });

  it('991/992 fail twice (not charged), are retried, and succeed on the third attempt', async () => {
    for (const n of ['+12025550991', '+12025550992']) {
      const r = await dnc(['check', n]);
      expect(r.code, r.stderr).toBe(0);
      const sent = lookupRequests().filter((q) => q.query.phone_number === n);
      expect(sent.map((q) => q.status)).toEqual(n.endsWith('991') ? [504, 504, 200] : [502, 502, 200]);
      // Last digit odd: on the register; even: callable.
      expect(r.stdout).toContain(n.endsWith('1') ? 'DO NOT CALL' : 'callable');
    }
    expect(sb.account(KEY).creditsUsed).toBe(2);
  });

  it('993/994 fail every time: failed after 1 + retries attempts, exit 6', async () => {
    const r = await dnc(['--retries', '2', 'check', '+12025550993']);
    expect(r.code).toBe(6);
    expect(r.stdout).toContain('upstream_timeout');
    expect(lookupRequests().map((q) => q.status)).toEqual([504, 504, 504]);
    sb.reset();
    const e = await dnc(['--retries', '1', '--json', 'check', '+12025550994']);
    expect(e.code).toBe(6);
    expect(JSON.parse(e.stdout)).toMatchObject({
      error_code: 'upstream_error',
      http_status: 502,
      credit_cost: 0,
      dnc_error: { code: 'E_LOOKUP_FAILED', exit_status: 6, hint: 'nothing was charged: check the number again later' },
    });
    expect(lookupRequests()).toHaveLength(2);
    expect(sb.account(KEY).creditsUsed).toBe(0);
  });

  it('422 unsupported country: exit 3, the supported countries printed, nothing charged', async () => {
    const r = await dnc(['check', '+33612345678']);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('FR');
    expect(r.stderr).toMatch(/\(422; supported: .*US.*GB/);
    expect(sb.account(KEY).creditsUsed).toBe(0);
  });

  it('429 credit limit: exit 5, not retried, later numbers not sent', async () => {
    sb.setCreditLimit(1, KEY);
    const r = await dnc(['check', '+12025550100', '+12025550102', '+12025550104']);
    expect(r.code).toBe(5);
    expect(lookupRequests().map((q) => q.status)).toEqual([200, 429]);
    expect(r.stderr).toContain('credit limit reached');
    expect(r.stderr).toContain('not sent (1): +12025550104');
    expect(r.stderr).toContain('3 numbers: 1 callable, 1 not answered, 1 not sent; 1 credit(s) charged');
  });

  it('403 for a wrong key: exit 4, not retried, the wrong key not printed either', async () => {
    const wrong = 'sbx_wrong_key_0123456789';
    const r = await dnc(['check', '+12025550100'], { env: { DNC_API_KEY: wrong } });
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('invalid API key');
    expect(r.stdout + r.stderr).not.toContain(wrong);
    expect(lookupRequests()).toHaveLength(1);
  });

  it('400 from the service (webhook URL the sandbox refuses): about the request, exit 2 as the local check, nothing charged', async () => {
    const strict = await startSandbox({ port: 0, key: KEY });
    try {
      const r = await runDnc(
        ['check', '+12025550100', '--webhook-url', 'http://127.0.0.1:9/hook', '--allow-insecure-webhook-url'],
        {
          env: { DNC_BASE_URL: strict.baseUrl, DNC_API_KEY: KEY },
        },
      );
      outputs.push(r.stdout, r.stderr);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('E_WEBHOOK_URL');
      expect(r.stderr).toContain('(400)');
      expect(strict.requests().map((q) => q.status)).toEqual([400]);
      expect(strict.account().creditsUsed).toBe(0);
    } finally {
      await strict.close();
    }
  });

  it('a proxy answering an HTML page: exit 6 with the status and a snippet, not a JSON crash', async () => {
    const stub = await startStub(() => ({ status: 502, text: '<html><body><h1>502 Bad Gateway</h1></body></html>' }));
    try {
      const r = await runDnc(['--json', 'check', '+12025550100'], {
        env: { DNC_BASE_URL: stub.baseUrl, DNC_API_KEY: KEY },
      });
      outputs.push(r.stdout, r.stderr);
      expect(r.code).toBe(6);
      // --json speaks on every exit: the body as received (text under `body`), why it has no verdict, the number, and
      // its calling window all the same.
      expect(JSON.parse(r.stdout)).toEqual({
        body: '<html><body><h1>502 Bad Gateway</h1></body></html>',
        http_status: 502,
        credit_cost: null,
        dnc_error: expect.objectContaining({ code: 'E_BAD_RESPONSE', exit_status: 6 }),
        dnc_phone_number: '+12025550100',
        calling: expect.objectContaining({ time_zones: ['America/New_York'], state: 'DC' }),
      });
      expect(r.stderr).toContain('HTTP 502');
      expect(r.stderr).toContain('502 Bad Gateway');
      expect(stub.requests).toHaveLength(1);
    } finally {
      await stub.close();
    }
  });
});

describe('webhook mode', () => {
  it('AU with --webhook-url: 202 receipt, credits held, correlation id, where the result goes', async () => {
    const hook = 'http://127.0.0.1:9/dnc-hook';
    const r = await dnc(['check', '+61412345000', '--webhook-url', hook, '--allow-insecure-webhook-url']);
    expect(r.code, r.stderr).toBe(0);
    const [lookup] = sb.lookups();
    expect(lookup).toMatchObject({ mode: 'webhook', state: 'started', country: 'AU', credits: 3 });
    expect(r.stdout).toContain('started');
    expect(r.stdout).toContain('3 credits held');
    expect(r.stdout).toContain(lookup!.correlationId);
    expect(r.stdout).toContain(`will be pushed to ${hook}`);
    expect(lookupRequests()[0]!.query.webhook_url).toBe(hook);
  });

  it('--json gives the receipt with http_status 202 and credit_cost (credits held)', async () => {
    const r = await dnc([
      '--json',
      'check',
      '+12025550100',
      '--webhook-url',
      'http://localhost:9/h',
      '--allow-insecure-webhook-url',
    ]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      status: 'started',
      phone_number: '+12025550100',
      http_status: 202,
      credit_cost: 1,
    });
  });
});

describe('refused locally: nothing is sent', () => {
  const cases: Array<[string, string[], number, RegExp]> = [
    ['too short', ['check', '+1202555'], 3, /'\+1202555' is too short for US/],
    ['not a number', ['check', 'call me'], 3, /'call me' is not a phone number/],
    ['national without --country', ['check', '2025550100'], 3, /national format: give --country/],
    ['AU without --webhook-url', ['check', '+61412345000'], 2, /AU lookups are webhook-only/],
    [
      'http webhook URL',
      ['check', '+12025550100', '--webhook-url', 'http://hooks.example.com/x'],
      2,
      /only pushes to https/,
    ],
    ['private webhook host', ['check', '+12025550100', '--webhook-url', 'https://10.1.2.3/x'], 2, /private address/],
    [
      'loopback webhook host',
      ['check', '+12025550100', '--webhook-url', 'https://127.0.0.1/x'],
      2,
      /add --allow-insecure-webhook-url/,
    ],
    [
      'credentials in webhook URL',
      ['check', '+12025550100', '--webhook-url', 'https://u:p@hooks.example.com/x'],
      2,
      /credentials/,
    ],
    ['unknown --country', ['check', '2025550100', '--country', 'XX'], 2, /--country 'XX' is not a region code/],
    ['UK for GB', ['check', '2079460123', '--country', 'UK'], 2, /United Kingdom is GB/],
    [
      'one bad number among good ones',
      ['check', '+12025550100', '+1202555', '+442079460123'],
      3,
      /1 of 3|too short for US/,
    ],
    ['unknown flag', ['check', '+12025550100', '--colour'], 2, /unknown option/],
  ];
  for (const [name, argv, code, message] of cases) {
    it(`${name}: exit ${code}`, async () => {
      const r = await dnc(argv);
      expect(r.code).toBe(code);
      expect(r.stderr).toMatch(message);
      expect(r.stdout).toBe('');
      expect(sb.requests()).toEqual([]);
    });
  }

  it('several refusals are all listed before anything is sent', async () => {
    const r = await dnc(['check', '+1202555', '+61412345000', '+12025550100', '-'], {
      stdin: '# list\n\n+12025550102\n12\n',
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("'+1202555' is too short for US");
    expect(r.stderr).toContain('+61 412 345 000 is an AU number');
    expect(r.stderr).toContain("stdin line 4: '12'");
    expect(r.stderr).toContain('3 of 5 numbers were refused');
    expect(sb.requests()).toEqual([]);
  });

  it('--no-validate sends a number that parses but is not valid', async () => {
    const r = await dnc(['--json', 'check', '+1202555', '--no-validate']);
    expect(lookupRequests().map((q) => q.query.phone_number)).toEqual(['+1202555']);
    expect(JSON.parse(r.stdout).http_status).toBeTypeOf('number');
  });
});

describe('several numbers', () => {
  it('stdin "-": one per line, blank lines and # comments skipped, in order, repeats looked up once', async () => {
    const stdin = '# call list\n+12025550100\n\n  +12025550101  \n# done\n+12025550100\n';
    const r = await dnc(['--json', 'check', '-', '+442079460124'], { stdin });
    expect(r.code, r.stderr).toBe(0);
    expect(lookupRequests().map((q) => q.query.phone_number)).toEqual([
      '+12025550100',
      '+12025550101',
      '+442079460124',
    ]);
    expect(r.stdout.trim().split('\n')).toHaveLength(3);
    expect(r.stderr).toContain('looked up once');
  });

  it('human blocks are separated by one blank line, whatever went to stderr between them', async () => {
    const r = await dnc(['check', '+33612345678', '+12025550100', '+12025550102']);
    expect(r.code).toBe(3);
    expect(r.stdout).toMatch(/^callable {5}\+1 202 555 0100/);
    expect(r.stdout.split('\n\n')).toHaveLength(2);
  });

  it('webhook mode for several numbers: credits held are summed apart from credits charged', async () => {
    const hook = ['--webhook-url', 'http://127.0.0.1:9/h', '--allow-insecure-webhook-url'];
    const r = await dnc(['check', '+61412345000', '+12025550100', ...hook]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('2 numbers: 2 started; 0 credit(s) charged, 4 held');
  });

  it('exit code: the most severe; 10 only when nothing failed', async () => {
    expect((await dnc(['check', '--fail-on-dnc', '+12025550101', '+12025550100'])).code).toBe(10);
    expect((await dnc(['check', '--fail-on-dnc', '+12025550101', '+12025550990'])).code).toBe(3);
    expect((await dnc(['check', '--fail-on-dnc', '+12025550990', '+12025550995', '+12025550101'])).code).toBe(6);
    const mixed = await dnc(['check', '+12025550100', '+12025550101', '+12025550996']);
    expect(mixed.code).toBe(6);
    expect(mixed.stderr).toContain('3 numbers: 1 callable, 1 on a register, 1 failed');
  });
});

/** `check` of three numbers against a slow sandbox, with `times` Ctrl-C as soon as the first request arrives. */
async function checkInterrupted(times: number, latencyMs: number) {
  const slow = await startSandbox({ port: 0, key: KEY, creditLimit: LIMIT, latencyMs });
  try {
    const interrupts = testInterrupts();
    const poll = setInterval(() => {
      if (slow.requests().length > 0) {
        clearInterval(poll);
        for (let i = 0; i < times; i++) interrupts.fire();
      }
    }, 5);
    const r = await runDnc(['check', '+12025550100', '+12025550101', '+12025550102'], {
      env: { DNC_BASE_URL: slow.baseUrl, DNC_API_KEY: KEY },
      interrupts,
    });
    clearInterval(poll);
    outputs.push(r.stdout, r.stderr);
    return { ...r, sent: slow.requests().map((q) => q.query.phone_number) };
  } finally {
    await slow.close();
  }
}

describe('Ctrl-C', () => {
  it('lets the lookup in flight finish and be shown, sends nothing more, and exits 130', async () => {
    const r = await checkInterrupted(1, 150);
    expect(r.code, r.stderr).toBe(130);
    // The first lookup was in flight (and charged): its answer is shown, not lost.
    expect(r.stdout).toMatch(/^callable {5}\+1 202 555 0100/);
    expect(r.stderr).toContain('interrupted; not sent (2): +12025550101, +12025550102');
    expect(r.sent).toEqual(['+12025550100']);
  });

  it('a second one drops the lookup in flight at once, says it may have been charged, sends nothing more, and exits 130', async () => {
    const r = await checkInterrupted(2, 400);
    expect(r.code, r.stderr).toBe(130);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('interrupted; not sent (2): +12025550101, +12025550102');
    expect(r.stderr).toContain('3 numbers: 1 not answered, 2 not sent');
    expect(r.stderr).toContain('stopped at once: a lookup in flight may have been charged');
    // Dropping the connection is not a network failure, nor a bug.
    expect(r.stderr).not.toMatch(/cannot reach|internal error/);
    expect(r.sent).toEqual(['+12025550100']);
  });
});

describe('--verbose', () => {
  it('one line per request with Bearer ***, never the key', async () => {
    const r = await dnc(['--verbose', 'check', '+12025550991']);
    expect(r.code).toBe(0);
    const lines = r.stderr.split('\n').filter((l) => l.startsWith('→ GET /check_phone_number'));
    expect(lines).toHaveLength(3);
    for (const line of lines) expect(line).toContain('authorization: Bearer ***');
    expect(r.stderr).not.toContain(KEY);
  });

  it('DNC_VERBOSE=1 does the same, and errors under --verbose keep the key out too', async () => {
    const r = await dnc(['check', '+12025550100'], { env: { DNC_VERBOSE: '1', DNC_API_KEY: `${KEY}x` } });
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('Bearer ***');
    expect(r.stderr).not.toContain(KEY);
  });
});
