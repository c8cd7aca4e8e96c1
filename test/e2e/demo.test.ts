// `npm run demo` (scripts/demo.mjs) works from a clone and leaves nothing in the user's home or temp folder.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { assertBuilt, REPO_ROOT } from '../helpers/cli.js';

describe('npm run demo', () => {
  it(
    'scrubs the demo list against its own sandbox and writes nothing under HOME or TMPDIR',
    { timeout: 120_000 },
    () => {
      assertBuilt();
      const home = mkdtempSync(path.join(os.tmpdir(), 'dnc-demo-home-'));
      const tmp = mkdtempSync(path.join(os.tmpdir(), 'dnc-demo-tmp-'));
      try {
        // As a user's shell has it: HOME set, no XDG_* variables, no DNC_* configuration.
        const r = spawnSync(process.execPath, [path.join(REPO_ROOT, 'scripts', 'demo.mjs')], {
          cwd: REPO_ROOT,
          env: { PATH: process.env.PATH ?? '', HOME: home, TMPDIR: tmp },
          encoding: 'utf8',
          timeout: 100_000,
        });
        expect(r.status, r.stderr).toBe(0);
        // The demo list's AU row is webhook-only: it finishes with that row without a verdict, which the demo explains.
        expect(r.stdout).toContain('Batch finished; 1 row(s) have no verdict');
        expect(r.stderr).toContain('demo: exit 7 (finished, some rows without a verdict) is expected here');
        expect(r.stdout).toMatch(/^callable\t15\t/m);
        expect(readdirSync(home)).toEqual([]);
        expect(readdirSync(tmp)).toEqual([]);
      } finally {
        rmSync(home, { recursive: true, force: true });
        rmSync(tmp, { recursive: true, force: true });
      }
    },
  );
});
