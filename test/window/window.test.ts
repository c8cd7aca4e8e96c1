// `dnc window` against real batch outputs made against the sandbox: the list read back with Python's csv module,
// the windows compared with the rules table worked out by hand, tampered and stale files refused, nothing sent.
import { existsSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { rewriteOutputAndManifest } from '../helpers/forged-output.js';
import { dnc, DAY, world, type World } from '../helpers/world.js';
import { scrubbedForFile } from './helpers.js';

let w: World;
let input: string;
let results: string;

// Row by row: whose window and why, for Wednesday 1 July 2026 (US daylight time, BST, CEST).
const LIST = [
  'name,phone',
  'new york,+12125550100', // callable; EDT 08:00-21:00 = 12:00Z-01:00Z
  'new york listed,+12125550101', // do_not_call (odd last digit): never in a list
  'phoenix,+16025550102', // callable; MST all year, 08:00-21:00 = 15:00Z-04:00Z
  'sioux falls,+16055550104', // callable; 605 is Mountain and Central: 08:00 MDT to 21:00 CDT = 14:00Z-02:00Z
  'miami,+13055550106', // callable; Florida 08:00-20:00 EDT = 12:00Z-00:00Z
  'louisville,+15025550108', // callable; Kentucky 10:00-21:00 EDT = 14:00Z-01:00Z
  'london,+442079460100', // callable; GB weekdays 08:00-21:00 BST = 07:00Z-20:00Z
  'madrid,+34912345670', // callable; ES weekdays 09:00-21:00 CEST = 07:00Z-19:00Z
  'new york again,+1 212 555 0100', // the first number again: written once
  'billing,+12125550995', // failed (billing_error): left out
];

/** Where the windows are judged from: the day before the slots, so none of them has gone by. */
const NOW = () => new Date('2026-06-30T12:00:00Z');

async function window(from: string, until: string, extra: string[] = [], env: Record<string, string> = {}) {
  const out = path.join(w.dir, 'slot.txt');
  const r = await dnc(
    ['window', results, '--from', from, '--until', until, '--dial-out', out, ...extra],
    {
      ...w.env,
      ...env,
    },
    { now: NOW, cwd: w.dir },
  );
  return { ...r, out, list: existsSync(out) ? readFileSync(out, 'utf8') : null };
}

/** The callable numbers of the results, in order of first appearance, as Python's csv module reads the file. */
function callableByPython(): string[] {
  const [header, ...rows] = readCsvIndependently(results);
  const e164 = header!.indexOf('dnc_phone_e164');
  const result = header!.indexOf('dnc_result');
  return [...new Set(rows.filter((r) => r[result] === 'callable').map((r) => r[e164]!))];
}

/** The list `dnc window` wrote, checked against Python's reading: only callable numbers, each once, in file order. */
function listed(text: string | null): string[] {
  expect(text).not.toBeNull();
  const numbers = text!.split('\n');
  expect(numbers.pop()).toBe('');
  const callable = callableByPython();
  expect(numbers.filter((n) => !callable.includes(n))).toEqual([]);
  expect(numbers).toEqual(callable.filter((n) => numbers.includes(n)));
  return numbers;
}

// The billing failure has no verdict: the batch exits 7.
const scrubbed = scrubbedForFile(LIST, 7);
beforeAll(() => {
  ({ w, input, results } = scrubbed);
});

describe('dnc window: the numbers callable throughout a slot', () => {
  it('writes each callable number inside its window for the whole slot, once, in file order; sends nothing', async () => {
    const sent = w.sb.requests().length;
    const r = await window('2026-07-01T14:00:00Z', '2026-07-01T16:00:00Z');
    expect(r.code, r.stderr).toBe(0);
    // Phoenix opens at 15:00Z: not for the whole slot. Everyone else is inside from 14:00Z to 16:00Z.
    expect(listed(r.list)).toEqual([
      '+12125550100',
      '+16055550104',
      '+13055550106',
      '+15025550108',
      '+442079460100',
      '+34912345670',
    ]);
    expect(statSync(r.out).mode & 0o777).toBe(0o600);
    expect(w.sb.requests().length).toBe(sent);
    expect(r.stdout).toContain(
      'slot.txt: 6 number(s) callable throughout 2026-07-01T14:00:00Z to 2026-07-01T16:00:00Z',
    );
    expect(r.stdout).toContain('  callable        7 distinct number(s) fit to dial\n');
    expect(r.stdout).toContain('  not in window   1 (outside their window for part or all of the slot)\n');
    expect(r.stdout).toContain('  left out        1 row(s): 1 failed (`dnc verify` lists them)\n');
  });

  it('a slot across a window edge: in only when the slot starts at or after the opening and ends by the closing', async () => {
    // Phoenix opens at 15:00Z: a slot from 14:30Z crosses the edge; one from 15:00Z does not.
    expect(listed((await window('2026-07-01T14:30:00Z', '2026-07-01T15:30:00Z')).list)).not.toContain('+16025550102');
    expect(listed((await window('2026-07-01T15:00:00Z', '2026-07-01T15:30:00Z')).list)).toContain('+16025550102');
    // The closing is not inside the window: Miami closes at 00:00Z, New York at 01:00Z, Louisville at 01:00Z too.
    const late = await window('2026-07-02T00:00:00Z', '2026-07-02T01:00:00Z');
    expect(listed(late.list)).toEqual(['+12125550100', '+16025550102', '+16055550104', '+15025550108']);
    const over = await window('2026-07-02T00:30:00Z', '2026-07-02T01:00:01Z');
    expect(listed(over.list)).toEqual(['+16025550102', '+16055550104']);
  });

  it('the offset of --from and --until is taken as written: 10:00-12:00 at -04:00 is 14:00Z-16:00Z', async () => {
    const r = await window('2026-07-01T10:00:00-04:00', '2026-07-01T12:00:00-04:00', ['--json']);
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout);
    expect(summary).toMatchObject({
      from: '2026-07-01T14:00:00Z',
      until: '2026-07-01T16:00:00Z',
      rows: 10,
      phone_columns: 1,
      fit_numbers: 7,
      written: 6,
      outside_window: 1,
      never_callable: 0,
      left_out: { failed: 1 },
      overrides: [],
    });
    expect(summary.rules_version).toMatch(/^dnc-rules\/\S+ tzdata\/\S+ date-holidays\/\S+ libphonenumber\/\S+$/);
    // The batch recorded the rules its calling columns were computed under: the same, without team settings.
    expect(summary.file_rules_version).toBe(summary.rules_version);
  });

  it('a weekend: no calls in Madrid on Saturday; London from 09:00', async () => {
    // Saturday 4 July 2026, 08:30-09:30 BST: GB's weekend hours start at 09:00; ES has no calls at all.
    const r = await window('2026-07-04T07:30:00Z', '2026-07-04T08:30:00Z');
    expect(listed(r.list)).not.toContain('+442079460100');
    expect(listed(r.list)).not.toContain('+34912345670');
    expect(listed((await window('2026-07-04T08:00:00Z', '2026-07-04T09:00:00Z')).list)).toContain('+442079460100');
  });

  it('the team policy narrows the slot, and an override is counted and said', async () => {
    const settings = path.join(w.dir, 'calling.json');
    writeFileSync(
      settings,
      JSON.stringify({
        policy: { name: 'Acme', hours: { 'mon-fri': '09:00-19:00' } },
        overrides: [
          {
            reason: 'customers with consent (LEG-42)',
            countries: ['US'],
            states: ['KY'],
            hours: { 'mon-sun': '09:00-21:00' },
          },
        ],
      }),
      { mode: 0o600 },
    );
    // 13:00Z-14:00Z is 09:00-10:00 EDT: Kentucky's law opens at 10:00, its override at 09:00; GB and ES are open.
    const law = await window('2026-07-01T13:00:00Z', '2026-07-01T14:00:00Z');
    expect(listed(law.list)).not.toContain('+15025550108');
    const r = await window('2026-07-01T13:00:00Z', '2026-07-01T14:00:00Z', ['--calling-settings', settings]);
    expect(r.code, r.stderr).toBe(0);
    // 13:00Z is 09:00 EDT, when the policy opens; Phoenix (06:00 MST) and Sioux Falls (07:00 MDT) are still closed.
    expect(listed(r.list)).toEqual(['+12125550100', '+13055550106', '+15025550108', '+442079460100', '+34912345670']);
    expect(r.stderr).toContain(
      "dnc: a calling override set the law's hours aside for 1 number(s): customers with consent (LEG-42)",
    );
    expect(r.stdout).toContain('  override        1 number(s): customers with consent (LEG-42)\n');
    // 19:00-20:00 in London and Madrid is past the policy's 19:00.
    const evening = await window('2026-07-01T18:00:00Z', '2026-07-01T19:00:00Z', ['--calling-settings', settings]);
    expect(listed(evening.list)).toEqual([
      '+12125550100',
      '+16025550102',
      '+16055550104',
      '+13055550106',
      '+15025550108',
    ]);
  });

  it('--dial-out - writes the list to standard output and the summary to stderr; with --json it is refused', async () => {
    const r = await dnc(
      ['window', results, '--from', '2026-07-01T14:00:00Z', '--until', '2026-07-01T16:00:00Z', '--dial-out', '-'],
      w.env,
      { now: NOW },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.split('\n').filter(Boolean)).toHaveLength(6);
    expect(r.stderr).toContain('standard output: 6 number(s) callable throughout');
    const both = await dnc(
      [
        '--json',
        'window',
        results,
        '--from',
        '2026-07-01T14:00:00Z',
        '--until',
        '2026-07-01T16:00:00Z',
        '--dial-out',
        '-',
      ],
      w.env,
    );
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('--json and --dial-out - would both write to standard output');
  });
});

describe('dnc window refuses what it cannot stand by', () => {
  it('a slot given without an offset, backwards, or longer than 35 days (exit 2)', async () => {
    for (const [from, until, why] of [
      ['2026-07-01T14:00:00', '2026-07-01T16:00:00Z', 'give its offset too'],
      ['2026-07-01T16:00:00Z', '2026-07-01T14:00:00Z', 'is not after --from'],
      ['2026-07-01T14:00:00Z', '2026-07-01T14:00:00Z', 'is not after --from'],
      ['2026-07-01T14:00:00Z', '2026-08-15T14:00:00Z', 'longer than 35 days'],
    ] as const) {
      const r = await window(from, until);
      expect(r.code, `${from} ${until}`).toBe(2);
      expect(r.stderr).toContain(why);
    }
  });

  it('a list that would overwrite the evidence: the results, manifest, journal, input, or a link to one (exit 2)', async () => {
    const link = path.join(w.dir, 'link.txt');
    symlinkSync(results, link);
    const before = readFileSync(results);
    for (const target of [
      results,
      results.replace('.csv', '.manifest.json'),
      `${results}.journal.sqlite`,
      input,
      link,
    ]) {
      const r = await dnc(
        ['window', results, '--from', '2026-07-01T14:00:00Z', '--until', '2026-07-01T16:00:00Z', '--dial-out', target],
        w.env,
        { now: NOW },
      );
      expect(r.code, target).toBe(2);
      expect(r.stderr).toContain('[E_PATH_COLLISION]');
    }
    expect(readFileSync(results).equals(before)).toBe(true);
  });

  it('a stale file: verdicts older than their validity at the end of the slot (exit 3, nothing written)', async () => {
    const out = path.join(w.dir, 'stale.txt');
    writeFileSync(out, 'what was there\n');
    const from = new Date(Date.now() + 40 * DAY);
    const r = await dnc(
      [
        'window',
        results,
        '--from',
        from.toISOString(),
        '--until',
        new Date(from.getTime() + 3_600_000).toISOString(),
        '--dial-out',
        out,
      ],
      w.env,
    );
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('[E_NOT_FIT_TO_DIAL]');
    expect(r.stderr).toMatch(
      /is not fit to dial as of \S+ \(the end of the slot\): callable verdicts too old or not evidenced \(\d+ stale\); nothing was written/,
    );
    expect(readFileSync(out, 'utf8')).toBe('what was there\n');
    // --max-age, as verify takes it, says how old is old enough.
    const lenient = await dnc(
      [
        'window',
        results,
        '--from',
        from.toISOString(),
        '--until',
        new Date(from.getTime() + 3_600_000).toISOString(),
        '--dial-out',
        out,
        '--max-age',
        '60d',
      ],
      w.env,
    );
    expect(lenient.code, lenient.stderr).toBe(0);
  });

  it('a number added to the internal list since the scrub is left out, and said', async () => {
    const added = await dnc(['suppress', 'add', '+16055550104', '--reason', 'asked on the phone'], w.env);
    expect(added.code, added.stderr).toBe(0);
    try {
      const r = await window('2026-07-01T14:00:00Z', '2026-07-01T16:00:00Z');
      expect(r.code, r.stderr).toBe(0);
      expect(listed(r.list)).not.toContain('+16055550104');
      expect(r.stdout).toContain('left out        2 row(s): 1 suppressed, 1 failed');
    } finally {
      expect((await dnc(['suppress', 'remove', '+16055550104', '--reason', 'test over'], w.env)).code).toBe(0);
    }
  });

  it('a tampered file: a row edited, or the file and its manifest rewritten together (exit 3, nothing written)', async () => {
    const original = readFileSync(results, 'utf8');
    const manifest = results.replace('.csv', '.manifest.json');
    const originalManifest = readFileSync(manifest);
    const out = path.join(w.dir, 'tampered.txt');
    try {
      // A listed number turned callable.
      writeFileSync(results, original.replace(/(\+12125550101,US,)do_not_call,true/, '$1callable,false'));
      const r = await dnc(
        ['window', results, '--from', '2026-07-01T14:00:00Z', '--until', '2026-07-01T16:00:00Z', '--dial-out', out],
        w.env,
        { now: NOW },
      );
      expect(r.code).toBe(3);
      expect(r.stderr).toContain('[E_NOT_FIT_TO_DIAL]');
      expect(r.stderr).toContain('is not what dnc wrote');
      expect(existsSync(out)).toBe(false);
      // The same edit with the manifest rewritten to match: the state folder's anchor still knows what dnc wrote.
      rewriteOutputAndManifest(results, original.replace(/(\+12125550101,US,)do_not_call,true/, '$1callable,false'));
      const forged = await dnc(
        ['window', results, '--from', '2026-07-01T14:00:00Z', '--until', '2026-07-01T16:00:00Z', '--dial-out', out],
        w.env,
        { now: NOW },
      );
      expect(forged.code).toBe(3);
      expect(forged.stderr).toContain('[E_NOT_FIT_TO_DIAL]');
      expect(existsSync(out)).toBe(false);
    } finally {
      writeFileSync(results, original);
      writeFileSync(manifest, originalManifest);
    }
    // Put back, it is fit again.
    expect((await window('2026-07-01T14:00:00Z', '2026-07-01T16:00:00Z')).code).toBe(0);
  });
});

describe('dnc window and webhook results', () => {
  it('pending rows are left out and counted; the rest of the file still makes a list', async () => {
    const hooked = await world({ allowInsecureWebhooks: true, timeScale: 1000 });
    try {
      const list = hooked.file('calls.csv', ['name,phone', 'a,+12125550100', 'b,+61412345600', 'c,+12125550102']);
      const out = path.join(hooked.dir, 'calls.results.csv');
      // AU is webhook-only; its push goes to a port where nothing listens, so its row stays pending.
      const b = await dnc(
        ['batch', list, '-o', out, '--webhook-url', 'http://127.0.0.1:9/h', '--allow-insecure-webhook-url'],
        hooked.env,
      );
      expect(b.code, b.stderr).toBe(8);
      const dial = path.join(hooked.dir, 'slot.txt');
      const r = await dnc(
        [
          '--json',
          'window',
          out,
          '--from',
          '2026-07-01T14:00:00Z',
          '--until',
          '2026-07-01T16:00:00Z',
          '--dial-out',
          dial,
        ],
        hooked.env,
        { now: NOW },
      );
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ written: 2, left_out: { pending: 1 } });
      expect(readFileSync(dial, 'utf8')).toBe('+12125550100\n+12125550102\n');
    } finally {
      await hooked.cleanup();
    }
  });
});

describe('dnc window and a list of several phone columns', () => {
  it("each number by its own result; one number's failure leaves out that number alone", async () => {
    const multi = await world();
    try {
      const list = multi.file('calls.csv', [
        'name,home,mobile',
        'a,+12125550100,+16025550102',
        'b,+12125550101,+442079460100', // home listed: the row is do_not_call, its callable mobile still goes in
        'c,+16055550104,+12125550995', // mobile failed: the row is failed, its callable home still goes in
        'd,+16025550102,', // a number seen before, and an empty cell
      ]);
      const out = path.join(multi.dir, 'calls.results.csv');
      const b = await dnc(['batch', list, '-o', out, '--column', 'home,mobile'], multi.env);
      // Row c is failed (the row rule): the batch is unfinished, yet each callable number is fit on its own.
      expect(b.code, b.stderr).toBe(7);
      const dial = path.join(multi.dir, 'slot.txt');
      const slot = ['--from', '2026-07-01T15:00:00Z', '--until', '2026-07-01T16:00:00Z', '--dial-out', dial];
      const r = await dnc(['--json', 'window', out, ...slot], multi.env, { now: NOW });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({
        phone_columns: 2,
        fit_numbers: 4,
        written: 4,
        left_out: { failed: 1 },
      });
      expect(readFileSync(dial, 'utf8')).toBe('+12125550100\n+16025550102\n+442079460100\n+16055550104\n');
    } finally {
      await multi.cleanup();
    }
  });
});
