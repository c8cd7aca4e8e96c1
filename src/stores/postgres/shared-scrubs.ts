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
 * now, or settled since the scrub began (answered during it), are in hand already and come back not `open`. Every
 * write of a scrub is the owner's function (team-functions.ts): a scrub's list and end are its own role's only.
 */
const TAKE = `SELECT * FROM ${SCHEMA}.scrub_take($1, $2, $3, $4, $5, $6)`;

export class PgSharedScrubs implements SharedScrubs {
  constructor(
    private readonly pool: StorePool,
    private readonly service: string,
    private readonly account: string,
  ) {}

  async start(owner: string): Promise<string> {
    const id = randomBytes(5).toString('hex');
    // Scrubs whose owner was killed (never ended) are tidied by the same call: their numbers are of no use now.
    await this.pool.query('sharing the scrub', `SELECT ${SCHEMA}.scrub_start($1, $2, $3, $4)`, [
      id,
      this.service,
      this.account,
      owner,
    ]);
    return id;
  }

  async list(id: string, numbers: readonly SharedNumber[], complete: boolean): Promise<void> {
    for (let at = 0; at < numbers.length || (at === 0 && complete); at += LIST_PAGE) {
      const page = numbers.slice(at, at + LIST_PAGE);
      const last = complete && at + LIST_PAGE >= numbers.length;
      await this.pool.query('sharing the scrub', `SELECT ${SCHEMA}.scrub_list($1, $2, $3, $4, $5)`, [
        id,
        page.map((n) => n.e164),
        page.map((n) => n.country),
        page.map((n) => n.windowMs),
        last,
      ]);
      if (page.length === 0) break;
    }
  }

  async end(id: string, state: 'done' | 'stopped'): Promise<void> {
    await this.pool.query('ending the shared scrub', `SELECT ${SCHEMA}.scrub_end($1, $2)`, [id, state]);
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
