// Tamper evidence under the stated threat model (docs/compliance-evidence.md): someone who can write the results folder
// and the list file, but not the user's state folder. Issue 25, items 2, 3 and 5: verify without its journal, the
// state folder's anchors of outputs and of the list's audit head, and report and status judging as verify does.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { rewriteOutputAndManifest } from '../helpers/forged-output.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { dnc, world, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.cleanup();
  w = undefined;
});

/** A scrub of three US numbers (one registered) into calls.results.csv. */
async function scrub(world: World, extra: string[] = []): Promise<string> {
  const input = world.file('calls.csv', ['name,phone', 'a,+12025550100', 'b,+12025550101', 'c,+12025550102']);
  const out = path.join(world.dir, 'calls.results.csv');
  const r = await dnc(['batch', input, '-o', out, ...extra], world.env);
  expect(r.code, r.stderr).toBe(0);
  return out;
}

/** The results file with its do_not_call row made callable, and the manifest rewritten to match (a forger's work). */
function forgeCallable(out: string): void {
  const text = readFileSync(out, 'utf8');
  const forged = text.replace(/,do_not_call,true,/, ',callable,false,');
  expect(forged).not.toBe(text);
  rewriteOutputAndManifest(out, forged, (m) => {
    m.rows.by_result.callable += 1;
    m.rows.by_result.do_not_call -= 1;
  });
}

describe('verify without the journal, and the anchor of what dnc wrote', () => {
  it('a journal moved away: the rows cannot be proven (exit 3); --without-journal judges the rest and says what it did not check', async () => {
    w = await world();
    const out = await scrub(w);
    renameSync(`${out}.journal.sqlite`, path.join(w.dir, 'elsewhere.sqlite'));
    const r = await dnc(['verify', out], w.env);
    expect(r.code).toBe(3);
    expect(r.stdout).toContain('NOT FIT TO DIAL');
    expect(r.stdout).toMatch(
      /unproven +the batch journal .* is not where the manifest says: without it the rows cannot be proven/,
    );
    const weaker = await dnc(['--json', 'verify', out, '--without-journal'], w.env);
    expect(weaker.code, weaker.stdout).toBe(0);
    expect(JSON.parse(weaker.stdout)).toMatchObject({
      fit: true,
      compared_with_journal: false,
      unproven: null,
      anchored: 'matches',
    });
    expect((await dnc(['verify', out, '--without-journal'], w.env)).stdout).toContain(
      'without the journal: no row was compared with what the service answered',
    );
  });

  it('an edited row with its manifest rewritten and the journal moved away: found by the state folder anchor, even with --without-journal', async () => {
    w = await world();
    const out = await scrub(w);
    forgeCallable(out);
    renameSync(`${out}.journal.sqlite`, path.join(w.dir, 'elsewhere.sqlite'));
    const r = await dnc(['--json', 'verify', out, '--without-journal'], w.env);
    expect(r.code).toBe(3);
    const v = JSON.parse(r.stdout);
    expect(v).toMatchObject({ fit: false, tampered: true, anchored: 'differs' });
    expect(v.differences.join('\n')).toMatch(
      /the state folder records that dnc last wrote this file at .* it changed since, with its manifest/,
    );
  });

  it('results, manifest and journal rewritten to agree: the anchor still differs', async () => {
    w = await world();
    const out = await scrub(w);
    forgeCallable(out);
    const j = new Database(`${out}.journal.sqlite`);
    j.prepare("UPDATE numbers SET result = 'callable', do_not_call = 0 WHERE result = 'do_not_call'").run();
    j.close();
    const r = await dnc(['--json', 'verify', out], w.env);
    expect(r.code).toBe(3);
    expect(JSON.parse(r.stdout)).toMatchObject({ tampered: true, anchored: 'differs' });
  });

  it('a file anchored nowhere this machine can see is unproven (exit 3); --unanchored judges the rest and says so', async () => {
    w = await world();
    const out = await scrub(w);
    const elsewhere = { ...w.env, XDG_STATE_HOME: path.join(w.dir, 'another-machine') };
    const r = await dnc(['verify', out], elsewhere);
    expect(r.code).toBe(3);
    expect(r.stdout).toContain('NOT FIT TO DIAL (unproven): it is anchored nowhere this machine can see');
    expect(r.stdout).toContain("this machine's state folder holds no anchor of this file");
    const weaker = await dnc(['verify', out, '--unanchored'], elsewhere);
    expect(weaker.code, weaker.stdout).toBe(0);
    expect(weaker.stdout).toContain('not checked (--unanchored): that this file and its manifest are what dnc wrote');
  });
});

/** Cuts the last audit entry and the suppression it recorded, as the sqlite3 shell would (the triggers dropped first). */
function cutLastEntry(list: string): void {
  execFileSync('sqlite3', [
    list,
    `DROP TRIGGER audit_append_only_delete;
     DELETE FROM suppressions WHERE e164 = (SELECT e164 FROM audit ORDER BY id DESC LIMIT 1);
     DELETE FROM audit WHERE id = (SELECT MAX(id) FROM audit);`,
  ]);
}

describe("the list's audit head, anchored in the state folder", () => {
  it('a cut tail is refused by suppress, check, batch and verify (E_LIST_ALTERED, nothing sent); restore records it and re-anchors', async () => {
    w = await world();
    const list = path.join(w.stateDir, 'do-not-call.sqlite');
    expect((await dnc(['suppress', 'add', '+12025550103', '--reason', 'asked'], w.env)).code).toBe(0);
    const out = await scrub(w);
    expect((await dnc(['suppress', 'add', '+12025550100', '--reason', 'opted out on the phone'], w.env)).code).toBe(0);
    cutLastEntry(list);
    // The log still chains and agrees with the entries: only the anchor shows the cut.
    const before = w.sb.lookups().length;
    for (const argv of [
      ['suppress', 'list'],
      ['suppress', 'count'],
      ['suppress', 'export'],
      ['check', '+12025550100'],
      ['batch', path.join(w.dir, 'calls.csv'), '-o', path.join(w.dir, 'again.csv')],
      ['verify', out],
    ]) {
      const r = await dnc(argv, w.env);
      expect(r.code, `${argv.join(' ')}: ${r.stderr}`).toBe(3);
      expect(r.stderr, argv.join(' ')).toMatch(
        /E_LIST_ALTERED.*its audit log no longer holds the entry this machine last saw/,
      );
      expect(r.stderr).toContain('dnc suppress restore FILE --reason TEXT');
    }
    expect(w.sb.lookups().length).toBe(before);
    expect(existsSync(path.join(w.dir, 'again.csv'))).toBe(false);
    // log reads it, and says what is wrong.
    const log = await dnc(['suppress', 'log'], w.env);
    expect(log.code).toBe(3);
    expect(log.stderr).toContain('entries were cut');
    // Accepting the list as it stands is a command of its own, recorded in the audit log.
    const restored = await dnc(['suppress', 'restore', list, '--reason', 'the opt-out was entered by mistake'], w.env);
    expect(restored.code, restored.stderr).toBe(0);
    const entries = (await dnc(['--json', 'suppress', 'log'], w.env)).stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(entries.at(-1)).toMatchObject({
      action: 'restore',
      e164: '',
      reason: 'the opt-out was entered by mistake',
      evidence: expect.stringMatching(/^replaced list .* at head [0-9a-f]{64} \(2 entries/),
    });
    expect((await dnc(['suppress', 'count'], w.env)).code).toBe(0);
    expect((await dnc(['check', '+12025550100'], w.env)).code).toBe(0);
    // Independent reader: the audit table, as sqlite3 sees it.
    expect(
      execFileSync('sqlite3', [list, 'SELECT action FROM audit ORDER BY id'], { encoding: 'utf8' }).trim().split('\n'),
    ).toEqual(['suppress', 'restore']);
  });

  it('restore from a backup puts it in place, keeps the replaced list beside it, and re-anchors', async () => {
    w = await world();
    const list = path.join(w.stateDir, 'do-not-call.sqlite');
    expect((await dnc(['suppress', 'add', '+12025550103'], w.env)).code).toBe(0);
    const backup = path.join(w.dir, 'backup.sqlite');
    execFileSync('cp', [list, backup]);
    expect((await dnc(['suppress', 'add', '+12025550104'], w.env)).code).toBe(0);
    cutLastEntry(list);
    expect((await dnc(['suppress', 'count'], w.env)).code).toBe(3);
    const r = await dnc(['--json', 'suppress', 'restore', backup, '--reason', 'disk replaced'], w.env);
    expect(r.code, r.stderr).toBe(0);
    const kept = JSON.parse(r.stdout).replaced_kept_at as string;
    expect(existsSync(kept)).toBe(true);
    expect((await dnc(['suppress', 'list', '--json'], w.env)).stdout).toContain('+12025550103');
  });

  it('a list deleted, or another list put in its place, is refused the same way', async () => {
    w = await world();
    const list = path.join(w.stateDir, 'do-not-call.sqlite');
    expect((await dnc(['suppress', 'add', '+12025550100'], w.env)).code).toBe(0);
    rmSync(list);
    const gone = await dnc(['check', '+12025550100'], w.env);
    expect(gone.code).toBe(3);
    expect(gone.stderr).toMatch(/E_LIST_ALTERED.*it is gone/);
    // A new, empty list made by another tool at the same path: another id.
    const other = new Database(list);
    other.exec(
      "CREATE TABLE list_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO list_meta VALUES ('id', 'someone-elses-list')",
    );
    other.close();
    const replaced = await dnc(['check', '+12025550100'], w.env);
    expect(replaced.code).toBe(3);
    expect(replaced.stderr).toMatch(/another list \(id someone-elses-list\) stands where list/);
  });
});

describe('report and status judge as verify does', () => {
  it('a file verify calls not fit gets no green badge and no "valid" status; lists are labelled by kind', async () => {
    w = await world();
    const input = w.file('calls.csv', ['name,phone', 'a,+12025550100', 'b,+12025550997']);
    const out = path.join(w.dir, 'calls.results.csv');
    // 997: the sandbox answers lookup_expired (failed, no verdict): verify says not fit.
    const lists = [
      '--review-out',
      path.join(w.dir, 'review.csv'),
      '--dial-out',
      path.join(w.dir, 'dial.txt'),
      '--callable-out',
      path.join(w.dir, 'callable.csv'),
    ];
    expect((await dnc(['batch', input, '-o', out, ...lists], w.env)).code).toBe(7);
    expect((await dnc(['verify', out], w.env)).code).toBe(3);
    const report = path.join(w.dir, 'r.html');
    const r = await dnc(['report', out, '-o', report], w.env);
    // Written, and its exit status says the file is not fit, as verify's does.
    expect(r.code).toBe(3);
    const html = readFileSync(report, 'utf8');
    expect(html).not.toMatch(/pill ok">Valid until/);
    expect(html).toMatch(/pill bad">Not fit to dial: 1 row\(s\) to re-check \(1 failed\)/);
    for (const label of ['Callable list', 'Review list', 'Dial list']) expect(html).toContain(`<td>${label}</td>`);
    const st = await dnc(['--json', 'status', out], w.env);
    expect(st.code).toBe(3);
    expect(JSON.parse(st.stdout).files[0]).toMatchObject({
      state: 'not_fit',
      fit: false,
      not_fit_because: '1 row(s) to re-check (1 failed)',
    });
    // The independent reader agrees the file says failed for that row.
    expect(
      readCsvIndependently(out)
        .slice(1)
        .map((x) => x[4]),
    ).toEqual(['callable', 'failed']);
  });
});

describe('a journal whose batch record was damaged', () => {
  it('verify and a rerun say so with E_JOURNAL_UNREADABLE (exit 3), status as a scrub not fit, never an internal error; --restart starts over', async () => {
    w = await world();
    const out = await scrub(w);
    const j = new Database(`${out}.journal.sqlite`);
    j.prepare("UPDATE meta SET value = '{not json' WHERE key = 'batch'").run();
    j.close();
    const v = await dnc(['verify', out], w.env);
    expect(v.code).toBe(3);
    expect(v.stderr).toContain('[E_JOURNAL_UNREADABLE]');
    expect(v.stderr).toContain('holds a batch record that is not JSON');
    expect(v.stderr).not.toMatch(/internal error/i);
    const input = path.join(w.dir, 'calls.csv');
    const rerun = await dnc(['batch', input, '-o', out], w.env);
    expect(rerun.code).toBe(3);
    expect(rerun.stderr).toContain('[E_JOURNAL_UNREADABLE]');
    // status lists scrubs: this one is not fit, and why.
    const status = await dnc(['status', out], w.env);
    expect(status.code).toBe(3);
    expect(status.stderr).toContain('is not fit to dial: the batch journal');
    expect(status.stderr).toContain('holds a batch record that is not JSON');
    expect(status.stderr).not.toMatch(/internal error/i);
    const restart = await dnc(['batch', input, '-o', out, '--restart'], w.env);
    expect(restart.code, restart.stderr).toBe(0);
    expect((await dnc(['verify', out], w.env)).code).toBe(0);
  });
});
