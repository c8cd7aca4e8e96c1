// `dnc check` with a team store: the number is claimed before its lookup is sent; when another machine is looking it up
// at that moment, its answer is waited for and shown instead (nothing sent, nothing paid twice).
import type { DncError } from '../errors.js';
import type { LookupOutcome } from '../service/client.js';
import {
  memberName,
  type CachedVerdict,
  type ClaimAnswer,
  type LookupClaims,
  type Settlement,
} from '../stores/interfaces.js';

/** How often another machine's answer is asked for while waiting. */
const WAIT_POLL_MS = 200;

export type TeamTurn =
  /** Ours to send. */
  | { kind: 'send' }
  /** Another machine's verdict, as the results cache would give it. */
  | { kind: 'verdict'; verdict: CachedVerdict; claimant: string; inFlight: boolean }
  /** Another machine's lookup that gave no verdict here (pending on its webhook, failed, or unanswered). */
  | { kind: 'other'; text: string };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Claims `e164`; when another machine holds it, waits for that lookup's end (at most one lease, then unanswered).
 * `onHeld` hears, once per hold, who is looking it up: a wait of up to a lease must not look like a hang.
 */
export async function claimOrWait(
  claims: LookupClaims,
  e164: string,
  country: string,
  onHeld: (claimant: string) => void = () => {},
): Promise<TeamTurn> {
  for (;;) {
    const fate = (await claims.claim([e164], false)).get(e164);
    if (!fate || fate.kind === 'claimed') {
      // Recorded as sending before the request leaves (a member reaped meanwhile no longer holds it: claim again).
      if ((await claims.sending([e164])).has(e164)) return { kind: 'send' };
      continue;
    }
    // Held: that lookup was in flight, and its answer is waited for; else it had ended before this claim.
    const inFlight = fate.kind === 'held';
    if (fate.kind === 'held') onHeld(fate.claimant);
    let answer: ClaimAnswer | undefined = inFlight ? undefined : fate;
    while (answer === undefined) {
      await sleep(WAIT_POLL_MS);
      answer = (await claims.answers([e164])).get(e164);
    }
    if (answer.kind === 'released') continue;
    if (answer.kind === 'suppressed')
      return { kind: 'other', text: `put on the internal do-not-call list since ${answer.addedAt}: not sent` };
    if (answer.kind === 'answered') {
      const a = answer.answer;
      if ((a.result === 'callable' || a.result === 'do_not_call') && a.checkedAt && a.correlationId)
        return {
          kind: 'verdict',
          claimant: memberName(answer),
          inFlight,
          verdict: {
            e164,
            country,
            result: a.result,
            listSource: a.listSource,
            checkedAt: a.checkedAt,
            correlationId: a.correlationId,
            body: a.body,
          },
        };
      return {
        kind: 'other',
        text: `looked up by another dnc of the team (${memberName(answer)}): ${a.result} ${a.errorCode ?? ''}`.trim(),
      };
    }
    if (answer.kind === 'pending')
      return {
        kind: 'other',
        text:
          `another dnc of the team (${memberName(answer)}) sent it in webhook mode (correlation id ` +
          `${answer.correlationId}): its verdict comes to that machine's dnc listen`,
      };
    return {
      kind: 'other',
      text:
        `sent by another dnc of the team (${memberName(answer)}) that stopped before its answer came: it may have ` +
        'been charged',
    };
  }
}

/** How this machine's lookup ended, for the claim: the verdict shared, or the claim let go. */
export function settlementOf(outcome: LookupOutcome | DncError, country: string): Settlement {
  if (!('kind' in outcome)) return outcome.exitCode === 6 ? { kind: 'unanswered' } : { kind: 'released' };
  if (outcome.kind === 'started') return { kind: 'pending', correlationId: outcome.body.correlation_id };
  if (outcome.kind === 'bad_response') return { kind: 'unanswered' };
  const v = outcome.verdict;
  return {
    kind: 'answered',
    country,
    answer: {
      result: v.result,
      doNotCall: v.doNotCall,
      listSource: v.listSource,
      checkedAt: v.checkedAt,
      correlationId: v.correlationId,
      errorCode: v.errorCode,
      error: v.error,
      httpStatus: outcome.meta.status,
      body: outcome.text ?? JSON.stringify(outcome.raw),
    },
  };
}
