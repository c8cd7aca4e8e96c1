// The local results cache (--reuse-within): final verdicts by service and number, so a number checked lately is not
// paid for again.
import { existsSync } from 'node:fs';
import path from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { formatDuration, parseServiceTime } from '../time.js';
import { openLocalStore } from './local-store.js';
import type { JournalVerdict } from '../journal/views.js';

/**
 * A verdict that may be reused: only callable or do_not_call answers of the service, never failures (as a journal reads
 * them).
 */
export type CachedVerdict = JournalVerdict;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS results (
  service TEXT NOT NULL,
  e164 TEXT NOT NULL,
  country TEXT NOT NULL,
  result TEXT NOT NULL CHECK (result IN ('callable', 'do_not_call')),
  list_source TEXT,
  checked_at TEXT NOT NULL,
  checked_ms INTEGER NOT NULL,
  correlation_id TEXT NOT NULL,
  body TEXT,
  PRIMARY KEY (service, e164)
);
CREATE INDEX IF NOT EXISTS results_by_time ON results (service, checked_ms);
`;

export function resultsCachePath(cacheDir: string): string {
  return path.join(cacheDir, 'results.sqlite');
}

/** The dnc_error text of a reused row (dnc_credits is 0 and dnc_error_code empty: the verdict is the service's). */
export function reusedNote(v: Pick<CachedVerdict, 'checkedAt'>, windowMs: number): string {
  return (
    `reused: checked ${v.checkedAt} by an earlier lookup (--reuse-within ${formatDuration(windowMs)}); no ` +
    `lookup sent, no credits`
  );
}

/**
 * The SQL of a journal's verdicts (its lookups' callable/do_not_call answers: e164, country, result, list_source,
 * checked_at, correlation_id, body) and of its numbers whose pushes conflicted (e164), over the journal attached
 * to `db` as `schema`. Given by the batch (src/batch/journal.ts), which knows the journal's tables.
 */
export type JournalVerdictsSql = (
  db: BetterSqlite3.Database,
  schema: string,
) => { verdicts: string; conflicting: string };

export class ResultsCache {
  private readonly getStmt;
  private readonly putStmt;

  private constructor(private readonly db: BetterSqlite3.Database) {
    this.getStmt = db.prepare<
      [string, string, number],
      Omit<CachedVerdict, 'listSource' | 'checkedAt' | 'correlationId'> & {
        list_source: string | null;
        checked_at: string;
        correlation_id: string;
      }
    >(
      'SELECT e164, country, result, list_source, checked_at, correlation_id, body FROM results WHERE service = ' +
        '? AND e164 = ? AND checked_ms >= ?',
    );
    this.putStmt = db.prepare(
      `INSERT INTO results (service, e164, country, result, list_source, checked_at, checked_ms, correlation_id, body)
       VALUES (@service, @e164, @country, @result, @listSource, @checkedAt, @checkedMs, @correlationId, @body)
       ON CONFLICT (service, e164) DO UPDATE SET country = excluded.country, result = excluded.result,
         list_source = excluded.list_source,
         checked_at = excluded.checked_at, checked_ms = excluded.checked_ms,
           correlation_id = excluded.correlation_id, body = excluded.body
       WHERE excluded.checked_ms >= results.checked_ms`,
    );
  }

  static async open(cacheDir: string): Promise<ResultsCache> {
    return new ResultsCache(await openLocalStore(cacheDir, resultsCachePath(cacheDir), SCHEMA));
  }

  /** The cache as it is, to read: null when there is none (nothing is created, as a dry run must not). */
  static async openExisting(cacheDir: string): Promise<ResultsCache | null> {
    const file = resultsCachePath(cacheDir);
    if (!existsSync(file)) return null;
    const { default: Database } = await import('better-sqlite3');
    return new ResultsCache(new Database(file, { fileMustExist: true, timeout: 5_000 }));
  }

  /** Whether any verdict of `service` was checked at or after `notBefore` (one indexed probe). */
  hasVerdictsSince(service: string, notBefore: Date): boolean {
    const probe = this.db.prepare('SELECT 1 FROM results WHERE service = ? AND checked_ms >= ? LIMIT 1');
    return probe.get(service, notBefore.getTime()) !== undefined;
  }

  /** The verdict of `e164` from `service` checked at or after `notBefore`, if any. */
  get(service: string, e164: string, notBefore: Date): CachedVerdict | null {
    const r = this.getStmt.get(service, e164, notBefore.getTime());
    if (!r) return null;
    return {
      e164: r.e164,
      country: r.country,
      result: r.result,
      listSource: r.list_source,
      checkedAt: r.checked_at,
      correlationId: r.correlation_id,
      body: r.body,
    };
  }

  /** Stores verdicts (a newer verdict of a number replaces an older one; failures are never given here). */
  put(service: string, verdicts: Iterable<CachedVerdict>): number {
    let n = 0;
    this.db.transaction(() => {
      for (const v of verdicts) {
        const checkedMs = parseServiceTime(v.checkedAt);
        if (!Number.isFinite(checkedMs) || !v.correlationId) continue;
        this.putStmt.run({ service, ...v, checkedMs });
        n++;
      }
    })();
    return n;
  }

  /**
   * Stores a journal's verdicts (as put() would: a newer verdict of a number replaces an older one) and drops
   * those of its numbers whose pushes conflicted (the verdict may be forged), in one transaction. The journal is
   * attached and copied by SQL: no row is built in JavaScript (reading each and putting it cost ≈ 10 µs a lookup).
   */
  fill(service: string, journalPath: string, journalSql: JournalVerdictsSql): void {
    // An absolute path, never read as a `file:` URI. The journal is only read from (its tables are the SELECTs').
    this.db.prepare('ATTACH DATABASE ? AS journal').run(path.resolve(journalPath));
    try {
      // parseServiceTime, the same reading put() makes (microseconds cut to milliseconds); null when unreadable.
      this.db.function('dnc_service_ms', { deterministic: true }, (text: unknown) => {
        const ms = parseServiceTime(typeof text === 'string' ? text : null);
        return Number.isFinite(ms) ? ms : null;
      });
      const { verdicts, conflicting } = journalSql(this.db, 'journal');
      this.db.transaction(() => {
        this.db
          .prepare(
            `INSERT INTO results (service, e164, country, result, list_source, checked_at, checked_ms,
              correlation_id, body)
             SELECT ?, v.e164, v.country, v.result, v.list_source, v.checked_at, v.checked_ms, v.correlation_id, v.body
               FROM (SELECT *, dnc_service_ms(checked_at) AS checked_ms FROM (${verdicts})) v
              WHERE v.checked_ms IS NOT NULL AND v.correlation_id != ''
             ON CONFLICT (service, e164) DO UPDATE SET country = excluded.country, result = excluded.result,
               list_source = excluded.list_source,
               checked_at = excluded.checked_at, checked_ms = excluded.checked_ms,
                 correlation_id = excluded.correlation_id, body = excluded.body
             WHERE excluded.checked_ms >= results.checked_ms`,
          )
          .run(service);
        this.db.prepare(`DELETE FROM results WHERE service = ? AND e164 IN (${conflicting})`).run(service);
      })();
    } finally {
      this.db.exec('DETACH DATABASE journal');
    }
  }

  /** Drops the cached verdicts of these numbers (their pushes conflicted: the verdict may be forged). */
  forget(service: string, e164s: Iterable<string>): void {
    const del = this.db.prepare<[string, string]>('DELETE FROM results WHERE service = ? AND e164 = ?');
    this.db.transaction(() => {
      for (const e164 of e164s) del.run(service, e164);
    })();
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
