// Work a batch leaves running beside its render (the journal's log on its way to disk, the learned costs written).

/**
 * Promises left to run on their own, all settled before the journal closes. None is lost: a failure is reported
 * (a debug line naming the work) when it happens, never thrown into the run, whose outcome does not depend on it.
 */
export class BackgroundWork {
  private readonly tasks: Array<Promise<void>> = [];

  constructor(private readonly report: (text: string) => void) {}

  add(what: string, task: Promise<unknown>): void {
    this.tasks.push(
      task.then(
        () => {},
        (err: unknown) => this.report(`${what} failed: ${err instanceof Error ? err.message : String(err)}`),
      ),
    );
  }

  async settled(): Promise<void> {
    await Promise.all(this.tasks);
  }
}
