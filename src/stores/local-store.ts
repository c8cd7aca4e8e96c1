// The small SQLite files dnc keeps for the user (check history, results cache): one way to open them.
import { ensurePrivateDir, ensurePrivateFile } from '../private-files.js';
import type BetterSqlite3 from 'better-sqlite3';

/**
 * Opens (creating the folder and the tables) a store that several dnc processes may use at once:
 * WAL so readers never block the writer, and a busy timeout so two writers wait for each other.
 */
export async function openLocalStore(dir: string, file: string, schema: string): Promise<BetterSqlite3.Database> {
  const { default: Database } = await import('better-sqlite3');
  ensurePrivateDir(dir);
  ensurePrivateFile(file);
  const db = new Database(file, { timeout: 5_000 });
  db.pragma('journal_mode = WAL');
  db.exec(schema);
  return db;
}
