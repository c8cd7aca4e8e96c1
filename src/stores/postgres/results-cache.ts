// The team's results cache in PostgreSQL: verdicts by service, account and number, shared by every member.
import { parseServiceTime } from '../../time.js';
import type { CachedVerdict, JournalVerdictSource, ResultsCache } from '../interfaces.js';
import { verdictFromRow, type VerdictRow } from '../results-cache.js';
import { SCHEMA } from './migrations.js';
import type { StorePool } from './pool.js';

/** Rows per statement: arrays of this many values stay well under a statement's limits. */
const CHUNK = 5_000;

/**
 * Verdicts given as parallel arrays ($3 …), added through the owner's function (stamped with the caller's role and the
 * server's time): a number's verdict is its latest checked, an older one stays as it was written.
 */
export const PUT_VERDICTS = `SELECT ${SCHEMA}.put_verdicts($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`;

/** Verdicts of numbers no longer to be reused (their pushes conflicted): a row after the latest says so. */
const WITHDRAW = `SELECT ${SCHEMA}.withdraw_verdicts($1, $2, $3)`;

/** The latest verdict of each number ($3) checked at or after $4, with the role that wrote it. */
const LATEST = `
SELECT v.* FROM (
  SELECT DISTINCT ON (e164) e164, country, result, list_source, checked_at, checked_ms, correlation_id, body, who
    FROM ${SCHEMA}.verdicts WHERE service = $1 AND account = $2 AND e164 = ANY($3::text[])
   ORDER BY e164, checked_ms DESC, id DESC) v
 WHERE v.result <> 'withdrawn' AND v.checked_ms >= $4`;

/**
 * The verdicts as PUT_VERDICTS takes them, sorted by number (those without a readable time or a correlation id are
 * left out).
 */
export function verdictArrays(verdicts: readonly CachedVerdict[]): unknown[][] {
  const cols: unknown[][] = [[], [], [], [], [], [], [], []];
  // In key order: two members writing overlapping verdicts lock the rows in one order, and cannot deadlock.
  const sorted = [...verdicts].sort((a, b) => (a.e164 < b.e164 ? -1 : a.e164 > b.e164 ? 1 : 0));
  for (const v of sorted) {
    const ms = parseServiceTime(v.checkedAt);
    if (!Number.isFinite(ms) || !v.correlationId) continue;
    const values = [v.e164, v.country, v.result, v.listSource, v.checkedAt, ms, v.correlationId, v.body];
    values.forEach((x, i) => cols[i]!.push(x));
  }
  return cols;
}

export class PgResultsCache implements ResultsCache {
  constructor(
    private readonly pool: StorePool,
    private readonly service: string,
    private readonly account: string,
  ) {}

  async hasVerdictsSince(notBefore: Date): Promise<boolean> {
    const rows = await this.pool.query(
      'reading the results cache',
      `SELECT 1 FROM ${SCHEMA}.verdicts
        WHERE service = $1 AND account = $2 AND checked_ms >= $3 AND result <> 'withdrawn' LIMIT 1`,
      [this.service, this.account, notBefore.getTime()],
    );
    return rows.length > 0;
  }

  async get(e164: string, notBefore: Date): Promise<CachedVerdict | null> {
    return (await this.getMany([e164], notBefore)).get(e164) ?? null;
  }

  async getMany(e164s: readonly string[], notBefore: Date): Promise<Map<string, CachedVerdict>> {
    const out = new Map<string, CachedVerdict>();
    for (let i = 0; i < e164s.length; i += CHUNK) {
      const rows = await this.pool.query<VerdictRow & { who: string | null }>('reading the results cache', LATEST, [
        this.service,
        this.account,
        e164s.slice(i, i + CHUNK),
        notBefore.getTime(),
      ]);
      for (const r of rows) out.set(r.e164, { ...verdictFromRow(r), who: r.who });
    }
    return out;
  }

  async put(verdicts: readonly CachedVerdict[]): Promise<number> {
    let n = 0;
    for (let i = 0; i < verdicts.length; i += CHUNK) {
      const cols = verdictArrays(verdicts.slice(i, i + CHUNK));
      n += cols[0]!.length;
      if (cols[0]!.length > 0)
        await this.pool.query('writing the results cache', PUT_VERDICTS, [this.service, this.account, ...cols]);
    }
    return n;
  }

  async fill(source: JournalVerdictSource): Promise<void> {
    const { verdicts, conflicting } = await source.rows();
    await this.pool.transaction('writing the results cache', async (c) => {
      for (let i = 0; i < verdicts.length; i += CHUNK)
        await c.query(PUT_VERDICTS, [this.service, this.account, ...verdictArrays(verdicts.slice(i, i + CHUNK))]);
      if (conflicting.length > 0) await c.query(WITHDRAW, [this.service, this.account, conflicting]);
    });
  }

  async forget(e164s: readonly string[]): Promise<void> {
    await this.pool.query('writing the results cache', WITHDRAW, [this.service, this.account, [...e164s]]);
  }

  async close(): Promise<void> {
    // The pool is the owner's: closed with the stores.
  }
}
