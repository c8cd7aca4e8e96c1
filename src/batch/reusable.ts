// What --reuse-within would save, said before a batch spends: fresh verdicts in the results cache for its numbers.
import { windowDays, type ValidityRules } from '../compliance/validity.js';
import { formatInteger } from '../text/numbers.js';
import { UNKNOWN_COST_FLOOR } from './credit-guard.js';
import { DAY_MS, formatDuration, parseDuration, parseServiceTime } from '../time.js';
import type { ResultsCache, StoreScope } from '../stores/interfaces.js';
import type { Stores } from '../stores/owner.js';
import { judgedResultsCache } from '../stores/judged-results-cache.js';

/** Numbers a batch is about to look up whose verdict from the same service is in the results cache and still valid. */
export interface Reusable {
  numbers: number;
  /** Credits their lookups would cost (learned costs; a country not learned yet at the floor of 1). */
  credits: number;
  /** The --reuse-within that reuses them, with time left to run the command again (10m, 6h, 7d …). */
  window: string;
}

/**
 * Counts, number by number, the verdicts a batch could reuse: checked by the same service within the number's
 * validity window (its country's, as the manifest judges them), so that reusing them gives verdicts fit to dial.
 * Only the results cache is asked (every finished batch, and every check, fills it): another output's journal
 * holds nothing a finished batch did not put there.
 */
export class ReusableCounter {
  /** Each fresh verdict found: its age and its number's country. */
  private readonly ages: number[] = [];
  private readonly countries: string[] = [];
  /** The shortest validity window among the countries found (days). */
  private shortestDays = Infinity;
  /** Numbers added, looked up in the cache together when done. */
  private added: Array<{ e164: string; country: string }> = [];

  private constructor(
    private readonly cache: ResultsCache,
    private readonly now: Date,
    private readonly rules: ValidityRules,
  ) {}

  /**
   * A counter over the results cache, or null when asking would find nothing: no cache (none is created), or no
   * verdict of this service recent enough for the longest window (one indexed probe, so a batch without any
   * keeps reading its list while it looks numbers up).
   */
  static async open(
    stores: Stores,
    scope: StoreScope,
    now: Date,
    rules: ValidityRules,
  ): Promise<ReusableCounter | null> {
    const cache = judgedResultsCache(await stores.resultsCache(scope, { create: false }).catch(() => null));
    if (!cache) return null;
    try {
      if (await cache.hasVerdictsSince(new Date(now.getTime() - longestDays(rules) * DAY_MS)))
        return new ReusableCounter(cache, now, rules);
    } catch {
      // An unreadable cache: nothing to say about it here (a batch that fills it reports that).
    }
    await cache.close();
    return null;
  }

  /** One number about to be looked up (each once); counted when done. */
  add(e164: string, country: string): void {
    this.added.push({ e164, country });
  }

  /** How old the cached verdict of each number is, when it is still valid for its country (the others left out). */
  async freshAges(numbers: ReadonlyArray<{ e164: string; country: string }>): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    const notBefore = new Date(this.now.getTime() - longestDays(this.rules) * DAY_MS);
    for (let i = 0; i < numbers.length; i += 4096) {
      const page = numbers.slice(i, i + 4096);
      const found = await this.cache.getMany(
        page.map((n) => n.e164),
        notBefore,
      );
      for (const n of page) {
        const v = found.get(n.e164);
        const checkedMs = v ? parseServiceTime(v.checkedAt) : NaN;
        if (!Number.isFinite(checkedMs)) continue;
        if (checkedMs < this.now.getTime() - windowDays(this.rules, n.country) * DAY_MS) continue;
        out.set(n.e164, Math.max(0, this.now.getTime() - checkedMs));
      }
    }
    return out;
  }

  /** Counts a fresh verdict found by freshAges (for a caller that decides later which of them count). */
  count(age: number, country: string): void {
    this.ages.push(age);
    this.countries.push(country);
    this.shortestDays = Math.min(this.shortestDays, windowDays(this.rules, country));
  }

  /**
   * What was found, or null when no number has a fresh verdict; the cache is closed. The window suggested leaves
   * time to run the command again (the verdicts age meanwhile), and never passes the shortest validity window of
   * the countries found: --reuse-within takes any verdict within it, whatever the number's country.
   */
  async done(costs: ReadonlyMap<string, number>): Promise<Reusable | null> {
    const added = this.added;
    this.added = [];
    try {
      const ages = await this.freshAges(added);
      for (const n of added) {
        const age = ages.get(n.e164);
        if (age !== undefined) this.count(age, n.country);
      }
    } finally {
      await this.close();
    }
    if (this.ages.length === 0) return null;
    const oldest = Math.max(...this.ages);
    const windowMs = Math.min(suggestedWindowMs(oldest), this.shortestDays * DAY_MS);
    let numbers = 0;
    let credits = 0;
    for (let i = 0; i < this.ages.length; i++) {
      if (this.ages[i]! > windowMs) continue;
      numbers++;
      credits += costs.get(this.countries[i]!) ?? UNKNOWN_COST_FLOOR;
    }
    return numbers === 0 ? null : { numbers, credits, window: formatDuration(windowMs) };
  }

  /** Closes the cache (done() does; a run that ends before it asks calls this). */
  async close(): Promise<void> {
    await this.cache.close();
  }
}

/** The longest validity window of the rules (days). */
function longestDays(rules: ValidityRules): number {
  return Math.max(rules.otherDays, ...Object.values(rules.byCountry));
}

/** Windows a person would type, shortest first; beyond them, whole weeks. */
const LADDER = ['10m', '30m', '1h', '2h', '6h', '12h', '1d', '2d', '3d', '7d'];
const LADDER_MS = LADDER.map((d) => parseDuration('--reuse-within', d));

/**
 * The first window of the ladder that the oldest verdict still falls in once a few minutes have passed (the time
 * to run the command again: 5 minutes, or a tenth of its age when that is longer).
 */
export function suggestedWindowMs(oldestAgeMs: number): number {
  const needed = oldestAgeMs + Math.max(5 * 60_000, oldestAgeMs / 10);
  return LADDER_MS.find((w) => w >= needed) ?? Math.ceil(needed / (7 * DAY_MS)) * 7 * DAY_MS;
}

/** The line that says so, before anything is spent: `of` is how many numbers are to be looked up in all. */
export function reusableLine(r: Reusable, of: number): string {
  const n = formatInteger;
  return (
    `${n(r.numbers)} of the ${n(of)} number(s) to look up were checked by this service within the last ${r.window} ` +
    `and their verdicts are still valid (the results cache): --reuse-within ${r.window} would reuse them ` +
    `and save about ${n(r.credits)} credit(s)`
  );
}
