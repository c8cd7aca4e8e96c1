// `dnc usage` in-process against a loopback stub serving the fixtures by scenario: rendering, paging, refusals, errors.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runDnc } from '../helpers/cli.js';

const fixture = (name: string) => readFileSync(new URL(`../../fixtures/usage/${name}`, import.meta.url), 'utf8');
const json = (name: string): unknown => JSON.parse(fixture(`${name}.json`));

interface Seen {
  path: string;
  query: Record<string, string>;
  authorization: string | undefined;
  forwardedHost: string | undefined;
}
type Reply = { status: number; body: unknown };
type Handler = (req: Seen) => Reply;

let server: http.Server;
let baseUrl: string;
let seen: Seen[] = [];
let handler: Handler = () => ({ status: 500, body: { error: 'no handler' } });

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://stub');
    const s: Seen = {
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      authorization: req.headers.authorization,
      forwardedHost: req.headers['x-forwarded-host'] as string | undefined,
    };
    seen.push(s);
    const reply = handler(s);
    res.writeHead(reply.status, { 'content-type': 'application/json' });
    res.end(typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
afterEach(() => {
  seen = [];
  handler = () => ({ status: 500, body: { error: 'no handler' } });
});

const KEY = 'sk_test_usage_0123456789';

/** Streams are 100 columns wide without colour (createTestIO's defaults), as the expected outputs were rendered. */
function dnc(args: string[], options: { tty?: boolean; key?: string; global?: string[] } = {}) {
  // The key as users are told to give it (--api-key on the command line is warned of).
  const argv = ['--base-url', baseUrl, ...(options.global ?? []), 'usage', ...args];
  return runDnc(argv, { tty: options.tty, env: { DNC_API_KEY: options.key ?? KEY } });
}

/** v2 answers by cursor: none → page 1, `cur-page-2` → page 2, … */
const manyPages: Handler = (req) => {
  if (req.path !== '/v2/usage_stats') return { status: 404, body: { error: 'not found' } };
  const page = req.query.cursor === undefined ? 1 : Number(req.query.cursor.replace('cur-page-', ''));
  return { status: 200, body: json(`many-periods-page-${page}`) };
};
const serve =
  (name: string): Handler =>
  () => ({ status: 200, body: json(name) });

describe('dnc usage: what it asks for', () => {
  it('asks for the latest billing period by default and prints the piped records', async () => {
    handler = serve('monthly-plan');
    const r = await dnc([]);
    expect(r.code).toBe(0);
    expect(seen).toEqual([
      { path: '/v2/usage_stats', query: {}, authorization: `Bearer ${KEY}`, forwardedHost: undefined },
    ]);
    expect(r.stdout).toBe(fixture('expected-monthly-plan.tsv'));
  });

  it('renders tables on a terminal (width 100, colour off) as in the expected output', async () => {
    for (const name of ['monthly-plan', 'annual-plan', 'negative-remaining', 'unallocated-usage']) {
      handler = serve(name);
      const r = await dnc([], { tty: true });
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(fixture(`expected-${name}.txt`));
    }
  });

  it('passes --periods, --id and --cursor as the service names them', async () => {
    handler = serve('monthly-plan');
    expect((await dnc(['--periods', '12'])).code).toBe(0);
    expect((await dnc(['--id', '1042'])).code).toBe(0);
    expect((await dnc(['--cursor', 'abc=='])).code).toBe(0);
    expect((await dnc(['--periods', '5', '--cursor', 'abc=='])).code).toBe(0);
    expect(seen.map((s) => s.query)).toEqual([
      { num_billing_periods: '12' },
      { id: '1042' },
      { cursor: 'abc==' },
      { num_billing_periods: '5', cursor: 'abc==' },
    ]);
  });

  it('--json prints the body as received, also for --id (a data array)', async () => {
    handler = serve('annual-plan');
    const r = await dnc(['--id', '77'], { global: ['--json'] });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(json('annual-plan'));
    expect(r.stdout.trimEnd().split('\n')).toHaveLength(1);
  });

  it('sends X-Forwarded-Host when configured, and accepts a portal JWT as the key', async () => {
    handler = serve('monthly-plan');
    const jwt = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyLTEiLCJvcmciOiJhY21lIn0.c2lnbmF0dXJlLXBhcnQ';
    const r = await dnc([], { key: jwt, global: ['--forwarded-host', 'calls.example.com'] });
    expect(r.code).toBe(0);
    expect(seen[0]!.authorization).toBe(`Bearer ${jwt}`);
    expect(seen[0]!.forwardedHost).toBe('calls.example.com');
  });
});

describe('dnc usage --all', () => {
  it('follows next_cursor to the end and merges every period into one document', async () => {
    handler = manyPages;
    const r = await dnc(['--all'], { global: ['--json'] });
    expect(r.code).toBe(0);
    expect(seen.map((s) => s.query)).toEqual([
      { num_billing_periods: '100' },
      { num_billing_periods: '100', cursor: 'cur-page-2' },
      { num_billing_periods: '100', cursor: 'cur-page-3' },
    ]);
    const pages = [1, 2, 3].map((i) => json(`many-periods-page-${i}`) as { customer_name: string; data: unknown[] });
    const expected = { customer_name: pages[0]!.customer_name, data: pages.flatMap((p) => p.data), next_cursor: null };
    expect(JSON.parse(r.stdout)).toEqual(expected);
    expect(Object.keys(JSON.parse(r.stdout))).toEqual(['customer_name', 'data', 'next_cursor']);
  });

  it('uses --periods as the page size and starts from --cursor', async () => {
    handler = manyPages;
    const r = await dnc(['--all', '--periods', '10', '--cursor', 'cur-page-2']);
    expect(r.code).toBe(0);
    expect(seen.map((s) => s.query)).toEqual([
      { num_billing_periods: '10', cursor: 'cur-page-2' },
      { num_billing_periods: '10', cursor: 'cur-page-3' },
    ]);
    const periods = r.stdout.split('\n').filter((l) => l.startsWith('period\t'));
    expect(periods).toHaveLength(15);
    expect(r.stdout).not.toContain('next_cursor');
  });

  it('renders every period of every page on a terminal, without a "more" hint', async () => {
    handler = manyPages;
    const r = await dnc(['--all'], { tty: true });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('25 billing periods, newest first');
    expect(r.stdout.match(/│ Billing period +│/g)).toHaveLength(25);
    expect(r.stdout).not.toContain('--cursor');
  });

  it('stops with exit 6 when the service repeats a cursor, after exactly the pages that brought news', async () => {
    handler = serve('repeating-cursor');
    const r = await dnc(['--all']);
    expect(r.code).toBe(6);
    expect(r.stderr).toContain('[E_CURSOR_REPEATED]');
    expect(r.stderr).toContain("'cur-stuck'");
    expect(seen.map((s) => s.query.cursor)).toEqual([undefined, 'cur-stuck']);
    expect(r.stdout).toBe('');
  });

  it('counts the starting --cursor as seen', async () => {
    handler = serve('repeating-cursor');
    const r = await dnc(['--all', '--cursor', 'cur-stuck']);
    expect(r.code).toBe(6);
    expect(seen).toHaveLength(1);
  });
});

describe('dnc usage: refused locally, nothing sent', () => {
  const refused: string[][] = [
    ['--id', '1', '--periods', '2'],
    ['--id', '1', '--cursor', 'x'],
    ['--id', '1', '--all'],
    ['--lifetime', '--id', '1'],
    ['--lifetime', '--periods', '1'],
    ['--lifetime', '--cursor', 'x'],
    ['--lifetime', '--all'],
    ['--periods', '0'],
    ['--periods', '101'],
    ['--periods', '-1'],
    ['--periods', '1.5'],
    ['--periods', 'ten'],
    ['--periods', '1e2'],
    ['--id', '0'],
    ['--id', '-3'],
    ['--id', '2.0'],
    ['--id', 'abc'],
    ['--cursor', ''],
    ['--all', '--periods', '500'],
    ['--bogus'],
  ];
  for (const args of refused) {
    it(`usage ${args.join(' ')} → exit 2`, async () => {
      handler = serve('monthly-plan');
      const r = await dnc(args);
      expect(r.code).toBe(2);
      expect(r.stderr).not.toBe('');
      expect(r.stdout).toBe('');
      expect(seen).toEqual([]);
    });
  }

  it('names the conflicting options', async () => {
    const r = await dnc(['--id', '3', '--all', '--cursor', 'c']);
    // Commander refuses the first conflict it meets, in dnc's format, with where to read the usage.
    expect(r.stderr).toMatch(
      /dnc: error \[E_USAGE\]: option '--id <id>' cannot be used with option '--(all|cursor <cursor>)'\n  hint: see 'dnc usage --help' for the usage/,
    );
    expect((await dnc(['--lifetime', '--periods', '2'])).stderr).toContain(
      "option '--lifetime' cannot be used with option '--periods <n>'",
    );
    expect((await dnc(['--reconcile', '--all'])).code).toBe(2);
    expect((await dnc(['--periods', '101'])).stderr).toContain('--periods must be from 1 to 100, got 101');
  });

  it('accepts the bounds', async () => {
    handler = serve('monthly-plan');
    expect((await dnc(['--periods', '1'])).code).toBe(0);
    expect((await dnc(['--periods', '100'])).code).toBe(0);
    expect((await dnc(['--id', '1'])).code).toBe(0);
    expect(seen).toHaveLength(3);
  });
});

describe('dnc usage: errors of the service', () => {
  const error =
    (status: number, text: string): Handler =>
    () => ({ status, body: { error: text } });

  it('400 → exit 2 with the service text', async () => {
    handler = error(400, 'invalid cursor');
    const r = await dnc(['--cursor', 'stale']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('invalid cursor');
    expect(r.stderr).toContain('hint: the cursor may be stale');
    expect(seen).toHaveLength(1);
  });

  it('401 and 403 → exit 4, not retried', async () => {
    handler = error(401, 'missing API key');
    let r = await dnc([]);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('missing API key');
    handler = error(403, 'no active organization membership');
    r = await dnc([]);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('no active organization membership');
    expect(seen).toHaveLength(2);
  });

  it('a portal JWT refused gets a hint about the JWT', async () => {
    handler = error(401, 'portal JWT expired');
    const r = await dnc([], { key: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.sig' });
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('portal JWT');
    expect(r.stderr).toContain('sign in to the portal again');
  });

  it('a portal JWT without membership, or sent to the legacy endpoint, gets a hint that says so', async () => {
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.sig';
    handler = error(403, 'no active organization membership');
    let r = await dnc([], { key: jwt });
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('(403): no active organization membership');
    expect(r.stderr).toContain(
      'hint: this key looks like a portal JWT: its user needs an active organization membership',
    );
    handler = error(403, 'invalid API key');
    r = await dnc(['--lifetime'], { key: jwt });
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('the lifetime endpoint takes API keys only');
    expect(seen.map((s) => s.authorization)).toEqual([`Bearer ${jwt}`, `Bearer ${jwt}`]);
  });

  it('404 → exit 2 with a hint', async () => {
    handler = error(404, 'billing period not found');
    const r = await dnc(['--id', '999999']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('billing period not found');
    expect(r.stderr).toContain('hint:');
    expect(seen).toHaveLength(1);
  });

  it('500 → exit 6 after the client retries (usage is free to retry)', async () => {
    handler = error(500, 'unable to process request');
    const r = await dnc([], { global: ['--retries', '2'] });
    expect(r.code).toBe(6);
    expect(r.stderr).toContain('unable to process request');
    expect(seen).toHaveLength(3);
  });

  it('a 500 that clears up on a retry is a success', async () => {
    let calls = 0;
    handler = (req) =>
      ++calls === 1 ? { status: 500, body: { error: 'unable to process request' } } : serve('monthly-plan')(req);
    const r = await dnc([]);
    expect(r.code).toBe(0);
    expect(seen).toHaveLength(2);
  });

  it('an answer without the documented shape → exit 6', async () => {
    handler = () => ({ status: 200, body: { customer_name: 'x', data: 'nope', next_cursor: null } });
    const r = await dnc([]);
    expect(r.code).toBe(6);
    expect(r.stderr).toContain('E_BAD_RESPONSE');
  });

  it('never prints the key', async () => {
    handler = error(403, `invalid API key ${KEY}`);
    const r = await dnc([], { global: ['--verbose'] });
    expect(r.code).toBe(4);
    expect(r.stderr + r.stdout).not.toContain(KEY);
  });
});

describe('dnc usage --lifetime', () => {
  it('reads the legacy endpoint without parameters; months filled, countries in the service order', async () => {
    handler = serve('legacy-missing-months');
    const r = await dnc(['--lifetime']);
    expect(r.code).toBe(0);
    expect(seen.map((s) => [s.path, s.query])).toEqual([['/usage_stats', {}]]);
    expect(r.stdout).toBe(fixture('expected-legacy-missing-months.tsv'));
    expect(r.stderr).toBe('');
  });

  it('renders on a terminal as in the expected output; --json is the body as received', async () => {
    handler = serve('legacy-missing-months');
    expect((await dnc(['--lifetime'], { tty: true })).stdout).toBe(fixture('expected-legacy-missing-months.txt'));
    const r = await dnc(['--lifetime'], { global: ['--json'] });
    expect(JSON.parse(r.stdout)).toEqual(json('legacy-missing-months'));
  });

  it('warns when total_requests is not the sum of the months', async () => {
    handler = serve('legacy-total-mismatch');
    const r = await dnc(['--lifetime'], { global: ['--json'] });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('total_requests (1000) is not the sum of the monthly counts (950)');
    expect(JSON.parse(r.stdout)).toEqual(json('legacy-total-mismatch'));
  });

  it('shows the legacy 401 and 403 texts as the service gives them', async () => {
    const text401 = 'API key missing: pass it as Authorization: Bearer <YOUR_KEY>';
    handler = () => ({ status: 401, body: { error: text401 } });
    let r = await dnc(['--lifetime']);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(text401);
    handler = () => ({ status: 403, body: { error: 'invalid API key' } });
    r = await dnc(['--lifetime']);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('(403): invalid API key');
  });

  it('500 → exit 6 after retries', async () => {
    handler = () => ({ status: 500, body: { error: 'unable to process request' } });
    const r = await dnc(['--lifetime'], { global: ['--retries', '1'] });
    expect(r.code).toBe(6);
    expect(seen).toHaveLength(2);
  });
});
