// A labelled line of a block `dnc check` shows for a number (src/render/check.ts, check-records.ts): labels aligned.

/** "  register        https://…": the label padded so that the values line up. */
export function field(label: string, value: string): string {
  return `  ${label.padEnd(15)} ${value}`;
}
