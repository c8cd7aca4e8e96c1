// Durations on the command line: 31d, 12h, 90m, 45s, 2w (--max-age, --reuse-within).
import { usageError } from '../errors.js';

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

export const DAY_MS = UNIT_MS.d!;

/** The longest duration accepted: about ten years, as the config file's validity_days. */
export const MAX_DURATION_DAYS = 3660;

/** Parses "7d", "12h", "1.5d" into milliseconds; anything else is a usage error naming the flag. */
export function parseDuration(flag: string, text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$/i.exec(text);
  const ms = m ? Number(m[1]) * UNIT_MS[m[2]!.toLowerCase()]! : NaN;
  if (!Number.isFinite(ms) || ms <= 0) {
    throw usageError('E_USAGE', `${flag} ${JSON.stringify(text)} is not a duration`, {
      hint: `write a number and a unit: s, m, h, d or w (e.g. ${flag} 7d or ${flag} 12h)`,
    });
  }
  if (ms > MAX_DURATION_DAYS * DAY_MS) {
    throw usageError('E_USAGE', `${flag} ${JSON.stringify(text)} is too long: at most ${MAX_DURATION_DAYS}d (about ten years)`, {
      hint: `write a duration from 1s to ${MAX_DURATION_DAYS}d`,
    });
  }
  return ms;
}

/** "7d", "12h", "90m" back from milliseconds (for messages; weeks are shown as days). */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm'] as const) {
    const n = ms / UNIT_MS[unit]!;
    if (n >= 1 && Number.isInteger(n)) return `${n}${unit}`;
  }
  return `${Math.round(ms / 1000)}s`;
}

/** The service's timestamps carry microseconds (2026-11-21T23:08:03.123456+00:00): milliseconds since the epoch, or NaN. */
export function parseServiceTime(text: string | null | undefined): number {
  if (!text) return NaN;
  return Date.parse(text.replace(/(\.\d{3})\d+/, '$1'));
}
