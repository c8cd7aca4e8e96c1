// The compliance commands as a user runs them: the built binary, real process exit codes, the list private to the user.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { spawnDnc } from '../helpers/cli.js';

let sb: Sandbox | undefined;
let dir: string | undefined;
afterEach(async () => {
  await sb?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  sb = undefined;
  dir = undefined;
});

describe('dnc suppress / check / batch / status / report (built binary)', () => {
  it('a suppressed number exits 10 with --fail-on-dnc and is never sent; status and report work from the shell', async () => {
    sb = await startSandbox({ port: 0 });
    dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-compliance-e2e-'));
    const env = {
      DNC_BASE_URL: sb.baseUrl,
      DNC_API_KEY: sb.apiKey,
      XDG_STATE_HOME: path.join(dir, 'state'),
      USER: 'carol',
    };
    const add = await spawnDnc(['suppress', 'add', '+12025550100', '--reason', 'opt-out'], { env, cwd: dir });
    expect(add.code, add.stderr).toBe(0);
    expect(statSync(path.join(dir, 'state', 'dnc', 'do-not-call.sqlite')).mode & 0o777).toBe(0o600);
    const check = await spawnDnc(['check', '+12025550100', '--fail-on-dnc'], { env, cwd: dir });
    expect(check.code).toBe(10);
    expect(check.stdout).toContain('on the internal do-not-call list');
    expect(sb.requests().filter((r) => r.path === '/check_phone_number')).toEqual([]);

    const { writeFileSync } = await import('node:fs');
    writeFileSync(path.join(dir, 'calls.csv'), 'name,phone\na,+12025550100\nb,+12025550102\n');
    const batch = await spawnDnc(['batch', 'calls.csv', '--seller', 'Acme'], { env, cwd: dir });
    expect(batch.code, batch.stderr).toBe(0);
    expect(
      sb
        .requests()
        .filter((r) => r.path === '/check_phone_number')
        .map((r) => r.query.phone_number),
    ).toEqual(['+12025550102']);
    const status = await spawnDnc(['status', '--expiring', '40d'], { env, cwd: dir });
    expect(status.code).toBe(3);
    expect(status.stdout).toContain('calls.results.csv\tEXPIRING');
    expect((await spawnDnc(['status', '--expiring', '7d'], { env, cwd: dir })).code).toBe(0);
    const report = await spawnDnc(['report', 'calls.results.csv'], { env, cwd: dir });
    expect(report.code, report.stderr).toBe(0);
    expect(statSync(path.join(dir, 'calls.results.report.html')).mode & 0o777).toBe(0o600);
  });

  it('a team adding to one shared list at the same moment: every change lands, none is refused, the hash chain holds', async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-compliance-e2e-'));
    const list = path.join(dir, 'team.sqlite');
    const env = { XDG_STATE_HOME: path.join(dir, 'state'), USER: 'agent' };
    expect(
      (await spawnDnc(['suppress', 'add', '+12025550100', '--suppression-list', list], { env, cwd: dir })).code,
    ).toBe(0);
    // Separate processes, as separate agents' machines are: SQLite's locks are all they share.
    const n = 12;
    const runs = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        spawnDnc(
          i % 3 === 2
            ? [
                'exempt',
                'add',
                `+1202555${String(300 + i).padStart(4, '0')}`,
                '--basis',
                'consent',
                '--until',
                '2099-01-01',
                '--suppression-list',
                list,
              ]
            : ['suppress', 'add', `+1202555${String(200 + i).padStart(4, '0')}`, '--suppression-list', list],
          { env, cwd: dir },
        ),
      ),
    );
    expect(runs.map((r) => [r.code, r.code === 0 ? '' : r.stderr])).toEqual(runs.map(() => [0, '']));
    expect((await spawnDnc(['suppress', 'count', '--suppression-list', list], { env, cwd: dir })).stdout.trim()).toBe(
      String(1 + (n - n / 3)),
    );
    const log = await spawnDnc(['--json', 'suppress', 'log', '--suppression-list', list], { env, cwd: dir });
    expect(log.code, log.stderr).toBe(0);
    expect(log.stdout.trim().split('\n')).toHaveLength(n + 1);
  }, 60_000);
});
