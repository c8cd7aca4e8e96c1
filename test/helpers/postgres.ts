// The PostgreSQL half of the tests: a server given by the environment (PGHOST, PGPORT, PGUSER, PGPASSWORD, as
// `pg_virtualenv` sets them, or DNC_TEST_POSTGRES as a URL), a fresh database per test file. Without a server the
// PostgreSQL tests are skipped, and say so; with CI=true that skip fails the run (.ci/run starts a server).
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { it } from 'vitest';

/** The server's URL, without a database (one is made per test file). */
function serverUrl(): string | null {
  if (process.env.DNC_TEST_POSTGRES) return process.env.DNC_TEST_POSTGRES;
  if (!process.env.PGHOST && !process.env.PGPORT) return null;
  const u = new URL('postgresql://localhost');
  u.hostname = process.env.PGHOST && !process.env.PGHOST.startsWith('/') ? process.env.PGHOST : 'localhost';
  u.port = process.env.PGPORT ?? '5432';
  u.username = process.env.PGUSER ?? 'postgres';
  if (process.env.PGPASSWORD) u.password = process.env.PGPASSWORD;
  u.pathname = '/postgres';
  return u.toString();
}

export const POSTGRES_URL = serverUrl();
export const HAVE_POSTGRES = POSTGRES_URL !== null;

/** Marks the file's PostgreSQL half as skipped, plainly (the summary of `npm test` counts these), or fails in CI. */
export function postgresSkipped(what: string): void {
  if (HAVE_POSTGRES) return;
  if (process.env.CI === 'true')
    it(`[postgres] ${what}: a PostgreSQL server is required in CI`, () => {
      throw new Error(
        'no PostgreSQL server: set PGHOST/PGPORT/PGUSER/PGPASSWORD (pg_virtualenv does) or DNC_TEST_POSTGRES',
      );
    });
  else it.skip(`[postgres] ${what}: skipped, no PostgreSQL server (PGHOST or DNC_TEST_POSTGRES unset)`, () => {});
}

async function admin<T>(use: (query: (sql: string) => Promise<unknown>) => Promise<T>): Promise<T> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: POSTGRES_URL! });
  await client.connect();
  try {
    return await use((sql) => client.query(sql));
  } finally {
    await client.end();
  }
}

/** A new, empty database on the server; its URL and a function that drops it. */
export async function freshDatabase(): Promise<{ url: string; name: string; drop: () => Promise<void> }> {
  const name = `dnc_test_${randomBytes(6).toString('hex')}`;
  await admin((q) => q(`CREATE DATABASE ${name}`));
  const u = new URL(POSTGRES_URL!);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    name,
    drop: () => admin((q) => q(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

/** Runs SQL on a database of the server, as its superuser (to play the DBA, or someone tampering). */
export async function sqlOn(url: string, sql: string, params: unknown[] = []): Promise<Array<Record<string, unknown>>> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as Array<Record<string, unknown>>;
  } finally {
    await client.end();
  }
}

/** A PostgreSQL server of the test's own (initdb, pg_ctl), to stop and start again; null without its programs. */
export interface OwnServer {
  url: string;
  stop(): Promise<void>;
  /** Stopped as a crash would (`-m immediate`: no checkpoint, sessions cut; what a commit had not written is lost). */
  crash(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

function postgresBin(): string | null {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return null;
  const versions = readdirSync(base).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) if (existsSync(`${base}/${v}/bin/pg_ctl`)) return `${base}/${v}/bin`;
  return null;
}

export async function ownServer(): Promise<OwnServer | null> {
  const bin = postgresBin();
  if (!bin) return null;
  const { execFileSync } = await import('node:child_process');
  const os = await import('node:os');
  const net = await import('node:net');
  const dir = mkdtempSync(`${os.tmpdir()}/dnc-pg-`);
  chmodSync(dir, 0o777);
  // initdb refuses to run as root: the server runs as the postgres user then.
  const root = process.getuid?.() === 0;
  const run = (program: string, args: string[]) =>
    execFileSync(
      root ? 'runuser' : `${bin}/${program}`,
      root ? ['-u', 'postgres', '--', `${bin}/${program}`, ...args] : args,
      {
        stdio: 'pipe',
        timeout: 60_000,
      },
    );
  const port = await new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
  run('initdb', ['-D', `${dir}/data`, '-A', 'trust', '-U', 'dnc', '--no-sync', '-E', 'UTF8']);
  const ctl = (args: string[]) => run('pg_ctl', ['-D', `${dir}/data`, '-l', `${dir}/log`, '-w', ...args]);
  const start = async () => void ctl(['-o', `-p ${port} -k ${dir} -h 127.0.0.1 -F`, 'start']);
  await start();
  return {
    url: `postgresql://dnc@127.0.0.1:${port}/postgres`,
    start,
    stop: async () => void ctl(['-m', 'fast', 'stop']),
    crash: async () => void ctl(['-m', 'immediate', 'stop']),
    async close() {
      try {
        ctl(['-m', 'immediate', 'stop']);
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
