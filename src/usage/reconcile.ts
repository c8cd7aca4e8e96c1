// `dnc usage --reconcile`: credits the local records (batch journals, check history) put in a billing period, against
// the service's credits_used.
import type { History } from '../stores/interfaces.js';
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
    history: History | null;
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
    const checks = await sources.history.between(service, iso(period.start_date), iso(period.end_date));
    // (The history also holds scrub records: one that never recorded a check has no line here.)
    if (checks.length > 0 || (await sources.history.hasChecks()))
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
