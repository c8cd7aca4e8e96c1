// OWASP CSV injection: text from a hostile service never starts a results cell as a formula, control characters
// are stripped, a register source that is not https is flagged; input cells stay as they are unless --escape-formulas.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CsvWriter, escapeFormulaCell, serviceTextCell } from '../../src/tables/csv-output.js';
import { runDnc } from '../helpers/cli.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { readWorkbookIndependently } from '../helpers/xlsx-oracle.js';
import { startStub, type StubServer } from '../service/stub-server.js';
import { scratch } from '../batch/helpers.js';
import { rewriteOutputAndManifest } from '../helpers/forged-output.js';

const tmp = scratch();
type VerifyJson = { tampered: boolean; recheck_by_reason: Record<string, number> };
let stub: StubServer;

const HOSTILE = '-2+3\u001b]0;owned\u0007\u001b[2J';
/** HOSTILE as a cell holds it: its control characters made one space each run. */
const HOSTILE_CELL = '-2+3 ]0;owned [2J';
const FORMULA = '=HYPERLINK("http://evil.example","pay")';
/** A state folder of its own: where dnc anchors what it wrote (verify compares with it). */
const STATE = () => ({ XDG_STATE_HOME: path.join(tmp.dir, 'state') });

beforeAll(async () => {
  // A service that puts hostile text in each field it controls, by the number's last digit: what the judge lets
  // through (a failure's error text), and what it refuses but quotes (a correlation id, a register URL).
  stub = await startStub((req) => {
    if (!req.url.startsWith('/check_phone_number'))
      return { status: 500, body: { error: 'unable to process request' } };
    const phone = decodeURIComponent(/phone_number=([^&]+)/.exec(req.url)![1]!);
    const last = phone.slice(-1);
    const id = `00000000-0000-4000-8000-00000000000${last}`;
    const cost = { credits_used_for_query: 1, total_credits_used: 1, credit_limit: 100 };
    const headers = { 'x-credit-cost': '1' };
    if (last === '2' || last === '7') {
      return {
        status: 500,
        headers,
        body: {
          status: 'failed',
          error_code: 'billing_error',
          error: last === '2' ? HOSTILE : FORMULA,
          charged: true,
          correlation_id: id,
          phone_number: phone,
          country: 'US',
          cost,
        },
      };
    }
    const body = {
      status: 'succeeded',
      error_code: null,
      correlation_id: last === '3' ? '=cmd|"/c calc"!A1' : id,
      phone_number: phone,
      country: 'US',
      do_not_call: last === '1',
      timestamp: '2026-11-22T10:00:00.000000+00:00',
      dnc_list_source: last === '5' ? '@SUM(1+1)*cmd|"/c calc"!A0' : 'https://register.example/US',
      cost,
    };
    return { status: 200, headers, body };
  });
});
afterAll(async () => {
  await stub.close();
  tmp.remove();
});

/** Writes `list` as NAME.csv, scrubs it against the stub into `output` (in the scratch folder) with `flags`: exit `code`. */
async function scrub(
  name: string,
  list: string,
  output: string,
  flags: string[] = [],
  code = 0,
): Promise<{ input: string; out: string; stderr: string }> {
  const input = path.join(tmp.dir, `${name}.csv`);
  writeFileSync(input, list);
  const out = path.join(tmp.dir, output);
  const r = await runDnc(['batch', input, '-o', out, ...flags], {
    env: { DNC_BASE_URL: stub.baseUrl, DNC_API_KEY: 'k', ...STATE() },
  });
  expect(r.code, r.stderr).toBe(code);
  return { input, out, stderr: r.stderr };
}

describe('formula injection', () => {
  it('neutralises service text and strips control characters, also quoted in the reason of a refused answer', async () => {
    const list =
      'name,phone\n"=HYPERLINK(""http://x"")",+12025550100\n@bob,+12025550101\nx,+12025550102\ny,+12025550103\nz,+12025550105\n';
    const { out } = await scrub('in', list, 'out.csv', [], 7);
    const rows = readCsvIndependently(out);
    const col = (name: string) => rows[0]!.indexOf(name);
    // Input cells are the contract: unchanged by default.
    expect(rows.slice(1).map((x) => x[0])).toEqual(['=HYPERLINK("http://x")', '@bob', 'x', 'y', 'z']);
    for (const row of rows.slice(1)) {
      for (const name of ['dnc_list_source', 'dnc_correlation_id', 'dnc_error', 'dnc_error_code', 'dnc_checked_at']) {
        expect(row[col(name)]).not.toMatch(/^[=+\-@\t\r]/);
        // eslint-disable-next-line no-control-regex
        expect(row[col(name)]).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
      }
    }
    expect(rows.slice(1).map((x) => x[col('dnc_result')])).toEqual([
      'callable',
      'do_not_call',
      'failed',
      'failed',
      'failed',
    ]);
    expect(rows[3]![col('dnc_error')]).toBe("'-2+3 ]0;owned [2J");
    expect(rows[4]![col('dnc_error')]).toMatch(
      /^the service's answer was refused: correlation_id must be a UUID, got "=cmd/,
    );
    expect(rows[5]![col('dnc_error')]).toMatch(
      /^the service's answer was refused: dnc_list_source "@SUM\(1\+1\)\*cmd.* is not an https URL/,
    );
    // verify does not take the neutralised cells for edits.
    const v = await runDnc(['verify', out, '--json'], { env: STATE() });
    expect((JSON.parse(v.stdout) as { tampered: boolean }).tampered).toBe(false);
  });

  it('--escape-formulas neutralises formula-leading input cells (a + number too) and verify still matches the input', async () => {
    const { input, out } = await scrub(
      'esc',
      'name,phone\n=1+2,+12025550100\n-minus,+12025550106\n"  @SUM(A1)",+12025550104\n',
      'esc.out.csv',
      ['--escape-formulas'],
    );
    const rows = readCsvIndependently(out);
    expect(rows.slice(1).map((x) => x.slice(0, 3))).toEqual([
      ["'=1+2", "'+12025550100", '+12025550100'],
      ["'-minus", "'+12025550106", '+12025550106'],
      ["'  @SUM(A1)", "'+12025550104", '+12025550104'],
    ]);
    expect(readFileSync(input, 'utf8')).toContain('=1+2,+12025550100');
    const v = await runDnc(['verify', out, '--json'], { env: STATE() });
    expect((JSON.parse(v.stdout) as { tampered: boolean }).tampered).toBe(false);
  });

  it('verify reads a file escaped before cells with spaces before a formula were escaped, as it was written', async () => {
    const { out } = await scrub('esc-old', 'name,phone\n" =1+1",+12025550100\n', 'esc-old.out.csv', [
      '--escape-formulas',
    ]);
    const m = JSON.parse(readFileSync(out.replace(/\.csv$/, '.manifest.json'), 'utf8'));
    expect(m.format).toMatchObject({ escape_formulas: true, escape_formulas_behind_spaces: true });
    // As the earlier writer had it: the cell unescaped, and the manifest without the new rule's flag.
    rewriteOutputAndManifest(
      out,
      readFileSync(out, 'utf8').replace("' =1+1", ' =1+1'),
      (manifest) => delete manifest.format.escape_formulas_behind_spaces,
      path.join(STATE().XDG_STATE_HOME, 'dnc'),
    );
    const v = JSON.parse((await runDnc(['verify', out, '--json'], { env: STATE() })).stdout) as {
      tampered: boolean;
      recheck_by_reason: Record<string, number>;
    };
    expect([v.tampered, v.recheck_by_reason]).toEqual([false, {}]);
  });

  it("a workbook output holds a hostile service's text and formula-looking input as text cells, never a formula", async () => {
    // Its own name: out.csv's manifest (out.manifest.json) is another output's.
    const { out } = await scrub(
      'in-book',
      'name,phone\n"=HYPERLINK(""http://x"")",+12025550102\n@SUM(A1),+12025550103\nf,+12025550107\n',
      'workbook-out.xlsx',
      [],
      7,
    );
    const [results] = readWorkbookIndependently(out);
    const header = results!.rows[0]!.map((c) => c.v);
    const col = (name: string) => header.indexOf(name);
    for (const row of results!.rows) for (const cell of row) expect(cell.t, JSON.stringify(cell)).not.toBe('f');
    expect(results!.rows.slice(1).map((row) => [row[0]!.v, row[0]!.t])).toEqual([
      ['=HYPERLINK("http://x")', 's'],
      ['@SUM(A1)', 's'],
      ['f', 's'],
    ]);
    // The service's text as it sent it (controls made spaces): a text cell runs nothing, so no `'` shows before it.
    expect(results!.rows[1]![col('dnc_error')]).toMatchObject({ v: HOSTILE_CELL, t: 's' });
    expect(results!.rows[3]![col('dnc_error')]).toMatchObject({ v: FORMULA, t: 's' });
    expect(results!.rows[2]![col('dnc_error')]).toMatchObject({ t: 's' });
    expect(String(results!.rows[2]![col('dnc_error')]!.v)).toContain('=cmd');
    expect(results!.rows[1]![col('dnc_phone_e164')]).toMatchObject({ v: '+12025550102', t: 's' });
    // verify reads the workbook as it was written: nothing taken for an edit (its failed rows are to re-check).
    const v = JSON.parse((await runDnc(['verify', out, '--json'], { env: STATE() })).stdout) as VerifyJson;
    expect([v.tampered, v.recheck_by_reason]).toEqual([false, { failed: 3 }]);
  });

  it("verify reads a workbook's service text by its manifest: with a `'` before a formula when written so", async () => {
    const { out } = await scrub('in-book-old', 'name,phone\nf,+12025550107\n', 'workbook-old.xlsx', [], 7);
    const m = JSON.parse(readFileSync(out.replace(/\.xlsx$/, '.manifest.json'), 'utf8'));
    expect(m.format).toMatchObject({ workbook: true, service_text_unquoted: true });
    // Without the flag the manifest says a release that put the `'` wrote it: this workbook's cell, without, differs.
    rewriteOutputAndManifest(
      out,
      readFileSync(out),
      (manifest) => delete manifest.format.service_text_unquoted,
      path.join(STATE().XDG_STATE_HOME, 'dnc'),
    );
    const v = JSON.parse((await runDnc(['verify', out, '--json'], { env: STATE() })).stdout) as VerifyJson;
    expect(v.tampered).toBe(true);
  });

  it('a review list of the other format than the results writes service text as its own format does', async () => {
    const list = 'name,phone\nx,+12025550102\nf,+12025550107\n';
    await scrub('mixed-a', list, 'mixed-a.xlsx', ['--review-out', path.join(tmp.dir, 'mixed-a.review.csv')], 7);
    const csv = readCsvIndependently(path.join(tmp.dir, 'mixed-a.review.csv'));
    expect(csv.slice(1).map((r) => r[csv[0]!.indexOf('dnc_error')])).toEqual([`'${HOSTILE_CELL}`, `'${FORMULA}`]);
    await scrub('mixed-b', list, 'mixed-b.results.csv', ['--review-out', path.join(tmp.dir, 'mixed-b.review.xlsx')], 7);
    const [review] = readWorkbookIndependently(path.join(tmp.dir, 'mixed-b.review.xlsx'));
    const at = review!.rows[0]!.findIndex((c) => c.v === 'dnc_error');
    expect(review!.rows.slice(1).map((r) => [r[at]!.v, r[at]!.t])).toEqual([
      [HOSTILE_CELL, 's'],
      [FORMULA, 's'],
    ]);
    const results = readCsvIndependently(path.join(tmp.dir, 'mixed-b.results.csv'));
    expect(results[2]![results[0]!.indexOf('dnc_error')]).toBe(`'${FORMULA}`);
  });

  it('the writer quotes any field holding the delimiter, a quote, CR or LF, whatever the record delimiter', () => {
    for (const eol of ['\n', '\r\n', '\r'] as const) {
      const w = new CsvWriter(';', eol);
      expect(w.record(['a\nb', 'c\rd', 'e;f', 'g"h', 'plain', ''])).toBe(`"a\nb";"c\rd";"e;f";"g""h";plain;${eol}`);
      expect(w.record([''])).toBe(`""${eol}`);
    }
    expect(serviceTextCell('=1', 'csv')).toBe("'=1");
    expect(serviceTextCell('ok\u0000\u009b31m', 'csv')).toBe('ok 31m');
    // A formula behind spaces or control characters (which become spaces): a cell-trimming import would find it.
    expect(serviceTextCell('\t@x', 'csv')).toBe("' @x");
    expect(serviceTextCell('\u001b\u0007=1+1', 'csv')).toBe("' =1+1");
    expect(serviceTextCell('  -2+3', 'csv')).toBe("'  -2+3");
    expect(serviceTextCell(' plain text', 'csv')).toBe(' plain text');
    // A workbook's text cell: controls made spaces, nothing put before a formula.
    expect(serviceTextCell('\u001b\u0007=1+1', 'xlsx')).toBe(' =1+1');
    expect(serviceTextCell('=1', 'xlsx')).toBe('=1');
    expect(escapeFormulaCell('\tx')).toBe("'\tx");
    expect(escapeFormulaCell('Ann')).toBe('Ann');
  });
});
