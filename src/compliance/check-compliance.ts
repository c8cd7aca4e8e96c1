// What `dnc check` shows when the user's own records decide: a number on the internal list (never sent), an exemption
// applied or expired.
import type { LookupOutcome } from '../service/client.js';
import type { SuppressionList } from '../stores/interfaces.js';
import { decide, exemptionLabel, type ComplianceDecision } from '../stores/suppression-types.js';

const field = (label: string, value: string) => `  ${label.padEnd(15)} ${value}`;

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

/** Human lines for a number on the internal list: no lookup, no credit. */
export function suppressedLines(d: Extract<ComplianceDecision, { kind: 'suppressed' }>, label: string): string[] {
  const s = d.suppression;
  return [
    `DO NOT CALL  ${label}  on the internal do-not-call list`,
    field('list', d.listSource),
    field('added', `${s.addedAt} by ${s.who}${s.reason ? ` (${s.reason})` : ''}`),
    field('credits', '0: not sent (the internal list is applied before any lookup)'),
  ];
}

/** The --json line for a number on the internal list (shaped like a register answer, marked internal). */
export function suppressedJson(
  d: Extract<ComplianceDecision, { kind: 'suppressed' }>,
  country: string | undefined,
): string {
  return JSON.stringify({
    status: 'suppressed',
    phone_number: d.suppression.e164,
    country: d.suppression.country ?? country ?? null,
    do_not_call: true,
    dnc_list_source: d.listSource,
    internal: true,
    added_at: d.suppression.addedAt,
    http_status: null,
    credit_cost: 0,
  });
}

/** Whether the register said do not call in this answer: the only verdict an exemption turns. */
export const registerSaysDnc = (outcome: LookupOutcome): boolean =>
  outcome.kind === 'succeeded' && outcome.body.do_not_call === true;

/** Whether an exemption turns this verdict into callable: only a register's do_not_call verdict is exempted. */
export function exemptedOutcome(d: ComplianceDecision, registerDnc: boolean): boolean {
  return d.kind === 'exempt' && registerDnc;
}

/**
 * The lines that follow the register's verdict (fresh or reused) when an exemption applies, or when one has expired.
 */
export function exemptionLines(d: ComplianceDecision, registerDnc: boolean): string[] {
  if (!registerDnc) return [];
  if (d.kind === 'exempt') {
    const x = d.exemption;
    return [
      `  → CALLABLE      exempt: ${exemptionLabel(x)}${x.evidence ? ` (evidence: ${x.evidence})` : ''}; the ` +
        `register verdict above is recorded`,
    ];
  }
  if (d.kind === 'expired_exemption')
    return [`  exemption       ${exemptionLabel(d.exemption)} has EXPIRED and was ignored`];
  return [];
}

/** Fields added to the --json line: the exemption applied (callable), or the expired one ignored. */
export function exemptionJson(d: ComplianceDecision, registerDnc: boolean): Record<string, unknown> {
  if (!registerDnc) return {};
  if (d.kind === 'exempt')
    return {
      callable: true,
      dnc_exemption: { basis: d.exemption.basis, until: d.exemption.until, evidence: d.exemption.evidence },
    };
  if (d.kind === 'expired_exemption')
    return { dnc_exemption_expired: { basis: d.exemption.basis, until: d.exemption.until } };
  return {};
}
