import { type BatchOp, hasSyncReads, type KVStore, type Range, type SyncReader } from './kv.js';

// Keys of the held map: latin1 strings, one char per byte, so that string order is byte order.
const str = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1');
const bytes = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'latin1'));

/**
 * A KVStore whose writes can be held in memory and written later as one batch. Between hold() and
 * release() every write is kept (not passed on) and every read sees it, as if it had been written;
 * release() writes them all, in order, as one atomic batch. A crash of any kind loses what is held,
 * as if those writes had never been issued, so what is on disk never runs ahead of a point the
 * caller chose: block sync holds the application's and the consensus state's writes while catching
 * up, and writes them after the block store is on disk (docs/p2p.md, "Batched durability").
 */
export class HoldingKV implements KVStore, SyncReader {
  /** Held writes by key (latin1): the value, or null for a delete. */
  private readonly held = new Map<string, Uint8Array | null>();
  /** The held keys in byte order, built when an iteration needs it (null after a write). */
  private sorted: string[] | null = null;
  private holdingNow = false;
  private bytesHeld = 0;
  private readonly syncReader: SyncReader | undefined;

  constructor(readonly inner: KVStore) {
    this.syncReader = hasSyncReads(inner) ? inner : undefined;
  }

  /** Writes are held from now on, until release(). */
  hold(): void {
    this.holdingNow = true;
  }

  /**
   * Stops holding without writing: what is held stays in memory (and readable) and goes out with
   * the next write, in the same batch, or with release().
   */
  stopHolding(): void {
    this.holdingNow = false;
  }

  /** Whether writes are being held. */
  get holding(): boolean {
    return this.holdingNow;
  }

  /** Bytes of keys and values held (an estimate of the memory they take). */
  get heldBytes(): number {
    return this.bytesHeld;
  }

  /** Distinct keys held. */
  get heldKeys(): number {
    return this.held.size;
  }

  /**
   * Stops holding and writes every held write, then `ops`, as one batch (synced with `sync`).
   * With nothing held and no ops, nothing is written.
   */
  async release(options: { sync?: boolean } = {}, ops: BatchOp[] = []): Promise<void> {
    this.holdingNow = false;
    await this.writeHeld(ops, options);
  }

  private async writeHeld(extra: BatchOp[], options: { sync?: boolean }): Promise<void> {
    if (this.held.size === 0) {
      if (extra.length > 0) await this.inner.write(extra, options);
      return;
    }
    const ops: BatchOp[] = [];
    for (const [k, v] of this.held) {
      ops.push(v === null ? { type: 'del', key: bytes(k) } : { type: 'put', key: bytes(k), value: v });
    }
    for (const op of extra) ops.push(op);
    await this.inner.write(ops, options);
    // Cleared only once written: a failed write keeps them held (and readable), and throws.
    this.held.clear();
    this.sorted = null;
    this.bytesHeld = 0;
  }

  /** While holding: kept in memory. Otherwise written, after (and with) anything still held. */
  async write(ops: BatchOp[], options: { sync?: boolean } = {}): Promise<void> {
    if (!this.holdingNow) return this.writeHeld(ops, options);
    for (const op of ops) {
      const k = str(op.key);
      if (!this.held.has(k)) this.sorted = null;
      const prev = this.held.get(k);
      if (prev) this.bytesHeld -= prev.length;
      else if (prev === undefined) this.bytesHeld += k.length;
      // A copy, as an engine would keep: the caller may reuse its buffers.
      const v = op.type === 'put' ? op.value.slice() : null;
      if (v) this.bytesHeld += v.length;
      this.held.set(k, v);
    }
  }

  async get(key: Uint8Array): Promise<Uint8Array | undefined> {
    if (this.held.size > 0) {
      const v = this.held.get(str(key));
      if (v !== undefined) return v ?? undefined;
    }
    return this.inner.get(key);
  }

  async getMany(keys: Uint8Array[]): Promise<Array<Uint8Array | undefined>> {
    if (this.held.size === 0) return this.inner.getMany(keys);
    const s = this.split(keys);
    if (s.missing.length > 0) s.fill(await this.inner.getMany(s.missing));
    return s.out;
  }

  getManySync(keys: Uint8Array[]): Array<Uint8Array | undefined> {
    const reader = this.syncReader;
    if (!reader) throw new Error('HoldingKV.getManySync: the wrapped store has no synchronous reads');
    if (this.held.size === 0) return reader.getManySync(keys);
    const s = this.split(keys);
    if (s.missing.length > 0) s.fill(reader.getManySync(s.missing));
    return s.out;
  }

  /**
   * The held values of `keys` in their places of `out`, the keys the wrapped store must answer
   * (`missing`), and `fill`, which puts its answers in their places.
   */
  private split(keys: Uint8Array[]): {
    out: Array<Uint8Array | undefined>;
    missing: Uint8Array[];
    fill: (values: Array<Uint8Array | undefined>) => void;
  } {
    const out: Array<Uint8Array | undefined> = new Array(keys.length);
    const missing: Uint8Array[] = [];
    const at: number[] = [];
    keys.forEach((k, i) => {
      const v = this.held.get(str(k));
      if (v === undefined) {
        missing.push(k);
        at.push(i);
      } else out[i] = v ?? undefined;
    });
    const fill = (values: Array<Uint8Array | undefined>) =>
      at.forEach((i, j) => {
        out[i] = values[j];
      });
    return { out, missing, fill };
  }

  /** The held keys inside `range`, in iteration order. */
  private heldIn(range: Range): string[] {
    if (this.held.size === 0) return [];
    if (!this.sorted) this.sorted = [...this.held.keys()].sort();
    const gt = range.gt ? str(range.gt) : undefined;
    const gte = range.gte ? str(range.gte) : undefined;
    const lt = range.lt ? str(range.lt) : undefined;
    const lte = range.lte ? str(range.lte) : undefined;
    const keys = this.sorted.filter(
      (k) =>
        (gt === undefined || k > gt) &&
        (gte === undefined || k >= gte) &&
        (lt === undefined || k < lt) &&
        (lte === undefined || k <= lte),
    );
    return range.reverse ? keys.reverse() : keys;
  }

  /** The wrapped store's entries merged with the held writes (held ones win; held deletes hide). */
  async *iterate(range: Range): AsyncIterable<[Uint8Array, Uint8Array]> {
    const mine = this.heldIn(range);
    if (mine.length === 0) {
      yield* this.inner.iterate(range);
      return;
    }
    // Values of held keys are taken now, so that a write during the iteration does not change it.
    const held = mine.map((k) => [k, this.held.get(k) ?? null] as const);
    const limit = range.limit !== undefined && range.limit >= 0 ? range.limit : Number.POSITIVE_INFINITY;
    if (limit === 0) return;
    const before = (a: string, b: string) => (range.reverse ? a > b : a < b);
    const { limit: _ignored, ...unlimited } = range;
    let n = 0;
    let i = 0;
    for await (const [k, v] of this.inner.iterate(unlimited)) {
      const ks = str(k);
      while (i < held.length && before(held[i]![0], ks)) {
        const [hk, hv] = held[i++]!;
        if (hv === null) continue;
        yield [bytes(hk), hv];
        if (++n >= limit) return;
      }
      if (i < held.length && held[i]![0] === ks) {
        const hv = held[i++]![1];
        if (hv === null) continue;
        yield [k, hv];
      } else yield [k, v];
      if (++n >= limit) return;
    }
    for (; i < held.length; i++) {
      const [hk, hv] = held[i]!;
      if (hv === null) continue;
      yield [bytes(hk), hv];
      if (++n >= limit) return;
    }
  }

  /** Closes the wrapped store; anything still held is lost (as in a crash). */
  async close(): Promise<void> {
    await this.inner.close();
  }
}
