// A KVStore for the simulator: synced writes survive a crash, unsynced ones are lost.
import type { BatchOp, KVStore, Range } from '@noded/storage';
import type { CrashSwitch } from './crash.js';

const hex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

export class SimKV implements KVStore {
  private map = new Map<string, Uint8Array>();
  private durable = new Map<string, Uint8Array>();
  private dirty = false;

  constructor(private readonly crash?: CrashSwitch) {}

  async get(key: Uint8Array): Promise<Uint8Array | undefined> {
    return this.map.get(hex(key));
  }

  async getMany(keys: Uint8Array[]): Promise<Array<Uint8Array | undefined>> {
    return keys.map((k) => this.map.get(hex(k)));
  }

  async write(ops: BatchOp[], options?: { sync?: boolean }): Promise<void> {
    this.crash?.tick();
    const targets = options?.sync && !this.dirty ? [this.map, this.durable] : [this.map];
    for (const m of targets) {
      for (const op of ops) {
        if (op.type === 'put') m.set(hex(op.key), op.value.slice());
        else m.delete(hex(op.key));
      }
    }
    if (options?.sync && this.dirty) {
      this.durable = new Map(this.map);
      this.dirty = false;
    } else if (!options?.sync) {
      this.dirty = true;
    }
  }

  async *iterate(range: Range): AsyncIterable<[Uint8Array, Uint8Array]> {
    const lo = range.gte ? hex(range.gte) : range.gt ? hex(range.gt) : undefined;
    const hi = range.lt ? hex(range.lt) : range.lte ? hex(range.lte) : undefined;
    let keys = [...this.map.keys()]
      .filter(
        (k) =>
          (lo === undefined || (range.gt ? k > lo : k >= lo)) &&
          (hi === undefined || (range.lt ? k < hi : k <= hi)),
      )
      .sort();
    if (range.reverse) keys.reverse();
    if (range.limit !== undefined && range.limit >= 0) keys = keys.slice(0, range.limit);
    for (const k of keys) {
      const v = this.map.get(k);
      if (v) yield [new Uint8Array(Buffer.from(k, 'hex')), v];
    }
  }

  async close(): Promise<void> {}

  /** Power loss: back to what was synced. */
  crashLoseUnsynced(): void {
    this.map = new Map(this.durable);
    this.dirty = false;
  }
}
