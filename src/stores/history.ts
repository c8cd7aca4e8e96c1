// The history of single checks (`dnc check`) in the state folder: what `dnc trace` quotes and `usage --reconcile`
// counts.
import path from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { openLocalStore } from './local-store.js';

/** Kept: the latest HISTORY_MAX_ROWS checks, none older than HISTORY_MAX_AGE_DAYS. */
export const HISTORY_MAX_ROWS = 1_000;
export const HISTORY_MAX_AGE_DAYS = 90;

export interface CheckRecord {
  correlationId: string;
  phoneNumber: string;
  country: string | null;
  /** When dnc sent the request (ISO 8601). */
  requestedAt: string;
  answeredAt: string;
  /** The service's origin (never the key). */
  service: string;
  httpStatus: number | null;
  /** succeeded, started (webhook receipt) or failed. */
  kind: string;
  /** Credits charged (or held, for a receipt). */
  credits: number;
  /** The service's answer as received (JSON text). */
  body: string;
  webhookUrl: string | null;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS checks (
  id INTEGER PRIMARY KEY,
  correlation_id TEXT NOT NULL,
  phone_number TEXT NOT NULL,
  country TEXT,
  requested_at TEXT NOT NULL,
  answered_at TEXT NOT NULL,
  service TEXT NOT NULL,
  http_status INTEGER,
  kind TEXT NOT NULL,
  credits INTEGER NOT NULL,
  body TEXT NOT NULL,
  webhook_url TEXT
);
CREATE INDEX IF NOT EXISTS checks_correlation ON checks (correlation_id);
`;

interface Row {
  correlation_id: string;
  phone_number: string;
  country: string | null;
  requested_at: string;
  answered_at: string;
  service: string;
  http_status: number | null;
  kind: string;
  credits: number;
  body: string;
  webhook_url: string | null;
}

const fromRow = (r: Row): CheckRecord => ({
  correlationId: r.correlation_id,
  phoneNumber: r.phone_number,
  country: r.country,
  requestedAt: r.requested_at,
  answeredAt: r.answered_at,
  service: r.service,
  httpStatus: r.http_status,
  kind: r.kind,
  credits: r.credits,
  body: r.body,
  webhookUrl: r.webhook_url,
});

export function historyPath(stateDir: string): string {
  return path.join(stateDir, 'checks.sqlite');
}

export class CheckHistory {
  private constructor(private readonly db: BetterSqlite3.Database) {}

  static async open(stateDir: string): Promise<CheckHistory> {
    return new CheckHistory(await openLocalStore(stateDir, historyPath(stateDir), SCHEMA));
  }

  /** Records a check and forgets what falls outside the kept window. */
  record(r: CheckRecord, now: Date): void {
    const cutoff = new Date(now.getTime() - HISTORY_MAX_AGE_DAYS * 86_400_000).toISOString();
    this.db.transaction(() => {
      this.db
        .prepare(
          `INSERT INTO checks (correlation_id, phone_number, country, requested_at, answered_at, service,
            http_status, kind, credits, body, webhook_url)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
          r.correlationId,
          r.phoneNumber,
          r.country,
          r.requestedAt,
          r.answeredAt,
          r.service,
          r.httpStatus,
          r.kind,
          r.credits,
          r.body,
          r.webhookUrl,
        );
      this.db.prepare('DELETE FROM checks WHERE requested_at < ?').run(cutoff);
      this.db.prepare('DELETE FROM checks WHERE id <= (SELECT MAX(id) FROM checks) - ?').run(HISTORY_MAX_ROWS);
    })();
  }

  find(correlationId: string): CheckRecord[] {
    return this.db
      .prepare<[string], Row>('SELECT * FROM checks WHERE correlation_id = ? ORDER BY id')
      .all(correlationId)
      .map(fromRow);
  }

  /** Every check of a number (E.164), oldest first. */
  findNumber(e164: string): CheckRecord[] {
    return this.db
      .prepare<[string], Row>('SELECT * FROM checks WHERE phone_number = ? ORDER BY id')
      .all(e164)
      .map(fromRow);
  }

  /** Checks sent to `service` with requested_at in [start, end). */
  between(service: string, start: string, end: string): CheckRecord[] {
    return this.db
      .prepare<[string, string, string], Row>(
        'SELECT * FROM checks WHERE service = ? AND requested_at >= ? AND requested_at < ? ORDER BY id',
      )
      .all(service, start, end)
      .map(fromRow);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
