// The local SQLite stores (results cache, history, anchors, the internal list) have versioned migrations, as the team
// store has: a file made by an older dnc (no version recorded: the schema as it was written before versions were
// kept, its SQL frozen below) opens and is migrated once, its rows kept; a file a newer dnc wrote is refused with
// E_STORE_TOO_NEW and left as it is.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Anchors, anchorsPath, ANCHORS_SCHEMA } from '../../src/stores/anchors.js';
import { CheckHistory, HISTORY_SCHEMA, historyPath } from '../../src/stores/history.js';
import { latestVersion, type LocalSchema } from '../../src/stores/local-store.js';
import { RESULTS_CACHE_SCHEMA, resultsCachePath, SqliteResultsCache } from '../../src/stores/results-cache.js';
import { LIST_SCHEMA, SuppressionStore } from '../../src/stores/suppression-store.js';
import { dncErrorOf, REPO_ROOT } from '../helpers/cli.js';
import { runNodeScript } from '../helpers/node-script.js';
import { dnc, world, type World } from '../helpers/world.js';

// The schemas as dnc wrote them before versions were kept (user_version 0), copied from the code of that time.
const OLD_CACHE = `
CREATE TABLE IF NOT EXISTS cache_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS verdicts (
  service TEXT NOT NULL, account TEXT NOT NULL, e164 TEXT NOT NULL, country TEXT NOT NULL,
  result TEXT NOT NULL CHECK (result IN ('callable', 'do_not_call')), list_source TEXT, checked_at TEXT NOT NULL,
  checked_ms INTEGER NOT NULL, correlation_id TEXT NOT NULL, body TEXT, PRIMARY KEY (service, account, e164)
);
CREATE INDEX IF NOT EXISTS verdicts_by_time ON verdicts (service, account, checked_ms);`;
const OLD_HISTORY = `
CREATE TABLE IF NOT EXISTS checks (
  id INTEGER PRIMARY KEY, correlation_id TEXT NOT NULL, phone_number TEXT NOT NULL, country TEXT,
  requested_at TEXT NOT NULL, answered_at TEXT NOT NULL, service TEXT NOT NULL, http_status INTEGER,
  kind TEXT NOT NULL, credits INTEGER NOT NULL, body TEXT NOT NULL, webhook_url TEXT
);
CREATE INDEX IF NOT EXISTS checks_correlation ON checks (correlation_id);
CREATE TABLE IF NOT EXISTS scrubs (
  id INTEGER PRIMARY KEY, finished_at TEXT NOT NULL, operator TEXT NOT NULL, seller TEXT, san TEXT, campaign TEXT,
  output TEXT NOT NULL, host TEXT NOT NULL, rows INTEGER NOT NULL, callable INTEGER NOT NULL, credits INTEGER NOT NULL,
  service TEXT NOT NULL, list_id TEXT, list_head TEXT
);`;
const OLD_ANCHORS = `
CREATE TABLE IF NOT EXISTS outputs (
  output TEXT PRIMARY KEY, sha256 TEXT NOT NULL, bytes INTEGER NOT NULL, manifest_sha256 TEXT,
    journal TEXT NOT NULL, written_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS lists (
  list_id TEXT PRIMARY KEY, path TEXT NOT NULL, head TEXT, entries INTEGER NOT NULL, at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS lists_by_path ON lists (path);`;
/** The list's audit table before `restore` existed (`actions`), or as the last unversioned dnc made it. */
const oldList = (actions: string) => `
CREATE TABLE IF NOT EXISTS list_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS suppressions (
  e164 TEXT PRIMARY KEY, country TEXT, added_at TEXT NOT NULL, who TEXT NOT NULL, reason TEXT, source TEXT
);
CREATE TABLE IF NOT EXISTS exemptions (
  e164 TEXT PRIMARY KEY, country TEXT,
  basis TEXT NOT NULL CHECK (basis IN ('consent', 'ebr-purchase', 'ebr-inquiry')),
  until TEXT NOT NULL, evidence TEXT, added_at TEXT NOT NULL, who TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS audit (
  id INTEGER PRIMARY KEY, at TEXT NOT NULL, action TEXT NOT NULL CHECK (action IN (${actions})),
  e164 TEXT NOT NULL, who TEXT NOT NULL, reason TEXT, source TEXT, basis TEXT, until TEXT, evidence TEXT,
  hash TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS audit_append_only_update BEFORE UPDATE ON audit BEGIN SELECT RAISE(ABORT,
  'the audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_append_only_delete BEFORE DELETE ON audit BEGIN SELECT RAISE(ABORT,
  'the audit log is append-only'); END;`;
const BEFORE_RESTORE = "'suppress', 'unsuppress', 'exempt', 'unexempt'";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-local-migrations-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A file written with `sql` at schema version `version` (0: made before versions were kept). */
function makeFile(file: string, sql: string, version = 0, wal = true): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  if (wal) db.pragma('journal_mode = WAL');
  db.exec(sql);
  db.pragma(`user_version = ${version}`);
  db.close();
}

/** The schema version the file records, read by another connection. */
function versionOf(file: string): number {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return db.pragma('user_version', { simple: true }) as number;
  } finally {
    db.close();
  }
}

/** Every row of every table, to see that a refused file was left exactly as it was. */
function dump(file: string): string {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const tables = db.prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'").all();
    return JSON.stringify(tables.map((t) => [t.name, db.prepare(`SELECT * FROM "${t.name}"`).all()]));
  } finally {
    db.close();
  }
}

const SCHEMAS: Array<[string, LocalSchema]> = [
  ['results cache', RESULTS_CACHE_SCHEMA],
  ['history', HISTORY_SCHEMA],
  ['anchors', ANCHORS_SCHEMA],
  ['suppression list', LIST_SCHEMA],
];

describe('the local stores: versioned migrations', () => {
  it.each(SCHEMAS)('the %s numbers its migrations 1, 2, … in order, each named', (_name, schema) => {
    expect(schema.migrations.map((m) => m.version)).toEqual(schema.migrations.map((_m, i) => i + 1));
    for (const m of schema.migrations) expect(m.name.length).toBeGreaterThan(0);
  });

  it('a results cache made by an older dnc opens, is migrated once, and keeps its verdicts and salt', async () => {
    const file = resultsCachePath(dir);
    makeFile(file, OLD_CACHE);
    const old = new Database(file);
    old.prepare("INSERT INTO cache_meta (key, value) VALUES ('salt', 'old-salt')").run();
    old.close();
    const first = await SqliteResultsCache.open(dir, { service: 'https://s.example', apiKey: 'k' });
    const account = first.accountId;
    await first.put([
      {
        e164: '+12025550100',
        country: 'US',
        result: 'callable',
        listSource: null,
        checkedAt: '2026-11-20T10:00:00Z',
        correlationId: 'c1',
        body: null,
      },
    ]);
    await first.close();
    expect(versionOf(file)).toBe(latestVersion(RESULTS_CACHE_SCHEMA));
    // The salt was the file's: the same key is the same account, and its verdict is found again.
    const again = await SqliteResultsCache.open(dir, { service: 'https://s.example', apiKey: 'k' });
    expect(again.accountId).toBe(account);
    expect((await again.get('+12025550100', new Date(0)))?.correlationId).toBe('c1');
    await again.close();
  });

  it('a history made by an older dnc opens with its checks and scrubs, migrated', async () => {
    const file = historyPath(dir);
    makeFile(file, OLD_HISTORY);
    const old = new Database(file);
    old
      .prepare(
        'INSERT INTO checks (correlation_id, phone_number, country, requested_at, answered_at, service, ' +
          "http_status, kind, credits, body) VALUES ('c0', '+12025550100', 'US', '2026-11-20T10:00:00.000Z', " +
          "'2026-11-20T10:00:01.000Z', 'https://s.example', 200, 'succeeded', 1, '{}')",
      )
      .run();
    old.close();
    const history = await CheckHistory.open(dir);
    expect((await history.find('c0')).map((c) => c.phoneNumber)).toEqual(['+12025550100']);
    await history.close();
    expect(versionOf(file)).toBe(latestVersion(HISTORY_SCHEMA));
  });

  it('an anchors file made by an older dnc opens with its anchors, migrated', async () => {
    const file = anchorsPath(dir);
    makeFile(file, OLD_ANCHORS);
    const old = new Database(file);
    old.prepare("INSERT INTO lists VALUES ('id-1', '/lists/a.sqlite', 'head', 3, '2026-11-20T10:00:00Z')").run();
    old.close();
    const anchors = await Anchors.open(dir);
    expect(anchors.list('id-1', '/elsewhere')?.head).toBe('head');
    anchors.close();
    expect(versionOf(file)).toBe(latestVersion(ANCHORS_SCHEMA));
  });

  it('a list made before `restore` existed is migrated to record one, its audit chain whole', async () => {
    const file = path.join(dir, 'list.sqlite');
    // Entries written by the list itself, then the file taken back to the schema of that time (version 0).
    const made = (await SuppressionStore.open(file, { create: true }))!;
    await made.suppress([{ e164: '+12025550143', country: 'US' }], { who: 'alice' }, new Date('2026-11-20T10:00Z'));
    await made.unsuppress(['+12025550143'], { who: 'bob' }, new Date('2026-11-21T10:00Z'));
    await made.close();
    const entries = dumpAudit(file);
    rmSync(file);
    makeFile(file, oldList(BEFORE_RESTORE), 0, false);
    putAudit(file, entries);
    expect(() => insertRestore(file)).toThrow(/CHECK constraint/);

    const list = (await SuppressionStore.open(file, { create: false }))!;
    expect(versionOf(file)).toBe(latestVersion(LIST_SCHEMA));
    expect(await list.brokenAuditEntry()).toBeNull();
    expect((await list.audit()).map((e) => e.action)).toEqual(['suppress', 'unsuppress']);
    await list.recordRestore({ who: 'carol' }, new Date('2026-11-22T10:00Z'), 'old-head');
    expect((await list.audit()).map((e) => e.action)).toEqual(['suppress', 'unsuppress', 'restore']);
    expect(await list.brokenAuditEntry()).toBeNull();
    await list.close();
    // Still append-only after the rebuild.
    const db = new Database(file);
    expect(() => db.prepare('DELETE FROM audit').run()).toThrow(/append-only/);
    db.close();
  });

  it('a list made by the last unversioned dnc (restore allowed already) is migrated without a rebuild', async () => {
    const file = path.join(dir, 'list.sqlite');
    makeFile(file, oldList(`${BEFORE_RESTORE}, 'restore'`), 0, false);
    const list = (await SuppressionStore.open(file, { create: false }))!;
    await list.recordRestore({ who: 'carol' }, new Date('2026-11-22T10:00Z'), 'old-head');
    expect((await list.counts()).audit).toBe(1);
    await list.close();
    expect(versionOf(file)).toBe(latestVersion(LIST_SCHEMA));
  });

  it('three processes opening one old list at the same moment apply each migration once', async () => {
    // The list's version 2 rebuilds its audit table: done twice, it would fail or copy entries twice.
    const compiled = pathToFileURL(path.join(REPO_ROOT, 'dist', 'stores', 'suppression-store.js')).href;
    for (let round = 0; round < 4; round++) {
      const file = path.join(dir, `race-${round}.sqlite`);
      const made = (await SuppressionStore.open(file, { create: true }))!;
      await made.suppress([{ e164: '+12025550143', country: 'US' }], { who: 'alice' }, new Date('2026-11-20T10:00Z'));
      await made.close();
      const entries = dumpAudit(file);
      rmSync(file);
      makeFile(file, oldList(BEFORE_RESTORE), 0, false);
      putAudit(file, entries);
      const at = Date.now() + 400;
      const script =
        `const { SuppressionStore } = await import(${JSON.stringify(compiled)}); while (Date.now() < ${at}) {}\n` +
        `try { await (await SuppressionStore.open(${JSON.stringify(file)}, { create: false })).close(); }\n` +
        'catch (e) { process.stdout.write(String(e.message)); process.exit(1); }';
      const opens = await Promise.all([0, 1, 2].map(() => runNodeScript(script)));
      expect(opens, `round ${round}`).toEqual([
        { code: 0, out: '' },
        { code: 0, out: '' },
        { code: 0, out: '' },
      ]);
      expect(versionOf(file)).toBe(latestVersion(LIST_SCHEMA));
      expect(dumpAudit(file)).toEqual(entries);
      const list = (await SuppressionStore.open(file, { create: false }))!;
      expect(await list.brokenAuditEntry()).toBeNull();
      await list.close();
    }
  });
});

/** Writes audit entries into a list file as they were (ids and hashes kept). */
function putAudit(file: string, entries: ReadonlyArray<Record<string, unknown>>): void {
  const db = new Database(file);
  try {
    const put = db.prepare(
      'INSERT INTO audit VALUES (@id, @at, @action, @e164, @who, @reason, @source, @basis, @until, @evidence, @hash)',
    );
    for (const e of entries) put.run(e);
  } finally {
    db.close();
  }
}

function dumpAudit(file: string): Array<Record<string, unknown>> {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare<[], Record<string, unknown>>('SELECT * FROM audit ORDER BY id').all();
  } finally {
    db.close();
  }
}

/** An audit entry of a restore, written straight into the file (what the old CHECK refuses). */
function insertRestore(file: string): void {
  const db = new Database(file);
  try {
    db.prepare("INSERT INTO audit (at, action, e164, who, hash) VALUES ('t', 'restore', '', 'x', 'h')").run();
  } finally {
    db.close();
  }
}

describe('the local stores: a file a newer dnc wrote', () => {
  const newer = (schema: LocalSchema) => latestVersion(schema) + 1;

  it.each([
    ['results cache', RESULTS_CACHE_SCHEMA, OLD_CACHE, (d: string) => resultsCachePath(d)],
    ['history', HISTORY_SCHEMA, OLD_HISTORY, (d: string) => historyPath(d)],
    ['anchors', ANCHORS_SCHEMA, OLD_ANCHORS, (d: string) => anchorsPath(d)],
  ] as const)('the %s is refused (E_STORE_TOO_NEW, exit 2) and left as it is', async (_n, schema, sql, fileOf) => {
    const file = fileOf(dir);
    makeFile(file, sql, newer(schema));
    const before = dump(file);
    const open = {
      [RESULTS_CACHE_SCHEMA.what]: () => SqliteResultsCache.open(dir, { service: 'https://s.example', apiKey: 'k' }),
      [HISTORY_SCHEMA.what]: () => CheckHistory.open(dir),
      [ANCHORS_SCHEMA.what]: () => Anchors.open(dir),
    }[schema.what]!;
    const err = await dncErrorOf(open());
    expect(err).toMatchObject({ code: 'E_STORE_TOO_NEW', exitCode: 2 });
    expect(err.message).toContain(`${schema.what} ${file} is at schema version ${newer(schema)}`);
    expect(versionOf(file)).toBe(newer(schema));
    expect(dump(file)).toBe(before);
  });

  it('a results cache only read (a dry run) is refused too', async () => {
    makeFile(resultsCachePath(dir), OLD_CACHE, newer(RESULTS_CACHE_SCHEMA));
    const err = await dncErrorOf(SqliteResultsCache.openExisting(dir, { service: 'https://s.example', apiKey: 'k' }));
    expect(err.code).toBe('E_STORE_TOO_NEW');
  });

  it('the internal list is refused by the CLI: dnc suppress count exits 2, the file unchanged', async () => {
    const w: World = await world();
    try {
      const file = path.join(w.stateDir, 'do-not-call.sqlite');
      makeFile(file, oldList(`${BEFORE_RESTORE}, 'restore'`), newer(LIST_SCHEMA), false);
      const bytes = readFileSync(file);
      const r = await dnc(['suppress', 'count'], w.env);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(`dnc: error [E_STORE_TOO_NEW]: the suppression list ${file} is at schema version`);
      expect(r.stderr).toContain('hint: upgrade dnc');
      expect(readFileSync(file).equals(bytes)).toBe(true);
    } finally {
      await w.cleanup();
    }
  });
});

describe('the local JSON files (costs, journals registry): one a newer dnc wrote', () => {
  it('is read as empty and never overwritten: this dnc does not know its shape', async () => {
    const { costCachePath, readCosts, writeCosts } = await import('../../src/stores/cost-cache.js');
    const { registerJournal, registeredJournals, registryPath } = await import('../../src/stores/registry.js');
    const costs = costCachePath(dir);
    const registry = registryPath(dir);
    writeFileSync(costs, JSON.stringify({ version: 2, by: { 'https://s.example': [{ US: 1 }] } }));
    writeFileSync(registry, JSON.stringify({ version: 2, journals: { j: 'x' } }));
    const before = [readFileSync(costs, 'utf8'), readFileSync(registry, 'utf8')];
    expect(await readCosts(dir, 'https://s.example')).toEqual(new Map());
    expect(await writeCosts(dir, 'https://s.example', new Map([['US', 1]]), new Date())).toBe(false);
    expect(await registeredJournals(dir)).toEqual([]);
    expect(await registerJournal(dir, path.join(dir, 'a.journal.sqlite'), 'a.csv', new Date())).toBe(false);
    expect([readFileSync(costs, 'utf8'), readFileSync(registry, 'utf8')]).toEqual(before);
    // A file of this dnc's version is written as ever.
    rmSync(costs);
    expect(await writeCosts(dir, 'https://s.example', new Map([['US', 1]]), new Date())).toBe(true);
    expect(await readCosts(dir, 'https://s.example')).toEqual(new Map([['US', 1]]));
  });
});
