// --reuse-within on batch and check: verdicts of the same service within the window are reused (nothing sent), failures never.
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestIO } from '../../src/io.js';
import { main } from '../../src/main.js';
import { startSandbox } from '../../src/sandbox/index.js';
import { NO_HOME } from '../helpers/cli.js';
import { testInterrupts } from '../helpers/interrupts.js';
import { dnc, later, lookedUp, sameMachine, US_LIST, world, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.cleanup();
  w = undefined;
});

const rows = (file: string) => parse(readFileSync(file), { columns: true }) as Array<Record<string, string>>;
const json = (s: string) => JSON.parse(s.trim().split('\n').at(-1)!) as Record<string, any>;

describe('batch --reuse-within', () => {
  it('a second batch within the window sends nothing and keeps the original correlation ids and checked_at; outside it looks up again', async () => {
    w = await world();
    const input = w.file('calls.csv', US_LIST);
    const first = path.join(w.dir, 'first.csv');
    expect((await dnc(['batch', input, '-o', first], w.env)).code).toBe(0);
    expect(lookedUp(w.sb)).toHaveLength(3);

    const second = path.join(w.dir, 'second.csv');
    const r = await dnc(['--json', 'batch', input, '-o', second, '--reuse-within', '7d'], w.env, { now: later(2) });
    expect(r.code, r.stderr).toBe(0);
    expect(lookedUp(w.sb)).toHaveLength(3);
    expect(r.stderr).toContain('3 number(s) reused from earlier lookups');
    expect(json(r.stdout)).toMatchObject({ callable: 3, do_not_call: 2, credits_used: 0 });
    const a = rows(first);
    const b = rows(second);
    expect(b.map((x) => [x.dnc_result, x.dnc_correlation_id, x.dnc_checked_at, x.dnc_list_source])).toEqual(
      a.map((x) => [x.dnc_result, x.dnc_correlation_id, x.dnc_checked_at, x.dnc_list_source]),
    );
    for (const x of b)
      expect([x.dnc_credits, x.dnc_error_code, x.dnc_error]).toEqual([
        '0',
        '',
        expect.stringMatching(/^reused: checked \S+ by an earlier lookup \(--reuse-within 7d\)/),
      ]);
    // The reused output is evidence too: its manifest counts the reused rows, and it verifies.
    expect(JSON.parse(readFileSync(path.join(w.dir, 'second.manifest.json'), 'utf8')).reused_rows).toBe(5);
    expect((await dnc(['verify', second], sameMachine(w), { now: later(2) })).code).toBe(0);
    // dnc trace tells the whole story: the reused row says it was reused, when, and whose verdict; the original lookup is beside it.
    const cid = b[0]!.dnc_correlation_id!;
    const t = await dnc(['--json', 'trace', cid], w.env, { now: later(2) });
    const { found } = JSON.parse(t.stdout) as {
      found: Array<{ where: string; reused_at: string | null; requested_at: string | null; credits: number }>;
    };
    const reusedRow = found.find((x) => x.where.includes('second.csv'))!;
    const original = found.find((x) => x.where.includes('first.csv'))!;
    expect(reusedRow).toMatchObject({ reused_at: expect.stringMatching(/^\d{4}-/), requested_at: null, credits: 0 });
    expect(original).toMatchObject({ reused_at: null, requested_at: expect.stringMatching(/^\d{4}-/), credits: 1 });
    const human = await dnc(['trace', cid], w.env, { now: later(2) });
    expect(human.stdout).toMatch(
      /reused +\S+: the verdict of the earlier lookup .* taken from the results cache \(--reuse-within\); no request sent, no credits/,
    );
    expect(human.stdout).not.toContain('journal made by an older dnc');

    const third = path.join(w.dir, 'third.csv');
    const late = await dnc(['batch', input, '-o', third, '--reuse-within', '7d'], w.env, { now: later(8) });
    expect(late.code, late.stderr).toBe(0);
    expect(lookedUp(w.sb)).toHaveLength(6);
    expect(rows(third).every((x) => x.dnc_error === '')).toBe(true);
  });

  it('without --reuse-within nothing is reused; failures are never cached', async () => {
    w = await world();
    const input = w.file('calls.csv', ['name,phone', 'ok,+12025550100', 'billing,+12025550995']);
    // The billing failure is a row without a verdict: exit 7.
    expect((await dnc(['batch', input, '-o', path.join(w.dir, 'a.csv')], w.env)).code).toBe(7);
    expect((await dnc(['batch', input, '-o', path.join(w.dir, 'b.csv')], w.env)).code).toBe(7);
    expect(lookedUp(w.sb)).toEqual(['+12025550100', '+12025550995', '+12025550100', '+12025550995']);
    const c = await dnc(['batch', input, '-o', path.join(w.dir, 'c.csv'), '--reuse-within', '1d'], w.env);
    expect(c.code).toBe(7);
    expect(lookedUp(w.sb).slice(4)).toEqual(['+12025550995']);
    expect(rows(path.join(w.dir, 'c.csv')).map((x) => x.dnc_result)).toEqual(['callable', 'failed']);
  });

  it('verdicts of one service never satisfy another (sandbox results are not real ones)', async () => {
    w = await world();
    const input = w.file('calls.csv', US_LIST);
    expect((await dnc(['batch', input, '-o', path.join(w.dir, 'a.csv')], w.env)).code).toBe(0);
    const other = await startSandbox({ port: 0, seed: 7 });
    try {
      const env = { ...w.env, DNC_BASE_URL: other.baseUrl, DNC_API_KEY: other.apiKey };
      expect((await dnc(['batch', input, '-o', path.join(w.dir, 'b.csv'), '--reuse-within', '7d'], env)).code).toBe(0);
      expect(lookedUp(other)).toHaveLength(3);
    } finally {
      await other.close();
    }
  });
});

describe('scrubbing a list again without --reuse-within: said before anything is spent', () => {
  /** `dnc ARGV` in this process; `sentWhenSaid`: lookups the sandbox had received when a line holding `text` was written. */
  async function dncWatching(argv: string[], text: string) {
    const io = createTestIO();
    let sentWhenSaid = -1;
    const write = io.stderr.write.bind(io.stderr) as (chunk: unknown, ...rest: unknown[]) => boolean;
    io.stderr.write = ((chunk: unknown, ...rest: unknown[]) => {
      if (sentWhenSaid < 0 && String(chunk).includes(text)) sentWhenSaid = lookedUp(w!.sb).length;
      return write(chunk, ...rest);
    }) as typeof io.stderr.write;
    const code = await main(argv, { io, env: w!.env, homedir: NO_HOME, interrupts: testInterrupts() });
    return { code, stderr: io.err(), sentWhenSaid };
  }

  /** 40 US numbers and 5 GB ones: windows of 31 and 28 days. */
  const list = [
    'name,phone',
    ...Array.from({ length: 40 }, (_, i) => `us${i},+1202555${1000 + i}`),
    ...Array.from({ length: 5 }, (_, i) => `gb${i},+4420794600${10 + i}`),
  ];

  it('the dry run and the credit guard of the real run name --reuse-within and what it would save; the suggested window reuses them all', async () => {
    w = await world();
    const input = w.file('calls.csv', list);
    expect((await dnc(['batch', input], w.env)).code).toBe(0);
    let spent = lookedUp(w.sb).length;
    expect(spent).toBe(45);
    const xlsx = path.join(w.dir, 'calls.results.xlsx');
    const line =
      'of the 45 number(s) to look up were checked by this service within the last 10m and their verdicts are still valid (the results cache): --reuse-within 10m would reuse them and save about 45 credit(s)';

    const dry = await dnc(['batch', input, '-o', xlsx, '--dry-run'], w.env);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(`note: 45 ${line}`);
    expect(json((await dnc(['--json', 'batch', input, '-o', xlsx, '--dry-run'], w.env)).stdout).reusable).toEqual({
      numbers: 45,
      credits: 45,
      window: '10m',
    });
    expect(lookedUp(w.sb)).toHaveLength(spent);

    // The real run (no terminal, no flag) says it pays them again before its first lookup (the sandbox's log is read
    // as the line is written): answered within the last day, they are what the question on a terminal is about.
    const run = await dncWatching(['batch', input, '-o', xlsx], 'within the last day');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(
      'dnc: 45 of the 45 number(s) to look up were answered by this service within the last day: they are paid for again (about 45 credit(s)); --reuse-within 1d reuses them',
    );
    expect(run.stderr).not.toContain('credit guard:');
    expect(run.sentWhenSaid).toBe(spent);
    expect(lookedUp(w.sb)).toHaveLength(spent + 45);

    // --quiet silences the notice (issue 48); the summary on stdout still says they were paid for again.
    const quiet = await dnc(['--quiet', 'batch', input, '-o', path.join(w.dir, 'quiet.csv')], w.env);
    expect(quiet.code, quiet.stderr).toBe(0);
    expect(quiet.stderr).toBe('');
    expect(quiet.stdout).toMatch(/45 number\(s\) answered within the last day were paid again \(45 credit\(s\)\)/);
    spent += 45;

    // As suggested: nothing sent.
    const again = await dnc(['batch', input, '-o', path.join(w.dir, 'again.csv'), '--reuse-within', '10m'], w.env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain('45 number(s) reused from earlier lookups');
    expect(again.stderr).not.toContain('would reuse them');
    expect(lookedUp(w.sb)).toHaveLength(spent + 45);
  });

  it('a long list answered within the last day: read whole before the first lookup, and all of it counted', async () => {
    w = await world();
    // (Last three digits below 900: the sandbox's failing numbers end in 990 to 997.)
    const long = [
      'name,phone',
      ...Array.from({ length: 3_000 }, (_, i) => `n${i},+1202${5_600_000 + Math.floor(i / 900) * 1000 + (i % 900)}`),
    ];
    const input = w.file('long.csv', long);
    expect((await dnc(['batch', input], w.env)).code).toBe(0);
    const spent = lookedUp(w.sb).length;
    // Answered within the last day: the whole list is read before the first lookup, and all of it is counted.
    const run = await dncWatching(['batch', input, '-o', path.join(w.dir, 'long.results.xlsx')], 'within the last day');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(
      'dnc: 3,000 of the 3,000 number(s) to look up were answered by this service within the last day',
    );
    expect(run.stderr).not.toContain('still being read');
    expect(run.sentWhenSaid).toBe(spent);
  });

  it('only verdicts still valid for their country count, and the window offered never passes the shortest of their windows', async () => {
    w = await world();
    const input = w.file('calls.csv', list);
    expect((await dnc(['batch', input], w.env)).code).toBe(0);
    // 29 days later: GB verdicts (28 days) are stale, US ones (31 days) are not.
    const dry = await dnc(['batch', input, '-o', path.join(w.dir, 'later.csv'), '--dry-run'], w.env, {
      now: later(29),
    });
    expect(dry.stdout).toContain(
      'note: 40 of the 45 number(s) to look up were checked by this service within the last 31d',
    );
    expect(dry.stdout).toContain('--reuse-within 31d would reuse them and save about 40 credit(s)');
    // 32 days later none is valid: nothing to say.
    const stale = await dnc(['batch', input, '-o', path.join(w.dir, 'stale.csv'), '--dry-run'], w.env, {
      now: later(32),
    });
    expect(stale.stdout).not.toContain('--reuse-within');
  });

  it('says nothing for numbers never checked, for what a resumed batch would not send anyway, or once --reuse-within is given', async () => {
    w = await world();
    const input = w.file('calls.csv', list);
    const fresh = await dnc(['batch', input, '--dry-run'], w.env);
    expect(fresh.stdout).not.toContain('--reuse-within');
    expect((await dnc(['batch', input], w.env)).code).toBe(0);
    // The same output again: every number is answered in its journal; a rerun sends nothing.
    const rerun = await dnc(['batch', input, '--dry-run'], w.env);
    expect(rerun.stdout).not.toContain('--reuse-within');
    const given = await dnc(['batch', input, '-o', path.join(w.dir, 'given.csv'), '--reuse-within', '1h'], w.env);
    expect(given.stderr).not.toContain('would reuse them');
    // Another service's verdicts are never offered.
    const other = await startSandbox({ port: 0, seed: 7 });
    try {
      const env = { ...w.env, DNC_BASE_URL: other.baseUrl, DNC_API_KEY: other.apiKey };
      expect((await dnc(['batch', input, '-o', path.join(w.dir, 'other.csv'), '--dry-run'], env)).stdout).not.toContain(
        '--reuse-within',
      );
    } finally {
      await other.close();
    }
  });
});

describe('check --reuse-within', () => {
  it('a number checked (by check or batch) within the window is not sent again; the original body and correlation id are shown', async () => {
    w = await world();
    const first = await dnc(['--json', 'check', '+12025550107'], w.env);
    expect(first.code).toBe(0);
    const original = json(first.stdout);
    const again = await dnc(['--json', 'check', '+12025550107', '--reuse-within', '12h', '--fail-on-dnc'], w.env, {
      now: later(0.25),
    });
    expect(again.code).toBe(10);
    expect(lookedUp(w.sb)).toEqual(['+12025550107']);
    expect(json(again.stdout)).toMatchObject({
      correlation_id: original.correlation_id,
      timestamp: original.timestamp,
      do_not_call: true,
      reused: true,
      credit_cost: 0,
      http_status: null,
    });
    const human = await dnc(['check', '+12025550107', '--reuse-within', '12h'], w.env, { now: later(0.25) });
    expect(human.stdout).toMatch(/DO NOT CALL +\+1 202 555 0107 +on the US do-not-call register \(reused\)/);
    expect(human.stdout).toContain(`${original.correlation_id} (the original lookup)`);
    // Outside the window: looked up again.
    expect((await dnc(['check', '+12025550107', '--reuse-within', '12h'], w.env, { now: later(1) })).code).toBe(0);
    expect(lookedUp(w.sb)).toHaveLength(2);
    // A batch's verdicts serve a later check.
    const input = w.file('calls.csv', ['phone', '+12025550108']);
    expect((await dnc(['batch', input, '-o', path.join(w.dir, 'out.csv')], w.env)).code).toBe(0);
    expect((await dnc(['check', '+12025550108', '--reuse-within', '1h'], w.env)).code).toBe(0);
    expect(lookedUp(w.sb)).toEqual(['+12025550107', '+12025550107', '+12025550108']);
  });
});
