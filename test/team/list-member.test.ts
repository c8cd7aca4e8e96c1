// A member's role and the team's list since PostgreSQL schema 4: a store made at schema 2 with the grants docs/team.md
// gave then (direct writes on the list's tables), its list written by the old dnc's statements, migrated by the owner.
// Then, as the member, through psql (not dnc's driver): every plain-SQL forgery is refused by the database, and the
// list still verifies (its old format-1 entries too) by check, batch and verify; changes go through dnc.list_change,
// stamped with the role the server authenticated, whatever the machine says.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, spawnDnc } from '../helpers/cli.js';
import { freshDatabase, HAVE_POSTGRES, postgresSkipped, sqlOn } from '../helpers/postgres.js';
import { lookedUp, world, type World } from '../helpers/world.js';
import { storeAtSchema, teamMachine } from './helpers.js';

postgresSkipped("a member's role and the team list");

/** The member's grants as docs/team.md gave them up to schema 2 (a team's existing role has exactly these). */
const OLD_GRANTS = (member: string) => `
GRANT USAGE ON SCHEMA dnc TO ${member};
GRANT SELECT ON ALL TABLES IN SCHEMA dnc TO ${member};
GRANT INSERT, UPDATE, DELETE ON dnc.verdicts, dnc.claims, dnc.suppressions, dnc.exemptions TO ${member};
GRANT INSERT ON dnc.audit, dnc.list_heads, dnc.scrubs TO ${member};
GRANT INSERT, DELETE ON dnc.checks TO ${member};`;

/** A format-1 entry's hash (the chain as dnc wrote it before schema 4), computed here apart from dnc. */
const oldHash = (previous: string, fields: Array<string | null>) =>
  createHash('sha256')
    .update(`${previous}\n${JSON.stringify(fields)}`)
    .digest('hex');

/** psql as the member: exit status and what it said (an implementation apart from dnc's driver). */
function psql(url: string, sql: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile('psql', [url, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-c', sql], { timeout: 30_000 }, (err, out, errOut) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, out: `${out}${errOut}` }),
    );
  });
}

describe.skipIf(!HAVE_POSTGRES)("a member's role and the team list (schema 4)", () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let w: World;
  let env: Record<string, string>;
  let memberUrl: string;
  const member = `dnc_member_${Math.random().toString(36).slice(2, 8)}`;
  const run = (argv: string[]) => spawnDnc(argv, { env, cwd: w.dir, timeoutMs: 60_000 });

  beforeAll(async () => {
    assertBuilt();
    w = await world();
    // The store as a schema-2 dnc made it.
    db = await storeAtSchema(
      2,
      `CREATE ROLE ${member} LOGIN PASSWORD 'member-pw';
       GRANT CONNECT ON DATABASE DATABASE_NAME TO ${member};
       ${OLD_GRANTS(member)}`,
    );
    const u = new URL(db.url);
    u.username = member;
    u.password = 'member-pw';
    memberUrl = u.toString();
    // The old dnc's change, as the member wrote it: a row, its format-1 entry, the head anchored.
    const at = '2026-11-01T10:00:00.000Z';
    const s = [at, 'suppress', '+12025550801', 'erin@old', 'asked on a call', null, null, null, null];
    const h1 = oldHash('', s);
    const x = [at, 'exempt', '+12025550802', 'erin@old', null, null, 'consent', '2099-01-01T23:59:59.999Z', 'form 9'];
    const h2 = oldHash(h1, x);
    const q = (v: string | null) => (v === null ? 'NULL' : `'${v}'`);
    const wrote = await psql(
      memberUrl,
      `BEGIN;
       INSERT INTO dnc.suppressions VALUES ('+12025550801', 'US', '${at}', 'erin@old', 'asked on a call', NULL);
       INSERT INTO dnc.exemptions VALUES ('+12025550802', 'US', 'consent', '2099-01-01T23:59:59.999Z', 'form 9',
         '${at}', 'erin@old');
       INSERT INTO dnc.audit (at, action, e164, who, reason, source, basis, until, evidence, hash) VALUES
         (${s.map(q).join(', ')}, '${h1}'), (${x.map(q).join(', ')}, '${h2}');
       INSERT INTO dnc.list_heads (head, entries, who) VALUES ('${h2}', 2, 'erin@old');
       COMMIT;`,
    );
    expect(wrote.code, wrote.out).toBe(0);
    // The owner migrates (the members' role cannot).
    const owner = teamMachine(w, 'owner', db.url);
    const migrated = await spawnDnc(['--json', 'store', 'migrate'], { env: owner, cwd: w.dir });
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(JSON.parse(migrated.stdout).applied).toContain(4);
    env = { ...teamMachine(w, 'erin', memberUrl.replace(':member-pw@', '@')), PGPASSWORD: 'member-pw' };
  }, 120_000);

  afterAll(async () => {
    await w?.cleanup();
    await sqlOn(db.url, `DROP OWNED BY ${member}; DROP ROLE ${member}`).catch(() => {});
    await db?.drop();
  });

  it('the old entries still verify, and the member changes the list through dnc: stamped by the server', async () => {
    const list = w.file('calls.csv', ['phone', '+12025550801', '+12025550802', '+12025550803']);
    const batch = await run(['batch', list]);
    expect(batch.code, batch.stderr).toBe(0);
    expect((await run(['verify', path.join(w.dir, 'calls.results.csv')])).code).toBe(0);
    // Migration 3 gave the role that could append to the log its grants on the anchors: no DBA step, and the
    // member's scrub is anchored in the store under the role the server authenticated.
    const anchors = await sqlOn(db.url, 'SELECT who FROM dnc.output_anchors');
    expect(anchors.map((r) => r.who)).toEqual([member]);
    // The server hashes what JavaScript hashes, whatever the text: quotes, backslashes, controls, any script.
    const reason = 'asked by "mail" \\ then\tagain\n, é 日本 \u0001 \u007f 😀';
    const add = await run(['suppress', 'add', '+12025550804', '--reason', reason]);
    expect(add.code, add.stderr).toBe(0);
    expect((await run(['exempt', 'add', '+12025550805', '--basis', 'consent', '--until', '2099-01-01'])).code).toBe(0);
    const check = await run(['check', '+12025550804']);
    expect(check.code, check.stderr).toBe(0);
    const rows = await sqlOn(db.url, 'SELECT e164, who, format, country, reason FROM dnc.audit ORDER BY id');
    expect(rows[2]!.reason).toBe(reason);
    expect(rows.map((r) => r.format)).toEqual([1, 1, 2, 2]);
    for (const r of rows.slice(2)) {
      expect(r.who).toMatch(new RegExp(`^erin@\\S+ \\[${member}\\]$`));
      expect(r.country).toBe('US');
    }
  }, 120_000);

  const forgeries: Array<[string, string]> = [
    [
      'a row deleted, with a matching unsuppress entry and head',
      `BEGIN; DELETE FROM dnc.suppressions WHERE e164 = '+12025550801';
       INSERT INTO dnc.audit (at, action, e164, who, hash) VALUES ('2026-11-28T10:00:00.000Z', 'unsuppress',
         '+12025550801', 'alice@elsewhere', 'x');
       INSERT INTO dnc.list_heads (head, entries, who) VALUES ('x', 5, 'alice@elsewhere'); COMMIT;`,
    ],
    ['a row deleted', `DELETE FROM dnc.suppressions WHERE e164 = '+12025550801'`],
    ['a row added', `INSERT INTO dnc.suppressions VALUES ('+12025550899', 'US', 'now', 'x', NULL, NULL)`],
    ...['country', 'reason', 'who', 'added_at', 'source'].map((c): [string, string] => [
      `suppressions.${c} changed`,
      `UPDATE dnc.suppressions SET ${c} = 'forged'`,
    ]),
    ...['country', 'basis', 'until', 'evidence', 'who', 'added_at'].map((c): [string, string] => [
      `exemptions.${c} changed`,
      `UPDATE dnc.exemptions SET ${c} = 'forged'`,
    ]),
    ['an exemption deleted', 'DELETE FROM dnc.exemptions'],
    [
      'an audit entry appended',
      `INSERT INTO dnc.audit (at, action, e164, who, hash) VALUES ('a', 'suppress', '+1', 'x', 'y')`,
    ],
    ['a head anchored', `INSERT INTO dnc.list_heads (head, entries, who) VALUES ('x', 1, 'x')`],
    ['the list emptied', 'TRUNCATE dnc.suppressions'],
    [
      "the owner's entry writer called",
      `SELECT dnc.append_entry('a', 'unsuppress', '+12025550801', 'x', NULL, NULL, NULL, NULL, NULL, NULL)`,
    ],
  ];

  it('every plain-SQL forgery by the member is refused by the database; the list verifies everywhere', async () => {
    const before = await sqlOn(db.url, 'SELECT count(*)::int AS n FROM dnc.audit');
    for (const [what, sql] of forgeries) {
      const r = await psql(memberUrl, sql);
      expect(r.code, `${what}: ${r.out}`).not.toBe(0);
      expect(r.out, what).toMatch(/permission denied/);
    }
    expect(await sqlOn(db.url, 'SELECT count(*)::int AS n FROM dnc.audit')).toEqual(before);
    const sent = lookedUp(w.sb).length;
    const list = w.file('after.csv', ['phone', '+12025550801', '+12025550806']);
    for (const argv of [
      ['check', '+12025550801'],
      ['batch', list],
      ['verify', path.join(w.dir, 'after.results.csv')],
    ]) {
      const r = await run(argv);
      expect(r.code, `${argv.join(' ')}: ${r.stderr}`).toBe(0);
    }
    expect(lookedUp(w.sb).length).toBe(sent + 1); // +12025550806 only: +12025550801 is on the list
  }, 120_000);

  it("a change by the member's role is stamped with that role, whatever name the machine gives", async () => {
    const r = await psql(
      memberUrl,
      `SELECT * FROM dnc.list_change('unsuppress', 'alice@elsewhere', ARRAY['+12025550804'], ARRAY[NULL],
         ARRAY[NULL], ARRAY[NULL], ARRAY[NULL], ARRAY[NULL], ARRAY[NULL])`,
    );
    expect(r.code, r.out).toBe(0);
    const [last] = await sqlOn(db.url, 'SELECT action, who FROM dnc.audit ORDER BY id DESC LIMIT 1');
    expect(last).toEqual({ action: 'unsuppress', who: `alice@elsewhere [${member}]` });
    expect((await run(['check', '+12025550801'])).code).toBe(0);
  }, 120_000);

  it("a local list is copied in by the owner's role only; a member merges it", async () => {
    const local = { ...env, DNC_STORE: undefined };
    expect((await spawnDnc(['suppress', 'add', '+12025550807'], { env: local, cwd: w.dir })).code).toBe(0);
    const copy = await run(['store', 'import']);
    expect(copy.code).toBe(2);
    expect(copy.stderr).toContain('[E_STORE_REFUSED]');
    expect(copy.stderr).toContain('add --merge');
    const merge = await run(['store', 'import', '--merge']);
    expect(merge.code, merge.stderr).toBe(0);
    const [entry] = await sqlOn(db.url, "SELECT who, format FROM dnc.audit WHERE e164 = '+12025550807'");
    expect(entry).toMatchObject({ format: 2, who: expect.stringMatching(new RegExp(`\\[${member}\\]$`)) });
  }, 120_000);

  it("the owner's repair is refused to the member, in SQL and through dnc", async () => {
    const r = await psql(memberUrl, "SELECT * FROM dnc.list_repair('erin@laptop', 'I would like to')");
    expect(r.code).not.toBe(0);
    expect(r.out).toContain('only the role that owns the team store');
    const restore = await run(['suppress', 'restore', 'team', '--reason', 'try']);
    expect(restore.code).toBe(2);
    expect(restore.stderr).toContain('dnc.list_repair');
  }, 120_000);
});
