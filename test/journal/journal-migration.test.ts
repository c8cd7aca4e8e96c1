// A journal made by the previous release (fixtures/journals/release-a8b1e66): opened, migrated in order,
// resumed and finished by this one, without sending an answered number again.
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.js';
import { runDnc } from '../helpers/cli.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { FIXTURES, lookedUp, sandbox, scratch, scratchFolders } from '../batch/helpers.js';

let sb: Sandbox;
let env: Record<string, string>;
const tmp = scratch();

beforeAll(async () => {
  ({ sb, env } = await sandbox());
  env = { ...env, ...scratchFolders(tmp.dir) };
});
afterAll(async () => {
  await sb.close();
  tmp.remove();
});

/** The previous release's batch (its input and journal) copied into a folder of its own. */
function releaseJournalIn(name: string): { dir: string; journal: string } {
  const dir = path.join(tmp.dir, name);
  mkdirSync(dir);
  for (const f of ['calls.csv', 'calls.results.csv.journal.sqlite'])
    copyFileSync(path.join(FIXTURES, 'journals', 'release-a8b1e66', f), path.join(dir, f));
  return { dir, journal: path.join(dir, 'calls.results.csv.journal.sqlite') };
}

describe('a journal of the previous release', () => {
  it('is migrated (user_version 0 → every step), refused until accepted (E_JOURNAL_UNPROVEN), then resumed without resending answered numbers, and finished', async () => {
    const { dir, journal } = releaseJournalIn('old');
    // Its answers came from that run's sandbox: the same service as far as this test goes.
    const raw = new Database(journal);
    expect(raw.pragma('user_version', { simple: true })).toBe(0);
    raw
      .prepare("UPDATE meta SET value = json_set(value, '$.serviceOrigin', ?) WHERE key = 'batch'")
      .run(new URL(sb.baseUrl).origin);
    raw.close();

    // Its answers were never chained: nothing proves them, so nothing is built from them until the user says so.
    const refused = await runDnc(['batch', 'calls.csv', '-o', 'calls.results.csv'], { env, cwd: dir });
    expect(refused.code, refused.stderr).toBe(3);
    expect(refused.stderr).toContain('dnc: error [E_JOURNAL_UNPROVEN]');
    expect(refused.stderr).toContain('were kept by a dnc before journals were chained');
    expect(refused.stderr).toContain('--accept-unproven-journal');
    expect(lookedUp(sb)).toEqual([]);
    expect(existsSync(path.join(dir, 'calls.results.csv'))).toBe(false);

    const r = await runDnc(['batch', 'calls.csv', '-o', 'calls.results.csv', '--accept-unproven-journal'], {
      env,
      cwd: dir,
    });
    // The billing failure (uncharged) and the AU row (webhook-only) have no verdict: finished, exit 7.
    expect(r.code, r.stderr).toBe(7);
    expect(r.stderr).toContain('Resuming');
    expect(lookedUp(sb).sort()).toEqual(['+12025550106', '+12025550107', '+12025550996']);

    const db = new Database(journal, { readonly: true });
    try {
      // Every step: the fifth keeps what a failed number cost before --resend-failed sent it again; the sixth marks a
      // meta that keeps each option once.
      // the seventh chains the answers (this one's on the user's word, accepted).
      expect(db.pragma('user_version', { simple: true })).toBe(7);
      expect(db.prepare("SELECT 1 FROM meta WHERE key = 'unchained'").get()).toBeUndefined();
      const columns = db
        .prepare<[], { name: string }>('PRAGMA table_info(numbers)')
        .all()
        .map((c) => c.name);
      expect(columns).toEqual(expect.arrayContaining(['requested_at', 'reused_at', 'credits_before']));
    } finally {
      db.close();
    }
    const [head, ...rows] = readCsvIndependently(path.join(dir, 'calls.results.csv'));
    const at = (name: string) => head!.indexOf(name);
    expect(rows.map((x) => [x[0], x[at('dnc_result')], x[at('dnc_error_code')]])).toEqual([
      ['Ann', 'callable', ''],
      ['Bob', 'do_not_call', ''],
      ['Cy', 'callable', ''],
      ['Dee', 'do_not_call', ''],
      ['Ed', 'callable', ''],
      ['Fay', 'do_not_call', ''],
      ['Gus', 'callable', ''],
      ['Hal', 'do_not_call', ''],
      ['Ivy', 'failed', 'billing_error'],
      // The release before labelled it not_checked/credit_limit; the reason is true now.
      ['Jo', 'not_checked', 'webhook_required'],
      ['Kim', 'invalid', 'unparseable_number'],
    ]);
    const v = await runDnc(['--json', 'verify', 'calls.results.csv'], { cwd: dir });
    expect((JSON.parse(v.stdout) as { tampered: boolean }).tampered).toBe(false);
    // Accepted once: chained and anchored, a bare rerun proves it and sends only the uncharged failure again.
    const sent = lookedUp(sb).length;
    const again = await runDnc(['batch', 'calls.csv', '-o', 'calls.results.csv'], { env, cwd: dir });
    expect(again.code, again.stderr).toBe(7);
    expect(lookedUp(sb).slice(sent)).toEqual(['+12025550996']);
  });
});

describe('a journal of a newer dnc', () => {
  it('is refused before anything is sent or written (E_JOURNAL_TOO_NEW, exit 2), left as it is', async () => {
    const { dir, journal } = releaseJournalIn('newer');
    const raw = new Database(journal);
    raw.pragma('user_version = 99');
    raw.close();
    const before = readFileSync(journal);
    const sent = lookedUp(sb).length;

    const r = await runDnc(['batch', 'calls.csv', '-o', 'calls.results.csv'], { env, cwd: dir });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`dnc: error [E_JOURNAL_TOO_NEW]: the batch journal ${journal} is at schema version 99`);
    expect(r.stderr).toContain('hint: upgrade dnc');
    expect(lookedUp(sb)).toHaveLength(sent);
    expect(readFileSync(journal).equals(before)).toBe(true);
    expect(existsSync(path.join(dir, 'calls.results.csv'))).toBe(false);
  });
});
