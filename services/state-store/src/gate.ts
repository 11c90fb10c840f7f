// Reads and the replica's writes take turns (the state-store's Executor view caches the committed
// position and values; a write must not land under a read that is half done). Reads run together;
// a write waits for the reads in flight, and reads that arrive meanwhile wait for the write, which
// is one synced RocksDB batch plus the view's refresh (a few ms per height).
export class ReadWriteGate {
  private reading = 0;
  private writing: Promise<void> | undefined;
  private drained: (() => void) | undefined;

  async read<T>(fn: () => Promise<T>): Promise<T> {
    while (this.writing !== undefined) await this.writing;
    this.reading++;
    try {
      return await fn();
    } finally {
      this.reading--;
      if (this.reading === 0) this.drained?.();
    }
  }

  async write<T>(fn: () => Promise<T>): Promise<T> {
    while (this.writing !== undefined) await this.writing;
    let done!: () => void;
    this.writing = new Promise<void>((r) => {
      done = r;
    });
    try {
      if (this.reading > 0) {
        await new Promise<void>((r) => {
          this.drained = r;
        });
        this.drained = undefined;
      }
      return await fn();
    } finally {
      this.writing = undefined;
      done();
    }
  }
}
