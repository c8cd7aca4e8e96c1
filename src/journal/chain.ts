// The journal's answers, hash-chained: each change of what a verdict is built from (a number's answer, a push's raw
// body, an exemption applied) extends the chain in the transaction that commits it, and the chain's head is anchored
// outside the journal (ChainAnchor) before that commit, so that check() finds an edit made behind dnc's back.
import { createHash } from 'node:crypto';
import type BetterSqlite3 from 'better-sqlite3';
import { internalError } from '../errors.js';

/** Where a chain stands: how many entries, and the hash of the last (GENESIS for none). */
export interface ChainHead {
  entries: number;
  head: string;
}

/**
 * The head anchored outside the journal (the state folder, src/stores/anchors.ts). It is written before the journal
 * commits: `before` is the head the journal had when that commit began, so a commit that never landed (a crash, a
 * full disk) leaves a journal at `before`, which still checks out; nothing else does.
 */
export interface ChainAnchor {
  read(): { head: ChainHead; before: ChainHead | null; journal: string } | null;
  /** The anchor of another journal path whose head is this one (a journal moved with its output); null when none. */
  readByHead(head: string): { head: ChainHead; before: ChainHead | null; journal: string } | null;
  write(head: ChainHead, before: ChainHead): void;
  close(): void;
}

export const GENESIS = '0'.repeat(64);

export const CHAIN_SCHEMA = `
CREATE TABLE IF NOT EXISTS chain (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL CHECK (kind IN ('n','p','x')),
  ref INTEGER NOT NULL, digest TEXT NOT NULL, head TEXT NOT NULL);
`;

/**
 * Journals of a dnc before chains: their answers were never chained (meta `unchained`, set by the migration), and
 * prove nothing until the user accepts them as they stand (adoptUnchained).
 */
export const UNCHAINED_KEY = 'unchained';

/**
 * Where the chain was anchored when the journal was made: 'state' (a state folder), 'none' (none: HOME missing). A
 * journal made without one is anchored by the first dnc that opens it with one (proveJournal); one made with one and
 * anchored nowhere this dnc can see (moved to another machine, or rewritten under a new name) proves nothing.
 */
export const BORN_ANCHORED_KEY = 'chain_anchor';

/** A number's record as a verdict is built from it: every column the render, the cache and the team read. */
const NUMBER_RECORD = `SELECT n.id, n.e164, n.country,
  CASE WHEN n.state IN ('done', 'pending') THEN n.state ELSE 'open' END, n.result, n.correlation_id, n.credits,
  n.do_not_call, n.list_source, n.error_code, n.error, n.checked_at, a.body
  FROM numbers n LEFT JOIN answers a ON a.number_id = n.id`;
const PUSH_RECORD = 'SELECT id, correlation_id, body, received_at FROM pushes';
/** An exemption applied to a number (it makes a do_not_call number callable): keyed by the number's id. */
const EXEMPTION_RECORD = 'SELECT number_id, basis, until, evidence FROM exemptions';
/** The digest of a number without an exemption (one taken away since it was chained). */
const NO_EXEMPTION = (id: number) => digestOf('x', [id, null]);

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
type Kind = 'n' | 'p' | 'x';
/** A record's digest: its columns after the id (the id says which row, not what it holds). */
const digestOf = (kind: Kind, record: unknown[]) => sha256(JSON.stringify([kind, ...record.slice(1)]));
const extend = (head: string, digest: string) => sha256(`${head}:${digest}`);

/** A number that was never answered: its record needs no entry of the chain. */
const OPEN_RECORD = (e164: string, country: string) =>
  digestOf('n', [0, e164, country, 'open', null, null, 0, null, null, null, null, null, null]);

export type ChainState = 'intact' | 'altered' | 'unchained' | 'unanchored';

export interface ChainCheck {
  state: ChainState;
  /** Where the journal's chain stands (recomputed, not as stored). */
  at: ChainHead;
  /** Why it is altered, unchained or unanchored, in a few words; null when intact. */
  why: string | null;
  /** The numbers (E.164) whose record is not what the chain says dnc committed. */
  altered: string[];
  /** Numbers answered before the journal was chained (an older dnc), and pushes kept then. */
  unchained: number;
  /** Where the anchor was found: this journal's path, another (moved), or nowhere (null). */
  anchoredAt: string | null;
  /** Intact, made without a state folder and met by one now: proveJournal anchors it as it stands. */
  anchorNow?: boolean;
  /** Altered only in that the anchor is ahead of the chain checked: caughtUp tells a live writer from a forger. */
  anchorAhead?: boolean;
}

type Anchored = NonNullable<ReturnType<ChainAnchor['read']>>;

export class JournalChain {
  /** Prepared at first use: a journal of an older dnc opened read-only has no chain table. */
  private prepared: ReturnType<JournalChain['prepare']> | null = null;
  /** The head within the write transaction in progress (read at its first append); null outside one. */
  private open: { start: ChainHead; now: ChainHead } | null = null;
  /** True while a write transaction of BatchJournal.atomically runs: the only place the chain may grow. */
  writing = false;

  constructor(
    private readonly db: BetterSqlite3.Database,
    private readonly anchor: ChainAnchor | null,
  ) {}

  private get st() {
    return (this.prepared ??= this.prepare());
  }

  private prepare() {
    const db = this.db;
    return {
      last: db.prepare<[], { seq: number; head: string }>('SELECT seq, head FROM chain ORDER BY seq DESC LIMIT 1'),
      insert: db.prepare<[number, string, number, string, string]>(
        'INSERT INTO chain (seq, kind, ref, digest, head) VALUES (?, ?, ?, ?, ?)',
      ),
      number: db.prepare(`${NUMBER_RECORD} WHERE n.id = ?`).raw(),
      push: db.prepare(`${PUSH_RECORD} WHERE id = ?`).raw(),
      exemption: db.prepare(`${EXEMPTION_RECORD} WHERE number_id = ?`).raw(),
    };
  }

  /** Appends the record of the number `id` as it now stands; within a write transaction. */
  number(id: number): void {
    const record = this.st.number.get(id) as unknown[] | undefined;
    if (record) this.append('n', id, digestOf('n', record));
  }

  /**
   * Appends the record of the number `id` as the caller just wrote it, in NUMBER_RECORD's order after the id (the
   * answer's hot path: no read back); within a write transaction.
   */
  numberAs(id: number, record: unknown[]): void {
    this.append('n', id, digestOf('n', [id, ...record]));
  }

  numbers(ids: Iterable<number>): void {
    for (const id of ids) this.number(id);
  }

  /** Appends the exemption the number `id` has now (or that it has none); within a write transaction. */
  exemption(id: number): void {
    const record = this.st.exemption.get(id) as unknown[] | undefined;
    this.append('x', id, record ? digestOf('x', record) : NO_EXEMPTION(id));
  }

  /** Appends a push's raw body, correlation id and arrival (its outcome may change; what it said never does). */
  push(id: number): void {
    const record = this.st.push.get(id) as unknown[] | undefined;
    if (record) this.append('p', id, digestOf('p', record));
  }

  private append(kind: Kind, ref: number, digest: string): void {
    // Outside atomically() nothing would anchor the head before the commit.
    if (!this.writing) throw internalError('the journal chain grew outside a write transaction');
    if (this.open === null) {
      const last = this.st.last.get();
      const start = last ? { entries: last.seq, head: last.head } : { entries: 0, head: GENESIS };
      this.open = { start, now: start };
    }
    const entries = this.open.now.entries + 1;
    const head = extend(this.open.now.head, digest);
    this.st.insert.run(entries, kind, ref, digest, head);
    this.open.now = { entries, head };
  }

  /** At the end of a write transaction, before its commit: the new head anchored, if the chain grew. */
  beforeCommit(): void {
    const open = this.open;
    this.open = null;
    if (open && open.now.entries !== open.start.entries) this.anchor?.write(open.now, open.start);
  }

  /** A write transaction rolled back: what it appended is gone with it. */
  rolledBack(): void {
    this.open = null;
  }

  /**
   * Chains every record an older dnc left unchained, as it stands now, and anchors the head: the user accepts the
   * journal (--accept-unproven-journal). Within a write transaction.
   */
  adoptUnchained(): void {
    const chained = (kind: Kind) =>
      new Set(this.db.prepare<[string], number>('SELECT DISTINCT ref FROM chain WHERE kind = ?').pluck().all(kind));
    const numbers = chained('n');
    for (const id of this.db.prepare<[], number>('SELECT id FROM numbers ORDER BY id').pluck().all())
      if (!numbers.has(id)) this.number(id);
    const pushes = chained('p');
    for (const id of this.db.prepare<[], number>('SELECT id FROM pushes ORDER BY id').pluck().all())
      if (!pushes.has(id)) this.push(id);
    const exemptions = chained('x');
    for (const id of this.db.prepare<[], number>('SELECT number_id FROM exemptions ORDER BY number_id').pluck().all())
      if (!exemptions.has(id)) this.exemption(id);
    this.db.prepare('DELETE FROM meta WHERE key = ?').run(UNCHAINED_KEY);
    // Anchored even when nothing was appended (every record chained already): the head is the user's word now.
    if (this.open === null) this.anchorAsItStands();
  }

  /** The head as it stands anchored (a journal made without a state folder, met by one); within a write transaction. */
  anchorAsItStands(): void {
    const at = this.stored();
    this.anchor?.write(at, at);
    if (this.anchor)
      this.db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES (?, 'state')").run(BORN_ANCHORED_KEY);
  }

  /**
   * A journal just made: where its chain is anchored from its start (the anchor of an earlier journal at this path,
   * gone with it, starts over: --restart).
   */
  born(): void {
    this.db
      .prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)')
      .run(BORN_ANCHORED_KEY, this.anchor ? 'state' : 'none');
    this.anchor?.write({ entries: 0, head: GENESIS }, { entries: 0, head: GENESIS });
  }

  /**
   * Outside a snapshot, after check() found the anchor ahead of the chain it read: whether the entries committed since
   * (by a `dnc batch` or `dnc listen` writing beside this one) continue that chain up to the anchored head. Their
   * records are the next check's to compare; their chain is checked here.
   */
  caughtUp(from: ChainHead): boolean {
    const tail = this.db
      .prepare<[number], [number, string, string]>('SELECT seq, digest, head FROM chain WHERE seq > ? ORDER BY seq')
      .raw();
    let at = from;
    const heads = new Map<number, string>([[at.entries, at.head]]);
    for (let tries = 0; tries < 5; tries++) {
      for (const [seq, digest, head] of tail.iterate(at.entries) as Iterable<[number, string, string]>) {
        const next = extend(at.head, digest);
        if (seq !== at.entries + 1 || head !== next) return false;
        at = { entries: seq, head: next };
        heads.set(seq, next);
      }
      const anchored = this.anchor?.read();
      if (!anchored) return false;
      const known = (h: ChainHead | null) => h !== null && heads.get(h.entries) === h.head;
      if (known(anchored.head) || known(anchored.before)) return true;
      // Still ahead: a commit landed after this read of the tail; read on.
      if (anchored.head.entries <= at.entries) return false;
    }
    return false;
  }

  /** The head as the chain's last row states it. */
  stored(): ChainHead {
    const last = this.st.last.get();
    return last ? { entries: last.seq, head: last.head } : { entries: 0, head: GENESIS };
  }

  /**
   * The whole journal checked: the chain recomputed entry by entry, its head against the anchor, and every number
   * and push against the last entry the chain holds of it. Reads one state of the journal (call within a snapshot
   * when others may write). `upTo`: the recomputed head after that many entries is told too (headAt).
   */
  check(upTo?: number): ChainCheck & { headAt: string | null } {
    // Read as the snapshot begins, not after the walk: a dnc writing meanwhile moves the anchor on with each commit.
    const anchoredFirst = this.anchor?.read() ?? null;
    let headAt: string | null = upTo === 0 ? GENESIS : null;
    const last = { n: new Map<number, string>(), p: new Map<number, string>(), x: new Map<number, string>() };
    let at: ChainHead = { entries: 0, head: GENESIS };
    let broken: string | null = null;
    const rows = this.db.prepare('SELECT seq, kind, ref, digest, head FROM chain ORDER BY seq').raw();
    for (const [seq, kind, ref, digest, head] of rows.iterate() as Iterable<[number, Kind, number, string, string]>) {
      const next = extend(at.head, digest);
      if (broken === null && (seq !== at.entries + 1 || head !== next)) broken = `its chain was edited at entry ${seq}`;
      at = { entries: at.entries + 1, head: next };
      if (at.entries === upTo) headAt = next;
      last[kind].set(ref, digest);
    }
    const unchainedAllowed = this.db.prepare('SELECT 1 FROM meta WHERE key = ?').get(UNCHAINED_KEY) !== undefined;
    const altered: string[] = [];
    let unchained = 0;
    const seen = { n: new Set<number>(), p: new Set<number>() };
    for (const record of this.db.prepare(`${NUMBER_RECORD} ORDER BY n.id`).raw().iterate() as Iterable<unknown[]>) {
      const [id, e164, country] = record as [number, string, string];
      seen.n.add(id);
      const digest = digestOf('n', record);
      const chained = last.n.get(id);
      if (chained === digest) continue;
      if (chained === undefined && digest === OPEN_RECORD(e164, country)) continue;
      if (chained === undefined && unchainedAllowed) unchained++;
      else altered.push(e164);
    }
    for (const record of this.db.prepare(`${PUSH_RECORD} ORDER BY id`).raw().iterate() as Iterable<unknown[]>) {
      const id = record[0] as number;
      seen.p.add(id);
      const chained = last.p.get(id);
      if (chained === digestOf('p', record)) continue;
      if (chained === undefined && unchainedAllowed) unchained++;
      else broken ??= `push ${id} is not what dnc kept`;
    }
    for (const kind of ['n', 'p'] as const)
      for (const id of last[kind].keys())
        if (!seen[kind].has(id)) broken ??= `${kind === 'n' ? 'number' : 'push'} ${id} was deleted`;
    for (const record of this.db.prepare(`${EXEMPTION_RECORD} ORDER BY number_id`).raw().iterate() as Iterable<
      unknown[]
    >) {
      const id = record[0] as number;
      const chained = last.x.get(id);
      last.x.delete(id);
      if (chained === digestOf('x', record)) continue;
      if (chained === undefined && unchainedAllowed) unchained++;
      else broken ??= `the exemption of number ${id} is not what dnc applied`;
    }
    for (const [id, digest] of last.x)
      if (digest !== NO_EXEMPTION(id)) broken ??= `the exemption of number ${id} was deleted`;
    return { ...this.judged(at, broken, altered, unchained, anchoredFirst), headAt };
  }

  private judged(
    at: ChainHead,
    broken: string | null,
    altered: string[],
    unchained: number,
    anchoredFirst: Anchored | null,
  ): ChainCheck {
    const anchored = anchoredFirst ?? (at.entries > 0 ? (this.anchor?.readByHead(at.head) ?? null) : null);
    const base = { at, altered, unchained, anchoredAt: anchored?.journal ?? null };
    if (altered.length > 0)
      return { ...base, state: 'altered', why: `${altered.length} number(s) differ from what dnc committed` };
    if (broken) return { ...base, state: 'altered', why: broken };
    const matches = (h: ChainHead | null | undefined) => h?.entries === at.entries && h.head === at.head;
    if (anchored && !matches(anchored.head) && !matches(anchored.before))
      return {
        ...base,
        state: 'altered',
        // Perhaps only a commit of another dnc landed between the snapshot and the anchor's read: see caughtUp.
        ...(anchored.head.entries > at.entries ? { anchorAhead: true } : {}),
        why:
          `its chain ends at entry ${at.entries}, not where dnc anchored it (entry ${anchored.head.entries}` +
          ` at ${anchored.journal})`,
      };
    if (unchained > 0)
      return anchored && anchored.head.entries > 0
        ? { ...base, state: 'altered', why: `${unchained} record(s) were added outside its chain` }
        : {
            ...base,
            state: 'unchained',
            why: `${unchained} record(s) were kept by a dnc before journals were chained`,
          };
    if (!anchored && this.anchor && at.entries > 0) {
      const born = this.db
        .prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?')
        .get(BORN_ANCHORED_KEY);
      if (born?.value === 'none')
        return {
          ...base,
          state: 'intact',
          why: 'made without a state folder: anchored nowhere until now',
          anchorNow: true,
        };
      return { ...base, state: 'unanchored', why: 'its chain is anchored nowhere in this state folder' };
    }
    return { ...base, state: 'intact', why: null };
  }
}
