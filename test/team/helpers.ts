// What the team tests share: one machine of a team, as a home folder of its own naming the team's store.
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { World } from '../helpers/world.js';
import { REPO_ROOT } from '../helpers/cli.js';
import { MIGRATIONS } from '../../src/stores/postgres/migrations.js';
import { freshDatabase, sqlOn } from '../helpers/postgres.js';

/** The environment of one machine: a home of its own (in the world's folder), the team's store, the service. */
export function teamMachine(w: World, name: string, store: string): Record<string, string> {
  const home = path.join(w.dir, name);
  mkdirSync(home, { recursive: true });
  return {
    HOME: home,
    USER: name,
    XDG_STATE_HOME: path.join(home, 'state'),
    XDG_CACHE_HOME: path.join(home, 'cache'),
    DNC_STORE: store,
    DNC_BASE_URL: w.sb.baseUrl,
    DNC_API_KEY: w.sb.apiKey,
  };
}

/** How many times the sandbox was sent each number. */
export const counted = (numbers: string[]) => {
  const counts = new Map<string, number>();
  for (const n of numbers) counts.set(n, (counts.get(n) ?? 0) + 1);
  return counts;
};

/** The GRANT lines docs/team.md gives the members' role, for `role` on the database `database`. */
export function docsGrants(role: string, database: string): string {
  const sql = /```sql\n([\s\S]*?)```/.exec(readFileSync(path.join(REPO_ROOT, 'docs', 'team.md'), 'utf8'))![1]!;
  return sql
    .split('\n')
    .filter((l) => /^(GRANT|REVOKE) /.test(l))
    .map((l) => l.replaceAll('dnc_member', role).replace('DATABASE dnc ', `DATABASE ${database} `))
    .join('\n');
}

/** A fresh database holding a team store as a dnc at schema `version` made it, and `then` (SQL) run after. */
export async function storeAtSchema(version: number, then: string): Promise<Awaited<ReturnType<typeof freshDatabase>>> {
  const db = await freshDatabase();
  await sqlOn(db.url, `${schemaAt(version)}\n${then.replaceAll('DATABASE_NAME', db.name)}`);
  return db;
}

/**
 * The SQL that makes a team store as a dnc at schema `version` made it (its migrations as they are applied: the salt's
 * source in migration 1 is a function of the session, pgcrypto not being assumed), for a test of the upgrade.
 */
function schemaAt(version: number): string {
  const old = MIGRATIONS.filter((m) => m.version <= version);
  const random = 'gen_random_bytes_fallback()';
  return `CREATE SCHEMA dnc;
CREATE TABLE dnc.schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now());
CREATE FUNCTION pg_temp.${random} RETURNS bytea LANGUAGE sql AS
  $$ SELECT decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex') $$;
${old.map((m) => m.sql.replaceAll(random, `pg_temp.${random}`)).join(';\n')};
INSERT INTO dnc.schema_migrations (version, name) VALUES ${old.map((m) => `(${m.version}, 'old')`).join(', ')};`;
}
