// Lookup answers as the client hands them over: bodies of the service's shape, judged by src/service/answers.ts.
import { judgeLookupAnswer, type LookupOutcome } from '../../src/service/answers.js';
import type { SharedAnswer } from '../../src/stores/interfaces.js';

/** The i-th correlation id of a test (UUID form, as 2.1 says). */
export function testCorrelationId(i: number): string {
  return `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
}

/** A timestamp of the service's shape (microseconds, offset) at `at`. */
export function serviceTimestamp(at: Date = new Date()): string {
  return at.toISOString().replace('Z', '123+00:00');
}

/** A synchronous 200 about `e164` (2.2), judged; `overrides` replace body fields (a hostile answer). */
export function succeededOutcome(
  e164: string,
  i: number,
  o: { cost: number; doNotCall?: boolean; country?: string; overrides?: Record<string, unknown> },
): LookupOutcome {
  const correlationId = testCorrelationId(i);
  const body = {
    status: 'succeeded',
    error_code: null,
    correlation_id: correlationId,
    phone_number: e164,
    country: o.country ?? 'US',
    do_not_call: o.doNotCall ?? false,
    timestamp: serviceTimestamp(),
    dnc_list_source: `https://registers.example/${o.country ?? 'US'}`,
    cost: { credits_used_for_query: o.cost, total_credits_used: 0, credit_limit: 100_000 },
    ...o.overrides,
  };
  const text = JSON.stringify(body);
  return judgeLookupAnswer(
    {
      status: 200,
      json: body,
      text,
      bytes: text.length,
      cut: null,
      repeatedKey: null,
      meta: {
        status: 200,
        creditCost: o.cost,
        rateLimitLimit: null,
        rateLimitRemaining: null,
        correlationId,
        attempts: 1,
      },
      headers: { creditCost: String(o.cost), rateLimitLimit: null, correlationId },
    },
    { e164, webhook: false, forwardedHost: null },
    { local: new Date(), service: null },
  );
}

/** A lookup's answer as the team store keeps it (a claim's settlement): `result` for a number, correlation id `id`. */
export function sharedAnswer(result: string, id: string): SharedAnswer {
  return {
    result,
    doNotCall: result === 'do_not_call',
    listSource: 'https://register.example/US',
    checkedAt: '2026-11-20T10:00:00.000001+00:00',
    correlationId: id,
    errorCode: null,
    error: null,
    httpStatus: 200,
    body: `{"correlation_id":"${id}"}`,
  };
}
