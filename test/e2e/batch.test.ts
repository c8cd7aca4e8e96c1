// `dnc batch` in-process against the sandbox: verdicts per row, one lookup per distinct number, layouts, stops and resumes.
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { BatchJournal, journalPathFor } from '../../src/journal/journal.js';
import { renderBatchOutput } from '../../src/results/render.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import { FIXTURES, countBy, lookedUp, readCsv, readCsvObjects, sandbox, scratch, sha256 } from '../batch/helpers.js';
import { processStartTime } from '../../src/process-identity.js';
import { runDnc } from '../helpers/cli.js';
import { testInterrupts } from '../helpers/interrupts.js';
import { scrubRowsOf } from '../../src/compliance/batch-compliance.js';

const tmp = scratch();
let sb: Sandbox;
let env: Record<string, string>;

beforeAll(async () => {
  ({ sb, env } = await sandbox());
});
/** Hashes of every input a test made, checked after each test: dnc never modifies its input. */
const inputs = new Map<string, string>();
afterEach(() => {
  sb.reset();
  for (const [file, hash] of inputs)
    if (existsSync(file) && !file.includes('changed')) expect(sha256(file), file).toBe(hash);
});
afterAll(async () => {
  await sb.close();
  tmp.remove();
});

let n = 0;
/** A copy of a fixture in the scratch folder (outputs and journals go beside it). */
function fixture(name: string): string {
  const to = path.join(tmp.dir, `${++n}-${path.basename(name)}`);
  copyFileSync(path.join(FIXTURES, name), to);
  inputs.set(to, sha256(to));
  return to;
}

/** A call list of `count` distinct US numbers (+1 202 555 1000 …), each row given once. */
function usList(count: number, name = `list-${++n}.csv`): { file: string; numbers: string[] } {
  const numbers = Array.from({ length: count }, (_, i) => `+1202555${1000 + i}`);
  const file = path.join(tmp.dir, name);
  writeFileSync(file, `id,phone\n${numbers.map((p, i) => `${i + 1},${p}`).join('\n')}\n`);
  inputs.set(file, sha256(file));
  return { file, numbers };
}

/** Fires `counts` interrupts (in one go) once `ready()` holds; returns when they were fired (0: never). */
function fireWhen(
  ready: () => boolean,
  fire: (count: number) => void,
  counts: number[],
): { firedAt(): number; cancel(): void } {
  let at = 0;
  const poll = setInterval(() => {
    if (!ready()) return;
    clearInterval(poll);
    at = Date.now();
    for (const c of counts) fire(c);
  }, 5);
  return { firedAt: () => at, cancel: () => clearInterval(poll) };
}

function json(stdout: string): Record<string, unknown> {
  return JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, unknown>;
}

/** Numbers the sandbox charged more than once (must be none). */
function chargedTwice(): string[] {
  const charged = sb.lookups().filter((l) => l.charged);
  return Object.entries(countBy(charged, (l) => l.phoneNumber))
    .filter(([, c]) => c > 1)
    .map(([p]) => p);
}

describe('dnc batch: verdicts', () => {
  it('scrubs the demo call list: a verdict on every row, one lookup per distinct number, input untouched', async () => {
    const input = fixture('demo/call-list.csv');
    const before = sha256(input);
    const output = path.join(tmp.dir, 'demo.results.csv');
    const r = await runDnc(['--json', 'batch', input, '-o', output, '--country', 'US'], { env });
    // Its AU row is webhook-only and stays not_checked without --webhook-url: exit 7 says a row has no verdict.
    expect(r.code, r.stderr).toBe(7);
    expect(r.stderr).toMatch(
      /1 row\(s\) of webhook-only countries need --webhook-url .*: dnc batch \S+ -o \S+ --webhook-url URL/,
    );
    expect(sha256(input)).toBe(before);

    const inRows = readCsv(input);
    const outRows = readCsv(output);
    expect(outRows).toHaveLength(inRows.length);
    // Input columns unchanged and in order; the dnc_* columns after them.
    outRows.forEach((row, i) => expect(row.slice(0, inRows[0]!.length)).toEqual(inRows[i]));
    expect(outRows[0]!.slice(inRows[0]!.length)).toEqual([
      'dnc_phone_e164',
      'dnc_country',
      'dnc_result',
      'dnc_do_not_call',
      'dnc_list_source',
      'dnc_checked_at',
      'dnc_correlation_id',
      'dnc_error_code',
      'dnc_error',
      'dnc_credits',
      'dnc_exemption',
      'dnc_valid_until',
      'dnc_time_zones',
      'dnc_calling_window',
    ]);
    const rows = readCsvObjects(output);
    const sent = lookedUp(sb);
    const distinctSendable = new Set(
      rows.filter((x) => x.dnc_phone_e164 && x.dnc_country !== 'AU').map((x) => x.dnc_phone_e164),
    );
    expect(new Set(sent).size).toBe(sent.length);
    expect(new Set(sent)).toEqual(distinctSendable);

    const summary = json(r.stdout);
    const counts = countBy(rows, (x) => x.dnc_result!);
    for (const result of ['callable', 'do_not_call', 'invalid', 'unsupported_country', 'not_checked']) {
      expect(summary[result], result).toBe(counts[result] ?? 0);
    }
    expect(summary.rows).toBe(rows.length);
    expect(summary.stopped_reason).toBeNull();
    expect(summary.credits_used).toBe(sb.account().creditsUsed);
    // The sandbox's rule: last digit odd → on a register.
    for (const row of rows.filter((x) => x.dnc_result === 'callable' || x.dnc_result === 'do_not_call')) {
      expect(row.dnc_result).toBe(Number(row.dnc_phone_e164!.slice(-1)) % 2 === 1 ? 'do_not_call' : 'callable');
      expect(row.dnc_list_source).toMatch(/^https:\/\/sandbox\.dnc\.invalid\/registers\//);
      expect(row.dnc_correlation_id).not.toBe('');
      expect(row.dnc_checked_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    }
    const au = rows.find((x) => x.dnc_country === 'AU')!;
    expect([au.dnc_result, au.dnc_error_code]).toEqual(['not_checked', 'webhook_required']);
    const fr = rows.find((x) => x.dnc_country === 'FR')!;
    expect([fr.dnc_result, fr.dnc_error_code, fr.dnc_credits]).toEqual([
      'unsupported_country',
      'unsupported_country',
      '0',
    ]);
    const unreadable = rows.filter((x) => x.dnc_error_code === 'unparseable_number');
    expect(unreadable.map((x) => x.phone)).toEqual(['n/a', '555-12', 'ask reception']);
    // An empty cell is said apart from a bad number: there is nothing to fix but a missing value.
    const missing = rows.filter((x) => x.dnc_error_code === 'missing_number');
    expect(missing.map((x) => [x.phone, x.dnc_result])).toEqual([['', 'invalid']]);
    const registerInvalid = rows.find((x) => x.phone === '(202) 555-0990')!;
    expect([registerInvalid.dnc_result, registerInvalid.dnc_error_code, registerInvalid.dnc_credits]).toEqual([
      'invalid',
      'invalid_phone_number',
      '1',
    ]);
  });

  it('on a terminal: boxed summary tables and a spinner on stderr', async () => {
    const input = fixture('batch/duplicates.csv');
    const r = await runDnc(['batch', input, '-o', `${input}.out`, '--country', 'US'], { env, tty: true });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/┌|\+-/);
    expect(r.stdout).toContain('do_not_call');
    expect(r.stdout).toContain('Batch complete');
  });

  it('piped progress while the list is still read shows the numbers read so far, never as a denominator', async () => {
    // Lookups start after the first rows: the first progress line comes while the rest of the list is read.
    // The budget stops the run after a few lookups (the rows are rendered, not_checked).
    const { file } = usList(40_000);
    // A cache of its own: recent verdicts of these numbers (another test's, on a port reused) would have the
    // lookups wait for the first thousand numbers, to say so first.
    const own = {
      ...env,
      XDG_CACHE_HOME: path.join(tmp.dir, 'progress-cache'),
      XDG_STATE_HOME: path.join(tmp.dir, 'progress-state'),
    };
    const r = await runDnc(['batch', file, '-o', `${file}.out`, '--max-credits', '20'], { env: own });
    expect(r.code, r.stderr).toBe(5);
    const progress = r.stderr.split('\n').filter((l) => /numbers/.test(l) && /credits used$/.test(l));
    expect(progress.length, r.stderr).toBeGreaterThan(0);
    expect(progress[0]).toMatch(/^\d+ answered · [\d,]+ numbers read so far \(reading the list\) · /);
    // "N/M numbers" only once M is the whole list's count.
    for (const line of progress)
      if (/^[\d,]+\/[\d,]+ numbers/.test(line)) expect(line).toMatch(/^[\d,]+\/40,000 numbers/);
  }, 60_000);

  it('--quiet prints nothing on stderr; the summary stays on stdout', async () => {
    const input = fixture('batch/crlf.csv');
    const r = await runDnc(['--quiet', 'batch', input, '-o', `${input}.out`], { env });
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('Batch complete');
  });

  it('rows sharing a number share its one lookup', async () => {
    const input = fixture('batch/duplicates.csv');
    const output = path.join(tmp.dir, 'dups.csv');
    const r = await runDnc(['batch', input, '-o', output, '--country', 'US'], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(lookedUp(sb).sort()).toEqual(['+12025550107', '+12025550108', '+12025550109']);
    const rows = readCsvObjects(output);
    const a = rows.filter((x) => x.name!.startsWith('A'));
    expect(a).toHaveLength(4);
    expect(new Set(a.map((x) => x.dnc_correlation_id)).size).toBe(1);
    expect(a.every((x) => x.dnc_result === 'do_not_call')).toBe(true);
    // The lookup's credits stand on its first row only, so the column sums to what the service charged.
    expect(a.map((x) => x.dnc_credits)).toEqual(['1', '0', '0', '0']);
    const charged = sb
      .lookups()
      .filter((l) => l.charged)
      .reduce((sum, l) => sum + l.credits, 0);
    expect(rows.reduce((sum, x) => sum + Number(x.dnc_credits), 0)).toBe(charged);
  });

  it('removes temporary files a killed render left behind, but not a fresh one another render may be writing', async () => {
    const input = fixture('batch/duplicates.csv');
    const output = path.join(tmp.dir, 'leftovers.csv');
    const stale = path.join(tmp.dir, '.leftovers.csv.0badcafe.tmp');
    const fresh = path.join(tmp.dir, '.leftovers.csv.0c0ffee0.tmp');
    writeFileSync(stale, 'half a file');
    writeFileSync(fresh, 'being written');
    const hourAgo = new Date(Date.now() - 3_600_000);
    utimesSync(stale, hourAgo, hourAgo);
    const r = await runDnc(['batch', input, '-o', output, '--country', 'US'], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(stale)).toBe(false);
    expect(existsSync(fresh)).toBe(true);
    expect(readCsvObjects(output)).toHaveLength(7);
  });

  it('removes at once the temporary files of a writer that no longer runs, and never those of a live writer, however old', async () => {
    const input = fixture('batch/duplicates.csv');
    const output = path.join(tmp.dir, 'named.csv');
    // A writer that has exited (its pid dead), one alive (a sleeping process, with its real start time), and one
    // whose pid now belongs to a later process (a start time that is not that process's).
    const gone = spawn(process.execPath, ['-e', '']);
    await new Promise((resolve) => gone.on('close', resolve));
    const alive = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)']);
    try {
      await new Promise((resolve) => alive.on('spawn', resolve));
      const start = processStartTime(alive.pid!)!;
      const temp = (writer: string, hex: string) => path.join(tmp.dir, `.named.csv.${writer}.${hex}.tmp`);
      const dead = temp(`${gone.pid}-${Date.now()}`, '0badcafe');
      const reused = temp(`${alive.pid}-${start - 60_000}`, '1badcafe');
      const live = temp(`${alive.pid}-${start}`, '0c0ffee0');
      const manifestLeft = path.join(tmp.dir, `.named.manifest.json.${gone.pid}-${Date.now()}.2badcafe.tmp`);
      for (const f of [dead, reused, live, manifestLeft]) writeFileSync(f, '+12025550107 half written');
      const hourAgo = new Date(Date.now() - 3_600_000);
      utimesSync(live, hourAgo, hourAgo);
      const r = await runDnc(['batch', input, '-o', output, '--country', 'US'], { env });
      expect(r.code, r.stderr).toBe(0);
      expect([dead, reused, manifestLeft].filter(existsSync)).toEqual([]);
      expect(existsSync(live)).toBe(true);
      // The render's own temporary files name this process (the test runs dnc in-process).
      expect(readdirSync(tmp.dir).filter((f) => f.startsWith('.named.csv.') && f !== path.basename(live))).toEqual([]);
    } finally {
      alive.kill();
    }
  });

  it('keeps the layout: BOM, semicolons, CRLF and quoted fields come back as they went in', async () => {
    const input = fixture('batch/excel-bom-semicolon.csv');
    const output = path.join(tmp.dir, 'excel.out.csv');
    const r = await runDnc(['batch', input, '-o', output], { env });
    expect(r.code, r.stderr).toBe(0);
    const raw = readFileSync(output, 'utf8');
    expect(raw.startsWith('\uFEFFName;Company;Telephone;Notes;dnc_phone_e164')).toBe(true);
    expect(raw).toContain('\r\n');
    expect(raw.replace(/\r\n/g, '')).not.toContain('\n');
    const inRows = readCsv(input, ';');
    const outRows = readCsv(output, ';');
    outRows.forEach((row, i) => expect(row.slice(0, 4)).toEqual(inRows[i]));
    expect(outRows[2]![1]).toBe('Bolt "Best" Co');
    expect(outRows.slice(1).map((x) => x[6])).toEqual(['callable', 'do_not_call', 'callable']);
    expect(outRows.slice(1).map((x) => x[4])).toEqual(['+12025550100', '+12025550101', '+442079460100']);
  });

  it('reads quoted fields with embedded newlines, CRLF, tab and pipe files, and --no-header with --column', async () => {
    const q = fixture('batch/quoted-newlines.csv');
    let r = await runDnc(['batch', q, '-o', `${q}.out`], { env });
    expect(r.code, r.stderr).toBe(0);
    const qRows = readCsv(`${q}.out`);
    expect(qRows.map((x) => x[1])).toEqual([
      'address',
      '1 Main St\nApt 2\nSpringfield',
      'Line, with comma\nand "quotes"',
      '',
    ]);
    expect(qRows.slice(1).map((x) => x[3])).toEqual(['+12025550104', '+12025550105', '+12025550106']);

    const crlf = fixture('batch/crlf.csv');
    r = await runDnc(['batch', crlf, '-o', `${crlf}.out`], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(`${crlf}.out`, 'utf8').split('\r\n')).toHaveLength(5);

    const tab = fixture('batch/tab.tsv');
    r = await runDnc(['batch', tab, '-o', `${tab}.out`], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(readCsv(`${tab}.out`, '\t')[1]!.slice(0, 4)).toEqual(['Ann', 'Acme, Inc', '+12025550115', '+12025550115']);

    const pipe = fixture('batch/pipe.csv');
    r = await runDnc(['batch', pipe, '-o', `${pipe}.out`], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(readCsv(`${pipe}.out`, '|')[1]!.slice(0, 3)).toEqual(['Ann', '+12025550117', 'a,b;c']);

    const bare = fixture('batch/no-header.csv');
    r = await runDnc(['batch', bare, '-o', `${bare}.out`, '--no-header', '--column', '3'], { env });
    expect(r.code, r.stderr).toBe(0);
    const bareRows = readCsv(`${bare}.out`);
    expect(bareRows).toHaveLength(2);
    expect(bareRows.map((x) => x[3])).toEqual(['+12025550119', '+12025550120']);

    const cr = fixture('batch/cr-only-line-endings.csv');
    r = await runDnc(['batch', cr, '-o', path.join(tmp.dir, 'cr.out.csv')], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(readCsvObjects(path.join(tmp.dir, 'cr.out.csv')).map((x) => x.dnc_phone_e164)).toEqual([
      '+12025550100',
      '+12025550102',
    ]);
  });

  it('normalises national numbers with --country', async () => {
    const input = fixture('batch/national-format.csv');
    const r = await runDnc(['batch', input, '-o', `${input}.out`, '--country', 'GB'], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(readCsvObjects(`${input}.out`).map((x) => x.dnc_phone_e164)).toEqual([
      '+442079460103',
      '+442079460104',
      '+442079460105',
      '+442079460106',
    ]);
  });

  it("refuses invalid numbers locally; the register's invalid_phone_number is charged and recorded", async () => {
    const input = fixture('batch/invalid-numbers.csv');
    const r = await runDnc(['batch', input, '-o', `${input}.out`], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(lookedUp(sb).sort()).toEqual(['+12025550110', '+12025550111', '+12025550990']);
    const rows = readCsvObjects(`${input}.out`);
    expect(rows.map((x) => [x.name, x.dnc_result, x.dnc_error_code, x.dnc_credits])).toEqual([
      ['ok', 'callable', '', '1'],
      ['letters', 'invalid', 'unparseable_number', '0'],
      ['short', 'invalid', 'unparseable_number', '0'],
      ['empty', 'invalid', 'missing_number', '0'],
      ['charged-invalid', 'invalid', 'invalid_phone_number', '1'],
      ['ok2', 'do_not_call', '', '1'],
    ]);
  });

  it('learns supported countries from a 422 and refuses the rest of that country locally; AU without a webhook is not sent', async () => {
    const input = fixture('batch/fr-and-au.csv');
    const r = await runDnc(['batch', input, '-o', `${input}.out`, '--concurrency', '1'], { env });
    expect(r.code, r.stderr).toBe(7);
    const sent = lookedUp(sb);
    expect(sent.filter((p) => p.startsWith('+33'))).toEqual(['+33612345601']);
    expect(sent.filter((p) => p.startsWith('+61'))).toEqual([]);
    const rows = readCsvObjects(`${input}.out`);
    expect(rows.map((x) => [x.name, x.dnc_result, x.dnc_error_code])).toEqual([
      ['us', 'callable', ''],
      ['fr1', 'unsupported_country', 'unsupported_country'],
      ['au1', 'not_checked', 'webhook_required'],
      ['fr2', 'unsupported_country', 'unsupported_country'],
      ['us2', 'do_not_call', ''],
      ['au2', 'not_checked', 'webhook_required'],
      ['fr1-again', 'unsupported_country', 'unsupported_country'],
    ]);
  });

  it("retries uncharged upstream failures; what still fails is failed with the service's error_code", async () => {
    const input = fixture('batch/failures.csv');
    const r = await runDnc(['--retries', '2', 'batch', input, '-o', `${input}.out`], { env });
    // Rows without a verdict: finished, exit 7, with what would finish them.
    expect(r.code, r.stderr).toBe(7);
    expect(r.stderr).toContain('finished, but 5 row(s) have no verdict (0 not_checked, 5 failed)');
    const rows = Object.fromEntries(readCsvObjects(`${input}.out`).map((x) => [x.name, x]));
    expect(rows['transient-timeout']!.dnc_result).toBe('do_not_call');
    expect(rows['transient-error']!.dnc_result).toBe('callable');
    expect([rows['always-timeout']!.dnc_result, rows['always-timeout']!.dnc_error_code]).toEqual([
      'failed',
      'upstream_timeout',
    ]);
    expect([rows['always-error']!.dnc_result, rows['always-error']!.dnc_error_code]).toEqual([
      'failed',
      'upstream_error',
    ]);
    expect([rows['billing-charged']!.dnc_error_code, rows['billing-charged']!.dnc_credits]).toEqual([
      'billing_error',
      '1',
    ]);
    expect([rows['billing-uncharged']!.dnc_error_code, rows['billing-uncharged']!.dnc_credits]).toEqual([
      'billing_error',
      '0',
    ]);
    expect([rows.expired!.dnc_result, rows.expired!.dnc_error_code]).toEqual(['failed', 'lookup_expired']);
    expect(rows.fine!.dnc_result).toBe('callable');
    // 993 and 994: three attempts each (one try, two retries); charged lookups never repeated.
    expect(lookedUp(sb).filter((p) => p === '+12025550993')).toHaveLength(3);
    expect(lookedUp(sb).filter((p) => p === '+12025550995')).toHaveLength(1);

    // A bare rerun finishes the job: only the failures the service did not charge are sent again.
    sb.reset();
    const again = await runDnc(['--retries', '0', 'batch', input, '-o', `${input}.out`], { env });
    expect(again.stderr).toContain(
      '4 number(s) without a verdict are looked up again (0 not checked, 4 failed without a charge)',
    );
    expect(lookedUp(sb).sort()).toEqual(['+12025550993', '+12025550994', '+12025550996', '+12025550997']);
    expect(again.code).toBe(7);
  });

  it('writes --callable-out and --suppressed-out with the input columns only', async () => {
    const input = fixture('batch/duplicates.csv');
    const callable = path.join(tmp.dir, 'call.csv');
    const suppressed = path.join(tmp.dir, 'dnc.csv');
    const r = await runDnc(
      [
        'batch',
        input,
        '-o',
        `${input}.out`,
        '--country',
        'US',
        '--callable-out',
        callable,
        '--suppressed-out',
        suppressed,
      ],
      { env },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(readCsv(callable)).toEqual([
      ['name', 'phone'],
      ['B1', '+12025550108'],
      ['B2', '202.555.0108'],
    ]);
    expect(readCsv(suppressed)[0]).toEqual(['name', 'phone']);
    expect(
      readCsv(suppressed)
        .slice(1)
        .map((x) => x[0]),
    ).toEqual(['A1', 'A2', 'A3', 'C1', 'A4']);
    expect(r.stdout).toContain(callable);
  });
});

describe('dnc batch: refusals before anything is sent', () => {
  it('refuses -o equal to the input, a bad webhook URL, --webhook-all alone and a bad --concurrency (exit 2)', async () => {
    const input = fixture('batch/crlf.csv');
    const before = sha256(input);
    for (const args of [
      ['-o', input],
      ['--webhook-url', 'http://127.0.0.1:9/hook'],
      ['--webhook-url', 'https://user:pw@example.com/hook'],
      ['--webhook-all'],
      ['--concurrency', '65'],
      ['--concurrency', '0'],
      ['--country', 'UK'],
    ]) {
      const r = await runDnc(['batch', input, ...args], { env });
      expect(r.code, args.join(' ')).toBe(2);
    }
    expect(sb.requests()).toEqual([]);
    expect(sha256(input)).toBe(before);
  });

  it('exit 4 on a refused key, with nothing marked done; a rerun with the right key completes', async () => {
    const input = fixture('batch/duplicates.csv');
    const output = `${input}.out`;
    const bad = await runDnc(['batch', input, '-o', output, '--country', 'US'], {
      env: { ...env, DNC_API_KEY: 'sbx_wrong_key_123456' },
    });
    expect(bad.code).toBe(4);
    expect(bad.stderr).not.toContain(sb.apiKey);
    // A stop like any other: the output is written, nothing in it claims a verdict.
    const stopped = readCsvObjects(output);
    expect(stopped).toHaveLength(7);
    expect(stopped.every((x) => x.dnc_result === 'not_checked' && x.dnc_error_code === 'auth_failed')).toBe(true);
    const good = await runDnc(['batch', input, '-o', output, '--country', 'US'], { env });
    expect(good.code, good.stderr).toBe(0);
    expect(readCsvObjects(output).every((x) => x.dnc_result === 'callable' || x.dnc_result === 'do_not_call')).toBe(
      true,
    );
  });

  it('renders every row from one state of the journal: a commit from another connection mid-render waits for the next render', async () => {
    const file = path.join(tmp.dir, `snapshot-${++n}.csv`);
    writeFileSync(file, 'id,phone\n1,+12025550100\n2,+12025550101\n3,+12025550100\n');
    const output = `${file}.out`;
    expect((await runDnc(['batch', file, '-o', output], { env })).code).toBe(0);
    const journal = await BatchJournal.open(journalPathFor(output), { create: false });
    try {
      // As `dnc listen` would, another connection commits a change to +12025550100 once rendering has begun.
      const other = new Database(journalPathFor(output));
      const verdict = journal.verdict.bind(journal);
      let changed = false;
      journal.verdict = (e164: string) => {
        if (!changed) {
          changed = true;
          other.prepare("UPDATE numbers SET result = 'do_not_call', do_not_call = 1 WHERE e164 = '+12025550100'").run();
        }
        return verdict(e164);
      };
      await renderBatchOutput(journal, { scrubRows: scrubRowsOf, tzdataVersion: 'test' });
      other.close();
      const rows = readCsvObjects(output);
      expect(changed).toBe(true);
      expect(rows[0]!.dnc_result).toBe('callable');
      expect(rows[2]!.dnc_result).toBe(rows[0]!.dnc_result);
      // The next render shows the change, on both rows.
      journal.verdict = verdict;
      await renderBatchOutput(journal, { scrubRows: scrubRowsOf, tzdataVersion: 'test' });
      expect(readCsvObjects(output).map((r) => r.dnc_result)).toEqual(['do_not_call', 'do_not_call', 'do_not_call']);
    } finally {
      journal.close();
    }
  });

  it('on such a stop, a manifest that cannot be written is told apart from an output that could not be', async () => {
    const input = fixture('batch/duplicates.csv');
    const output = `${input}.out.csv`;
    // A folder where the manifest goes: the rename onto it fails.
    mkdirSync(path.join(`${input}.out.manifest.json`, 'in-the-way'), { recursive: true });
    const bad = await runDnc(['batch', input, '-o', output, '--country', 'US'], {
      env: { ...env, DNC_API_KEY: 'sbx_wrong_key_123456' },
    });
    expect(bad.code).toBe(4);
    expect(bad.stderr).toContain(
      `${output} holds the answers so far (the rest not_checked), but its evidence manifest could not be written`,
    );
    expect(bad.stderr).not.toContain('the output could not be written');
    expect(readCsvObjects(output)).toHaveLength(7);
  });
});

describe('dnc batch: stop and resume', () => {
  it('stops at a 429, marks the rest not_checked/credit_limit, exits 5, then resumes after a top-up without charging twice', async () => {
    sb.setCreditLimit(12);
    const { file, numbers } = usList(40);
    const output = `${file}.out`;
    const first = await runDnc(['--json', 'batch', file, '-o', output, '--concurrency', '4'], { env });
    expect(first.code, first.stderr).toBe(5);
    const s1 = json(first.stdout);
    expect(s1.stopped_reason).toBe('credit_limit');
    expect(first.stderr).toContain(`dnc batch ${file}`);
    let rows = readCsvObjects(output);
    expect(rows).toHaveLength(40);
    const done = rows.filter((x) => x.dnc_result === 'callable' || x.dnc_result === 'do_not_call');
    expect(done).toHaveLength(12);
    expect(rows.filter((x) => x.dnc_result === 'not_checked').every((x) => x.dnc_error_code === 'credit_limit')).toBe(
      true,
    );
    expect(s1.not_checked).toBe(28);

    sb.setCreditLimit(1000);
    const second = await runDnc(['--json', 'batch', file, '-o', output, '--concurrency', '4'], { env });
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toContain('12 number(s) done');
    rows = readCsvObjects(output);
    expect(rows.map((x) => x.phone)).toEqual(numbers);
    expect(rows.every((x) => x.dnc_result === 'callable' || x.dnc_result === 'do_not_call')).toBe(true);
    expect(chargedTwice()).toEqual([]);
    expect(sb.account().creditsUsed).toBe(40);
    expect(json(second.stdout).credits_used).toBe(40);
  });

  it('--max-credits never starts a lookup that could pass the budget; spend counts across resumes', async () => {
    const { file } = usList(20);
    const output = `${file}.out`;
    const first = await runDnc(['--json', 'batch', file, '-o', output, '--max-credits', '7', '--concurrency', '8'], {
      env,
    });
    expect(first.code, first.stderr).toBe(5);
    expect(json(first.stdout).stopped_reason).toBe('budget_reached');
    expect(sb.account().creditsUsed).toBe(7);
    expect(readCsvObjects(output).filter((x) => x.dnc_error_code === 'budget_reached')).toHaveLength(13);

    const again = await runDnc(['--json', 'batch', file, '-o', output, '--max-credits', '7'], { env });
    expect(again.code).toBe(5);
    expect(sb.account().creditsUsed).toBe(7);

    const more = await runDnc(['--json', 'batch', file, '-o', output, '--max-credits', '15'], { env });
    expect(more.code).toBe(5);
    expect(sb.account().creditsUsed).toBe(15);
    // The journal remembers the budget: a bare rerun keeps it, and says so; `--max-credits none` lifts it.
    const bare = await runDnc(['--json', 'batch', file, '-o', output], { env });
    expect(bare.code).toBe(5);
    expect(bare.stderr).toContain('Resuming with the options this batch was started with: --max-credits 15');
    expect(sb.account().creditsUsed).toBe(15);
    const rest = await runDnc(['--json', 'batch', file, '-o', output, '--max-credits', 'none'], { env });
    expect(rest.code, rest.stderr).toBe(0);
    expect(sb.account().creditsUsed).toBe(20);
    expect(chargedTwice()).toEqual([]);
  });

  it('--max-credits uses the cost an earlier batch learned for this service (the cost cache) before any lookup', async () => {
    const costly = await sandbox({ costs: { GB: 5 } });
    try {
      const cacheEnv = { ...costly.env, XDG_CACHE_HOME: path.join(tmp.dir, `cache-${++n}`) };
      const learn = path.join(tmp.dir, `gb-learn-${n}.csv`);
      writeFileSync(learn, 'phone\n+442079460100\n');
      expect((await runDnc(['batch', learn], { env: cacheEnv })).code).toBe(0);
      const next = path.join(tmp.dir, `gb-next-${n}.csv`);
      writeFileSync(next, 'phone\n+442079460101\n+442079460102\n');
      const r = await runDnc(['--json', 'batch', next, '--max-credits', '3'], { env: cacheEnv });
      expect(r.code, r.stderr).toBe(5);
      expect(json(r.stdout)).toMatchObject({ stopped_reason: 'budget_reached', credits_used: 0 });
      // Only the first batch's lookup: a GB lookup costs 5, more than the budget of 3.
      expect(lookedUp(costly.sb)).toEqual(['+442079460100']);
      expect(costly.sb.account().creditsUsed).toBe(5);
      // The stop says why where it happens (issue 48): the budget of 3 against GB's learned 5.
      expect(r.stderr).toContain(
        'stopped: the --max-credits budget of 3 was reached: this batch has not seen the price of a GB lookup yet, ' +
          'so its first one is counted at 5 credit(s), the most a lookup is known to cost, and 3 credit(s) of the ' +
          'budget were left',
      );
      // A 1-credit US number, stopped by a budget of 2: its first lookup is counted at GB's 5.
      const us = path.join(tmp.dir, `us-next-${n}.csv`);
      writeFileSync(us, 'phone\n+12025550140\n');
      const cheap = await runDnc(['batch', us, '--max-credits', '2'], { env: cacheEnv });
      expect(cheap.code, cheap.stderr).toBe(5);
      expect(cheap.stderr).toContain('this batch has not seen the price of a US lookup yet');
      expect(lookedUp(costly.sb)).toEqual(['+442079460100']);
    } finally {
      await costly.sb.close();
    }
  });

  it('Ctrl-C stops starting lookups, finishes those in flight, writes the output and exits 130; a rerun completes', async () => {
    const slow = await sandbox({ latencyMs: 40 });
    try {
      const { file, numbers } = usList(60);
      const output = `${file}.out`;
      const interrupts = testInterrupts();
      const fire = () => interrupts.fire();
      const trigger = fireWhen(() => lookedUp(slow.sb).length >= 6, fire, [1]);
      const first = await runDnc(['--json', 'batch', file, '-o', output, '--concurrency', '2'], {
        env: slow.env,
        interrupts,
      });
      trigger.cancel();
      expect(first.code, first.stderr).toBe(130);
      expect(json(first.stdout).stopped_reason).toBe('interrupted');
      const rows = readCsvObjects(output);
      const answered = rows.filter((x) => x.dnc_result !== 'not_checked').length;
      expect(answered).toBeGreaterThan(0);
      expect(answered).toBe(slow.sb.lookups().length);
      expect(rows.filter((x) => x.dnc_result === 'not_checked').every((x) => x.dnc_error_code === 'interrupted')).toBe(
        true,
      );

      const second = await runDnc(['batch', file, '-o', output], { env: slow.env });
      expect(second.code, second.stderr).toBe(0);
      expect(readCsvObjects(output).map((x) => x.phone)).toEqual(numbers);
      expect(slow.sb.lookups()).toHaveLength(60);
    } finally {
      await slow.sb.close();
    }
  });

  it('a second Ctrl-C returns at once with the journal consistent', async () => {
    // Answers take 2 s: both Ctrl-Cs come long before any, however loaded the machine.
    const slow = await sandbox({ latencyMs: 2_000 });
    try {
      const { file, numbers } = usList(30);
      const output = `${file}.out`;
      const interrupts = testInterrupts();
      const fire = () => interrupts.fire();
      // Both Ctrl-Cs once the first four lookups have reached the sandbox.
      const trigger = fireWhen(() => lookedUp(slow.sb).length >= 4, fire, [1, 2]);
      const first = await runDnc(['batch', file, '-o', output, '--concurrency', '4'], { env: slow.env, interrupts });
      trigger.cancel();
      expect(first.code).toBe(130);
      expect(first.stderr).toContain(
        'the lookups still in flight may have been charged (a rerun does not send them again unless --resend-unanswered)',
      );
      expect(trigger.firedAt()).toBeGreaterThan(0);
      expect(Date.now() - trigger.firedAt()).toBeLessThan(1_500);
      expect(existsSync(output)).toBe(false);
      // Not rendered, but the journal says why the rest is not checked (a later render, e.g. by dnc listen, shows it).
      const stopped = await BatchJournal.open(journalPathFor(output), { create: false });
      expect(stopped.stoppedReason()).toBe('interrupted');
      stopped.close();
      const second = await runDnc(['--quiet', 'batch', file, '-o', output, '--concurrency', '8'], { env: slow.env });
      // The four sends without an answer may have been charged: not sent again, unless asked; a warning --quiet does not hide.
      expect(second.code, second.stderr).toBe(7);
      expect(second.stderr).toContain(
        'warning: 4 number(s) were sent by the last run, which stopped before their answers came: they may have been charged and are not sent again',
      );
      expect(second.stderr).toContain(`--resend-unanswered`);
      const rows = readCsvObjects(output);
      expect(rows.map((x) => x.phone)).toEqual(numbers);
      expect(rows.filter((x) => x.dnc_error_code === 'unanswered_send')).toHaveLength(4);
      const sent = lookedUp(slow.sb);
      expect(new Set(sent).size).toBe(sent.length);
      const third = await runDnc(['--quiet', 'batch', file, '-o', output, '--resend-unanswered'], { env: slow.env });
      expect(third.code, third.stderr).toBe(0);
      expect(third.stderr).toContain(
        '--resend-unanswered: 4 number(s) whose earlier send got no answer are sent again',
      );
      expect(lookedUp(slow.sb)).toHaveLength(sent.length + 4);
    } finally {
      await slow.sb.close();
    }
  });

  it('refuses a journal made from a different input or other options; --restart starts over', async () => {
    const { file } = usList(5, `changed-${++n}.csv`);
    const output = `${file}.out`;
    expect((await runDnc(['batch', file, '-o', output], { env })).code).toBe(0);
    const other = await runDnc(['batch', file, '-o', output, '--country', 'GB'], { env });
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('E_JOURNAL_MISMATCH');
    expect(other.stderr).toContain('--restart');
    writeFileSync(file, `${readFileSync(file, 'utf8')}6,+12025551999\n`);
    const changed = await runDnc(['batch', file, '-o', output], { env });
    expect(changed.code).toBe(2);
    expect(changed.stderr).toContain('different input');
    sb.reset();
    const restarted = await runDnc(['batch', file, '-o', output, '--restart'], { env });
    expect(restarted.code, restarted.stderr).toBe(0);
    expect(lookedUp(sb)).toHaveLength(6);
  });
});

describe('dnc batch: dry run', () => {
  it('sends no lookup; counts rows, distinct numbers, countries, invalid rows; shows the balance and an estimate once costs are known', async () => {
    const cache = path.join(tmp.dir, 'cache');
    const input = fixture('demo/call-list.csv');
    const dryEnv = { ...env, XDG_CACHE_HOME: cache };
    const first = await runDnc(['--json', 'batch', input, '--dry-run', '--country', 'US'], { env: dryEnv });
    expect(first.code, first.stderr).toBe(0);
    expect(sb.requests().map((x) => x.path)).toEqual(['/v2/usage_stats']);
    const d1 = json(first.stdout);
    expect(d1).toMatchObject({
      dry_run: true,
      rows: 40,
      unique_numbers: 33,
      invalid_rows: 3,
      empty_rows: 1,
      by_country: { US: 28, GB: 3, FR: 1, AU: 1 },
    });
    expect(d1.balance).toMatchObject({ credit_limit: sb.account().creditLimit });
    expect(d1.unknown_cost_countries).toEqual(['US', 'GB', 'FR']);
    // No cost learned yet: a lower bound at 1 credit a number (AU, webhook-only, would not be sent), never 0.
    expect(d1).toMatchObject({ estimated_credits: 28 + 3 + 1, estimate_complete: false });
    expect((d1.credit_guard as { estimated_credits: unknown }).estimated_credits).toBe(d1.estimated_credits);
    expect(existsSync(input.replace(/\.csv$/, '.results.csv'))).toBe(false);

    // The demo list's AU row is webhook-only: finished with a row without a verdict, exit 7.
    expect((await runDnc(['batch', input, '--country', 'US'], { env: dryEnv })).code).toBe(7);
    sb.reset();
    // A rerun would send nothing (the AU row still needs --webhook-url; FR's 422 is a verdict): the dry run says so.
    const resumed = json(
      (await runDnc(['--json', 'batch', input, '--dry-run', '--country', 'US'], { env: dryEnv })).stdout,
    );
    expect(resumed).toMatchObject({
      estimated_credits: 0,
      by_country: { AU: 1 },
      resuming: { numbers: 33, with_verdict: 32, to_look_up: 0, not_sent: 1, unanswered: 0 },
    });
    // --restart would pay for the whole list again: estimated as such.
    const second = await runDnc(['--json', 'batch', input, '--dry-run', '--country', 'US', '--restart'], {
      env: dryEnv,
    });
    const d2 = json(second.stdout);
    expect(d2.resuming).toBeNull();
    expect(d2.unknown_cost_countries).toEqual(['FR']);
    expect(d2.estimated_credits).toBe(28 + 3 + 1);
    // The file is named as the user gave it, as a real run names it.
    const humanSecond = await runDnc(['batch', path.basename(input), '--dry-run', '--country', 'US', '--restart'], {
      env: dryEnv,
      cwd: path.dirname(input),
    });
    expect(humanSecond.stderr).toContain(`Reading ${path.basename(input)} (phone column: phone, delimiter: ,)`);
    expect(humanSecond.stdout).toMatch(/^FR\s+1\s+unknown\s+≥ 1$/m);
    expect(humanSecond.stdout).toContain('estimated cost: at least 32 credits (FR counted at 1 credit a number');

    sb.setUsageFailure(true);
    const human = await runDnc(['batch', input, '--dry-run', '--country', 'US'], { env: dryEnv });
    expect(human.code).toBe(0);
    expect(human.stderr).toContain('balance is not available');
    expect(human.stdout).toContain('Dry run: nothing was sent');
    expect(human.stdout).toContain('line 36:');
    expect(lookedUp(sb)).toEqual([]);
  });
});

describe('dnc batch: webhook mode (sending side)', () => {
  it('sends AU in webhook mode: pending with its correlation id and held credits, exit 8 and the listen command', async () => {
    const hooks = await sandbox({ allowInsecureWebhooks: true, timeScale: 1000 });
    try {
      const input = fixture('batch/fr-and-au.csv');
      const output = `${input}.out`;
      const url = 'http://127.0.0.1:9/hooks/abc';
      const r = await runDnc(
        ['--json', 'batch', input, '-o', output, '--webhook-url', url, '--allow-insecure-webhook-url'],
        { env: hooks.env },
      );
      expect(r.code, r.stderr).toBe(8);
      expect(r.stderr).toContain(`dnc listen --results`);
      const au = hooks.sb.requests().filter((x) => x.query.phone_number?.startsWith('+61'));
      expect(au.map((x) => x.query.webhook_url)).toEqual([url, url]);
      expect(
        hooks.sb
          .requests()
          .filter((x) => x.query.phone_number?.startsWith('+1'))
          .every((x) => x.query.webhook_url === undefined),
      ).toBe(true);
      const rows = readCsvObjects(output).filter((x) => x.dnc_country === 'AU');
      expect(rows.map((x) => x.dnc_result)).toEqual(['pending', 'pending']);
      expect(rows.map((x) => x.dnc_credits)).toEqual(['3', '3']);
      const byPhone = new Map(hooks.sb.lookups().map((l) => [l.phoneNumber, l.correlationId]));
      expect(rows.map((x) => x.dnc_correlation_id)).toEqual([byPhone.get('+61412345001'), byPhone.get('+61412345002')]);
      expect(json(r.stdout).pending).toBe(2);

      // Resuming does not send pending lookups again.
      hooks.sb.reset();
      const again = await runDnc(['batch', input, '-o', output, '--webhook-url', url, '--allow-insecure-webhook-url'], {
        env: hooks.env,
      });
      expect(again.code).toBe(8);
      expect(lookedUp(hooks.sb)).toEqual([]);
    } finally {
      await hooks.sb.close();
    }
  });

  it('--webhook-all sends every lookup in webhook mode', async () => {
    const hooks = await sandbox({ allowInsecureWebhooks: true, timeScale: 1000 });
    try {
      const input = fixture('batch/duplicates.csv');
      const r = await runDnc(
        [
          '--json',
          'batch',
          input,
          '-o',
          `${input}.out`,
          '--country',
          'US',
          '--webhook-url',
          'http://127.0.0.1:9/h',
          '--webhook-all',
          '--allow-insecure-webhook-url',
        ],
        { env: hooks.env },
      );
      expect(r.code, r.stderr).toBe(8);
      expect(lookedUp(hooks.sb)).toHaveLength(3);
      expect(
        hooks.sb
          .requests()
          .filter((x) => x.path === '/check_phone_number')
          .every((x) => x.query.webhook_url === 'http://127.0.0.1:9/h'),
      ).toBe(true);
      expect(readCsvObjects(`${input}.out`).every((x) => x.dnc_result === 'pending')).toBe(true);
    } finally {
      await hooks.sb.close();
    }
  });
});
