// Read-your-writes on a state-store (docs/cluster.md "Read-your-writes"): a read that names a height
// the replica has not applied yet (its min_height: the newest head its edge heard the executor
// announce) waits here until the follower has applied it and the Executor view shows it, or until
// its bound; the follower's apply gate calls applied() after each height's refresh.
export class AppliedHeights {
  private waiters: Array<{ height: bigint; done: (reached: boolean) => void }> = [];

  constructor(private readonly current: () => bigint) {}

  /** True once the view is at `height` or above; false after `ms` without it. */
  waitFor(height: bigint, ms: number): Promise<boolean> {
    if (this.current() >= height) return Promise.resolve(true);
    return new Promise((resolve) => {
      const w = {
        height,
        done: (reached: boolean) => {
          clearTimeout(timer);
          this.waiters = this.waiters.filter((x) => x !== w);
          resolve(reached);
        },
      };
      const timer = setTimeout(() => w.done(this.current() >= height), ms);
      this.waiters.push(w);
    });
  }

  /** The view moved: wakes every read whose height it now holds. */
  applied(): void {
    const at = this.current();
    for (const w of this.waiters.filter((x) => x.height <= at)) w.done(true);
  }

  /** Shutting down: every read still waiting gets its answer (not reached) now. */
  close(): void {
    for (const w of [...this.waiters]) w.done(false);
  }
}
