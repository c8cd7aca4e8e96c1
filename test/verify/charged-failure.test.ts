// A number whose lookup fails after a charge (billing_error, charged): verify, window, report and status give one
// judgement of the file (not fit, the same reason, the same way out), the way out is a command that works
// (--resend-failed, which sends exactly the failed numbers again and says what that costs), and no hint names a flag
// the user already gave.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { dnc, json, lookedUp, world, type World } from '../helpers/world.js';

let w: World;
let results: string;
const FAILING = '+12025550995';

beforeAll(async () => {
  // The first two attempts of a …995 number answer billing_error (charged); the third its verdict.
  w = await world({ billingErrors: 2 });
  w.file('calls.csv', ['name,phone', 'Ann,+12025550100', `Bob,${FAILING}`, 'Cy,+12025550102', `Bo,${FAILING}`]);
  results = path.join(w.dir, 'calls.results.csv');
});
afterAll(() => w.cleanup());

const run = (argv: string[]) => dnc(argv, w.env, { cwd: w.dir });

/** A slot tomorrow, as ISO 8601 (window judges the file as of its end). */
function slot(): [string, string] {
  const day = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
  return [`${day}T14:00:00Z`, `${day}T16:00:00Z`];
}

/** What verify, window, report and status each say of the file: the judgement, why, what makes it fit, the status. */
async function judgements() {
  const verify = await run(['--json', 'verify', results]);
  const [from, until] = slot();
  const dialOut = path.join(w.dir, 'slot.txt');
  const window = await run(['--json', 'window', results, '--from', from, '--until', until, '--dial-out', dialOut]);
  const report = await run(['--json', 'report', results]);
  const status = await run(['--json', 'status', results]);
  const s = json(status.stdout).files[0];
  const said = (r: { code: number }, j: Record<string, any>) => ({
    code: r.code,
    fitness: j.fitness,
    because: j.not_fit_because,
    wayOut: j.way_out,
  });
  return {
    verify: said(verify, json(verify.stdout)),
    window: said(window, json(window.stdout)),
    report: said(report, json(report.stdout)),
    status: said(status, s),
    human: {
      verify: (await run(['verify', results])).stdout,
      window: (await run(['window', results, '--from', from, '--until', until, '--dial-out', dialOut])).stdout,
      report: (await run(['report', results])).stderr,
      status: (await run(['status', results])).stderr,
    },
  };
}

/** The advice a batch ends with (what to do next). */
const advice = (stderr: string) => stderr.split('\n').find((l) => l.startsWith('dnc: finished, but')) ?? '';

/** The command lines a text suggests (`dnc batch …` inside backquotes, or after a colon at the end of a sentence). */
const suggested = (text: string) => [...text.matchAll(/dnc batch [^`;\n]*/g)].map((m) => m[0]);

describe('a lookup that failed after a charge', () => {
  it('one judgement everywhere, a way out that works and says its cost, and no hint repeats a flag given', async () => {
    const first = await run(['batch', 'calls.csv', '--review-out', path.join(w.dir, 'review.csv')]);
    expect(first.code, first.stderr).toBe(7);
    expect(lookedUp(w.sb).filter((n) => n === FAILING)).toHaveLength(1);
    // The batch's own advice names the way out and its cost, and never the --review-out it was given.
    expect(first.stderr).toContain(
      'to send them again (each charged again: 1 number(s), about 1 credit(s)): dnc batch calls.csv -o ' +
        'calls.results.csv --resend-failed',
    );
    expect(advice(first.stderr)).not.toContain('--review-out');

    // verify, window, report and status: not fit, for the same reason, with the same way out.
    const expected = {
      fitness: 'not_fit',
      because: '2 row(s) to re-check (2 failed)',
      wayOut: [
        'failed rows: 1 number(s) failed after a charge (or were sent without an answer), which a rerun does not ' +
          'send again: `dnc batch calls.csv -o calls.results.csv --resend-failed` sends them again, each charged ' +
          'again (about 1 credit(s))',
      ],
    };
    const before = await judgements();
    expect(before.verify).toEqual({ code: 3, ...expected });
    expect(before.report).toEqual({ code: 3, ...expected });
    expect(before.status).toEqual({ code: 3, ...expected });
    // window writes the numbers fit on their own (exit 0: its list), and says the file is not fit, and why.
    expect(before.window).toEqual({ code: 0, ...expected });
    expect(before.human.verify).toContain('calls.results.csv: NOT FIT TO DIAL: 2 row(s) to re-check (2 failed)\n');
    expect(before.human.window).toMatch(/NOT FIT TO DIAL as of \S+: 2 row\(s\) to re-check \(2 failed\)/);
    expect(before.human.window).not.toContain('fit to dial as of');
    for (const text of Object.values(before.human)) expect(text).toContain(expected.wayOut[0]);

    // A bare rerun sends nothing (the failure was charged) and the file stays not fit.
    const bare = await run(['batch', 'calls.csv']);
    expect(bare.code, bare.stderr).toBe(7);
    expect(lookedUp(w.sb).filter((n) => n === FAILING)).toHaveLength(1);
    expect((await run(['verify', results])).code).toBe(3);

    // The way out, taken: exactly the failed number is sent again, and charged again (1 credit). The service fails it
    // again: the advice no longer names --resend-failed (given) nor --review-out (remembered), but the list it wrote.
    const charged = w.sb.account().creditsUsed;
    const sent = lookedUp(w.sb).length;
    const again = await run(['batch', 'calls.csv', '--resend-failed']);
    expect(again.code, again.stderr).toBe(7);
    expect(lookedUp(w.sb).slice(sent)).toEqual([FAILING]);
    expect(w.sb.account().creditsUsed - charged).toBe(1);
    expect(again.stderr).toContain('--resend-failed: 1 failed number(s) are sent again; each is charged again');
    expect(advice(again.stderr)).toContain(
      '2 row(s) failed after a charge, again after --resend-failed: the service could not settle them; ' +
        `${path.join(w.dir, 'review.csv')} lists them for a person`,
    );
    expect(suggested(again.stderr).filter((c) => c.includes('--resend-failed'))).toEqual([]);
    expect(advice(again.stderr)).not.toContain('--review-out');

    // Once more: answered. The file is fit for every reader, and the charges are all in it (3 for that number).
    const last = await run(['batch', 'calls.csv', '--resend-failed']);
    expect(last.code, last.stderr).toBe(0);
    expect(lookedUp(w.sb).slice(sent)).toEqual([FAILING, FAILING]);
    expect(w.sb.account().creditsUsed - charged).toBe(2);
    const after = await judgements();
    const fit = { fitness: 'fit', because: null, wayOut: [] };
    expect(after.verify).toEqual({ code: 0, ...fit });
    expect(after.window).toEqual({ code: 0, ...fit });
    expect(after.report).toEqual({ code: 0, ...fit });
    expect(after.status).toEqual({ code: 0, ...fit });
    const [header, ...rows] = readCsvIndependently(results);
    const col = (name: string) => header!.indexOf(name);
    const bob = rows.find((r) => r[0] === 'Bob')!;
    expect(bob[col('dnc_result')]).toBe('do_not_call');
    expect(bob[col('dnc_credits')]).toBe('3');
    const credits = rows.reduce((sum, r) => sum + Number(r[col('dnc_credits')]), 0);
    expect(credits).toBe(w.sb.account().creditsUsed);
  });
});
