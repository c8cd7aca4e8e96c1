// The internal do-not-call list and its exemptions: one SQLite file, an append-only hash-chained audit log, the only
// module that touches it.
import { createHash, randomUUID } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { inputError, usageError } from '../errors.js';
import { tightenPrivateFile } from '../private-files.js';

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

export const EXEMPTION_BASES = ['consent', 'ebr-purchase', 'ebr-inquiry'] as const;
export type ExemptionBasis = (typeof EXEMPTION_BASES)[number];

/** `restore`: the list was put back from a backup (or accepted as it stands) on purpose; it names no number. */
export type AuditAction = 'suppress' | 'unsuppress' | 'exempt' | 'unexempt' | 'restore';

/** Who made a change and why: every entry of the audit log carries it. */
export interface Actor {
  /** user@host */
  who: string;
  reason?: string | null;
  source?: string | null;
}

export interface Suppression {
  e164: string;
  country: string | null;
  addedAt: string;
  who: string;
  reason: string | null;
  source: string | null;
}

export interface Exemption {
  e164: string;
  country: string | null;
  basis: ExemptionBasis;
  /** The last instant the exemption holds (ISO 8601, UTC). */
  until: string;
  evidence: string | null;
  addedAt: string;
  who: string;
}

export interface AuditEntry {
  id: number;
  at: string;
  action: AuditAction;
  e164: string;
  who: string;
  reason: string | null;
  source: string | null;
  basis: string | null;
  until: string | null;
  evidence: string | null;
  /** SHA-256 of the previous entry's hash and this entry: an edited or deleted entry breaks the chain. */
  hash: string;
}

/** What a manifest and a report say about the list a scrub used. */
export interface ListIdentity {
  name: string;
  /** A UUID given when the file was created: a copy of the list keeps it, another list never has it. */
  id: string;
  path: string;
  suppressions: number;
  exemptions: number;
  audit_entries: number;
  /** The hash of the last audit entry (the whole history, chained). */
  audit_head: string | null;
  /** SHA-256 of the current entries (sorted), so two scrubs can be shown to have used the same list state. */
  state_sha256: string;
}

const AUDIT_TABLE = `CREATE TABLE IF NOT EXISTS audit (
  id INTEGER PRIMARY KEY,
  at TEXT NOT NULL,
  action TEXT NOT NULL CHECK (action IN ('suppress', 'unsuppress', 'exempt', 'unexempt', 'restore')),
  e164 TEXT NOT NULL, who TEXT NOT NULL, reason TEXT, source TEXT, basis TEXT, until TEXT, evidence TEXT,
  hash TEXT NOT NULL
);`;
// The audit log is the record an auditor relies on: nothing in it is ever changed or removed.
const AUDIT_TRIGGERS = `
CREATE TRIGGER IF NOT EXISTS audit_append_only_update BEFORE UPDATE ON audit BEGIN SELECT RAISE(ABORT,
  'the audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_append_only_delete BEFORE DELETE ON audit BEGIN SELECT RAISE(ABORT,
  'the audit log is append-only'); END;`;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS list_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS suppressions (
  e164 TEXT PRIMARY KEY, country TEXT, added_at TEXT NOT NULL, who TEXT NOT NULL, reason TEXT, source TEXT
);
CREATE TABLE IF NOT EXISTS exemptions (
  e164 TEXT PRIMARY KEY, country TEXT,
  basis TEXT NOT NULL CHECK (basis IN ('consent', 'ebr-purchase', 'ebr-inquiry')),
  until TEXT NOT NULL, evidence TEXT, added_at TEXT NOT NULL, who TEXT NOT NULL
);
${AUDIT_TABLE}
${AUDIT_TRIGGERS}
`;

type Env = Record<string, string | undefined>;

export const DEFAULT_LIST_FILE = 'do-not-call.sqlite';

/**
 * Where the list lives: --suppression-list, else DNC_SUPPRESSION_LIST, else "suppression_list" in the config, else the
 * state folder.
 */
export function suppressionListPath(
  stateDir: string,
  explicit: string | undefined,
  cwd: string,
): { path: string; explicit: boolean } {
  if (explicit) return { path: path.resolve(cwd, explicit), explicit: true };
  return { path: path.join(stateDir, DEFAULT_LIST_FILE), explicit: false };
}

/** The list's name (in dnc_list_source `internal:<name>`): the file's name without its extension. */
export function listNameOf(file: string): string {
  const base = path.basename(file).replace(/\.(sqlite3?|db)$/i, '');
  // The name lands in CSV cells and HTML: keep it to a plain token.
  return base.replace(/[^\w.-]+/g, '_') || 'default';
}

/** An audit entry as its table row holds it (the same fields). */
type EntryRow = AuditEntry;

function entryHash(previous: string, e: Omit<EntryRow, 'id' | 'hash'>): string {
  const canonical = JSON.stringify([e.at, e.action, e.e164, e.who, e.reason, e.source, e.basis, e.until, e.evidence]);
  return createHash('sha256').update(previous).update('\n').update(canonical).digest('hex');
}

export interface ChangeResult {
  /** Entries that changed the list (an audit entry each). */
  changed: number;
  /** Entries that were already so (no audit entry: the log records changes, not repeats). */
  unchanged: number;
}

export class SuppressionStore {
  readonly name: string;
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
    let db: BetterSqlite3.Database;
    try {
      // A colleague's import of 100,000 numbers holds the write lock for seconds: wait for it, up to 30 s.
      db = new Database(file, { timeout: busyMs });
      // A rollback journal, not WAL: a list kept on a shared drive must work where shared memory does not.
      db.pragma('journal_mode = DELETE');
      db.exec(SCHEMA);
    } catch (err) {
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
    db.exec(SCHEMA);
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
   * an audit entry of its own, chained like the others. Lists made before `restore` existed allow it first: their
   * audit table is rebuilt, every entry and its hash kept, in the same transaction.
   */
  recordRestore(actor: Actor, now: Date, replaced: string): void {
    this.db
      .transaction(() => {
        const sql =
          this.db
            .prepare<[], { sql: string }>("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'audit'")
            .get()?.sql ?? '';
        if (!sql.includes("'restore'")) {
          this.db
            .exec(`DROP TRIGGER IF EXISTS audit_append_only_update; DROP TRIGGER IF EXISTS audit_append_only_delete;
            ALTER TABLE audit RENAME TO audit_before_restore;
            ${AUDIT_TABLE}
            INSERT INTO audit SELECT * FROM audit_before_restore;
            DROP TABLE audit_before_restore;
            ${AUDIT_TRIGGERS}`);
        }
        this.append(now, 'restore', '', actor, { evidence: replaced });
      })
      .immediate();
  }

  /** Adds numbers to the internal list (each change audited; one transaction). */
  suppress(numbers: ReadonlyArray<{ e164: string; country: string | null }>, actor: Actor, now: Date): ChangeResult {
    return this.change(numbers, (n) => {
      if (this.isSuppressed(n.e164)) return false;
      this.st.suppress.run(n.e164, n.country, now.toISOString(), actor.who, actor.reason ?? null, actor.source ?? null);
      this.append(now, 'suppress', n.e164, actor);
      return true;
    });
  }

  /** Takes numbers off the list: a new audit entry each; the entry that added them stays. */
  unsuppress(numbers: readonly string[], actor: Actor, now: Date): ChangeResult {
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
  private change<T>(items: readonly T[], apply: (item: T) => boolean): ChangeResult {
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

  isSuppressed(e164: string): boolean {
    return this.st.suppression.get(e164) !== undefined;
  }

  suppression(e164: string): Suppression | null {
    const r = this.st.suppression.get(e164);
    return r ? toSuppression(r) : null;
  }

  suppressions(): Suppression[] {
    return this.db
      .prepare<[], Record<string, string | null>>('SELECT * FROM suppressions ORDER BY e164')
      .all()
      .map(toSuppression);
  }

  /** Adds or replaces an exemption (a replacement is audited like an addition, with the new terms). */
  exempt(
    items: ReadonlyArray<{
      e164: string;
      country: string | null;
      basis: ExemptionBasis;
      until: string;
      evidence: string | null;
    }>,
    actor: Actor,
    now: Date,
  ): ChangeResult {
    return this.change(items, (x) => {
      const old = this.exemption(x.e164);
      if (old && old.basis === x.basis && old.until === x.until && old.evidence === x.evidence) return false;
      this.st.exempt.run(x.e164, x.country, x.basis, x.until, x.evidence, now.toISOString(), actor.who);
      this.append(now, 'exempt', x.e164, actor, { basis: x.basis, until: x.until, evidence: x.evidence });
      return true;
    });
  }

  unexempt(numbers: readonly string[], actor: Actor, now: Date): ChangeResult {
    return this.change(numbers, (e164) => {
      if (this.st.unexempt.run(e164).changes === 0) return false;
      this.append(now, 'unexempt', e164, actor);
      return true;
    });
  }

  exemption(e164: string): Exemption | null {
    const r = this.st.exemption.get(e164);
    return r ? toExemption(r) : null;
  }

  exemptions(): Exemption[] {
    return this.db
      .prepare<[], Record<string, string | null>>('SELECT * FROM exemptions ORDER BY e164')
      .all()
      .map(toExemption);
  }

  counts(): { suppressions: number; exemptions: number; audit: number } {
    const n = (table: string) => this.db.prepare<[], { n: number }>(`SELECT COUNT(*) AS n FROM ${table}`).get()?.n ?? 0;
    return { suppressions: n('suppressions'), exemptions: n('exemptions'), audit: n('audit') };
  }

  /** The audit log, oldest first (optionally only the entries of one number). */
  audit(e164?: string): AuditEntry[] {
    const rows = e164
      ? this.db.prepare<[string], EntryRow>('SELECT * FROM audit WHERE e164 = ? ORDER BY id').all(e164)
      : this.db.prepare<[], EntryRow>('SELECT * FROM audit ORDER BY id').all();
    return rows;
  }

  /** Recomputes the hash chain: the id of the first entry that does not match, or null when the log is whole. */
  brokenAuditEntry(): number | null {
    let previous = '';
    for (const r of this.db.prepare<[], EntryRow>('SELECT * FROM audit ORDER BY id').iterate()) {
      if (entryHash(previous, r) !== r.hash) return r.id;
      previous = r.hash;
    }
    return null;
  }

  /**
   * Where the list's entries differ from what its audit log says they are, replayed oldest first
   * (null: they agree). The triggers guard the log, not the entries: a row deleted from
   * `suppressions` with the sqlite3 shell would let an opted-out number be dialled with nothing
   * in the log to show it. Only dnc's own changes keep the two in step.
   */
  stateMismatch(): string | null {
    const suppressed = new Set<string>();
    const exempt = new Map<string, string>();
    for (const e of this.db
      .prepare<[], Pick<EntryRow, 'action' | 'e164' | 'basis' | 'until'>>(
        'SELECT action, e164, basis, until FROM audit ORDER BY id',
      )
      .iterate()) {
      if (e.action === 'suppress') suppressed.add(e.e164);
      else if (e.action === 'unsuppress') suppressed.delete(e.e164);
      else if (e.action === 'exempt') exempt.set(e.e164, `${e.basis} until ${e.until}`);
      else if (e.action === 'unexempt') exempt.delete(e.e164);
    }
    for (const { e164 } of this.db.prepare<[], { e164: string }>('SELECT e164 FROM suppressions').iterate()) {
      if (!suppressed.delete(e164)) return `${e164} is on the list, but no audit entry put it there`;
    }
    for (const e164 of suppressed) return `${e164} is not on the list, but no audit entry took it off`;
    for (const x of this.db
      .prepare<[], { e164: string; basis: string; until: string }>('SELECT e164, basis, until FROM exemptions')
      .iterate()) {
      const logged = exempt.get(x.e164);
      if (logged === undefined) return `${x.e164} is exempt, but no audit entry exempted it`;
      if (logged !== `${x.basis} until ${x.until}`)
        return `${x.e164} is exempt as ${x.basis} until ${x.until}, but its audit entry says ${logged}`;
      exempt.delete(x.e164);
    }
    for (const e164 of exempt.keys()) return `${e164} is not exempt, but no audit entry withdrew its exemption`;
    return null;
  }

  /**
   * The same comparison for a few numbers only (`dnc check`): each one's entries against its last
   * audit entries. A whole replay of a 100,000-entry log costs about a second (2 shared cores),
   * too much before each check; a scan per number costs milliseconds.
   */
  stateMismatchOf(numbers: readonly string[]): string | null {
    const last = this.db.prepare<[string, string, string], Pick<EntryRow, 'action' | 'basis' | 'until'>>(
      'SELECT action, basis, until FROM audit WHERE e164 = ? AND action IN (?, ?) ORDER BY id DESC LIMIT 1',
    );
    for (const e164 of new Set(numbers)) {
      const s = last.get(e164, 'suppress', 'unsuppress');
      const logged = s?.action === 'suppress';
      if (this.isSuppressed(e164) !== logged)
        return logged
          ? `${e164} is not on the list, but no audit entry took it off`
          : `${e164} is on the list, but no audit entry put it there`;
      const x = last.get(e164, 'exempt', 'unexempt');
      const row = this.exemption(e164);
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
  integrityProblem(numbers?: readonly string[]): string | null {
    if (numbers) return this.stateMismatchOf(numbers);
    const broken = this.brokenAuditEntry();
    if (broken !== null) return `audit entry ${broken} does not match the hash chain`;
    return this.stateMismatch();
  }

  /** The id of the audit entry with this chained hash, or null (a head recorded by a scrub must be found here). */
  auditEntryWithHash(hash: string): number | null {
    return this.db.prepare<[string], { id: number }>('SELECT id FROM audit WHERE hash = ?').get(hash)?.id ?? null;
  }

  /**
   * What stood for each of `numbers` once entry `throughId` was written (the head a scrub recorded):
   * the entry that put it on the list and the one that exempted it, each null if undone by then.
   * Kept apart because a number can be both, and the reason for a do-not-call row is its suppression,
   * not a later exemption the list overrides. One pass over the log: it has no index by number.
   */
  standingAt(
    numbers: ReadonlySet<string>,
    throughId: number,
  ): Map<string, { suppression: AuditEntry | null; exemption: AuditEntry | null }> {
    const out = new Map<string, { suppression: AuditEntry | null; exemption: AuditEntry | null }>();
    for (const e of this.db
      .prepare<[number], EntryRow>('SELECT * FROM audit WHERE id <= ? ORDER BY id')
      .iterate(throughId)) {
      if (!numbers.has(e.e164)) continue;
      const s = out.get(e.e164) ?? { suppression: null, exemption: null };
      if (e.action === 'suppress' || e.action === 'unsuppress') s.suppression = e.action === 'suppress' ? e : null;
      else s.exemption = e.action === 'exempt' ? e : null;
      out.set(e.e164, s);
    }
    return out;
  }

  /**
   * The entries and the identity read in one transaction: the state hash a manifest records is
   * that of the very entries the scrub applied, even while a colleague changes a shared list
   * (the read lock held until the end keeps their commit out).
   */
  snapshot(): { suppressions: Suppression[]; exemptions: Exemption[]; identity: ListIdentity } {
    return this.db.transaction(() => ({
      suppressions: this.suppressions(),
      exemptions: this.exemptions(),
      identity: this.identity(),
    }))();
  }

  identity(): ListIdentity {
    const c = this.counts();
    const hash = createHash('sha256');
    for (const r of this.db.prepare<[], { e164: string }>('SELECT e164 FROM suppressions ORDER BY e164').iterate())
      hash.update(`S ${r.e164}\n`);
    for (const r of this.db
      .prepare<[], { e164: string; basis: string; until: string }>(
        'SELECT e164, basis, until FROM exemptions ORDER BY e164',
      )
      .iterate()) {
      hash.update(`E ${r.e164} ${r.basis} ${r.until}\n`);
    }
    const head = this.db.prepare<[], { hash: string }>('SELECT hash FROM audit ORDER BY id DESC LIMIT 1').get();
    return {
      name: this.name,
      id: this.meta('id') ?? '',
      path: this.path,
      suppressions: c.suppressions,
      exemptions: c.exemptions,
      audit_entries: c.audit,
      audit_head: head?.hash ?? null,
      state_sha256: hash.digest('hex'),
    };
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

const toSuppression = (r: Record<string, string | null>): Suppression => ({
  e164: r.e164!,
  country: r.country ?? null,
  addedAt: r.added_at!,
  who: r.who!,
  reason: r.reason ?? null,
  source: r.source ?? null,
});

const toExemption = (r: Record<string, string | null>): Exemption => ({
  e164: r.e164!,
  country: r.country ?? null,
  basis: r.basis as ExemptionBasis,
  until: r.until!,
  evidence: r.evidence ?? null,
  addedAt: r.added_at!,
  who: r.who!,
});

/** Whether an exemption holds at `at` (its `until` is the last instant it holds). */
export function exemptionHolds(x: Pick<Exemption, 'until'>, at: Date): boolean {
  const until = Date.parse(x.until);
  return Number.isFinite(until) && at.getTime() <= until;
}

export type ComplianceDecision =
  | { kind: 'suppressed'; listSource: string; suppression: Suppression }
  | { kind: 'exempt'; exemption: Exemption }
  | { kind: 'expired_exemption'; exemption: Exemption }
  | { kind: 'none' };

/**
 * What the user's own records say of a number, before any lookup. The internal list always wins:
 * an opt-out revokes consent. An exemption only matters once the register says do_not_call.
 */
export function decide(store: SuppressionStore | null, e164: string, at: Date): ComplianceDecision {
  if (!store) return { kind: 'none' };
  const s = store.suppression(e164);
  if (s) return { kind: 'suppressed', listSource: `internal:${store.name}`, suppression: s };
  const x = store.exemption(e164);
  if (!x) return { kind: 'none' };
  return exemptionHolds(x, at) ? { kind: 'exempt', exemption: x } : { kind: 'expired_exemption', exemption: x };
}

/** The dnc_exemption cell: "consent until 2027-01-31T23:59:59.999Z". */
export function exemptionLabel(x: Pick<Exemption, 'basis' | 'until'>): string {
  return `${x.basis} until ${x.until}`;
}

/** The list a command uses, from --suppression-list / DNC_SUPPRESSION_LIST / config, else the state folder. */
export function resolveListPath(
  stateDir: string,
  cwd: string,
  flag: string | undefined,
  env: Env,
  configValue: string | undefined,
): { path: string; explicit: boolean } {
  return suppressionListPath(stateDir, flag ?? (env.DNC_SUPPRESSION_LIST || undefined) ?? configValue, cwd);
}
