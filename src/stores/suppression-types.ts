// The internal list's shared vocabulary: its entries, audit log and identity, the hash chain, where a local list
// lives, and what a list says of a number. Both implementations (SQLite, PostgreSQL) and their users take these.
import { createHash } from 'node:crypto';
import path from 'node:path';

export const EXEMPTION_BASES = ['consent', 'ebr-purchase', 'ebr-inquiry'] as const;
export type ExemptionBasis = (typeof EXEMPTION_BASES)[number];

/** `restore`: the list was put back from a backup (or accepted as it stands) on purpose; it names no number. */
export type AuditAction = 'suppress' | 'unsuppress' | 'exempt' | 'unexempt' | 'restore';

/** An exemption as `dnc exempt add` (or an import) gives it. */
export interface ExemptionItem {
  e164: string;
  country: string | null;
  basis: ExemptionBasis;
  until: string;
  evidence: string | null;
}

/** A suppression as its table row holds it (either store). */
export const toSuppression = (r: Record<string, string | null>): Suppression => ({
  e164: r.e164!,
  country: r.country ?? null,
  addedAt: r.added_at!,
  who: r.who!,
  reason: r.reason ?? null,
  source: r.source ?? null,
});

/** An exemption as its table row holds it (either store). */
export const toExemption = (r: Record<string, string | null>): Exemption => ({
  e164: r.e164!,
  country: r.country ?? null,
  basis: r.basis as ExemptionBasis,
  until: r.until!,
  evidence: r.evidence ?? null,
  addedAt: r.added_at!,
  who: r.who!,
});

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
  /**
   * The number's country, as its row stores it: hashed from entry format 2 on (the team store's entries since its
   * schema 4); absent or null in format 1, whose hash does not cover it.
   */
  country?: string | null;
  /** The entry's format: 1 (absent: a local list, or a team entry older than schema 4) or 2 (country hashed too). */
  format?: number;
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

/**
 * The chained hash of an audit entry: SHA-256 of the previous entry's hash, a newline and this entry's fields as a
 * JSON array. Format 2 starts the array with 2 and ends it with the country (so a format-1 entry cannot pass for
 * one); the team store computes the same in SQL (dnc.entry_hash, PostgreSQL migration 4).
 */
export function entryHash(previous: string, e: Omit<AuditEntry, 'id' | 'hash'>): string {
  const fields = [e.at, e.action, e.e164, e.who, e.reason, e.source, e.basis, e.until, e.evidence];
  const canonical = JSON.stringify((e.format ?? 1) >= 2 ? [2, ...fields, e.country ?? null] : fields);
  return createHash('sha256').update(previous).update('\n').update(canonical).digest('hex');
}

export interface ChangeResult {
  /** Entries that changed the list (an audit entry each). */
  changed: number;
  /** Entries that were already so (no audit entry: the log records changes, not repeats). */
  unchanged: number;
}

/** The id of the first audit entry (oldest first) that does not match the hash chain, or null. */
export function firstBrokenEntry(entries: Iterable<AuditEntry>): number | null {
  let previous = '';
  for (const r of entries) {
    if (entryHash(previous, r) !== r.hash) return r.id;
    previous = r.hash;
  }
  return null;
}

/**
 * Where a list's entries differ from what its audit log says they are, replayed oldest first (null: they agree).
 * The log guards itself (append-only, chained), not the entries: only dnc's own changes keep the two in step.
 */
export function replayMismatch(
  log: Iterable<Pick<AuditEntry, 'action' | 'e164' | 'basis' | 'until'>>,
  suppressed: Iterable<{ e164: string }>,
  exemptions: Iterable<{ e164: string; basis: string; until: string }>,
): string | null {
  const onList = new Set<string>();
  const exempt = new Map<string, string>();
  for (const e of log) {
    if (e.action === 'suppress') onList.add(e.e164);
    else if (e.action === 'unsuppress') onList.delete(e.e164);
    else if (e.action === 'exempt') exempt.set(e.e164, `${e.basis} until ${e.until}`);
    else if (e.action === 'unexempt') exempt.delete(e.e164);
  }
  for (const { e164 } of suppressed) {
    if (!onList.delete(e164)) return `${e164} is on the list, but no audit entry put it there`;
  }
  for (const e164 of onList) return `${e164} is not on the list, but no audit entry took it off`;
  for (const x of exemptions) {
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
 * Where an entry's stored columns differ from the audit entry that put it there (when, who, why, from where; an
 * exemption's evidence): the chain hashes every column of the log, and each entry must be its log's copy. Null when
 * they agree. (Replay says whether each number is on the list; this, whether its row is the one the log recorded.)
 */
export function columnMismatch(
  log: Iterable<AuditEntry>,
  suppressed: Iterable<Suppression>,
  exemptions: Iterable<Exemption>,
): string | null {
  const last = new Map<string, AuditEntry>();
  for (const e of log) if (e.action === 'suppress' || e.action === 'exempt') last.set(`${e.action} ${e.e164}`, e);
  const differ = (what: string, e164: string, pairs: Array<[string, unknown, unknown]>) => {
    for (const [column, row, logged] of pairs)
      if ((row ?? null) !== (logged ?? null))
        return (
          `${e164}'s ${what} says ${column} ${JSON.stringify(row)}, but its audit entry says ` + JSON.stringify(logged)
        );
    return null;
  };
  for (const s of suppressed) {
    const e = last.get(`suppress ${s.e164}`);
    if (!e) continue; // replay says so
    const problem = differ('entry', s.e164, [
      ...countryOf(s, e),
      ['added_at', s.addedAt, e.at],
      ['who', s.who, e.who],
      ['reason', s.reason, e.reason],
      ['source', s.source, e.source],
    ]);
    if (problem) return problem;
  }
  for (const x of exemptions) {
    const e = last.get(`exempt ${x.e164}`);
    if (!e) continue;
    const problem = differ('exemption', x.e164, [
      ...countryOf(x, e),
      ['added_at', x.addedAt, e.at],
      ['who', x.who, e.who],
      ['evidence', x.evidence, e.evidence],
    ]);
    if (problem) return problem;
  }
  return null;
}

/** The country pair compared when the entry's hash covers it (format 2). */
const countryOf = (row: { country: string | null }, e: AuditEntry): Array<[string, unknown, unknown]> =>
  (e.format ?? 1) >= 2 ? [['country', row.country, e.country]] : [];

/** What stood for each number once the entries given (oldest first, up to a head) were written. */
export function standingOf(
  entries: Iterable<AuditEntry>,
  numbers: ReadonlySet<string>,
): Map<string, { suppression: AuditEntry | null; exemption: AuditEntry | null }> {
  const out = new Map<string, { suppression: AuditEntry | null; exemption: AuditEntry | null }>();
  for (const e of entries) {
    if (!numbers.has(e.e164)) continue;
    const s = out.get(e.e164) ?? { suppression: null, exemption: null };
    if (e.action === 'suppress' || e.action === 'unsuppress') s.suppression = e.action === 'suppress' ? e : null;
    else s.exemption = e.action === 'exempt' ? e : null;
    out.set(e.e164, s);
  }
  return out;
}

/** The state hash of a list: SHA-256 of its entries, sorted (two scrubs shown to have used the same state). */
export function stateSha256(
  suppressed: Iterable<{ e164: string }>,
  exemptions: Iterable<{ e164: string; basis: string; until: string }>,
): string {
  const hash = createHash('sha256');
  for (const r of suppressed) hash.update(`S ${r.e164}\n`);
  for (const r of exemptions) hash.update(`E ${r.e164} ${r.basis} ${r.until}\n`);
  return hash.digest('hex');
}

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
export async function decide(
  store: {
    name: string;
    suppression(e164: string): Promise<Suppression | null>;
    exemption(e164: string): Promise<Exemption | null>;
  } | null,
  e164: string,
  at: Date,
): Promise<ComplianceDecision> {
  if (!store) return { kind: 'none' };
  const s = await store.suppression(e164);
  if (s) return { kind: 'suppressed', listSource: `internal:${store.name}`, suppression: s };
  const x = await store.exemption(e164);
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
