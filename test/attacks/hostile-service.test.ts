// dnc against a service that answers like the real one, but wrong (bench/hostile-service.mjs): every answer is judged
// before it counts (src/service/answers.ts), an answer about the request is never a verdict about a number, and
// --json speaks on every exit. Issue 24's cases, each failing without its fix.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs module shared with the soak (bench/soak.mjs), typed by use.
import { honestDoNotCall } from '../../bench/hostile-service.mjs';
import { runDnc } from '../helpers/cli.js';
import { hostileWorld } from './hostile-world.js';

const world = hostileWorld();
const { machine, list, rowsOf } = world;

describe('a verdict needs a boolean do_not_call about the very number sent, with a believable id, time and cost', () => {
  const cases = [
    'no-verdict',
    'null-verdict',
    'string-verdict',
    'other-number',
    'correlation-mismatch',
    'timestamp-future',
    'timestamp-shape',
    'negative-cost',
    'absurd-cost',
    'cost-mismatch',
    // Issue 46: another register's answer, a verdict given twice, a body far beyond the limit.
    'other-country',
    'repeated-verdict',
    'huge-body',
    'huge-body-chunked',
  ];

  it.each(cases)(
    '%s: check says no verdict (exit 6, even with --fail-on-dnc), caches nothing; an honest rerun looks it up',
    async (behaviour) => {
      const m = machine();
      // An odd last digit: honestly callable, so a wrong "callable" would pass unseen.
      const number = '+12025550107';
      world.svc.setBehaviour(behaviour);
      const bad = await runDnc(['check', number, '--json', '--fail-on-dnc'], { env: m.env });
      expect(bad.code, bad.stderr).toBe(6);
      const line = JSON.parse(bad.stdout) as Record<string, unknown> & {
        dnc_error: { code: string; exit_status: number };
      };
      expect(line.dnc_error).toMatchObject({ code: 'E_BAD_RESPONSE', exit_status: 6 });
      expect(bad.stderr).toContain('no verdict');
      // Nothing was cached: the same machine asks again rather than reuse the refused answer.
      world.svc.setBehaviour('honest');
      const before = world.svc.lookups().length;
      const good = await runDnc(['check', number, '--json', '--reuse-within', '30d'], { env: m.env });
      expect(good.code, good.stderr).toBe(0);
      expect(world.svc.lookups().length).toBe(before + 1);
      expect(JSON.parse(good.stdout)).toMatchObject({ do_not_call: false, phone_number: number });
    },
  );

  it.each(['null-verdict', 'other-country', 'repeated-verdict'])(
    '%s: a batch writes such answers failed/bad_response, never callable; --reuse-within later reuses none of them',
    async (behaviour) => {
      const m = machine();
      const numbers = ['+12025550111', '+12025550113', '+12025550115'];
      const input = list(m.dir, numbers);
      world.svc.setBehaviour(behaviour);
      const out = path.join(m.dir, 'out.csv');
      const r = await runDnc(['batch', input, '-o', out], { env: m.env });
      expect(r.code, r.stderr).toBe(7);
      expect(rowsOf(out).map((x) => [x.dnc_result, x.dnc_error_code])).toEqual(
        numbers.map(() => ['failed', 'bad_response']),
      );
      world.svc.setBehaviour('honest');
      const before = world.svc.lookups().length;
      const again = await runDnc(['batch', input, '-o', path.join(m.dir, 'again.csv'), '--reuse-within', '30d'], {
        env: m.env,
      });
      expect(again.code, again.stderr).toBe(0);
      expect(world.svc.lookups().length - before).toBe(numbers.length);
      expect(rowsOf(path.join(m.dir, 'again.csv')).map((x) => x.dnc_result)).toEqual(numbers.map(() => 'callable'));
    },
  );
});

describe('a negative or absurd cost is never learned; --max-credits counts the highest cost known', () => {
  it.each(['negative-cost', 'absurd-cost'])(
    '%s: --max-credits 5 sends 5 lookups of 50, and the credits used are 5',
    async (behaviour) => {
      const m = machine();
      const numbers = Array.from({ length: 50 }, (_, i) => `+1202555${String(2000 + i)}`);
      const input = list(m.dir, numbers);
      world.svc.setBehaviour(behaviour);
      const before = world.svc.lookups().length;
      const r = await runDnc(['batch', input, '-o', path.join(m.dir, 'out.csv'), '--max-credits', '5', '--json'], {
        env: m.env,
      });
      expect(r.code, r.stderr).toBe(5);
      expect(world.svc.lookups().length - before).toBe(5);
      expect(JSON.parse(r.stdout)).toMatchObject({
        credits_used: 5,
        stopped_reason: 'budget_reached',
        failed: 5,
        not_checked: 45,
      });
    },
  );
});

describe('an answer about the request is not a verdict about a number', () => {
  it('a reseller key without --forwarded-host: check, batch and usage exit 4 naming --forwarded-host; the fixed rerun looks the rows up', async () => {
    const m = machine();
    world.svc.setBehaviour('reseller-400');
    const check = await runDnc(['check', '+12025550100'], { env: m.env });
    const usage = await runDnc(['usage'], { env: m.env });
    const numbers = ['+12025550120', '+12025550121', '+12025550122'];
    const input = list(m.dir, numbers);
    const out = path.join(m.dir, 'out.csv');
    const batch = await runDnc(['batch', input, '-o', out, '--json'], { env: m.env });
    for (const r of [check, usage, batch]) {
      expect(r.code, r.stderr).toBe(4);
      expect(r.stderr).toContain('E_RESELLER_HEADER');
      expect(r.stderr).toMatch(/--forwarded-host HOST, DNC_FORWARDED_HOST/);
    }
    expect(JSON.parse(batch.stdout)).toMatchObject({
      stopped_reason: 'auth_failed',
      error: { code: 'E_RESELLER_HEADER', exit_status: 4 },
      not_checked: 3,
    });
    expect(rowsOf(out).map((x) => x.dnc_result)).toEqual(['not_checked', 'not_checked', 'not_checked']);
    const unfit = await runDnc(['verify', out], { env: m.env });
    expect(unfit.code).toBe(3);
    const before = world.svc.lookups().length;
    const fixed = await runDnc(['batch', input, '-o', out], {
      env: { ...m.env, DNC_FORWARDED_HOST: 'client.example' },
    });
    expect(fixed.code, fixed.stderr).toBe(0);
    expect(world.svc.lookups().slice(before)).toEqual(numbers);
    expect(rowsOf(out).map((x) => x.dnc_result)).toEqual(
      numbers.map((p) => (honestDoNotCall(p) ? 'do_not_call' : 'callable')),
    );
    expect((await runDnc(['verify', out], { env: m.env })).code).toBe(0);
  });

  it('any other 400 stops the batch before a verdict is written (exit 2, configuration); nothing is invalid', async () => {
    const m = machine();
    world.svc.setBehaviour('generic-400');
    const input = list(m.dir, ['+12025550130', '+12025550131']);
    const out = path.join(m.dir, 'out.csv');
    const r = await runDnc(['batch', input, '-o', out, '--json', '--concurrency', '1'], { env: m.env });
    expect(r.code, r.stderr).toBe(2);
    expect(JSON.parse(r.stdout)).toMatchObject({
      stopped_reason: 'configuration',
      invalid: 0,
      not_checked: 2,
      error: { code: 'E_BAD_REQUEST' },
    });
    expect(rowsOf(out).map((x) => x.dnc_result)).toEqual(['not_checked', 'not_checked']);
  });

  it.each(['other-country', 'repeated-verdict'])(
    '%s: a 202 receipt about another register or repeating a field starts nothing: check exits 6, no verdict',
    async (behaviour) => {
      const m = machine();
      world.svc.setBehaviour(behaviour);
      const r = await runDnc(
        ['check', '+61412345001', '--webhook-url', 'https://hooks.public-receiver.net/dnc', '--json'],
        {
          env: m.env,
        },
      );
      expect(r.code, r.stderr).toBe(6);
      expect(JSON.parse(r.stdout)).toMatchObject({ dnc_error: { code: 'E_BAD_RESPONSE' } });
      expect(r.stderr).toMatch(behaviour === 'other-country' ? /not the country of \+61412345001/ : /given twice/);
    },
  );

  it('a 400 for the webhook URL exits 2 in check as in batch; a 403 for webhooks disabled says so', async () => {
    const m = machine();
    const hook = ['--webhook-url', 'https://hooks.public-receiver.net/dnc'];
    world.svc.setBehaviour('webhook-url-400');
    const url = await runDnc(['check', '+61412345001', ...hook], { env: m.env });
    expect(url.code, url.stderr).toBe(2);
    expect(url.stderr).toContain('E_WEBHOOK_URL');
    world.svc.setBehaviour('webhooks-disabled-403');
    const off = await runDnc(['check', '+61412345001', ...hook, '--json'], { env: m.env });
    expect(off.code, off.stderr).toBe(4);
    expect(off.stderr).toContain('webhook lookups are disabled for this account');
    expect(JSON.parse(off.stdout)).toMatchObject({
      error: 'webhooks are disabled for this account',
      http_status: 403,
      dnc_error: { code: 'E_WEBHOOKS_DISABLED', exit_status: 4 },
    });
  });
});

describe('--json on every exit', () => {
  it('batch prints its summary with an error member on exits 2, 3, 4 and 6', async () => {
    const m = machine();
    const input = list(m.dir, ['+12025550140']);
    const cases: Array<[string[], Record<string, string>, number, string]> = [
      [['--concurrency', '0'], {}, 2, 'E_USAGE'],
      [['--column', 'nope'], {}, 2, 'E_COLUMN_NOT_FOUND'],
      [[], { DNC_API_KEY: 'wrong-key-123456' }, 4, 'E_AUTH_FORBIDDEN'],
      [[], { DNC_BASE_URL: 'http://127.0.0.1:9' }, 6, 'E_NETWORK'],
    ];
    for (const [flags, env, code, errorCode] of cases) {
      const r = await runDnc(['batch', input, '-o', path.join(m.dir, `out-${code}.csv`), '--json', ...flags], {
        env: { ...m.env, ...env },
      });
      expect(r.code, `${flags.join(' ')} ${r.stderr}`).toBe(code);
      const summary = JSON.parse(r.stdout) as Record<string, unknown> & { error: Record<string, unknown> };
      expect(Object.keys(summary)).toEqual(
        expect.arrayContaining([
          'input',
          'output',
          'rows',
          'callable',
          'not_checked',
          'credits_used',
          'stopped_reason',
          'error',
        ]),
      );
      expect(summary.error).toMatchObject({ code: errorCode, exit_status: code });
      expect(typeof summary.error.message).toBe('string');
    }
    const empty = path.join(m.dir, 'empty.csv');
    writeFileSync(empty, '');
    const r3 = await runDnc(['batch', empty, '--json'], { env: m.env });
    expect(r3.code).toBe(3);
    expect(JSON.parse(r3.stdout)).toMatchObject({
      stopped_reason: 'configuration',
      error: { code: 'E_INPUT_EMPTY', exit_status: 3 },
    });
  });

  it('other commands print {"error": …} on stdout when they would print nothing there', async () => {
    const m = machine();
    const cases: Array<[string[], number, string]> = [
      [['usage', '--json', '--periods', '0'], 2, 'E_USAGE'],
      [['check', 'not-a-number', '--json'], 3, 'E_INVALID_NUMBER'],
      [['verify', path.join(m.dir, 'missing.csv'), '--json'], 3, 'E_INPUT_MISSING'],
    ];
    for (const [argv, code, errorCode] of cases) {
      const r = await runDnc(argv, { env: m.env });
      expect(r.code, `${argv.join(' ')}: ${r.stderr}`).toBe(code);
      expect(JSON.parse(r.stdout), argv.join(' ')).toEqual({
        error: expect.objectContaining({ code: errorCode, exit_status: code }),
      });
    }
    const usage = await runDnc(['usage', '--json'], { env: { ...m.env, DNC_API_KEY: 'wrong-key-123456' } });
    expect(usage.code).toBe(4);
    expect(JSON.parse(usage.stdout).error.code).toBe('E_AUTH_FORBIDDEN');
  });
});

describe('supported countries as the service names them', () => {
  it('after a 422 for FR, only FR numbers are refused locally; +44 and +1 regions other than GB and US are sent', async () => {
    const m = machine();
    world.svc.setBehaviour('unsupported-fr');
    // Guernsey (GG), Jersey (JE), Isle of Man (IM), Canada (CA), Puerto Rico (PR): libphonenumber's regions, the
    // service's GB and US calling codes.
    const others = ['+447781123457', '+447797123457', '+447624123457', '+14165550123', '+17875550123'];
    const numbers = ['+33612345678', ...others, '+33612345679'];
    const input = list(m.dir, numbers);
    const out = path.join(m.dir, 'out.csv');
    const before = world.svc.lookups().length;
    const r = await runDnc(['batch', input, '-o', out, '--concurrency', '1'], { env: m.env });
    expect(r.code, r.stderr).toBe(0);
    expect(world.svc.lookups().slice(before)).toEqual(numbers.slice(0, -1));
    const rows = rowsOf(out);
    expect(rows.map((x) => x.dnc_result)).toEqual([
      'unsupported_country',
      ...others.map((p) => (honestDoNotCall(p) ? 'do_not_call' : 'callable')),
      'unsupported_country',
    ]);
    // One wording for both: the 422's and the local refusal's.
    expect(rows[0]!.dnc_error).toBe('the service does not cover FR (422; supported: US, GB, DE, AU)');
    expect(rows.at(-1)!.dnc_error).toBe(rows[0]!.dnc_error);
    expect((await runDnc(['check', '+447781123456'], { env: m.env })).code).toBe(0);
  });
});

describe('the rest of the request', () => {
  it('a usage page giving a field twice is refused (E_BAD_RESPONSE, exit 6), not read as its last value', async () => {
    const m = machine();
    world.svc.setBehaviour('usage-repeated');
    const r = await runDnc(['usage', '--json'], { env: m.env });
    expect(r.code, r.stderr).toBe(6);
    expect(JSON.parse(r.stdout).error).toMatchObject({ code: 'E_BAD_RESPONSE', exit_status: 6 });
    expect(r.stderr).toMatch(/field "data\[\]\.credits_remaining" is given twice/);
  });

  it('usage --id sends an int64 above 2^53 exactly', async () => {
    const m = machine();
    await runDnc(['usage', '--id', '9007199254740993'], { env: m.env });
    expect(world.svc.requests.at(-1)!.query.id).toBe('9007199254740993');
  });

  it('a key given as "Bearer KEY" is sent as Bearer KEY, never Bearer Bearer KEY', async () => {
    const m = machine({ DNC_API_KEY: `Bearer ${world.svc.apiKey}` });
    const r = await runDnc(['check', '+12025550101'], { env: m.env });
    expect(r.code, r.stderr).toBe(0);
    expect(world.svc.requests.at(-1)!.headers.authorization).toBe(`Bearer ${world.svc.apiKey}`);
  });

  it('a client timeout is an unanswered send in that run already: failed/unanswered_send, exit 6, not sent again', async () => {
    const m = machine();
    world.svc.setBehaviour('slow');
    const input = list(m.dir, ['+12025550150']);
    const out = path.join(m.dir, 'out.csv');
    const r = await runDnc(['batch', input, '-o', out, '--timeout', '200', '--json'], { env: m.env });
    expect(r.code, r.stderr).toBe(6);
    expect(JSON.parse(r.stdout)).toMatchObject({
      failed: 1,
      not_checked: 0,
      stopped_reason: 'service_failure',
      unanswered_sends: 1,
    });
    expect(rowsOf(out)[0]).toMatchObject({ dnc_result: 'failed', dnc_error_code: 'unanswered_send' });
    world.svc.setBehaviour('honest');
    const before = world.svc.lookups().length;
    const again = await runDnc(['batch', input, '-o', out], { env: m.env });
    expect(again.code).toBe(7);
    expect(world.svc.lookups().length).toBe(before);
  });

  it('check --json: a service error text with a line break never starts a line of its own on stderr', async () => {
    const m = machine();
    world.svc.setBehaviour('newline-error');
    const r = await runDnc(['check', '+12025550102', '--json'], { env: m.env });
    expect(r.stderr).not.toMatch(/^dnc: error \[E_FORGED\]/m);
    expect(r.stderr).toContain('billing failed\\ndnc: error [E_FORGED]');
  });
});
