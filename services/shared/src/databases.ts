// How much memory each of the node's RocksDB databases may hold (RocksKV.open's options), sized to how
// much each is written. A database's memtables keep its recent writes until two write buffers (a
// quarter of the budget each) are full, and RocksDB flushes by size only, so a quiet node keeps up to
// three quarters of every budget for as long as it stays quiet (docs/reliability.md, "Bounded memory").
// Under the soak's load (20 transfers/s, a block a second) the four databases were written 3.1
// (application), 2.3 (tx_index), 1.6 (state) and 0.5 (blockstore) MB a minute.
import type { RocksOptions } from '@noded/storage';

const MiB = 1 << 20;

/** Each database's budget, by the name of its directory under data/ (the metrics' `db` label). */
export const DATABASE_MEMORY = Object.freeze({
  /**
   * The executor's state, receipts and logs (and a state-store replica's copy of them): the most
   * written, and the one whose flushes and compactions the sustained benchmark feels (16 MiB for
   * every database cost about 10% of sustained transfers; 32 MiB did not).
   */
  application: { memtableBudget: 32 * MiB, blockCache: 8 * MiB },
  /**
   * The transaction index, written by the indexer's thread: three quarters of the application's
   * volume, most of it under random keys (transaction hashes), which cost compactions at a small
   * budget: writing a 4,000-transfer block's entries took 5-37% more CPU with 16 MiB than with 32 in
   * paired runs on a busy machine, which the sustained benchmark could not be run quietly enough to
   * weigh, so it keeps the budget it had.
   */
  txIndex: { memtableBudget: 32 * MiB, blockCache: 8 * MiB },
  /**
   * Blocks and commits: append-only under keys by height, a sixth of the application's volume. Its
   * flushes and compactions at 4 MiB cost 0.6-0.8 ms of CPU more per 1,000 transfers than at 32
   * (its writes for 4,000-transfer blocks, two paired runs), where the node spends about 500.
   */
  blockstore: { memtableBudget: 4 * MiB, blockCache: 8 * MiB },
  /**
   * Consensus state: validator sets, consensus params and FinalizeBlock responses per height, and
   * evidence: half the application's volume (FinalizeBlock results, about 1.2 KB a transfer),
   * mostly under keys by height, read back rarely (at start, by the RPC for old heights). 0.2-1.1 ms of
   * CPU more per 1,000 transfers at 4 MiB than at 32, measured as for the block store.
   */
  state: { memtableBudget: 4 * MiB, blockCache: 8 * MiB },
  /** A light client's verified headers: a few KB per height. */
  light: { memtableBudget: 4 * MiB, blockCache: 8 * MiB },
} satisfies Record<string, RocksOptions>);
