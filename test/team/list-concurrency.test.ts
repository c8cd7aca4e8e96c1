// The team's internal list edited by several machines at once (separate HOME folders, separate processes): no change
// is refused as if the list had been altered, and the chain stays whole.
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, spawnDnc } from '../helpers/cli.js';
import { freshDatabase, HAVE_POSTGRES, postgresSkipped, sqlOn } from '../helpers/postgres.js';
import { world, type World } from '../helpers/world.js';

postgresSkipped('the team list under concurrent edits');

describe.skipIf(!HAVE_POSTGRES)('three machines editing the team list at once', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let w: World;
  beforeAll(async () => {
    assertBuilt();
    db = await freshDatabase();
    w = await world();
  });
  afterAll(async () => {
    await w?.cleanup();
    await db?.drop();
  });

  const env = (name: string) => {
    const home = path.join(w.dir, name);
    mkdirSync(home, { recursive: true });
    return { HOME: home, USER: name, XDG_STATE_HOME: path.join(home, 'state'), DNC_STORE: db.url };
  };

  it('adds, exemptions and removals for 20 s: no false E_LIST_ALTERED, every change kept, the chain valid', async () => {
    const until = Date.now() + 20_000;
    const failures: string[] = [];
    let changes = 0;
    const machine = async (name: string, offset: number) => {
      const e = env(name);
      for (let i = 0; Date.now() < until; i++) {
        const n = `+1202555${String(offset + (i % 25)).padStart(4, '0')}`;
        const argv =
          i % 3 === 0
            ? ['suppress', 'add', n, '--reason', `asked ${name} ${i}`]
            : i % 3 === 1
              ? ['exempt', 'add', n, '--basis', 'consent', '--until', '2099-01-01']
              : ['suppress', 'remove', n];
        const r = await spawnDnc(argv, { env: e, cwd: w.dir, timeoutMs: 60_000 });
        changes++;
        if (r.code !== 0) failures.push(`${name} ${argv.join(' ')}: exit ${r.code}: ${r.stderr}`);
      }
    };
    // A reader too: each check verifies the list while the others change it.
    const reader = async () => {
      const e = { ...env('reader'), DNC_BASE_URL: w.sb.baseUrl, DNC_API_KEY: w.sb.apiKey };
      while (Date.now() < until) {
        const r = await spawnDnc(['suppress', 'list'], { env: e, cwd: w.dir, timeoutMs: 60_000 });
        if (r.code !== 0) failures.push(`reader: exit ${r.code}: ${r.stderr}`);
      }
    };
    await Promise.all([machine('a', 100), machine('b', 200), machine('c', 300), reader()]);
    expect(failures).toEqual([]);
    expect(changes).toBeGreaterThan(15);
    const list = await spawnDnc(['suppress', 'list'], { env: env('a'), cwd: w.dir, timeoutMs: 60_000 });
    expect(list.code, list.stderr).toBe(0);
    // The chain checked here, independently: each hash is SHA-256 of the previous one, a newline, and the entry
    // (format 2, every entry dnc writes since schema 4: a leading 2 and the country last).
    const log = await sqlOn(db.url, 'SELECT * FROM dnc.audit ORDER BY id');
    expect(log.length).toBeGreaterThan(10);
    let previous = '';
    for (const e of log) {
      expect(e.format).toBe(2);
      const canonical = JSON.stringify([
        2,
        ...['at', 'action', 'e164', 'who', 'reason', 'source', 'basis', 'until', 'evidence', 'country'].map(
          (k) => e[k],
        ),
      ]);
      const hash = createHash('sha256').update(`${previous}\n${canonical}`).digest('hex');
      expect(e.hash, `entry ${e.id}`).toBe(hash);
      previous = hash;
    }
  }, 120_000);
});
