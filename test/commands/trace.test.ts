// `dnc trace`: batch lookups through the journal registry or --journal, single checks through the history, unknown ids.
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import { afterEach, describe, expect, it } from 'vitest';
import { dnc, US_LIST, world, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.cleanup();
  w = undefined;
});

const json = (s: string) => JSON.parse(s.trim().split('\n').at(-1)!) as Record<string, any>;

describe('dnc trace', () => {
  it('finds a batch lookup through the registry: number, result, credits, answer, journal and batch', async () => {
    w = await world();
    const input = w.file('calls.csv', US_LIST);
    const output = path.join(w.dir, 'calls.results.csv');
    expect((await dnc(['batch', input, '-o', output], w.env)).code).toBe(0);
    const row = (parse(readFileSync(output), { columns: true }) as Array<Record<string, string>>)[1]!;
    const lookup = w.sb.lookups().find((l) => l.correlationId === row.dnc_correlation_id)!;
    const t = await dnc(['--json', 'trace', row.dnc_correlation_id!], w.env);
    expect(t.code, t.stderr).toBe(0);
    const [found] = json(t.stdout).found;
    expect(found).toMatchObject({
      source: 'batch',
      where: `${output}.journal.sqlite`,
      batch: { input, output },
      phone_number: lookup.phoneNumber,
      country: 'US',
      mode: 'sync',
      result: 'do_not_call',
      http_status: 200,
      credits: lookup.credits,
      checked_at: row.dnc_checked_at,
      service: w.sb.baseUrl,
      pushes: [],
    });
    expect(found.answer).toMatchObject({
      status: 'succeeded',
      correlation_id: lookup.correlationId,
      do_not_call: true,
    });
    // The request time was committed with the claim, before the request: it precedes the answer.
    expect(Date.parse(found.requested_at)).toBeLessThanOrEqual(Date.parse(found.answered_at));
    const receivedBySandbox = w.sb.requests().find((q) => q.query.phone_number === lookup.phoneNumber)!;
    expect(Date.parse(found.requested_at)).toBeLessThanOrEqual(new Date(receivedBySandbox.receivedAt).getTime());
    const human = await dnc(['trace', lookup.correlationId], w.env);
    expect(human.stdout).toContain(`correlation id ${lookup.correlationId}`);
    expect(human.stdout).toMatch(/number +\+12025550101 \(US\)/);
    expect(human.stdout).toMatch(/credits +1\n/);
  });

  it('finds a single check in the history, with the time it was requested; failures too', async () => {
    w = await world();
    const c = await dnc(['--json', 'check', '+12025550106', '+12025550995'], w.env);
    expect(c.code).toBe(6);
    const [ok, failed] = c.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const t = json((await dnc(['--json', 'trace', ok.correlation_id], w.env)).stdout).found[0];
    expect(t).toMatchObject({
      source: 'check',
      phone_number: '+12025550106',
      result: 'callable',
      credits: 1,
      http_status: 200,
      mode: 'sync',
      checked_at: ok.timestamp,
    });
    expect(Date.parse(t.requested_at)).toBeLessThanOrEqual(Date.parse(t.answered_at));
    const f = json((await dnc(['--json', 'trace', failed.correlation_id], w.env)).stdout).found[0];
    expect(f).toMatchObject({ result: 'failed', error_code: 'billing_error', credits: 1, http_status: 500 });
  });

  it('an unknown id: exit 3 with what was searched; --journal searches a journal the registry does not know', async () => {
    w = await world();
    const input = w.file('calls.csv', US_LIST);
    const output = path.join(w.dir, 'calls.results.csv');
    expect((await dnc(['batch', input, '-o', output], w.env)).code).toBe(0);
    const id = w.sb.lookups()[0]!.correlationId;
    const elsewhere = { XDG_STATE_HOME: path.join(w.dir, 'other-state') };
    const missing = await dnc(['trace', id], elsewhere);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toMatch(
      /E_TRACE_NOT_FOUND.*no record of correlation id .* \(searched the check history and 0 journal\(s\)\)/,
    );
    const given = await dnc(['--json', 'trace', id, '--journal', output], elsewhere);
    expect(given.code, given.stderr).toBe(0);
    expect(json(given.stdout).found[0].phone_number).toBe(w.sb.lookups()[0]!.phoneNumber);
    expect((await dnc(['trace', '00000000-0000-4000-8000-000000000000'], w.env)).code).toBe(3);
  });

  it('a phone number: every lookup of it this machine recorded, batches and checks, national with --country', async () => {
    w = await world();
    const input = w.file('calls.csv', [...US_LIST, 'f,not a number']);
    const output = path.join(w.dir, 'calls.results.csv');
    expect((await dnc(['batch', input, '-o', output], w.env)).code).toBe(0);
    expect((await dnc(['check', '+12025550101'], w.env)).code).toBe(0);
    const t = await dnc(['--json', 'trace', '+1 202 555 0101'], w.env);
    expect(t.code, t.stderr).toBe(0);
    const out = json(t.stdout);
    expect(out.phone_number).toBe('+12025550101');
    const lookups = w.sb.lookups().filter((l) => l.phoneNumber === '+12025550101');
    expect(lookups).toHaveLength(2);
    expect(out.found.map((f: Record<string, unknown>) => [f.source, f.correlation_id]).sort()).toEqual(
      [
        ['batch', lookups[0]!.correlationId],
        ['check', lookups[1]!.correlationId],
      ].sort(),
    );
    const national = await dnc(['trace', '(202) 555-0101', '--country', 'US'], w.env);
    expect(national.code, national.stderr).toBe(0);
    expect(national.stdout).toContain(`correlation id ${lookups[0]!.correlationId}`);
    // A number this machine never looked up: exit 3, said as a number.
    const none = await dnc(['trace', '+12025550188'], w.env);
    expect(none.code).toBe(3);
    expect(none.stderr).toContain('no record of the number +12025550188');
  });

  it('an argument that is not a correlation id is a usage error (exit 2), not a search that finds nothing', async () => {
    w = await world();
    for (const bad of [
      'not-a-uuid',
      '12345',
      `${'0'.repeat(8)}-0000-4000-8000-00000000000`,
      "x'; DROP TABLE numbers; --",
    ]) {
      const r = await dnc(['trace', bad], w.env);
      expect(r.code, bad).toBe(2);
      expect(r.stderr).toContain('[E_USAGE]');
      expect(r.stderr).toContain('is neither a correlation id');
    }
  });

  it('names the rows and phone columns that held the number; a number never sent says so (issue 48)', async () => {
    w = await world();
    // Line 1 the header; +12025550182 on line 2 (Phone) and line 4 (Mobile); line 3's Phone is not a number.
    const input = w.file('crm.csv', [
      'Name,Phone,Mobile',
      'Ann,+12025550182,',
      'Bo,12345,+12025550183',
      'Cy,,+1 202 555 0182',
    ]);
    const output = path.join(w.dir, 'crm.results.csv');
    const run = await dnc(['batch', input, '-o', output, '--column', 'Phone,Mobile'], w.env);
    expect(run.code, run.stderr).toBe(0);
    const t = await dnc(['trace', '+12025550182'], w.env);
    expect(t.code, t.stderr).toBe(0);
    expect(t.stdout).toMatch(/^ {2}rows {12}line 2 \(Phone\), line 4 \(Mobile\)$/m);
    const j = json((await dnc(['--json', 'trace', '+12025550182'], w.env)).stdout);
    expect(j.found[0].rows).toEqual([
      { line: 2, column: 'Phone' },
      { line: 4, column: 'Mobile' },
    ]);
    expect(j.found[0].more_rows).toBe(false);
    // Sent, so it has a request time; a number of the list never sent is said to be never sent, not "an older dnc".
    expect(t.stdout).not.toContain('older dnc');
    const unsent = w.file('unsent.csv', ['phone', '+12025550184']);
    expect((await dnc(['batch', unsent, '--max-credits', '0'], w.env)).code).toBe(5);
    const never = await dnc(['trace', '+12025550184'], w.env);
    expect(never.code, never.stderr).toBe(0);
    expect(never.stdout).toMatch(
      /^ {2}requested at {4}never sent \(still to look up: not_checked in the results; a rerun sends it\)$/m,
    );
    expect(never.stdout).toMatch(/^ {2}rows {12}line 2 \(phone\)$/m);
  });
});
