// `npm run soak -- --ci` as CI runs it: crash storm, listener storm, credit exhaustion, bad-input corpus, key leak; every invariant holds.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, REPO_ROOT } from '../helpers/cli.js';

beforeAll(() => assertBuilt());

/**
 * The soak's process group: the soak and every sandbox and dnc it starts. Killing the soak alone (on the time-out)
 * would orphan its sandboxes, which then run on after the test; the group is killed whole instead, and again after
 * the test whatever its outcome.
 */
let group: number | undefined;
function killGroup(): void {
  if (group === undefined) return;
  try {
    process.kill(-group, 'SIGKILL');
  } catch {
    // ESRCH: every process of the group has already exited.
  }
}
afterAll(killGroup);

function runSoak(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(REPO_ROOT, 'bench', 'soak.mjs'), '--ci'], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    group = child.pid;
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(killGroup, 170_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      // What the soak started and did not stop (a step that failed part-way) goes with it.
      killGroup();
      resolve({ code, stdout, stderr });
    });
  });
}

describe('npm run soak -- --ci', () => {
  it('runs every step and every invariant holds', { timeout: 180_000 }, async () => {
    const r = await runSoak();
    const summary = /^invariants: (\d+) kinds, (\d+) checks, (\d+) failed/m.exec(r.stdout);
    expect(summary, `no invariants line:\n${r.stdout}\n${r.stderr}`).not.toBeNull();
    const [, kinds, checks, failed] = summary!.map(Number);
    // Failures are listed as `failed: …` lines; show them when the test fails.
    expect(
      failed,
      r.stdout
        .split('\n')
        .filter((l) => /^(failed|error):/.test(l))
        .join('\n'),
    ).toBe(0);
    expect(r.code).toBe(0);
    // Every step ran: each contributes its own invariants (storm, listen, credits, corpus, leak).
    for (const step of ['storm:', 'listen:', 'attacks:', 'credits:', 'corpus:', 'leak:'])
      expect(r.stdout).toContain(step);
    expect(kinds).toBeGreaterThanOrEqual(40);
    expect(checks).toBeGreaterThan(10_000);
  });
});
