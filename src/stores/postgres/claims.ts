// Claims in the team store: "this number is being looked up by X until T", made with one arbitrated statement before
// a lookup is sent, so that two machines wanting the same number pay for it once. Times are the server's.
import type { CachedVerdict, ClaimAnswer, ClaimFate, LookupClaims, Settlement, SharedAnswer } from '../interfaces.js';
import { SCHEMA } from './migrations.js';
import { answerSince } from './team-functions.js';
import { Membership, reapDeadMembers } from './members.js';
import type { StorePool } from './pool.js';
import { PUT_VERDICTS, verdictArrays } from './results-cache.js';

/** How long a webhook lookup may stay pending: the service's 24-hour expiry, and a margin. */
const PENDING_LEASE_MS = 25 * 3_600_000;

type Row = {
  e164: string;
  state: string;
  claimant: string;
  claimed_at: Date;
  expired: boolean;
  correlation_id: string | null;
  answer: SharedAnswer | null;
  verdict: SharedAnswer | null;
  /** The role that took the claim or wrote its answer (null: a row of a store before schema 6). */
  who: string | null;
};

/**
 * A claim is taken (inserted as `reserved`, or updated over an old one) when the number is free, or its last claim no
 * longer stands:
 * - an answer that is no verdict to reuse (a failure), or a verdict older than the number's validity window ($9, by
 *   number; without windows, one lease before this run began: `dnc check` asks for a fresh answer);
 * - a lookup that got no answer, with --resend-unanswered ($7), or older than the window;
 * - a claim of a claimant that registered no membership (an older dnc) expired before this run began;
 * - an earlier run of the same batch (its origin: the journal, whose lock says that run is over, and which asks only
 *   for numbers it never sent) left it unsettled.
 * Otherwise the row is read as it stands: a colleague's claim (reserved or sending), its answer, its webhook lookup.
 * Numbers are taken in key order, so that two members claiming overlapping lists lock them in one order.
 * A member that died is reaped (members.ts): its reserved claims deleted, its sending claims made unanswered.
 * Claims whose requests leave as soon as the statement answers are taken `sending` at once ($10): the mark a separate
 * statement would make in the next round trip, on the path of every lookup (docs/BENCHMARKS.md, item 14).
 * The statement is the owner's function (team-functions.ts): each claim it takes names the caller's role.
 */
const CLAIM = `SELECT * FROM ${SCHEMA}.claim_numbers($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`;

/**
 * Reserved claims of this member whose request leaves now: `sending`, in key order. Returns those marked. Its own
 * `sending` claims count as marked: the statement run again after the server went away before answering (idempotent).
 */
const SENDING = `SELECT e164 FROM ${SCHEMA}.claims_sending($1, $2, $3, $4, $5) AS e164`;

/**
 * Other machines' lookups of these numbers as they stand, the latest verdict cached since a claim standing for its
 * answer (and the role that wrote each).
 */
const ANSWERS = `
SELECT w.e164, coalesce(c.state, 'released') AS state, c.claimant, c.claimed_at, c.expires_at < now() AS expired,
       c.correlation_id, c.answer, c.who, ${answerSince('c', '$1', '$2')} AS verdict
  FROM (SELECT DISTINCT unnest($3::text[]) AS e164) w
  LEFT JOIN ${SCHEMA}.claims c ON c.service = $1 AND c.account = $2 AND c.e164 = w.e164`;

function fateOf(r: Row): ClaimAnswer | { kind: 'held'; claimant: string } | null {
  // On the team's list (added, maybe, since the batch began): never sent. `claimant` carries the list's name.
  if (r.state === 'suppressed') return { kind: 'suppressed', list: r.claimant || 'team', addedAt: r.correlation_id };
  if (r.state === 'released') return { kind: 'released' };
  if (r.state === 'answered' && r.answer)
    return { kind: 'answered', answer: r.answer, claimant: r.claimant, role: r.who };
  if (r.state === 'pending' && r.correlation_id)
    return { kind: 'pending', correlationId: r.correlation_id, claimant: r.claimant, role: r.who };
  if (r.state === 'sending' && r.verdict)
    return { kind: 'answered', answer: r.verdict, claimant: r.claimant, role: r.who };
  if (r.state === 'reserved' && r.expired) return { kind: 'released' };
  if (r.state === 'unanswered' || (r.state === 'sending' && r.expired))
    return { kind: 'unanswered', claimant: r.claimant, role: r.who, claimedAt: r.claimed_at.toISOString() };
  return { kind: 'held', claimant: r.claimant };
}

export class PgLookupClaims implements LookupClaims {
  private constructor(
    private readonly pool: StorePool,
    private readonly service: string,
    private readonly account: string,
    readonly claimant: string,
    readonly leaseMs: number,
    /** When this run began, by the server's clock: claims settled since are "meanwhile". */
    private readonly since: Date,
    private readonly origin: string | null,
  ) {}

  /** This process as a member of the team: joined with its first claim (a listener, which claims nothing, never). */
  private member: Promise<Membership> | null = null;

  /** When the dead were last reaped by a wait (a member waiting for a colleague looks at most once a second). */
  private reapedAt = 0;

  static async open(
    pool: StorePool,
    scope: { service: string; account: string },
    claimant: string,
    leaseMs: number,
    origin: string | null = null,
    /** When the scrub these claims serve began (a joiner's: its owner's start); by default, now. */
    since?: Date,
  ): Promise<PgLookupClaims> {
    const [{ now }] = (await pool.query<{ now: Date }>('reading the time', 'SELECT now()', [], {
      idempotent: true,
    })) as [{ now: Date }];
    return new PgLookupClaims(pool, scope.service, scope.account, claimant, leaseMs, since ?? now, origin);
  }

  async claim(
    e164s: readonly string[],
    takeOverExpired: boolean,
    windowsMs?: ReadonlyArray<number | null>,
    sendNow = false,
  ): Promise<Map<string, ClaimFate>> {
    this.member ??= Membership.join(this.pool, this.claimant);
    this.member.catch(() => (this.member = null));
    await this.member;
    const windows = windowsMs ?? e164s.map(() => null);
    const rows = await this.pool.query<Row>(
      'claiming numbers',
      CLAIM,
      [
        ...[this.service, this.account, [...e164s], this.claimant, this.leaseMs, this.since, takeOverExpired],
        ...[this.origin, [...windows], sendNow ? 'sending' : 'reserved'],
      ],
      // Run again when the server went away before answering: a batch's claims carry its origin, and the first
      // try's are taken again at once. Without one (`dnc check`) they would read as held by itself: it stops instead.
      // Committed to the server's disk before the requests leave (not relaxed): a crash of the server loses no claim
      // of a lookup sent, which a colleague would pay for again.
      { name: 'dnc-claim', idempotent: this.origin !== null },
    );
    const out = new Map<string, ClaimFate>();
    for (const r of rows) out.set(r.e164, r.state === 'claimed' ? { kind: 'claimed' } : fateOf(r)!);
    // Claimed by another machine in the same instant (its row not yet visible to this statement): wait for it.
    for (const e164 of e164s) if (!out.has(e164)) out.set(e164, { kind: 'held', claimant: 'another machine' });
    return out;
  }

  async sending(e164s: readonly string[]): Promise<Set<string>> {
    if (e164s.length === 0) return new Set();
    const rows = await this.pool.query<{ e164: string }>(
      'recording lookups sent',
      SENDING,
      [this.service, this.account, this.claimant, [...e164s], this.leaseMs],
      { name: 'dnc-sending', idempotent: true },
    );
    return new Set(rows.map((r) => r.e164));
  }

  async close(): Promise<void> {
    const member = await this.member?.catch(() => null);
    if (!member) return;
    // What is still only reserved was never sent: free for the others at once.
    await this.pool
      .query('letting claims go', `SELECT ${SCHEMA}.claims_release($1)`, [this.claimant], { idempotent: true })
      .catch(() => {});
    await member.leave();
  }

  async settle(settlements: ReadonlyArray<[string, Settlement]>): Promise<void> {
    if (settlements.length === 0) return;
    const verdicts = settlements.flatMap(([e164, s]) =>
      s.kind === 'answered' ? verdictOf(e164, s.country, s.answer, s.answer.correlationId) : [],
    );
    await this.pool.transaction(
      'settling claims',
      async (c) => {
        // The function locks every row it changes first, in key order: no cycle with a claim, a reap or another
        // member's settlement. Durable, as the claims are: an answer paid for is not lost with a crash of the server.
        await c.query(`SELECT ${SCHEMA}.claims_settle($1, $2, $3, $4, $5, $6, $7, $8)`, [
          this.service,
          this.account,
          this.claimant,
          settlements.map(([e]) => e),
          settlements.map(([, s]) => s.kind),
          settlements.map(([, s]) => (s.kind === 'answered' ? JSON.stringify(s.answer) : null)),
          settlements.map(([, s]) => (s.kind === 'pending' ? s.correlationId : null)),
          PENDING_LEASE_MS,
        ]);
        if (verdicts.length > 0) await c.query(PUT_VERDICTS, [this.service, this.account, ...verdictArrays(verdicts)]);
      },
      false,
      true, // the same settlements again leave the same rows: run again when its COMMIT's answer was lost
    );
  }

  async settleEarlier(verdicts: readonly CachedVerdict[]): Promise<number> {
    if (verdicts.length === 0 || this.origin === null) return 0;
    const sorted = [...verdicts].sort((a, b) => (a.e164 < b.e164 ? -1 : a.e164 > b.e164 ? 1 : 0));
    return this.pool.idempotentTransaction('settling what an earlier run received', async (c) => {
      // The verdicts first (added once each, by correlation id), then the claims that stood for their lookups.
      await c.query(PUT_VERDICTS, [this.service, this.account, ...verdictArrays(sorted)]);
      const r = await c.query<{ n: number }>(`SELECT ${SCHEMA}.claims_settle_origin($1, $2, $3, $4, $5) AS n`, [
        this.service,
        this.account,
        this.origin,
        sorted.map((v) => v.e164),
        sorted.map((v) => JSON.stringify(sharedAnswerOfVerdict(v))),
      ]);
      return r.rows[0]?.n ?? 0;
    });
  }

  async answers(e164s: readonly string[]): Promise<Map<string, ClaimAnswer>> {
    // Waiting for colleagues: one of them may have died since the last heartbeat (its lock is gone): look now.
    if (Date.now() - this.reapedAt >= 1_000) {
      this.reapedAt = Date.now();
      await reapDeadMembers(this.pool);
    }
    const rows = await this.pool.query<Row>('reading claims', ANSWERS, [this.service, this.account, [...e164s]], {
      idempotent: true,
    });
    const out = new Map<string, ClaimAnswer>();
    for (const r of rows) {
      const fate = fateOf(r);
      if (fate && fate.kind !== 'held') out.set(r.e164, fate);
    }
    return out;
  }

  async byCorrelation(correlationIds: readonly string[]): Promise<Map<string, SharedAnswer>> {
    const rows = await this.pool.query<{ correlation_id: string; answer: SharedAnswer }>(
      'reading claims',
      `SELECT correlation_id, answer FROM ${SCHEMA}.claims
        WHERE service = $1 AND account = $2 AND state = 'answered' AND correlation_id = ANY($3::text[])`,
      [this.service, this.account, [...correlationIds]],
      { idempotent: true },
    );
    return new Map(rows.map((r) => [r.correlation_id, r.answer]));
  }

  async settlePushes(
    pushes: ReadonlyArray<{ correlationId: string; e164: string; country: string; answer: SharedAnswer }>,
  ): Promise<void> {
    if (pushes.length === 0) return;
    const verdicts = pushes.flatMap((p) => verdictOf(p.e164, p.country, p.answer, p.correlationId));
    await this.pool.idempotentTransaction('storing pushed verdicts', async (c) => {
      await c.query(`SELECT ${SCHEMA}.settle_pushes($1, $2, $3, $4)`, [
        this.service,
        this.account,
        pushes.map((p) => p.correlationId),
        pushes.map((p) => JSON.stringify(p.answer)),
      ]);
      if (verdicts.length > 0) await c.query(PUT_VERDICTS, [this.service, this.account, ...verdictArrays(verdicts)]);
    });
  }
}

/** A verdict as the claims share answers (what a colleague's claim reads). */
function sharedAnswerOfVerdict(v: CachedVerdict): SharedAnswer {
  return {
    result: v.result,
    doNotCall: v.result === 'do_not_call',
    listSource: v.listSource,
    checkedAt: v.checkedAt,
    correlationId: v.correlationId,
    errorCode: null,
    error: null,
    httpStatus: null,
    body: v.body,
  };
}

/** The verdict an answer is for the team's results cache (none for a failure, or an answer that is no verdict). */
function verdictOf(e164: string, country: string, a: SharedAnswer, correlationId: string | null): CachedVerdict[] {
  if (a.result !== 'callable' && a.result !== 'do_not_call') return [];
  return [
    {
      e164,
      country,
      result: a.result,
      listSource: a.listSource,
      checkedAt: a.checkedAt ?? '',
      correlationId: correlationId ?? '',
      body: a.body,
    },
  ];
}
