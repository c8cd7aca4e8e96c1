// Claims in the team store: "this number is being looked up by X until T", made with one arbitrated statement before
// a lookup is sent, so that two machines wanting the same number pay for it once. Times are the server's.
import type { ClaimAnswer, ClaimFate, LookupClaims, Settlement, SharedAnswer } from '../interfaces.js';
import { SCHEMA } from './migrations.js';
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
 * A claim is taken (inserted, or updated over an old one) when the number is free, or its last claim is stale: settled
 * more than one lease before this run began (an answer younger than that is "at the same moment", and reused), or
 * expired before this run began (an old incident, not a colleague of now); or when --resend-unanswered says to send
 * again a number whose lookup got no answer; or when an earlier run of the same batch (its origin: the journal, whose
 * lock says that run is over, and which asks only for numbers it never sent) left the claim without settling it: the
 * store went away, or the claim's answer was lost on the way. Otherwise the row is read as it stands: another
 * machine's lookup, running, answered, pending on its webhook, or unanswered.
 */
const CLAIM = `
WITH wanted AS (SELECT DISTINCT unnest($3::text[]) AS e164),
taken AS (
  INSERT INTO ${SCHEMA}.claims AS c (service, account, e164, claimant, claimed_at, expires_at, state, origin)
  SELECT $1, $2, e164, $4, now(), now() + $5 * interval '1 millisecond', 'sending', $8::text FROM wanted
  ON CONFLICT (service, account, e164) DO UPDATE SET claimant = excluded.claimant, claimed_at = excluded.claimed_at,
    expires_at = excluded.expires_at, state = 'sending', settled_at = NULL, correlation_id = NULL, answer = NULL,
    origin = excluded.origin
  WHERE (c.state IN ('answered', 'unanswered') AND c.settled_at < $6::timestamptz - $5 * interval '1 millisecond')
     OR (c.state IN ('sending', 'pending') AND c.expires_at < $6)
     OR ($7 AND (c.state = 'unanswered' OR (c.state = 'sending' AND c.expires_at < now())))
     OR (c.state = 'sending' AND c.origin = $8::text)
  RETURNING e164
)
SELECT e164, 'claimed' AS state, '' AS claimant, now() AS claimed_at, false AS expired, NULL AS correlation_id,
       NULL::jsonb AS answer, NULL::jsonb AS verdict
  FROM taken
UNION ALL
SELECT c.e164, c.state, c.claimant, c.claimed_at, c.expires_at < now(), c.correlation_id, c.answer, NULL
  FROM ${SCHEMA}.claims c JOIN wanted w ON w.e164 = c.e164
 WHERE c.service = $1 AND c.account = $2 AND c.e164 NOT IN (SELECT e164 FROM taken)`;

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
  if (r.state === 'released') return { kind: 'released' };
  if (r.state === 'answered' && r.answer) return { kind: 'answered', answer: r.answer, claimant: r.claimant };
  if (r.state === 'pending' && r.correlation_id)
    return { kind: 'pending', correlationId: r.correlation_id, claimant: r.claimant };
  if (r.state === 'sending' && r.verdict) return { kind: 'answered', answer: r.verdict, claimant: r.claimant };
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

  static async open(
    pool: StorePool,
    scope: { service: string; account: string },
    claimant: string,
    leaseMs: number,
    origin: string | null = null,
  ): Promise<PgLookupClaims> {
    const [{ now }] = (await pool.query<{ now: Date }>('reading the time', 'SELECT now()')) as [{ now: Date }];
    return new PgLookupClaims(pool, scope.service, scope.account, claimant, leaseMs, now, origin);
  }

  async claim(e164s: readonly string[], takeOverExpired: boolean): Promise<Map<string, ClaimFate>> {
    const rows = await this.pool.query<Row>(
      'claiming numbers',
      CLAIM,
      [this.service, this.account, [...e164s], this.claimant, this.leaseMs, this.since, takeOverExpired, this.origin],
      { name: 'dnc-claim', relaxed: true },
    );
    const out = new Map<string, ClaimFate>();
    for (const r of rows) out.set(r.e164, r.state === 'claimed' ? { kind: 'claimed' } : fateOf(r)!);
    // Claimed by another machine in the same instant (its row not yet visible to this statement): wait for it.
    for (const e164 of e164s) if (!out.has(e164)) out.set(e164, { kind: 'held', claimant: 'another machine' });
    return out;
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
    );
  }

  async answers(e164s: readonly string[]): Promise<Map<string, ClaimAnswer>> {
    const rows = await this.pool.query<Row>('reading claims', ANSWERS, [this.service, this.account, [...e164s]]);
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
    );
    return new Map(rows.map((r) => [r.correlation_id, r.answer]));
  }

  async settlePushes(
    pushes: ReadonlyArray<{ correlationId: string; e164: string; country: string; answer: SharedAnswer }>,
  ): Promise<void> {
    if (pushes.length === 0) return;
    await this.pool.transaction('storing pushed verdicts', async (c) => {
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
