// `dnc usage` as a process (bin/dnc.js → dist/): a table on a real pseudo-terminal, tab-separated records on a pipe, --json.
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import type { UsagePage } from '../../src/wire/types.js';
import { assertBuilt, NO_HOME, REPO_ROOT, spawnDnc } from '../helpers/cli.js';

const KEY = 'key_e2e_usage_acme_0001';
let sb: Sandbox;

beforeAll(async () => {
  sb = await startSandbox({
    port: 0,
    now: () => new Date('2026-11-21T12:00:00Z'),
    accounts: [
      {
        key: KEY,
        customerName: 'Acme Dialers Ltd',
        plan: 'monthly',
        creditLimit: 10_000,
        creditsUsed: 8_123,
        requestsUsed: 6_544,
        billingDate: '2026-11-01T00:00:00Z',
        history: [
          {
            startDate: '2026-10-01T00:00:00Z',
            creditLimit: 10_000,
            creditsUsed: 700,
            totalRequests: 650,
            byCountry: { US: 600, GB: 50 },
          },
        ],
      },
    ],
  });
});
afterAll(async () => {
  await sb.close();
});

const env = () => ({ DNC_BASE_URL: sb.baseUrl, DNC_API_KEY: KEY });

/** Runs dnc under `script`, so that its stdout and stderr are a terminal 100 columns wide. */
function onTerminal(args: string[]): Promise<{ code: number; output: string }> {
  assertBuilt();
  const command = `stty cols 100 rows 50 2>/dev/null; exec "${process.execPath}" bin/dnc.js ${args.join(' ')}`;
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qec', command, '/dev/null'], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: NO_HOME, TERM: 'xterm', NO_COLOR: '1', ...env() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, output: output.replace(/\r\n/g, '\n') }));
  });
}

describe('dnc usage (spawned)', () => {
  it('draws tables and the gauge on a terminal, without colour under NO_COLOR', async () => {
    const r = await onTerminal(['usage', '--periods', '2']);
    expect(r.code).toBe(0);
    expect(r.output).not.toContain('\u001b[');
    expect(r.output).toContain('Acme Dialers Ltd · 2 billing periods, newest first');
    expect(r.output).toContain('│ Dates (UTC)       │ 2026-11-01 to 2026-11-30 │');
    expect(r.output).toContain('│ Credits used      │ 8,123  ████████░░ 81 %   │');
    expect(r.output).toContain('│ Dates (UTC)       │ 2026-10-01 to 2026-10-31 │');
    expect(r.output).toContain('│ US      │      600 │');
    for (const line of r.output.split('\n')) expect([...line].length).toBeLessThanOrEqual(100);
  });

  it('prints tab-separated records when piped', async () => {
    const r = await spawnDnc(['usage', '--periods', '2'], { env: env() });
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    const current = sb.account(KEY).billingPeriodId;
    expect(r.stdout.split('\n').filter((l) => /^(customer|period)\t/.test(l))).toEqual([
      'customer\tAcme Dialers Ltd',
      `period\t${current}\tmonthly\t2026-11-01T00:00:00Z\t2026-12-01T00:00:00Z\t2026-11-30\t10000\t8123\t1877\t6544\t0\t0`,
      expect.stringMatching(
        /^period\t\d+\tmonthly\t2026-10-01T00:00:00Z\t2026-11-01T00:00:00Z\t2026-10-31\t10000\t700\t9300\t650\t0\t0$/,
      ),
    ]);
  });

  it('--json --all prints one merged document; bad flags exit 2 without a request', async () => {
    const before = sb.requests().length;
    const r = await spawnDnc(['--json', 'usage', '--all', '--periods', '1'], { env: env() });
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as UsagePage;
    expect(doc.customer_name).toBe('Acme Dialers Ltd');
    expect(doc.data.map((p) => p.start_date)).toEqual(['2026-11-01T00:00:00Z', '2026-10-01T00:00:00Z']);
    expect(doc.next_cursor).toBeNull();
    expect(sb.requests().length - before).toBe(2);
    const bad = await spawnDnc(['usage', '--id', '5', '--all'], { env: env() });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("dnc: error [E_USAGE]: option '--id <id>' cannot be used with option '--all'");
    expect(sb.requests().length - before).toBe(2);
  });
});
