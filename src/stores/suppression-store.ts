// The internal do-not-call list and its exemptions: one SQLite file, an append-only hash-chained audit log, the only
// module that touches it.
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { inputError, isDncError, usageError } from '../errors.js';
import { tightenPrivateFile } from '../private-files.js';
import type { SuppressionList } from './interfaces.js';
import { migrateLocal, type LocalSchema } from './local-store.js';
import {
  entryHash,
  firstBrokenEntry,
  listNameOf,
  replayMismatch,
  stateSha256,
  standingOf,
  type Actor,
  type AuditAction,
  type AuditEntry,
  type ChangeResult,
  type Exemption,
  type ExemptionItem,
  type ListIdentity,
  type Suppression,
  toExemption,
  toSuppression,
} from './suppression-types.js';

/** An audit entry as its table row holds it (the same fields). */
type EntryRow = AuditEntry;

const LIST_BUSY_TIMEOUT_MS = 30_000;

function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED';
}

/** Another process kept the list's write lock past the busy timeout (an import, a stuck sqlite3 shell). */
function listBusy(file: string, waitedMs: number, consequence: string) {
  return inputError(
    'E_LIST_BUSY',
    `the suppression list ${file} stayed locked by another process for ${waitedMs / 1000} s; ${consequence}`,
    {
      hint:
        'try again once the other change has ended (another dnc suppress/exempt, or a program holding the ' +
        'file open for writing)',
    },
  );
}

const auditTable = (actions: string) => `CREATE TABLE IF NOT EXISTS audit (
  id INTEGER PRIMARY KEY,
  at TEXT NOT NULL,
  action TEXT NOT NULL CHECK (action IN (${actions})),
  e164 TEXT NOT NULL, who TEXT NOT NULL, reason TEXT, source TEXT, basis TEXT, until TEXT, evidence TEXT,
  hash TEXT NOT NULL
);`;
// The audit log is the record an auditor relies on: nothing in it is ever changed or removed.
const AUDIT_TRIGGERS = `
CREATE TRIGGER IF NOT EXISTS audit_append_only_update BEFORE UPDATE ON audit BEGIN SELECT RAISE(ABORT,
  'the audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_append_only_delete BEFORE DELETE ON audit BEGIN SELECT RAISE(ABORT,
  'the audit log is append-only'); END;`;

/** The list's schema, version by version (src/stores/local-store.ts). */
export const LIST_SCHEMA: LocalSchema = {
  what: 'the suppression list',
  migrations: [
    {
      version: 1,
      name: 'suppressions, exemptions and the hash-chained audit log',
      up: `
CREATE TABLE IF NOT EXISTS list_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS suppressions (
  e164 TEXT PRIMARY KEY, country TEXT, added_at TEXT NOT NULL, who TEXT NOT NULL, reason TEXT, source TEXT
);
CREATE TABLE IF NOT EXISTS exemptions (
  e164 TEXT PRIMARY KEY, country TEXT,
  basis TEXT NOT NULL CHECK (basis IN ('consent', 'ebr-purchase', 'ebr-inquiry')),
  until TEXT NOT NULL, evidence TEXT, added_at TEXT NOT NULL, who TEXT NOT NULL
);
${auditTable("'suppress', 'unsuppress', 'exempt', 'unexempt'")}
${AUDIT_TRIGGERS}
`,
    },
    {
      version: 2,
      name: 'the audit log records a list restored on purpose',
      // SQLite cannot change a CHECK: the table is rebuilt, every entry and its hash kept, its triggers made again.
      // A list of an older dnc may have been rebuilt already (dnc list restore did it when first needed).
      up: (db) => {
        const sql =
          db.prepare<[], { sql: string }>("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'audit'").get()
            ?.sql ?? '';
        if (sql.includes("'restore'")) return;
        db.exec(`DROP TRIGGER IF EXISTS audit_append_only_update; DROP TRIGGER IF EXISTS audit_append_only_delete;
          ALTER TABLE audit RENAME TO audit_before_restore;
          ${auditTable("'suppress', 'unsuppress', 'exempt', 'unexempt', 'restore'")}
          INSERT INTO audit SELECT * FROM audit_before_restore;
          DROP TABLE audit_before_restore;
          ${AUDIT_TRIGGERS}`);
      },
    },
  ],
};

/** A list file this process may only read (a read-only share): it is read as it is, never migrated. */
function isReadOnly(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_READONLY');
}

/** The internal list in one SQLite file (the local store's; a list on a shared drive too). */
export class SuppressionStore implements SuppressionList {
  readonly name: string;
  readonly shared = false;
  private readonly st;
  private constructor(
    private readonly db: BetterSqlite3.Database,
    readonly path: string,
    /** How long a change waits for another process's write lock (SQLite's busy timeout). */
    private readonly busyMs = LIST_BUSY_TIMEOUT_MS,
  ) {
    this.name = listNameOf(path);
    // Prepared once: an import of 100,000 numbers runs each of these 100,000 times.
    this.st = {
      lastHash: db.prepare<[], { hash: string }>('SELECT hash FROM audit ORDER BY id DESC LIMIT 1'),
      audit: db.prepare(
        'INSERT INTO audit (at, action, e164, who, reason, source, basis, until, evidence, hash) VALUES (@at, ' +
          '@action, @e164, @who, @reason, @source, @basis, @until, @evidence, @hash)',
      ),
      suppression: db.prepare<[string], Record<string, string | null>>('SELECT * FROM suppressions WHERE e164 = ?'),
      suppress: db.prepare(
        'INSERT INTO suppressions (e164, country, added_at, who, reason, source) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      unsuppress: db.prepare('DELETE FROM suppressions WHERE e164 = ?'),
      exemption: db.prepare<[string], Record<string, string | null>>('SELECT * FROM exemptions WHERE e164 = ?'),
      exempt: db.prepare(
        `INSERT INTO exemptions (e164, country, basis, until, evidence, added_at, who) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (e164) DO UPDATE SET country = excluded.country, basis = excluded.basis, until = excluded.until,
           evidence = excluded.evidence, added_at = excluded.added_at, who = excluded.who`,
      ),
      unexempt: db.prepare('DELETE FROM exemptions WHERE e164 = ?'),
    };
  }

  /**
   * Opens the list. `create`: make it (folder 0700 in the state folder, file 0600) when missing;
   * otherwise a missing file is an empty list and nothing is created (check and batch only read).
   */
  static async open(
    file: string,
    options: { create: boolean; explicit?: boolean; busyTimeoutMs?: number },
  ): Promise<SuppressionStore | null> {
    const busyMs = options.busyTimeoutMs ?? LIST_BUSY_TIMEOUT_MS;
    const exists = existsSync(file);
    if (!exists && !options.create) return null;
    const { default: Database } = await import('better-sqlite3');
    const dir = path.dirname(file);
    if (!exists) {
      // The default folder is the user's own; a shared folder named with --suppression-list keeps its permissions.
      if (!existsSync(dir)) {
        if (options.explicit)
          throw usageError('E_USAGE', `the folder of the suppression list ${file} does not exist`, {
            hint: 'create it first, or give another --suppression-list',
          });
        mkdirSync(dir, { recursive: true, mode: 0o700 });
      }
    }
    let db: BetterSqlite3.Database | undefined;
    try {
      // A colleague's import of 100,000 numbers holds the write lock for seconds: wait for it, up to 30 s.
      db = new Database(file, { timeout: busyMs });
      // A rollback journal, not WAL: a list kept on a shared drive must work where shared memory does not.
      db.pragma('journal_mode = DELETE');
      try {
        migrateLocal(db, LIST_SCHEMA, file);
      } catch (err) {
        if (!isReadOnly(err)) throw err;
      }
    } catch (err) {
      if (db?.open) db.close();
      if (isDncError(err)) throw err;
      if (isBusy(err)) throw listBusy(file, busyMs, 'nothing was sent or changed');
      throw inputError('E_LIST_UNREADABLE', `cannot open the suppression list ${file}: ${(err as Error).message}`, {
        hint: 'it must be a list written by `dnc suppress` (an SQLite file); check the path and its permissions',
        cause: err,
      });
    }
    if (!exists) chmodSync(file, 0o600);
    // The default list, in the user's state folder, is theirs alone even if loosened since. A list named with
    // --suppression-list or recorded by a scrub (`explicit` not false: a shared drive) keeps the permissions its
    // team gave it, and so does a default path that is a link to such a list (chmod would follow it).
    else if (options.explicit === false && !lstatSync(file).isSymbolicLink()) tightenPrivateFile(file);
    const store = new SuppressionStore(db, file, busyMs);
    if (!store.meta('id')) {
      db.prepare('INSERT OR IGNORE INTO list_meta (key, value) VALUES (?, ?), (?, ?)').run(
        'id',
        randomUUID(),
        'created_at',
        new Date().toISOString(),
      );
    }
    return store;
  }

  /** A list that was never written reads as empty (in memory: reading never creates the file). */
  static async empty(file: string): Promise<SuppressionStore> {
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(':memory:');
    migrateLocal(db, LIST_SCHEMA, file);
    return new SuppressionStore(db, file);
  }

  /** The UUID the list was given when created (a copy keeps it). */
  get id(): string {
    return this.meta('id') ?? '';
  }

  private meta(key: string): string | null {
    return (
      this.db.prepare<[string], { value: string }>('SELECT value FROM list_meta WHERE key = ?').get(key)?.value ?? null
    );
  }

  private append(
    now: Date,
    action: AuditAction,
    e164: string,
    actor: Actor,
    extra: { basis?: string | null; until?: string | null; evidence?: string | null } = {},
  ): void {
    const last = this.st.lastHash.get();
    const entry = {
      at: now.toISOString(),
      action,
      e164,
      who: actor.who,
      reason: actor.reason ?? null,
      source: actor.source ?? null,
      basis: extra.basis ?? null,
      until: extra.until ?? null,
      evidence: extra.evidence ?? null,
    };
    this.st.audit.run({ ...entry, hash: entryHash(last?.hash ?? '', entry) });
  }

  /**
   * Records that this list was restored on purpose (from `source`, replacing a list whose last head was `replaced`):
   * an audit entry of its own, chained like the others (a list of an older dnc was migrated to allow it when opened).
   */
  async recordRestore(actor: Actor, now: Date, replaced: string): Promise<void> {
    this.db.transaction(() => this.append(now, 'restore', '', actor, { evidence: replaced })).immediate();
  }

  /** Adds numbers to the internal list (each change audited; one transaction). */
  async suppress(
    numbers: ReadonlyArray<{ e164: string; country: string | null }>,
    actor: Actor,
    now: Date,
  ): Promise<ChangeResult> {
    return this.change(numbers, (n) => {
      if (this.isSuppressedNow(n.e164)) return false;
      this.st.suppress.run(n.e164, n.country, now.toISOString(), actor.who, actor.reason ?? null, actor.source ?? null);
      this.append(now, 'suppress', n.e164, actor);
      return true;
    });
  }

  /** Takes numbers off the list: a new audit entry each; the entry that added them stays. */
  async unsuppress(numbers: readonly string[], actor: Actor, now: Date): Promise<ChangeResult> {
    return this.change(numbers, (e164) => {
      if (this.st.unsuppress.run(e164).changes === 0) return false;
      this.append(now, 'unsuppress', e164, actor);
      return true;
    });
  }

  /**
   * One transaction over `items`; `apply` says whether it changed anything (audited inside it).
   * BEGIN IMMEDIATE takes the write lock before the first read: two processes that each read
   * under a deferred BEGIN and then both want to write deadlock, and SQLite fails one of them at
   * once with SQLITE_BUSY instead of letting it wait (the busy timeout never applies). Taking the
   * lock first, a second agent adding to a shared list just waits its turn, and reads the
   * audit head only once it holds the lock, so the hash chain stays one line.
   */
  private async change<T>(items: readonly T[], apply: (item: T) => boolean): Promise<ChangeResult> {
    const out = { changed: 0, unchanged: 0 };
    try {
      this.db
        .transaction(() => {
          for (const item of items) {
            if (apply(item)) out.changed++;
            else out.unchanged++;
          }
        })
        .immediate();
    } catch (err) {
      // Rolled back whole: nothing of this change is in the list.
      if (isBusy(err)) throw listBusy(this.path, this.busyMs, 'nothing was changed');
      throw err;
    }
    return out;
  }

  private isSuppressedNow(e164: string): boolean {
    return this.st.suppression.get(e164) !== undefined;
  }

  async suppression(e164: string): Promise<Suppression | null> {
    const r = this.st.suppression.get(e164);
    return r ? toSuppression(r) : null;
  }

  async suppressions(): Promise<Suppression[]> {
    return this.suppressionsNow();
  }

  private suppressionsNow(): Suppression[] {
    return this.db
      .prepare<[], Record<string, string | null>>('SELECT * FROM suppressions ORDER BY e164')
      .all()
      .map(toSuppression);
  }

  /** Adds or replaces an exemption (a replacement is audited like an addition, with the new terms). */
  exempt(items: readonly ExemptionItem[], actor: Actor, now: Date): Promise<ChangeResult> {
    return this.change(items, (x) => {
      const old = this.exemptionNow(x.e164);
      if (old && old.basis === x.basis && old.until === x.until && old.evidence === x.evidence) return false;
      this.st.exempt.run(x.e164, x.country, x.basis, x.until, x.evidence, now.toISOString(), actor.who);
      this.append(now, 'exempt', x.e164, actor, { basis: x.basis, until: x.until, evidence: x.evidence });
      return true;
    });
  }

  async unexempt(numbers: readonly string[], actor: Actor, now: Date): Promise<ChangeResult> {
    return this.change(numbers, (e164) => {
      if (this.st.unexempt.run(e164).changes === 0) return false;
      this.append(now, 'unexempt', e164, actor);
      return true;
    });
  }

  async exemption(e164: string): Promise<Exemption | null> {
    return this.exemptionNow(e164);
  }

  private exemptionNow(e164: string): Exemption | null {
    const r = this.st.exemption.get(e164);
    return r ? toExemption(r) : null;
  }

  async exemptions(): Promise<Exemption[]> {
    return this.exemptionsNow();
  }

  private exemptionsNow(): Exemption[] {
    return this.db
      .prepare<[], Record<string, string | null>>('SELECT * FROM exemptions ORDER BY e164')
      .all()
      .map(toExemption);
  }

  async counts(): Promise<{ suppressions: number; exemptions: number; audit: number }> {
    return this.countsNow();
  }

  private countsNow(): { suppressions: number; exemptions: number; audit: number } {
    const n = (table: string) => this.db.prepare<[], { n: number }>(`SELECT COUNT(*) AS n FROM ${table}`).get()?.n ?? 0;
    return { suppressions: n('suppressions'), exemptions: n('exemptions'), audit: n('audit') };
  }

  /** The audit log, oldest first (optionally only the entries of one number). */
  async audit(e164?: string): Promise<AuditEntry[]> {
    const rows = e164
      ? this.db.prepare<[string], EntryRow>('SELECT * FROM audit WHERE e164 = ? ORDER BY id').all(e164)
      : this.db.prepare<[], EntryRow>('SELECT * FROM audit ORDER BY id').all();
    return rows;
  }

  /** Recomputes the hash chain: the id of the first entry that does not match, or null when the log is whole. */
  async brokenAuditEntry(): Promise<number | null> {
    return firstBrokenEntry(this.db.prepare<[], EntryRow>('SELECT * FROM audit ORDER BY id').iterate());
  }

  /**
   * Where the list's entries differ from what its audit log says they are (null: they agree). The triggers guard
   * the log, not the entries: a row deleted from `suppressions` with the sqlite3 shell would let an opted-out number
   * be dialled with nothing in the log to show it.
   */
  async stateMismatch(): Promise<string | null> {
    // Each query starts only when the replay reaches it: one connection runs one statement at a time.
    const lazily = function* <T>(rows: () => Iterable<T>) {
      yield* rows();
    };
    return replayMismatch(
      lazily(() =>
        this.db
          .prepare<[], Pick<EntryRow, 'action' | 'e164' | 'basis' | 'until'>>(
            'SELECT action, e164, basis, until FROM audit ORDER BY id',
          )
          .iterate(),
      ),
      lazily(() => this.db.prepare<[], { e164: string }>('SELECT e164 FROM suppressions').iterate()),
      lazily(() =>
        this.db
          .prepare<[], { e164: string; basis: string; until: string }>('SELECT e164, basis, until FROM exemptions')
          .iterate(),
      ),
    );
  }

  /**
   * The same comparison for a few numbers only (`dnc check`): each one's entries against its last
   * audit entries. A whole replay of a 100,000-entry log costs about a second (2 shared cores),
   * too much before each check; a scan per number costs milliseconds.
   */
  private stateMismatchOf(numbers: readonly string[]): string | null {
    const last = this.db.prepare<[string, string, string], Pick<EntryRow, 'action' | 'basis' | 'until'>>(
      'SELECT action, basis, until FROM audit WHERE e164 = ? AND action IN (?, ?) ORDER BY id DESC LIMIT 1',
    );
    for (const e164 of new Set(numbers)) {
      const s = last.get(e164, 'suppress', 'unsuppress');
      const logged = s?.action === 'suppress';
      if (this.isSuppressedNow(e164) !== logged)
        return logged
          ? `${e164} is not on the list, but no audit entry took it off`
          : `${e164} is on the list, but no audit entry put it there`;
      const x = last.get(e164, 'exempt', 'unexempt');
      const row = this.exemptionNow(e164);
      const entry = x?.action === 'exempt' ? `${x.basis} until ${x.until}` : null;
      if (!row && entry) return `${e164} is not exempt, but no audit entry withdrew its exemption`;
      if (row && !entry) return `${e164} is exempt, but no audit entry exempted it`;
      if (row && entry !== `${row.basis} until ${row.until}`)
        return `${e164} is exempt as ${row.basis} until ${row.until}, but its audit entry says ${entry}`;
    }
    return null;
  }

  /**
   * What is wrong with the list, if anything: an entry of its log altered, or entries its log does
   * not account for (all of them, or only those of `numbers`, the chain then left to the commands that read it all).
   */
  async integrityProblem(numbers?: readonly string[]): Promise<string | null> {
    if (numbers) return this.stateMismatchOf(numbers);
    const broken = await this.brokenAuditEntry();
    if (broken !== null) return `audit entry ${broken} does not match the hash chain`;
    return this.stateMismatch();
  }

  /** The id of the audit entry with this chained hash, or null (a head recorded by a scrub must be found here). */
  async auditEntryWithHash(hash: string): Promise<number | null> {
    return this.db.prepare<[string], { id: number }>('SELECT id FROM audit WHERE hash = ?').get(hash)?.id ?? null;
  }

  /**
   * What stood for each of `numbers` once entry `throughId` was written (the head a scrub recorded):
   * the entry that put it on the list and the one that exempted it, each null if undone by then.
   * Kept apart because a number can be both, and the reason for a do-not-call row is its suppression,
   * not a later exemption the list overrides. One pass over the log: it has no index by number.
   */
  async standingAt(
    numbers: ReadonlySet<string>,
    throughId: number,
  ): Promise<Map<string, { suppression: AuditEntry | null; exemption: AuditEntry | null }>> {
    return standingOf(
      this.db.prepare<[number], EntryRow>('SELECT * FROM audit WHERE id <= ? ORDER BY id').iterate(throughId),
      numbers,
    );
  }

  /**
   * The entries and the identity read in one transaction: the state hash a manifest records is
   * that of the very entries the scrub applied, even while a colleague changes a shared list
   * (the read lock held until the end keeps their commit out).
   */
  async snapshot(): Promise<{ suppressions: Suppression[]; exemptions: Exemption[]; identity: ListIdentity }> {
    return this.db.transaction(() => ({
      suppressions: this.suppressionsNow(),
      exemptions: this.exemptionsNow(),
      identity: this.identityNow(),
    }))();
  }

  async identity(): Promise<ListIdentity> {
    return this.identityNow();
  }

  private identityNow(): ListIdentity {
    const c = this.countsNow();
    const state = stateSha256(
      this.db.prepare<[], { e164: string }>('SELECT e164 FROM suppressions ORDER BY e164').all(),
      this.db
        .prepare<[], { e164: string; basis: string; until: string }>(
          'SELECT e164, basis, until FROM exemptions ORDER BY e164',
        )
        .all(),
    );
    const head = this.db.prepare<[], { hash: string }>('SELECT hash FROM audit ORDER BY id DESC LIMIT 1').get();
    return {
      name: this.name,
      id: this.meta('id') ?? '',
      path: this.path,
      suppressions: c.suppressions,
      exemptions: c.exemptions,
      audit_entries: c.audit,
      audit_head: head?.hash ?? null,
      state_sha256: state,
    };
  }

  async close(): Promise<void> {
    this.closeNow();
  }

  /** Closes the file at once (a caller that cannot wait). */
  closeNow(): void {
    if (this.db.open) this.db.close();
  }
}
