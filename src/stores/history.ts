// The local history in the state folder: single checks (`dnc check`), what `dnc trace` quotes and `usage --reconcile`
// counts, and scrub records (who scrubbed what, for whom, when).
import path from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import type { CheckRecord, History, ScrubRecord } from './interfaces.js';
import { openLocalStore, type LocalSchema } from './local-store.js';

export type { CheckRecord } from './interfaces.js';

/** Kept: the latest HISTORY_MAX_ROWS checks, none older than HISTORY_MAX_AGE_DAYS. */
export const HISTORY_MAX_ROWS = 1_000;
export const HISTORY_MAX_AGE_DAYS = 90;

/** The history's schema, version by version (src/stores/local-store.ts). */
export const HISTORY_SCHEMA: LocalSchema = {
  what: 'the check history',
  migrations: [
    {
      version: 1,
      name: 'checks and scrub records',
      up: `
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
CREATE TABLE IF NOT EXISTS scrubs (
  id INTEGER PRIMARY KEY, finished_at TEXT NOT NULL, operator TEXT NOT NULL, seller TEXT, san TEXT, campaign TEXT,
  output TEXT NOT NULL, host TEXT NOT NULL, rows INTEGER NOT NULL, callable INTEGER NOT NULL, credits INTEGER NOT NULL,
  service TEXT NOT NULL, list_id TEXT, list_head TEXT
);
`,
    },
  ],
};

/** Scrub records kept at most (the oldest forgotten first). */
export const SCRUBS_MAX_ROWS = 10_000;

type ScrubRow = {
  finished_at: string;
  operator: string;
  seller: string | null;
  san: string | null;
  campaign: string | null;
  output: string;
  host: string;
  rows: number;
  callable: number;
  credits: number;
  service: string;
  list_id: string | null;
  list_head: string | null;
};

export const scrubFromRow = (r: ScrubRow): ScrubRecord => ({
  finishedAt: r.finished_at,
  operator: r.operator,
  seller: r.seller,
  san: r.san,
  campaign: r.campaign,
  output: r.output,
  host: r.host,
  rows: Number(r.rows),
  callable: Number(r.callable),
  credits: Number(r.credits),
  service: r.service,
  listId: r.list_id,
  listHead: r.list_head,
});

export interface Row {
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

/** A check's values in the order of CHECK_COLUMNS, for either store's INSERT. */
export const CHECK_COLUMNS =
  'correlation_id, phone_number, country, requested_at, answered_at, service, http_status, kind, credits, body, ' +
  'webhook_url';
export const checkValues = (r: CheckRecord): unknown[] => [
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
];

/** A scrub record's values in the order of SCRUB_COLUMNS. */
export const SCRUB_COLUMNS =
  'finished_at, operator, seller, san, campaign, output, host, rows, callable, credits, service, list_id, list_head';
export const scrubValues = (r: ScrubRecord): unknown[] => [
  r.finishedAt,
  r.operator,
  r.seller,
  r.san,
  r.campaign,
  r.output,
  r.host,
  r.rows,
  r.callable,
  r.credits,
  r.service,
  r.listId,
  r.listHead,
];

export const checkFromRow = (r: Row): CheckRecord => ({
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

/** The local store's history: one SQLite file in the state folder. */
export class CheckHistory implements History {
  private constructor(private readonly db: BetterSqlite3.Database) {}

  static async open(stateDir: string): Promise<CheckHistory> {
    return new CheckHistory(await openLocalStore(stateDir, historyPath(stateDir), HISTORY_SCHEMA));
  }

  /** Records a check and forgets what falls outside the kept window. */
  async record(r: CheckRecord, now: Date): Promise<void> {
    const cutoff = new Date(now.getTime() - HISTORY_MAX_AGE_DAYS * 86_400_000).toISOString();
    this.db.transaction(() => {
      this.db
        .prepare(`INSERT INTO checks (${CHECK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
        .run(...checkValues(r));
      this.db.prepare('DELETE FROM checks WHERE requested_at < ?').run(cutoff);
      this.db.prepare('DELETE FROM checks WHERE id <= (SELECT MAX(id) FROM checks) - ?').run(HISTORY_MAX_ROWS);
    })();
  }

  async find(correlationId: string): Promise<CheckRecord[]> {
    return this.db
      .prepare<[string], Row>('SELECT * FROM checks WHERE correlation_id = ? ORDER BY id')
      .all(correlationId)
      .map(checkFromRow);
  }

  async findNumber(e164: string): Promise<CheckRecord[]> {
    return this.db
      .prepare<[string], Row>('SELECT * FROM checks WHERE phone_number = ? ORDER BY id')
      .all(e164)
      .map(checkFromRow);
  }

  /** Checks sent to `service` with requested_at in [start, end). */
  async between(service: string, start: string, end: string): Promise<CheckRecord[]> {
    return this.db
      .prepare<[string, string, string], Row>(
        'SELECT * FROM checks WHERE service = ? AND requested_at >= ? AND requested_at < ? ORDER BY id',
      )
      .all(service, start, end)
      .map(checkFromRow);
  }

  async hasChecks(): Promise<boolean> {
    return this.db.prepare('SELECT 1 FROM checks LIMIT 1').get() !== undefined;
  }

  async recordScrub(r: ScrubRecord): Promise<void> {
    this.db.transaction(() => {
      this.db
        .prepare(`INSERT INTO scrubs (${SCRUB_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
        .run(...scrubValues(r));
      this.db.prepare('DELETE FROM scrubs WHERE id <= (SELECT MAX(id) FROM scrubs) - ?').run(SCRUBS_MAX_ROWS);
    })();
  }

  async scrubs(limit: number): Promise<ScrubRecord[]> {
    return this.db
      .prepare<[number], ScrubRow>('SELECT * FROM scrubs ORDER BY id DESC LIMIT ?')
      .all(limit)
      .map(scrubFromRow);
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
