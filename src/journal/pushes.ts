// A batch journal's webhook pushes: stored durably, matched to the lookup sent under their correlation id, applied,
// told apart from repeats and conflicts, adopted by number when safe, kept as evidence when refused.
import type BetterSqlite3 from 'better-sqlite3';
import { DEFAULT_CLOCK_SKEW_MS, serviceTimestampMs } from '../service/answers.js';
import { pushMatchProblem, pushVerdict, pushVerdictKey, type SentLookup } from '../service/push-answers.js';
import type { LookupResult } from '../wire/types.js';
import { conflictAnswer, finalAnswerOf, journalWriteError } from './records.js';
import {
  type FinalAnswer,
  CONFLICTING_PUSHES,
  UNANSWERED_SEND,
  type IncomingPushRecord,
  type NumberState,
  type PushOutcome,
  type PushVerdict,
  type StorePushOptions,
} from './types.js';

/** The outcomes of a push that answered its row: a row done without one was answered in the lookup's response. */
const PUSH_ANSWERED: ReadonlySet<string> = new Set(['applied', 'adopted', 'conflict']);
const ANSWERED_IN_RESPONSE = 'its row was answered in the response to its lookup: a push cannot change that verdict';

/** What the journal sent under a correlation id, as a push is matched against it. */
interface SentNumber {
  id: number;
  e164: string;
  country: string;
  credits: number;
  state: NumberState;
  error_code: string | null;
  requested_at: string | null;
}

const sentOf = (n: SentNumber): SentLookup => ({ e164: n.e164, country: n.country, requestedAt: n.requested_at });

function verdictKeyOf(text: string): string | null {
  try {
    const body = JSON.parse(text) as unknown;
    return body !== null && typeof body === 'object'
      ? pushVerdictKey(body as LookupResult & Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

function prepare(db: BetterSqlite3.Database) {
  return {
    unansweredByE164: db.prepare<[string, string], SentNumber>(
      'SELECT id, e164, country, credits, state, error_code, requested_at FROM numbers WHERE e164 = ? AND ' +
        "state = 'done' AND error_code = ?",
    ),
    pendingByCorrelation: db.prepare<[string], SentNumber>(
      'SELECT id, e164, country, credits, state, error_code, COALESCE(requested_at, updated_at) AS ' +
        "requested_at FROM numbers WHERE correlation_id = ? AND state = 'pending'",
    ),
    // Rare (a conflicting push): done numbers are not in the partial index, so this scans.
    numberByCorrelation: db.prepare<[string], SentNumber>(
      'SELECT id, e164, country, credits, state, error_code, COALESCE(requested_at, updated_at) AS ' +
        'requested_at FROM numbers WHERE correlation_id = ? LIMIT 1',
    ),
    pushesByCorrelation: db.prepare<[string], { id: number; body: string; outcome: string }>(
      "SELECT id, body, outcome FROM pushes WHERE correlation_id = ? AND outcome != 'refused' ORDER BY id",
    ),
    pushDuplicate: db.prepare<[number]>('UPDATE pushes SET duplicates = duplicates + 1 WHERE id = ?'),
    orphanToConflict: db.prepare<[string]>(
      "UPDATE pushes SET outcome = 'conflict' WHERE correlation_id = ? AND outcome = 'orphan'",
    ),
    insertPush: db.prepare<[string | null, string, string, string, string | null, string | null, string | null]>(
      'INSERT INTO pushes (correlation_id, body, received_at, outcome, headers, peer, reason) VALUES (?, ?, ' +
        '?, ?, ?, ?, ?)',
    ),
    markPush: db.prepare<[string, string | null, number]>('UPDATE pushes SET outcome = ?, reason = ? WHERE id = ?'),
  };
}

/** What the pushes need of the journal they live in: its path (for errors), final answers, transactions. */
export interface PushesHost {
  readonly path: string;
  recordFinal(id: number, answer: FinalAnswer): void;
  atomically<T>(fn: () => T): T;
}

export class JournalPushes {
  private readonly st: ReturnType<typeof prepare>;

  constructor(
    private readonly db: BetterSqlite3.Database,
    private readonly journal: PushesHost,
  ) {
    this.st = prepare(db);
  }

  /**
   * Stores a webhook push durably (call before answering 2xx) and, when its correlation id is a pending
   * number, that number's final answer, atomically. A push seen before is counted, not applied again.
   */
  record(
    body: string,
    receivedAt: string,
    correlationIdHeader?: string | null,
    serviceStatus?: number | null,
  ): PushOutcome {
    return this.store([
      { raw: body, receivedAt, correlationId: correlationIdHeader ?? null, serviceStatus: serviceStatus ?? null },
    ])[0]!.outcome;
  }

  /** Stores several pushes in one transaction (one commit for a burst); the outcome of each, with its reason. */
  store(pushes: ReadonlyArray<IncomingPushRecord>, options: StorePushOptions = {}): PushVerdict[] {
    try {
      return this.db.transaction(() => pushes.map((p) => this.storePush(p, options)))();
    } catch (err) {
      // SQLITE_BUSY stays as it is: the listener retries it.
      throw journalWriteError(this.journal.path, err) ?? err;
    }
  }

  private insertPush(
    push: IncomingPushRecord,
    correlationId: string | null,
    outcome: PushOutcome,
    reason: string | null = null,
  ): void {
    this.st.insertPush.run(
      correlationId,
      push.raw,
      push.receivedAt,
      outcome,
      push.headers ?? null,
      push.peer ?? null,
      reason,
    );
  }

  private refuse(
    push: IncomingPushRecord,
    correlationId: string | null,
    reason: string,
    options: StorePushOptions,
  ): PushVerdict {
    if (options.admitRefused?.(push.raw.length) ?? true) this.insertPush(push, correlationId, 'refused', reason);
    return { outcome: 'refused', reason };
  }

  private storePush(push: IncomingPushRecord, options: StorePushOptions): PushVerdict {
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(push.raw);
    } catch {
      parsed = null;
    }
    const fromBody = (parsed as { correlation_id?: unknown } | null)?.correlation_id;
    const correlationId = typeof fromBody === 'string' && fromBody !== '' ? fromBody : push.correlationId || null;
    if (push.refusedReason !== undefined) return this.refuse(push, correlationId, push.refusedReason, options);
    const body =
      parsed !== null && typeof parsed === 'object' ? (parsed as LookupResult & Record<string, unknown>) : null;
    const skew = options.skewMs ?? DEFAULT_CLOCK_SKEW_MS;
    if (correlationId !== null && body !== null) {
      const seen = this.st.pushesByCorrelation.all(correlationId);
      if (seen.length > 0) {
        const key = pushVerdictKey(body);
        const same = seen.find((s) => verdictKeyOf(s.body) === key);
        if (same) {
          this.st.pushDuplicate.run(same.id);
          return { outcome: 'duplicate' };
        }
        // A second verdict: believable only about the number sent; then neither can be trusted.
        const number = this.st.numberByCorrelation.get(correlationId);
        // A row answered in the lookup's own response is the service's word: pushes (unsigned, and never sent for a
        // synchronous lookup) are kept as evidence and change nothing, or two forged ones would make it failed.
        if (number?.state === 'done' && !seen.some((s) => PUSH_ANSWERED.has(s.outcome)))
          return this.refuse(push, correlationId, ANSWERED_IN_RESPONSE, options);
        const problem = number ? pushMatchProblem(body, sentOf(number), skew) : null;
        if (problem) return this.refuse(push, correlationId, problem, options);
        this.st.orphanToConflict.run(correlationId);
        this.insertPush(push, correlationId, 'conflict');
        if (
          number &&
          (number.state === 'pending' || number.state === 'done') &&
          number.error_code !== CONFLICTING_PUSHES
        ) {
          this.journal.recordFinal(
            number.id,
            conflictAnswer(correlationId, number.credits, push.serviceStatus ?? null, push.raw),
          );
        }
        return { outcome: 'conflict' };
      }
    }
    const number = correlationId === null ? undefined : this.st.pendingByCorrelation.get(correlationId);
    if (number && body !== null) {
      const problem = pushMatchProblem(body, sentOf(number), skew);
      if (problem) return this.refuse(push, correlationId, problem, options);
      this.journal.recordFinal(
        number.id,
        finalAnswerOf(pushVerdict(body, number.credits), push.serviceStatus ?? null, push.raw, number.credits),
      );
      this.insertPush(push, correlationId, 'applied');
      return { outcome: 'applied' };
    }
    if (body !== null && this.adoptByNumber(body, skew)) {
      this.insertPush(push, correlationId, 'adopted');
      return { outcome: 'adopted' };
    }
    if (!(options.admitOrphan?.(push.raw.length) ?? true)) return { outcome: 'over_capacity' };
    this.insertPush(push, correlationId, 'orphan');
    return { outcome: 'orphan' };
  }

  /**
   * A push under a correlation id the journal never saw may be the answer to a webhook lookup whose receipt a killed
   * run never stored (its number ended `unanswered_send`). Pushes are unsigned, so it is adopted by its number only
   * when it errs on the safe side: a do_not_call verdict about a number of this batch sent without an answer,
   * timestamped after that send, makes the row do_not_call. A callable verdict is kept as an orphan (evidence) and
   * the row stays unanswered_send: a forged "callable" must never make a number callable.
   */
  private adoptByNumber(body: LookupResult & Record<string, unknown>, skewMs: number): boolean {
    if (body.status !== 'succeeded' || body.do_not_call !== true || typeof body.phone_number !== 'string') return false;
    const number = this.st.unansweredByE164.get(body.phone_number, UNANSWERED_SEND);
    if (!number || number.country !== body.country || !number.requested_at) return false;
    const sentAt = Date.parse(number.requested_at);
    if (!Number.isFinite(sentAt) || serviceTimestampMs(body.timestamp) < sentAt - skewMs) return false;
    this.journal.recordFinal(number.id, finalAnswerOf(pushVerdict(body, 0), 200, JSON.stringify(body), 0));
    return true;
  }

  /**
   * Orphans kept before their number ended unanswered_send (the push came while the killed run's number was still in
   * flight) are adopted as a live push would be (adoptByNumber). Returns the e164 of the numbers adopted.
   */
  adoptKeptOrphans(skewMs = DEFAULT_CLOCK_SKEW_MS): string[] {
    const adopted: string[] = [];
    const orphans = this.db
      .prepare<[], { id: number; body: string }>("SELECT id, body FROM pushes WHERE outcome = 'orphan' ORDER BY id")
      .all();
    if (orphans.length === 0) return adopted;
    this.journal.atomically(() => {
      for (const o of orphans) {
        let body: unknown;
        try {
          body = JSON.parse(o.body);
        } catch {
          continue;
        }
        if (
          body === null ||
          typeof body !== 'object' ||
          !this.adoptByNumber(body as LookupResult & Record<string, unknown>, skewMs)
        )
          continue;
        this.st.markPush.run('adopted', null, o.id);
        adopted.push((body as { phone_number: string }).phone_number);
      }
    });
    return adopted;
  }

  /**
   * Applies a kept push to its number once the receipt is recorded (a push faster than its receipt): the push is
   * checked against the number as a live one would be. Conflicting pushes make the number conflicting.
   */
  applyKept(
    pushId: number,
    outcome: 'orphan' | 'conflict',
    correlationId: string,
    body: string,
    options: StorePushOptions = {},
  ): PushVerdict | null {
    const number = this.st.pendingByCorrelation.get(correlationId);
    if (!number) return null;
    return this.journal.atomically(() => {
      if (outcome === 'conflict') {
        this.journal.recordFinal(number.id, conflictAnswer(correlationId, number.credits, null, body));
        return { outcome: 'conflict' as const };
      }
      let parsed: unknown = null;
      try {
        parsed = JSON.parse(body);
      } catch {
        parsed = null;
      }
      const problem =
        parsed && typeof parsed === 'object'
          ? pushMatchProblem(
              parsed as LookupResult & Record<string, unknown>,
              sentOf(number),
              options.skewMs ?? DEFAULT_CLOCK_SKEW_MS,
            )
          : 'not a JSON object';
      if (problem) {
        this.st.markPush.run('refused', problem, pushId);
        return { outcome: 'refused' as const, reason: problem };
      }
      this.journal.recordFinal(
        number.id,
        finalAnswerOf(pushVerdict(parsed as LookupResult, number.credits), null, body, number.credits),
      );
      this.st.markPush.run('applied', null, pushId);
      return { outcome: 'applied' as const };
    });
  }
}
