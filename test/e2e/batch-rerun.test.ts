// "Run it again" does the right, cheap thing: the journal remembers the options, a rerun finishes every row
// without a verdict that no credit was spent on, and reason codes stay true after a stop. Asserted on the
// sandbox's request log: no charged number is sent twice.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.js';
import { runDnc } from '../helpers/cli.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { lookedUp, sandbox, scratch, scratchFolders } from '../batch/helpers.js';
import { pythonWithOpenpyxl } from '../helpers/python.js';

let sb: Sandbox;
let env: Record<string, string>;
const tmp = scratch();
let n = 0;

beforeAll(async () => {
  ({ sb, env } = await sandbox({ allowInsecureWebhooks: true }));
  env = { ...env, ...scratchFolders(tmp.dir) };
});
beforeEach(() => {
  sb.reset();
  sb.setCreditLimit(100_000);
});
afterAll(async () => {
  await sb.close();
  tmp.remove();
});

function list(lines: string[]): { input: string; output: string; dir: string } {
  const dir = path.join(tmp.dir, `run-${++n}`);
  const input = `${dir}-in.csv`;
  writeFileSync(input, `${lines.join('\n')}\n`);
  return { input, output: `${dir}-out.csv`, dir };
}

const objects = (file: string) => {
  const [head, ...rows] = readCsvIndependently(file);
  return rows.map((r) => Object.fromEntries(head!.map((h, i) => [h, r[i]!])));
};
const json = (text: string) => JSON.parse(text.trim().split('\n').pop()!) as Record<string, unknown>;
const US = Array.from({ length: 12 }, (_, i) => `+1202555${String(100 + i).padStart(4, '0')}`);

describe('dnc batch: a rerun resumes with the options it was started with', () => {
  it('after a 429 the short resume command keeps --callable-out and --max-credits: lists complete, the budget holds', async () => {
    const { input, output } = list([
      'name,phone',
      ...US.map((p, i) => `c${i},${p}`),
      'au,+61 2 9876 5432',
      'fr,+33 6 12 34 56 01',
    ]);
    const callable = `${output}.callable.csv`;
    sb.setCreditLimit(5);
    const first = await runDnc(
      ['--json', 'batch', input, '-o', output, '--callable-out', callable, '--max-credits', '9'],
      { env },
    );
    expect(first.code, first.stderr).toBe(5);
    // The printed command is the short one.
    expect(first.stderr).toContain(
      `Resume after a credit top-up or in the next billing period (\`dnc usage\` shows the balance) with: dnc batch ${input} -o ${output}\n`,
    );
    // Reason codes stay true after the stop: AU would never be sent without a webhook URL.
    const stopped = objects(output);
    expect(stopped.find((x) => x.name === 'au')).toMatchObject({
      dnc_result: 'not_checked',
      dnc_error_code: 'webhook_required',
    });
    expect(stopped.filter((x) => x.dnc_error_code === 'credit_limit').length).toBeGreaterThan(0);

    sb.setCreditLimit(1000);
    const second = await runDnc(['--json', 'batch', input, '-o', output], { env });
    expect(second.stderr).toContain(
      'Resuming with the options this batch was started with: --max-credits 9 --callable-out',
    );
    // The remembered budget of 9 stops it again, counting what the first run spent.
    expect(second.code, second.stderr).toBe(5);
    expect(sb.account().creditsUsed).toBeLessThanOrEqual(9);

    const third = await runDnc(['--json', 'batch', input, '-o', output, '--max-credits', '100'], { env });
    // Finished: AU has no verdict (exit 7); FR is refused by the service (unsupported_country, a verdict of its own).
    expect(third.code, third.stderr).toBe(7);
    const rows = objects(output);
    const callableRows = rows.filter((x) => x.dnc_result === 'callable').map((x) => [x.name, x.phone]);
    expect(readCsvIndependently(callable)).toEqual([['name', 'phone'], ...callableRows]);
    expect(callableRows.length).toBeGreaterThan(0);
    const manifest = JSON.parse(readFileSync(output.replace(/\.csv$/, '.manifest.json'), 'utf8')) as {
      lists: Array<{ kind: string }>;
    };
    expect(manifest.lists.map((l) => l.kind)).toEqual(['callable']);
    // Across the three runs no number was charged twice (a 429 is not a charge, so its number is sent again).
    const charged = sb
      .lookups()
      .filter((l) => l.charged)
      .map((l) => l.phoneNumber);
    expect(charged.length).toBe(new Set(charged).size);
    expect(charged).toHaveLength(12);
  });

  it('adding --webhook-url finishes the AU rows without --restart: nothing already answered is sent again', async () => {
    const { input, output } = list(['name,phone', 'us,+12025550100', 'au,+61 2 9876 5432']);
    const first = await runDnc(['batch', input, '-o', output], { env });
    expect(first.code).toBe(7);
    expect(objects(output)[1]).toMatchObject({ dnc_result: 'not_checked', dnc_error_code: 'webhook_required' });
    sb.reset();
    const hook = `${sb.baseUrl}/webhook-sink`;
    const second = await runDnc(['batch', input, '-o', output, '--webhook-url', hook, '--allow-insecure-webhook-url'], {
      env,
    });
    expect(second.stderr).toContain(
      '1 number(s) without a verdict are looked up again (1 not checked, 0 failed without a charge)',
    );
    expect(lookedUp(sb)).toEqual(['+61298765432']);
    expect(second.code, second.stderr).toBe(8);
    expect(objects(output)[1]).toMatchObject({ dnc_result: 'pending' });
  });

  it('an option that changes answers needs --restart, and the message says what that costs and how not to pay twice', async () => {
    const { input, output } = list(['phone', ...US.slice(0, 3)]);
    expect((await runDnc(['batch', input, '-o', output], { env })).code).toBe(0);
    sb.reset();
    const r = await runDnc(['batch', input, '-o', output, '--country', 'GB'], { env });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('[E_JOURNAL_MISMATCH]');
    expect(r.stderr).toContain('3 number(s) are looked up again (this batch has spent 3 credit(s) so far)');
    expect(r.stderr).toContain('--reuse-within');
    expect(lookedUp(sb)).toEqual([]);
  });

  it('--review-out lists the rows that need a person with their reasons; --dial-out the distinct callable numbers', async () => {
    const { input, output } = list([
      'name,phone',
      'a,+12025550100',
      'a-again,+1 202 555 0100',
      'junk,call me',
      'empty,',
      'billing,+12025550995',
      'dnc,+12025550101',
      'au,+61 2 9876 5432',
    ]);
    const review = `${output}.review.csv`;
    const dial = `${output}.dial.txt`;
    const r = await runDnc(['batch', input, '-o', output, '--review-out', review, '--dial-out', dial], { env });
    expect(r.code, r.stderr).toBe(7);
    expect(readCsvIndependently(review)).toEqual([
      ['name', 'phone', 'dnc_phone_e164', 'dnc_result', 'dnc_error_code', 'dnc_error'],
      ['junk', 'call me', '', 'invalid', 'unparseable_number', expect.any(String)],
      ['empty', '', '', 'invalid', 'missing_number', 'no number in phone'],
      ['billing', '+12025550995', '+12025550995', 'failed', 'billing_error', expect.any(String)],
      ['au', '+61 2 9876 5432', '+61298765432', 'not_checked', 'webhook_required', expect.any(String)],
    ]);
    expect(readFileSync(dial, 'utf8')).toBe('+12025550100\n');
    // A bare rerun remembers both lists and writes them again.
    const again = await runDnc(['batch', input, '-o', output], { env });
    expect(again.code).toBe(7);
    expect(again.stderr).toContain('--review-out');
    const manifest = JSON.parse(readFileSync(output.replace(/\.csv$/, '.manifest.json'), 'utf8')) as {
      lists: Array<{ kind: string }>;
    };
    expect(manifest.lists.map((l) => l.kind)).toEqual(['review', 'dial']);
    expect(json((await runDnc(['--json', 'verify', output], {})).stdout)).toMatchObject({ tampered: false });
  });
  it('a remembered option changed outside dnc is refused by name, never taken; given anew, it is replaced', async () => {
    const { input, output } = list(['name,phone', ...US.slice(0, 4).map((p, i) => `c${i},${p}`)]);
    sb.setCreditLimit(2);
    const first = await runDnc(
      ['batch', input, '-o', output, '--max-credits', '3', '--callable-out', `${output}.c.csv`],
      {
        env,
      },
    );
    expect(first.code, first.stderr).toBe(5);
    const sent = lookedUp(sb).length;
    sb.setCreditLimit(1000);
    // Rewritten by another program (Python's sqlite3): a budget that is no number, a list path that is not dnc's.
    const tamper = (python: string) =>
      execFileSync(pythonWithOpenpyxl(), [
        '-c',
        'import sqlite3,json,sys\ndb=sqlite3.connect(sys.argv[1])\n' +
          'm=json.loads(db.execute("select value from meta where key=\'batch\'").fetchone()[0])\n' +
          `${python}\n` +
          'db.execute("update meta set value=? where key=\'batch\'",(json.dumps(m),));db.commit()',
        `${output}.journal.sqlite`,
      ]);
    tamper("m['run']['maxCredits']={'x':1}");
    const refused = await runDnc(['batch', input, '-o', output], { env });
    expect(refused.code, refused.stderr).toBe(3);
    expect(refused.stderr).toContain('[E_JOURNAL_UNREADABLE]');
    expect(refused.stderr).toContain('remembers --max-credits as {"x":1}, a value dnc never writes');
    expect(refused.stderr).toContain('give --max-credits on the command line to replace it');
    tamper("m['callableOut']='relative.csv'");
    const given = await runDnc(['batch', input, '-o', output, '--max-credits', '10'], { env });
    expect(given.code).toBe(3);
    expect(given.stderr).toContain('remembers --callable-out as "relative.csv"');
    expect(lookedUp(sb).length).toBe(sent);
    // Both given anew: the rerun finishes, with the values given.
    const both = await runDnc(
      ['batch', input, '-o', output, '--max-credits', '10', '--callable-out', `${output}.c.csv`],
      { env },
    );
    expect(both.code, both.stderr).toBe(0);
    // (The send the sandbox's credit limit answered 429, uncharged, was sent again: every number once more at most.)
    expect(new Set(lookedUp(sb))).toEqual(new Set(US.slice(0, 4)));
    expect(lookedUp(sb).length).toBeLessThanOrEqual(sent + 4);
    expect(existsSync(path.join(path.dirname(output), 'relative.csv'))).toBe(false);
  });
});
