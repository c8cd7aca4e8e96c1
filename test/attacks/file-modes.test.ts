// Local files are the user's alone: journals (and -wal, -shm, locks), caches, state, history and the registry.
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { spawnDnc } from '../helpers/cli.js';

let sb: Sandbox;
let dir: string;
beforeAll(async () => {
  sb = await startSandbox({ port: 0, allowInsecureWebhooks: true, timeScale: 0.01, seed: 9 });
  dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-modes-'));
});
afterAll(async () => {
  await sb.close();
  rmSync(dir, { recursive: true, force: true });
});

const mode = (p: string) => statSync(p).mode & 0o777;
const env = () => ({
  DNC_BASE_URL: sb.baseUrl,
  DNC_API_KEY: sb.apiKey,
  HOME: dir,
  XDG_STATE_HOME: path.join(dir, 'xdg-state'),
  XDG_CACHE_HOME: path.join(dir, 'xdg-cache'),
});

/** Everything dnc keeps under `root`, with its mode. */
function modesUnder(root: string): Record<string, number> {
  const out: Record<string, number> = { [path.relative(dir, root)]: mode(root) };
  for (const name of readdirSync(root)) {
    const p = path.join(root, name);
    if (statSync(p).isDirectory()) Object.assign(out, modesUnder(p));
    else out[path.relative(dir, p)] = mode(p);
  }
  return out;
}

describe('file modes', () => {
  it('creates journals, state and caches 0600 in 0700 folders, whatever the umask allows', async () => {
    writeFileSync(path.join(dir, 'calls.csv'), 'name,phone\na,+61412345093\nb,+12025550122\nc,+12025550123\n');
    const batch = await spawnDnc(
      [
        'batch',
        'calls.csv',
        '-o',
        'out.csv',
        '--webhook-url',
        'http://127.0.0.1:9/hooks/Jr6tQm2yVb0sXw9LkPz3dA',
        '--allow-insecure-webhook-url',
      ],
      { cwd: dir, env: env() },
    );
    expect(batch.code, batch.stderr).toBe(8);
    const check = await spawnDnc(['check', '+12025550122'], { cwd: dir, env: env() });
    expect(check.code, check.stderr).toBe(0);
    const journal = path.join(dir, 'out.csv.journal.sqlite');
    expect(mode(journal)).toBe(0o600);
    for (const companion of [`${journal}-wal`, `${journal}-shm`]) {
      try {
        expect(mode(companion), companion).toBe(0o600);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
    const kept = { ...modesUnder(path.join(dir, 'xdg-state')), ...modesUnder(path.join(dir, 'xdg-cache')) };
    expect(Object.keys(kept).some((k) => k.endsWith('journals.json'))).toBe(true);
    expect(Object.keys(kept).some((k) => k.endsWith('checks.sqlite'))).toBe(true);
    for (const [p, m] of Object.entries(kept)) {
      const isDir = statSync(path.join(dir, p)).isDirectory();
      // xdg-state and xdg-cache themselves are the user's; dnc's folders inside them are private.
      if (p === 'xdg-state' || p === 'xdg-cache') continue;
      expect([p, m], p).toEqual([p, isDir ? 0o700 : 0o600]);
    }
  });

  it('tightens an existing journal, its -wal and -shm, and dnc folders on open', async () => {
    const journal = path.join(dir, 'out.csv.journal.sqlite');
    for (const p of [journal, `${journal}-wal`, `${journal}-shm`]) {
      try {
        chmodSync(p, 0o644);
      } catch {
        /* not there */
      }
    }
    mkdirSync(path.join(dir, 'xdg-state', 'dnc'), { recursive: true });
    chmodSync(path.join(dir, 'xdg-state', 'dnc'), 0o755);
    chmodSync(path.join(dir, 'xdg-state', 'dnc', 'checks.sqlite'), 0o644);
    const resume = await spawnDnc(
      [
        'batch',
        'calls.csv',
        '-o',
        'out.csv',
        '--webhook-url',
        'http://127.0.0.1:9/hooks/Jr6tQm2yVb0sXw9LkPz3dA',
        '--allow-insecure-webhook-url',
      ],
      {
        cwd: dir,
        env: env(),
      },
    );
    expect(resume.code, resume.stderr).toBe(8);
    expect(mode(journal)).toBe(0o600);
    const check = await spawnDnc(['check', '+12025550124'], { cwd: dir, env: env() });
    expect(check.code, check.stderr).toBe(0);
    expect(mode(path.join(dir, 'xdg-state', 'dnc'))).toBe(0o700);
    expect(mode(path.join(dir, 'xdg-state', 'dnc', 'checks.sqlite'))).toBe(0o600);
  });

  it('tightens the journal registry and the cost cache, and their folders, when they are only read', async () => {
    const registry = path.join(dir, 'xdg-state', 'dnc', 'journals.json');
    const costs = path.join(dir, 'xdg-cache', 'dnc', 'costs.json');
    for (const p of [registry, costs]) {
      chmodSync(p, 0o644);
      chmodSync(path.dirname(p), 0o755);
    }
    // trace reads the registry (it writes nothing); a dry run reads the cost cache (and sends nothing).
    const cid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/.exec(
      readFileSync(path.join(dir, 'out.csv'), 'utf8'),
    )![0];
    const trace = await spawnDnc(['trace', cid], { cwd: dir, env: env() });
    expect(trace.code, trace.stderr).toBe(0);
    const dry = await spawnDnc(['batch', 'calls.csv', '-o', 'dry.csv', '--dry-run'], { cwd: dir, env: env() });
    expect(dry.code, dry.stderr).toBe(0);
    expect([mode(registry), mode(path.dirname(registry)), mode(costs), mode(path.dirname(costs))]).toEqual([
      0o600, 0o700, 0o600, 0o700,
    ]);
  });
});
