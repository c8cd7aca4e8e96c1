// The credit budget of a batch run (--max-credits): what is spent, what lookups in flight hold, what crashes may have
// cost.
// Pure bookkeeping, so it can be tested without HTTP; the scheduler asks it before each lookup starts.

/**
 * Why the budget stopped a run: the next lookup, of `country`, counted at `estimate` credits, did not fit the
 * `left` credits of the budget. `unknownCost`: the batch had not seen that country's price, so its first lookup was
 * counted at the most a lookup is known to cost (a 1-credit number can stop a budget of 2 that way).
 */
export interface BudgetStop {
  country: string;
  estimate: number;
  left: number;
  unknownCost: boolean;
}

/** What the budget says of the next number: start it (holding `estimate`), wait for answers in flight, or stop. */
export type Admission = { kind: 'start'; estimate: number } | { kind: 'wait' } | { kind: 'stop'; why: BudgetStop };

export class CreditBudget {
  /** Credits held by lookups in flight, at their estimate. */
  private reserved = 0;
  /** Sends of earlier runs whose answers were lost: they may have been charged, so they count as spent. */
  private readonly unseen: number;
  /** Countries whose cost this batch has not seen: one lookup of each at a time tells the price. */
  private readonly probing = new Set<string>();
  /** Why the budget stopped the run, once it has. */
  stoppedBy: BudgetStop | null = null;

  constructor(
    /** The budget (--max-credits), or null for none. */
    readonly max: number | null,
    /** Credits the batch's journal records as spent already. */
    public spent: number,
    /** Costs this batch has seen (X-Credit-Cost of its own answers); learned into as answers come. */
    private readonly costs: Map<string, number>,
    /** Older costs (the cost cache): a floor, never taken as fact. */
    private readonly hints: ReadonlyMap<string, number>,
    unseenSends: ReadonlyMap<string, number>,
  ) {
    let unseen = 0;
    if (max !== null)
      for (const [country, n] of unseenSends)
        unseen += n * (costs.get(country) ?? hints.get(country) ?? this.maxKnownCost());
    this.unseen = unseen;
  }

  /** The most a lookup is known to cost (this batch's costs and the hints), at least 1. */
  maxKnownCost(): number {
    return Math.max(1, ...this.costs.values(), ...this.hints.values());
  }

  /**
   * What a lookup of `country` is counted at when its answer gives no cost that can be believed (none, or a negative
   * or absurd one): the highest cost known for that country, else the most any lookup is known to cost.
   */
  costOf(country: string): number {
    return this.costs.get(country) ?? Math.max(this.hints.get(country) ?? 0, this.maxKnownCost());
  }

  /**
   * Whether a lookup of `country` may start now. `busy`: lookups are in flight or starting, whose answers may
   * free reserved credits (then an over-budget number waits instead of stopping the run).
   */
  admit(country: string, busy: boolean): Admission {
    if (this.max === null) return { kind: 'start', estimate: 0 };
    const known = this.costs.get(country);
    let estimate: number;
    if (known === undefined) {
      // Not seen by this batch (at most a hint from the cost cache): one lookup of this country alone, assumed to
      // cost the most seen so far, hints included; its answer tells the price.
      if (this.probing.has(country)) return { kind: 'wait' };
      estimate = this.maxKnownCost();
    } else estimate = known;
    const left = this.max - this.spent - this.unseen - this.reserved;
    if (estimate > left) {
      if (busy) return { kind: 'wait' };
      this.stoppedBy = { country, estimate, left: Math.max(0, left), unknownCost: known === undefined };
      return { kind: 'stop', why: this.stoppedBy };
    }
    if (known === undefined) this.probing.add(country);
    this.reserved += estimate;
    return { kind: 'start', estimate };
  }

  /** A lookup that will not be sent after all (its claim was refused): its hold goes back. */
  cancel(country: string, estimate: number): void {
    this.reserved -= estimate;
    this.probing.delete(country);
  }

  /** A lookup is over: its hold goes back and what it cost is spent. */
  settle(country: string, estimate: number, credits: number): void {
    this.reserved -= estimate;
    this.spent += credits;
    this.probing.delete(country);
  }

  /** A country's cost as an answer told it; true when it is news (the journal then records it). */
  learn(country: string, credits: number): boolean {
    if (this.costs.get(country) === credits) return false;
    this.costs.set(country, credits);
    return true;
  }
}
