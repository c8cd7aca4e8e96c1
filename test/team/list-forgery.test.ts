// The team's list edited in plain SQL behind dnc's back, one column at a time: check, batch and verify all refuse it
// (E_LIST_ALTERED, exit 3) and send nothing.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, REPO_ROOT, spawnDnc } from '../helpers/cli.js';
import { freshDatabase, HAVE_POSTGRES, postgresSkipped, sqlOn } from '../helpers/postgres.js';
import { lookedUp, world, type World } from '../helpers/world.js';
import { teamMachine } from './helpers.js';

postgresSkipped('forged edits of the team list');

describe.skipIf(!HAVE_POSTGRES)('forged SQL edits of the team list', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let w: World;
  let env: Record<string, string>;
  let output: string;
  beforeAll(async () => {
    assertBuilt();
    db = await freshDatabase();
    w = await world();
    env = teamMachine(w, 'alice', db.url);
    const run = (argv: string[]) => spawnDnc(argv, { env, cwd: w.dir, timeoutMs: 60_000 });
    expect((await run(['suppress', 'add', '+12025550701', '--reason', 'asked on a call'])).code).toBe(0);
    expect(
      (
        await run([
          'exempt',
          'add',
          '+12025550702',
          '--basis',
          'consent',
          '--until',
          '2099-01-01',
          '--evidence',
          'form 7',
        ])
      ).code,
    ).toBe(0);
    const list = w.file('calls.csv', ['phone', '+12025550701', '+12025550702', '+12025550703']);
    expect((await run(['batch', list])).code).toBe(0);
    output = path.join(w.dir, 'calls.results.csv');
  }, 120_000);
  afterAll(async () => {
    await w?.cleanup();
    await db?.drop();
  });

  /** check, batch and verify, each on its own: all refuse the list, and nothing is sent. */
  async function allRefuse(what: string) {
    const sent = lookedUp(w.sb).length;
    const list = w.file(`again-${Math.random().toString(36).slice(2)}.csv`, ['phone', '+12025550704']);
    const o = { env, cwd: w.dir, timeoutMs: 60_000 };
    const runs = {
      check: await spawnDnc(['check', '+12025550705'], o),
      batch: await spawnDnc(['batch', list], o),
      verify: await spawnDnc(['verify', output], o),
    };
    for (const [name, r] of Object.entries(runs)) {
      expect(r.code, `${what}: ${name}: ${r.stderr}`).toBe(3);
      expect(r.stderr, `${what}: ${name}`).toContain('[E_LIST_ALTERED]');
      // The way out on a team store is the owner's repair, never a file to restore (issue 48).
      expect(r.stderr, `${what}: ${name}`).toContain("the team's suppression list in postgresql://");
      expect(r.stderr, `${what}: ${name}`).toContain('dnc.list_repair');
      expect(r.stderr, `${what}: ${name}`).not.toMatch(/restore the file|dnc suppress restore FILE|re-add the numbers/);
    }
    expect(lookedUp(w.sb).length, what).toBe(sent);
  }

  const edits: Array<[string, string, string]> = [
    ['suppressions', 'reason', "'none at all'"],
    ['suppressions', 'who', "'mallory@elsewhere'"],
    ['suppressions', 'added_at', "'2020-01-01T00:00:00.000Z'"],
    ['suppressions', 'source', "'a forged source'"],
    ['suppressions', 'country', "'CA'"],
    ['exemptions', 'country', "'CA'"],
    ['exemptions', 'basis', "'ebr-purchase'"],
    ['exemptions', 'until', "'2100-01-01T23:59:59.999Z'"],
    ['exemptions', 'evidence', "'forged form'"],
    ['exemptions', 'who', "'mallory@elsewhere'"],
    ['exemptions', 'added_at', "'2020-01-01T00:00:00.000Z'"],
  ];
  for (const [table, column, value] of edits) {
    it(`${table}.${column} changed: refused by check, batch and verify`, async () => {
      const [before] = await sqlOn(db.url, `SELECT ${column} AS v FROM dnc.${table}`);
      await sqlOn(db.url, `UPDATE dnc.${table} SET ${column} = ${value}`);
      try {
        await allRefuse(`${table}.${column}`);
      } finally {
        await sqlOn(db.url, `UPDATE dnc.${table} SET ${column} = $1`, [before!.v]);
      }
      // Put back, the list is accepted again.
      expect((await spawnDnc(['check', '+12025550701'], { env, cwd: w.dir })).code).toBe(0);
    }, 120_000);
  }

  it("the owner's repair docs/team.md gives puts the entries back as the log records them, audited", async () => {
    const sql = /```sql\n(-- as dnc_owner: the entries and exemptions[\s\S]*?)```/.exec(
      readFileSync(path.join(REPO_ROOT, 'docs', 'team.md'), 'utf8'),
    )![1]!;
    await sqlOn(db.url, "UPDATE dnc.suppressions SET reason = 'tampered', who = 'mallory', country = 'CA'");
    await sqlOn(db.url, 'DELETE FROM dnc.exemptions');
    expect((await spawnDnc(['check', '+12025550701'], { env, cwd: w.dir })).code).toBe(3);
    await sqlOn(db.url, sql);
    const r = await spawnDnc(['check', '+12025550701'], { env, cwd: w.dir });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('asked on a call');
    expect(await sqlOn(db.url, 'SELECT e164, country FROM dnc.suppressions')).toEqual([
      { e164: '+12025550701', country: 'US' },
    ]);
    expect(await sqlOn(db.url, 'SELECT e164, evidence FROM dnc.exemptions')).toEqual([
      { e164: '+12025550702', evidence: 'form 7' },
    ]);
    // The repair is an entry of the log, chained and anchored: who (as the server knows the role), why, what it found.
    const [entry] = await sqlOn(db.url, 'SELECT * FROM dnc.audit ORDER BY id DESC LIMIT 1');
    expect(entry).toMatchObject({ action: 'restore', e164: '', who: `dba@db-admin [${new URL(db.url).username}]` });
    expect(String(entry!.reason)).toContain('put back as logged');
    expect(String(entry!.evidence)).toMatch(/^1 suppressions and 0 exemptions put back .*sha256 [0-9a-f]{64}\)$/);
    const [head] = await sqlOn(db.url, 'SELECT head FROM dnc.list_heads ORDER BY id DESC LIMIT 1');
    expect(head!.head).toBe(entry!.hash);
    const log = await spawnDnc(['--json', 'suppress', 'log'], { env, cwd: w.dir });
    expect(log.code, log.stderr).toBe(0);
    expect(log.stdout).toContain('"action":"restore"');
  }, 120_000);

  it('a row deleted and an unsuppress entry forged at the end of the chain, hashed right: refused', async () => {
    const [last] = await sqlOn(db.url, 'SELECT hash FROM dnc.audit ORDER BY id DESC LIMIT 1');
    const entry = [
      '2026-11-28T10:00:00.000Z',
      'unsuppress',
      '+12025550701',
      'mallory@elsewhere',
      null,
      null,
      null,
      null,
      null,
    ];
    const hash = createHash('sha256')
      .update(`${String(last!.hash)}\n${JSON.stringify(entry)}`)
      .digest('hex');
    await sqlOn(db.url, "DELETE FROM dnc.suppressions WHERE e164 = '+12025550701'");
    await sqlOn(
      db.url,
      `INSERT INTO dnc.audit (at, action, e164, who, reason, source, basis, until, evidence, hash)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [...entry, hash],
    );
    await allRefuse('forged unsuppress');
  }, 120_000);
});
