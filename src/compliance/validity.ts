// How long a scrub stays valid, by country: the register rules' windows (US/CA 31 days, GB 28, AU 30) and a
// configurable default.
import { governingCountry } from '../phone/countries.js';
import { DAY_MS, parseServiceTime } from '../time.js';

/** Days a register verdict may be relied on, by country (FTC TSR: 31 days; CRTC: 31; TPS/CTPS: 28; ACMA: 30). */
export const VALIDITY_DAYS: Readonly<Record<string, number>> = { US: 31, CA: 31, GB: 28, AU: 30 };
export const DEFAULT_VALIDITY_DAYS = 30;

export interface ValidityRules {
  byCountry: Record<string, number>;
  otherDays: number;
}

/** The built-in windows with the config file's "validity_days" over them ({"default": 30, "GB": 28}). */
export function validityRules(overrides: Record<string, number> | undefined): ValidityRules {
  const byCountry: Record<string, number> = { ...VALIDITY_DAYS };
  let otherDays = DEFAULT_VALIDITY_DAYS;
  for (const [k, n] of Object.entries(overrides ?? {})) {
    if (k === 'default') otherDays = n;
    else byCountry[k] = n;
  }
  return { byCountry, otherDays };
}

/** The window of the country whose register governs the number (GB for a Guernsey, Jersey or Isle of Man one). */
export function windowDays(rules: ValidityRules, country: string): number {
  return rules.byCountry[country] ?? rules.byCountry[governingCountry(country) ?? country] ?? rules.otherDays;
}

/**
 * The last moment a verdict checked at `checkedAt` may be relied on: checked_at + the country's window (inclusive). NaN
 * if unreadable.
 */
export function validUntilMs(rules: ValidityRules, country: string, checkedAt: string | null | undefined): number {
  return parseServiceTime(checkedAt) + windowDays(rules, country) * DAY_MS;
}

/**
 * A row's dnc_valid_until: the last instant its register verdict may be relied on (checked_at + the country's
 * window, or the exemption's end when that comes first), as epoch ms; NaN for a row without a register verdict
 * (invalid, failed, pending, not checked, or on the internal list, which has no window).
 */
export function rowValidUntilMs(
  rules: ValidityRules,
  country: string,
  result: string,
  source: string,
  checkedAt: string,
  exemptionUntil: string | null,
): number {
  if ((result !== 'callable' && result !== 'do_not_call') || source.startsWith('internal:')) return NaN;
  const until = validUntilMs(rules, country, checkedAt);
  // An exemption's `until` is the last instant it holds, as valid_until is the last valid instant.
  const x = exemptionUntil ? Date.parse(exemptionUntil) : NaN;
  return Number.isFinite(x) && x < until ? x : until;
}

/** What the manifest records of validity: the rules, and the earliest valid-until per country and overall. */
export interface ValiditySummary {
  window_days: Record<string, number>;
  default_window_days: number;
  /** The last moment every callable row of that country is still valid (ISO 8601, inclusive), by country. */
  valid_until_by_country: Record<string, string>;
  /** The earliest of them: after this, the file must be scrubbed again before it is dialled. */
  valid_until: string | null;
  /** Callable rows whose valid-until is earlier because an exemption ends first. */
  exemption_bound_rows: number;
  /**
   * The output column that holds each row's own valid-until (pinned by the output's SHA-256); absent before it was
   * added.
   */
  row_column?: 'dnc_valid_until';
}

/**
 * Adds up each callable row's valid-until (checked_at + window, or the exemption's end when that comes
 * first) while an output is walked. Only callable rows expire in a way that matters: a do_not_call verdict
 * is never dialled, so its age cannot put anyone at risk.
 */
export class ValidityBuilder {
  private readonly earliest = new Map<string, number>();
  private exemptionBound = 0;
  constructor(private readonly rules: ValidityRules) {}

  add(country: string, result: string, checkedAt: string, exemptionUntil: string | null): void {
    if (result !== 'callable') return;
    const until = rowValidUntilMs(this.rules, country, result, '', checkedAt, exemptionUntil);
    if (!Number.isFinite(until)) return;
    if (until < validUntilMs(this.rules, country, checkedAt)) this.exemptionBound++;
    const prev = this.earliest.get(country);
    if (prev === undefined || until < prev) this.earliest.set(country, until);
  }

  done(): ValiditySummary {
    const byCountry = Object.fromEntries(
      [...this.earliest.entries()]
        .sort((a, b) => a[0].localeCompare(b[0]))
        .map(([c, ms]) => [c, new Date(ms).toISOString()]),
    );
    const all = [...this.earliest.values()];
    return {
      window_days: { ...this.rules.byCountry },
      default_window_days: this.rules.otherDays,
      valid_until_by_country: byCountry,
      valid_until: all.length ? new Date(Math.min(...all)).toISOString() : null,
      exemption_bound_rows: this.exemptionBound,
      row_column: 'dnc_valid_until',
    };
  }
}
