// The team's history in PostgreSQL: every member's checks (trace, usage --reconcile) and scrub records.
import {
  CHECK_COLUMNS,
  checkFromRow,
  checkValues,
  HISTORY_MAX_AGE_DAYS,
  SCRUB_COLUMNS,
  scrubFromRow,
  scrubValues,
  type Row,
} from '../history.js';
import type { CheckRecord, History, ScrubRecord } from '../interfaces.js';
import { SCHEMA } from './migrations.js';
import type { StorePool } from './pool.js';

const fromRow = (r: Row & { http_status: number | null; credits: string | number }): CheckRecord =>
  checkFromRow({ ...r, credits: Number(r.credits) });

export class PgHistory implements History {
  constructor(private readonly pool: StorePool) {}

  async record(r: CheckRecord, now: Date): Promise<void> {
    const cutoff = new Date(now.getTime() - HISTORY_MAX_AGE_DAYS * 86_400_000).toISOString();
    await this.pool.transaction('recording a check', async (c) => {
      await c.query(
        `INSERT INTO ${SCHEMA}.checks (${CHECK_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
        checkValues(r),
      );
      await c.query(`DELETE FROM ${SCHEMA}.checks WHERE requested_at < $1`, [cutoff]);
    });
  }

  async find(correlationId: string): Promise<CheckRecord[]> {
    const rows = await this.pool.query<Row>(
      'reading the check history',
      `SELECT * FROM ${SCHEMA}.checks WHERE correlation_id = $1 ORDER BY id`,
      [correlationId],
    );
    return rows.map(fromRow);
  }

  async findNumber(e164: string): Promise<CheckRecord[]> {
    const rows = await this.pool.query<Row>(
      'reading the check history',
      `SELECT * FROM ${SCHEMA}.checks WHERE phone_number = $1 ORDER BY id`,
      [e164],
    );
    return rows.map(fromRow);
  }

  async between(service: string, start: string, end: string): Promise<CheckRecord[]> {
    const rows = await this.pool.query<Row>(
      'reading the check history',
      `SELECT * FROM ${SCHEMA}.checks WHERE service = $1 AND requested_at >= $2 AND requested_at < $3 ORDER BY id`,
      [service, start, end],
    );
    return rows.map(fromRow);
  }

  async hasChecks(): Promise<boolean> {
    return (await this.pool.query('reading the check history', `SELECT 1 FROM ${SCHEMA}.checks LIMIT 1`)).length > 0;
  }

  async recordScrub(r: ScrubRecord): Promise<void> {
    await this.pool.query(
      'recording a scrub',
      `INSERT INTO ${SCHEMA}.scrubs (${SCRUB_COLUMNS})
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
      scrubValues(r),
    );
  }

  async scrubs(limit: number): Promise<ScrubRecord[]> {
    const rows = await this.pool.query<Parameters<typeof scrubFromRow>[0]>(
      'reading the scrub records',
      `SELECT * FROM ${SCHEMA}.scrubs ORDER BY id DESC LIMIT $1`,
      [limit],
    );
    return rows.map(scrubFromRow);
  }

  async close(): Promise<void> {
    // The pool is the owner's: closed with the stores.
  }
}
