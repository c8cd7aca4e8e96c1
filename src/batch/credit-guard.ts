// The credit guard: what the numbers still to look up will cost (learned X-Credit-Cost per country) against the free
// balance.
import { formatInteger } from '../text/numbers.js';

export interface CreditForecast {
  /** Distinct numbers still to look up. */
  numbers: number;
  /** Credits they should cost; numbers of a country whose cost is not learned yet count at the floor of 1. */
  estimate: number;
  unknownCostCountries: string[];
  /** Credits left in the billing period (null: not known). */
  remaining: number | null;
  /** True when the estimate exceeds what remains. */
  short: boolean;
  /** When short: about how many of `numbers` fit before the credit limit (429) stops the batch. */
  stopsAfter: number | null;
}

// A charged lookup costs at least one credit: the floor for a country whose cost is not learned yet, so an
// estimate with unknown costs is a lower bound ("at least"), never a reassuring 0.
export const UNKNOWN_COST_FLOOR = 1;

/**
 * Forecast over the numbers in the order they will be sent (`country` of each), so the stopping point
 * is where the cumulative cost passes the balance.
 */
export function forecastInOrder(
  countries: Iterable<string>,
  costs: ReadonlyMap<string, number>,
  remaining: number | null,
): CreditForecast {
  let numbers = 0;
  let estimate = 0;
  let stopsAfter: number | null = null;
  const unknown = new Set<string>();
  for (const country of countries) {
    const cost = costs.get(country);
    if (cost === undefined) unknown.add(country);
    estimate += cost ?? UNKNOWN_COST_FLOOR;
    if (remaining !== null && stopsAfter === null && estimate > remaining) stopsAfter = numbers;
    numbers++;
  }
  const short = remaining !== null && estimate > remaining;
  return {
    numbers,
    estimate,
    unknownCostCountries: [...unknown].sort(),
    remaining,
    short,
    stopsAfter: short ? (stopsAfter ?? numbers) : null,
  };
}

/** Forecast from counts per country (order unknown: the stopping point is from the average cost). */
export function forecastByCountry(
  byCountry: ReadonlyMap<string, number>,
  costs: ReadonlyMap<string, number>,
  remaining: number | null,
): CreditForecast {
  let numbers = 0;
  let estimate = 0;
  let known = 0;
  const unknown: string[] = [];
  for (const [country, n] of byCountry) {
    numbers += n;
    const cost = costs.get(country);
    if (cost === undefined) unknown.push(country);
    else known += n;
    estimate += (cost ?? UNKNOWN_COST_FLOOR) * n;
  }
  const short = remaining !== null && estimate > remaining;
  const average = numbers > 0 ? estimate / numbers : UNKNOWN_COST_FLOOR;
  return {
    numbers,
    estimate,
    unknownCostCountries: unknown.sort(),
    remaining,
    short,
    stopsAfter: short ? Math.max(0, Math.min(numbers, Math.floor(remaining! / average))) : null,
  };
}

/** The guard's lines (a warning, never a refusal: the service's 429 stops a batch cleanly anyway). */
export function forecastLines(f: CreditForecast, what: 'batch' | 'dry-run'): string[] {
  const lines: string[] = [];
  const n = formatInteger;
  const lowerBound = f.unknownCostCountries.length > 0;
  const about = lowerBound ? 'at least' : 'about';
  const unknown = lowerBound
    ? ` (${f.unknownCostCountries.join(', ')} counted at ${UNKNOWN_COST_FLOOR} credit each: cost not learned yet)`
    : '';
  if (f.remaining === null)
    return [
      `credit guard: ${n(f.numbers)} number(s) to look up, ${about} ${n(f.estimate)} credit(s)${unknown}; the ` +
        `balance is not known`,
    ];
  if (!f.short) {
    const verdict = lowerBound ? 'enough unless the unlearned costs are higher' : 'enough';
    return [
      `credit guard: ${n(f.numbers)} number(s) to look up, ${about} ${n(f.estimate)} credit(s)${unknown}; ` +
        `${n(f.remaining)} credit(s) remain: ${verdict}`,
    ];
  }
  const verb = what === 'batch' ? 'will' : 'would';
  const need = `${n(f.numbers)} number(s) to look up need ${about} ${n(f.estimate)} credit(s)${unknown}`;
  // A balance below zero (the limit was lowered, section 2.5) is a debt, not "-50 remain".
  lines.push(
    f.remaining < 0
      ? `warning: the account is over its credit limit by ${n(-f.remaining)} credit(s) in this billing period: ${need}`
      : f.remaining === 0
        ? `warning: no credits remain in this billing period: ${need}`
        : `warning: credits are short: ${need}, but only ${n(f.remaining)} remain in this billing period`,
  );
  const resume = '(resume after a top-up or in the next period)';
  const after = f.stopsAfter!;
  lines.push(
    after === 0
      ? `  the batch ${verb} be refused at its first lookup (429): all ${n(f.numbers)} number(s) ` +
          `would be not_checked ${resume}`
      : `  the batch ${verb} stop at the credit limit (429) after about ${n(after)} of ${n(f.numbers)} number(s); ` +
          `the other ${n(f.numbers - after)} would be not_checked ${resume}`,
  );
  return lines;
}

/** The guard of `batch --dry-run`: numbers by country (those that would not be sent left out) against the balance. */
export function dryRunGuard(
  byCountry: ReadonlyMap<string, number>,
  notSent: readonly string[],
  costs: ReadonlyMap<string, number>,
  remaining: number | null,
) {
  const sent = new Map([...byCountry].filter(([c]) => !notSent.includes(c)));
  const f = forecastByCountry(sent, costs, remaining);
  return {
    forecast: f,
    json: {
      estimated_credits: f.estimate,
      credits_remaining: f.remaining,
      short: f.short,
      stops_after_numbers: f.stopsAfter,
      numbers_to_look_up: f.numbers,
    },
    lines: forecastLines(f, 'dry-run'),
  };
}
