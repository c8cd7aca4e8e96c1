// Errors of the team store that say what happened: no password, a password that is not percent-encoded (or holds
// %zz), a history the role may not write, a config file holding a store password, an import that changed nothing.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDnc, spawnDnc } from '../helpers/cli.js';
import { freshDatabase, HAVE_POSTGRES, postgresSkipped, sqlOn } from '../helpers/postgres.js';
import { lookedUp, world, type World } from '../helpers/world.js';
import { docsGrants } from './helpers.js';

postgresSkipped('errors of the team store');

describe.skipIf(!HAVE_POSTGRES)('errors of the team store', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let w: World;
  let home: string;
  let env: Record<string, string>;
  beforeAll(async () => {
    db = await freshDatabase();
    w = await world();
    home = mkdtempSync(path.join(os.tmpdir(), 'dnc-store-errors-'));
    env = {
      ...w.env,
      USER: 'dana',
      XDG_STATE_HOME: path.join(home, 'state'),
      XDG_CACHE_HOME: path.join(home, 'cache'),
    };
  });
  afterAll(async () => {
    await db?.drop();
    for (const name of roles)
      await sqlOn(db.url.replace(`/${db.name}`, '/postgres'), `DROP ROLE IF EXISTS ${name}`).catch(() => undefined);
    await w?.cleanup();
    rmSync(home, { recursive: true, force: true });
  });

  // Roles belong to the whole server, not the database dropped after: named afresh by each run, and dropped after.
  const roles: string[] = [];
  const suffix = randomBytes(3).toString('hex');

  /** A role with a password of its own (pw-NAME), and the store's URL for it (without the password). */
  async function role(name: string, grants: string): Promise<string> {
    const unique = `${name}_${suffix}`;
    await sqlOn(db.url, `CREATE ROLE ${unique} LOGIN PASSWORD 'pw-${name}'; ${grants.replaceAll('ROLE', unique)}`);
    roles.push(unique);
    const u = new URL(db.url);
    u.username = unique;
    u.password = '';
    return u.toString();
  }

  it("no password at all: E_STORE_REFUSED (exit 2), not the driver's words", async () => {
    const url = await role('dnc_nopw', 'GRANT CONNECT ON DATABASE ' + db.name + ' TO ROLE;');
    // A process of its own: the environment it is given holds no PGPASSWORD (this test's process does).
    const r = await spawnDnc(['store', 'status'], { env: { ...env, DNC_STORE: url } });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('[E_STORE_REFUSED]');
    expect(r.stderr, r.stderr).toContain('asks for a password and none was given');
    expect(r.stderr).not.toMatch(/SASL|must be a string|report this/);
  });

  it.each([
    ['an @ or / not percent-encoded', 'Pw9@9/Zz31', ['Pw9', '9/Zz31', 'Zz31'], 'not percent-encoded'],
    ['a % that begins no escape (%zz)', 'Pw9%zzQq81', ['Pw9', 'zzQq81', 'Qq81'], 'does not begin an escape'],
  ])('a password with %s: refused (exit 2), and no part of it shown', async (_, password, parts, why) => {
    const url = `postgresql://dnc_sec:${password}@127.0.0.1:1/dnc`;
    for (const argv of [
      ['store', 'status'],
      ['check', '+12025550100'],
    ]) {
      const r = await runDnc(argv, { env: { ...env, DNC_STORE: url } });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain('[E_STORE_INVALID]');
      expect(r.stderr).toContain(why);
      for (const part of parts) expect(r.stdout + r.stderr).not.toContain(part);
    }
  });

  it('a history the role may not write: check and batch say so in a warning, never silence', async () => {
    await runDnc(['store', 'migrate'], { env: { ...env, DNC_STORE: db.url } });
    // The grants docs/team.md gives a member, but none on the history (dnc.checks, dnc.scrubs).
    const grants = docsGrants('ROLE', db.name)
      .split('\n')
      .filter((l) => !/dnc\.(checks|scrubs)\b/.test(l))
      .join('\n');
    const url = await role('dnc_nohist', grants);
    const member = { ...env, DNC_STORE: url, PGPASSWORD: 'pw-dnc_nohist' };
    const check = await runDnc(['check', '+12025550160'], { env: member });
    expect(check.code, check.stderr).toBe(0);
    expect(check.stderr).toContain('warning: this check is not recorded in the history');
    const list = w.file('nohist.csv', ['phone', '+12025550161']);
    const batch = await runDnc(['batch', list], { env: member, cwd: w.dir });
    expect(batch.code, batch.stderr).toBe(0);
    expect(batch.stderr).toContain('warning: the scrub is not recorded in the history');
    expect(lookedUp(w.sb)).toContain('+12025550161');
  });

  it('a config file others can read names what it holds: the store password, not the API key', async () => {
    const file = path.join(home, 'config.json');
    writeFileSync(file, JSON.stringify({ store: 'postgresql://dnc:s3cret@127.0.0.1:1/dnc' }));
    chmodSync(file, 0o644);
    const r = await runDnc(['--config', file, 'check', '+12025550180'], { env });
    expect(r.stderr).toContain('holds a store password and others can read it');
    expect(r.stderr).not.toContain('API key');
    expect(r.stderr).not.toContain('s3cret');
  });

  it('store import --merge that changes nothing says so', async () => {
    const own = { ...env, XDG_STATE_HOME: path.join(home, 'merge-state') };
    expect((await runDnc(['suppress', 'add', '+12025550170'], { env: own })).code).toBe(0);
    const team = { ...own, DNC_STORE: db.url };
    const first = await runDnc(['store', 'import', '--merge'], { env: team });
    expect(first.code, first.stderr).toBe(0);
    const again = await runDnc(['store', 'import', '--merge'], { env: team });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain('nothing to import');
    expect(again.stderr).not.toContain('imported');
  });
});
