// A webhook batch resolved by `dnc listen`: the manifest is rewritten with the output, verify follows, AU rows age by 30 days (to the millisecond).
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import { afterEach, expect, it } from 'vitest';
import { parseServiceTime } from '../../src/time.js';
import { sha256 } from '../batch/helpers.js';
import { freePort, PUSH_PATH } from './helpers.js';
import { DAY, dnc, world, type World, sameMachine } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.cleanup();
  w = undefined;
});

const json = (s: string) => JSON.parse(s.trim().split('\n').at(-1)!) as Record<string, any>;

it('listen rewrites the manifest after rendering; the resolved output verifies; AU rows go stale after 30 days, others after 31', async () => {
  w = await world({ allowInsecureWebhooks: true, timeScale: 0.01 });
  const input = w.file('calls.csv', ['name,phone', 'us,+12025550104', 'au1,+61 4 1234 5002', 'au2,+61 4 1234 5001']);
  const output = path.join(w.dir, 'calls.results.csv');
  const manifest = path.join(w.dir, 'calls.results.manifest.json');
  const port = await freePort();
  const b = await dnc(
    [
      'batch',
      input,
      '-o',
      output,
      '--webhook-url',
      `http://127.0.0.1:${port}${PUSH_PATH}`,
      '--allow-insecure-webhook-url',
    ],
    w.env,
  );
  expect(b.code, b.stderr).toBe(8);
  const before = JSON.parse(readFileSync(manifest, 'utf8'));
  expect(before.rows.by_result).toMatchObject({ callable: 1, pending: 2 });
  expect(json((await dnc(['--json', 'verify', output], sameMachine(w!))).stdout).recheck_by_reason).toEqual({
    pending: 2,
  });

  const run = await dnc(
    ['listen', '--results', output, '--port', String(port), '--path', PUSH_PATH, '--exit-when-done'],
    w.env,
    { cwd: w.dir },
  );
  expect(run.code, run.stderr).toBe(0);
  const after = JSON.parse(readFileSync(manifest, 'utf8'));
  expect(after.output.sha256).toBe(sha256(output));
  expect(after.rows.by_result).toMatchObject({ callable: 2, do_not_call: 1, pending: 0 });
  expect(after.started_at).toBe(before.started_at);
  expect(after.service_base_url).toBe(w.sb.baseUrl);
  expect(Date.parse(after.updated_at)).toBeGreaterThan(Date.parse(before.updated_at));

  const fit = await dnc(['verify', output], sameMachine(w!));
  expect(fit.code, fit.stdout).toBe(0);
  const rows = parse(readFileSync(output), { columns: true }) as Array<Record<string, string>>;
  const newest = Math.max(...rows.map((r) => Date.parse(r.dnc_checked_at!.replace(/(\.\d{3})\d+/, '$1'))));
  const asOf = (days: number) => new Date(newest + days * DAY).toISOString();
  const at30 = json((await dnc(['--json', 'verify', output, '--as-of', asOf(30.5)], sameMachine(w!))).stdout);
  expect(at30.recheck).toEqual([expect.objectContaining({ line: 3, country: 'AU', reason: 'stale' })]);
  const at31 = json((await dnc(['--json', 'verify', output, '--as-of', asOf(31.5)], sameMachine(w!))).stdout);
  expect(at31.recheck.map((r: { country: string }) => r.country)).toEqual(['US', 'AU']);
  // At the AU window's exact edge: the row's dnc_valid_until is checked_at + 30 days; fit through it, stale 1 ms later.
  const auRow = rows.find((r) => r.dnc_country === 'AU' && r.dnc_result === 'callable')!;
  const auEnd = Date.parse(auRow.dnc_valid_until!);
  expect(auEnd).toBe(parseServiceTime(auRow.dnc_checked_at) + 30 * DAY);
  const recheckAt = async (ms: number) =>
    (
      json((await dnc(['--json', 'verify', output, '--as-of', new Date(ms).toISOString()], sameMachine(w!))).stdout)
        .recheck ?? []
    ).map((r: { country: string }) => r.country);
  expect(await recheckAt(auEnd)).not.toContain('AU');
  expect(await recheckAt(auEnd + 1)).toContain('AU');

  // trace: the AU lookup, with its receipt's journal and the push received.
  const au = rows.find((r) => r.name === 'au2')!;
  const t = await dnc(['--json', 'trace', au.dnc_correlation_id!], w.env);
  expect(t.code, t.stderr).toBe(0);
  const found = json(t.stdout).found;
  expect(found).toHaveLength(1);
  expect(found[0]).toMatchObject({
    source: 'batch',
    where: `${output}.journal.sqlite`,
    phone_number: '+61412345001',
    country: 'AU',
    mode: 'webhook',
    result: 'do_not_call',
    credits: w.sb.lookups().find((l) => l.correlationId === au.dnc_correlation_id)!.credits,
  });
  expect(found[0].pushes).toEqual([
    expect.objectContaining({
      outcome: 'applied',
      body: expect.objectContaining({ status: 'succeeded', correlation_id: au.dnc_correlation_id }),
    }),
  ]);
  const human = await dnc(['trace', au.dnc_correlation_id!], w.env);
  expect(human.stdout).toMatch(/push +\S+ succeeded do_not_call=(true|false) from \S+, applied/);

  // The pushed verdicts went into the results cache: a check of the AU number reuses it (nothing sent).
  const sent = w.sb.lookups().length;
  const again = await dnc(
    [
      '--json',
      'check',
      '+61412345001',
      '--reuse-within',
      '1d',
      '--webhook-url',
      `http://127.0.0.1:${port}${PUSH_PATH}`,
      '--allow-insecure-webhook-url',
    ],
    w.env,
  );
  expect(again.code, again.stderr).toBe(0);
  expect(w.sb.lookups()).toHaveLength(sent);
  expect(json(again.stdout)).toMatchObject({ correlation_id: au.dnc_correlation_id, reused: true, do_not_call: true });
});

it('listen given no key fills the results cache under the account the batch recorded in its journal', async () => {
  w = await world({ allowInsecureWebhooks: true, timeScale: 0.01 });
  const input = w.file('calls.csv', ['name,phone', 'au,+61 4 1234 5001']);
  const output = path.join(w.dir, 'calls.results.csv');
  const port = await freePort();
  const hook = ['--webhook-url', `http://127.0.0.1:${port}${PUSH_PATH}`, '--allow-insecure-webhook-url'];
  expect((await dnc(['batch', input, '-o', output, ...hook], w.env)).code).toBe(8);
  // The listener is not given the key (it needs none): only the folders.
  const { DNC_API_KEY: _key, DNC_BASE_URL: _url, ...keyless } = w.env;
  const run = await dnc(
    ['listen', '--results', output, '--port', String(port), '--path', PUSH_PATH, '--exit-when-done'],
    keyless,
    { cwd: w.dir },
  );
  expect(run.code, run.stderr).toBe(0);
  const sent = w.sb.lookups().length;
  const again = await dnc(['--json', 'check', '+61412345001', '--reuse-within', '1d', ...hook], w.env);
  expect(again.code, again.stderr).toBe(0);
  expect(w.sb.lookups()).toHaveLength(sent);
  expect(json(again.stdout)).toMatchObject({ reused: true, do_not_call: true });
});
