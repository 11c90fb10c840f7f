// libs/storage: the key-value interface and its engines.
// The interface every persistent component writes through.

// Writes held in memory (and read back) until released as one batch: block sync's ordering of
// the application's and the state's writes after the block store's.
export { HoldingKV } from './src/holding.js';
export type { BatchOp, KVStore, Range } from './src/kv.js';
// Optional synchronous point reads (RocksKV and MemoryKV have them) for hot single-key lookups.
export { hasSyncReads, type SyncReader } from './src/kv.js';
// In-memory engine for simulations and unit tests.
export { MemoryKV } from './src/memory.js';
// CPU priority of storage's background threads: RocksDB's compaction pool (lowered at every open)
// and the transaction indexer's thread (which lowers itself).
export {
  COMPACTION_NICE,
  INDEXER_NICE,
  lowerCompactionThreads,
  lowerThisThread,
  lowerThreadsNamed,
} from './src/priority.js';
// RocksDB on disk: the one production engine.
export { defaultRocksOptions, RocksKV, type RocksMemory, type RocksOptions } from './src/rocksdb.js';
