// The verdict of a row of several phone columns (cli.md, "With several phone columns"): every combination of three
// numbers' states run through the built CLI against the sandbox and read back with Python's csv module, compared
// with the rule as the contract states it (written again here, not imported); the workbook's cell colours read with
// openpyxl; exemptions; what verify makes of forged rows and of files written before the rule; the summary.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.js';
import { sandbox, scratch, scratchFolders } from '../batch/helpers.js';
import { runDnc } from '../helpers/cli.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { readWorkbookIndependently } from '../helpers/xlsx-oracle.js';
import { rewriteOutputAndManifest } from '../helpers/forged-output.js';

// A sandbox that pushes to a loopback listener (the AU numbers are pending with a webhook URL).
const file = scratch();
let sb: Sandbox;
let env: Record<string, string>;

beforeAll(async () => {
  const started = await sandbox({ allowInsecureWebhooks: true });
  sb = started.sb;
  env = { ...started.env, ...scratchFolders(file.dir) };
});
beforeEach(() => sb.setCreditLimit(1_000_000));
afterEach(() => sb.reset());
afterAll(async () => {
  await sb?.close();
  file.remove();
});

const dnc = (args: string[]) => runDnc(args, { env, homedir: file.dir, cwd: file.dir });

function write(name: string, lines: string[]): string {
  const p = path.join(file.dir, name);
  writeFileSync(p, lines.join('\n') + '\n');
  return p;
}

/** Rows of a CSV as objects, read by Python's csv module. */
function rowsOf(out: string): Array<Record<string, string>> {
  const [header, ...rows] = readCsvIndependently(out);
  return rows.map((r) => Object.fromEntries(header!.map((h, i) => [h, r[i]!])));
}

/** What a number's own cell is, in the sandbox's rules (docs/sandbox.md): its last digits decide. */
type State = 'callable' | 'do_not_call' | 'invalid' | 'unsupported_country' | 'queued_au' | 'failed';
const STATES: readonly State[] = ['callable', 'do_not_call', 'invalid', 'unsupported_country', 'queued_au', 'failed'];

/** A cell of the given state: E.164 (or nothing) as written in the list, and its number as dnc normalises it. */
function cellArbitrary(state: State): fc.Arbitrary<{ raw: string; e164: string }> {
  const pick = (numbers: string[]) => fc.constantFrom(...numbers.map((n) => ({ raw: n, e164: n })));
  switch (state) {
    // A few of each, so that a number recurs across rows and within a row.
    case 'callable':
      return pick(['+12025550100', '+12025550102', '+12025550104', '+442079460102']);
    case 'do_not_call':
      return pick(['+12025550101', '+12025550103', '+442079460103']);
    case 'invalid':
      return fc.constantFrom({ raw: '', e164: '' }, { raw: 'n/a', e164: '' }, { raw: '12', e164: '' });
    case 'unsupported_country':
      return pick(['+33612345602', '+33612345604']);
    case 'queued_au':
      return pick(['+61412345002', '+61412345004']);
    case 'failed':
      // billing_error not charged, lookup_expired: answered failures, never charged.
      return pick(['+12025550996', '+12025550997']);
  }
}

/** The contract's rule, as cli.md states it, over the numbers' results. */
function ruleOf(results: readonly string[]): string {
  const any = (r: string) => results.includes(r);
  if (any('do_not_call')) return 'do_not_call';
  const blocked = any('failed') || any('pending') || any('not_checked');
  if (any('callable') && !blocked) return 'callable';
  return ['failed', 'pending', 'not_checked', 'unsupported_country', 'invalid'].find(any) ?? 'invalid';
}

const HEADER = 'Name,Mobile Phone,Home Phone,Business Phone,Country';

describe('the verdict of a row of three phone columns', () => {
  it(
    'every combination of three states, against the rule as the contract states it',
    { timeout: 240_000 },
    async () => {
      const seed = Number(process.env.ROW_RULE_SEED ?? Date.now() % 2 ** 31);
      // (A failure names the seed: ROW_RULE_SEED=<seed> runs the same list again.)
      console.log(`row rule: seed ${seed}`);
      const combos = STATES.flatMap((a) => STATES.flatMap((b) => STATES.map((c) => [a, b, c] as const)));
      const cells = fc.sample(fc.tuple(...combos.map((combo) => fc.tuple(...combo.map(cellArbitrary)))), {
        seed,
        numRuns: 1,
      })[0]!;
      const input = write('combos.csv', [
        HEADER,
        ...cells.map((row, i) => [`r${i} ${combos[i]!.join('/')}`, ...row.map((c) => c.raw), 'US'].join(',')),
      ]);
      // Without a webhook URL the AU numbers are not_checked; with one, pending: two runs cover both.
      for (const [name, extra, au] of [
        ['plain', [], 'not_checked'],
        ['hooked', ['--webhook-url', 'http://127.0.0.1:9/hooks/x', '--allow-insecure-webhook-url'], 'pending'],
      ] as const) {
        const out = path.join(file.dir, `combos-${name}.results.csv`);
        const dial = path.join(file.dir, `combos-${name}.dial.txt`);
        const callableOut = path.join(file.dir, `combos-${name}.callable.csv`);
        const r = await dnc(['batch', input, '-o', out, '--dial-out', dial, '--callable-out', callableOut, ...extra]);
        expect([7, 8], r.stderr).toContain(r.code);
        const rows = rowsOf(out);
        expect(rows.length).toBe(combos.length);
        const stateResult = (s: State) => (s === 'queued_au' ? au : s);
        const wrong: string[] = [];
        rows.forEach((row, i) => {
          const own = [1, 2, 3].map((n) => row[`dnc_${n}_result`]!);
          // Each number's own result is the sandbox's, so the rule below is fed what the contract means.
          expect(own, row.Name).toEqual(combos[i]!.map(stateResult));
          const expected = ruleOf(own);
          const callable = [...new Set(cells[i]!.filter((_, k) => own[k] === 'callable').map((c) => c.e164))];
          const firstDeciding = cells[i]!.find((_, k) => own[k] === expected)?.e164 ?? '';
          const want = {
            result: expected,
            callable: callable.join(' '),
            e164: callable[0] ?? firstDeciding,
            doNotCall: expected === 'do_not_call' ? 'true' : expected === 'callable' ? 'false' : row.dnc_do_not_call,
          };
          const got = {
            result: row.dnc_result,
            callable: row.dnc_callable_numbers,
            e164: row.dnc_phone_e164,
            doNotCall: row.dnc_do_not_call,
          };
          if (JSON.stringify(got) !== JSON.stringify(want))
            wrong.push(`${row.Name}: ${JSON.stringify(got)} ≠ ${JSON.stringify(want)}`);
        });
        expect(wrong, `seed ${seed}`).toEqual([]);
        // No callable row holds a number that is not callable; dnc_callable_numbers never lists one.
        const callableOf = new Map(
          rows.flatMap((row) => [1, 2, 3].map((n) => [row[`dnc_${n}_e164`]!, row[`dnc_${n}_result`]!])),
        );
        for (const row of rows) {
          for (const n of row.dnc_callable_numbers!.split(' ').filter(Boolean))
            expect(callableOf.get(n)).toBe('callable');
          if (row.dnc_result === 'callable')
            for (const k of [1, 2, 3])
              expect(['callable', 'invalid', 'unsupported_country']).toContain(row[`dnc_${k}_result`]);
        }
        // The dialler's exports are as before: every callable number once; a callable-out row shows callable numbers only.
        const everyCallable = [...callableOf].filter(([n, res]) => n !== '' && res === 'callable').map(([n]) => n);
        expect(readFileSync(dial, 'utf8').trim().split('\n').sort()).toEqual([...new Set(everyCallable)].sort());
        for (const row of rowsOf(callableOut)) {
          for (const col of ['Mobile Phone', 'Home Phone', 'Business Phone']) {
            if (row[col] !== '') expect(callableOf.get(row[col]!), `${row.Name} ${col}`).toBe('callable');
          }
        }
        // verify proves the rows it wrote: no row is an edit, none breaks the rule.
        const v = JSON.parse((await dnc(['verify', out, '--json'])).stdout);
        expect(v, JSON.stringify(v.recheck?.slice(0, 3))).toMatchObject({ tampered: false, differences: [] });
        expect(v.recheck_by_reason.edited).toBeUndefined();
        expect(v.recheck_by_reason.row_rule).toBeUndefined();
      }
    },
  );
});

/** A CRM export of three phones (the names the analyst met): one row of each kind that matters. */
const CONTACTS = [
  HEADER,
  'Rosa Smith,+1 202 555 0102,+1 202 555 0103,+1 202 555 0105,US', // callable mobile, two registered: do_not_call
  'Sam Lee,+1 202 555 0104,,n/a,US', // callable, an empty cell and an unreadable one: callable
  'Uma Park,,+33 6 12 34 56 02,+1 202 555 0108,US', // unsupported and callable: callable
  'Vic Diaz,,,,US', // no number at all
];
const GREEN = 'FFC6EFCE';
const RED = 'FFFFC7CE';
const AMBER = 'FFFFEB9C';

describe('a results workbook of three phone columns', () => {
  it('fills each phone cell, and its dnc_N_* cells, by its own number; the rest of the row by the row', async () => {
    const input = write('contacts-book.csv', CONTACTS);
    const out = path.join(file.dir, 'contacts-book.results.xlsx');
    const r = await dnc(['batch', input, '-o', out]);
    expect(r.code, r.stderr).toBe(0);
    const [results] = readWorkbookIndependently(out);
    const [header, ...rows] = results!.rows;
    const col = (name: string) => header!.findIndex((c) => c.v === name);
    const fills = (row: number, names: string[]) => names.map((n) => rows[row]![col(n)]!.fill);
    const phones = ['Mobile Phone', 'Home Phone', 'Business Phone'];
    expect(rows.map((row) => row[col('dnc_result')]!.v)).toEqual(['do_not_call', 'callable', 'callable', 'invalid']);
    // Rosa: a red row, whose callable mobile is green and whose registered numbers are red.
    expect(fills(0, ['Name', 'dnc_result', ...phones])).toEqual([RED, RED, GREEN, RED, RED]);
    expect(fills(0, ['dnc_1_e164', 'dnc_1_result', 'dnc_1_calling_window', 'dnc_2_result', 'dnc_3_result'])).toEqual([
      GREEN,
      GREEN,
      GREEN,
      RED,
      RED,
    ]);
    // Sam: green, an empty cell has no number and no colour, the unreadable one amber.
    expect(fills(1, ['Name', ...phones, 'dnc_2_result', 'dnc_3_result'])).toEqual([
      GREEN,
      GREEN,
      null,
      AMBER,
      null,
      AMBER,
    ]);
    expect(fills(2, ['Name', ...phones])).toEqual([GREEN, null, AMBER, GREEN]);
    expect(fills(3, ['Name', 'dnc_result', ...phones])).toEqual([AMBER, AMBER, null, null, null]);
  });
});

describe('exempt numbers and the internal list in rows of several numbers', () => {
  it('an exempt number is callable (and listed); a registered number beside it still makes the row do_not_call', async () => {
    const exempt = await dnc(['exempt', 'add', '+12025550147', '--basis', 'consent', '--until', '2099-01-01']);
    expect(exempt.code, exempt.stderr).toBe(0);
    expect((await dnc(['suppress', 'add', '+12025550106'])).code).toBe(0);
    const input = write('exempt.csv', [
      HEADER,
      'e1,+12025550147,,n/a,US', // registered, exempt: callable
      'e2,+12025550147,+12025550149,,US', // exempt, and a registered number not exempt: do_not_call
      'e3,+12025550108,+12025550147,,US', // callable, then exempt
      'e4,+12025550106,+12025550108,,US', // on the internal list, then callable
    ]);
    const out = path.join(file.dir, 'exempt.results.csv');
    const r = await dnc(['batch', input, '-o', out]);
    expect(r.code, r.stderr).toBe(0);
    const pick = (row: Record<string, string>) => [
      row.dnc_result,
      row.dnc_phone_e164,
      row.dnc_callable_numbers,
      row.dnc_do_not_call,
      row.dnc_exemption === '' ? '' : 'exempt',
      row.dnc_list_source.startsWith('internal:') ? 'internal' : '',
    ];
    expect(rowsOf(out).map(pick)).toEqual([
      ['callable', '+12025550147', '+12025550147', 'true', 'exempt', ''],
      ['do_not_call', '+12025550147', '+12025550147', 'true', '', ''],
      ['callable', '+12025550108', '+12025550108 +12025550147', 'false', '', ''],
      ['do_not_call', '+12025550108', '+12025550108', 'true', '', 'internal'],
    ]);
    const v = JSON.parse((await dnc(['verify', out, '--json'])).stdout);
    expect(v, JSON.stringify(v.recheck)).toMatchObject({ fit: true, tampered: false });
  });
});

const q = (v: string) => (/[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
const csvText = (records: string[][]) => records.map((r) => r.map(q).join(',')).join('\n') + '\n';

describe('verify and the row rule', () => {
  it('a row edited to break the rule is an edit, even with the manifest rewritten to match', async () => {
    const input = write('forged.csv', CONTACTS);
    const out = path.join(file.dir, 'forged.results.csv');
    expect((await dnc(['batch', input, '-o', out])).code).toBe(0);
    const [header, ...rows] = readCsvIndependently(out);
    const at = (name: string) => header!.indexOf(name);
    // Rosa's registered home number slipped into the numbers a dialler reads.
    rows[0]![at('dnc_callable_numbers')] = '+12025550102 +12025550103';
    rewriteOutputAndManifest(out, csvText([header!, ...rows]));
    const v = JSON.parse((await dnc(['verify', out, '--json'])).stdout);
    expect(v).toMatchObject({ fit: false, tampered: true, recheck_by_reason: { edited: 1 } });
    expect(v.recheck[0].detail).toBe('dnc_callable_numbers "+12025550102 +12025550103" is not "+12025550102"');
  });

  it('a file written before the rule: its misleading rows are not fit until the same batch renders it again', async () => {
    const input = write('older.csv', CONTACTS);
    const out = path.join(file.dir, 'older.results.csv');
    const command = ['batch', input, '-o', out];
    expect((await dnc(command)).code).toBe(0);
    // As the dnc before the rule wrote it: no dnc_callable_numbers, and Rosa callable by her mobile.
    const [header, ...rows] = readCsvIndependently(out);
    const at = (name: string) => header!.indexOf(name);
    rows[0]![at('dnc_result')] = 'callable';
    rows[0]![at('dnc_do_not_call')] = 'false';
    const drop = at('dnc_callable_numbers');
    const text = csvText([header!, ...rows].map((r) => r.filter((_, i) => i !== drop)));
    rewriteOutputAndManifest(
      out,
      text,
      (m) => {
        m.format.dnc_columns -= 1;
        for (const counts of [m.rows.by_result, m.rows.by_country.US]) {
          counts.callable += 1;
          counts.do_not_call -= 1;
        }
      },
      path.join(file.dir, 'state', 'dnc'),
    );
    const before = await dnc(['verify', out]);
    expect(before.code, before.stdout).toBe(3);
    const v = JSON.parse((await dnc(['verify', out, '--json'])).stdout);
    expect(v, JSON.stringify(v.differences)).toMatchObject({
      fit: false,
      tampered: false,
      differences: [],
      recheck_by_reason: { row_rule: 1 },
    });
    expect(v.recheck[0]).toMatchObject({ number: '+12025550102', result: 'callable', reason: 'row_rule' });
    expect(v.recheck[0].detail).toContain('dnc_result says callable, the row rule gives do_not_call');
    expect(before.stdout).toContain(
      'run the same `dnc batch` command again: it writes the file again from its journal',
    );
    // The same command sends nothing and writes the file under the rule.
    const lookups = sb.requests().length;
    const again = await dnc(command);
    expect(again.code, again.stderr).toBe(0);
    expect(sb.requests().length).toBe(lookups);
    expect(rowsOf(out)[0]).toMatchObject({ dnc_result: 'do_not_call', dnc_callable_numbers: '+12025550102' });
    expect(JSON.parse((await dnc(['verify', out, '--json'])).stdout)).toMatchObject({ fit: true, tampered: false });
  });
});

describe('the batch summary of a list of three phone columns', () => {
  it('names each numbered column, lists every file written, and counts rows with no number apart', async () => {
    const input = write('summary.csv', CONTACTS);
    const out = path.join(file.dir, 'summary.results.csv');
    const dial = path.join(file.dir, 'summary.dial.txt');
    const review = path.join(file.dir, 'summary.review.csv');
    const dry = await dnc(['--json', 'batch', input, '-o', out, '--dry-run']);
    expect(JSON.parse(dry.stdout)).toMatchObject({ rows: 4, invalid_rows: 1, empty_rows: 1 });
    const r = await dnc(['batch', input, '-o', out, '--dial-out', dial, '--review-out', review]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(
      '4 row(s), 6 distinct number(s) to look up, 1 row(s) with a number that cannot be valid (not sent), ' +
        '1 row(s) with no number in any phone column',
    );
    expect(r.stdout).toContain('1 row(s) with no number in any phone column (invalid, missing_number)\n');
    expect(r.stdout).toContain(
      'phone columns: dnc_1_* = Mobile Phone, dnc_2_* = Home Phone, dnc_3_* = Business Phone\n',
    );
    const files = r.stdout.slice(r.stdout.indexOf('output: '));
    expect(files).toBe(
      [
        `output: ${out}`,
        `rows to review: ${review}`,
        `dial list: ${dial}`,
        `manifest: ${out.replace(/\.csv$/, '.manifest.json')}`,
        `journal: ${out}.journal.sqlite`,
        '',
      ].join('\n'),
    );
    const vic = rowsOf(out)[3]!;
    expect([vic.dnc_result, vic.dnc_error_code, vic.dnc_error]).toEqual([
      'invalid',
      'missing_number',
      'no number in any phone column (Mobile Phone, Home Phone, Business Phone)',
    ]);
  });
});
