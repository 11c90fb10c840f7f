// How much memory each of the node's RocksDB databases may hold (RocksKV.open's options), sized to how
// much each is written. A database's memtables keep its recent writes until two write buffers (a
// quarter of the budget each) are full, and RocksDB flushes by size only, so a quiet node keeps up to
// half of every budget (one full write buffer and the active one) until the node goes quiet after a
// load, when native-reclaim.ts flushes them (RocksDB itself never flushes a memtable for its age).
// Block caches fill with a load's reads and never shrink: each is sized to what its reads need
// (docs/reliability.md, "Bounded memory").
// Under the soak's load (20 transfers/s, a block a second) the four databases were written 3.1
// (application), 2.3 (tx_index), 1.6 (state) and 0.5 (blockstore) MB a minute.
import type { RocksOptions } from '@noded/storage';

const MiB = 1 << 20;

/** Each database's budget, by the name of its directory under data/ (the metrics' `db` label). */
export const DATABASE_MEMORY = Object.freeze({
  /**
   * The executor's state, receipts and logs (and a state-store replica's copy of them): the most
   * written (2.0-3.1 MB a minute under the soak's load). A quiet node keeps up to half its budget in
   * memtables (a full write buffer waiting for a second one, and the active one): up to 16 MiB here,
   * most of the 20% a node may stay over its idle RSS after a load. 16 MiB for every database cost
   * about 10% of sustained transfers; 16 MiB here with tx_index at 8 cost 11-12% more node CPU per
   * 1,000 transactions (transfers and ERC-20, two pairs each, load average 5-16), so it keeps 32
   * (docs/reliability.md, "Bounded memory", 2026-11-28 early morning).
   */
  application: { memtableBudget: 32 * MiB, blockCache: 8 * MiB },
  /**
   * The transaction index, written by the indexer's thread: three quarters of the application's
   * volume, most of it under random keys (transaction hashes), which cost compactions at a small
   * budget: writing a 4,000-transfer block's entries took 5-37% more CPU with 16 MiB than with 32 in
   * paired runs on a busy machine; 8 MiB (the application at 32) was neither shown to cost nor shown
   * free in paired sustained runs at load average 12-16 (docs/reliability.md, as above): it keeps 32.
   */
  txIndex: { memtableBudget: 32 * MiB, blockCache: 4 * MiB },
  /**
   * Blocks and commits: append-only under keys by height, a sixth of the application's volume. Its
   * flushes and compactions at 4 MiB cost 0.6-0.8 ms of CPU more per 1,000 transfers than at 32
   * (its writes for 4,000-transfer blocks, two paired runs), where the node spends about 500.
   */
  blockstore: { memtableBudget: 4 * MiB, blockCache: 4 * MiB },
  /**
   * Consensus state: validator sets, consensus params and FinalizeBlock responses per height, and
   * evidence: half the application's volume (FinalizeBlock results, about 1.2 KB a transfer),
   * mostly under keys by height, read back rarely (at start, by the RPC for old heights). 0.2-1.1 ms of
   * CPU more per 1,000 transfers at 4 MiB than at 32, measured as for the block store.
   */
  state: { memtableBudget: 4 * MiB, blockCache: 2 * MiB },
  /** A light client's verified headers: a few KB per height. */
  light: { memtableBudget: 4 * MiB, blockCache: 2 * MiB },
} satisfies Record<string, RocksOptions>);
