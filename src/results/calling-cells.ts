// The calling cells of a batch's outputs (dnc_time_zones, dnc_calling_window): computed under the calling settings
// its journal recorded, so that every render of one journal (the batch's, listen's, verify's) gives the same cells.
import { createCallingWindows, type CallingWindows } from '../calling/index.js';
import type { BatchMeta } from '../journal/types.js';

/**
 * The calling windows of a journal's batch: its recorded settings (none in journals from before they were recorded:
 * the law's rules) and the time-zone database's version the caller was given (it only names the rules' version).
 */
export function callingWindowsOf(meta: Pick<BatchMeta, 'calling'>, tzdataVersion: string): CallingWindows {
  return createCallingWindows({
    tzdataVersion,
    settings: meta.calling?.settings,
    settingsName: meta.calling?.name ?? 'calling',
  });
}

/** A number's two calling cells: its zones and its weekly rule ('' for both when it could not be read). */
export function callingCells(windows: CallingWindows, e164: string, country: string): [string, string] {
  if (e164 === '') return ['', ''];
  const number = { e164, country: country || undefined };
  return [windows.zonesText(number), windows.weeklyRule(number)];
}
