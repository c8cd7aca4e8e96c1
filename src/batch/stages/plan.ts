// The plan stage: what is answered without a lookup (a colleague's verdicts, the internal list, cached verdicts, the
// answers of the last day) and what the rest will cost, before the first lookup.
import { formatInteger } from '../../text/numbers.js';
import { adoptTeamVerdicts } from '../lookups.js';
import * as beforeSending from '../before-lookups.js';
import { sendingOf, settleRecent } from '../repay.js';
import { optionsOfJournal } from '../options.js';
import type { OpenRun, Plan } from './context.js';
import { applyLists } from './read.js';

export async function planStage(run: OpenRun, read: { listsApplied: boolean }): Promise<Plan> {
  const { ctx, journal, serviceOrigin } = run;
  const adopted = await adoptTeamVerdicts(ctx, journal, serviceOrigin, run.options);
  if (adopted > 0)
    ctx.info(`${formatInteger(adopted)} pending number(s) answered by a colleague's webhook lookup (the team store)`);
  // The balance for the credit guard is asked as soon as lookups are known to come.
  const lookupsAhead = run.reading !== null || journal.unsentCount() > 0;
  const balance = lookupsAhead ? run.clientReady.then((c) => c.usage()) : null;
  // Read by the credit guard (the look-up stage), which says when it could not be had; unread when nothing is sent.
  balance?.catch(() => {});
  if (!read.listsApplied) await applyLists(run);
  await beforeSending.beforeLookups(ctx, ctx, journal, {
    service: serviceOrigin,
    reuseWithinMs: run.options.reuseWithinMs ?? null,
    compliance: run.options.compliance ?? {},
  });
  // The guard warns, it never blocks: while the list is read, lookups do not wait for the balance (it
  // is checked when it comes, and says "so far" while reading goes on).
  const sending = await sendingOf(ctx, journal, run.options, serviceOrigin);
  const recentOutcome = run.recent ? await settleRecent(ctx, journal, run.recent, run.options, sending) : null;
  // An answer on a terminal ("reuse, pay again or stop?") is written into the journal's remembered options
  // (src/batch/repay.ts): the look-up and write stages read it from there.
  run.options = optionsOfJournal(run.options, journal.meta());
  return { costs: sending.costs, willSend: sending.willSend, balance, recentOutcome };
}
