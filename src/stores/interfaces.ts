// The stores dnc keeps beyond one run, each one interface with a local (SQLite) and a team (PostgreSQL)
// implementation: the results cache, the internal list with its exemptions and audit log, the check and scrub
// history, and the team's claims on numbers being looked up. Callers see only these.
import { usageError } from '../errors.js';
import type { JournalVerdict } from '../journal/views.js';
import type {
  Actor,
  AuditEntry,
  ChangeResult,
  Exemption,
  ExemptionItem,
  ListIdentity,
  Suppression,
} from './suppression-types.js';

/** Which service and which account a cache or a claim belongs to (the key itself never reaches a store). */
export interface StoreScope {
  /** The service's origin, as journals name it. */
  service: string;
  /** The key, when it is configured: its account is its salted HMAC in the store. */
  apiKey?: string;
  /**
   * Without the key (`dnc listen` needs none): the account a batch recorded in its journal for each store it used,
   * by the store's place (`Stores.account`). A salted HMAC, as the store keys rows by; never the key.
   */
  accounts?: Readonly<Record<string, string>>;
}

/** The account of a scope in a store at `place`: the key's HMAC under `salt`, else the one recorded for `place`. */
export function scopeAccount(
  scope: StoreScope,
  salt: string,
  place: string,
  hmac: (salt: string, key: string) => string,
): string {
  if (scope.apiKey !== undefined) return hmac(salt, scope.apiKey);
  const recorded = scope.accounts?.[place];
  if (recorded === undefined)
    throw usageError(
      'E_CONFIG_MISSING',
      `no API key is configured, and the batch's journal records no account for ${place} to keep its verdicts under`,
      { hint: 'configure the API key the batch was run with (DNC_API_KEY, --api-key-file or the config file)' },
    );
  return recorded;
}

/**
 * A verdict that may be reused: only callable or do_not_call answers of the service, never failures (as a journal
 * reads them).
 */
export type CachedVerdict = JournalVerdict & {
  /** The database role that wrote it, as a team store stamps it (from schema 6); absent in a local cache. */
  who?: string | null;
};

/**
 * A batch journal's verdicts, as a cache takes them in: by SQL over the attached file, or as rows. No driver's type
 * crosses this interface: a cache that attaches the file says which columns a table of it has (`columnsOf`).
 */
export interface JournalVerdictSource {
  path: string;
  /**
   * The SQL of its verdicts and of its numbers whose pushes conflicted, over the journal attached as `schema`;
   * `columnsOf(table)`: the columns of one of its tables (a journal made by an older dnc lacks some).
   */
  sql(schema: string, columnsOf: (table: string) => readonly string[]): { verdicts: string; conflicting: string };
  /** The same, read as rows (a cache that cannot attach the file). */
  rows(): Promise<{ verdicts: CachedVerdict[]; conflicting: string[] }>;
}

/** Whose verdict it is, when a team store says (the database role that wrote it): ` (written by role alice)`. */
export function writtenBy(v: Pick<CachedVerdict, 'who'>): string {
  return v.who ? ` (written by role ${v.who})` : '';
}

/** Final verdicts by service, account and number (--reuse-within), scoped when opened. */
export interface ResultsCache {
  /** Whether any verdict was checked at or after `notBefore` (one indexed probe). */
  hasVerdictsSince(notBefore: Date): Promise<boolean>;
  get(e164: string, notBefore: Date): Promise<CachedVerdict | null>;
  /** The verdicts of these numbers checked at or after `notBefore` (one round trip for many). */
  getMany(e164s: readonly string[], notBefore: Date): Promise<Map<string, CachedVerdict>>;
  /** Stores verdicts; a newer verdict of a number replaces an older one. Returns how many were taken. */
  put(verdicts: readonly CachedVerdict[]): Promise<number>;
  /** Stores a journal's verdicts and drops those of its numbers whose pushes conflicted, in one transaction. */
  fill(source: JournalVerdictSource): Promise<void>;
  forget(e164s: readonly string[]): Promise<void>;
  close(): Promise<void>;
}

/** The internal do-not-call list, its exemptions and their hash-chained audit log. */
export interface SuppressionList {
  /** In dnc_list_source `internal:<name>`. */
  readonly name: string;
  /** A UUID given when the list was made: a copy keeps it, another list never has it. */
  readonly id: string;
  /** Where it is, as shown to people and recorded in manifests (a file, or the team store's URL without password). */
  readonly path: string;
  /** The team's list (in a PostgreSQL store) rather than a file. */
  readonly shared: boolean;
  suppress(
    numbers: ReadonlyArray<{ e164: string; country: string | null }>,
    actor: Actor,
    now: Date,
  ): Promise<ChangeResult>;
  unsuppress(numbers: readonly string[], actor: Actor, now: Date): Promise<ChangeResult>;
  exempt(items: readonly ExemptionItem[], actor: Actor, now: Date): Promise<ChangeResult>;
  unexempt(numbers: readonly string[], actor: Actor, now: Date): Promise<ChangeResult>;
  suppression(e164: string): Promise<Suppression | null>;
  exemption(e164: string): Promise<Exemption | null>;
  suppressions(): Promise<Suppression[]>;
  exemptions(): Promise<Exemption[]>;
  counts(): Promise<{ suppressions: number; exemptions: number; audit: number }>;
  /** The audit log, oldest first (optionally only the entries of one number). */
  audit(e164?: string): Promise<AuditEntry[]>;
  /** The id of the first entry that does not match the hash chain, or null when the log is whole. */
  brokenAuditEntry(): Promise<number | null>;
  /** Where the entries differ from what the audit log says they are (null: they agree). */
  stateMismatch(): Promise<string | null>;
  /** What is wrong with the list, if anything (all of it, or only the entries of `numbers`). */
  integrityProblem(numbers?: readonly string[]): Promise<string | null>;
  auditEntryWithHash(hash: string): Promise<number | null>;
  /** What stood for each number once entry `throughId` was written (the head a scrub recorded). */
  standingAt(
    numbers: ReadonlySet<string>,
    throughId: number,
  ): Promise<Map<string, { suppression: AuditEntry | null; exemption: AuditEntry | null }>>;
  /** The entries and the identity read together (the state a scrub applied). */
  snapshot(): Promise<{ suppressions: Suppression[]; exemptions: Exemption[]; identity: ListIdentity }>;
  identity(): Promise<ListIdentity>;
  close(): Promise<void>;
}

/** The team's internal list (a team store's): a SuppressionList that also takes in a local list (dnc store import). */
export interface TeamSuppressionList extends SuppressionList {
  /** Copies a whole list into this empty one, its audit log hashes and all; returns the entries copied. */
  importLog(
    log: readonly AuditEntry[],
    suppressions: readonly Suppression[],
    exemptions: readonly Exemption[],
    who: string,
  ): Promise<number>;
  /** Adds a list's entries to this one (none taken off), each audited here with where it came from (`from`). */
  merge(
    suppressions: readonly Suppression[],
    exemptions: readonly Exemption[],
    from: string,
    actor: Actor,
    now: Date,
  ): Promise<ChangeResult>;
}

/** One `dnc check` lookup, as `dnc trace` quotes it and `usage --reconcile` counts it. */
export interface CheckRecord {
  correlationId: string;
  phoneNumber: string;
  country: string | null;
  /** When dnc sent the request (ISO 8601). */
  requestedAt: string;
  answeredAt: string;
  /** The service's origin (never the key). */
  service: string;
  httpStatus: number | null;
  /** succeeded, started (webhook receipt) or failed. */
  kind: string;
  /** Credits charged (or held, for a receipt). */
  credits: number;
  /** The service's answer as received (JSON text). */
  body: string;
  webhookUrl: string | null;
}

/** Who scrubbed what, for whom and when: one row per finished batch run. */
export interface ScrubRecord {
  finishedAt: string;
  operator: string;
  seller: string | null;
  san: string | null;
  campaign: string | null;
  /** The output as its machine named it, and the machine. */
  output: string;
  host: string;
  rows: number;
  callable: number;
  credits: number;
  service: string;
  /** The internal list the scrub applied, and its audit head then. */
  listId: string | null;
  listHead: string | null;
}

/** The history of checks and scrubs. */
export interface History {
  /** Records a check and forgets what falls outside the kept window. */
  record(r: CheckRecord, now: Date): Promise<void>;
  find(correlationId: string): Promise<CheckRecord[]>;
  /** Every check of a number (E.164), oldest first. */
  findNumber(e164: string): Promise<CheckRecord[]>;
  /** Checks sent to `service` with requested_at in [start, end). */
  between(service: string, start: string, end: string): Promise<CheckRecord[]>;
  /** Whether any check was ever recorded (scrub records aside). */
  hasChecks(): Promise<boolean>;
  recordScrub(r: ScrubRecord): Promise<void>;
  /** The latest scrubs, newest first. */
  scrubs(limit: number): Promise<ScrubRecord[]>;
  close(): Promise<void>;
}

/**
 * Another machine's lookup of a number, as a claim found it. `claimant` is what that machine says it is; `role`, the
 * database role the server authenticated when it claimed the number or wrote its answer (null: a row written before
 * the store stamped it).
 */
export type ClaimAnswer =
  /** Its final answer: a verdict, or the service's final failure (invalid_phone_number …). */
  | { kind: 'answered'; answer: SharedAnswer; claimant: string; role?: string | null }
  /** A webhook lookup whose push has not come (its correlation id). */
  | { kind: 'pending'; correlationId: string; claimant: string; role?: string | null }
  /** Sent and never answered (its claimant was killed, or got no answer): it may have been charged. */
  | { kind: 'unanswered'; claimant: string; role?: string | null; claimedAt: string }
  /** Let go without a lookup (its claimant stopped first): free to claim. */
  | { kind: 'released' }
  /** On the team's internal list (an opt-out recorded since the batch began, say): never sent. */
  | { kind: 'suppressed'; list: string; addedAt: string | null };

/**
 * A colleague as rows and messages name it: what its machine says, then the role the server authenticated, in
 * brackets (as the list's `who` reads: `erin pid 4120 run 1a2b3c4d [erin]`), which no member can choose.
 */
export function memberName(a: { claimant: string; role?: string | null }): string {
  return a.role ? `${a.claimant} [${a.role}]` : a.claimant;
}

/** What a claim says of each number: ours to send, or another machine's lookup to wait for. */
export type ClaimFate = { kind: 'claimed' } | { kind: 'held'; claimant: string } | ClaimAnswer;

/** A final answer of the service as a team store keeps it for the others. */
export interface SharedAnswer {
  result: string;
  doNotCall: boolean | null;
  listSource: string | null;
  checkedAt: string | null;
  correlationId: string | null;
  errorCode: string | null;
  error: string | null;
  httpStatus: number | null;
  body: string | null;
}

/** How a claimed lookup ended. */
export type Settlement =
  | { kind: 'answered'; country: string; answer: SharedAnswer }
  | { kind: 'pending'; correlationId: string }
  /** Sent, no answer (it may have been charged). */
  | { kind: 'unanswered' }
  /** Never sent (the run stopped first, or the request was refused before it reached the service). */
  | { kind: 'released' };

/**
 * "Claim before you pay": before a lookup is sent its number is claimed for the service and account, in one
 * arbitrated statement; the claimant settles it with the answer, which the others then use.
 */
export interface LookupClaims {
  /**
   * Claims numbers (each once), `reserved` until `sending` says their requests leave; `takeOverExpired`: a lookup
   * that got no answer is taken (--resend-unanswered); `windowsMs` (by number): a colleague's verdict settled within
   * it is reused, whenever it came (without: only one settled since a lease before this run began). `sendNow`: the
   * requests of the numbers claimed leave as soon as this answers: they are claimed `sending` at once.
   */
  claim(
    e164s: readonly string[],
    takeOverExpired: boolean,
    windowsMs?: ReadonlyArray<number | null>,
    sendNow?: boolean,
  ): Promise<Map<string, ClaimFate>>;
  /** Claims of this member whose requests leave now (recorded `sending` first): those still its own. */
  sending(e164s: readonly string[]): Promise<Set<string>>;
  /** Lets go of the claims never sent and leaves the team (its heartbeat stops). */
  close(): Promise<void>;
  /** How the lookups of claimed numbers ended (the verdicts go to the team's results cache too). */
  settle(settlements: ReadonlyArray<[string, Settlement]>): Promise<void>;
  /** What became of other machines' lookups of these numbers: those still running are left out. */
  answers(e164s: readonly string[]): Promise<Map<string, ClaimAnswer>>;
  /** Verdicts of webhook lookups by correlation id (another machine's `dnc listen` stored them). */
  byCorrelation(correlationIds: readonly string[]): Promise<Map<string, SharedAnswer>>;
  /** The answers pushed for webhook lookups (`dnc listen`): their claims settled, for every machine waiting. */
  settlePushes(
    pushes: ReadonlyArray<{ correlationId: string; e164: string; country: string; answer: SharedAnswer }>,
  ): Promise<void>;
  /**
   * Verdicts an earlier run of this batch (the same origin) received but could not settle (the store was away, or
   * the run was killed before its settlement went): shared as verdicts, and its claims of them settled. Returns how
   * many claims it settled.
   */
  settleEarlier(verdicts: readonly CachedVerdict[]): Promise<number>;
  /** Who this process is, as its claims name it. */
  readonly claimant: string;
  /** How long a claim holds without an answer (ms). */
  readonly leaseMs: number;
}

/** What a member's dnc anchors in the team store for one version of an output it wrote (compliance-evidence.md). */
export interface TeamOutputAnchorInput {
  /** The run id the manifest carries: how a verifier on another machine finds the anchors of the file it holds. */
  runId: string;
  outputSha256: string;
  outputBytes: number;
  manifestSha256: string;
  outputPath: string;
  journal: string;
  host: string;
  /** Who the writer says it is (USER@host): a claim, not a proof; `who` is the store's. */
  operator: string;
  /** The internal list the scrub used, and its audit head then. */
  listId: string | null;
  listHead: string | null;
  listEntries: number | null;
}

/** An anchor as the team store keeps it: who is the database role that wrote it, at the server's time. */
export interface TeamOutputAnchor extends TeamOutputAnchorInput {
  who: string;
  at: string;
}

/** The team store's anchors of outputs: add-only (a member can insert and read, never change or delete). */
export interface TeamAnchors {
  /** Anchors one version of an output; the same content anchored again keeps its first anchor. */
  record(a: TeamOutputAnchorInput): Promise<void>;
  /** Every anchor of a run, oldest first. */
  ofRun(runId: string): Promise<TeamOutputAnchor[]>;
}
