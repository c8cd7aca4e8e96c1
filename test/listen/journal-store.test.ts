// The journal-backed push store on a real batch journal: outcomes, the retry of a refused write upgrade, pending queries.
import { afterEach, describe, expect, it } from 'vitest';
import { openListenJournal, type JournalPushStore } from '../../src/listen/journal-store.js';
import { readCsv, readJournal, webhookBatch, type WebhookBatch } from './helpers.js';
import type { IncomingPush } from '../../src/listen/receiver-types.js';

let current: WebhookBatch | undefined;
let store: JournalPushStore | undefined;
afterEach(async () => {
  store?.close();
  store = undefined;
  await current?.cleanup();
  current = undefined;
});

function pushFor(correlationId: string, phoneNumber: string): IncomingPush {
  const result = {
    status: 'failed' as const,
    error_code: 'invalid_phone_number' as const,
    error: 'the register rejected the number',
    charged: true,
    correlation_id: correlationId,
    phone_number: phoneNumber,
    country: 'AU',
  };
  return { correlationId, result, raw: JSON.stringify(result), receivedAt: new Date(), serviceStatus: 400 };
}

async function setUp() {
  // …9x AU numbers answer minutes later (× 0.01): the sandbox does not push during the test.
  current = await webhookBatch([
    ['a', '+61 4 1234 5191'],
    ['b', '+61 4 1234 5192'],
  ]);
  expect(current.batch.code).toBe(8);
  store = await openListenJournal(current.output, { tzdataVersion: 'test' });
  return { b: current, s: store, rows: readCsv(current.output) };
}

describe('journal push store', () => {
  it('applies, deduplicates and keeps orphans, and reads what is still pending', async () => {
    const { b, s, rows } = await setUp();
    const before = s.pendingSummary(new Date(0));
    expect(before).toMatchObject({ pending: 2, unsent: 0, overdue: [] });
    expect(before.oldest?.phoneNumber).toBe('+61412345191');
    const a = pushFor(rows[0]!.dnc_correlation_id, rows[0]!.dnc_phone_e164);
    const orphan = pushFor('99999999-9999-4999-8999-999999999999', '+61412345100');
    expect(await s.store([a, a, orphan])).toEqual([
      { duplicate: false, orphan: false },
      { duplicate: true, orphan: false },
      { duplicate: false, orphan: true },
    ]);
    const after = s.pendingSummary(new Date(Date.now() + 60_000));
    expect(after.pending).toBe(1);
    expect(after.overdue.map((l) => l.phoneNumber)).toEqual(['+61412345192']);
    expect(await s.render()).toMatchObject({ invalid: 1, pending: 1 });
    expect(readCsv(b.output).map((r) => r.dnc_result)).toEqual(['invalid', 'pending']);
  });

  it('runs the transaction again when SQLite refuses the write upgrade at once, and gives up on a lasting lock', async () => {
    const { b, s, rows } = await setUp();
    const journal = s.journal;
    const original = journal.pushes.store.bind(journal.pushes);
    let calls = 0;
    const busy = () => Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
    journal.pushes.store = (records, options) => {
      calls++;
      if (calls === 1) throw busy();
      return original(records, options);
    };
    expect(await s.store([pushFor(rows[0]!.dnc_correlation_id, rows[0]!.dnc_phone_e164)])).toEqual([
      { duplicate: false, orphan: false },
    ]);
    expect(calls).toBe(2);
    journal.pushes.store = () => {
      calls++;
      throw busy();
    };
    calls = 0;
    await expect(s.store([pushFor(rows[1]!.dnc_correlation_id, rows[1]!.dnc_phone_e164)])).rejects.toThrow(
      /database is locked/,
    );
    expect(calls).toBe(5);
    journal.pushes.store = () => {
      throw new Error('disk I/O error');
    };
    await expect(s.store([pushFor(rows[1]!.dnc_correlation_id, rows[1]!.dnc_phone_e164)])).rejects.toThrow(
      /disk I\/O error/,
    );
    expect(readJournal(b.journal).pushes).toHaveLength(1);
  });

  it('keeps a refused push as evidence when SQLite refuses the write upgrade at once, as it stores a push', async () => {
    const { b, s, rows } = await setUp();
    const journal = s.journal;
    const original = journal.pushes.store.bind(journal.pushes);
    let calls = 0;
    journal.pushes.store = (records, options) => {
      calls++;
      if (calls === 1) throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
      return original(records, options);
    };
    const forged = pushFor(rows[0]!.dnc_correlation_id, '+61412345100');
    await s.keepRefused({ ...forged, result: null, refusedReason: 'the body is not valid JSON' });
    expect(calls).toBe(2);
    expect(readJournal(b.journal).pushes.map((p) => [p.correlation_id, p.outcome])).toEqual([
      [rows[0]!.dnc_correlation_id, 'refused'],
    ]);
  });
});
