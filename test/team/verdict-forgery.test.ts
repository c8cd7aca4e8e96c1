// A member's role and the team's verdicts, claims and coordination tables since PostgreSQL schema 6: a store made at
// schema 5 with the grants docs/team.md gave then (direct writes on verdicts and claims; members and shared scrubs
// PUBLIC's), holding a verdict of the old dnc, migrated by the owner. Then, as members, through psql (not dnc's
// driver): every plain-SQL write is refused; a verdict forged through the owner's functions is stamped with the
// forger's role, and every colleague's check and batch that reuses it names that role.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEAM_FUNCTION_SIGNATURES } from '../../src/stores/postgres/team-functions.js';
import { assertBuilt, REPO_ROOT, spawnDnc } from '../helpers/cli.js';
import { freshDatabase, HAVE_POSTGRES, postgresSkipped, sqlOn } from '../helpers/postgres.js';
import { lookedUp, world, type World } from '../helpers/world.js';
import { docsGrants, storeAtSchema, teamMachine } from './helpers.js';

postgresSkipped("a member's role and the team's verdicts");

/** The member's grants as docs/team.md gave them up to schema 5 (a team's existing role has exactly these). */
const OLD_GRANTS = (member: string) => `
GRANT USAGE ON SCHEMA dnc TO ${member};
GRANT SELECT ON ALL TABLES IN SCHEMA dnc TO ${member};
GRANT INSERT, UPDATE, DELETE ON dnc.verdicts, dnc.claims TO ${member};
GRANT INSERT ON dnc.scrubs, dnc.output_anchors TO ${member};
GRANT INSERT, DELETE ON dnc.checks TO ${member};
GRANT EXECUTE ON FUNCTION dnc.list_change(text, text, text[], text[], text[], text[], text[], text[], text[])
  TO ${member};`;

/** psql as a member: exit status and what it said (an implementation apart from dnc's driver). */
function psql(url: string, sql: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      'psql',
      [url, '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-c', sql],
      { timeout: 30_000 },
      (err, out, errOut) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, out: `${out}${errOut}` }),
    );
  });
}

/** A registered number (the sandbox's odd last digit): do_not_call, which a forger would make callable. */
const REGISTERED = '+12025550101';

/** Plain-SQL writes a member might try on each table: every one is refused. */
const WRITES: Array<[string, string]> = [
  ['verdicts', `UPDATE dnc.verdicts SET result = 'callable'`],
  ['verdicts', `DELETE FROM dnc.verdicts`],
  ['verdicts', `TRUNCATE dnc.verdicts`],
  [
    'verdicts',
    `INSERT INTO dnc.verdicts (service, account, e164, country, result, checked_at, checked_ms, correlation_id)
     VALUES ('s', 'a', '${REGISTERED}', 'US', 'callable', 'now', 1, 'made-up')`,
  ],
  ['claims', `UPDATE dnc.claims SET answer = jsonb_set(answer, '{result}', '"callable"'), claimant = 'alice'`],
  ['claims', `DELETE FROM dnc.claims WHERE state IN ('answered', 'sending')`],
  ['claims', `TRUNCATE dnc.claims`],
  [
    'claims',
    `INSERT INTO dnc.claims (service, account, e164, claimant, claimed_at, expires_at, state)
     VALUES ('s', 'a', '+12025550199', 'x', now(), now(), 'answered')`,
  ],
  ['members', `UPDATE dnc.members SET alive_until = now() - interval '1 hour'`],
  ['members', `DELETE FROM dnc.members`],
  ['members', `TRUNCATE dnc.members`],
  ['members', `INSERT INTO dnc.members (claimant, lock_key, alive_until) VALUES ('x', 1, now())`],
  ['shared_scrubs', `UPDATE dnc.shared_scrubs SET state = 'stopped'`],
  ['shared_scrubs', `DELETE FROM dnc.shared_scrubs`],
  ['shared_scrubs', `TRUNCATE dnc.shared_scrubs CASCADE`],
  [
    'shared_scrubs',
    `INSERT INTO dnc.shared_scrubs (id, service, account, owner, state) VALUES ('x', 's', 'a', 'o', 'done')`,
  ],
  ['shared_numbers', `UPDATE dnc.shared_numbers SET taken_by = 'x'`],
  ['shared_numbers', `DELETE FROM dnc.shared_numbers`],
  ['shared_numbers', `INSERT INTO dnc.shared_numbers (scrub, seq, e164, country) VALUES ('x', 1, '+1', 'US')`],
];

describe.skipIf(!HAVE_POSTGRES)("a member's role and the team's verdicts (schema 6)", () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let w: World;
  const tag = Math.random().toString(36).slice(2, 8);
  const group = `dnc_members_${tag}`;
  const [alice, mallory, bob] = ['alice', 'mallory', 'bob'].map((n) => `${n}_${tag}`) as [string, string, string];
  const urls: Record<string, string> = {};
  const env = (role: string) => ({ ...teamMachine(w, role, urls[role]!.replace(':pw@', '@')), PGPASSWORD: 'pw' });
  const run = (role: string, argv: string[]) => spawnDnc(argv, { env: env(role), cwd: w.dir, timeoutMs: 60_000 });

  beforeAll(async () => {
    assertBuilt();
    w = await world();
    // The store as a schema-5 dnc made it, a verdict of the old dnc in it, and a team role with the old grants.
    db = await storeAtSchema(
      5,
      `INSERT INTO dnc.verdicts (service, account, e164, country, result, list_source, checked_at, checked_ms,
         correlation_id, body) VALUES ('old', 'old', '+12025550180', 'US', 'callable', NULL,
         '2026-11-01T10:00:00.000Z', 1793527200000, 'old-1', '{}');
       CREATE ROLE ${group} NOLOGIN;
       GRANT CONNECT ON DATABASE DATABASE_NAME TO ${group};
       ${OLD_GRANTS(group)}
       ${[alice, mallory, bob].map((r) => `CREATE ROLE ${r} LOGIN PASSWORD 'pw' IN ROLE ${group};`).join('\n')}`,
    );
    for (const role of [alice, mallory, bob]) {
      const u = new URL(db.url);
      u.username = role;
      u.password = 'pw';
      urls[role] = u.toString();
    }
    const migrated = await spawnDnc(['--json', 'store', 'migrate'], {
      env: teamMachine(w, 'owner', db.url),
      cwd: w.dir,
    });
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(JSON.parse(migrated.stdout).applied).toEqual([6]);
  }, 120_000);

  afterAll(async () => {
    await w?.cleanup();
    for (const r of [alice, mallory, bob, group])
      await sqlOn(db.url, `DROP OWNED BY ${r}; DROP ROLE ${r}`).catch(() => {});
    await db?.drop();
  });

  it('the old verdict is kept as it was, unattributed; the tables are append-only for the owner too', async () => {
    const rows = await sqlOn(db.url, `SELECT correlation_id, who, result FROM dnc.verdicts WHERE service = 'old'`);
    expect(rows).toEqual([{ correlation_id: 'old-1', who: null, result: 'callable' }]);
    await expect(sqlOn(db.url, `UPDATE dnc.verdicts SET result = 'do_not_call'`)).rejects.toThrow(/append-only/);
    await expect(sqlOn(db.url, `DELETE FROM dnc.verdicts`)).rejects.toThrow(/append-only/);
  });

  it('every plain-SQL write by a member on verdicts, claims, members and shared scrubs is refused', async () => {
    // Rows for the writes to aim at: an honest colleague's lookup of the registered number, a scrub and its members.
    const check = await run(alice, ['check', REGISTERED]);
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toMatch(/DO NOT CALL/);
    await sqlOn(
      db.url,
      `INSERT INTO dnc.shared_scrubs (id, service, account, owner, state) VALUES ('s1', 's', 'a', 'o', 'running');
       INSERT INTO dnc.shared_numbers (scrub, seq, e164, country) VALUES ('s1', 1, '+12025550150', 'US');
       INSERT INTO dnc.members (claimant, lock_key, alive_until, role) VALUES ('alice pid 1', 7, now(), '${alice}')`,
    );
    const before = await sqlOn(
      db.url,
      'SELECT (SELECT count(*) FROM dnc.verdicts)::int AS v, (SELECT count(*) FROM dnc.claims)::int AS c',
    );
    for (const [table, sql] of WRITES) {
      const r = await psql(urls[mallory]!, sql);
      expect(r.code, `${table}: ${sql}: ${r.out}`).not.toBe(0);
      expect(r.out, sql).toMatch(/permission denied/);
    }
    expect(
      await sqlOn(
        db.url,
        'SELECT (SELECT count(*) FROM dnc.verdicts)::int AS v, (SELECT count(*) FROM dnc.claims)::int AS c',
      ),
    ).toEqual(before);
    // Through the functions, a member touches only its own rows: another role's member row, claim or scrub is not it.
    const foreign = [
      `SELECT dnc.member_beat('alice pid 1', 1e9)`,
      `SELECT dnc.member_leave('alice pid 1')`,
      `SELECT dnc.scrub_end('s1', 'stopped')`,
    ];
    for (const sql of foreign) expect((await psql(urls[mallory]!, sql)).out.trim(), sql).toMatch(/^(0|)$/);
    const members = await sqlOn(db.url, `SELECT role FROM dnc.members WHERE claimant = 'alice pid 1'`);
    expect(members).toEqual([{ role: alice }]);
    expect(await sqlOn(db.url, `SELECT state FROM dnc.shared_scrubs WHERE id = 's1'`)).toEqual([{ state: 'running' }]);
    const list = await psql(
      urls[mallory]!,
      `SELECT dnc.scrub_list('s1', ARRAY['+1'], ARRAY['US'], ARRAY[NULL::float8], true)`,
    );
    expect(list.out).toMatch(/not this role's/);
    const enrol = await psql(urls[mallory]!, `SELECT dnc.member_enrol('alice pid 1', 7, 1e9)`);
    expect(enrol.out).toMatch(/does not hold member lock/);
  }, 120_000);

  it("a verdict forged through the functions is the forger's: every colleague's reuse names that role", async () => {
    const [scope] = await sqlOn(
      db.url,
      `SELECT service, account, claimant FROM dnc.claims WHERE e164 = '${REGISTERED}'`,
    );
    const { service, account, claimant } = scope as { service: string; account: string; claimant: string };
    const at = new Date().toISOString();
    const answer = JSON.stringify({
      result: 'callable',
      doNotCall: false,
      listSource: null,
      checkedAt: at,
      correlationId: 'forged-1',
      errorCode: null,
      error: null,
      httpStatus: 200,
      body: '{}',
    });
    // Settling the honest colleague's claim in its name changes nothing: the claim is another role's.
    const settle = (name: string) =>
      `SELECT dnc.claims_settle('${service}', '${account}', '${name}', ARRAY['${REGISTERED}'], ARRAY['answered'],
         ARRAY['${answer}'::jsonb], ARRAY[NULL], 0)`;
    expect((await psql(urls[mallory]!, settle(claimant))).out.trim()).toBe('0');
    // Claimed anew under the honest colleague's machine name (a window of 0 ms: its verdict no longer stands for
    // this claim), settled callable, its verdict added with a made-up correlation id.
    const forged = await psql(
      urls[mallory]!,
      `SELECT e164 FROM dnc.claim_numbers('${service}', '${account}', ARRAY['${REGISTERED}'], '${claimant}', 60000,
         now(), false, NULL, ARRAY[0::float8], 'sending');
       ${settle(claimant)};
       SELECT dnc.put_verdicts('${service}', '${account}', ARRAY['${REGISTERED}'], ARRAY['US'], ARRAY['callable'],
         ARRAY[NULL], ARRAY['${at}'], ARRAY[${Date.parse(at)}::bigint], ARRAY['forged-1'], ARRAY['{}']);`,
    );
    expect(forged.code, forged.out).toBe(0);
    // An independent reader: the honest verdict is still there as written; the forged one names the forger.
    const rows = await sqlOn(
      db.url,
      `SELECT result, who, correlation_id = 'forged-1' AS forged FROM dnc.verdicts WHERE e164 = '${REGISTERED}' ORDER BY id`,
    );
    expect(rows).toEqual([
      { result: 'do_not_call', who: alice, forged: false },
      { result: 'callable', who: mallory, forged: true },
    ]);
    expect(await sqlOn(db.url, `SELECT who FROM dnc.claims WHERE e164 = '${REGISTERED}'`)).toEqual([{ who: mallory }]);
    // A colleague's check and batch reuse it (nothing sent), and say whose it is: the forger's role, not alice's.
    const sent = lookedUp(w.sb).length;
    const check = await run(bob, ['check', REGISTERED]);
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toContain(`[${mallory}]`);
    const input = w.file('bob.csv', ['phone', REGISTERED]);
    const batch = await run(bob, ['batch', input]);
    expect(batch.code, batch.stderr).toBe(0);
    const output = readFileSync(path.join(w.dir, 'bob.results.csv'), 'utf8');
    expect(output).toContain('reused:');
    expect(output).toContain(mallory);
    expect(output).not.toContain(`[${alice}]`);
    expect(lookedUp(w.sb).length).toBe(sent);
    // dnc trace of the number on that machine names the forger's role for the batch's reused row too.
    const trace = await run(bob, ['trace', REGISTERED]);
    expect(trace.code, trace.stderr).toBe(0);
    expect(trace.stdout).toMatch(new RegExp(`reused .*${mallory}`));
  }, 120_000);

  it("docs/team.md grants a new team's members every function, and no direct write", async () => {
    const grants = docsGrants('dnc_member', 'dnc');
    for (const f of TEAM_FUNCTION_SIGNATURES) expect(grants.replace(/\s+/g, ' '), f).toContain(f);
    expect(grants).not.toMatch(/(INSERT|UPDATE|DELETE)[^;]*ON [^;]*dnc\.(verdicts|claims|members|shared_)/);
    expect(readFileSync(path.join(REPO_ROOT, 'docs', 'team.md'), 'utf8')).toContain(
      'What a member can and cannot forge',
    );
  });
});
