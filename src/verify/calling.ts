// verify's check of the calling columns (dnc_time_zones, dnc_calling_window): each recomputed from the number and the
// calling settings the journal recorded, as the render computed it; a cell that differs was edited.
import type { BatchMeta } from '../journal/types.js';
import { PhoneCache } from '../phone/phone-cache.js';
import { callingCells, callingWindowsOf } from '../results/calling-cells.js';

/** How verify checks a file's calling cells. */
export interface CallingCheck {
  /** What is wrong with a number's two cells (null: they are what the rules give). Null when nothing is checked. */
  readonly check: ((e164: string, zones: string, window: string) => string | null) | null;
  /** Why the cells cannot be checked (written under other calling rules than this dnc's), or null. */
  readonly unchecked: string | null;
}

/**
 * The parts of a rules' version that the cells depend on: not the time-zone database's or the holiday data's version
 * (neither changes a number's zones or its weekly rule, and either may differ on the machine that verifies).
 */
function cellsVersion(version: string): string {
  return version
    .split(' ')
    .filter((part) => !part.startsWith('tzdata/') && !part.startsWith('date-holidays/'))
    .join(' ');
}

/**
 * The check of a file written with the calling columns under `recorded` (the manifest's calling_rules_version),
 * with the settings of its journal's meta (null: no journal, no settings known, so the law's rules).
 */
export function callingCheckOf(
  recorded: string | undefined,
  meta: Pick<BatchMeta, 'calling'> | null,
  tzdataVersion: string,
): CallingCheck {
  const windows = callingWindowsOf(meta ?? {}, tzdataVersion);
  // A manifest without the version (edited, since every new one has it) is checked against this dnc's rules.
  if (recorded !== undefined && cellsVersion(recorded) !== cellsVersion(windows.rulesVersion)) {
    const why = meta === null && recorded.includes(' settings/') ? ' (the team settings are in the journal)' : '';
    return {
      check: null,
      unchecked:
        `the calling columns were written under calling rules ${recorded}${why}; this dnc computes them under ` +
        `${windows.rulesVersion}: they are not checked`,
    };
  }
  // Each number's country as the render read it: its own, from its E.164 (the row's country never overrides it).
  const phones = new PhoneCache(undefined);
  const countryOf = (e164: string) => {
    const n = phones.normalise(e164);
    return n.ok ? n.country : '';
  };
  return {
    unchecked: null,
    check(e164, zones, window) {
      const [z, w] = callingCells(windows, e164, e164 === '' ? '' : countryOf(e164));
      if (zones !== z) return `dnc_time_zones ${JSON.stringify(zones)} is not what the calling rules give (${show(z)})`;
      if (window !== w)
        return `dnc_calling_window ${JSON.stringify(window)} is not what the calling rules give (${show(w)})`;
      return null;
    },
  };
}

const show = (cell: string) => (cell === '' ? 'empty' : JSON.stringify(cell));
