// A member of the team at work: a row in dnc.members renewed by heartbeat, and an advisory lock its own session holds
// for as long as the process lives. A member whose lock is gone (killed: the server ends its session at once) or whose
// heartbeat ran out (a machine cut off) is reaped by whichever member looks first: its reserved claims are deleted
// (nothing was sent: free to claim at once) and its sending claims become unanswered (sent, maybe charged).
import type { Client } from 'pg';
import { HEARTBEAT_MS, MEMBER_LEASE_MS } from '../lease.js';
import { MEMBER_LOCK_CLASS, SCHEMA } from './migrations.js';
import type { StorePool } from './pool.js';

/**
 * Reaps the dead members' claims in one statement, the owner's function (team-functions.ts, where DEAD says who is
 * dead): taken in key order, those another statement holds skipped (the next reap takes them), so that it never waits
 * on, or deadlocks with, a member at work. A dead member's row goes with its last claim in flight.
 */
const REAP = `SELECT * FROM ${SCHEMA}.reap_members()`;

/** What one reap did. */
export interface Reaped {
  freed: number;
  lost: number;
  gone: number;
}

/** Reaps the claims of dead members (any member may, at any time: the statement is idempotent). */
export async function reapDeadMembers(pool: StorePool): Promise<Reaped> {
  const [row] = await pool.query<Reaped>('reaping the claims of members gone', REAP, [], {
    name: 'dnc-reap',
    relaxed: true,
    idempotent: true,
  });
  return row ?? { freed: 0, lost: 0, gone: 0 };
}

/**
 * This process as a member: its row, its lock, its heartbeat every HEARTBEAT_MS (which reaps the dead, too). A
 * heartbeat that fails is tried again at the next beat, its session opened anew; `onLost` hears when the member was
 * reaped meanwhile (its claims are no longer its own).
 */
export class Membership {
  private timer: ReturnType<typeof setInterval> | null = null;
  private session: Client | null = null;
  private beating: Promise<void> = Promise.resolve();
  private closed = false;
  /** A beat brought forward: the session was lost (a server restart), the member enrols again as soon as it can. */
  private soon: ReturnType<typeof setTimeout> | null = null;
  private misses = 0;

  private constructor(
    private readonly pool: StorePool,
    readonly claimant: string,
    private readonly random: () => number,
  ) {}

  static async join(pool: StorePool, claimant: string, random: () => number = Math.random): Promise<Membership> {
    const m = new Membership(pool, claimant, random);
    await pool.riding(() => m.enrol()); // a restart under way when the run first claims: joined once it is back
    m.timer = setInterval(() => void m.beat(), HEARTBEAT_MS);
    m.timer.unref();
    return m;
  }

  /** A session of its own holding a fresh advisory lock, and the member's row naming it. */
  private async enrol(): Promise<void> {
    const session = await this.pool.session('joining the team', () => {
      if (this.session !== session) return;
      this.session = null;
      this.beatSoon();
    });
    try {
      for (let tries = 0; ; tries++) {
        const key = 1 + Math.floor(this.random() * 0x7ffffffe);
        const got = await session.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [
          MEMBER_LOCK_CLASS,
          key,
        ]);
        if (!got.rows[0]?.ok && tries < 16) continue;
        // The owner's function: the row names this role, and a lock this very session holds.
        const r = await session
          .query(`SELECT ${SCHEMA}.member_enrol($1, $2, $3)`, [this.claimant, key, MEMBER_LEASE_MS])
          .catch((err: { code?: string }) => {
            if (err.code === '23505' && tries < 16) return null; // another member's key: draw again
            throw err;
          });
        if (r) break;
        await session.query('SELECT pg_advisory_unlock($1, $2)', [MEMBER_LOCK_CLASS, key]);
      }
    } catch (err) {
      await this.pool.endSession(session);
      throw this.pool.failure(err, 'joining the team');
    }
    this.session = session;
  }

  /** One heartbeat: the member's lease renewed (its row made again if it was reaped), the dead reaped. */
  beat(): Promise<void> {
    this.beating = this.beating.then(async () => {
      if (this.closed) return;
      try {
        if (this.session === null) await this.enrol();
        const r = await this.session!.query<{ n: number }>(`SELECT ${SCHEMA}.member_beat($1, $2) AS n`, [
          this.claimant,
          MEMBER_LEASE_MS,
        ]);
        if (r.rows[0]?.n === 0) {
          // Reaped meanwhile (its heartbeat was late): a new lock and row; what it held was taken as the dead's.
          await this.pool.endSession(this.session!);
          this.session = null;
          await this.enrol();
        }
        await reapDeadMembers(this.pool);
        this.misses = 0;
      } catch {
        // The store went away: tried again soon (a restart), at the latest at the next beat; the run's own statements
        // say what happened if it does not come back.
        if (this.session) await this.pool.endSession(this.session);
        this.session = null;
        this.misses++;
        this.beatSoon();
      }
    });
    return this.beating;
  }

  /** The next beat after a pause from 250 ms doubling to a heartbeat, jittered: back soon after the store is. */
  private beatSoon(): void {
    if (this.closed || this.soon) return;
    const pause = Math.min(HEARTBEAT_MS, 250 * 2 ** Math.min(this.misses, 5)) * (0.5 + this.random() / 2);
    this.soon = setTimeout(() => {
      this.soon = null;
      void this.beat();
    }, pause);
    this.soon.unref();
  }

  /** Leaves the team: the member's row and its lock go (its reserved claims were let go by the caller). */
  async leave(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    if (this.soon) clearTimeout(this.soon);
    this.timer = null;
    await this.beating;
    const session = this.session;
    this.session = null;
    if (!session) return;
    await session.query(`SELECT ${SCHEMA}.member_leave($1)`, [this.claimant]).catch(() => {});
    await this.pool.endSession(session);
  }
}
