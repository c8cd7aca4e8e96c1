// `dnc listen` as a process: SIGKILL mid-stream and restart while the sandbox retries, durability of every 2xx, SIGTERM.
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, BIN, NO_HOME, runDnc } from '../helpers/cli.js';
import {
  expectedResult,
  PUSH_PATH,
  readCsv,
  readJournal,
  waitFor,
  webhookBatch,
  type WebhookBatch,
} from '../listen/helpers.js';

interface Listener {
  child: ChildProcess;
  stderr(): string;
  stdout(): string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function spawnListen(argv: string[], cwd: string): Listener {
  const child = spawn(process.execPath, [BIN, 'listen', ...argv], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: NO_HOME },
    stdio: 'pipe',
  });
  let stderr = '';
  let stdout = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  );
  return { child, stderr: () => stderr, stdout: () => stdout, exit };
}

async function started(l: Listener): Promise<void> {
  await waitFor('dnc listen to listen', () => l.stderr().includes('listening on') || l.child.exitCode !== null);
  expect(l.stderr()).toContain('listening on');
}

let current: WebhookBatch | undefined;
const children: ChildProcess[] = [];
beforeAll(() => assertBuilt());
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await current?.cleanup();
  current = undefined;
});

function listen(argv: string[], cwd: string): Listener {
  const l = spawnListen(argv, cwd);
  children.push(l.child);
  return l;
}

describe('dnc listen holds its journal', () => {
  it('dnc batch --restart and a second listener are refused while it runs; after it stops, --restart goes ahead', async () => {
    current = await webhookBatch([['au0', '+61 4 1234 5100']], { sandbox: { timeScale: 1 } });
    const b = current;
    expect(b.batch.code, b.batch.stderr).toBe(8);
    const args = ['--results', b.output, '--port', String(b.port), '--path', PUSH_PATH];
    const first = listen(args, b.dir);
    await started(first);
    const restartArgv = [
      'batch',
      b.input,
      '-o',
      b.output,
      '--webhook-url',
      b.url,
      '--allow-insecure-webhook-url',
      '--webhook-all',
      '--restart',
    ];
    const refused = await runDnc(restartArgv, { env: b.env, cwd: b.dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `cannot restart: dnc listen (pid ${first.child.pid}) is storing pushes in ${b.journal}`,
    );
    expect(readJournal(b.journal).states.pending).toBe(1);
    const second = listen(['--results', b.output, '--port', '0', '--path', PUSH_PATH], b.dir);
    expect((await second.exit).code).toBe(2);
    expect(second.stderr()).toContain(`another dnc listen (pid ${first.child.pid}) is using ${b.journal}`);
    first.child.kill('SIGTERM');
    await first.exit;
    const restarted = await runDnc(restartArgv, { env: b.env, cwd: b.dir });
    expect(restarted.code, restarted.stderr).toBe(8);
  });
});

describe('dnc listen killed and restarted', () => {
  it('SIGKILL mid-stream, restart while the sandbox retries: every row resolved exactly once', async () => {
    // Results spread over ~5 s (AU: 30 s × 2^tens digit, × 0.01), some pushes duplicated.
    const rows: Array<[string, string]> = [];
    for (let i = 0; i < 10; i++) rows.push([`us${i}`, `+1 202 555 01${20 + i}`]);
    for (let i = 0; i < 10; i++) rows.push([`gb${i}`, `+44 20 7946 0${140 + i}`]);
    for (const tens of [0, 1, 2, 3, 4])
      for (let i = 0; i < 6; i++) rows.push([`au${tens}${i}`, `+61 4 1234 51${tens}${i}`]);
    current = await webhookBatch(rows, { sandbox: { duplicatePushRate: 0.3 } });
    const b = current;
    expect(b.batch.code, b.batch.stderr).toBe(8);
    const args = ['--results', b.output, '--port', String(b.port), '--path', PUSH_PATH];

    const first = listen(args, b.dir);
    await started(first);
    await waitFor('some pushes stored', () => readJournal(b.journal).pushes.length >= 5);
    const killedAt = new Date().toISOString();
    first.child.kill('SIGKILL');
    expect((await first.exit).signal).toBe('SIGKILL');
    const atKill = readJournal(b.journal);
    expect(atKill.states.pending ?? 0, 'the kill came too late to be mid-stream').toBeGreaterThan(0);
    // While it is down the sandbox's attempts fail and are retried with backoff.
    await waitFor(
      'a failed attempt',
      () => b.sandbox.pushes().some((p) => p.error !== undefined && p.outcome === 'retry' && p.at >= killedAt),
      10_000,
    );

    const second = listen([...args, '--exit-when-done', '--json'], b.dir);
    await started(second);
    expect(await second.exit).toEqual({ code: 0, signal: null });

    const out = readCsv(b.output);
    expect(out).toHaveLength(rows.length);
    for (const r of out) expect([r.name, r.dnc_result]).toEqual([r.name, expectedResult(r.dnc_phone_e164)]);
    const journal = readJournal(b.journal);
    const cids = out.map((r) => r.dnc_correlation_id).sort();
    expect(new Set(cids).size).toBe(rows.length);
    // One stored push per lookup, each applied once; everything else was a counted duplicate.
    expect(journal.pushes.map((p) => p.correlation_id).sort()).toEqual(cids);
    expect(journal.pushes.every((p) => p.outcome === 'applied')).toBe(true);
    expect(journal.states).toEqual({ done: rows.length });
    const attempts = b.sandbox.pushes();
    const retriedThenDelivered = cids.filter((id) => {
      const mine = attempts.filter((a) => a.correlationId === id);
      return mine.some((a) => a.error !== undefined) && mine.some((a) => a.status === 200);
    });
    expect(retriedThenDelivered.length).toBeGreaterThan(0);
    const summary = JSON.parse(second.stdout());
    expect(summary).toMatchObject({ pending: 0, stopped_reason: 'done', orphans: 0 });
  });

  it('every push answered 2xx is in the journal after SIGKILL right after the answer', async () => {
    // …9x AU numbers answer 30 s × 512 × 0.01 ≈ 2.5 min after the receipt: the sandbox stays out of the way.
    const rows = Array.from({ length: 40 }, (_, i): [string, string] => [
      `au${i}`,
      `+61 4 1234 5${Math.floor(i / 10)}9${i % 10}`,
    ]);
    current = await webhookBatch(rows);
    const b = current;
    expect(b.batch.code, b.batch.stderr).toBe(8);
    const pending = readCsv(b.output);
    expect(pending.every((r) => r.dnc_result === 'pending')).toBe(true);
    const l = listen(['--results', b.output, '--port', String(b.port), '--path', PUSH_PATH], b.dir);
    await started(l);

    const body = (r: (typeof pending)[number]) =>
      JSON.stringify({
        status: 'succeeded',
        error_code: null,
        correlation_id: r.dnc_correlation_id,
        phone_number: r.dnc_phone_e164,
        country: 'AU',
        do_not_call: false,
        timestamp: new Date().toISOString(),
        dnc_list_source: 'https://sandbox.dnc.invalid/registers/AU',
        cost: { credits_used_for_query: 3, total_credits_used: 120, credit_limit: 10000 },
      });
    // Pushes go out 8 at a time; the listener is SIGKILLed in the callback of the 15th 200, before anything else runs.
    const acknowledged: string[] = [];
    const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
    let killed = false;
    await Promise.all(
      pending.map(
        (r) =>
          new Promise<void>((resolve) => {
            const req = http.request(b.url, {
              method: 'POST',
              agent,
              headers: { 'content-type': 'application/json', 'x-service-correlation-id': r.dnc_correlation_id },
            });
            req.on('response', (res) => {
              if (res.statusCode === 200 && !killed) {
                acknowledged.push(r.dnc_correlation_id);
                if (acknowledged.length === 15) {
                  l.child.kill('SIGKILL');
                  killed = true;
                }
              }
              res.resume();
              res.on('end', () => resolve());
              res.on('error', () => resolve());
            });
            req.on('error', () => resolve());
            req.end(body(r));
          }),
      ),
    );
    agent.destroy();
    expect((await l.exit).signal).toBe('SIGKILL');
    expect(acknowledged).toHaveLength(15);
    const stored = new Map(readJournal(b.journal).pushes.map((p) => [p.correlation_id, p]));
    for (const id of acknowledged) expect(stored.get(id)?.outcome, id).toBe('applied');
    expect(stored.size).toBeLessThan(pending.length);
  });

  it('SIGTERM closes cleanly: a final render, and 130 while lookups are still pending', async () => {
    current = await webhookBatch([
      ['fast', '+61 4 1234 5003'],
      ['never', '+61 4 1234 5997'],
    ]);
    const b = current;
    const l = listen(['--results', b.output, '--port', String(b.port), '--path', PUSH_PATH], b.dir);
    await started(l);
    await waitFor('the fast result', () => readJournal(b.journal).states.done === 1);
    l.child.kill('SIGTERM');
    expect(await l.exit, l.stderr()).toEqual({ code: 130, signal: null });
    expect(l.stderr()).not.toContain('could not write');
    expect(readCsv(b.output).map((r) => r.dnc_result)).toEqual(['do_not_call', 'pending']);
    expect(l.stderr()).toContain('1 lookup(s) still pending');
  });
});
