// What `dnc check` (and `dnc window --number`) shows of the user's own records beside a verdict: a number on the
// internal list (never sent), an exemption applied or expired, a verdict reused from the results cache or from
// another machine of the team. Text and JSON side by side, as the rest of check's output (src/render/check.ts); loaded
// with the use case, when a command runs.
import { writtenBy, type CachedVerdict } from '../stores/interfaces.js';
import { exemptionLabel, type ComplianceDecision } from '../stores/suppression-types.js';
import { formatDuration } from '../time.js';
import { field } from './field.js';

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

/** `check --json` for a reused verdict: the original answer as received, marked reused, with no cost. */
export function reusedJson(v: CachedVerdict, windowMs: number | null, sharedBy?: string): string {
  const original = v.body
    ? (JSON.parse(v.body) as Record<string, unknown>)
    : { correlation_id: v.correlationId, phone_number: v.e164, country: v.country, timestamp: v.checkedAt };
  return JSON.stringify({
    ...original,
    http_status: null,
    credit_cost: 0,
    reused: true,
    ...(sharedBy !== undefined ? { reused_from: sharedBy } : { reused_within: formatDuration(windowMs ?? 0) }),
  });
}

/**
 * Human lines for a reused verdict (as `dnc check` shows a lookup): from the results cache (--reuse-within), or from
 * another machine of the team that looked the number up at the same moment (`sharedBy`).
 */
export function reusedLines(
  v: CachedVerdict,
  label: string,
  windowMs: number | null,
  sharedBy?: string,
  sharedInFlight = true,
): string[] {
  const verdict = v.result === 'do_not_call' ? 'DO NOT CALL' : 'callable   ';
  return [
    `${verdict}  ${label}  ${v.result === 'do_not_call' ? 'on' : 'not on'} the ${v.country} do-not-call ` +
      `register (reused)`,
    field('register', v.listSource ?? 'not reported'),
    field('checked at', v.checkedAt),
    field(
      'credits',
      sharedBy !== undefined
        ? sharedInFlight
          ? `0: looked up at the same moment by another dnc of the team (${sharedBy}): its answer waited for, ` +
            'nothing sent'
          : `0: answered just before by another dnc of the team (${sharedBy}), whose lookup had finished: its ` +
            'answer was in the team store, nothing sent'
        : `0: reused a lookup${writtenBy(v)} within --reuse-within ${formatDuration(windowMs ?? 0)}, nothing sent`,
    ),
    field('correlation id', `${v.correlationId} (the original lookup)`),
  ];
}
