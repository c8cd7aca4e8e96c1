// `dnc verify` against real batch outputs: fit when fresh and untouched; tampered, stale and pending rows found by line.
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterEach, describe, expect, it } from 'vitest';
import { sha256 } from '../batch/helpers.js';
import { dnc, later, US_LIST, world, type World, sameMachine } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.cleanup();
  w = undefined;
});

const json = (s: string) => JSON.parse(s.trim().split('\n').at(-1)!) as Record<string, any>;
const rows = (file: string) => parse(readFileSync(file), { columns: true }) as Array<Record<string, string>>;

async function scrubbed(lines = US_LIST, exit = 0) {
  w = await world();
  const input = w.file('calls.csv', lines);
  const output = path.join(w.dir, 'calls.results.csv');
  const r = await dnc(['batch', input, '-o', output], w.env);
  expect(r.code, r.stderr).toBe(exit);
  return { input, output, manifest: path.join(w.dir, 'calls.results.manifest.json') };
}

describe('the manifest', () => {
  it('describes the output exactly: version, service without key, hashes, counts, credits, sources, checked_at range', async () => {
    const { input, output, manifest } = await scrubbed();
    const text = readFileSync(manifest, 'utf8');
    expect(text).not.toContain(w!.sb.apiKey);
    const m = JSON.parse(text);
    expect(m).toMatchObject({
      manifest_version: 1,
      dnc_version: JSON.parse(readFileSync(path.join(__dirname, '../../package.json'), 'utf8')).version,
      interface_version: '1.3.0',
      service_base_url: w!.sb.baseUrl,
      journal: `${output}.journal.sqlite`,
      input: { path: input, sha256: sha256(input) },
      output: { path: output, sha256: sha256(output) },
      rows: { total: 5, by_result: { callable: 3, do_not_call: 2 } },
      numbers: {
        distinct: 3,
        by_result: { callable: 2, do_not_call: 1 },
        by_country: { US: { callable: 2, do_not_call: 1 } },
      },
      credits_used: w!.sb.account().creditsUsed,
      register_sources: ['https://sandbox.dnc.invalid/registers/US'],
    });
    const checked = rows(output)
      .map((r) => r.dnc_checked_at)
      .sort();
    expect(m.checked_at).toEqual({ oldest: checked[0], newest: checked.at(-1) });
    expect(Date.parse(m.started_at)).toBeLessThanOrEqual(Date.parse(m.finished_at));
  });
});

describe('dnc verify', () => {
  it('a fresh, untouched output is fit to dial (exit 0), human and --json', async () => {
    const { output } = await scrubbed();
    const human = await dnc(['verify', output], sameMachine(w!));
    expect(human.code, human.stdout + human.stderr).toBe(0);
    expect(human.stdout).toMatch(/calls\.results\.csv: fit to dial/);
    expect(human.stdout).toContain('SHA-256 matches the manifest');
    expect(human.stdout).toContain('rows compared with the journal and the input');
    const j = await dnc(['--json', 'verify', output], sameMachine(w!));
    expect(j.code).toBe(0);
    expect(json(j.stdout)).toMatchObject({
      fit: true,
      tampered: false,
      sha256_matches: true,
      rows: 5,
      recheck_count: 0,
      compared_with_journal: true,
    });
  });

  it('an edited verdict fails (exit 3) and names the line', async () => {
    const { output } = await scrubbed();
    const lines = readFileSync(output, 'utf8').split('\n');
    // Line 3 is b, +12025550101: on the register (odd last digit). Make it look callable.
    expect(lines[2]).toContain(',do_not_call,true,');
    lines[2] = lines[2]!.replace(',do_not_call,true,', ',callable,false,');
    writeFileSync(output, lines.join('\n'));
    const r = await dnc(['--json', 'verify', output], sameMachine(w!));
    expect(r.code).toBe(3);
    const v = json(r.stdout);
    expect(v).toMatchObject({ fit: false, tampered: true, sha256_matches: false });
    expect(v.differences).toContain('callable rows: 4 in the file, 3 in the manifest');
    expect(v.recheck).toEqual([
      expect.objectContaining({ line: 3, number: '+12025550101', result: 'callable', reason: 'edited' }),
    ]);
    const human = await dnc(['verify', output], sameMachine(w!));
    expect(human.stdout).toMatch(/NOT FIT TO DIAL/);
    expect(human.stdout).toMatch(/line 3 +\+12025550101 +US +callable +edited: says callable/);
  });

  it('a deleted row fails (exit 3) at the line where the output leaves the input', async () => {
    const { output } = await scrubbed();
    const lines = readFileSync(output, 'utf8').split('\n');
    lines.splice(3, 1); // the row of c (line 4)
    writeFileSync(output, lines.join('\n'));
    const r = await dnc(['--json', 'verify', output], sameMachine(w!));
    expect(r.code).toBe(3);
    const v = json(r.stdout);
    expect(v.differences).toContain('rows: 4 in the file, 5 in the manifest');
    expect(v.recheck[0]).toMatchObject({ line: 4, reason: 'out_of_step', number: '+12025550102' });
  });

  it('checked_at older than the max age: the callable rows to re-check, by line; --max-age widens it', async () => {
    const { output } = await scrubbed();
    const r = await dnc(['--json', 'verify', output], sameMachine(w!), { now: later(40) });
    expect(r.code).toBe(3);
    const v = json(r.stdout);
    expect(v).toMatchObject({ fit: false, tampered: false, recheck_count: 3, recheck_by_reason: { stale: 3 } });
    expect(v.recheck.map((x: { line: number }) => x.line)).toEqual([2, 4, 5]);
    expect(v.recheck[0].detail).toMatch(/\(40 days ago\), older than 31 days/);
    expect((await dnc(['verify', output, '--max-age', '60d'], sameMachine(w!), { now: later(40) })).code).toBe(0);
    expect((await dnc(['verify', output, '--max-age', '12h'], sameMachine(w!), { now: later(1) })).code).toBe(3);
    // --as-of judges for a given day without a clock.
    expect(
      (await dnc(['verify', output, '--as-of', new Date(Date.now() + 32 * 86_400_000).toISOString()], sameMachine(w!)))
        .code,
    ).toBe(3);
  });

  it('a pending row is not fit to dial', async () => {
    w = await world({ allowInsecureWebhooks: true, timeScale: 1000 });
    const input = w.file('calls.csv', US_LIST);
    const output = path.join(w.dir, 'calls.results.csv');
    const b = await dnc(
      [
        'batch',
        input,
        '-o',
        output,
        '--webhook-url',
        'http://127.0.0.1:9/h',
        '--webhook-all',
        '--allow-insecure-webhook-url',
      ],
      w.env,
    );
    expect(b.code, b.stderr).toBe(8);
    const r = await dnc(['--json', 'verify', output], sameMachine(w!));
    expect(r.code).toBe(3);
    const v = json(r.stdout);
    expect(v.tampered).toBe(false);
    expect(v.recheck_by_reason).toEqual({ pending: 5 });
    expect(v.recheck[0].detail).toMatch(/webhook result not received \(correlation id [0-9a-f-]{36}\)/);
    expect((await dnc(['verify', output], sameMachine(w!))).stdout).toContain(
      'pending rows: `dnc listen --results FILE` receives their pushes',
    );
  });

  it('failed rows must be re-checked; invalid rows need not (they are never dialled); an unknown result is an edit', async () => {
    // The charged billing failure has no verdict: the batch exits 7.
    const { output } = await scrubbed(
      ['name,phone', 'ok,+12025550100', 'invalid,+12025550990', 'billing,+12025550995', 'junk,12'],
      7,
    );
    const v = json((await dnc(['--json', 'verify', output], sameMachine(w!))).stdout);
    expect(v).toMatchObject({ fit: false, tampered: false, recheck_by_reason: { failed: 1 } });
    expect(v.recheck[0]).toMatchObject({
      line: 4,
      number: '+12025550995',
      reason: 'failed',
      detail: expect.stringMatching(/^billing_error: /),
    });
    // The advice finishes the row at the least cost: the same batch again, never --restart (which pays for every row).
    const human = (await dnc(['verify', output], sameMachine(w!))).stdout;
    // (The billing_error was charged: a bare rerun would not send it again; the advice names the flag that does, and its
    // cost.)
    expect(human).toMatch(
      /`dnc batch \S+ -o \S+ --resend-failed` sends them again, each charged again \(about 1 credit\(s\)\)/,
    );
    expect(human).not.toContain('--restart');
    writeFileSync(output, readFileSync(output, 'utf8').replace(',invalid,', ',ok,'));
    const e = json((await dnc(['--json', 'verify', output], sameMachine(w!))).stdout);
    expect(e.recheck[0]).toMatchObject({
      line: 3,
      reason: 'edited',
      detail: 'dnc_result "ok" is not a result dnc writes',
    });
  });

  it('the --callable-out list is covered too: a number added to it makes the output unfit', async () => {
    w = await world();
    const input = w.file('calls.csv', US_LIST);
    const output = path.join(w.dir, 'calls.results.csv');
    const callable = path.join(w.dir, 'call-these.csv');
    expect((await dnc(['batch', input, '-o', output, '--callable-out', callable], w.env)).code).toBe(0);
    const m = JSON.parse(readFileSync(path.join(w.dir, 'calls.results.manifest.json'), 'utf8'));
    expect(m.lists).toEqual([{ kind: 'callable', path: callable, sha256: sha256(callable) }]);
    expect((await dnc(['verify', output], sameMachine(w!))).code).toBe(0);
    writeFileSync(callable, readFileSync(callable, 'utf8') + 'b,+12025550101\n');
    const r = await dnc(['--json', 'verify', output], sameMachine(w!));
    expect(r.code).toBe(3);
    expect(json(r.stdout)).toMatchObject({
      tampered: true,
      differences: [`the callable list ${callable} changed after dnc wrote it`],
    });
  });

  it('without a manifest: exit 3 and how to write one; a bad --max-age is a usage error', async () => {
    const { output, manifest } = await scrubbed();
    expect((await dnc(['verify', output, '--max-age', 'soon'], sameMachine(w!))).code).toBe(2);
    rmSync(manifest);
    const r = await dnc(['verify', output], sameMachine(w!));
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/E_NO_MANIFEST.*calls\.results\.manifest\.json is missing/);
  });
});

describe('two outputs of one name, CSV and workbook (calls.results.csv, calls.results.xlsx)', () => {
  /** A scrub of one list, and where its CSV and workbook outputs go. */
  async function twoOutputs() {
    const made = await world();
    w = made;
    const { dir, env } = made;
    return {
      dir,
      env,
      input: made.file('calls.csv', US_LIST),
      csv: path.join(dir, 'calls.results.csv'),
      xlsx: path.join(dir, 'calls.results.xlsx'),
    };
  }

  it('the second output gets a manifest named after its whole name; batch, verify, status and report each find its own', async () => {
    const { dir, env, input, csv, xlsx } = await twoOutputs();
    expect((await dnc(['batch', input, '-o', csv], env)).code).toBe(0);
    const csvManifest = readFileSync(path.join(dir, 'calls.results.manifest.json'), 'utf8');
    // The natural -o for a workbook of the same scrub was refused as a manifest collision.
    const second = await dnc(['batch', input, '-o', xlsx], env);
    expect(second.code, second.stderr).toBe(0);
    expect(readFileSync(path.join(dir, 'calls.results.manifest.json'), 'utf8')).toBe(csvManifest);
    const xlsxManifest = path.join(dir, 'calls.results.xlsx.manifest.json');
    expect(JSON.parse(readFileSync(xlsxManifest, 'utf8')).output).toMatchObject({ path: xlsx, sha256: sha256(xlsx) });
    // A rerun resumes that batch and keeps its manifest where it is.
    const rerun = await dnc(['batch', input, '-o', xlsx], env);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(JSON.parse(readFileSync(xlsxManifest, 'utf8')).output.sha256).toBe(sha256(xlsx));

    for (const output of [csv, xlsx]) {
      const v = await dnc(['--json', 'verify', output], sameMachine(w!));
      expect(v.code, v.stdout + v.stderr).toBe(0);
    }
    const named = json((await dnc(['--json', 'status', csv, xlsx], sameMachine(w!))).stdout);
    expect(named.files.map((f: { output: string; manifest: string }) => [f.output, path.basename(f.manifest)])).toEqual(
      [
        [csv, 'calls.results.manifest.json'],
        [xlsx, 'calls.results.xlsx.manifest.json'],
      ],
    );
    const folder = json((await dnc(['--json', 'status', dir], sameMachine(w!))).stdout);
    expect(folder.files.map((f: { output: string }) => f.output).sort()).toEqual([csv, xlsx]);
    // Reports named as the manifests are, so the second does not replace the first.
    for (const [output, report] of [
      [csv, 'calls.results.report.html'],
      [xlsx, 'calls.results.xlsx.report.html'],
    ] as const) {
      const r = await dnc(['report', output], sameMachine(w!));
      expect(r.code, r.stderr).toBe(0);
      expect(readFileSync(path.join(dir, report), 'utf8')).toContain(path.basename(output));
    }
  });

  it('in the other order (the workbook first) the CSV takes the whole name; a moved pair is still found', async () => {
    const { dir, env, input, csv, xlsx } = await twoOutputs();
    expect((await dnc(['batch', input, '-o', xlsx], env)).code).toBe(0);
    expect((await dnc(['batch', input, '-o', csv], env)).code).toBe(0);
    expect(JSON.parse(readFileSync(path.join(dir, 'calls.results.manifest.json'), 'utf8')).output.path).toBe(xlsx);
    expect(JSON.parse(readFileSync(path.join(dir, 'calls.results.csv.manifest.json'), 'utf8')).output.path).toBe(csv);
    // Copied elsewhere with its manifest (the one a CSV-only folder would have): still its own.
    const elsewhere = path.join(dir, 'archive');
    mkdirSync(elsewhere);
    copyFileSync(xlsx, path.join(elsewhere, 'calls.results.xlsx'));
    copyFileSync(path.join(dir, 'calls.results.manifest.json'), path.join(elsewhere, 'calls.results.manifest.json'));
    const moved = json(
      (await dnc(['--json', 'status', path.join(elsewhere, 'calls.results.xlsx')], sameMachine(w!))).stdout,
    );
    expect(moved.files.map((f: { manifest: string }) => f.manifest)).toEqual([
      path.join(elsewhere, 'calls.results.manifest.json'),
    ]);
  });
});
