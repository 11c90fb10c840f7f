// The one key-value interface every persistent part of the node writes through. Keys and values
// are raw bytes; ordering is bytewise, so big-endian integers in keys iterate in numeric order.

export type BatchOp = { type: 'put'; key: Uint8Array; value: Uint8Array } | { type: 'del'; key: Uint8Array };

export interface Range {
  gt?: Uint8Array;
  gte?: Uint8Array;
  lt?: Uint8Array;
  lte?: Uint8Array;
  reverse?: boolean;
  limit?: number;
}

export interface KVStore {
  get(key: Uint8Array): Promise<Uint8Array | undefined>;
  getMany(keys: Uint8Array[]): Promise<Array<Uint8Array | undefined>>;
  /** Applies every op or none. With sync the write is on disk (fsync) before the promise resolves. */
  write(ops: BatchOp[], options?: { sync?: boolean }): Promise<void>;
  iterate(range: Range): AsyncIterable<[Uint8Array, Uint8Array]>;
  close(): Promise<void>;
}

/**
 * Optional synchronous point reads. An engine that has them serves a single cold key about ten
 * times faster than an awaited get (no thread-pool round trip); the read blocks the event loop
 * for its duration (microseconds from the block cache, one disk read otherwise).
 */
export interface SyncReader {
  getManySync(keys: Uint8Array[]): Array<Uint8Array | undefined>;
}

export function hasSyncReads(kv: KVStore): kv is KVStore & SyncReader {
  return typeof (kv as Partial<SyncReader>).getManySync === 'function';
}
