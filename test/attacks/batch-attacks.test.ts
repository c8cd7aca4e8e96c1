// Attacks on dnc batch found by a review as a compliance analyst and an attacker would try them: each was a way
// to dial a registered number, lose paid results or destroy a file, and each is refused or fails closed now.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.js';
import { lookedUp, sandbox, scratch, scratchFolders, sha256 } from '../batch/helpers.js';
import { runDnc } from '../helpers/cli.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { startStub, type StubServer } from '../service/stub-server.js';

const tmp = scratch();
let sb: Sandbox;
let env: Record<string, string>;
let n = 0;

beforeAll(async () => {
  ({ sb, env } = await sandbox({ allowInsecureWebhooks: true }));
  env = { ...env, ...scratchFolders(tmp.dir) };
});
afterAll(async () => {
  await sb.close();
  tmp.remove();
});

function folder(): string {
  const d = path.join(tmp.dir, `case-${++n}`);
  mkdirSync(d);
  return d;
}

describe('a service answer that is not a verdict fails closed', () => {
  let stub: StubServer;
  // The number's last digit picks the broken answer.
  const broken: Record<string, Record<string, unknown>> = {
    '1': { do_not_call: 'true' },
    '2': { do_not_call: 'yes' },
    '3': { do_not_call: null },
    '4': {},
    '5': { do_not_call: 0 },
    '6': { do_not_call: false, phone_number: '+12025550199' },
  };
  beforeAll(async () => {
    stub = await startStub((req) => {
      if (!req.url.startsWith('/check_phone_number'))
        return { status: 500, body: { error: 'unable to process request' } };
      const phone = decodeURIComponent(/phone_number=([^&]+)/.exec(req.url)![1]!);
      const body: Record<string, unknown> = {
        status: 'succeeded',
        error_code: null,
        correlation_id: `00000000-0000-4000-8000-00000000000${phone.slice(-1)}`,
        phone_number: phone,
        country: 'US',
        timestamp: '2026-11-22T10:00:00.000000+00:00',
        dnc_list_source: 'https://register.example/US',
        cost: { credits_used_for_query: 1, total_credits_used: 1, credit_limit: 100 },
        ...broken[phone.slice(-1)],
      };
      if (!('do_not_call' in (broken[phone.slice(-1)] ?? {})) && phone.slice(-1) !== '4') body.do_not_call = false;
      return { status: 200, headers: { 'x-credit-cost': '1' }, body };
    });
  });
  afterAll(async () => {
    await stub.close();
  });

  it('"true" as a string, "yes", null, a missing field, 0, or an answer about another number: failed/bad_response, never callable', async () => {
    const d = folder();
    writeFileSync(
      path.join(d, 'in.csv'),
      `phone\n${Object.keys(broken)
        .map((k) => `+1202555010${k}`)
        .join('\n')}\n`,
    );
    const r = await runDnc(['batch', 'in.csv', '-o', 'out.csv'], {
      cwd: d,
      env: { DNC_BASE_URL: stub.baseUrl, DNC_API_KEY: 'k' },
    });
    // Charged failures: no verdict, and a rerun does not pay for them again.
    expect(r.code, r.stderr).toBe(7);
    expect(r.stderr).toContain('6 row(s) failed after a charge: a rerun does not send them again');
    const [head, ...rows] = readCsvIndependently(path.join(d, 'out.csv'));
    const at = (c: string) => head!.indexOf(c);
    for (const row of rows)
      expect([row[0], row[at('dnc_result')], row[at('dnc_error_code')]]).toEqual([row[0], 'failed', 'bad_response']);
    expect(rows.find((x) => x[0] === '+12025550106')![at('dnc_error')]).toContain(
      'the answer is about "+12025550199", not the number sent (+12025550106)',
    );
    const v = JSON.parse((await runDnc(['--json', 'verify', 'out.csv'], { cwd: d })).stdout) as { fit: boolean };
    expect(v.fit).toBe(false);
    // A rerun sends none of them again (each may have been charged).
    const before = stub.requests.length;
    expect(
      (
        await runDnc(['batch', 'in.csv', '-o', 'out.csv'], {
          cwd: d,
          env: { DNC_BASE_URL: stub.baseUrl, DNC_API_KEY: 'k' },
        })
      ).code,
    ).toBe(7);
    expect(stub.requests.slice(before).filter((q) => q.url.startsWith('/check_phone_number'))).toEqual([]);
  });
});

describe('files that are not dnc’s are never written over or deleted', () => {
  it('--journal naming a list, with --restart: refused (exit 2), the list untouched', async () => {
    const d = folder();
    writeFileSync(path.join(d, 'in.csv'), 'phone\n+12025550100\n');
    writeFileSync(path.join(d, 'precious.csv'), 'precious,data\n1,2\n');
    const before = sha256(path.join(d, 'precious.csv'));
    for (const extra of [['--restart'], []]) {
      const r = await runDnc(['batch', 'in.csv', '-o', 'n.csv', '--journal', 'precious.csv', ...extra], {
        cwd: d,
        env,
      });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('is not a dnc batch journal');
      expect(sha256(path.join(d, 'precious.csv'))).toBe(before);
    }
  });

  it("outputs differing only in extension never share a manifest: the second's is named after its whole name", async () => {
    const d = folder();
    writeFileSync(path.join(d, 'in.csv'), 'phone\n+12025550100\n');
    expect((await runDnc(['batch', 'in.csv', '-o', 'x.csv'], { cwd: d, env })).code).toBe(0);
    const manifest = readFileSync(path.join(d, 'x.manifest.json'), 'utf8');
    const r = await runDnc(['batch', 'in.csv', '-o', 'x.tsv'], { cwd: d, env });
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(path.join(d, 'x.manifest.json'), 'utf8')).toBe(manifest);
    expect(JSON.parse(readFileSync(path.join(d, 'x.tsv.manifest.json'), 'utf8')).output.path).toBe(
      path.join(d, 'x.tsv'),
    );
    // A manifest at the whole name that is another output's (made by hand) is still refused, not replaced.
    writeFileSync(path.join(d, 'y.manifest.json'), JSON.stringify({ output: { path: path.join(d, 'y.csv') } }));
    writeFileSync(path.join(d, 'y.tsv.manifest.json'), JSON.stringify({ output: { path: path.join(d, 'z.csv') } }));
    const refused = await runDnc(['batch', 'in.csv', '-o', 'y.tsv'], { cwd: d, env });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('is the manifest of another output');
  });

  it('an input that is already a results file (dnc_* columns) is refused before anything is sent', async () => {
    const d = folder();
    writeFileSync(path.join(d, 'old.csv'), 'name,phone,dnc_result,dnc_do_not_call\nA,+12025550101,callable,false\n');
    sb.reset();
    const r = await runDnc(['batch', 'old.csv', '-o', 'r.csv'], { cwd: d, env });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('[E_INPUT_HAS_RESULTS]');
    expect(lookedUp(sb)).toEqual([]);
  });
});

describe('which column is scrubbed is never a guess', () => {
  it('"Mobile Phone" beside "Home Phone": both are scrubbed, and the batch says so (no number left unchecked)', async () => {
    const d = folder();
    writeFileSync(path.join(d, 't.csv'), 'id,Mobile Phone,Home Phone\n1,+12025550100,+12025550101\n');
    sb.reset();
    const r = await runDnc(['batch', 't.csv', '-o', 'o.csv'], { cwd: d, env });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('phone columns: Mobile Phone, Home Phone');
    expect(lookedUp(sb).sort()).toEqual(['+12025550100', '+12025550101']);
  });

  it('"Phone" beside "Phone (home)": which to scrub is not sure, exit 2 listing both', async () => {
    const d = folder();
    writeFileSync(path.join(d, 't.csv'), 'id,Phone,Phone (home)\n1,+12025550100,+12025550101\n');
    sb.reset();
    const r = await runDnc(['batch', 't.csv', '-o', 'o.csv'], { cwd: d, env });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('Phone, Phone (home)');
    expect(lookedUp(sb)).toEqual([]);
  });

  it('--column 3 where column 1 is named "3": the name and the index disagree, exit 2', async () => {
    const d = folder();
    writeFileSync(path.join(d, 't.csv'), '3,name,mobile\n+12025550100,a,+12025550101\n');
    const r = await runDnc(['batch', 't.csv', '-o', 'o.csv', '--column', '3'], { cwd: d, env });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('is both the name of column 1 and the index of column 3');
  });
});

describe('paid webhook results are never stranded', () => {
  it('a rerun with another --webhook-url while lookups are pending is refused: their pushes go to the first', async () => {
    const d = folder();
    writeFileSync(path.join(d, 'au.csv'), 'phone\n+61 2 9876 5432\n');
    const hook = (p: string) => `${sb.baseUrl}/hooks/${p}`;
    const first = await runDnc(
      [
        'batch',
        'au.csv',
        '-o',
        'au.out.csv',
        '--webhook-url',
        hook('Qx7pL2mN9vR4tY8wK3zB6c'),
        '--allow-insecure-webhook-url',
      ],
      { cwd: d, env },
    );
    expect(first.code, first.stderr).toBe(8);
    const second = await runDnc(
      [
        'batch',
        'au.csv',
        '-o',
        'au.out.csv',
        '--webhook-url',
        hook('Hj5sD1fG8kL0pZ2xC4vN7m'),
        '--allow-insecure-webhook-url',
      ],
      { cwd: d, env },
    );
    expect(second.code).toBe(2);
    expect(second.stderr).toContain('1 webhook lookup(s) of this batch are pending');
    // Left out, the URL is the remembered one: the rerun goes on.
    expect((await runDnc(['batch', 'au.csv', '-o', 'au.out.csv'], { cwd: d, env })).code).toBe(8);
  });
});

describe('verify knows the internal list as it is now', () => {
  it('a callable number added to the internal do-not-call list after the scrub makes the file not fit', async () => {
    const d = folder();
    writeFileSync(path.join(d, 'in.csv'), 'phone\n+12025550100\n+12025550102\n');
    const e = { ...env, XDG_STATE_HOME: path.join(d, 'state') };
    expect((await runDnc(['batch', 'in.csv', '-o', 'out.csv'], { cwd: d, env: e })).code).toBe(0);
    expect((await runDnc(['verify', 'out.csv'], { cwd: d, env: e })).code).toBe(0);
    expect((await runDnc(['suppress', 'add', '+12025550102', '--reason', 'complaint'], { cwd: d, env: e })).code).toBe(
      0,
    );
    const v = await runDnc(['--json', 'verify', 'out.csv'], { cwd: d, env: e });
    expect(v.code).toBe(3);
    const report = JSON.parse(v.stdout) as { fit: boolean; recheck: Array<{ number: string; reason: string }> };
    expect(report.recheck).toEqual([expect.objectContaining({ number: '+12025550102', reason: 'suppressed' })]);
  });
});

describe('small things a dialler trips on', () => {
  it('--delimiter refuses a letter, a digit or a space (they would split the numbers themselves)', async () => {
    const d = folder();
    writeFileSync(path.join(d, 'in.csv'), 'phone\n+12025550100\n');
    for (const bad of ['a', '1', ' ']) {
      const r = await runDnc(['batch', 'in.csv', '-o', 'o.csv', '--delimiter', bad], { cwd: d, env });
      expect(r.code, bad).toBe(2);
      expect(r.stderr).toContain('must be one punctuation character');
    }
  });

  it('--dial-out carries no byte-order mark even when the input has one', async () => {
    const d = folder();
    writeFileSync(path.join(d, 'bom.csv'), '\uFEFFname,phone\r\nA,+12025550100\r\n');
    expect((await runDnc(['batch', 'bom.csv', '-o', 'o.csv', '--dial-out', 'd.txt'], { cwd: d, env })).code).toBe(0);
    expect(readFileSync(path.join(d, 'd.txt'), 'utf8')).toBe('+12025550100\n');
    expect(readFileSync(path.join(d, 'o.csv'), 'utf8').startsWith('\uFEFF')).toBe(true);
  });

  it('a budget stop names the new budget in its resume command', async () => {
    const d = folder();
    writeFileSync(path.join(d, 'in.csv'), 'phone\n+12025550100\n+12025550102\n+12025550104\n');
    const r = await runDnc(['batch', 'in.csv', '-o', 'o.csv', '--max-credits', '1'], { cwd: d, env });
    expect(r.code).toBe(5);
    expect(r.stderr).toContain('with: dnc batch in.csv -o o.csv --max-credits <N|none>');
  });

  it('an unwritable state folder is exit 3 naming it, not an internal error', async () => {
    const d = folder();
    writeFileSync(path.join(d, 'in.csv'), 'phone\n+12025550100\n');
    const r = await runDnc(['batch', '-', '-o', '-'], {
      cwd: d,
      env: { ...env, XDG_STATE_HOME: path.join(d, 'in.csv') },
      stdin: 'phone\n+12025550100\n',
    });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('[E_OUTPUT_UNWRITABLE]');
  });
});
