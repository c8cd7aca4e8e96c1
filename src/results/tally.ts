// The tally of a batch's output: its rows and distinct numbers by result and country, the credits, the register
// sources, the oldest and newest verdict. Written into the manifest when rendered, recomputed by verify.
import { parseServiceTime } from '../time.js';
import { fastValidE164 } from '../phone/fast-e164.js';
import { C, DNC_RESULTS } from './columns.js';
import { P, phoneCellsAt } from './row-cells.js';

type Counts = Record<string, number>;

/** What the rows of an output file add up to (the manifest states it; `dnc verify` recomputes it). */
export interface OutputTally {
  rows: { total: number; by_result: Counts; by_country: Record<string, Counts> };
  numbers: { distinct: number; by_result: Counts; by_country: Record<string, Counts> };
  /** Credits of the distinct numbers' lookups (charged, or held for pending ones). */
  credits_used: number;
  register_sources: string[];
  checked_at: { oldest: string | null; newest: string | null };
  /** Rows whose verdict came from the local results cache (--reuse-within). */
  reused_rows: number;
}

const bump = (c: Counts, k: string) => {
  c[k] = (c[k] ?? 0) + 1;
};
const zeroResults = (): Counts => Object.fromEntries(DNC_RESULTS.map((r) => [r, 0]));

/** Adds rows up one at a time (in file order). */
export class TallyBuilder {
  private readonly t: OutputTally = {
    rows: { total: 0, by_result: zeroResults(), by_country: {} },
    numbers: { distinct: 0, by_result: zeroResults(), by_country: {} },
    credits_used: 0,
    register_sources: [],
    checked_at: { oldest: null, newest: null },
    reused_rows: 0,
  };
  private readonly seen = new Set<string>();
  private readonly sources = new Set<string>();
  private oldestMs = Infinity;
  private newestMs = -Infinity;

  /**
   * `phones`: the output's phone columns (with several, each number is counted from its dnc_N_* cells); `calling`:
   * whether the output has the calling columns (those written before them do not).
   */
  constructor(
    private readonly phones = 1,
    private readonly calling = true,
  ) {}

  add(cells: readonly string[]): void {
    const result = cells[C.result] ?? '';
    const country = cells[C.country] ?? '';
    const t = this.t;
    t.rows.total++;
    bump(t.rows.by_result, result);
    bump((t.rows.by_country[country] ??= zeroResults()), result);
    if ((cells[C.error] ?? '').startsWith('reused:')) t.reused_rows++;
    if (cells[C.source]) this.sources.add(cells[C.source]!);
    const at = cells[C.checkedAt] ?? '';
    const ms = parseServiceTime(at);
    if (Number.isFinite(ms)) {
      if (ms < this.oldestMs) [this.oldestMs, t.checked_at.oldest] = [ms, at];
      if (ms > this.newestMs) [this.newestMs, t.checked_at.newest] = [ms, at];
    }
    if (this.phones > 1) {
      this.addNumbers(cells);
      return;
    }
    const e164 = cells[C.e164] ?? '';
    if (e164 === '' || this.seen.has(e164)) return;
    this.seen.add(e164);
    t.numbers.distinct++;
    bump(t.numbers.by_result, result);
    bump((t.numbers.by_country[country] ??= zeroResults()), result);
    t.credits_used += Number.parseInt(cells[C.credits] ?? '0', 10) || 0;
  }

  /**
   * The numbers of a row of several: each distinct number by its own result and its own country (read from the
   * number, the same way wherever it is counted); the row's dnc_credits already holds the credits of the numbers
   * first seen in it.
   */
  private addNumbers(cells: readonly string[]): void {
    const t = this.t;
    t.credits_used += Number.parseInt(cells[C.credits] ?? '0', 10) || 0;
    for (let k = 0; k < this.phones; k++) {
      const at = phoneCellsAt(k, this.calling);
      const e164 = cells[at + P.e164] ?? '';
      if (e164 === '' || this.seen.has(e164)) continue;
      this.seen.add(e164);
      const result = cells[at + P.result] ?? '';
      t.numbers.distinct++;
      bump(t.numbers.by_result, result);
      bump((t.numbers.by_country[fastValidE164(e164)?.country ?? ''] ??= zeroResults()), result);
    }
  }

  done(): OutputTally {
    this.t.register_sources = [...this.sources].sort();
    return this.t;
  }
}
