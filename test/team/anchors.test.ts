// Anchors in the team store (issue 38): a member's machine (another HOME, the same store) proves a colleague's genuine
// file and refuses a consistent forgery; a file anchored nowhere it can see is unproven (exit 3) unless --unanchored
// says so; a member's role cannot change or remove an anchor (psql as that role, as an independent oracle).
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, spawnDnc } from '../helpers/cli.js';
import { rechainJournal, rewriteOutputAndManifest } from '../helpers/forged-output.js';
import { freshDatabase, HAVE_POSTGRES, POSTGRES_URL, postgresSkipped, sqlOn } from '../helpers/postgres.js';
import { world, type World } from '../helpers/world.js';
import { docsGrants, teamMachine } from './helpers.js';
import { freePort, PUSH_PATH } from '../listen/helpers.js';

postgresSkipped("anchors in the team store, verified on a colleague's machine");

/** psql as a role, outside dnc and its driver: the output and the error as the server gave them. */
function psql(url: string, sql: string): { ok: boolean; out: string } {
  try {
    const out = execFileSync('psql', ['-X', '-v', 'ON_ERROR_STOP=1', '-At', url, '-c', sql], {
      encoding: 'utf8',
      stdio: 'pipe',
    });
    return { ok: true, out };
  } catch (err) {
    return { ok: false, out: String((err as { stderr?: string }).stderr ?? err) };
  }
}

describe.skipIf(!HAVE_POSTGRES)("anchors in the team store: a colleague's file proven on another machine", () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let w: World;
  const suffix = Math.random().toString(36).slice(2, 8);
  const alice = `alice_${suffix}`;
  const bob = `bob_${suffix}`;
  let aliceEnv: Record<string, string>;
  let bobEnv: Record<string, string>;
  let aliceUrl: string;
  let bobUrl: string;
  let genuine: string;
  const run = (argv: string[], env: Record<string, string>) => spawnDnc(argv, { env, cwd: w.dir, timeoutMs: 120_000 });

  /** A login role of a person with exactly the grants docs/team.md gives the members' role; its URL with password. */
  async function member(name: string): Promise<string> {
    const grants = docsGrants(name, db.name);
    await sqlOn(db.url, `CREATE ROLE ${name} LOGIN PASSWORD 'pw-${name}'; ${grants}`);
    const u = new URL(db.url);
    u.username = name;
    u.password = `pw-${name}`;
    return u.toString();
  }

  beforeAll(async () => {
    assertBuilt();
    db = await freshDatabase();
    w = await world();
    // The owner makes the schema; then the members' grants, as docs/team.md says, after the migration.
    const migrated = await run(['store', 'migrate'], teamMachine(w, 'owner', db.url));
    expect(migrated.code, migrated.stderr).toBe(0);
    aliceUrl = await member(alice);
    aliceEnv = teamMachine(w, 'alice', aliceUrl);
    bobUrl = await member(bob);
    bobEnv = teamMachine(w, 'bob', bobUrl);
    mkdirSync(path.join(w.dir, 'shared'));
    const input = w.file('shared/calls.csv', ['name,phone', 'a,+12025550100', 'b,+12025550101', 'c,+12025550102']);
    genuine = path.join(w.dir, 'shared', 'calls.results.csv');
    const batch = await run(['batch', input, '-o', genuine], aliceEnv);
    expect(batch.code, batch.stderr).toBe(0);
    expect(readFileSync(genuine, 'utf8')).toMatch(/,do_not_call,/);
  }, 180_000);
  afterAll(async () => {
    await w?.cleanup();
    await db?.drop();
    for (const role of [alice, bob]) await sqlOn(POSTGRES_URL!, `DROP ROLE IF EXISTS ${role}`).catch(() => {});
  });

  it("a colleague's genuine file, verified on another HOME: fit (exit 0), naming who anchored it", async () => {
    const v = await run(['verify', genuine], bobEnv);
    expect(v.code, v.stdout + v.stderr).toBe(0);
    expect(v.stdout).toContain('fit to dial');
    expect(v.stdout).toMatch(new RegExp(`the team store records this file and manifest as written by ${alice} `));
    const j = await run(['--json', 'verify', genuine], bobEnv);
    expect(JSON.parse(j.stdout)).toMatchObject({
      fit: true,
      fitness: 'fit',
      anchored: 'matches',
      anchored_by: { where: 'team store', who: alice },
      unanchored: null,
    });
    // report and status on bob's machine judge it as verify does.
    const report = await run(['report', genuine, '-o', path.join(w.dir, 'bob-report.html')], bobEnv);
    expect(report.code, report.stderr).toBe(0);
    const status = await run(['status', genuine], bobEnv);
    expect(status.code, status.stdout + status.stderr).toBe(0);
    // An independent reading of the store: the anchor's SHA-256 is the file's, stamped by the server with alice's role.
    const rows = await sqlOn(db.url, 'SELECT * FROM dnc.output_anchors ORDER BY id');
    const manifest = JSON.parse(readFileSync(genuine.replace(/\.csv$/, '.manifest.json'), 'utf8'));
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ run_id: manifest.run_id, output_sha256: manifest.output.sha256, who: alice });
  }, 120_000);

  it('a consistent forgery (CSV, manifest and journal rewritten to agree) is refused on the other machine', async () => {
    const dir = path.join(w.dir, 'forged');
    mkdirSync(dir);
    const out = path.join(dir, 'calls.results.csv');
    for (const ext of ['.csv', '.manifest.json', '.csv.journal.sqlite'])
      copyFileSync(genuine.replace(/\.csv$/, ext), out.replace(/\.csv$/, ext));
    const text = readFileSync(out, 'utf8');
    const forged = text.replace(/,do_not_call,true,/, ',callable,false,');
    expect(forged).not.toBe(text);
    const journal = `${out}.journal.sqlite`;
    rewriteOutputAndManifest(out, forged, (m) => {
      // Every count the manifest keeps of the flipped row's number, made to agree with the forged file.
      for (const counts of [m.rows.by_result, m.rows.by_country.US, m.numbers.by_result, m.numbers.by_country.US]) {
        counts.callable += 1;
        counts.do_not_call -= 1;
      }
      m.journal = journal;
      m.output.path = out;
    });
    const j = new Database(journal);
    j.prepare("UPDATE numbers SET result = 'callable', do_not_call = 0 WHERE result = 'do_not_call'").run();
    j.close();
    const v = await run(['--json', 'verify', out], bobEnv);
    expect(v.code, v.stdout + v.stderr).toBe(3);
    const report = JSON.parse(v.stdout);
    expect(report).toMatchObject({ fit: false, tampered: true, anchored: 'differs' });
    expect(report.differences.join('\n')).toMatch(
      new RegExp(`the team store records this run's output as written at .* by ${alice} .*: this file is not it`),
    );
    for (const argv of [
      ['report', out, '-o', path.join(w.dir, 'forged-report.html')],
      ['status', out],
    ]) {
      const r = await run(argv, bobEnv);
      expect(r.code, `${argv[0]}: ${r.stdout}${r.stderr}`).toBe(3);
    }
    // The forger gives the manifest a run id of its own: anchored nowhere, so unproven, never fit. (Consistent: the
    // journal's chain recomputed to agree with its edit, and its head in the manifest.)
    const chain = rechainJournal(journal);
    rewriteOutputAndManifest(out, forged, (m) => {
      m.run_id = 'f'.repeat(32);
      m.journal_chain = chain;
    });
    const other = await run(['--json', 'verify', out], bobEnv);
    expect(other.code, other.stdout).toBe(3);
    // Only the anchors tell it: the weaker check passes the forgery, and says what it did not check.
    const weaker = await run(['verify', out, '--unanchored'], bobEnv);
    expect(weaker.code, weaker.stdout).toBe(0);
    expect(weaker.stdout).toContain('not checked (--unanchored)');
    expect(JSON.parse(other.stdout), other.stdout).toMatchObject({
      fit: false,
      fitness: 'unproven',
      anchored: 'not_here',
    });
  }, 120_000);

  it('a file anchored nowhere this machine can see is unproven (exit 3); --unanchored judges it and says what it did not check', async () => {
    // Written by a machine on its own files (no team store): its anchor is in that machine's state folder only.
    const { DNC_STORE: _team, ...loner } = teamMachine(w, 'carol', db.url);
    const input = w.file('shared/loner.csv', ['phone', '+12025550110', '+12025550111']);
    const out = path.join(w.dir, 'shared', 'loner.results.csv');
    const batch = await run(['batch', input, '-o', out], loner);
    expect(batch.code, batch.stderr).toBe(0);
    expect((await run(['verify', out], loner)).code).toBe(0);
    const v = await run(['verify', out], bobEnv);
    expect(v.code, v.stdout).toBe(3);
    expect(v.stdout).toContain('NOT FIT TO DIAL (unproven): it is anchored nowhere this machine can see');
    expect(v.stdout).toMatch(/unanchored +neither this machine's state folder nor the team store holds an anchor/);
    for (const argv of [
      ['report', out, '-o', path.join(w.dir, 'loner-report.html')],
      ['status', out],
    ]) {
      const r = await run(argv, bobEnv);
      expect(r.code, `${argv[0]}: ${r.stdout}${r.stderr}`).toBe(3);
      const weaker = await run([...argv, '--unanchored'], bobEnv);
      expect(weaker.code, `${argv[0]} --unanchored: ${weaker.stdout}${weaker.stderr}`).toBe(0);
      expect(weaker.stderr).toContain('not checked (--unanchored): that this file and its manifest are what dnc wrote');
    }
    const weaker = await run(['--json', 'verify', out, '--unanchored'], bobEnv);
    expect(weaker.code, weaker.stdout).toBe(0);
    expect(JSON.parse(weaker.stdout)).toMatchObject({ fit: true, anchored: 'not_here' });
    expect(JSON.parse(weaker.stdout).anchor_unchecked).toMatch(/^not checked \(--unanchored\): that this file/);
    const text = await run(['verify', out, '--unanchored'], bobEnv);
    expect(text.stdout).toMatch(/unanchored +not checked \(--unanchored\): that this file and its manifest are/);
  }, 180_000);

  it("each rewrite by alice's `dnc listen` is anchored: bob proves the resolved file, and refuses the earlier one", async () => {
    const w2 = await world({ allowInsecureWebhooks: true, timeScale: 0.01 });
    try {
      const [a2, b2] = [teamMachine(w2, 'alice', aliceUrl), teamMachine(w2, 'bob', bobUrl)];
      const on = (argv: string[], env: Record<string, string>) =>
        spawnDnc(argv, { env, cwd: w2.dir, timeoutMs: 120_000 });
      const input = w2.file('au.csv', ['name,phone', 'us,+12025550104', 'au,+61 4 1234 5002']);
      const out = path.join(w2.dir, 'au.results.csv');
      const port = await freePort();
      const hook = ['--webhook-url', `http://127.0.0.1:${port}${PUSH_PATH}`, '--allow-insecure-webhook-url'];
      const batch = await on(['batch', input, '-o', out, ...hook], a2);
      expect(batch.code, batch.stderr).toBe(8);
      const earlier = path.join(w2.dir, 'earlier');
      mkdirSync(earlier);
      for (const f of ['au.results.csv', 'au.results.manifest.json', 'au.results.csv.journal.sqlite'])
        copyFileSync(path.join(w2.dir, f), path.join(earlier, f));
      const listen = await on(
        ['listen', '--results', out, '--port', String(port), '--path', PUSH_PATH, '--exit-when-done'],
        a2,
      );
      expect(listen.code, listen.stderr).toBe(0);
      const v = await on(['--json', 'verify', out], b2);
      expect(v.code, v.stdout).toBe(0);
      expect(JSON.parse(v.stdout)).toMatchObject({ fit: true, anchored_by: { where: 'team store', who: alice } });
      const runId = JSON.parse(readFileSync(out.replace(/\.csv$/, '.manifest.json'), 'utf8')).run_id;
      const rows = await sqlOn(db.url, 'SELECT who FROM dnc.output_anchors WHERE run_id = $1', [runId]);
      expect(rows.length).toBeGreaterThanOrEqual(2);
      // The version before listen's rewrite, with its own (then genuine) manifest: not what dnc last wrote.
      const old = await on(['--json', 'verify', path.join(earlier, 'au.results.csv'), '--without-journal'], b2);
      expect(old.code, old.stdout).toBe(3);
      expect(JSON.parse(old.stdout).differences.join('\n')).toContain(
        `the team store records a later write of this run's output`,
      );
    } finally {
      await w2.cleanup();
    }
  }, 180_000);

  it("a member's role cannot change, delete or truncate an anchor, nor sign one as someone else (psql)", async () => {
    const before = await sqlOn(db.url, 'SELECT * FROM dnc.output_anchors ORDER BY id');
    expect(before.length).toBeGreaterThan(0);
    const update = psql(aliceUrl, "UPDATE dnc.output_anchors SET output_sha256 = repeat('0', 64)");
    expect(update.ok).toBe(false);
    expect(update.out).toMatch(/permission denied for table output_anchors/);
    for (const sql of ['DELETE FROM dnc.output_anchors', 'TRUNCATE dnc.output_anchors']) {
      const r = psql(aliceUrl, sql);
      expect(r.ok, sql).toBe(false);
      expect(r.out).toMatch(/permission denied for table output_anchors/);
    }
    // Members can add: the server stamps who and when, whatever the INSERT says.
    const insert = psql(
      aliceUrl,
      `INSERT INTO dnc.output_anchors (run_id, output_sha256, output_bytes, manifest_sha256, output_path, journal,
         host, operator, who, at)
       VALUES (repeat('a', 32), repeat('b', 64), 1, repeat('c', 64), 'x', 'x', 'h', 'o', '${bob}', '2001-01-01')
       RETURNING who, at > now() - interval '1 hour'`,
    );
    expect(insert.ok, insert.out).toBe(true);
    expect(insert.out.trim().split('\n')[0]).toBe(`${alice}|t`);
    // Even the owner (here the superuser, triggers on) cannot rewrite one.
    const owner = psql(db.url, "UPDATE dnc.output_anchors SET who = 'x'");
    expect(owner.ok).toBe(false);
    expect(owner.out).toMatch(/the output_anchors table is append-only/);
    const after = await sqlOn(db.url, 'SELECT * FROM dnc.output_anchors ORDER BY id');
    expect(after.slice(0, before.length)).toEqual(before);
  });
});
