import { createRequire } from 'node:module';
import { evictBlockCache, flushMemtables } from '@noded/native';
import type { BatchOp, KVStore, Range, SyncReader } from './kv.js';
import { lowerCompactionThreads } from './priority.js';

const require = createRequire(import.meta.url);

interface RocksIterator {
  next(): Promise<[Buffer, Buffer] | undefined>;
  close(): Promise<void>;
}
interface RocksLevelDb {
  open(options?: { createIfMissing?: boolean; errorIfExists?: boolean }): Promise<void>;
  close(): Promise<void>;
  getMany(keys: Uint8Array[]): Promise<Array<Buffer | undefined>>;
  _getManySync(keys: Uint8Array[]): Array<Buffer | undefined>;
  /** The binding's chained batch, filled without abstract-level's per-op copy and re-encoding. */
  _chainedBatch(): RocksChainedBatch;
  iterator(options: Record<string, unknown>): RocksIterator;
  /** RocksDB's DB::GetProperty, synchronous; '' for a property the database does not have. */
  getProperty(property: string): string;
  /** The address of the binding's native database, for @noded/native's flush. */
  readonly handle: bigint;
  status: string;
}
/**
 * A native rocksdb::WriteBatch holding a copy of every key and value put in it. It is attached to the
 * database's set of open resources until close(): the binding's own `_batch` writes one and never
 * closes it, so each write stayed reachable with all of its bytes in native memory (a leak that grew
 * with every block; docs/reliability.md, "Bounded memory").
 */
interface RocksChainedBatch {
  _put(key: Uint8Array, value: Uint8Array): void;
  _del(key: Uint8Array): void;
  _writeSync(options: { sync: boolean }): void;
  close(): Promise<void>;
}
const { RocksLevel } = require('@nxtedition/rocksdb') as {
  RocksLevel: new (location: string, options: Record<string, unknown>) => RocksLevelDb;
};

const toView = (b: Buffer): Uint8Array => new Uint8Array(b.buffer, b.byteOffset, b.byteLength);

/**
 * Native memory RocksDB holds for one database, bytes (RocksDB's own accounting, from its properties):
 * none of it shows in V8's heap figures, all of it in the process's RSS.
 */
export interface RocksMemory {
  /** Active and immutable memtables (`rocksdb.cur-size-all-mem-tables`): recent writes until a flush. */
  memtables: number;
  /** Blocks held by this database's block cache (`rocksdb.block-cache-usage`). */
  blockCache: number;
  /** Index and filter blocks of open SST files kept outside the cache (`rocksdb.estimate-table-readers-mem`). */
  tableReaders: number;
}

/** How much memory one database may hold; see defaultRocksOptions. */
export interface RocksOptions {
  /**
   * Memtable budget, bytes: write buffers of a quarter of it, flushed two at a time (RocksDB's
   * OptimizeLevelStyleCompaction: usually at most three buffers, six under a write stall).
   */
  memtableBudget: number;
  /** The database's block cache, bytes (index and filter blocks are kept in it too, so it bounds them). */
  blockCache: number;
}

/**
 * RocksDB's own defaults (64 MiB write buffers, two per database, index and filter blocks outside
 * any cache) let four databases hold about half a gigabyte of recent writes that a quiet node never
 * flushes, so RSS never came back after load (docs/reliability.md, "Bounded memory"). These keep a
 * database to about 24 MiB of memtables and 8 MiB of cache.
 */
export const defaultRocksOptions: RocksOptions = {
  // 32 MiB (8 MiB write buffers): 16 MiB cost about 10% of sustained transfers (3,537-3,665 against
  // 3,988-4,010 tx/s before the budget, docs/reliability.md "RocksDB's write buffers, bounded").
  memtableBudget: 32 << 20,
  blockCache: 8 << 20,
};

/** RocksDB on disk (@nxtedition/rocksdb). Opening a directory another process holds fails. */
export class RocksKV implements KVStore, SyncReader {
  private constructor(
    private readonly db: RocksLevelDb,
    readonly location: string,
  ) {}

  static async open(location: string, options: Partial<RocksOptions> = {}): Promise<RocksKV> {
    const o = { ...defaultRocksOptions, ...options };
    for (const [key, value] of Object.entries(o)) {
      if (!Number.isSafeInteger(value) || value < 1 << 20 || value > 2 ** 32 - 1)
        throw new RangeError(
          `RocksKV.open: ${key} must be a whole number of bytes from 1 MiB to 4 GiB, got ${value}`,
        );
    }
    const db = new RocksLevel(location, {
      keyEncoding: 'buffer',
      valueEncoding: 'buffer',
      compaction: 'level',
      // The binding's level style stores levels 0 and 1 raw and the others with ZSTD. Its `compression`
      // (on unless false) adds a ZSTD dictionary trained for every SST file a compaction writes, from
      // up to 1.6 MB of its blocks held back uncompressed until the file ends: CPU and memory spent on
      // RocksDB's background threads, for smaller files. Off: plain ZSTD on levels 2 and up.
      compression: false,
      memtableMemoryBudget: o.memtableBudget,
      cacheSize: o.blockCache,
      cacheIndexAndFilterBlocks: true,
    });
    try {
      await db.open({ createIfMissing: true });
    } catch (err) {
      const cause = (err as { cause?: Error }).cause?.message ?? (err as Error).message;
      throw new Error(`cannot open database at ${location}: ${cause}`);
    }
    // The open may have started compaction threads (the pool is the process's): they yield to the
    // node's own threads when both want a core (priority.ts).
    lowerCompactionThreads();
    return new RocksKV(db, location);
  }

  async get(key: Uint8Array): Promise<Uint8Array | undefined> {
    const [value] = await this.db.getMany([key]);
    return value === undefined ? undefined : toView(value);
  }

  async getMany(keys: Uint8Array[]): Promise<Array<Uint8Array | undefined>> {
    if (keys.length === 0) return [];
    const values = await this.db.getMany(keys);
    return values.map((v) => (v === undefined ? undefined : toView(v)));
  }

  /** Synchronous point reads (SyncReader): no thread-pool hop, blocks the event loop meanwhile. */
  getManySync(keys: Uint8Array[]): Array<Uint8Array | undefined> {
    if (keys.length === 0) return [];
    return this.db._getManySync(keys).map((v) => (v === undefined ? undefined : toView(v)));
  }

  async write(ops: BatchOp[], options: { sync?: boolean } = {}): Promise<void> {
    if (ops.length === 0) return;
    if (this.db.status !== 'open') throw new Error(`database at ${this.location} is not open`);
    const batch = this.db._chainedBatch();
    try {
      for (const op of ops) {
        if (op.type === 'put') batch._put(op.key, op.value);
        else batch._del(op.key);
      }
      batch._writeSync({ sync: options.sync ?? false });
    } finally {
      // Frees the native batch now and detaches it from the database (see RocksChainedBatch).
      await batch.close();
    }
  }

  async *iterate(range: Range): AsyncIterable<[Uint8Array, Uint8Array]> {
    const opts: Record<string, unknown> = { ...range };
    if (range.limit === undefined) delete opts.limit;
    const it = this.db.iterator(opts);
    try {
      for (;;) {
        const entry = await it.next();
        if (entry === undefined) return;
        yield [toView(entry[0]), toView(entry[1])];
      }
    } finally {
      await it.close();
    }
  }

  /** What RocksDB holds in memory for this database now; zeros once it is closed. */
  memoryUsage(): RocksMemory {
    if (this.db.status !== 'open') return { memtables: 0, blockCache: 0, tableReaders: 0 };
    return {
      memtables: this.numberProperty('rocksdb.cur-size-all-mem-tables'),
      blockCache: this.numberProperty('rocksdb.block-cache-usage'),
      tableReaders: this.numberProperty('rocksdb.estimate-table-readers-mem'),
    };
  }

  /** A numeric RocksDB property of an open database; 0 for one it does not report. */
  private numberProperty(name: string): number {
    return Number(this.db.getProperty(name)) || 0;
  }

  /**
   * Schedules a flush of the memtables to a table file on RocksDB's background thread, which then frees
   * them: RocksDB flushes only a full write buffer, so a database that went quiet keeps its last writes
   * in memory (up to half its budget) until the next load fills them. Worth it only when there is
   * something to flush; reads and writes go on meanwhile. false when nothing was scheduled (closed,
   * memtables under `minBytes`, or @noded/native cannot flush: see its nativeStatus()).
   */
  flushMemtables(minBytes = 1 << 20): boolean {
    if (this.db.status !== 'open') return false;
    if (this.numberProperty('rocksdb.cur-size-all-mem-tables') < minBytes) return false;
    return flushMemtables(this.db.handle, this.location);
  }

  /**
   * Empties the block cache of what no reader holds (index and filter blocks too), when it holds at
   * least `minBytes`: a load's reads fill it, and its blocks stay allocated until evicted, so the
   * memory does not come back when the node goes quiet. The next read of each block goes to the table
   * file. Returns the bytes freed; 0 when nothing was done (closed, under `minBytes`, or
   * @noded/native cannot: see its nativeStatus()).
   */
  evictBlockCache(minBytes = 1 << 20): number {
    if (this.db.status !== 'open') return 0;
    if (this.numberProperty('rocksdb.block-cache-usage') < minBytes) return 0;
    const usage = evictBlockCache(this.db.handle, this.location);
    return usage === undefined ? 0 : Math.max(0, usage.before - usage.after);
  }

  async close(): Promise<void> {
    if (this.db.status === 'open') await this.db.close();
  }
}
