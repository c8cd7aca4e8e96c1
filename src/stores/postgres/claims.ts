// Claims in the team store: "this number is being looked up by X until T", made with one arbitrated statement before
// a lookup is sent, so that two machines wanting the same number pay for it once. Times are the server's.
import type { ClaimAnswer, ClaimFate, LookupClaims, Settlement, SharedAnswer } from '../interfaces.js';
import { SCHEMA } from './migrations.js';
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
 */
const CLAIM = `
WITH wanted AS (
  SELECT e164, max(window_ms) AS window_ms FROM unnest($3::text[], $9::float8[]) AS w(e164, window_ms) GROUP BY e164
),
opted AS (SELECT s.e164, s.added_at FROM ${SCHEMA}.suppressions s JOIN wanted w ON w.e164 = s.e164),
taken AS (
  INSERT INTO ${SCHEMA}.claims AS c (service, account, e164, claimant, claimed_at, expires_at, state, origin)
  SELECT $1, $2, e164, $4, now(), now() + $5 * interval '1 millisecond', $10::text, $8::text FROM wanted
   WHERE e164 NOT IN (SELECT e164 FROM opted)
   ORDER BY e164
  ON CONFLICT (service, account, e164) DO UPDATE SET claimant = excluded.claimant, claimed_at = excluded.claimed_at,
    expires_at = excluded.expires_at, state = excluded.state, settled_at = NULL, correlation_id = NULL, answer = NULL,
    origin = excluded.origin
  WHERE (c.state IN ('answered', 'unanswered') AND c.settled_at < coalesce(
          now() - (SELECT w.window_ms FROM wanted w WHERE w.e164 = excluded.e164) * interval '1 millisecond',
          $6::timestamptz - $5 * interval '1 millisecond'))
     OR (c.state = 'answered' AND coalesce(c.answer->>'result', '') NOT IN ('callable', 'do_not_call', 'invalid'))
     OR ($7 AND c.state = 'unanswered')
     OR (c.state IN ('reserved', 'sending', 'pending') AND c.expires_at < $6
         AND NOT EXISTS (SELECT 1 FROM ${SCHEMA}.members m WHERE m.claimant = c.claimant))
     OR ($7 AND c.state = 'sending' AND c.expires_at < now())
     OR (c.state IN ('reserved', 'sending') AND c.origin = $8::text)
  RETURNING e164
)
SELECT e164, 'claimed' AS state, '' AS claimant, now() AS claimed_at, false AS expired, NULL AS correlation_id,
       NULL::jsonb AS answer, NULL::jsonb AS verdict
  FROM taken
UNION ALL
SELECT e164, 'suppressed', (SELECT value FROM ${SCHEMA}.meta WHERE key = 'list_name'), now(), false, added_at, NULL,
       NULL
  FROM opted
UNION ALL
SELECT c.e164, c.state, c.claimant, c.claimed_at, c.expires_at < now(), c.correlation_id, c.answer, NULL
  FROM ${SCHEMA}.claims c JOIN wanted w ON w.e164 = c.e164
 WHERE c.service = $1 AND c.account = $2 AND c.e164 NOT IN (SELECT e164 FROM taken)
   AND c.e164 NOT IN (SELECT e164 FROM opted)`;

/**
 * Reserved claims of this member whose request leaves now: `sending`, in key order. Returns those marked. Its own
 * `sending` claims count as marked: the statement run again after the server went away before answering (idempotent).
 */
const SENDING = `
WITH mine AS (
  SELECT e164 FROM ${SCHEMA}.claims
   WHERE service = $1 AND account = $2 AND claimant = $3 AND state IN ('reserved', 'sending') AND e164 = ANY($4::text[])
   ORDER BY e164 FOR UPDATE
)
UPDATE ${SCHEMA}.claims c SET state = 'sending', claimed_at = now(), expires_at = now() + $5 * interval '1 millisecond'
  FROM mine WHERE c.service = $1 AND c.account = $2 AND c.e164 = mine.e164
RETURNING c.e164`;

/** Other machines' lookups of these numbers as they stand, a verdict cached since a claim standing for its answer. */
const ANSWERS = `
SELECT w.e164, coalesce(c.state, 'released') AS state, c.claimant, c.claimed_at, c.expires_at < now() AS expired,
       c.correlation_id, c.answer,
       CASE WHEN v.e164 IS NOT NULL THEN jsonb_build_object('result', v.result,
         'doNotCall', v.result = 'do_not_call', 'listSource', v.list_source, 'checkedAt', v.checked_at,
         'correlationId', v.correlation_id, 'errorCode', NULL, 'error', NULL, 'httpStatus', NULL, 'body', v.body)
       END AS verdict
  FROM (SELECT DISTINCT unnest($3::text[]) AS e164) w
  LEFT JOIN ${SCHEMA}.claims c ON c.service = $1 AND c.account = $2 AND c.e164 = w.e164
  LEFT JOIN ${SCHEMA}.verdicts v ON v.service = $1 AND v.account = $2 AND v.e164 = w.e164
       AND c.state = 'sending' AND v.checked_ms >= extract(epoch FROM c.claimed_at) * 1000 - 60000`;

function fateOf(r: Row): ClaimAnswer | { kind: 'held'; claimant: string } | null {
  // On the team's list (added, maybe, since the batch began): never sent. `claimant` carries the list's name.
  if (r.state === 'suppressed') return { kind: 'suppressed', list: r.claimant || 'team', addedAt: r.correlation_id };
  if (r.state === 'released') return { kind: 'released' };
  if (r.state === 'answered' && r.answer) return { kind: 'answered', answer: r.answer, claimant: r.claimant };
  if (r.state === 'pending' && r.correlation_id)
    return { kind: 'pending', correlationId: r.correlation_id, claimant: r.claimant };
  if (r.state === 'sending' && r.verdict) return { kind: 'answered', answer: r.verdict, claimant: r.claimant };
  if (r.state === 'reserved' && r.expired) return { kind: 'released' };
  if (r.state === 'unanswered' || (r.state === 'sending' && r.expired))
    return { kind: 'unanswered', claimant: r.claimant, claimedAt: r.claimed_at.toISOString() };
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
      { name: 'dnc-claim', relaxed: true, idempotent: this.origin !== null },
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
      { name: 'dnc-sending', relaxed: true, idempotent: true },
    );
    return new Set(rows.map((r) => r.e164));
  }

  async close(): Promise<void> {
    const member = await this.member?.catch(() => null);
    if (!member) return;
    // What is still only reserved was never sent: free for the others at once.
    await this.pool
      .query(
        'letting claims go',
        `DELETE FROM ${SCHEMA}.claims WHERE claimant = $1 AND state = 'reserved'`,
        [this.claimant],
        { relaxed: true, idempotent: true },
      )
      .catch(() => {});
    await member.leave();
  }

  async settle(settlements: ReadonlyArray<[string, Settlement]>): Promise<void> {
    if (settlements.length === 0) return;
    const of = <K extends Settlement['kind']>(kind: K) =>
      settlements.filter((s): s is [string, Extract<Settlement, { kind: K }>] => s[1].kind === kind);
    const answered = of('answered');
    const pending = of('pending');
    const unanswered = of('unanswered').map(([e]) => e);
    const released = of('released').map(([e]) => e);
    const key = [this.service, this.account, this.claimant];
    await this.pool.transaction(
      'settling claims',
      async (c) => {
        // Every row this transaction changes, locked first and in key order: no cycle with a claim, a reap or
        // another member's settlement, whatever the order of the statements below.
        await c.query(
          `SELECT 1 FROM ${SCHEMA}.claims WHERE service = $1 AND account = $2 AND claimant = $3
              AND e164 = ANY($4::text[]) ORDER BY e164 FOR UPDATE`,
          [...key, settlements.map(([e]) => e)],
        );
        if (answered.length > 0) {
          await c.query(
            `UPDATE ${SCHEMA}.claims c SET state = 'answered', settled_at = now(), answer = t.a,
             correlation_id = t.a->>'correlationId'
             FROM unnest($4::text[], $5::jsonb[]) AS t(e, a)
            WHERE c.service = $1 AND c.account = $2 AND c.claimant = $3 AND c.e164 = t.e`,
            [...key, answered.map(([e]) => e), answered.map(([, s]) => JSON.stringify(s.answer))],
          );
          const verdicts = answered.flatMap(([e164, s]) =>
            s.answer.result === 'callable' || s.answer.result === 'do_not_call'
              ? [
                  {
                    e164,
                    country: s.country,
                    result: s.answer.result as 'callable' | 'do_not_call',
                    listSource: s.answer.listSource,
                    checkedAt: s.answer.checkedAt ?? '',
                    correlationId: s.answer.correlationId ?? '',
                    body: s.answer.body,
                  },
                ]
              : [],
          );
          if (verdicts.length > 0)
            await c.query(PUT_VERDICTS, [this.service, this.account, ...verdictArrays(verdicts)]);
        }
        if (pending.length > 0)
          await c.query(
            `UPDATE ${SCHEMA}.claims c SET state = 'pending', settled_at = now(), correlation_id = t.id,
             expires_at = now() + $6 * interval '1 millisecond'
             FROM unnest($4::text[], $5::text[]) AS t(e, id)
            WHERE c.service = $1 AND c.account = $2 AND c.claimant = $3 AND c.e164 = t.e`,
            [...key, pending.map(([e]) => e), pending.map(([, s]) => s.correlationId), PENDING_LEASE_MS],
          );
        if (unanswered.length > 0)
          await c.query(
            `UPDATE ${SCHEMA}.claims SET state = 'unanswered', settled_at = now()
            WHERE service = $1 AND account = $2 AND claimant = $3 AND e164 = ANY($4::text[])`,
            [...key, unanswered],
          );
        if (released.length > 0)
          await c.query(
            `DELETE FROM ${SCHEMA}.claims
            WHERE service = $1 AND account = $2 AND claimant = $3 AND e164 = ANY($4::text[])`,
            [...key, released],
          );
      },
      true,
      true, // the same settlements again leave the same rows: run again when its COMMIT's answer was lost
    );
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
    await this.pool.idempotentTransaction('storing pushed verdicts', async (c) => {
      await c.query(
        `SELECT 1 FROM ${SCHEMA}.claims WHERE service = $1 AND account = $2 AND correlation_id = ANY($3::text[])
          ORDER BY e164 FOR UPDATE`,
        [this.service, this.account, pushes.map((p) => p.correlationId)],
      );
      await c.query(
        `UPDATE ${SCHEMA}.claims c SET state = 'answered', settled_at = now(), answer = t.a
           FROM unnest($3::text[], $4::jsonb[]) AS t(id, a)
          WHERE c.service = $1 AND c.account = $2 AND c.correlation_id = t.id`,
        [this.service, this.account, pushes.map((p) => p.correlationId), pushes.map((p) => JSON.stringify(p.answer))],
      );
      const verdicts = pushes.flatMap((p) =>
        p.answer.result === 'callable' || p.answer.result === 'do_not_call'
          ? [
              {
                e164: p.e164,
                country: p.country,
                result: p.answer.result as 'callable' | 'do_not_call',
                listSource: p.answer.listSource,
                checkedAt: p.answer.checkedAt ?? '',
                correlationId: p.correlationId,
                body: p.answer.body,
              },
            ]
          : [],
      );
      if (verdicts.length > 0) await c.query(PUT_VERDICTS, [this.service, this.account, ...verdictArrays(verdicts)]);
    });
  }
}
