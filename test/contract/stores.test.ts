// The stores' contract, one suite run against both implementations: the local files (SQLite) and a team's
// PostgreSQL store. Same cases, same expectations; each backend on real files or a real server.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CheckHistory } from '../../src/stores/history.js';
import type {
  CheckRecord,
  History,
  JournalVerdictSource,
  ResultsCache,
  StoreScope,
  SuppressionList,
} from '../../src/stores/interfaces.js';
import { openStores, type Stores } from '../../src/stores/owner.js';
import { SqliteResultsCache } from '../../src/stores/results-cache.js';
import { SuppressionStore } from '../../src/stores/suppression-store.js';
import { entryHash, type AuditEntry } from '../../src/stores/suppression-types.js';
import { freshDatabase, HAVE_POSTGRES, postgresSkipped, sqlOn } from '../helpers/postgres.js';

interface Backend {
  resultsCache(scope: StoreScope): Promise<ResultsCache>;
  list(): Promise<SuppressionList>;
  history(): Promise<History>;
  /** Changes a row behind dnc's back, as someone with the database's own tools would. */
  tamper(sql: string): Promise<void>;
  close(): Promise<void>;
}

async function sqliteBackend(): Promise<Backend> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-contract-'));
  const listFile = path.join(dir, 'list.sqlite');
  return {
    resultsCache: (scope) => SqliteResultsCache.open(dir, scope),
    list: async () => (await SuppressionStore.open(listFile, { create: true }))!,
    history: () => CheckHistory.open(dir),
    async tamper(sql) {
      const db = new Database(listFile);
      db.exec('DROP TRIGGER IF EXISTS audit_append_only_update; DROP TRIGGER IF EXISTS audit_append_only_delete;');
      db.exec(sql);
      db.close();
    },
    close: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

async function postgresBackend(): Promise<Backend> {
  const db = await freshDatabase();
  const home = mkdtempSync(path.join(os.tmpdir(), 'dnc-contract-home-'));
  const stores: Stores = await openStores({ url: db.url, from: '--store' }, {}, home);
  return {
    resultsCache: async (scope) => (await stores.resultsCache(scope, { create: true }))!,
    list: async () => (await stores.teamList())!,
    history: async () => (await stores.history({ create: true }))!,
    async tamper(sql) {
      // The superuser can do anything: even switch the append-only triggers off. The hash chain still tells.
      await sqlOn(
        db.url,
        `ALTER TABLE dnc.audit DISABLE TRIGGER USER; ${sql.replaceAll(' audit', ' dnc.audit').replaceAll(' suppressions', ' dnc.suppressions')}; ALTER TABLE dnc.audit ENABLE TRIGGER USER`,
      );
    },
    async close() {
      await stores.close();
      await db.drop();
      rmSync(home, { recursive: true, force: true });
    },
  };
}

const T0 = new Date('2026-11-20T10:00:00.000Z');
const actor = { who: 'alice@laptop', reason: 'asked on a call', source: 'agent 17' };

const verdict = (e164: string, checkedAt: string, result: 'callable' | 'do_not_call', correlationId: string) => ({
  e164,
  country: 'US',
  result,
  listSource: 'https://register.example/US',
  checkedAt,
  correlationId,
  body: `{"phone_number":"${e164}"}`,
});

/** A journal-like SQLite file: its verdicts and its conflicting numbers, readable by SQL and as rows. */
function journalSource(dir: string): JournalVerdictSource {
  const file = path.join(dir, `journal-${Math.random().toString(36).slice(2)}.sqlite`);
  const db = new Database(file);
  db.exec(`CREATE TABLE v (e164, country, result, list_source, checked_at, correlation_id, body);
           CREATE TABLE c (e164);
           INSERT INTO v VALUES ('+12025550101', 'US', 'callable', 'https://r/US', '2026-11-20T09:00:00.000001+00:00', 'j1', NULL),
                                ('+12025550102', 'US', 'do_not_call', 'https://r/US', '2026-11-20T09:00:00.000001+00:00', 'j2', NULL),
                                ('+12025550103', 'US', 'callable', 'https://r/US', 'not a time', 'j3', NULL);
           INSERT INTO c VALUES ('+12025550104');`);
  db.close();
  return {
    path: file,
    sql: (schema) => ({ verdicts: `SELECT * FROM ${schema}.v`, conflicting: `SELECT e164 FROM ${schema}.c` }),
    async rows() {
      const r = new Database(file, { readonly: true });
      const verdicts = (r.prepare('SELECT * FROM v').all() as Array<Record<string, string | null>>).map((x) => ({
        e164: x.e164!,
        country: x.country!,
        result: x.result as 'callable',
        listSource: x.list_source,
        checkedAt: x.checked_at!,
        correlationId: x.correlation_id!,
        body: x.body,
      }));
      const conflicting = (r.prepare('SELECT e164 FROM c').all() as Array<{ e164: string }>).map((x) => x.e164);
      r.close();
      return { verdicts, conflicting };
    },
  };
}

const BACKENDS: Array<[string, () => Promise<Backend>, boolean]> = [
  ['sqlite', sqliteBackend, true],
  ['postgres', postgresBackend, HAVE_POSTGRES],
];

postgresSkipped('the stores contract on PostgreSQL');

for (const [name, open, available] of BACKENDS) {
  describe.skipIf(!available)(`stores contract: ${name}`, () => {
    let b: Backend;
    const scratch = mkdtempSync(path.join(os.tmpdir(), 'dnc-contract-scratch-'));
    beforeAll(async () => {
      b = await open();
    });
    afterAll(async () => {
      await b?.close();
      rmSync(scratch, { recursive: true, force: true });
    });

    it('results cache: scoped by service and account, a window, newer replaces older and never the reverse', async () => {
      const a = await b.resultsCache({ service: 'https://svc.example', apiKey: 'key-one' });
      const otherKey = await b.resultsCache({ service: 'https://svc.example', apiKey: 'key-two' });
      const otherService = await b.resultsCache({ service: 'https://other.example', apiKey: 'key-one' });
      expect(await a.put([verdict('+12025550100', '2026-11-20T00:00:00.000001+00:00', 'callable', 'one')])).toBe(1);
      await a.put([verdict('+12025550100', '2026-11-10T00:00:00.000001+00:00', 'do_not_call', 'older')]);
      expect((await a.get('+12025550100', new Date('2026-11-19T00:00:00Z')))?.correlationId).toBe('one');
      expect(await a.get('+12025550100', new Date('2026-11-21T00:00:00Z'))).toBeNull();
      expect(await otherKey.get('+12025550100', new Date('2026-11-01T00:00:00Z'))).toBeNull();
      expect(await otherService.get('+12025550100', new Date('2026-11-01T00:00:00Z'))).toBeNull();
      await a.put([verdict('+12025550100', '2026-11-21T00:00:00.000001+00:00', 'do_not_call', 'two')]);
      expect(await a.get('+12025550100', new Date('2026-11-01T00:00:00Z'))).toMatchObject({
        correlationId: 'two',
        result: 'do_not_call',
        listSource: 'https://register.example/US',
        body: '{"phone_number":"+12025550100"}',
      });
      // A verdict without a readable time or a correlation id is not taken.
      expect(
        await a.put([
          verdict('+12025550199', 'yesterday', 'callable', 'x'),
          verdict('+12025550198', '2026-11-20T00:00:00Z', 'callable', ''),
        ]),
      ).toBe(0);
      expect(await a.hasVerdictsSince(new Date('2026-11-20T12:00:00Z'))).toBe(true);
      expect(await a.hasVerdictsSince(new Date('2026-11-22T00:00:00Z'))).toBe(false);
      expect(await otherKey.hasVerdictsSince(new Date('2026-01-01T00:00:00Z'))).toBe(false);
      const many = await a.getMany(['+12025550100', '+12025550199'], new Date('2026-11-01T00:00:00Z'));
      expect([...many.keys()]).toEqual(['+12025550100']);
      await a.forget(['+12025550100']);
      expect(await a.get('+12025550100', new Date('2026-01-01T00:00:00Z'))).toBeNull();
      await Promise.all([a.close(), otherKey.close(), otherService.close()]);
    });

    it("results cache: a journal's verdicts are taken in, its conflicting numbers taken out", async () => {
      const c = await b.resultsCache({ service: 'https://fill.example', apiKey: 'k' });
      await c.put([verdict('+12025550104', '2026-11-19T00:00:00.000001+00:00', 'callable', 'before')]);
      await c.fill(journalSource(scratch));
      const found = await c.getMany(['+12025550101', '+12025550102', '+12025550103', '+12025550104'], new Date(0));
      expect(Object.fromEntries([...found].map(([k, v]) => [k, v.correlationId]))).toEqual({
        '+12025550101': 'j1',
        '+12025550102': 'j2',
      });
      await c.close();
    });

    it('internal list: changes are audited once each, chained, and the state hash is that of the entries', async () => {
      const list = await b.list();
      const add = await list.suppress(
        [
          { e164: '+12025550143', country: 'US' },
          { e164: '+12025550144', country: 'US' },
          { e164: '+12025550143', country: 'US' },
        ],
        actor,
        T0,
      );
      expect(add).toEqual({ changed: 2, unchanged: 1 });
      expect(await list.suppress([{ e164: '+12025550144', country: 'US' }], actor, T0)).toEqual({
        changed: 0,
        unchanged: 1,
      });
      expect(await list.unsuppress(['+12025550144', '+12025550199'], actor, T0)).toEqual({ changed: 1, unchanged: 1 });
      const x = {
        e164: '+12025550150',
        country: 'US',
        basis: 'consent' as const,
        until: '2027-01-31T23:59:59.999Z',
        evidence: 'form 7',
      };
      expect(await list.exempt([x], actor, T0)).toEqual({ changed: 1, unchanged: 0 });
      expect(await list.exempt([x], actor, T0)).toEqual({ changed: 0, unchanged: 1 });
      expect(await list.exempt([{ ...x, until: '2027-02-28T23:59:59.999Z' }], actor, T0)).toEqual({
        changed: 1,
        unchanged: 0,
      });
      // The team store adds the database role the server authenticated (it cannot be chosen by the machine).
      expect((await list.suppression('+12025550143'))?.who).toMatch(/^alice@laptop( \[\w+\])?$/);
      expect(await list.suppression('+12025550144')).toBeNull();
      expect((await list.exemption('+12025550150'))?.until).toBe('2027-02-28T23:59:59.999Z');
      const log = await list.audit();
      expect(log.map((e) => `${e.action} ${e.e164}`)).toEqual([
        'suppress +12025550143',
        'suppress +12025550144',
        'unsuppress +12025550144',
        'exempt +12025550150',
        'exempt +12025550150',
      ]);
      // The chain recomputed apart from dnc's stores (each entry's hash over the previous one).
      let previous = '';
      for (const e of log) {
        expect(e.hash).toBe(entryHash(previous, e));
        previous = e.hash;
      }
      expect(await list.integrityProblem()).toBeNull();
      const id = await list.identity();
      const oracle = createHash('sha256')
        .update('S +12025550143\n')
        .update('E +12025550150 consent 2027-02-28T23:59:59.999Z\n')
        .digest('hex');
      expect(id).toMatchObject({
        suppressions: 1,
        exemptions: 1,
        audit_entries: 5,
        audit_head: previous,
        state_sha256: oracle,
      });
      const snap = await list.snapshot();
      expect(snap.identity).toEqual(id);
      expect(snap.suppressions.map((s) => s.e164)).toEqual(['+12025550143']);
      expect(await list.auditEntryWithHash(log[1]!.hash)).toBe(log[1]!.id);
      const standing = await list.standingAt(new Set(['+12025550144', '+12025550150']), log[1]!.id);
      expect(standing.get('+12025550144')?.suppression?.action).toBe('suppress');
      expect(standing.has('+12025550150')).toBe(false);
      expect(await list.counts()).toEqual({ suppressions: 1, exemptions: 1, audit: 5 });
      await list.close();
    });

    it('internal list: an audit entry altered or a row deleted outside dnc is found', async () => {
      const list = await b.list();
      await list.suppress([{ e164: '+12025550160', country: 'US' }], actor, T0);
      expect(await list.integrityProblem()).toBeNull();
      await b.tamper("DELETE FROM suppressions WHERE e164 = '+12025550160'");
      expect(await list.integrityProblem()).toContain(
        '+12025550160 is not on the list, but no audit entry took it off',
      );
      expect(await list.integrityProblem(['+12025550160'])).toContain('no audit entry took it off');
      await b.tamper("UPDATE audit SET who = 'mallory' WHERE e164 = '+12025550160'");
      const broken = await list.brokenAuditEntry();
      expect(broken).toBe((await list.audit('+12025550160'))[0]!.id);
      expect(await list.integrityProblem()).toBe(`audit entry ${broken} does not match the hash chain`);
      await list.close();
    });

    it('internal list: changes from two handles at once keep one chain', async () => {
      const fresh = await open();
      try {
        const [one, two] = [await fresh.list(), await fresh.list()];
        const numbers = (base: number) =>
          Array.from({ length: 50 }, (_, i) => ({
            e164: `+1202555${String(base + i).padStart(4, '0')}`,
            country: 'US',
          }));
        await Promise.all([
          one.suppress(numbers(1000), actor, T0),
          two.suppress(numbers(2000), { ...actor, who: 'bob@desk' }, T0),
        ]);
        expect(await one.brokenAuditEntry()).toBeNull();
        expect((await one.counts()).audit).toBe(100);
        await Promise.all([one.close(), two.close()]);
      } finally {
        await fresh.close();
      }
    });

    it('history: checks by correlation id and by time, scrubs newest first', async () => {
      const h = await b.history();
      const rec = (id: string, at: string): CheckRecord => ({
        correlationId: id,
        phoneNumber: '+12025550100',
        country: 'US',
        requestedAt: at,
        answeredAt: at,
        service: 'https://svc.example',
        httpStatus: 200,
        kind: 'succeeded',
        credits: 2,
        body: '{}',
        webhookUrl: null,
      });
      const now = new Date('2026-11-20T00:00:00Z');
      await h.record(rec('a', '2026-11-19T00:00:00.000Z'), now);
      await h.record(rec('b', '2026-11-20T00:00:00.000Z'), now);
      expect(await h.find('a')).toEqual([rec('a', '2026-11-19T00:00:00.000Z')]);
      expect((await h.findNumber('+12025550100')).map((r) => r.correlationId)).toEqual(['a', 'b']);
      expect(await h.findNumber('+12025550199')).toEqual([]);
      expect(
        (await h.between('https://svc.example', '2026-11-19T12:00:00.000Z', '2026-11-21T00:00:00.000Z')).map(
          (r) => r.correlationId,
        ),
      ).toEqual(['b']);
      const scrub = (output: string) => ({
        finishedAt: '2026-11-20T10:00:00.000Z',
        operator: 'alice@laptop',
        seller: 'ACME',
        san: null,
        campaign: 'winter',
        output,
        host: 'laptop',
        rows: 10,
        callable: 7,
        credits: 9,
        service: 'https://svc.example',
        listId: null,
        listHead: null,
      });
      await h.recordScrub(scrub('/a.csv'));
      await h.recordScrub(scrub('/b.csv'));
      expect((await h.scrubs(10)).map((s) => s.output)).toEqual(['/b.csv', '/a.csv']);
      expect((await h.scrubs(1))[0]).toEqual(scrub('/b.csv'));
      await h.close();
    });
  });
}

/** (Used by the tamper cases: the audit entry type stays in use for readers of this file.) */
export type { AuditEntry };
