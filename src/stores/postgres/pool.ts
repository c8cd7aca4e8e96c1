// One connection pool to the team store per process, its errors as dnc's, and the schema checked (or migrated)
// before anything is read or written.
import type { Client, ClientConfig, Pool, PoolClient, QueryResultRow } from 'pg';
import { DncError, usageError } from '../../errors.js';
import { MEMBER_LEASE_MS } from '../lease.js';
import type { StoreConnection } from './connection.js';
import { LATEST_VERSION, migrate, schemaVersion, SCHEMA, tooNew } from './migrations.js';

// Connection failures and a server shutting down: the store went away (exit 6; a batch stops and can resume).
const GONE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
]);
const GONE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);
// The server shutting down, crashed or starting: the session is gone and its open transaction with it.
const SHUTDOWN_SQLSTATES = new Set(['57P01', '57P02', '57P03']);
// The server is there but will not have dnc's role do this: a configuration matter for the team (exit 2).
const REFUSED_SQLSTATES = new Set(['28P01', '28000', '42501', '3D000', '42P01', '3F000']);
// Lost a race with another member's statement (deadlock detected, serialization failure, lock not available): the
// statement, or the whole transaction, rolled back and is safe to run again. Retried inside the store, never shown.
const RETRYABLE_SQLSTATES = new Set(['40P01', '40001', '55P03']);
/** Tries of a statement (or transaction) that lost a race, and the first pause between them (doubled, jittered). */
export const RACE_TRIES = 8;
const RACE_PAUSE_MS = 5;

/** Whether a failure is a lost race the store retries (40P01, 40001, 55P03). */
export function isLostRace(err: unknown): boolean {
  return RETRYABLE_SQLSTATES.has(String((err as { code?: unknown })?.code ?? ''));
}

/**
 * Runs `attempt` again while it loses a race with another member (a deadlock, a serialization failure), after a
 * pause that grows and is jittered so that the two do not meet again; any other failure, or the last, is thrown.
 * The one retry helper of the team store: every statement and transaction goes through it.
 */
export async function retryingRaces<T>(
  attempt: () => Promise<T>,
  random: () => number = Math.random,
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await attempt();
    } catch (err) {
      if (i >= RACE_TRIES || !isLostRace(err)) throw err;
      await sleep(RACE_PAUSE_MS * 2 ** (i - 1) * (0.5 + random()));
    }
  }
}

/**
 * How long a run waits for a store that went away once reached (a server restarted: 57P01 admin shutdown, 57P03 still
 * starting, connections refused or reset): a member's lease, the time within which its claims are still its own. Its
 * statements are tried again meanwhile on fresh connections, after a pause from OUTAGE_PAUSE_MS doubling to
 * OUTAGE_PAUSE_MAX_MS, jittered; then it stops with E_STORE_UNAVAILABLE.
 */
export const OUTAGE_MS = MEMBER_LEASE_MS;
const OUTAGE_PAUSE_MS = 100;
const OUTAGE_PAUSE_MAX_MS = 2_000;

/**
 * Where a try stood when it failed: connecting; an autocommit statement sent; inside a transaction not yet committed
 * (whatever failed, it rolled back); its COMMIT sent.
 */
export type Stage = 'connecting' | 'sent' | 'open' | 'committing';

/**
 * Whether a failure is the connection's, and what is known of the statement: `not-run` when it surely did not take
 * effect (no connection was made; or the server answered it with a shutdown or connection error, which aborts its
 * transaction), `unknown` when the socket went without an answer (an autocommit statement, or a COMMIT, may have
 * committed). Null for any other failure.
 */
export function connectionLoss(err: unknown, stage: Stage): 'not-run' | 'unknown' | null {
  // The driver's error, also when this store has already put it in dnc's words (a session it opened).
  const e = (err instanceof DncError && err.code === 'E_STORE_UNAVAILABLE' ? err.cause : err) as {
    code?: unknown;
    message?: unknown;
  };
  const code = String(e?.code ?? '');
  const message = String(e?.message ?? '');
  const shutdown = SHUTDOWN_SQLSTATES.has(code) || code.startsWith('08');
  const socket = GONE_CODES.has(code) || /terminat|timeout|not queryable|closed/i.test(message);
  if (!shutdown && !socket) return null;
  if (stage === 'connecting' || stage === 'open') return 'not-run';
  if (/not queryable/i.test(message) || code === 'ECONNREFUSED') return 'not-run';
  if (stage === 'committing') return 'unknown';
  return shutdown ? 'not-run' : 'unknown';
}

/** Since when the store has been away, as every statement of a process sees it (null: it answers). */
export interface Outage {
  since: number | null;
}

/**
 * Runs `attempt` again while the store is away, for at most OUTAGE_MS since it went away (`outage`, shared by the
 * process's statements: one run waits OUTAGE_MS in all, not as much for each statement): always when what failed
 * surely did not run, and when it may have run only if `idempotent` (running it twice leaves what running it once
 * does). `attempt` tells how far it got by calling `stage`. Any other failure is thrown, and one past the bound (with
 * `outageMs` set).
 */
export async function ridingOutages<T>(
  attempt: (stage: (s: Stage) => void) => Promise<T>,
  idempotent: boolean,
  outage: Outage = { since: null },
  clock: { now: () => number; random: () => number; sleep: (ms: number) => Promise<void> } = defaultClock,
): Promise<T> {
  for (let i = 0; ; i++) {
    let stage: Stage = 'connecting';
    try {
      const out = await attempt((s) => void (stage = s));
      outage.since = null;
      return out;
    } catch (err) {
      const loss = connectionLoss(err, stage);
      if (loss === null || (loss === 'unknown' && !idempotent)) throw err;
      const since = (outage.since ??= clock.now());
      const pause = Math.min(OUTAGE_PAUSE_MAX_MS, OUTAGE_PAUSE_MS * 2 ** i) * (0.5 + clock.random());
      if (clock.now() + pause - since > OUTAGE_MS) {
        if (err && typeof err === 'object') (err as { outageMs?: number }).outageMs = clock.now() - since;
        throw err;
      }
      await clock.sleep(pause);
    }
  }
}

const defaultClock = {
  now: () => Date.now(),
  random: Math.random,
  sleep: (ms: number) => new Promise<void>((r) => setTimeout(r, ms)),
};

/** A failure of the store as a DncError that says where, without the password. */
export function storeError(err: unknown, where: string, doing: string): DncError {
  if (err instanceof DncError) return err;
  const e = err as { code?: string; message?: string };
  const code = e.code ?? '';
  const message = String(e.message ?? err);
  if (REFUSED_SQLSTATES.has(code)) {
    return usageError('E_STORE_REFUSED', `the team store ${where} refused ${doing}: ${message}`, {
      hint:
        code === '42501' || code === '42P01' || code === '3F000'
          ? 'the role needs the grants docs/team.md gives (a DBA runs `dnc store migrate` with an owner role first)'
          : 'check the user and password (PGPASSWORD, ~/.pgpass) and the database named by --store / DNC_STORE',
      cause: err,
    });
  }
  const gone =
    GONE_CODES.has(code) ||
    GONE_SQLSTATES.has(code) ||
    code.startsWith('08') ||
    /terminat|timeout|closed/i.test(message);
  const waited = (err as { outageMs?: number })?.outageMs;
  const tried = waited === undefined ? '' : `; tried again for ${Math.round(waited / 1000)} s`;
  return new DncError(
    'E_STORE_UNAVAILABLE',
    `the team store ${where} cannot be reached (${doing}): ${message}${tried}`,
    {
      hint: gone
        ? 'check that the PostgreSQL server is up and reachable (--store / DNC_STORE); nothing more is sent until it is'
        : 'see docs/team.md; report this if the server is up',
      cause: err,
      details: { sqlstate: code || null },
    },
  );
}

export class StorePool {
  private readyOnce: Promise<void> | null = null;
  /** Connections of their own (a member's heartbeat, which holds its advisory lock): ended with the pool. */
  private readonly sessions = new Set<Client>();
  /** Since when the server has been away (see ridingOutages). */
  private readonly outage: Outage = { since: null };

  private constructor(
    private readonly pool: Pool,
    /**
     * Statements whose loss in a crash of the server costs nothing (the reap of the dead, a joiner's take, which the
     * next one makes again): committed without waiting for the server's disk (synchronous_commit off). Never a
     * claim or a settlement: a claim lost with the server stands for a lookup sent, which a colleague pays again.
     */
    private readonly relaxedPool: Pool,
    readonly where: string,
    private readonly config: ClientConfig,
  ) {}

  static async open(connection: StoreConnection): Promise<StorePool> {
    const { default: pg } = await import('pg');
    const make = (extra: { options?: string }) => {
      const pool = new pg.Pool({
        ...connection.config,
        max: 4,
        idleTimeoutMillis: 5_000,
        allowExitOnIdle: true,
        ...extra,
      });
      // An idle connection the server drops (a restart) must not end the process: the next query says so instead.
      pool.on('error', () => {});
      return pool;
    };
    return new StorePool(make({}), make({ options: '-c synchronous_commit=off' }), connection.where, connection.config);
  }

  /**
   * Reachable, and at this dnc's schema version: migrated when it is behind (the first dnc of a team makes the
   * schema), refused when it is ahead. Once per process; fails before any lookup when the server is not there.
   */
  ready(): Promise<void> {
    this.readyOnce ??= this.probe(async (c) => {
      const version = await schemaVersion(c);
      if (version > LATEST_VERSION) throw tooNew(this.where, version);
      if (version < LATEST_VERSION) await migrate(c, this.where);
    });
    this.readyOnce.catch(() => (this.readyOnce = null));
    return this.readyOnce;
  }

  /**
   * The first connection, made alone rather than by the pool: one that fails (the server asked for a password dnc
   * was not given, and the driver left its socket open) is closed here, and does not keep the process alive.
   */
  private async probe(use: (c: Client) => Promise<void>): Promise<void> {
    const client = await this.session('opening the store', () => {});
    try {
      await use(client);
    } catch (err) {
      throw this.failure(err, 'opening the store');
    } finally {
      await this.endSession(client);
    }
  }

  /** `dnc store migrate`: the versions applied (none when it was up to date). */
  async migrate(): Promise<number[]> {
    return this.withClient('migrating', (c) => migrate(c, this.where));
  }

  async version(): Promise<number> {
    return this.withClient('reading the schema version', (c) => schemaVersion(c));
  }

  /**
   * `name`: a statement prepared once per connection (those of every lookup); `relaxed`: see relaxedPool;
   * `idempotent`: running it twice leaves what running it once does, so that it is tried again on a fresh connection
   * even when the server went away before saying whether it ran (otherwise only when it surely did not).
   */
  async query<R extends QueryResultRow>(
    doing: string,
    sql: string,
    params: unknown[] = [],
    options: { name?: string; relaxed?: boolean; idempotent?: boolean } = {},
  ): Promise<R[]> {
    const pool = options.relaxed ? this.relaxedPool : this.pool;
    try {
      return await ridingOutages(
        (stage) =>
          retryingRaces(() =>
            this.using(pool, async (c) => {
              stage('sent');
              return (await c.query<R>({ text: sql, values: params, name: options.name })).rows;
            }),
          ),
        options.idempotent ?? false,
        this.outage,
      );
    } catch (err) {
      throw this.failure(err, doing);
    }
  }

  /** A client of `pool` for `use`; a client that failed (its connection maybe gone) is not given back to the pool. */
  private async using<T>(pool: Pool, use: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await pool.connect();
    let broken = false;
    // The server may end the session between two statements (stopped, restarted): the client says so with an 'error'
    // event, which with no listener would end the process. The next statement fails instead, and says where.
    const dropped = () => void (broken = true);
    client.on('error', dropped);
    try {
      return await use(client);
    } catch (err) {
      broken = true;
      throw err;
    } finally {
      client.off('error', dropped);
      client.release(broken);
    }
  }

  /**
   * Statements on one client: `use` run again, whole, on a fresh connection when no connection could be made, or when
   * the server answered one of its statements with a shutdown error; not when a socket went unanswered. For work that
   * is one transaction or only reads (its callers: read-only snapshots, migrations each applied once whoever runs
   * them), never several autocommit writes, which running again would repeat.
   */
  async withClient<T>(doing: string, use: (client: PoolClient) => Promise<T>, relaxed = false): Promise<T> {
    try {
      return await ridingOutages(
        (stage) =>
          this.using(relaxed ? this.relaxedPool : this.pool, (c) => {
            stage('sent');
            return use(c);
          }),
        false,
        this.outage,
      );
    } catch (err) {
      throw this.failure(err, doing);
    }
  }

  /**
   * One transaction; rolled back when `work` throws, and run again (whole) when it lost a race, or when the server
   * went away before its COMMIT (it rolled back), on a fresh connection. A COMMIT whose answer was lost is run again
   * only when the transaction is `idempotent`; otherwise the run stops (E_STORE_UNAVAILABLE), as it may have committed.
   */
  async transaction<T>(
    doing: string,
    work: (client: PoolClient) => Promise<T>,
    relaxed = false,
    idempotent = false,
  ): Promise<T> {
    const pool = relaxed ? this.relaxedPool : this.pool;
    try {
      return await ridingOutages(
        (stage) =>
          this.using(pool, (c) =>
            retryingRaces(async () => {
              stage('open');
              await c.query('BEGIN');
              let out: T;
              try {
                out = await work(c);
              } catch (err) {
                await c.query('ROLLBACK').catch(() => {});
                throw err;
              }
              stage('committing');
              await c.query('COMMIT');
              return out;
            }),
          ),
        idempotent,
        this.outage,
      );
    } catch (err) {
      throw this.failure(err, doing);
    }
  }

  /** A transaction that leaves the same rows when run twice: run again when its COMMIT's answer was lost. */
  idempotentTransaction<T>(doing: string, work: (client: PoolClient) => Promise<T>, relaxed = false): Promise<T> {
    return this.transaction(doing, work, relaxed, true);
  }

  /** `attempt` (idempotent: a connection of its own made and used) tried again while the store is away. */
  riding<T>(attempt: () => Promise<T>): Promise<T> {
    return ridingOutages(attempt, true, this.outage);
  }

  /** A value of the store's meta table (the salt, the list's id and name). */
  async meta(key: string): Promise<string | null> {
    const rows = await this.query<{ value: string }>(
      'reading its settings',
      `SELECT value FROM ${SCHEMA}.meta WHERE key = $1`,
      [key],
    );
    return rows[0]?.value ?? null;
  }

  /** A failure of this store as a DncError (see storeError). */
  failure(err: unknown, doing: string): DncError {
    return storeError(err, this.where, doing);
  }

  /**
   * A connection of its own, outside the pools (what it holds, a session's advisory lock, lives as long as it does);
   * `onDropped` hears when the server ends it. Ended by `endSession` or with the pool.
   */
  async session(doing: string, onDropped: () => void): Promise<Client> {
    const { default: pg } = await import('pg');
    const client = new pg.Client(this.config);
    client.on('error', onDropped);
    client.on('end', onDropped);
    try {
      await client.connect();
    } catch (err) {
      client.off('end', onDropped);
      // The driver leaves the socket open when it fails a login itself (no password to give): closed here.
      (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
      throw this.failure(err, doing);
    }
    this.sessions.add(client);
    return client;
  }

  async endSession(client: Client): Promise<void> {
    this.sessions.delete(client);
    client.removeAllListeners('end');
    await client.end().catch(() => {});
  }

  async close(): Promise<void> {
    await Promise.all([...this.sessions].map((c) => this.endSession(c)));
    await Promise.all([this.pool.end().catch(() => {}), this.relaxedPool.end().catch(() => {})]);
  }
}

/** A store URL refused before anything is opened: another setting that cannot go with it. */
export function storeConflict(message: string, hint: string): DncError {
  return usageError('E_STORE_INVALID', message, { hint });
}
