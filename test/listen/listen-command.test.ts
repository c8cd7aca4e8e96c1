// `dnc listen` in-process: a real webhook batch against the sandbox, pushes over loopback, OUTPUT.csv rewritten.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runDnc } from '../helpers/cli.js';
import { readWorkbookIndependently } from '../helpers/xlsx-oracle.js';
import { waitFor as waitUntil } from '../helpers/wait.js';
import {
  asTheBatch,
  expectedResult,
  listenInProcess,
  PUSH_PATH,
  readCsv,
  readJournal,
  waitFor,
  webhookBatch,
  type WebhookBatch,
} from './helpers.js';

let current: WebhookBatch | undefined;
afterEach(async () => {
  await current?.cleanup();
  current = undefined;
});

async function batchOf(rows: Array<[string, string]>, options: Parameters<typeof webhookBatch>[1] = {}) {
  current = await webhookBatch(rows, options);
  expect(current.batch.code, current.batch.stderr).toBe(8);
  return current;
}

const pendingRows = (file: string) => readCsv(file).filter((r) => r.dnc_result === 'pending');

describe('dnc listen: a webhook batch resolved', () => {
  it('--webhook-all with duplicates and AU results out of order: every row gets its verdict, once', async () => {
    // AU results come 30 s × 2^(tens digit) after the receipt: listed slowest first, they arrive in reverse.
    const rows: Array<[string, string]> = [
      ['au-slow', '+61 4 1234 5023'],
      ['au-mid', '+61 4 1234 5012'],
      ['au-fast', '+61 4 1234 5001'],
      ['us-odd', '+1 202 555 0121'],
      ['us-even', '+1 202 555 0122'],
      ['gb', '+44 20 7946 0123'],
      ['gb-invalid', '+44 20 7946 0990'],
      ['gb-billing', '+44 20 7946 0995'],
      ['us-again', '+1 (202) 555-0121'],
    ];
    const b = await batchOf(rows, { sandbox: { duplicatePushRate: 1 } });
    expect(pendingRows(b.output)).toHaveLength(rows.length);
    const run = listenInProcess(
      ['--json', '--results', b.output, '--port', String(b.port), '--path', PUSH_PATH, '--exit-when-done'],
      { cwd: b.dir },
    );
    expect(await run.listening).toBe(b.url);
    expect(await run.exit, run.io.err()).toBe(0);

    const out = readCsv(b.output);
    expect(out.map((r) => r.name)).toEqual(rows.map(([n]) => n));
    for (const r of out) expect([r.name, r.dnc_result]).toEqual([r.name, expectedResult(r.dnc_phone_e164)]);
    expect(out.find((r) => r.name === 'gb-invalid')!.dnc_error_code).toBe('invalid_phone_number');
    expect(out.find((r) => r.name === 'gb-billing')!.dnc_error_code).toBe('billing_error');
    expect(out.find((r) => r.name === 'au-fast')!.dnc_credits).toBe('3');

    // The AU pushes were sent out of input order (first attempts; retries, if the listener was slow to start, may reorder further).
    const lookups = new Map(b.sandbox.lookups().map((l) => [l.correlationId, l]));
    const firstAttempts = b.sandbox.pushes().filter((p) => p.attempt === 1);
    const auOrder = firstAttempts
      .map((p) => lookups.get(p.correlationId)!.phoneNumber)
      .filter((n) => n.startsWith('+61'));
    expect(auOrder).toEqual(['+61412345001', '+61412345012', '+61412345023']);

    // Exactly one stored push per lookup; every duplicate the listener acknowledged is counted, not applied.
    const journal = readJournal(b.journal);
    const cids = [...new Set(out.map((r) => r.dnc_correlation_id))].sort();
    expect(journal.pushes.map((p) => p.correlation_id).sort()).toEqual(cids);
    expect(journal.pushes.every((p) => p.outcome === 'applied')).toBe(true);
    expect(journal.states).toEqual({ done: cids.length });
    // Duplicates: every deliberate copy the listener acknowledged, plus any retry of a push whose 200 came
    // after the sandbox's reply limit (10 s × 0.01 = 100 ms on a loaded machine); never more than the attempts.
    const attempts = b.sandbox.pushes();
    const acknowledgedCopies = attempts.filter((p) => p.duplicate && p.status === 200).length;
    const duplicates = journal.pushes.reduce((n, p) => n + p.duplicates, 0);
    expect(duplicates).toBeGreaterThanOrEqual(acknowledgedCopies);
    expect(duplicates).toBeLessThanOrEqual(attempts.length - cids.length);

    const summary = JSON.parse(run.io.out());
    expect(summary).toMatchObject({
      received: cids.length + duplicates,
      duplicates,
      orphans: 0,
      pending: 0,
      stopped_reason: 'done',
    });
    const byKind: Record<string, number> = {};
    for (const r of out) byKind[expectedResult(r.dnc_phone_e164)] = (byKind[expectedResult(r.dnc_phone_e164)] ?? 0) + 1;
    expect(summary.results_by_kind).toMatchObject({ pending: 0, ...byKind });
    expect(run.io.err()).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+\/hooks\/\S+ \(pushes only on this path\)/);
  });

  it('receives only the AU rows of a batch without --webhook-all', async () => {
    const b = await batchOf(
      [
        ['us', '+1 202 555 0124'],
        ['au', '+61 4 1234 5003'],
      ],
      { webhookAll: false },
    );
    expect(readCsv(b.output).map((r) => r.dnc_result)).toEqual(['callable', 'pending']);
    const run = listenInProcess(['--results', b.output, '--port', String(b.port), '--exit-when-done'], { cwd: b.dir });
    await run.listening;
    expect(await run.exit, run.io.err()).toBe(0);
    expect(readCsv(b.output).map((r) => r.dnc_result)).toEqual(['callable', 'do_not_call']);
    expect(readJournal(b.journal).pushes).toHaveLength(1);
    // Without --path, pushes are served only on the batch's (unguessable) webhook path.
    expect(run.io.err()).toContain(
      `${PUSH_PATH} (pushes only on this path); it is the batch's webhook path; every other path gets 404`,
    );
  });

  it('writes pushed results into an .xlsx results workbook, which verify reads back', async () => {
    const b = await batchOf(
      [
        ['us', '+1 202 555 0124'],
        ['au', '+61 4 1234 5003'],
      ],
      { webhookAll: false, output: 'calls.results.xlsx' },
    );
    const resultColumn = () => {
      const [sheet] = readWorkbookIndependently(b.output);
      const col = sheet!.rows[0]!.findIndex((c) => c.v === 'dnc_result');
      return sheet!.rows.slice(1).map((row) => [row[col]!.v, row[col]!.fill]);
    };
    expect(resultColumn()).toEqual([
      ['callable', 'FFC6EFCE'],
      ['pending', 'FFFFEB9C'],
    ]);
    const run = listenInProcess(['--results', b.output, '--port', String(b.port), '--exit-when-done'], { cwd: b.dir });
    await run.listening;
    expect(await run.exit, run.io.err()).toBe(0);
    expect(resultColumn()).toEqual([
      ['callable', 'FFC6EFCE'],
      ['do_not_call', 'FFFFC7CE'],
    ]);
    // (listen ran here without a state folder: nothing anchored its rewrite, so the weaker check, by name.)
    const v = await runDnc(['verify', b.output, '--unanchored'], { cwd: b.dir });
    expect(v.code, v.stdout).toBe(0);
  });

  it('--exit-when-done exits 0 at once when nothing is pending', async () => {
    const b = await batchOf([['au', '+61 4 1234 5005']]);
    const first = listenInProcess(['--results', b.output, '--port', String(b.port), '--exit-when-done'], {
      cwd: b.dir,
    });
    expect(await first.exit).toBe(0);
    const again = listenInProcess(['--results', b.output, '--port', '0', '--exit-when-done'], { cwd: b.dir });
    expect(await again.exit).toBe(0);
    expect(again.io.err()).toMatch(/done: received 0 .* pending 0/);
  });
});

describe('dnc listen: on a terminal', () => {
  it('keeps the status on a spinner line and still prints the address and the summary', async () => {
    const b = await batchOf([['au', '+61 4 1234 5011']]);
    const run = listenInProcess(
      ['--results', b.output, '--port', String(b.port), '--path', PUSH_PATH, '--exit-when-done'],
      { cwd: b.dir, tty: true },
    );
    await run.listening;
    expect(await run.exit).toBe(0);
    const err = run.io.err();
    expect(err).toMatch(
      /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] received 0 · duplicates 0 · orphans 0 · pending 1 · oldest pending \+61412345011 since \S+, 24 h deadline \S+ \(in 2\dh\d\dm\)/,
    );
    expect(err).toMatch(/done: received 1 · duplicates \d · orphans 0 · pending 0 · rows: do_not_call 1/);
  });
});

describe('dnc listen: orphans, interrupts, lost lookups', () => {
  it('keeps a push with an unknown correlation id as an orphan; an interrupt with nothing pending exits 0', async () => {
    const b = await batchOf([['us', '+1 202 555 0126']]);
    const run = listenInProcess(['--json', '--results', b.output, '--port', String(b.port), '--path', PUSH_PATH], {
      cwd: b.dir,
    });
    await run.listening;
    await waitFor('the US result in OUTPUT.csv', () => pendingRows(b.output).length === 0);
    const before = readFileSync(b.output, 'utf8');
    const orphan = {
      status: 'succeeded',
      error_code: null,
      correlation_id: '11111111-2222-4333-8444-555555555555',
      phone_number: '+12025550127',
      country: 'US',
      do_not_call: true,
      timestamp: new Date().toISOString(),
      dnc_list_source: 'https://sandbox.dnc.invalid/registers/US',
      cost: { credits_used_for_query: 1, total_credits_used: 2, credit_limit: 10000 },
    };
    const answer = await fetch(b.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-correlation-id': orphan.correlation_id },
      body: JSON.stringify(orphan),
    });
    expect(answer.status).toBe(200);
    run.interrupts.fire();
    expect(await run.exit).toBe(0);
    const journal = readJournal(b.journal);
    expect(journal.pushes.find((p) => p.correlation_id === orphan.correlation_id)).toMatchObject({ outcome: 'orphan' });
    expect(JSON.parse(run.io.out())).toMatchObject({ orphans: 1, pending: 0, stopped_reason: 'done' });
    const after = readCsv(b.output);
    expect(after.map((r) => r.dnc_result)).toEqual(['callable']);
    expect(readCsv(b.output, before)).toEqual(after);
  });

  it('flags lookups past receipt + 24 h as lost, with their correlation ids; an interrupt with lookups pending exits 130', async () => {
    // …997 never answers; its lookup_expired push is due 24 h (× time scale) after the receipt.
    const b = await batchOf(
      [
        ['expiring', '+61 4 1234 5997'],
        ['fine', '+1 202 555 0128'],
      ],
      { webhookAll: false },
    );
    const cid = readCsv(b.output)[0]!.dnc_correlation_id;
    const later = () => new Date(Date.now() + 25 * 3600_000);
    const run = listenInProcess(['--json', '--results', b.output, '--port', String(b.port), '--path', PUSH_PATH], {
      cwd: b.dir,
      now: later,
    });
    await run.listening;
    await waitFor('the lost line', () => run.io.err().includes('lost: '));
    run.interrupts.fire();
    expect(await run.exit).toBe(130);
    const err = run.io.err();
    expect(err).toMatch(
      new RegExp(
        `lost: \\+61412345997 \\(AU\\) correlation id ${cid}: receipt at \\S+, no push by its 24 h deadline \\S+; quote the correlation id`,
      ),
    );
    expect(err).toContain('1 lookup(s) still pending: run the same dnc listen again');
    const summary = JSON.parse(run.io.out());
    expect(summary).toMatchObject({ pending: 1, stopped_reason: 'interrupted' });
    expect(summary.lost).toEqual([
      expect.objectContaining({ correlation_id: cid, phone_number: '+61412345997', country: 'AU' }),
    ]);
    expect(readCsv(b.output).map((r) => r.dnc_result)).toEqual(['pending', 'callable']);
  });
});

describe('dnc listen --quiet', () => {
  it('prints no status, but still every refused request', async () => {
    const b = await batchOf([['au-slow', '+61 4 1234 5096']]);
    const run = listenInProcess(['--quiet', '--results', b.output, '--port', String(b.port), '--path', PUSH_PATH], {
      cwd: b.dir,
    });
    let health = 0;
    const healthy = async () => {
      health = await fetch(`http://127.0.0.1:${b.port}/healthz`).then(
        (r) => r.status,
        () => 0,
      );
      return health === 200;
    };
    await waitUntil(healthy, { ms: 4_000, everyMs: 20, what: '/healthz' }).catch(() => {});
    expect(health).toBe(200);
    expect((await fetch(b.url)).status).toBe(405);
    run.interrupts.fire();
    expect(await run.exit).toBe(130);
    const err = run.io.err();
    expect(err).toMatch(/^refused GET the push path from 127\.0\.0\.1: 405 pushes are POSTed; GET is not allowed$/m);
    expect(err).not.toContain('listening on');
    expect(err).not.toContain('received 0');
  });
});

describe('dnc listen: a push faster than its receipt', () => {
  it('keeps it as an orphan, then applies it once the batch has journaled the receipt', async () => {
    const b = await batchOf([['au', '+61 4 1234 5091']]);
    const row = readCsv(b.output)[0]!;
    // As if the batch had not committed the 202 yet: the lookup's correlation id is not in the journal.
    const e164 = row.dnc_phone_e164!;
    asTheBatch(b.journal, e164, "UPDATE numbers SET correlation_id = NULL, state = 'in_flight' WHERE e164 = ?", e164);
    const run = listenInProcess(
      ['--json', '--verbose', '--results', b.output, '--port', String(b.port), '--path', PUSH_PATH],
      { cwd: b.dir },
    );
    await run.listening;
    const body = {
      status: 'succeeded',
      error_code: null,
      correlation_id: row.dnc_correlation_id,
      phone_number: row.dnc_phone_e164,
      country: 'AU',
      do_not_call: false,
      timestamp: new Date().toISOString(),
      dnc_list_source: 'https://sandbox.dnc.invalid/registers/AU',
      cost: { credits_used_for_query: 3, total_credits_used: 3, credit_limit: 10000 },
    };
    const answer = await fetch(b.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-correlation-id': row.dnc_correlation_id },
      body: JSON.stringify(body),
    });
    expect(answer.status).toBe(200);
    expect(readJournal(b.journal).pushes).toEqual([
      expect.objectContaining({ correlation_id: row.dnc_correlation_id, outcome: 'orphan' }),
    ]);
    // The batch now records the receipt.
    asTheBatch(
      b.journal,
      e164,
      "UPDATE numbers SET correlation_id = ?, state = 'pending' WHERE e164 = ?",
      row.dnc_correlation_id,
      e164,
    );
    await waitFor('the orphan applied', () => readJournal(b.journal).pushes[0]!.outcome === 'applied');
    await waitFor('OUTPUT.csv', () => pendingRows(b.output).length === 0);
    run.interrupts.fire();
    expect(await run.exit, run.io.err()).toBe(0);
    expect(readJournal(b.journal).pushes).toEqual([
      expect.objectContaining({ correlation_id: row.dnc_correlation_id, outcome: 'applied' }),
    ]);
    expect(readCsv(b.output).map((r) => [r.dnc_result, r.dnc_list_source])).toEqual([
      ['callable', 'https://sandbox.dnc.invalid/registers/AU'],
    ]);
    expect(JSON.parse(run.io.out())).toMatchObject({ orphans: 1, reconciled: 1, pending: 0 });
    expect(run.io.err()).toContain('applied 1 push(es) that had arrived before the batch recorded their receipt');
  });
});

describe('dnc listen: an output behind its journal', () => {
  it('writes OUTPUT.csv at start, so a listener killed between storing and rendering loses nothing', async () => {
    const b = await batchOf([['au', '+61 4 1234 5006']]);
    const row = readCsv(b.output)[0]!;
    // What a listener SIGKILLed right after committing a push leaves: the journal done, the CSV pending.
    const { BatchJournal } = await import('../../src/journal/journal.js');
    const journal = await BatchJournal.open(b.journal, { create: false });
    const push = {
      status: 'failed',
      error_code: 'billing_error',
      error: 'credits could not be settled',
      charged: false,
      correlation_id: row.dnc_correlation_id,
      phone_number: row.dnc_phone_e164,
      country: 'AU',
    };
    expect(journal.pushes.record(JSON.stringify(push), new Date().toISOString(), row.dnc_correlation_id)).toBe(
      'applied',
    );
    journal.close();
    expect(pendingRows(b.output)).toHaveLength(1);
    const run = listenInProcess(['--results', b.output, '--port', '0', '--exit-when-done'], { cwd: b.dir });
    expect(await run.exit, run.io.err()).toBe(0);
    expect(readCsv(b.output).map((r) => [r.dnc_result, r.dnc_error_code, r.dnc_credits])).toEqual([
      ['failed', 'billing_error', '0'],
    ]);
  });
});

describe('dnc listen: when OUTPUT.csv cannot be written', () => {
  it('keeps the pushes in the journal, says why, and exits 3', async () => {
    const b = await batchOf([['au', '+61 4 1234 5004']]);
    // The batch module refuses to render from an input that changed since the batch began.
    writeFileSync(b.input, 'name,phone\nau,+61 4 1234 5004\nnew,+1 202 555 0100\n');
    const run = listenInProcess(
      ['--results', b.output, '--port', String(b.port), '--path', PUSH_PATH, '--exit-when-done'],
      { cwd: b.dir },
    );
    await run.listening;
    expect(await run.exit).toBe(3);
    expect(readJournal(b.journal).states).toEqual({ done: 1 });
    expect(readJournal(b.journal).pushes).toHaveLength(1);
    expect(run.io.err()).toMatch(
      /warning: could not write .*calls\.results\.csv: .*calls\.csv has changed since this batch began/,
    );
    expect(run.io.err()).toMatch(/error \[E_OUTPUT_UNWRITABLE\]: could not write .*has changed/);
    expect(run.io.err()).toContain('every push received is safe in the journal');
    expect(readCsv(b.output).map((r) => r.dnc_result)).toEqual(['pending']);
  });
});

describe('dnc listen: refusals', () => {
  it('refuses a results file without a batch journal (exit 2), before listening', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-listen-'));
    try {
      writeFileSync(path.join(dir, 'out.csv'), 'phone\n');
      const r = await runDnc(['listen', '--results', 'out.csv', '--port', '0'], { cwd: dir });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`no batch journal at ${path.join(dir, 'out.csv.journal.sqlite')}`);
      expect(r.stderr).toMatch(/hint: run `dnc batch/);
      expect(r.stderr).not.toContain('listening on');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses bad options with exit 2', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['--port', '70000'], /--port must be from 0 to 65535/],
      [['--path', 'hooks'], /--path must be a URL path starting with \//],
      [['--path', '/a?b=1'], /--path must be a URL path/],
      [['--tls-cert', 'c.pem'], /--tls-cert and --tls-key go together/],
    ];
    for (const [argv, message] of cases) {
      const r = await runDnc(['listen', '--results', 'x.csv', ...argv]);
      expect([r.code, r.stderr]).toEqual([2, expect.stringMatching(message)]);
    }
    const missing = await runDnc(['listen']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--results/);
  });

  it('refuses a port in use (exit 2)', async () => {
    const b = await batchOf([['au', '+61 4 1234 5007']]);
    const first = listenInProcess(['--results', b.output, '--port', String(b.port), '--path', PUSH_PATH], {
      cwd: b.dir,
    });
    await first.listening;
    const second = await runDnc(['listen', '--results', b.output, '--port', String(b.port)], { cwd: b.dir });
    expect(second.code).toBe(2);
    expect(second.stderr).toMatch(/port \d+ on 127\.0\.0\.1 is already in use/);
    first.interrupts.fire();
    expect([0, 130]).toContain(await first.exit);
  });
});

describe('dnc listen: HTTPS', () => {
  it('serves pushes over TLS with --tls-cert/--tls-key', async () => {
    const b = await batchOf([['au', '+61 4 1234 5009']]);
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        'key.pem',
        '-out',
        'cert.pem',
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
      ],
      {
        cwd: b.dir,
        stdio: 'ignore',
      },
    );
    const run = listenInProcess(
      ['--results', b.output, '--port', '0', '--path', PUSH_PATH, '--tls-cert', 'cert.pem', '--tls-key', 'key.pem'],
      { cwd: b.dir },
    );
    const url = await run.listening;
    expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/hooks\//);
    const { Agent, request } = await import('undici');
    const dispatcher = new Agent({ connect: { rejectUnauthorized: false } });
    const health = await request(new URL('/healthz', url), { dispatcher });
    expect(health.statusCode).toBe(200);
    await health.body.text();
    const wrong = await request(url, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'text/plain' },
      body: 'x',
    });
    expect(wrong.statusCode).toBe(415);
    await wrong.body.text();
    await dispatcher.close();
    run.interrupts.fire();
    expect(await run.exit).toBe(130);
    expect(run.io.err()).toMatch(/refused POST the push path from 127\.0\.0\.1: 415/);
  });

  it('refuses an unreadable or invalid certificate (exit 2)', async () => {
    const b = await batchOf([['au', '+61 4 1234 5009']]);
    writeFileSync(path.join(b.dir, 'bad.pem'), 'not a pem\n');
    const unreadable = await runDnc(
      ['listen', '--results', b.output, '--port', '0', '--tls-cert', 'nope.pem', '--tls-key', 'bad.pem'],
      { cwd: b.dir },
    );
    expect([unreadable.code, unreadable.stderr]).toEqual([
      2,
      expect.stringMatching(/cannot read --tls-cert .*nope\.pem: ENOENT/),
    ]);
    const invalid = await runDnc(
      ['listen', '--results', b.output, '--port', '0', '--tls-cert', 'bad.pem', '--tls-key', 'bad.pem'],
      { cwd: b.dir },
    );
    expect([invalid.code, invalid.stderr]).toEqual([2, expect.stringMatching(/cannot serve HTTPS/)]);
  });
});
