// Anchors in the user's state folder: what dnc last wrote for each output, and the last audit head it saw of each
// internal list. The threat model (docs/compliance-evidence.md): someone who can write the results folder and a list
// file, but not the user's state folder. A results file, its manifest and its journal rewritten to agree with one
// another still disagree with the anchor; a list whose last audit entries were cut no longer holds its anchored head.
import path from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import type { ChainAnchor, ChainHead } from '../journal/journal.js';
import { openLocalStore, type LocalSchema } from './local-store.js';

/** What dnc last wrote for one output. */
export interface OutputAnchor {
  output: string;
  sha256: string;
  bytes: number;
  manifestSha256: string | null;
  journal: string;
  writtenAt: string;
}

/** The newest audit head dnc saw of one list (its id is the UUID written into the list when it was made). */
export interface ListAnchor {
  listId: string;
  path: string;
  head: string | null;
  entries: number;
  at: string;
}

/** The anchors' schema, version by version (src/stores/local-store.ts). */
export const ANCHORS_SCHEMA: LocalSchema = {
  what: 'the anchors file',
  migrations: [
    {
      version: 1,
      name: "outputs' hashes and lists' heads",
      up: `
CREATE TABLE IF NOT EXISTS outputs (
  output TEXT PRIMARY KEY, sha256 TEXT NOT NULL, bytes INTEGER NOT NULL, manifest_sha256 TEXT,
    journal TEXT NOT NULL, written_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS lists (
  list_id TEXT PRIMARY KEY, path TEXT NOT NULL, head TEXT, entries INTEGER NOT NULL, at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS lists_by_path ON lists (path);
`,
    },
    {
      version: 2,
      name: "journals' chain heads",
      // The head before the last is kept: that commit may not have landed (src/journal/chain.ts).
      up: `
CREATE TABLE IF NOT EXISTS journals (
  journal TEXT PRIMARY KEY, entries INTEGER NOT NULL, head TEXT NOT NULL, before_entries INTEGER NOT NULL,
    before_head TEXT NOT NULL, at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS journals_by_head ON journals (head);
`,
    },
  ],
};

interface JournalRow {
  journal: string;
  entries: number;
  head: string;
  before_entries: number;
  before_head: string;
}

const anchoredHead = (r: JournalRow | undefined) =>
  r
    ? {
        journal: r.journal,
        head: { entries: r.entries, head: r.head },
        before: { entries: r.before_entries, head: r.before_head },
      }
    : null;

/** A list's place as anchored: a file's absolute path, or a team store's URL as it is. */
const placeOf = (p: string) => (/^[a-z]+:\/\//i.test(p) ? p : path.resolve(p));

export function anchorsPath(stateDir: string): string {
  return path.join(stateDir, 'anchors.sqlite');
}

export class Anchors {
  private constructor(private readonly db: BetterSqlite3.Database) {}

  static async open(stateDir: string): Promise<Anchors> {
    return new Anchors(await openLocalStore(stateDir, anchorsPath(stateDir), ANCHORS_SCHEMA));
  }

  recordOutput(a: OutputAnchor): void {
    this.db
      .prepare(
        `INSERT INTO outputs (output, sha256, bytes, manifest_sha256, journal, written_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (output) DO UPDATE SET sha256 = excluded.sha256, bytes = excluded.bytes,
           manifest_sha256 = excluded.manifest_sha256,
           journal = excluded.journal, written_at = excluded.written_at`,
      )
      .run(path.resolve(a.output), a.sha256, a.bytes, a.manifestSha256, a.journal, a.writtenAt);
  }

  output(file: string): OutputAnchor | null {
    return this.outputWhere('output = ?', path.resolve(file));
  }

  /** The last output anchored with this manifest (a file and manifest moved or copied since: another path). */
  outputWithManifest(manifestSha256: string): OutputAnchor | null {
    return this.outputWhere('manifest_sha256 = ? ORDER BY written_at DESC LIMIT 1', manifestSha256);
  }

  private outputWhere(where: string, value: string): OutputAnchor | null {
    const r = this.db
      .prepare<
        [string],
        {
          output: string;
          sha256: string;
          bytes: number;
          manifest_sha256: string | null;
          journal: string;
          written_at: string;
        }
      >(`SELECT * FROM outputs WHERE ${where}`)
      .get(value);
    return r
      ? {
          output: r.output,
          sha256: r.sha256,
          bytes: r.bytes,
          manifestSha256: r.manifest_sha256,
          journal: r.journal,
          writtenAt: r.written_at,
        }
      : null;
  }

  recordList(a: ListAnchor): void {
    this.db
      .prepare(
        `INSERT INTO lists (list_id, path, head, entries, at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (list_id) DO UPDATE SET path = excluded.path, head = excluded.head,
           entries = excluded.entries, at = excluded.at`,
      )
      .run(a.listId, placeOf(a.path), a.head, a.entries, a.at);
  }

  /**
   * The anchor of the list with this id, else of the last list anchored at this path (another list standing there now).
   */
  list(listId: string | null, file: string): ListAnchor | null {
    type Row = { list_id: string; path: string; head: string | null; entries: number; at: string };
    const r =
      (listId ? this.db.prepare<[string], Row>('SELECT * FROM lists WHERE list_id = ?').get(listId) : undefined) ??
      this.db.prepare<[string], Row>('SELECT * FROM lists WHERE path = ? ORDER BY at DESC LIMIT 1').get(placeOf(file));
    return r ? { listId: r.list_id, path: r.path, head: r.head, entries: r.entries, at: r.at } : null;
  }

  /** The anchor of the last list anchored at this path, whatever list stands there now. */
  listAt(file: string): ListAnchor | null {
    return this.list(null, file);
  }

  /** Forgets every anchor of a list at this path (a list restored on purpose is anchored afresh). */
  forgetListsAt(file: string): void {
    this.db.prepare('DELETE FROM lists WHERE path = ?').run(path.resolve(file));
  }

  /**
   * The anchor of one journal's chain head, written before each of its commits (a statement prepared once: the
   * commit path is hot). Closing it closes these anchors.
   */
  journalAnchor(journalFile: string, now: () => Date): ChainAnchor {
    const journal = path.resolve(journalFile);
    // Written at every commit of the journal: durable as the journal's own log is (NORMAL), not synced on each write.
    // The connection is the journal's alone (journalAnchorIn).
    this.db.pragma('synchronous = NORMAL');
    const write = this.db.prepare<[string, number, string, number, string, string]>(
      `INSERT INTO journals (journal, entries, head, before_entries, before_head, at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (journal) DO UPDATE SET entries = excluded.entries, head = excluded.head,
         before_entries = excluded.before_entries, before_head = excluded.before_head, at = excluded.at`,
    );
    const read = this.db.prepare<[string], JournalRow>('SELECT * FROM journals WHERE journal = ?');
    const byHead = this.db.prepare<[string], JournalRow>(
      'SELECT * FROM journals WHERE head = ? ORDER BY at DESC LIMIT 1',
    );
    return {
      read: () => anchoredHead(read.get(journal)),
      readByHead: (head) => anchoredHead(byHead.get(head)),
      write: (h: ChainHead, before: ChainHead) =>
        write.run(journal, h.entries, h.head, before.entries, before.head, now().toISOString()),
      close: () => this.close(),
    };
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

/** The anchor of a journal's chain in the state folder; null without one (the chain is then checked against itself). */
export async function journalAnchorIn(
  stateDir: string | null,
  journalFile: string,
  now: () => Date,
): Promise<ChainAnchor | null> {
  return stateDir === null ? null : (await Anchors.open(stateDir)).journalAnchor(journalFile, now);
}
