// What `dnc check` asks of the user's own records: the decision of the internal list and exemptions for a number
// (what it shows of them: src/render/check-records.ts).
import type { LookupOutcome } from '../service/client.js';
import type { SuppressionList } from '../stores/interfaces.js';
import { decide, type ComplianceDecision } from '../stores/suppression-types.js';

export interface CheckCompliance {
  decide(e164: string): Promise<ComplianceDecision>;
  close(): Promise<void>;
}

export function checkCompliance(store: SuppressionList | null, now: () => Date): CheckCompliance {
  return {
    decide: (e164) => decide(store, e164, now()),
    close: async () => store?.close(),
  };
}

/** Whether the register said do not call in this answer: the only verdict an exemption turns. */
export const registerSaysDnc = (outcome: LookupOutcome): boolean =>
  outcome.kind === 'succeeded' && outcome.body.do_not_call === true;

/** Whether an exemption turns this verdict into callable: only a register's do_not_call verdict is exempted. */
export function exemptedOutcome(d: ComplianceDecision, registerDnc: boolean): boolean {
  return d.kind === 'exempt' && registerDnc;
}
