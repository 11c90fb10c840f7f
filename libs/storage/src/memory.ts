import type { BatchOp, KVStore, Range, SyncReader } from './kv.js';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

function inRange(k: string, r: Range): boolean {
  if (r.gt && !(k > hex(r.gt))) return false;
  if (r.gte && !(k >= hex(r.gte))) return false;
  if (r.lt && !(k < hex(r.lt))) return false;
  if (r.lte && !(k <= hex(r.lte))) return false;
  return true;
}

/**
 * In-memory KVStore for simulations and unit tests. Hex keys sort in the same order as the bytes.
 * `snapshot()`/`restore` let a simulator drop writes that were never synced.
 */
export class MemoryKV implements KVStore, SyncReader {
  private map = new Map<string, Uint8Array>();

  async get(key: Uint8Array): Promise<Uint8Array | undefined> {
    return this.map.get(hex(key));
  }

  async getMany(keys: Uint8Array[]): Promise<Array<Uint8Array | undefined>> {
    return keys.map((k) => this.map.get(hex(k)));
  }

  getManySync(keys: Uint8Array[]): Array<Uint8Array | undefined> {
    return keys.map((k) => this.map.get(hex(k)));
  }

  async write(ops: BatchOp[]): Promise<void> {
    for (const op of ops) {
      if (op.type === 'put') this.map.set(hex(op.key), op.value.slice());
      else this.map.delete(hex(op.key));
    }
  }

  async *iterate(range: Range): AsyncIterable<[Uint8Array, Uint8Array]> {
    const keys = [...this.map.keys()].filter((k) => inRange(k, range)).sort();
    if (range.reverse) keys.reverse();
    const limited = range.limit !== undefined && range.limit >= 0 ? keys.slice(0, range.limit) : keys;
    for (const k of limited) {
      const v = this.map.get(k);
      if (v !== undefined) yield [new Uint8Array(Buffer.from(k, 'hex')), v];
    }
  }

  async close(): Promise<void> {}

  get size(): number {
    return this.map.size;
  }
}
