// What `dnc batch --join ID` shows when it ends: one line (or one object with --json) saying what this runner did
// for the scrub and why it stopped, and its exit status.
import type { JoinResult } from '../batch/join.js';
import type { Context } from '../context.js';
import { ExitCode } from '../errors.js';
import { writeLine } from '../io.js';
import { formatInteger } from '../text/numbers.js';

const WHY: Record<JoinResult['end'], string> = {
  done: 'the scrub is done',
  stopped: 'the scrub was stopped by the runner that started it (or it is gone)',
  nothing_left: 'nothing left to take: the others have the rest in hand',
  self: 'this runner stopped',
};

/** The line, or --json object, of a joiner's end; returns its exit status (an error is thrown by the caller). */
export function showJoinResult(ctx: Context, r: JoinResult): number {
  const o = r.outcome;
  const sent = o?.sent ?? 0;
  const credits = o?.creditsThisRun ?? 0;
  const status =
    o?.stoppedReason === 'interrupted' && r.end === 'self'
      ? ExitCode.INTERRUPTED
      : o?.stoppedReason === 'credit_limit' || o?.stoppedReason === 'budget_reached'
        ? ExitCode.CREDIT
        : ExitCode.OK;
  if (ctx.json) {
    const object = {
      scrub: r.scrub,
      ended: r.end,
      stopped_reason: r.end === 'self' ? (o?.stoppedReason ?? null) : null,
      taken: r.taken,
      sent,
      credits_used: credits,
      elapsed_ms: Math.round(o?.elapsedMs ?? 0),
    };
    writeLine(ctx.io.stdout, JSON.stringify(object));
    return status;
  }
  const why = r.end === 'self' && o?.stoppedReason ? `this runner stopped (${o.stoppedReason})` : WHY[r.end];
  const did =
    r.outcome === null
      ? 'nothing to help with'
      : `took ${formatInteger(r.taken)} number(s), sent ${formatInteger(sent)} lookup(s) ` +
        `(${formatInteger(credits)} credit(s)) in ${((o?.elapsedMs ?? 0) / 1000).toFixed(1)} s; its owner writes them`;
  ctx.info(`dnc: joined scrub ${r.scrub}: ${did}; ${why}`);
  return status;
}
