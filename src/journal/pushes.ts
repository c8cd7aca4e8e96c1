// A batch journal's webhook pushes: stored durably, matched to the lookup sent under their correlation id, applied,
// told apart from repeats and conflicts, adopted by number when safe, kept as evidence when refused.
import type BetterSqlite3 from 'better-sqlite3';
import { DEFAULT_CLOCK_SKEW_MS } from '../service/answers.js';
import {
  judgePush,
  type PushBody,
  type PushJudgement,
  pushVerdictKey,
  type SentLookup,
  storedPushBody,
} from '../service/push-answers.js';
import type { JournalChain } from './chain.js';
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
  const body = storedPushBody(text);
  return body === null ? null : pushVerdictKey(body);
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

/** What the pushes need of the journal they live in: its path (for errors), final answers, transactions, the chain. */
export interface PushesHost {
  readonly path: string;
  readonly chain: Pick<JournalChain, 'push'>;
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
   * Stores a webhook push given as its text (a tool's or a test's: `dnc listen` hands store() the push it read) as
   * store() does.
   */
  record(
    body: string,
    receivedAt: string,
    correlationIdHeader?: string | null,
    serviceStatus?: number | null,
  ): PushOutcome {
    const record = {
      raw: body,
      result: storedPushBody(body),
      receivedAt,
      correlationId: correlationIdHeader ?? null,
      serviceStatus: serviceStatus ?? null,
    };
    return this.store([record])[0]!.outcome;
  }

  /** Stores several pushes in one transaction (one commit for a burst); the outcome of each, with its reason. */
  store(pushes: ReadonlyArray<IncomingPushRecord>, options: StorePushOptions = {}): PushVerdict[] {
    try {
      return this.journal.atomically(() => pushes.map((p) => this.storePush(p, options)));
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
    const { lastInsertRowid } = this.st.insertPush.run(
      correlationId,
      push.raw,
      push.receivedAt,
      outcome,
      push.headers ?? null,
      push.peer ?? null,
      reason,
    );
    this.journal.chain.push(Number(lastInsertRowid));
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

  /**
   * Stores a push and, when its correlation id is a number's lookup, what it says about that number: counted when
   * it repeats a verdict, judged once (judgePush) against what was sent otherwise, applied, made a conflict, or
   * refused; adopted by its number, or kept as an orphan, when its correlation id is unknown.
   */
  private storePush(push: IncomingPushRecord, options: StorePushOptions): PushVerdict {
    const body = push.result;
    const fromBody = body?.correlation_id;
    const correlationId = typeof fromBody === 'string' && fromBody !== '' ? fromBody : push.correlationId || null;
    if (push.refusedReason !== undefined) return this.refuse(push, correlationId, push.refusedReason, options);
    if (body === null) return this.keepOrphan(push, correlationId, options);
    const skew = options.skewMs ?? DEFAULT_CLOCK_SKEW_MS;
    const seen = correlationId === null ? [] : this.st.pushesByCorrelation.all(correlationId);
    if (seen.length > 0) {
      const key = pushVerdictKey(body);
      const same = seen.find((s) => verdictKeyOf(s.body) === key);
      if (same) {
        this.st.pushDuplicate.run(same.id);
        return { outcome: 'duplicate' };
      }
    }
    // A second verdict is about any number sent under the id (a scan: done numbers are not indexed); a first is about
    // a pending one.
    const number =
      correlationId === null
        ? undefined
        : seen.length > 0
          ? this.st.numberByCorrelation.get(correlationId)
          : this.st.pendingByCorrelation.get(correlationId);
    // A row answered in the lookup's own response is the service's word: pushes (unsigned, and never sent for a
    // synchronous lookup) are kept as evidence and change nothing, or two forged ones would make it failed.
    if (seen.length > 0 && number?.state === 'done' && !seen.some((s) => PUSH_ANSWERED.has(s.outcome)))
      return this.refuse(push, correlationId, ANSWERED_IN_RESPONSE, options);
    const judged = number ? judgePush(body, sentOf(number), number.credits, skew) : null;
    if (judged && 'refused' in judged) return this.refuse(push, correlationId, judged.refused, options);
    if (seen.length > 0) {
      // A second verdict about the number sent: neither can be trusted.
      this.st.orphanToConflict.run(correlationId!);
      this.insertPush(push, correlationId, 'conflict');
      if (
        number &&
        (number.state === 'pending' || number.state === 'done') &&
        number.error_code !== CONFLICTING_PUSHES
      ) {
        this.journal.recordFinal(
          number.id,
          conflictAnswer(correlationId!, number.credits, push.serviceStatus ?? null, push.raw),
        );
      }
      return { outcome: 'conflict' };
    }
    if (number && judged) {
      this.journal.recordFinal(
        number.id,
        finalAnswerOf(judged.verdict, push.serviceStatus ?? null, push.raw, number.credits),
      );
      this.insertPush(push, correlationId, 'applied');
      return { outcome: 'applied' };
    }
    if (this.adoptByNumber(body, skew)) {
      this.insertPush(push, correlationId, 'adopted');
      return { outcome: 'adopted' };
    }
    return this.keepOrphan(push, correlationId, options);
  }

  private keepOrphan(push: IncomingPushRecord, correlationId: string | null, options: StorePushOptions): PushVerdict {
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
  private adoptByNumber(body: PushBody, skewMs: number): boolean {
    if (body.status !== 'succeeded' || body.do_not_call !== true || typeof body.phone_number !== 'string') return false;
    const number = this.st.unansweredByE164.get(body.phone_number, UNANSWERED_SEND);
    if (!number || !number.requested_at || !Number.isFinite(Date.parse(number.requested_at))) return false;
    // Judged as the answer to that send, which held no credits (the push's cost says what it charged).
    const judged = judgePush(body, sentOf(number), 0, skewMs);
    if ('refused' in judged) return false;
    this.journal.recordFinal(number.id, finalAnswerOf(judged.verdict, 200, JSON.stringify(body), 0));
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
        const body = storedPushBody(o.body);
        if (body === null || !this.adoptByNumber(body, skewMs)) continue;
        this.st.markPush.run('adopted', null, o.id);
        adopted.push(body.phone_number);
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
      const parsed = storedPushBody(body);
      const judged: PushJudgement = parsed
        ? judgePush(parsed, sentOf(number), number.credits, options.skewMs ?? DEFAULT_CLOCK_SKEW_MS)
        : { refused: 'not a JSON object' };
      if ('refused' in judged) {
        this.st.markPush.run('refused', judged.refused, pushId);
        return { outcome: 'refused' as const, reason: judged.refused };
      }
      this.journal.recordFinal(number.id, finalAnswerOf(judged.verdict, null, body, number.credits));
      this.st.markPush.run('applied', null, pushId);
      return { outcome: 'applied' as const };
    });
  }
}
