// How dnc writes a count or an amount of credits for people: one way everywhere (check, batch, usage).
// Kept apart from table.ts so that `dnc check` can use it without loading cli-table3.

/**
 * Whole numbers with thousands separators, the same on every machine (en-US grouping): 9,560 / 10,000.
 * Grouped by hand, not by toLocaleString: the first Intl call loads ICU's locale data (≈ 14 ms), which
 * `dnc --help` paid for one option's description.
 */
export function formatInteger(n: number): string {
  const whole = Math.trunc(n);
  const digits = String(Math.abs(whole)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return whole < 0 ? `-${digits}` : digits;
}
