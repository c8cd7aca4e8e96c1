// The calling settings a batch's calling columns are computed under: resolved when a batch starts, recorded in its
// journal, kept as recorded when it is resumed (its outputs stay a function of the input, the journal and the rules).
import { resolveCallingSettings } from '../calling-settings.js';
import type { BatchCalling, BatchMeta } from '../journal/types.js';
import { callingWindowsOf } from '../results/calling-cells.js';
import type { RunContext } from './job.js';

/** The settings in effect now, checked (exit 2 before anything is read or sent), with their rules' version. */
export interface CallingInEffect {
  record: BatchCalling;
  rulesVersion: string;
}

/** --calling-settings FILE, else DNC_CALLING_SETTINGS, else the config's "calling": checked, not yet recorded. */
export async function callingInEffect(ctx: RunContext, file: string | undefined): Promise<CallingInEffect> {
  const { settings, name } = await resolveCallingSettings(ctx.flags, ctx.env, ctx.homedir, ctx.cwd, file);
  const record: BatchCalling = settings === undefined ? { name } : { settings, name };
  return { record, rulesVersion: callingWindowsOf({ calling: record }, ctx.tzdataVersion).rulesVersion };
}

/**
 * What the batch records: the settings in effect for a new batch; a batch met again keeps what it recorded (nothing,
 * in journals from before: the law's rules), and says so when the settings in effect now differ.
 */
export function recordedCalling(ctx: RunContext, existing: BatchMeta | null, now: CallingInEffect): BatchCalling {
  if (existing === null) return now.record;
  const kept = existing.calling ?? { name: 'calling' };
  if (callingWindowsOf({ calling: kept }, ctx.tzdataVersion).rulesVersion !== now.rulesVersion) {
    const recorded = kept.settings === undefined ? "none: the law's rules alone" : kept.name;
    const given = now.record.settings === undefined ? 'none' : now.record.name;
    ctx.warn(
      `dnc: warning: this batch keeps the calling settings it was started with (${recorded}); those in effect now ` +
        `(${given}) differ and are not used for its dnc_calling_window column: scrub into another -o (with ` +
        `--reuse-within to pay for nothing again) to apply them`,
    );
  }
  return kept;
}
