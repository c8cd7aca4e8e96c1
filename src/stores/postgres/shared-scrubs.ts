// Shared scrubs in the team store (migration 5): see src/stores/shared-scrubs.ts. A scrub's id is random, short
// enough to type; its numbers go with it when it ends.
import { randomBytes } from 'node:crypto';
import type { SharedNumber, SharedScrubInfo, SharedScrubs } from '../shared-scrubs.js';
import { SCHEMA } from './migrations.js';
import type { StorePool } from './pool.js';

/** Numbers listed per statement. */
const LIST_PAGE = 5_000;

/**
 * Numbers for a joiner, from the end of the list: untaken by another joiner (SKIP LOCKED: two joiners asking at once
 * take different ones; the partial index finds the untaken at once). All are marked taken; those claimed by anyone
 * now, or settled since the scrub began (answered during it), are in hand already and come back not `open`.
 */
const TAKE = `
WITH next AS (
  SELECT s.seq FROM ${SCHEMA}.shared_numbers s WHERE s.scrub = $1 AND s.taken_by IS NULL
   ORDER BY s.seq DESC LIMIT $4 FOR UPDATE SKIP LOCKED
),
taken AS (
  UPDATE ${SCHEMA}.shared_numbers n SET taken_by = $3 FROM next WHERE n.scrub = $1 AND n.seq = next.seq
  RETURNING n.e164, n.country, n.window_ms
)
SELECT t.e164, t.country, t.window_ms,
       NOT EXISTS (SELECT 1 FROM ${SCHEMA}.claims c
                    WHERE c.service = $5 AND c.account = $6 AND c.e164 = t.e164
                      AND (c.state IN ('reserved', 'sending', 'pending') OR c.settled_at >= $2)) AS open
  FROM taken t`;

export class PgSharedScrubs implements SharedScrubs {
  constructor(
    private readonly pool: StorePool,
    private readonly service: string,
    private readonly account: string,
  ) {}

  async start(owner: string): Promise<string> {
    const id = randomBytes(5).toString('hex');
    await this.pool.query(
      'sharing the scrub',
      `INSERT INTO ${SCHEMA}.shared_scrubs (id, service, account, owner, state) VALUES ($1, $2, $3, $4, 'running')`,
      [id, this.service, this.account, owner],
    );
    // Scrubs whose owner was killed (never ended): their numbers are of no use to anyone now.
    await this.pool.query(
      'tidying shared scrubs',
      `UPDATE ${SCHEMA}.shared_scrubs s SET state = 'stopped', updated_at = now()
        WHERE s.state = 'running' AND s.started_at < now() - interval '1 minute'
          AND NOT EXISTS (SELECT 1 FROM ${SCHEMA}.members m WHERE m.claimant = s.owner)`,
    );
    await this.pool.query(
      'tidying shared scrubs',
      `DELETE FROM ${SCHEMA}.shared_numbers n USING ${SCHEMA}.shared_scrubs s
        WHERE n.scrub = s.id AND s.state <> 'running'`,
    );
    return id;
  }

  async list(id: string, numbers: readonly SharedNumber[], complete: boolean): Promise<void> {
    for (let at = 0; at < numbers.length || (at === 0 && complete); at += LIST_PAGE) {
      const page = numbers.slice(at, at + LIST_PAGE);
      const last = complete && at + LIST_PAGE >= numbers.length;
      await this.pool.transaction('sharing the scrub', async (c) => {
        const r = await c.query<{ numbers: string }>(
          `UPDATE ${SCHEMA}.shared_scrubs SET numbers = numbers + $2, listed = $3, updated_at = now()
            WHERE id = $1 RETURNING numbers`,
          [id, page.length, last],
        );
        const end = Number(r.rows[0]?.numbers ?? page.length);
        if (page.length === 0) return;
        await c.query(
          `INSERT INTO ${SCHEMA}.shared_numbers (scrub, seq, e164, country, window_ms)
           SELECT $1, $2 + ordinality, e164, country, w
             FROM unnest($3::text[], $4::text[], $5::float8[]) WITH ORDINALITY AS t(e164, country, w, ordinality)`,
          [id, end - page.length, page.map((n) => n.e164), page.map((n) => n.country), page.map((n) => n.windowMs)],
        );
      });
      if (page.length === 0) break;
    }
  }

  async end(id: string, state: 'done' | 'stopped'): Promise<void> {
    await this.pool.transaction('ending the shared scrub', async (c) => {
      await c.query(`UPDATE ${SCHEMA}.shared_scrubs SET state = $2, updated_at = now() WHERE id = $1`, [id, state]);
      await c.query(`DELETE FROM ${SCHEMA}.shared_numbers WHERE scrub = $1`, [id]);
    });
  }

  async find(id: string): Promise<SharedScrubInfo | null> {
    const rows = await this.pool.query<{
      id: string;
      service: string;
      account: string;
      owner: string;
      started_at: Date;
      state: SharedScrubInfo['state'];
      listed: boolean;
      numbers: string;
      owner_alive: boolean;
    }>(
      'reading the shared scrub',
      `SELECT s.*, EXISTS (SELECT 1 FROM ${SCHEMA}.members m WHERE m.claimant = s.owner AND m.alive_until > now())
              OR s.started_at > now() - interval '15 seconds' AS owner_alive
         FROM ${SCHEMA}.shared_scrubs s WHERE s.id = $1`,
      [id],
    );
    const r = rows[0];
    if (!r) return null;
    return {
      id: r.id,
      service: r.service,
      sameAccount: r.account === this.account,
      owner: r.owner,
      startedAt: r.started_at,
      state: r.state,
      listed: r.listed,
      numbers: Number(r.numbers),
      ownerAlive: r.owner_alive,
    };
  }

  async take(scrub: SharedScrubInfo, claimant: string, limit: number): Promise<SharedNumber[] | null> {
    // Numbers in hand already are passed over (they are marked taken): the next ones are asked for at once.
    for (;;) {
      const rows = await this.pool.query<{ e164: string; country: string; window_ms: number | null; open: boolean }>(
        'taking numbers of the shared scrub',
        TAKE,
        [scrub.id, scrub.startedAt, claimant, limit, this.service, this.account],
        { name: 'dnc-take', relaxed: true },
      );
      if (rows.length === 0) return null;
      const open = rows.filter((r) => r.open);
      if (open.length > 0) return open.map((r) => ({ e164: r.e164, country: r.country, windowMs: r.window_ms }));
    }
  }
}
