// The local results cache (--reuse-within): final verdicts by service, account and number, so a number checked
// lately is not paid for again.
import { existsSync } from 'node:fs';
import path from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { formatDuration, parseServiceTime } from '../time.js';
import { accountOf, newSalt } from './account.js';
import {
  scopeAccount,
  writtenBy,
  type CachedVerdict,
  type JournalVerdictSource,
  type ResultsCache,
  type StoreScope,
} from './interfaces.js';
import { openLocalStore, refuseNewer, type LocalSchema } from './local-store.js';

export type { CachedVerdict } from './interfaces.js';

/** The results cache's schema, version by version (src/stores/local-store.ts). */
export const RESULTS_CACHE_SCHEMA: LocalSchema = {
  what: 'the results cache',
  migrations: [
    {
      version: 1,
      // Verdicts of the first cache (before they were scoped by account) are dropped: whose key paid for them is not
      // known, and a cache can always start empty.
      name: 'verdicts by service, account and number; the salt of accounts',
      up: `
DROP TABLE IF EXISTS results;
CREATE TABLE IF NOT EXISTS cache_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS verdicts (
  service TEXT NOT NULL,
  account TEXT NOT NULL,
  e164 TEXT NOT NULL,
  country TEXT NOT NULL,
  result TEXT NOT NULL CHECK (result IN ('callable', 'do_not_call')),
  list_source TEXT,
  checked_at TEXT NOT NULL,
  checked_ms INTEGER NOT NULL,
  correlation_id TEXT NOT NULL,
  body TEXT,
  PRIMARY KEY (service, account, e164)
);
CREATE INDEX IF NOT EXISTS verdicts_by_time ON verdicts (service, account, checked_ms);
`,
    },
  ],
};

export function resultsCachePath(cacheDir: string): string {
  return path.join(cacheDir, 'results.sqlite');
}

/** The dnc_error text of a reused row (dnc_credits is 0 and dnc_error_code empty: the verdict is the service's). */
export function reusedNote(v: Pick<CachedVerdict, 'checkedAt' | 'who'>, windowMs: number): string {
  return (
    `reused: checked ${v.checkedAt} by an earlier lookup${writtenBy(v)} ` +
    `(--reuse-within ${formatDuration(windowMs)}); no lookup sent, no credits`
  );
}

const UPSERT = `ON CONFLICT (service, account, e164) DO UPDATE SET country = excluded.country,
    result = excluded.result, list_source = excluded.list_source, checked_at = excluded.checked_at,
    checked_ms = excluded.checked_ms, correlation_id = excluded.correlation_id, body = excluded.body
  WHERE excluded.checked_ms >= verdicts.checked_ms`;

/** A verdict as a table (a cache's, a journal's) holds it. */
export type VerdictRow = Omit<CachedVerdict, 'listSource' | 'checkedAt' | 'correlationId'> & {
  list_source: string | null;
  checked_at: string;
  correlation_id: string;
};

export const verdictFromRow = (r: VerdictRow): CachedVerdict => ({
  e164: r.e164,
  country: r.country,
  result: r.result,
  listSource: r.list_source,
  checkedAt: r.checked_at,
  correlationId: r.correlation_id,
  body: r.body,
});

/** The local store's results cache: one SQLite file in the cache folder, scoped when opened. */
export class SqliteResultsCache implements ResultsCache {
  private readonly getStmt;
  private readonly putStmt;

  private constructor(
    private readonly db: BetterSqlite3.Database,
    private readonly service: string,
    private readonly account: string,
  ) {
    this.getStmt = db.prepare<[string, string, string, number], VerdictRow>(
      'SELECT e164, country, result, list_source, checked_at, correlation_id, body FROM verdicts WHERE service = ' +
        '? AND account = ? AND e164 = ? AND checked_ms >= ?',
    );
    this.putStmt = db.prepare(
      `INSERT INTO verdicts (service, account, e164, country, result, list_source, checked_at, checked_ms,
        correlation_id, body)
       VALUES (@service, @account, @e164, @country, @result, @listSource, @checkedAt, @checkedMs, @correlationId, @body)
       ${UPSERT}`,
    );
  }

  /** The account a key stands for in this cache: a salted HMAC (the salt made once, kept in the file). */
  private static scoped(db: BetterSqlite3.Database, scope: StoreScope): SqliteResultsCache {
    const read = () =>
      db.prepare<[], { value: string }>("SELECT value FROM cache_meta WHERE key = 'salt'").get()?.value ?? null;
    let salt = read();
    if (salt === null && !db.readonly) {
      db.prepare("INSERT OR IGNORE INTO cache_meta (key, value) VALUES ('salt', ?)").run(newSalt());
      salt = read();
    }
    return new SqliteResultsCache(db, scope.service, scopeAccount(scope, salt ?? '', db.name, accountOf));
  }

  static async open(cacheDir: string, scope: StoreScope): Promise<SqliteResultsCache> {
    return SqliteResultsCache.scoped(
      await openLocalStore(cacheDir, resultsCachePath(cacheDir), RESULTS_CACHE_SCHEMA),
      scope,
    );
  }

  /** The cache as it is, to read: null when there is none (nothing is created, as a dry run must not). */
  static async openExisting(cacheDir: string, scope: StoreScope): Promise<SqliteResultsCache | null> {
    const file = resultsCachePath(cacheDir);
    if (!existsSync(file)) return null;
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(file, { fileMustExist: true, timeout: 5_000, readonly: true });
    try {
      // Read as it is (a file of an older dnc is migrated by the next run that writes it), unless a newer dnc wrote it.
      refuseNewer(db, RESULTS_CACHE_SCHEMA, file);
    } catch (err) {
      db.close();
      throw err;
    }
    const current = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'verdicts'").get();
    if (!current) {
      db.close();
      return null;
    }
    return SqliteResultsCache.scoped(db, scope);
  }

  async hasVerdictsSince(notBefore: Date): Promise<boolean> {
    const probe = this.db.prepare(
      'SELECT 1 FROM verdicts WHERE service = ? AND account = ? AND checked_ms >= ? LIMIT 1',
    );
    return probe.get(this.service, this.account, notBefore.getTime()) !== undefined;
  }

  async get(e164: string, notBefore: Date): Promise<CachedVerdict | null> {
    return this.getNow(e164, notBefore);
  }

  private getNow(e164: string, notBefore: Date): CachedVerdict | null {
    const r = this.getStmt.get(this.service, this.account, e164, notBefore.getTime());
    return r ? verdictFromRow(r) : null;
  }

  async getMany(e164s: readonly string[], notBefore: Date): Promise<Map<string, CachedVerdict>> {
    const out = new Map<string, CachedVerdict>();
    for (const e164 of e164s) {
      const v = this.getNow(e164, notBefore);
      if (v) out.set(e164, v);
    }
    return out;
  }

  async put(verdicts: readonly CachedVerdict[]): Promise<number> {
    let n = 0;
    this.db.transaction(() => {
      for (const v of verdicts) {
        const checkedMs = parseServiceTime(v.checkedAt);
        if (!Number.isFinite(checkedMs) || !v.correlationId) continue;
        this.putStmt.run({ service: this.service, account: this.account, ...v, checkedMs });
        n++;
      }
    })();
    return n;
  }

  /**
   * The journal is attached and copied by SQL: no row is built in JavaScript (reading each and putting it cost
   * ≈ 10 µs a lookup).
   */
  async fill(source: JournalVerdictSource): Promise<void> {
    // An absolute path, never read as a `file:` URI. The journal is only read from (its tables are the SELECTs').
    this.db.prepare('ATTACH DATABASE ? AS journal').run(path.resolve(source.path));
    try {
      // parseServiceTime, the same reading put() makes (microseconds cut to milliseconds); null when unreadable.
      this.db.function('dnc_service_ms', { deterministic: true }, (text: unknown) => {
        const ms = parseServiceTime(typeof text === 'string' ? text : null);
        return Number.isFinite(ms) ? ms : null;
      });
      const columnsOf = (table: string) =>
        this.db
          .prepare<[], { name: string }>(`PRAGMA journal.table_info(${table})`)
          .all()
          .map((c) => c.name);
      const { verdicts, conflicting } = source.sql('journal', columnsOf);
      this.db.transaction(() => {
        this.db
          .prepare(
            `INSERT INTO verdicts (service, account, e164, country, result, list_source, checked_at, checked_ms,
              correlation_id, body)
             SELECT ?, ?, v.e164, v.country, v.result, v.list_source, v.checked_at, v.checked_ms, v.correlation_id,
               v.body
               FROM (SELECT *, dnc_service_ms(checked_at) AS checked_ms FROM (${verdicts})) v
              WHERE v.checked_ms IS NOT NULL AND v.correlation_id != ''
             ${UPSERT}`,
          )
          .run(this.service, this.account);
        this.db
          .prepare(`DELETE FROM verdicts WHERE service = ? AND account = ? AND e164 IN (${conflicting})`)
          .run(this.service, this.account);
      })();
    } finally {
      this.db.exec('DETACH DATABASE journal');
    }
  }

  async forget(e164s: readonly string[]): Promise<void> {
    const del = this.db.prepare<[string, string, string]>(
      'DELETE FROM verdicts WHERE service = ? AND account = ? AND e164 = ?',
    );
    this.db.transaction(() => {
      for (const e164 of e164s) del.run(this.service, this.account, e164);
    })();
  }

  /** The account this cache's rows of the scope are kept under (recorded in a batch's journal for dnc listen). */
  get accountId(): string {
    return this.account;
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
