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
  /** Each number counted, with its first row's checked_at (one phone column; else ''). */
  private readonly seen = new Map<string, string>();
  private readonly sources = new Set<string>();
  private lastSource = '';
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

  /**
   * `repeated`: the caller knows the row repeats a row of its number already added, with the same checked_at (one
   * phone column): only the row is counted.
   */
  add(cells: readonly string[], repeated = false): void {
    const result = cells[C.result] ?? '';
    const country = cells[C.country] ?? '';
    const t = this.t;
    t.rows.total++;
    bump(t.rows.by_result, result);
    bump((t.rows.by_country[country] ??= zeroResults()), result);
    if ((cells[C.error] ?? '').startsWith('reused:')) t.reused_rows++;
    const source = cells[C.source] ?? '';
    // (Most rows have the last row's source: a comparison costs less than a set's hash of a new string.)
    if (source !== '' && source !== this.lastSource) {
      this.sources.add(source);
      this.lastSource = source;
    }
    // Every row's credits (a number's first row holds them, its later rows 0): an edited later row then counts too.
    t.credits_used += Number.parseInt(cells[C.credits] ?? '0', 10) || 0;
    const at = cells[C.checkedAt] ?? '';
    if (this.phones > 1) {
      this.addTime(at);
      this.addNumbers(cells);
      return;
    }
    if (repeated) return;
    const e164 = cells[C.e164] ?? '';
    const firstAt = e164 === '' ? undefined : this.seen.get(e164);
    // A number's later rows repeat its first row's time: only another time can be the oldest or the newest.
    if (firstAt !== at) this.addTime(at);
    if (e164 === '' || firstAt !== undefined) return;
    this.seen.set(e164, at);
    t.numbers.distinct++;
    bump(t.numbers.by_result, result);
    bump((t.numbers.by_country[country] ??= zeroResults()), result);
  }

  private addTime(at: string): void {
    const ms = parseServiceTime(at);
    if (!Number.isFinite(ms)) return;
    const t = this.t;
    if (ms < this.oldestMs) [this.oldestMs, t.checked_at.oldest] = [ms, at];
    if (ms > this.newestMs) [this.newestMs, t.checked_at.newest] = [ms, at];
  }

  /**
   * The numbers of a row of several: each distinct number by its own result and its own country (read from the
   * number, the same way wherever it is counted); the row's dnc_credits already holds the credits of the numbers
   * first seen in it.
   */
  private addNumbers(cells: readonly string[]): void {
    const t = this.t;
    for (let k = 0; k < this.phones; k++) {
      const at = phoneCellsAt(k, this.calling);
      const e164 = cells[at + P.e164] ?? '';
      if (e164 === '' || this.seen.has(e164)) continue;
      this.seen.set(e164, '');
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
