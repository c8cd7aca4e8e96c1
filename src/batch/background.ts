// Work a batch leaves running beside its render (the journal's log on its way to disk, the learned costs written).

/** Promises left to run on their own: failures are theirs to report; all settle before the journal closes. */
export class BackgroundWork {
  private readonly tasks: Array<Promise<unknown>> = [];

  add(task: Promise<unknown>): void {
    task.catch(() => {});
    this.tasks.push(task);
  }

  async settled(): Promise<void> {
    await Promise.allSettled(this.tasks);
  }
}
