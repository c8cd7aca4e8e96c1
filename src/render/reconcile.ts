// `dnc usage --reconcile`'s text: a billing period's credits as the service counts them beside this machine's records.
import type { Reconciliation } from '../usage/reconcile.js';
import { formatInteger } from '../text/numbers.js';

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
