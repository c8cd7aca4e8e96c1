// `dnc usage --reconcile`: credits the local records (batch journals, check history) put in a billing period, against
// the service's credits_used.
import type { CheckHistory } from '../stores/history.js';
import { formatInteger } from '../text/numbers.js';
import { journalSpendBetween } from '../journal/views.js';

export interface LocalSpend {
  where: string;
  kind: 'batch' | 'checks';
  lookups: number;
  credits: number;
  /**
   * Requests an interrupted run (a crash, a second Ctrl-C) left without an answer: each may have been charged,
   * unrecorded.
   */
  unansweredSends: number;
}

export interface Reconciliation {
  period: { id: number; start: string; end: string };
  service: string;
  serviceCreditsUsed: number;
  local: LocalSpend[];
  localCredits: number;
  /** service minus local: positive when the account spent more than this machine recorded. */
  difference: number;
}

const iso = (s: string) => new Date(s).toISOString();

/** Credits a journal recorded in [start, end) for lookups sent to `service` (charged, or held for pending ones). */
export async function journalSpend(
  journalPath: string,
  service: string,
  start: string,
  end: string,
  /** A batch is running on this journal: its numbers in flight are lookups under way, not lost answers. */
  running = false,
): Promise<LocalSpend | null> {
  try {
    const spend = await journalSpendBetween(journalPath, iso(start), iso(end), running);
    if (spend.service !== service) return null;
    return {
      where: journalPath,
      kind: 'batch',
      lookups: spend.lookups,
      credits: spend.credits,
      unansweredSends: spend.unansweredSends,
    };
  } catch {
    return null;
  }
}

export async function reconcile(
  period: { id: number; start_date: string; end_date: string; credits_used: number },
  service: string,
  sources: {
    journals: string[];
    history: CheckHistory | null;
    historyFile: string;
    isRunning?: (journalPath: string) => boolean;
  },
): Promise<Reconciliation> {
  const local: LocalSpend[] = [];
  for (const j of sources.journals) {
    const spend = await journalSpend(j, service, period.start_date, period.end_date, sources.isRunning?.(j) ?? false);
    if (spend && (spend.lookups > 0 || spend.unansweredSends > 0)) local.push(spend);
  }
  if (sources.history) {
    const checks = sources.history.between(service, iso(period.start_date), iso(period.end_date));
    local.push({
      where: sources.historyFile,
      kind: 'checks',
      lookups: checks.filter((c) => c.credits > 0).length,
      credits: checks.reduce((s, c) => s + c.credits, 0),
      unansweredSends: 0,
    });
  }
  const localCredits = local.reduce((s, l) => s + l.credits, 0);
  return {
    period: { id: period.id, start: period.start_date, end: period.end_date },
    service,
    serviceCreditsUsed: period.credits_used,
    local,
    localCredits,
    difference: period.credits_used - localCredits,
  };
}

export function reconcileLines(r: Reconciliation): string[] {
  const lines = [
    `Billing period ${r.period.id}: ${r.period.start} – ${r.period.end} (${r.service})`,
    `  the service counts      ${formatInteger(r.serviceCreditsUsed)} credit(s) used`,
    `  this machine recorded   ${formatInteger(r.localCredits)} credit(s):`,
  ];
  for (const l of r.local) {
    const unanswered =
      l.unansweredSends > 0
        ? `; and ${formatInteger(l.unansweredSends)} send(s) an interrupted run left without an answer, which ` +
          `may have been charged`
        : '';
    lines.push(
      `    ${formatInteger(l.credits).padStart(6)}  ${l.kind === 'batch' ? 'batch journal' : 'single checks'} ` +
        `${l.where} (${formatInteger(l.lookups)} lookup(s)${unanswered})`,
    );
  }
  const unanswered = r.local.reduce((s, l) => s + l.unansweredSends, 0);
  if (r.local.length === 0) lines.push('         0  (no registered journal or check history in this period)');
  if (r.difference === 0) {
    lines.push('  difference              0: every credit of the period is accounted for here');
  } else {
    lines.push(
      `  difference              ${r.difference > 0 ? '+' : ''}${formatInteger(r.difference)} credit(s) ` +
        `${r.difference > 0 ? 'not recorded on this machine' : 'recorded here but not counted by the service'}`,
    );
    lines.push(
      r.difference > 0
        ? `  note: ${
            unanswered > 0
              ? `the ${formatInteger(unanswered)} send(s) without an answer above may ` +
                `account for up to that many lookups' credits; `
              : ''
          }other machines, users or keys of the same account also spend credits, and journals removed or ` +
            'started over (--restart) are not counted; a difference is not necessarily an error'
        : '  note: refunded lookups (lookup_expired, uncharged billing_error) and held credits not yet settled ' +
            'can make local records exceed the service; quote the correlation ids (`dnc trace`) to support if ' +
            'it persists',
    );
  }
  return lines;
}
