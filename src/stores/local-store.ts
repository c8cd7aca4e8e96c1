// The small SQLite files dnc keeps for the user (check history, results cache, anchors, the internal list): one way
// to open them, and one way to bring their schema to this dnc's, as the team store's are (postgres/migrations.ts):
// ordered, numbered migrations, each applied once, the version recorded in the file (PRAGMA user_version, as a batch
// journal keeps it), and a file written by a newer dnc refused.
import { usageError, type DncError } from '../errors.js';
import { ensurePrivateDir, ensurePrivateFile } from '../private-files.js';
import type BetterSqlite3 from 'better-sqlite3';

/** One step of a local file's schema. */
export interface LocalMigration {
  version: number;
  name: string;
  /** Its SQL, or a step that reads the file first; run in the migration's transaction. */
  up: string | ((db: BetterSqlite3.Database) => void);
}

/** What a local store is and its migrations (versions 1, 2, … in order). */
export interface LocalSchema {
  /** What the file is, as a message names it: "the results cache". */
  what: string;
  migrations: readonly LocalMigration[];
}

/** The newest version of a schema: what this dnc writes. */
export function latestVersion(schema: LocalSchema): number {
  return schema.migrations.length;
}

/** The version a file's schema is at (0: made before versions were kept, or new). */
export function localVersion(db: BetterSqlite3.Database): number {
  return db.pragma('user_version', { simple: true }) as number;
}

/** A file whose schema a newer dnc wrote: this one may not know how to read it, and must not write it. */
export function localStoreTooNew(schema: LocalSchema, file: string, version: number): DncError {
  return usageError(
    'E_STORE_TOO_NEW',
    `${schema.what} ${file} is at schema version ${version}, newer than this dnc knows ` +
      `(${latestVersion(schema)}): it was written by a newer dnc`,
    { hint: 'upgrade dnc on this machine (the file is left as it is)', details: { file, version } },
  );
}

/** Refuses a file a newer dnc wrote (before anything reads or writes it). */
export function refuseNewer(db: BetterSqlite3.Database, schema: LocalSchema, file: string): void {
  const version = localVersion(db);
  if (version > latestVersion(schema)) throw localStoreTooNew(schema, file, version);
}

/**
 * Brings a file's schema to the newest this dnc knows: each missing migration in order, all in one transaction
 * that takes the write lock first (BEGIN IMMEDIATE), the version read again under it, so two processes opening one
 * file at the same moment apply each step once. Version 1 of every local store is its schema as it was before
 * versions were kept, in `IF NOT EXISTS` statements: a file made then (at version 0) takes it as it stands.
 * Returns the versions applied.
 */
export function migrateLocal(db: BetterSqlite3.Database, schema: LocalSchema, file: string): number[] {
  refuseNewer(db, schema, file);
  if (localVersion(db) === latestVersion(schema)) return [];
  return db
    .transaction(() => {
      const current = localVersion(db);
      if (current > latestVersion(schema)) throw localStoreTooNew(schema, file, current);
      const applied: number[] = [];
      for (const m of schema.migrations) {
        if (m.version <= current) continue;
        if (typeof m.up === 'string') db.exec(m.up);
        else m.up(db);
        applied.push(m.version);
      }
      if (applied.length > 0) db.pragma(`user_version = ${latestVersion(schema)}`);
      return applied;
    })
    .immediate();
}

/**
 * Opens (creating the folder and the file, and migrating its schema) a store that several dnc processes may use at
 * once: WAL so readers never block the writer, and a busy timeout so two writers wait for each other.
 */
export async function openLocalStore(dir: string, file: string, schema: LocalSchema): Promise<BetterSqlite3.Database> {
  const { default: Database } = await import('better-sqlite3');
  ensurePrivateDir(dir);
  ensurePrivateFile(file);
  const db = new Database(file, { timeout: 5_000 });
  try {
    db.pragma('journal_mode = WAL');
    migrateLocal(db, schema, file);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}
