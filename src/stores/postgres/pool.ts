// One connection pool to the team store per process, its errors as dnc's, and the schema checked (or migrated)
// before anything is read or written.
import type { Pool, PoolClient, QueryResultRow } from 'pg';
import { DncError, usageError } from '../../errors.js';
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
// The server is there but will not have dnc's role do this: a configuration matter for the team (exit 2).
const REFUSED_SQLSTATES = new Set(['28P01', '28000', '42501', '3D000', '42P01', '3F000']);

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
  return new DncError('E_STORE_UNAVAILABLE', `the team store ${where} cannot be reached (${doing}): ${message}`, {
    hint: gone
      ? 'check that the PostgreSQL server is up and reachable (--store / DNC_STORE); nothing more is sent until it is'
      : 'see docs/team.md; report this if the server is up',
    cause: err,
    details: { sqlstate: code || null },
  });
}

export class StorePool {
  private readyOnce: Promise<void> | null = null;

  private constructor(
    private readonly pool: Pool,
    /**
     * Claims and their settlements, on the path of every lookup: committed without waiting for the server's disk
     * (synchronous_commit off). They are seen by the others at once all the same; only a crash of the server itself
     * can lose the last few, which stand for lookups in flight at that moment, the double charge the issue accepts.
     */
    private readonly relaxedPool: Pool,
    readonly where: string,
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
    return new StorePool(make({}), make({ options: '-c synchronous_commit=off' }), connection.where);
  }

  /**
   * Reachable, and at this dnc's schema version: migrated when it is behind (the first dnc of a team makes the
   * schema), refused when it is ahead. Once per process; fails before any lookup when the server is not there.
   */
  ready(): Promise<void> {
    this.readyOnce ??= this.withClient('opening the store', async (c) => {
      const version = await schemaVersion(c);
      if (version > LATEST_VERSION) throw tooNew(this.where, version);
      if (version < LATEST_VERSION) await migrate(c, this.where);
    });
    this.readyOnce.catch(() => (this.readyOnce = null));
    return this.readyOnce;
  }

  /** `dnc store migrate`: the versions applied (none when it was up to date). */
  async migrate(): Promise<number[]> {
    return this.withClient('migrating', (c) => migrate(c, this.where));
  }

  async version(): Promise<number> {
    return this.withClient('reading the schema version', (c) => schemaVersion(c));
  }

  /** `name`: a statement prepared once per connection (those of every lookup); `relaxed`: see relaxedPool. */
  async query<R extends QueryResultRow>(
    doing: string,
    sql: string,
    params: unknown[] = [],
    options: { name?: string; relaxed?: boolean } = {},
  ): Promise<R[]> {
    try {
      const pool = options.relaxed ? this.relaxedPool : this.pool;
      return (await pool.query<R>({ text: sql, values: params, name: options.name })).rows;
    } catch (err) {
      throw storeError(err, this.where, doing);
    }
  }

  async withClient<T>(doing: string, use: (client: PoolClient) => Promise<T>, relaxed = false): Promise<T> {
    let client: PoolClient;
    try {
      client = await (relaxed ? this.relaxedPool : this.pool).connect();
    } catch (err) {
      throw storeError(err, this.where, doing);
    }
    let broken = false;
    // The server may end the session between two statements (stopped, restarted): the client says so with an 'error'
    // event, which with no listener would end the process. The next statement fails instead, and says where.
    const dropped = () => void (broken = true);
    client.on('error', dropped);
    try {
      return await use(client);
    } catch (err) {
      broken = true;
      throw storeError(err, this.where, doing);
    } finally {
      client.off('error', dropped);
      client.release(broken);
    }
  }

  /** One transaction; rolled back when `work` throws. */
  async transaction<T>(doing: string, work: (client: PoolClient) => Promise<T>, relaxed = false): Promise<T> {
    return this.withClient(
      doing,
      async (c) => {
        await c.query('BEGIN');
        try {
          const out = await work(c);
          await c.query('COMMIT');
          return out;
        } catch (err) {
          await c.query('ROLLBACK').catch(() => {});
          throw err;
        }
      },
      relaxed,
    );
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

  async close(): Promise<void> {
    await Promise.all([this.pool.end().catch(() => {}), this.relaxedPool.end().catch(() => {})]);
  }
}

/** A store URL refused before anything is opened: another setting that cannot go with it. */
export function storeConflict(message: string, hint: string): DncError {
  return usageError('E_STORE_INVALID', message, { hint });
}
