// How dnc writes a count or an amount of credits for people: one way everywhere (check, batch, usage).
// Kept apart from table.ts so that `dnc check` can use it without loading cli-table3.

/** Whole numbers with thousands separators, the same on every machine (en-US grouping): 9,560 / 10,000. */
export function formatInteger(n: number): string {
  return Math.trunc(n).toLocaleString('en-US');
}
