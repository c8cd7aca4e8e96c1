// `dnc store` and the team's list, in-process against a real PostgreSQL server: status and migrate, a local list
// moved in with its audit chain, conflicting settings refused, and a team log altered or cut behind dnc's back found.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDnc } from '../helpers/cli.js';
import { freshDatabase, HAVE_POSTGRES, postgresSkipped, sqlOn } from '../helpers/postgres.js';
import { lookedUp, world, type World } from '../helpers/world.js';
import { MIGRATIONS } from '../../src/stores/postgres/migrations.js';
import { docsGrants } from './helpers.js';

postgresSkipped('dnc store and the team list');

/** The schema's versions, as this dnc's migrations give them (PostgreSQL migration 3 and 4 are merged apart). */
const VERSIONS = MIGRATIONS.map((m) => m.version);
const LATEST = VERSIONS[VERSIONS.length - 1]!;

const lines = (out: string) =>
  out
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe.skipIf(!HAVE_POSTGRES)('dnc store, and the team list', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let w: World;
  let home: string;
  let local: Record<string, string>;
  let team: Record<string, string>;
  beforeAll(async () => {
    db = await freshDatabase();
    w = await world();
    home = mkdtempSync(path.join(os.tmpdir(), 'dnc-store-cmd-'));
    local = {
      ...w.env,
      USER: 'carol',
      XDG_STATE_HOME: path.join(home, 'state'),
      XDG_CACHE_HOME: path.join(home, 'cache'),
    };
    team = { ...local, DNC_STORE: db.url };
  });
  afterAll(async () => {
    await db?.drop();
    await w?.cleanup();
    rmSync(home, { recursive: true, force: true });
  });

  it('migrate makes the schema once; status says where (no password), which version, and what it holds', async () => {
    const m = await runDnc(['--json', 'store', 'migrate'], { env: team });
    expect(m.code, m.stderr).toBe(0);
    expect(JSON.parse(m.stdout)).toMatchObject({ applied: VERSIONS, schema_version: LATEST });
    const again = await runDnc(['store', 'migrate'], { env: team });
    expect(again.stderr).toContain(`at schema version ${LATEST} already: nothing to do`);
    const s = await runDnc(['--json', 'store', 'status'], { env: team });
    expect(s.code, s.stderr).toBe(0);
    expect(JSON.parse(s.stdout)).toMatchObject({
      kind: 'postgres',
      schema_version: LATEST,
      latest_version: LATEST,
      counts: { audit: 0 },
    });
    const password = new URL(db.url).password;
    if (password) for (const out of [m, again, s]) expect(out.stdout + out.stderr).not.toContain(password);
    const none = await runDnc(['store', 'migrate'], { env: local });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('[E_STORE_INVALID]');
  });

  it('the store is named by --store, DNC_STORE or the config file, the flag first; a non-URL is refused', async () => {
    const where = (out: string) => JSON.parse(out) as { kind: string; where: string };
    const flag = await runDnc(['--json', '--store', db.url, 'store', 'status'], { env: local });
    expect(flag.code, flag.stderr).toBe(0);
    expect(where(flag.stdout).kind).toBe('postgres');
    const config = path.join(home, 'config.json');
    writeFileSync(config, JSON.stringify({ store: db.url }), { mode: 0o600 });
    const file = await runDnc(['--json', 'store', 'status'], { env: { ...local, DNC_CONFIG: config } });
    expect(file.code, file.stderr).toBe(0);
    expect(where(file.stdout)).toEqual(where(flag.stdout));
    // The flag over the environment: a bad DNC_STORE is not read when --store is given.
    const over = await runDnc(['--json', '--store', db.url, 'store', 'status'], {
      env: { ...local, DNC_STORE: 'nope' },
    });
    expect(over.code, over.stderr).toBe(0);
    const bad = await runDnc(['store', 'status'], { env: { ...local, DNC_STORE: '/var/lib/dnc.sqlite' } });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('[E_STORE_INVALID]');
  });

  it("import moves a machine's list in with its audit chain: the team's hashes are the file's", async () => {
    expect(
      (await runDnc(['suppress', 'add', '+12025550143', '+12025550144', '--reason', 'asked'], { env: local })).code,
    ).toBe(0);
    expect((await runDnc(['suppress', 'remove', '+12025550144'], { env: local })).code).toBe(0);
    expect(
      (await runDnc(['exempt', 'add', '+12025550150', '--basis', 'consent', '--until', '2099-01-01'], { env: local }))
        .code,
    ).toBe(0);
    const before = lines((await runDnc(['--json', 'suppress', 'log'], { env: local })).stdout);
    const imp = await runDnc(['store', 'import'], { env: team });
    expect(imp.code, imp.stderr).toBe(0);
    expect(imp.stderr).toContain('4 audit entries copied, hashes and all');
    const after = lines((await runDnc(['--json', 'suppress', 'log'], { env: team })).stdout);
    expect(after.map((e) => e.hash)).toEqual(before.map((e) => e.hash));
    // An independent reading of the server's rows: the chain recomputed from them.
    const rows = await sqlOn(db.url, 'SELECT * FROM dnc.audit ORDER BY id');
    let previous = '';
    for (const r of rows) {
      const canonical = JSON.stringify([
        r.at,
        r.action,
        r.e164,
        r.who,
        r.reason,
        r.source,
        r.basis,
        r.until,
        r.evidence,
      ]);
      expect(r.hash).toBe(createHash('sha256').update(previous).update('\n').update(canonical).digest('hex'));
      previous = String(r.hash);
    }
    // Once the team list has entries, another copy is refused; --merge adds only what it lacks.
    const twice = await runDnc(['store', 'import'], { env: team });
    expect(twice.code).toBe(2);
    expect(twice.stderr).toContain('add --merge');
    expect((await runDnc(['suppress', 'add', '+12025550199'], { env: local })).code).toBe(0);
    const merged = await runDnc(['--json', 'store', 'import', '--merge'], { env: team });
    expect(merged.code, merged.stderr).toBe(0);
    expect(JSON.parse(merged.stdout)).toMatchObject({ merged: true, list: { suppressions: 2, exemptions: 1 } });
    expect((await runDnc(['suppress', 'count'], { env: team })).stdout.trim()).toBe('2');
  });

  it('a member with exactly the grants docs/team.md gives can scrub, check and change the list, and no more', async () => {
    const member = `dnc_member_${Math.random().toString(36).slice(2, 8)}`;
    const grants = docsGrants(member, db.name);
    await sqlOn(db.url, `CREATE ROLE ${member} LOGIN PASSWORD 'member-pw'; ${grants}`);
    try {
      const u = new URL(db.url);
      u.username = member;
      u.password = '';
      const env = { ...team, DNC_STORE: u.toString(), PGPASSWORD: 'member-pw', USER: 'erin' };
      const add = await runDnc(['suppress', 'add', '+12025550188'], { env });
      expect(add.code, add.stderr).toBe(0);
      const list = w.file('member.csv', ['phone', '+12025550188', '+12025550101']);
      const batch = await runDnc(['batch', list], { env });
      expect(batch.code, batch.stderr).toBe(0);
      const check = await runDnc(['check', '+12025550102'], { env });
      expect(check.code, check.stderr).toBe(0);
      expect((await runDnc(['status', '--scrubs'], { env })).code).toBe(0);
      // The password given by PGPASSWORD is a secret like the key: in no line dnc printed.
      for (const r of [add, batch, check]) expect(r.stdout + r.stderr).not.toContain('member-pw');
      // What the grants keep out: changing the log, or the schema.
      const asMember = u.toString().replace(`${member}@`, `${member}:member-pw@`);
      await expect(sqlOn(asMember, "UPDATE dnc.audit SET who = 'x'")).rejects.toThrow(/permission denied/);
      await expect(sqlOn(asMember, 'DELETE FROM dnc.list_heads')).rejects.toThrow(/permission denied/);
      await expect(sqlOn(asMember, 'CREATE TABLE dnc.mine (x int)')).rejects.toThrow(/permission denied/);
    } finally {
      await sqlOn(db.url, `DROP OWNED BY ${member}; DROP ROLE ${member}`);
    }
  });

  it('a list file named beside a team store is refused: the team list is the one list', async () => {
    const before = lookedUp(w.sb).length;
    const r = await runDnc(['check', '+12025550143', '--suppression-list', path.join(home, 'other.sqlite')], {
      env: team,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('[E_STORE_INVALID]');
    expect(lookedUp(w.sb).length).toBe(before);
  });

  it("the team log altered or cut behind dnc's back is found: batch refuses and sends nothing", async () => {
    const list = w.file('calls.csv', ['phone', '+12025550100', '+12025550143']);
    const ok = await runDnc(
      ['batch', list, '-o', path.join(w.dir, 'ok.csv'), '--seller', 'ACME', '--campaign', 'winter'],
      { env: team },
    );
    expect(ok.code, ok.stderr).toBe(0);
    // The scrub is in the team's history: another machine (another home) reads who scrubbed what, for whom.
    const elsewhere = {
      ...team,
      USER: 'dave',
      XDG_STATE_HOME: path.join(home, 'dave-state'),
      XDG_CACHE_HOME: path.join(home, 'dave-cache'),
    };
    const scrubs = lines((await runDnc(['--json', 'status', '--scrubs'], { env: elsewhere })).stdout);
    expect(scrubs[0]).toMatchObject({
      output: path.join(w.dir, 'ok.csv'),
      seller: 'ACME',
      campaign: 'winter',
      rows: 2,
    });
    expect(String(scrubs[0]!.operator)).toMatch(/^carol@/);
    const sent = lookedUp(w.sb).length;
    // The superuser switches the append-only trigger off and edits an entry: the chain breaks.
    await sqlOn(
      db.url,
      "ALTER TABLE dnc.audit DISABLE TRIGGER USER; UPDATE dnc.audit SET reason = 'nothing' WHERE id = 1; ALTER TABLE dnc.audit ENABLE TRIGGER USER",
    );
    const altered = await runDnc(['batch', list, '-o', path.join(w.dir, 'altered.csv')], { env: team });
    expect(altered.code).toBe(3);
    expect(altered.stderr).toContain('[E_LIST_ALTERED]');
    expect(altered.stderr).toContain('audit entry 1 does not match the hash chain');
    await sqlOn(
      db.url,
      "ALTER TABLE dnc.audit DISABLE TRIGGER USER; UPDATE dnc.audit SET reason = 'asked' WHERE id = 1; ALTER TABLE dnc.audit ENABLE TRIGGER USER",
    );
    // The last entry cut, with the row it recorded: the log still chains, but no longer holds the anchored head.
    await sqlOn(
      db.url,
      'ALTER TABLE dnc.audit DISABLE TRIGGER USER; DELETE FROM dnc.suppressions WHERE e164 = (SELECT e164 FROM dnc.audit ORDER BY id DESC LIMIT 1); DELETE FROM dnc.audit WHERE id = (SELECT max(id) FROM dnc.audit); ALTER TABLE dnc.audit ENABLE TRIGGER USER',
    );
    const cut = await runDnc(['batch', list, '-o', path.join(w.dir, 'cut.csv')], { env: team });
    expect(cut.code).toBe(3);
    expect(cut.stderr).toContain('entries were cut');
    expect(lookedUp(w.sb).length).toBe(sent);
  });
});
