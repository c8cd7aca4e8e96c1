// Attacks on `dnc listen` by someone who can reach it: forged, mismatched and conflicting pushes, and wrong paths.
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { REFUSALS_SHOWN_PER_MINUTE } from '../../src/commands/listen.js';
import { isLoopbackHost } from '../../src/listen/loopback.js';
import { defaultPushPath, isUnguessablePath } from '../../src/listen/run.js';
import { runDnc } from '../helpers/cli.js';
import {
  listen,
  post,
  PUSH_PATH,
  readCsv,
  readJournal,
  scratchHome,
  succeededPush,
  waitFor,
  webhookBatch,
  type WebhookBatch,
} from './helpers.js';

let current: WebhookBatch | undefined;
let home: string | undefined;
afterEach(async () => {
  await current?.cleanup();
  current = undefined;
  if (home) rmSync(home, { recursive: true, force: true });
  home = undefined;
});

// AU results are pushed 30 s × 2^(tens digit) × timeScale after the receipt (0.01 here): …5031 in 2.4 s,
// …5093 in 2.6 minutes (never within a test). The last digit decides: odd is on the register.
const SOON_ON_REGISTER = '+61 4 1234 5031';
const NEVER = '+61 4 1234 5093';

async function batchOf(phone: string): Promise<WebhookBatch> {
  current = await webhookBatch([['au', phone]]);
  expect(current.batch.code, current.batch.stderr).toBe(8);
  home = scratchHome();
  return current;
}

function pushRows(
  journal: string,
): Array<{ outcome: string; reason: string | null; peer: string | null; headers: string | null }> {
  const db = new Database(journal, { readonly: true });
  try {
    return db.prepare('SELECT outcome, reason, peer, headers FROM pushes ORDER BY id').all() as Array<{
      outcome: string;
      reason: string | null;
      peer: string | null;
      headers: string | null;
    }>;
  } finally {
    db.close();
  }
}

describe('a forged push before the genuine one', () => {
  it('is a conflict when the genuine verdict arrives: the row is failed (conflicting_pushes), both kept and traced, a warning, nothing cached', async () => {
    const b = await batchOf(SOON_ON_REGISTER);
    const row = readCsv(b.output)[0]!;
    const l = listen(['--results', b.output, '--port', String(b.port)], { cwd: b.dir, home: home! });
    const url = await l.url;
    // The forger knows the number and the correlation id, and claims the number is callable.
    const forged = await post(url, succeededPush(row, { do_not_call: false }));
    expect(forged.status).toBe(200);
    await waitFor('the genuine push', () => readJournal(b.journal).pushes.length === 2);
    await waitFor('OUTPUT.csv rewritten', () => readCsv(b.output)[0]!.dnc_result === 'failed');
    l.interrupts.fire();
    expect(await l.exit, l.io.err()).toBe(0);

    const out = readCsv(b.output)[0]!;
    expect([out.dnc_result, out.dnc_error_code, out.dnc_do_not_call]).toEqual(['failed', 'conflicting_pushes', '']);
    expect(readJournal(b.journal).pushes.map((p) => [p.outcome, JSON.parse(p.body).do_not_call])).toEqual([
      ['applied', false],
      ['conflict', true],
    ]);
    expect(l.io.err()).toMatch(/warning: conflicting pushes for \+61412345031 \(correlation id [0-9a-f-]+\)/);

    const trace = await runDnc(['trace', row.dnc_correlation_id, '--journal', b.journal, '--json'], { homedir: home! });
    expect(trace.code, trace.stderr).toBe(0);
    const traced = JSON.parse(trace.stdout).found[0];
    expect(traced.error_code).toBe('conflicting_pushes');
    expect(
      traced.pushes.map((p: { outcome: string; body: { do_not_call: boolean } }) => [p.outcome, p.body.do_not_call]),
    ).toEqual([
      ['applied', false],
      ['conflict', true],
    ]);
    const human = await runDnc(['trace', row.dnc_correlation_id, '--journal', b.journal], { homedir: home! });
    expect(human.stdout).toMatch(/push .* succeeded do_not_call=false from 127\.0\.0\.1, applied/);
    expect(human.stdout).toMatch(/push .* succeeded do_not_call=true from 127\.0\.0\.1, conflict/);

    // Neither verdict may be reused by --reuse-within.
    const cache = path.join(home!, '.cache', 'dnc', 'results.sqlite');
    if (existsSync(cache)) {
      const db = new Database(cache, { readonly: true });
      expect(db.prepare('SELECT COUNT(*) AS n FROM verdicts WHERE e164 = ?').get('+61412345031')).toEqual({ n: 0 });
      db.close();
    }
  });

  it('takes a verdict cached by an earlier run back out of the results cache when the conflict shows', async () => {
    const b = await batchOf(SOON_ON_REGISTER);
    const row = readCsv(b.output)[0]!;
    // First run: only the forged push, which nothing yet contradicts.
    // The results cache is scoped by the account: this listener is given the key (the batch ran without a home).
    const first = listen(['--results', b.output, '--port', '0'], { cwd: b.dir, home: home!, env: b.env });
    expect((await post(await first.url, succeededPush(row))).status).toBe(200);
    await waitFor('OUTPUT.csv rewritten', () => readCsv(b.output)[0]!.dnc_result === 'callable');
    first.interrupts.fire();
    expect(await first.exit, first.io.err()).toBe(0);
    const cache = path.join(home!, '.cache', 'dnc', 'results.sqlite');
    const cached = () => {
      const db = new Database(cache, { readonly: true });
      try {
        return (db.prepare('SELECT COUNT(*) AS n FROM verdicts WHERE e164 = ?').get('+61412345031') as { n: number }).n;
      } finally {
        db.close();
      }
    };
    expect(cached()).toBe(1);
    // Second run on the batch's port: the service's retries of the genuine push arrive.
    const second = listen(['--results', b.output, '--port', String(b.port)], { cwd: b.dir, home: home!, env: b.env });
    await second.url;
    await waitFor('the genuine push', () => readJournal(b.journal).pushes.length === 2, 30_000);
    await waitFor('OUTPUT.csv rewritten', () => readCsv(b.output)[0]!.dnc_result === 'failed');
    second.interrupts.fire();
    expect(await second.exit, second.io.err()).toBe(0);
    expect(cached()).toBe(0);
  });
});

describe('a row answered synchronously (issue 38)', () => {
  it('two forged pushes under its correlation id are kept as evidence and change nothing', async () => {
    // The US row is answered in the response (no --webhook-all); the AU row keeps the batch pending.
    current = await webhookBatch(
      [
        ['us', '+1 202 555 0122'],
        ['au', NEVER],
      ],
      { webhookAll: false },
    );
    expect(current.batch.code, current.batch.stderr).toBe(8);
    home = scratchHome();
    const b = current;
    const before = readCsv(b.output)[0]!;
    expect([before.dnc_result, before.dnc_phone_e164]).toEqual(['callable', '+12025550122']);
    expect(before.dnc_correlation_id).not.toBe('');
    const l = listen(['--results', b.output, '--port', '0'], { cwd: b.dir, home: home! });
    const url = await l.url;
    // The correlation id is printed in the results: whoever reads them can forge under it.
    const forged = { country: 'US', dnc_list_source: 'https://sandbox.dnc.invalid/registers/US' };
    expect((await post(url, succeededPush(before, { ...forged, do_not_call: true }))).status).toBeLessThan(500);
    expect((await post(url, succeededPush(before, { ...forged, do_not_call: false }))).status).toBeLessThan(500);
    await waitFor('both pushes kept', () => readJournal(b.journal).pushes.length === 2);
    l.interrupts.fire();
    // Interrupted with the AU row still pending: 130, as any listener stopped before its batch is done.
    expect(await l.exit, l.io.err()).toBe(130);
    const after = readCsv(b.output)[0]!;
    expect([after.dnc_result, after.dnc_error_code, after.dnc_do_not_call]).toEqual(['callable', '', 'false']);
    const rows = pushRows(b.journal);
    expect(rows.map((r) => r.outcome)).toEqual(['orphan', 'refused']);
    expect(rows[1]!.reason).toContain('answered in the response to its lookup');
  });
});

describe('repeats and mismatches', () => {
  it('acknowledges an identical repeat quietly (a lost 2xx), once in the row', async () => {
    const b = await batchOf(NEVER);
    const row = readCsv(b.output)[0]!;
    const l = listen(['--results', b.output, '--port', '0'], { cwd: b.dir, home: home! });
    const url = await l.url;
    const body = succeededPush(row, { do_not_call: true });
    expect((await post(url, body)).status).toBe(200);
    const again = await post(url, body);
    expect(again.status).toBe(200);
    expect(JSON.parse(again.text)).toEqual({ received: true, duplicate: true });
    await waitFor('OUTPUT.csv rewritten', () => readCsv(b.output)[0]!.dnc_result === 'do_not_call');
    l.interrupts.fire();
    expect(await l.exit).toBe(0);
    expect(l.io.err()).not.toMatch(/conflict|warning|refused/i);
    expect(readJournal(b.journal).pushes.map((p) => [p.outcome, p.duplicates])).toEqual([['applied', 1]]);
  });

  it('refuses every push that contradicts the lookup sent or the service rules (4xx), keeps each as evidence, and still takes the right one', async () => {
    const b = await batchOf(NEVER);
    const row = readCsv(b.output)[0]!;
    const l = listen(['--results', b.output, '--port', '0'], { cwd: b.dir, home: home! });
    const url = await l.url;
    const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
    const failed = (code: string, charged: boolean) => ({
      status: 'failed',
      error_code: code,
      error: 'x',
      charged,
      correlation_id: row.dnc_correlation_id,
      phone_number: row.dnc_phone_e164,
      country: 'AU',
    });
    const attacks: Array<[string, unknown, Record<string, string>, RegExp]> = [
      [
        'another number',
        succeededPush(row, { phone_number: '+61412345099' }),
        {},
        /phone_number \+61412345099 is not the number sent/,
      ],
      ['another country', succeededPush(row, { country: 'NZ' }), {}, /country NZ is not the country/],
      [
        'a timestamp in 2099',
        succeededPush(row, { timestamp: '2099-01-01T00:00:00.000000+00:00' }),
        {},
        /later than the push's arrival/,
      ],
      ['a timestamp before the request', succeededPush(row, { timestamp: hourAgo }), {}, /earlier than the request/],
      [
        'a timestamp without an offset',
        succeededPush(row, { timestamp: '2026-11-22T10:00:00' }),
        {},
        /not an ISO 8601 date-time with microseconds and a UTC offset/,
      ],
      [
        'negative credits',
        succeededPush(row, { cost: { credits_used_for_query: -5, total_credits_used: 3, credit_limit: 10 } }),
        {},
        /cost.credits_used_for_query must be a whole number of credits from 0, got -5/,
      ],
      [
        'an http register',
        succeededPush(row, { dnc_list_source: 'http://evil.example/list' }),
        {},
        /dnc_list_source .* is not an https URL/,
      ],
      [
        'a javascript: register',
        succeededPush(row, { dnc_list_source: 'javascript:alert(1)' }),
        {},
        /is not an https URL/,
      ],
      [
        'a success with status 400',
        succeededPush(row),
        { 'x-service-status': '400' },
        /X-Service-Status 400 does not fit a succeeded lookup/,
      ],
      ['a success not charged', succeededPush(row, { charged: false }), {}, /charged is not true/],
      [
        'an uncharged invalid_phone_number',
        failed('invalid_phone_number', false),
        {},
        /invalid_phone_number is always charged/,
      ],
      ['a charged lookup_expired', failed('lookup_expired', true), {}, /lookup_expired is always refunded/],
      ['a pushed upstream_timeout', failed('upstream_timeout', false), {}, /never pushed/],
      ['an error code carrying escape sequences', failed('\u001b[2Jinvalid', true), {}, /is not an error code/],
      ['an error code with spaces and capitals', failed('Invalid Phone', true), {}, /is not an error code/],
      [
        'a phone header that differs',
        succeededPush(row),
        { 'x-service-phone-number': '+61412345099' },
        /X-Service-Phone-Number/,
      ],
      ['a country header that differs', succeededPush(row), { 'x-service-country': 'NZ' }, /X-Service-Country/],
      [
        // Issue 46: JSON.parse keeps the last of a repeated field, which would make it callable.
        'a verdict given twice (true, then false)',
        JSON.stringify(succeededPush(row, { do_not_call: true })).replace(
          '"do_not_call":true',
          '"do_not_call":true,"do_not_call":false',
        ),
        { 'x-service-correlation-id': row.dnc_correlation_id! },
        /field "do_not_call" is given twice/,
      ],
    ];
    for (const [what, body, headers, reason] of attacks) {
      const res = await post(url, body, headers);
      expect(res.status, what).toBeGreaterThanOrEqual(400);
      expect(res.status, what).toBeLessThan(500);
      expect(JSON.parse(res.text).error, what).toMatch(reason);
      expect(readCsv(b.output)[0]!.dnc_result, what).toBe('pending');
    }
    const kept = pushRows(b.journal);
    expect(kept).toHaveLength(attacks.length);
    for (const p of kept) {
      expect(p.outcome).toBe('refused');
      expect(p.peer).toMatch(/127\.0\.0\.1/);
      expect(JSON.parse(p.headers!)).toMatchObject({
        'user-agent': 'Service-Webhooks/1.0',
        'content-type': 'application/json',
      });
    }
    // The refusals are reported as they happen.
    expect(l.io.err()).toMatch(
      /refused POST the push path from 127\.0\.0\.1: 422 phone_number \+61412345099 is not the number sent/,
    );
    // A push that keeps every rule still gets through.
    expect((await post(url, succeededPush(row, { do_not_call: true }))).status).toBe(200);
    await waitFor('OUTPUT.csv rewritten', () => readCsv(b.output)[0]!.dnc_result === 'do_not_call');
    l.interrupts.fire();
    expect(await l.exit).toBe(0);
    expect(readCsv(b.output)[0]!.dnc_credits).toBe('3');
  });
});

describe('clock skew', () => {
  it('allows 5 minutes by default and more with --clock-skew', async () => {
    const b = await batchOf(NEVER);
    const row = readCsv(b.output)[0]!;
    const tenMinutesAhead = new Date(Date.now() + 600_000).toISOString();
    const strict = listen(['--results', b.output, '--port', '0'], { cwd: b.dir, home: home! });
    const refused = await post(await strict.url, succeededPush(row, { timestamp: tenMinutesAhead }));
    expect(refused.status).toBe(422);
    strict.interrupts.fire();
    expect(await strict.exit).toBe(130);
    const lenient = listen(['--results', b.output, '--port', '0', '--clock-skew', '900'], { cwd: b.dir, home: home! });
    expect((await post(await lenient.url, succeededPush(row, { timestamp: tenMinutesAhead }))).status).toBe(200);
    lenient.interrupts.fire();
    expect(await lenient.exit).toBe(0);
    expect(readCsv(b.output)[0]!.dnc_result).toBe('callable');
  });
});

describe('the secret path', () => {
  it('serves pushes on one path only, by default the batch webhook path: every other path gets 404', async () => {
    const b = await batchOf(NEVER);
    const row = readCsv(b.output)[0]!;
    const l = listen(['--results', b.output, '--port', '0'], { cwd: b.dir, home: home! });
    const url = new URL(await l.url);
    expect(url.pathname).toBe(PUSH_PATH);
    for (const p of [
      '/',
      '/hooks',
      `${PUSH_PATH}x`,
      PUSH_PATH.toUpperCase(),
      `${PUSH_PATH}/`,
      '/hooks/../hooks',
      '/%2Fhooks',
    ]) {
      const res = await post(new URL(p, url).toString(), succeededPush(row));
      expect(res.status, p).toBe(404);
    }
    const health = await request(new URL('/healthz', url));
    expect(health.statusCode).toBe(200);
    await health.body.text();
    expect(readJournal(b.journal).pushes).toHaveLength(0);
    l.interrupts.fire();
    expect(await l.exit).toBe(130);
    // Printed at start, never in status lines.
    const lines = l.io.err().split('\n');
    expect(lines.filter((line) => line.includes('listening on') && line.includes(PUSH_PATH))).toHaveLength(1);
    expect(lines.filter((line) => line.startsWith('received') && line.includes(PUSH_PATH))).toHaveLength(0);
  });

  it('shows the first refusals of each minute and counts the rest: a flood does not drown the terminal', async () => {
    const b = await batchOf(NEVER);
    const row = readCsv(b.output)[0]!;
    const l = listen(['--results', b.output, '--port', '0'], { cwd: b.dir, home: home! });
    const url = new URL(await l.url);
    for (let i = 0; i < 35; i++)
      expect((await post(new URL(`/guess/${i}`, url).toString(), succeededPush(row))).status).toBe(404);
    l.interrupts.fire();
    expect(await l.exit).toBe(130);
    const lines = l.io.err().split('\n');
    expect(lines.filter((line) => /^refused POST \/guess\/\d+ from 127\.0\.0\.1: 404/.test(line))).toHaveLength(
      REFUSALS_SHOWN_PER_MINUTE,
    );
    // Requests elsewhere are kept nowhere: the count says no more than that.
    expect(lines).toContain(`… and ${35 - REFUSALS_SHOWN_PER_MINUTE} more refused request(s) elsewhere not shown`);
  });

  it('a flood of 404s elsewhere does not hide refusals on the push path, which never print the secret path', async () => {
    const b = await batchOf(NEVER);
    const row = readCsv(b.output)[0]!;
    const l = listen(['--results', b.output, '--port', '0'], { cwd: b.dir, home: home! });
    const url = new URL(await l.url);
    for (let i = 0; i < 30; i++)
      expect((await post(new URL(`/wrong/${i}`, url).toString(), succeededPush(row))).status).toBe(404);
    for (let i = 0; i < 3; i++)
      expect((await post(url.toString(), succeededPush(row, { phone_number: '+61412345099' }))).status).toBe(422);
    l.interrupts.fire();
    expect(await l.exit).toBe(130);
    const lines = l.io.err().split('\n');
    expect(lines.filter((line) => /^refused POST \/wrong\/\d+ from 127\.0\.0\.1: 404/.test(line))).toHaveLength(
      REFUSALS_SHOWN_PER_MINUTE,
    );
    expect(
      lines.filter((line) =>
        /^refused POST the push path from 127\.0\.0\.1: 422 phone_number \+61412345099 is not the number sent/.test(
          line,
        ),
      ),
    ).toHaveLength(3);
    // The secret path is printed at start only (where it listens, and the webhook URL the batch sent).
    expect(
      lines.filter(
        (line) =>
          line.includes(PUSH_PATH) &&
          !line.includes('listening on') &&
          !line.startsWith('  the batch sent webhook_url'),
      ),
    ).toEqual([]);
  });

  it('refuses a non-loopback --host without --path (exit 2), before listening', async () => {
    const b = await batchOf(NEVER);
    const r = await runDnc(['listen', '--results', b.output, '--host', '0.0.0.0', '--port', '0'], {
      cwd: b.dir,
      homedir: home!,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      '--host 0.0.0.0 is reachable from other machines: give the secret push path with --path',
    );
    expect(r.stderr).not.toContain('listening on');
  });

  it('takes the batch path only when unguessable, generates one when the batch sent none', () => {
    expect(defaultPushPath('https://h.example/hooks/Jr6tQm2yVb0sXw9LkPz3dA', () => '/x')).toEqual({
      path: '/hooks/Jr6tQm2yVb0sXw9LkPz3dA',
      from: 'batch',
    });
    expect(() => defaultPushPath('https://h.example/hook', () => '/hooks/AAAAAAAAAAAAAAAAAAAAAA')).toThrow(
      /webhook path \/hook is guessable/,
    );
    expect(defaultPushPath(null, () => '/hooks/AAAAAAAAAAAAAAAAAAAAAA')).toEqual({
      path: '/hooks/AAAAAAAAAAAAAAAAAAAAAA',
      from: 'random',
    });
    expect(isUnguessablePath('/webhooks/dnc')).toBe(false);
    expect(isUnguessablePath('/hooks/Jr6tQm2yVb0sXw9LkPz3dA')).toBe(true);
    expect(['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost'].every(isLoopbackHost)).toBe(true);
    expect(['::ffff:127.0.0.1', '0:0:0:0:0:0:0:1', '127.255.255.254'].every(isLoopbackHost)).toBe(true);
    // Names other than localhost may resolve anywhere; 128.0.0.1 and 126.255.255.255 sit just outside 127/8.
    expect(
      [
        '0.0.0.0',
        '::',
        '192.168.1.2',
        'example.com',
        '127.0.0.1.example.com',
        '128.0.0.1',
        '126.255.255.255',
        '::2',
        '::ffff:10.0.0.1',
      ].some(isLoopbackHost),
    ).toBe(false);
  });
});
