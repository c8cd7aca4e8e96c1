// The journal's answer chain (src/journal/chain.ts) against edits made outside dnc with the sqlite3 shell, a commit that
// never landed, and a journal moved or copied; anchored in a real state folder.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, renameSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BatchJournal, finalAnswerOf } from '../../src/journal/journal.js';
import { checkJournal, proveJournal } from '../../src/journal/proof.js';
import { journalAnchorIn } from '../../src/stores/anchors.js';
import { dncErrorOf } from '../helpers/cli.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const now = () => new Date('2026-12-07T12:00:00Z');

async function open(file: string, state: string | null): Promise<BatchJournal> {
  return BatchJournal.open(file, { create: true, anchor: await journalAnchorIn(state, file, now) }, now);
}

/** A journal of three numbers, two answered, a push kept; closed. */
async function answered(): Promise<{ dir: string; file: string; state: string }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-chain-'));
  dirs.push(dir);
  const file = path.join(dir, 'out.csv.journal.sqlite');
  const state = path.join(dir, 'state');
  const j = await open(file, state);
  j.insertNumbers([
    ['+12025550100', 'US'],
    ['+12025550101', 'US'],
    ['+12025550102', 'US'],
  ]);
  const verdict = (dnc: boolean, id: string) =>
    finalAnswerOf(
      {
        result: dnc ? 'do_not_call' : 'callable',
        doNotCall: dnc,
        listSource: 'https://sandbox.dnc.invalid/registers/US',
        checkedAt: '2026-12-07T11:59:00.000000+00:00',
        correlationId: id,
        errorCode: null,
        error: null,
        credits: 1,
        charged: true,
      } as Parameters<typeof finalAnswerOf>[0],
      200,
      JSON.stringify({ do_not_call: dnc, correlation_id: id }),
      1,
    );
  j.atomically(() => {
    j.recordFinal(1, verdict(false, 'c-1'));
    j.recordFinal(2, verdict(true, 'c-2'));
  });
  j.pushes.record('{"correlation_id":"c-9","status":"succeeded"}', '2026-12-07T11:59:30Z');
  j.close();
  return { dir, file, state };
}

async function checked(file: string, state: string | null) {
  const j = await BatchJournal.open(file, { create: false, anchor: await journalAnchorIn(state, file, now) }, now);
  try {
    return checkJournal(j);
  } finally {
    j.close();
  }
}

const sqlite = (file: string, sql: string) => execFileSync('sqlite3', [file, sql]);

describe('the journal chain', () => {
  it('holds every answer and push as dnc committed them', async () => {
    const { file, state } = await answered();
    expect(await checked(file, state)).toMatchObject({ state: 'intact', at: { entries: 3 }, altered: [] });
  });

  it('finds an edited result, an edited answer body, an edited or deleted push', async () => {
    for (const [edit, why] of [
      ["UPDATE numbers SET result = 'callable', do_not_call = 0 WHERE id = 2", /1 number\(s\) differ/],
      ["UPDATE answers SET body = replace(body, 'true', 'false') WHERE number_id = 2", /1 number\(s\) differ/],
      ['UPDATE pushes SET body = \'{"correlation_id":"c-9","status":"failed"}\'', /push 1 is not what dnc kept/],
      ['DELETE FROM pushes', /push 1 was deleted/],
      // The push's entry cut from the chain: the push stands outside it.
      ['DELETE FROM chain WHERE seq = 3', /push 1 is not what dnc kept/],
      // The number's entry cut: its answer stands outside the chain.
      ['DELETE FROM chain WHERE seq = 2', /1 number\(s\) differ/],
    ] as const) {
      const { file, state } = await answered();
      sqlite(file, edit);
      const c = await checked(file, state);
      expect([edit, c.state]).toEqual([edit, 'altered']);
      expect(c.why).toMatch(why);
    }
  });

  it('chains the exemptions applied: one added, changed or removed outside dnc is found', async () => {
    const { file, state } = await answered();
    const j = await BatchJournal.open(file, { create: false, anchor: await journalAnchorIn(state, file, now) }, now);
    const exempt = { e164: '+12025550101', basis: 'express_consent', until: '2027-01-01', evidence: 'form 7' };
    j.setExemptions([exempt]);
    expect(checkJournal(j).state).toBe('intact');
    j.setExemptions([]);
    expect(checkJournal(j).state).toBe('intact');
    j.setExemptions([exempt]);
    j.close();
    for (const [edit, why] of [
      ["UPDATE exemptions SET until = '2099-01-01'", /the exemption of number 2 is not what dnc applied/],
      ['DELETE FROM exemptions', /the exemption of number 2 was deleted/],
      [
        "INSERT INTO exemptions (number_id, basis, until) SELECT id, 'express_consent', '2099-01-01' FROM numbers " +
          'WHERE id = 1',
        /the exemption of number 1 is not what dnc applied/,
      ],
    ] as const) {
      const copy = `${file}.${Math.random().toString(36).slice(2)}`;
      execFileSync('sqlite3', [file, `VACUUM INTO '${copy}'`]);
      sqlite(copy, edit);
      const c = await checked(copy, null);
      expect([edit, c.state, c.why]).toEqual([edit, 'altered', expect.stringMatching(why)]);
    }
  });

  it('a commit that never landed leaves the journal at the head anchored before it', async () => {
    const { file, state } = await answered();
    const j = await BatchJournal.open(file, { create: false, anchor: await journalAnchorIn(state, file, now) }, now);
    expect(() =>
      j.atomically(() => {
        j.pushes.record('{"correlation_id":"c-8","status":"succeeded"}', '2026-12-07T11:59:40Z');
        // The anchor is written before the commit: this one is rolled back after it.
        j.chain.beforeCommit();
        throw new Error('the disk is full');
      }),
    ).toThrow('the disk is full');
    expect(checkJournal(j)).toMatchObject({ state: 'intact', at: { entries: 3 } });
    j.close();
  });

  it("a dnc writing beside the check moves the anchor on: its commits continue the chain, a forger's do not", async () => {
    const { file, state } = await answered();
    const opened = async () =>
      BatchJournal.open(file, { create: false, anchor: await journalAnchorIn(state, file, now) }, now);
    const [writer, reader] = [await opened(), await opened()];
    const end = reader.beginSnapshot();
    writer.pushes.record('{"correlation_id":"c-7"}', '2026-12-07T11:59:41Z');
    writer.pushes.record('{"correlation_id":"c-6"}', '2026-12-07T11:59:42Z');
    const c = reader.chain.check();
    end();
    expect(c).toMatchObject({ state: 'altered', anchorAhead: true, at: { entries: 3 } });
    expect(reader.chain.caughtUp(c.at)).toBe(true);
    expect(checkJournal(reader).state).toBe('intact');
    writer.close();
    reader.close();
    // The same tail rewritten by someone else: it no longer leads to the anchored head.
    sqlite(file, "UPDATE chain SET digest = 'x' || substr(digest, 2) WHERE seq = 5");
    const forged = await opened();
    expect(forged.chain.caughtUp(c.at)).toBe(false);
    forged.close();
  });

  it('a journal moved on this machine is found by its head; copied elsewhere it proves nothing until accepted', async () => {
    const { dir, file, state } = await answered();
    const moved = path.join(dir, 'moved.csv.journal.sqlite');
    renameSync(file, moved);
    expect(await checked(moved, state)).toMatchObject({ state: 'intact', anchoredAt: file });

    const elsewhere = path.join(dir, 'laptop-state');
    const j = await BatchJournal.open(moved, { create: false, anchor: await journalAnchorIn(elsewhere, moved, now) });
    expect((await dncErrorOf(Promise.resolve().then(() => proveJournal(j, false)))).code).toBe('E_JOURNAL_UNPROVEN');
    proveJournal(j, true);
    j.close();
    expect(await checked(moved, elsewhere)).toMatchObject({ state: 'intact', anchoredAt: moved });
  });

  it('a journal of the release before chains opens read-only (a rerun reads its remembered options so)', async () => {
    const { file } = await answered();
    sqlite(file, 'DROP TABLE chain; PRAGMA user_version = 6');
    const j = await BatchJournal.open(file, { create: false, readonly: true });
    expect(j.get('+12025550101')?.result).toBe('do_not_call');
    j.close();
  });

  it('a journal made without a state folder is anchored by the first dnc that opens it with one', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-chain-'));
    dirs.push(dir);
    const file = path.join(dir, 'out.csv.journal.sqlite');
    const j = await open(file, null);
    j.insertNumbers([['+12025550100', 'US']]);
    j.pushes.record('{"correlation_id":"c-9"}', '2026-12-07T11:59:30Z');
    j.close();
    const state = path.join(dir, 'state');
    const k = await BatchJournal.open(file, { create: false, anchor: await journalAnchorIn(state, file, now) });
    expect(proveJournal(k, false)).toMatchObject({ state: 'intact', anchorNow: true });
    k.close();
    sqlite(file, "UPDATE chain SET digest = 'x' || substr(digest, 2)");
    expect((await checked(file, state)).state).toBe('altered');
  });
});
