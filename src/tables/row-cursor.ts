// A table's rows taken one at a time from its batches, waiting only for a row that starts a batch.

/**
 * The rows of a table read a batch at a time and taken one at a time (the input, read in step with the output):
 * only a row that starts a batch is waited for, not every row (a million awaits cost a second).
 */
export class RowCursor {
  private batch: string[][] = [];
  private at = 0;
  private ended = false;
  constructor(private readonly batches: AsyncGenerator<string[][]>) {}
  /** The next row, or null after the last: at once when its batch is read already. */
  next(): string[] | null | Promise<string[] | null> {
    if (this.at < this.batch.length) return this.batch[this.at++]!;
    if (this.ended) return null;
    return this.batches.next().then((r) => {
      if (r.done) this.ended = true;
      else [this.batch, this.at] = [r.value, 0];
      return this.next();
    });
  }
  async close(): Promise<void> {
    await this.batches.return(undefined);
  }
}
