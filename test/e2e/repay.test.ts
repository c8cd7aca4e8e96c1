// Asked before paying again (issue 36): the built CLI scrubs a list, then the same list saved as .xlsx, against the
// sandbox over loopback with a home of its own. Without a terminal it pays again and says so, --reuse-within 1d pays
// nothing, on a terminal (`script`) each answer costs what it says; the credit guard's estimate is what is charged.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { assertBuilt, REPO_ROOT, spawnDnc } from '../helpers/cli.js';
import { pythonWithOpenpyxl } from '../helpers/python.js';

let dir: string;
let sb: Sandbox;
let env: Record<string, string>;

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-repay-'));
  mkdirSync(path.join(dir, 'home'));
  sb = await startSandbox({ port: 0, seed: 7 });
  env = { DNC_BASE_URL: sb.baseUrl, DNC_API_KEY: sb.apiKey, HOME: path.join(dir, 'home') };
});
afterEach(async () => {
  await sb.close();
  rmSync(dir, { recursive: true, force: true });
});

const credits = () => sb.account(sb.apiKey).creditsUsed;
const json = (s: string) => JSON.parse(s.trim().split('\n').at(-1)!) as Record<string, any>;
const T = { timeoutMs: 60_000 };

/** A CRM export: Mobile/Home/Business phones and a Country column (US 1 credit, GB 1, DE 2): 27 numbers, 33 credits. */
const CRM = [
  ['Name', 'Mobile Phone', 'Home Phone', 'Business Phone', 'Country'],
  ...Array.from({ length: 9 }, (_, i) => {
    const c = ['US', 'GB', 'DE'][i % 3]!;
    const n = (k: number) =>
      c === 'US'
        ? `+1 202 555 ${1000 + i * 3 + k}`
        : c === 'GB'
          ? `+44 20 7946 ${1000 + i * 3 + k}`
          : `+49 30 ${1234000 + i * 3 + k}`;
    return [`P${i}`, n(0), n(1), n(2), c];
  }),
];
const CRM_CREDITS = 3 * 3 * 1 + 3 * 3 * 1 + 3 * 3 * 2;

/** list.csv, and the same list saved as list.xlsx by openpyxl. */
function lists(rows: string[][] = CRM): { csv: string; xlsx: string } {
  const csv = path.join(dir, 'list.csv');
  writeFileSync(csv, rows.map((r) => r.join(',')).join('\n') + '\n');
  const xlsx = path.join(dir, 'list.xlsx');
  const py =
    'import csv,sys,openpyxl\nwb=openpyxl.Workbook();ws=wb.active\n[ws.append(r) for r in csv.reader(open(sys.argv[1]))]\nwb.save(sys.argv[2])';
  execFileSync(pythonWithOpenpyxl(), ['-c', py, csv, xlsx]);
  return { csv, xlsx };
}

/** `dnc ARGS` under `script`: stdin and stderr are a terminal; `answer` is typed once the question is shown. */
function onTerminal(args: string[], answer: string | null): Promise<{ code: number; output: string }> {
  assertBuilt();
  const quoted = args.map((a) => `'${a}'`).join(' ');
  const command = `stty cols 120 2>/dev/null; exec "${process.execPath}" bin/dnc.js ${quoted}`;
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qec', command, '/dev/null'], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', TERM: 'dumb', NO_COLOR: '1', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    let typed = false;
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      output += d;
      if (!typed && answer !== null && output.includes('Reuse, pay again or stop?')) {
        typed = true;
        child.stdin.write(`${answer}\r`);
      }
    });
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, output: output.replace(/\r\n/g, '\n') });
    });
  });
}

describe('the same list scrubbed again (the CSV, then the same list as .xlsx)', () => {
  it('without a terminal or a flag: paid again, and the summary says so; --reuse-within 1d pays nothing', async () => {
    const { csv, xlsx } = lists();
    expect((await spawnDnc(['batch', csv], { env, ...T })).code).toBe(0);
    expect(credits()).toBe(CRM_CREDITS);

    const again = await spawnDnc(['--json', '--verbose', 'batch', xlsx, '-o', path.join(dir, 'again.xlsx')], {
      env,
      ...T,
    });
    expect(again.code, again.stderr).toBe(0);
    expect(credits()).toBe(2 * CRM_CREDITS);
    expect(again.stderr).toContain(
      `dnc: 27 of the 27 number(s) to look up were answered by this service within the last day: they are paid for again (about ${CRM_CREDITS} credit(s))`,
    );
    const summary = json(again.stdout);
    expect(summary).toMatchObject({ credits_used: CRM_CREDITS, stopped_reason: null, unique_numbers: 27 });
    expect(summary.paid_again).toEqual({
      numbers: 27,
      credits: CRM_CREDITS,
      chosen: false,
      hint: '--reuse-within 1d would have reused them',
      charged_without_verdict: { numbers: 0, credits: 0 },
    });
    expect(summary.credit_estimate).toEqual({ numbers_to_look_up: 27, estimated_credits: CRM_CREDITS });

    const text = await spawnDnc(['batch', xlsx, '-o', path.join(dir, 'third.csv')], { env, ...T });
    expect(text.stdout).toContain(
      `27 number(s) answered within the last day were paid again (${CRM_CREDITS} credit(s)); --reuse-within 1d would have reused them`,
    );
    expect(credits()).toBe(3 * CRM_CREDITS);

    const reused = await spawnDnc(
      ['--json', 'batch', xlsx, '-o', path.join(dir, 'reused.xlsx'), '--reuse-within', '1d'],
      { env, ...T },
    );
    expect(reused.code, reused.stderr).toBe(0);
    expect(credits()).toBe(3 * CRM_CREDITS);
    expect(json(reused.stdout)).toMatchObject({
      credits_used: 0,
      paid_again: null,
      credit_estimate: { numbers_to_look_up: 0, estimated_credits: 0 },
    });

    // --no-reuse: paid again, as said, without the hint.
    const fresh = await spawnDnc(['--json', 'batch', xlsx, '-o', path.join(dir, 'fresh.csv'), '--no-reuse'], {
      env,
      ...T,
    });
    expect(json(fresh.stdout).paid_again).toEqual({
      numbers: 27,
      credits: CRM_CREDITS,
      chosen: true,
      hint: null,
      charged_without_verdict: { numbers: 0, credits: 0 },
    });
    expect(fresh.stderr).not.toContain('paid for again');
    expect(credits()).toBe(4 * CRM_CREDITS);
    const both = await spawnDnc(
      ['batch', xlsx, '-o', path.join(dir, 'both.csv'), '--no-reuse', '--reuse-within', '1d'],
      { env, ...T },
    );
    expect(both.code).toBe(2);
  });

  it.runIf(existsSync('/usr/bin/script'))(
    'on a terminal it asks; each answer costs what it says, and a resume does not ask again',
    async () => {
      const { csv, xlsx } = lists();
      expect((await spawnDnc(['batch', csv], { env, ...T })).code).toBe(0);
      const base = credits();

      const stop = await onTerminal(['batch', xlsx, '-o', path.join(dir, 'stop.xlsx')], 's');
      expect(stop.output).toContain(`  p  pay again for fresh answers: about ${CRM_CREDITS} credit(s) (as --no-reuse)`);
      expect(stop.output).toContain(
        'dnc: 27 of the 27 number(s) to look up were answered by this service within the last day',
      );
      expect(stop.code).toBe(130);
      expect(stop.output).toContain('nothing was sent');
      expect(credits()).toBe(base);
      expect(existsSync(path.join(dir, 'stop.xlsx'))).toBe(false);

      const reuse = await onTerminal(['batch', xlsx, '-o', path.join(dir, 'reuse.xlsx')], 'r');
      expect(reuse.code, reuse.output).toBe(0);
      expect(reuse.output).toContain('27 number(s) answered within the last day reused, as answered');
      expect(credits()).toBe(base);

      // Pay again, with a budget that stops the batch: the rerun on a terminal follows the answer without asking.
      const out = path.join(dir, 'pay.xlsx');
      const pay = await onTerminal(['batch', xlsx, '-o', out, '--max-credits', '10', '--concurrency', '1'], 'p');
      expect(pay.code, pay.output).toBe(5);
      const paid = credits() - base;
      expect(paid).toBeGreaterThan(0);
      expect(paid).toBeLessThanOrEqual(10);
      const meta = JSON.parse(
        execFileSync(
          pythonWithOpenpyxl(),
          [
            '-c',
            'import sqlite3,sys;print(sqlite3.connect(sys.argv[1]).execute("select value from meta where key=\'batch\'").fetchone()[0])',
            `${out}.journal.sqlite`,
          ],
          { encoding: 'utf8' },
        ),
      );
      expect(meta.reuseAnswer).toMatchObject({ answer: 'pay_again', numbers: 27, credits: CRM_CREDITS });
      expect(meta.run.noReuse).toBe(true);
      const resume = await onTerminal(['batch', xlsx, '-o', out, '--max-credits', 'none'], null);
      expect(resume.code, resume.output).toBe(0);
      expect(resume.output).not.toContain('Reuse, pay again or stop?');
      expect(resume.output).toContain('--no-reuse');
      expect(credits() - base).toBe(CRM_CREDITS);
    },
  );
});

describe('the credit guard says what the run charges', () => {
  it('estimate == credits charged, over generated lists, answers of the last day and decisions', async () => {
    // Costs learned first (a country not learned yet is counted at 1 credit, "at least").
    const seed = path.join(dir, 'seed.csv');
    writeFileSync(seed, 'phone\n+12025550000\n+442079460000\n+49301230000\n');
    expect((await spawnDnc(['batch', seed], { env, ...T })).code).toBe(0);
    const pool = [
      ...Array.from({ length: 12 }, (_, i) => `+1202555${2000 + i}`),
      ...Array.from({ length: 8 }, (_, i) => `+4420794${62000 + i}`),
      ...Array.from({ length: 8 }, (_, i) => `+4930${1240000 + i}`),
    ];
    const cost = (n: string) => (n.startsWith('+49') ? 2 : 1);
    let run = 0;
    const answered = new Set<string>();
    await fc.assert(
      fc.asyncProperty(
        fc.subarray(pool),
        fc.array(fc.oneof(fc.constantFrom(...pool), fc.constant('n/a'), fc.constant('+1 555')), {
          minLength: 1,
          maxLength: 20,
        }),
        fc.constantFrom([], ['--reuse-within', '1d'], ['--no-reuse']),
        async (first, second, flags) => {
          run++;
          const a = path.join(dir, `a${run}.csv`);
          writeFileSync(a, ['phone', ...first].join('\n') + '\n');
          if (first.length > 0) expect((await spawnDnc(['batch', a], { env, ...T })).code).toBe(0);
          const b = path.join(dir, `b${run}.csv`);
          writeFileSync(b, ['phone', ...second].join('\n') + '\n');
          const before = credits();
          const r = await spawnDnc(['--json', 'batch', b, ...flags], { env, ...T });
          expect(r.code, r.stderr).toBe(0);
          const charged = credits() - before;
          expect(json(r.stdout).credit_estimate.estimated_credits).toBe(charged);
          for (const n of first) answered.add(n);
          // A number answered within the last day (by any run so far) is reused only when asked to.
          const distinct = [...new Set(second.filter((n) => pool.includes(n)))];
          const sent = flags[0] === '--reuse-within' ? distinct.filter((n) => !answered.has(n)) : distinct;
          expect(charged).toBe(sent.reduce((sum, n) => sum + cost(n), 0));
          for (const n of distinct) answered.add(n);
        },
      ),
      { numRuns: 8 },
    );
  });
});
