// The journal: answers, receipts, pushes (applied / duplicate / orphan), counts, locks — real SQLite files.
import type { PushBody } from '../../src/service/push-answers.js';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import {
  acquireJournalLock,
  BatchJournal,
  deleteJournalFiles,
  finalAnswerOf,
  journalPathFor,
  lockHolder,
} from '../../src/journal/journal.js';
import { DncError } from '../../src/errors.js';
import { scratch } from '../batch/helpers.js';
import { runNodeScript } from '../helpers/node-script.js';

const tmp = scratch();
afterAll(() => tmp.remove());

async function journalWith(numbers: Array<[string, string]>): Promise<BatchJournal> {
  const j = await BatchJournal.open(journalPathFor(path.join(tmp.dir, `${numbers.length}-${Math.random()}.csv`)), {
    create: true,
  });
  j.insertNumbers(numbers);
  return j;
}

const succeeded = (id: string, phone: string, dnc: boolean) => ({
  status: 'succeeded',
  error_code: null,
  correlation_id: id,
  phone_number: phone,
  country: 'AU',
  do_not_call: dnc,
  timestamp: new Date().toISOString(),
  dnc_list_source: 'https://sandbox.dnc.invalid/registers/AU',
  cost: { credits_used_for_query: 3, total_credits_used: 9, credit_limit: 100 },
});

describe('a push for a webhook lookup whose receipt a killed run never stored (unanswered_send)', () => {
  const at = (ms: number) => new Date(ms).toISOString().replace('Z', '123+00:00');
  async function unanswered(): Promise<{ j: BatchJournal; sentAt: number }> {
    const sentAt = Date.now() - 60_000;
    const j = await BatchJournal.open(
      journalPathFor(path.join(tmp.dir, `adopt-${Math.random()}.csv`)),
      { create: true },
      () => new Date(sentAt),
    );
    j.insertNumbers([
      ['+61412345001', 'AU'],
      ['+61412345002', 'AU'],
    ]);
    j.claim(j.nextQueued(0, 10).map((q) => q.id));
    expect(j.settleUnanswered()).toBe(2);
    return { j, sentAt };
  }
  // Each lookup has its own correlation id (the receipt that would have told it was never stored).
  const push = (phone: string, dnc: boolean, ts: string) =>
    JSON.stringify({ ...succeeded(`5b0e1f4c-2a3d-4e5f-8a9b-0c1d2e3f4a${phone.slice(-2)}`, phone, dnc), timestamp: ts });

  it('a do_not_call verdict about it, after its send, is adopted; a callable one is kept and the row stays unanswered', async () => {
    const { j, sentAt } = await unanswered();
    expect(j.pushes.record(push('+61412345001', false, at(sentAt + 5_000)), new Date().toISOString())).toBe('orphan');
    expect(j.get('+61412345001')).toMatchObject({ result: 'failed', error_code: 'unanswered_send' });
    expect(j.pushes.record(push('+61412345002', true, at(sentAt + 5_000)), new Date().toISOString())).toBe('adopted');
    expect(j.get('+61412345002')).toMatchObject({
      state: 'done',
      result: 'do_not_call',
      do_not_call: 1,
      error_code: null,
      credits: 3,
    });
    // Its send is answered now: only the other one still counts as a send without an answer.
    expect(j.unansweredSends()).toBe(1);
    j.close();
  });

  it('a do_not_call verdict dated before the send is not its answer: kept as an orphan', async () => {
    const { j, sentAt } = await unanswered();
    expect(j.pushes.record(push('+61412345002', true, at(sentAt - 3_600_000)), new Date().toISOString())).toBe(
      'orphan',
    );
    expect(j.get('+61412345002')).toMatchObject({ result: 'failed', error_code: 'unanswered_send' });
    j.close();
  });

  it('an orphan kept while the number was still in flight is adopted once a rerun settles it', async () => {
    const sentAt = Date.now() - 60_000;
    const j = await BatchJournal.open(
      journalPathFor(path.join(tmp.dir, `adopt-late-${Math.random()}.csv`)),
      { create: true },
      () => new Date(sentAt),
    );
    j.insertNumbers([['+61412345002', 'AU']]);
    j.claim(j.nextQueued(0, 10).map((q) => q.id));
    expect(j.pushes.record(push('+61412345002', true, at(sentAt + 1_000)), new Date().toISOString())).toBe('orphan');
    expect(j.settleUnanswered()).toBe(1);
    expect(j.pushes.adoptKeptOrphans()).toEqual(['+61412345002']);
    expect(j.get('+61412345002')).toMatchObject({ result: 'do_not_call' });
    expect(j.pushes.adoptKeptOrphans()).toEqual([]);
    j.close();
  });
});

describe('journal', () => {
  it("a TRUNCATE checkpoint (the render thread's, at the end of a run) never waits for another connection reading the log", async () => {
    const j = await journalWith([
      ['+61412345001', 'AU'],
      ['+61412345002', 'AU'],
    ]);
    try {
      j.claim([1]);
      // A reader in the middle of a transaction (dnc trace, a backup tool): a TRUNCATE that waited for it held the
      // journal's write lock for the busy timeout (5 s), and the batch's end and any `dnc listen` write with it.
      const reader = new Database(j.path, { timeout: 5_000 });
      reader.exec('BEGIN');
      reader.prepare('SELECT count(*) FROM numbers').get();
      const writer = new Database(j.path, { timeout: 0 });
      try {
        const began = performance.now();
        j.checkpoint({ truncate: true });
        // (A bound far below the 5 s the checkpoint used to wait: this checks that it does not wait, not its speed.)
        expect(performance.now() - began).toBeLessThan(2_000);
        // Nobody is kept from writing meanwhile, and the busy timeout is back for the journal's own writes.
        writer.prepare("UPDATE numbers SET updated_at = 'x' WHERE id = 2").run();
        expect(j.summaryCounts().in_flight).toBe(1);
      } finally {
        reader.exec('COMMIT');
        reader.close();
        writer.close();
      }
      j.checkpoint({ truncate: true });
      expect(statSync(`${j.path}-wal`).size).toBe(0);
    } finally {
      j.close();
    }
  });

  it('stores receipts as pending and applies each push once: applied, then duplicate; unknown ids are orphans', async () => {
    const j = await journalWith([
      ['+61412345001', 'AU'],
      ['+61412345002', 'AU'],
    ]);
    const [a, b] = j.nextQueued(0, 10);
    expect(j.claim([a!.id, b!.id])).toEqual([a!.id, b!.id]);
    j.recordReceipt(a!.id, 'corr-a', { status: 'started', correlation_id: 'corr-a' }, 3);
    j.recordReceipt(b!.id, 'corr-b', { status: 'started', correlation_id: 'corr-b' }, 3);
    expect(j.pendingNumbers().map((p) => [p.e164, p.correlationId, p.creditsHeld])).toEqual([
      ['+61412345001', 'corr-a', 3],
      ['+61412345002', 'corr-b', 3],
    ]);

    const at = '2026-11-21T23:10:00.000Z';
    expect(j.pushes.record(JSON.stringify(succeeded('corr-a', '+61412345001', true)), at)).toBe('applied');
    expect(j.pushes.record(JSON.stringify(succeeded('corr-a', '+61412345001', true)), at)).toBe('duplicate');
    expect(j.pushes.record(JSON.stringify(succeeded('corr-zzz', '+61412345009', false)), at)).toBe('orphan');
    expect(j.pushes.record('not json', at, null)).toBe('orphan');
    const expired: PushBody = {
      status: 'failed',
      error_code: 'lookup_expired',
      error: 'no answer',
      charged: false,
      correlation_id: 'corr-b',
      phone_number: '+61412345002',
      country: 'AU',
    };
    expect(
      j.pushes.store([{ raw: JSON.stringify(expired), result: expired, receivedAt: at }]).map((v) => v.outcome),
    ).toEqual(['applied']);

    const rowA = j.get('+61412345001')!;
    expect([rowA.state, rowA.result, rowA.do_not_call, rowA.credits, rowA.correlation_id]).toEqual([
      'done',
      'do_not_call',
      1,
      3,
      'corr-a',
    ]);
    expect(JSON.parse(rowA.answer!).status).toBe('succeeded');
    const rowB = j.get('+61412345002')!;
    expect([rowB.state, rowB.result, rowB.error_code, rowB.credits]).toEqual(['done', 'failed', 'lookup_expired', 0]);
    expect(j.summaryCounts()).toMatchObject({ done: 2, pending: 0, credits: 3 });
    j.close();
  });

  it('keeps one row per distinct number, requeues numbers left in flight, and releases uncharged ones', async () => {
    const j = await journalWith([
      ['+12025550100', 'US'],
      ['+12025550100', 'US'],
      ['+12025550101', 'US'],
    ]);
    const queued = j.nextQueued(0, 10);
    expect(queued.map((q) => q.e164)).toEqual(['+12025550100', '+12025550101']);
    j.claim(queued.map((q) => q.id));
    j.release(queued[1]!.id);
    expect(j.summaryCounts()).toMatchObject({ queued: 1, in_flight: 1 });
    expect(j.requeueInFlight()).toBe(1);
    expect(j.summaryCounts()).toMatchObject({ queued: 2, in_flight: 0 });
    j.close();
  });

  it('stores judged answers: charged failures keep their credits, uncharged ones cost nothing, unknown costs count as told', () => {
    const judged = (credits: number | null, charged: boolean | null) =>
      ({
        result: 'failed',
        doNotCall: null,
        listSource: null,
        checkedAt: null,
        correlationId: null,
        errorCode: 'billing_error',
        error: 'x',
        charged,
        credits,
      }) as const;
    expect(finalAnswerOf(judged(2, true), 500, null, 9)).toMatchObject({ result: 'failed', credits: 2 });
    expect(finalAnswerOf(judged(2, false), 500, null, 9)).toMatchObject({ result: 'failed', credits: 0 });
    expect(finalAnswerOf(judged(null, true), 500, null, 9)).toMatchObject({ credits: 9 });
    expect(finalAnswerOf(judged(null, null), 200, null, 3)).toMatchObject({ credits: 3 });
  });

  it('claims only queued numbers, whether the ids are consecutive (one range statement) or not', async () => {
    const j = await journalWith(Array.from({ length: 6 }, (_, i): [string, string] => [`+1202555010${i}`, 'US']));
    const ids = j.nextQueued(0, 10).map((r) => r.id);
    expect(j.claim([ids[1]!])).toEqual([ids[1]]);
    // ids[0..3] are consecutive: ids[1] is already in flight and is not claimed again (its attempts stay 1).
    expect(j.claim(ids.slice(0, 4)).sort((a, b) => a - b)).toEqual([ids[0], ids[2], ids[3]]);
    expect(j.get('+12025550101')!.attempts).toBe(1);
    // Not consecutive: ids[4] is claimed, ids[0] (in flight) is not, and ids[5] (between them in no range) stays queued.
    expect(j.claim([ids[0]!, ids[4]!])).toEqual([ids[4]]);
    expect(j.get('+12025550105')!.state).toBe('queued');
    expect(j.claim([])).toEqual([]);
    expect(j.summaryCounts()).toMatchObject({ queued: 1, in_flight: 5 });
    j.close();
  });

  it('records when each claimed number was sent, and gives journals made before that the column', async () => {
    const file = journalPathFor(path.join(tmp.dir, `requested-${Math.random()}.csv`));
    let j = await BatchJournal.open(file, { create: true }, () => new Date('2026-11-21T10:00:00Z'));
    j.insertNumbers([['+12025550100', 'US']]);
    j.close();
    // A journal from before requested_at existed.
    const raw = new Database(file);
    raw.exec('ALTER TABLE numbers DROP COLUMN requested_at');
    raw.pragma('user_version = 0'); // as journals made before migrations were counted
    raw.close();
    j = await BatchJournal.open(file, { create: true }, () => new Date('2026-11-21T10:05:00Z'));
    const [id] = j.nextQueued(0, 10).map((r) => r.id);
    expect(j.claim([id!])).toEqual([id]);
    expect(j.get('+12025550100')!.requested_at).toBe('2026-11-21T10:05:00.000Z');
    j.close();
  });

  it('processes opening one journal made before requested_at at the same moment add the column once, none fails', async () => {
    // A resumed batch and `dnc listen` do this. Run against the compiled module, in real processes.
    const compiled = pathToFileURL(path.resolve(import.meta.dirname, '../../dist/journal/journal.js')).href;
    for (let round = 0; round < 8; round++) {
      const file = journalPathFor(path.join(tmp.dir, `race-${round}-${Math.random()}.csv`));
      const j = await BatchJournal.open(file, { create: true });
      j.insertNumbers([['+12025550100', 'US']]);
      j.close();
      const raw = new Database(file);
      raw.exec('ALTER TABLE numbers DROP COLUMN requested_at');
      raw.pragma('user_version = 0');
      raw.close();
      const at = Date.now() + 400;
      const script = `const { BatchJournal } = await import(${JSON.stringify(compiled)}); while (Date.now() < ${at}) {}
        try { (await BatchJournal.open(${JSON.stringify(file)}, { create: false })).close(); } catch (e) { process.stdout.write(e.message); process.exit(1); }`;
      const opens = await Promise.all([0, 1, 2].map(() => runNodeScript(script)));
      expect(opens, `round ${round}`).toEqual([
        { code: 0, out: '' },
        { code: 0, out: '' },
        { code: 0, out: '' },
      ]);
      const check = new Database(file, { readonly: true });
      expect(
        check
          .prepare<[], { name: string }>('PRAGMA table_info(numbers)')
          .all()
          .filter((c) => c.name === 'requested_at'),
      ).toHaveLength(1);
      check.close();
    }
  });

  it('a journal from before a release took its attempt back keeps, of its attempts, only what a crash can have left', async () => {
    const file = journalPathFor(path.join(tmp.dir, `sends-${Math.random()}.csv`));
    let j = await BatchJournal.open(file, { create: true });
    j.insertNumbers([
      ['+12025550100', 'US'],
      ['+12025550101', 'US'],
      ['+12025550102', 'US'],
      ['+12025550103', 'US'],
    ]);
    j.close();
    // As an older dnc left it: 1 answered, 2 refused by 429s (queued again, attempts left behind), 3 and 4 in flight at a crash.
    const raw = new Database(file);
    raw.exec("DELETE FROM meta WHERE key = 'sends_counted'");
    raw.pragma('user_version = 0');
    raw.exec(
      "UPDATE numbers SET attempts = 5, state = CASE id WHEN 1 THEN 'done' WHEN 2 THEN 'queued' ELSE 'in_flight' END",
    );
    raw.close();
    j = await BatchJournal.open(file, { create: true });
    const attempts = () =>
      [1, 2, 3, 4].map(
        (i) => j.get(['+12025550100', '+12025550101', '+12025550102', '+12025550103'][i - 1]!)!.attempts,
      );
    expect(attempts()).toEqual([1, 0, 1, 1]);
    expect(j.requeueInFlight()).toBe(2);
    expect(j.unseenSends()).toEqual(new Map([['US', 2]]));
    j.close();
    // Once only: a journal that counts exactly keeps its attempts.
    j = await BatchJournal.open(file, { create: true });
    expect(attempts()).toEqual([1, 0, 1, 1]);
    j.close();
  });

  it('stores the answer text it is given, as the service sent it', async () => {
    const j = await journalWith([
      ['+12025550101', 'US'],
      ['+12025550102', 'US'],
    ]);
    const [a, b] = j.nextQueued(0, 10);
    j.claim([a!.id, b!.id]);
    const body = { ...succeeded('corr-1', '+12025550101', true), country: 'US' };
    const text = JSON.stringify(body, null, 1);
    const verdict = {
      result: 'do_not_call',
      doNotCall: true,
      listSource: null,
      checkedAt: body.timestamp,
      correlationId: 'corr-1',
      errorCode: null,
      error: null,
      charged: true,
      credits: 1,
    } as const;
    j.recordFinal(a!.id, finalAnswerOf(verdict, 200, text, 0));
    j.recordFinal(b!.id, finalAnswerOf(verdict, 200, JSON.stringify(body), 0));
    expect(j.get('+12025550101')!.answer).toBe(text);
    expect(j.get('+12025550102')!.answer).toBe(JSON.stringify(body));
    expect(j.get('+12025550101')!).toMatchObject({
      state: 'done',
      result: 'do_not_call',
      credits: 1,
      http_status: 200,
      correlation_id: 'corr-1',
    });
    j.close();
  });

  it('a lock refuses a second live holder, is taken over from a dead one, and --restart removes every file', async () => {
    const file = journalPathFor(path.join(tmp.dir, 'locked.csv'));
    const lock = acquireJournalLock(file, { pid: 111, isAlive: () => true });
    expect(lockHolder(file, { pid: 222, isAlive: () => true })).toBe(111);
    expect(() => acquireJournalLock(file, { pid: 222, isAlive: () => true })).toThrow(DncError);
    const takeover = acquireJournalLock(file, { pid: 333, isAlive: (pid) => pid !== 111 });
    takeover.release();
    lock.release();
    const j = await BatchJournal.open(file, { create: true });
    j.close();
    expect(existsSync(file)).toBe(true);
    deleteJournalFiles(file);
    expect(existsSync(file)).toBe(false);
    await expect(BatchJournal.open(file, { create: false })).rejects.toThrow(/no batch journal/);
  });
});
