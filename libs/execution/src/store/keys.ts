// Key layout of data/application.db. One byte of prefix per table; integers big-endian so keys
// iterate in numeric order. Documented in docs/execution.md ("Storage layout").
import { be64, concat, fromHex } from '../bytes.js';

export const P = {
  meta: 0x01,
  /** Versioned state tables: latest value. */
  account: 0x10, // + address(20) -> Ethereum account RLP
  storage: 0x11, // + address(20) + slot(32) -> minimal big-endian value
  code: 0x12, // + codeHash(32) -> bytecode
  node: 0x13, // + owner(21) + pathLength(1) + nibbles -> trie node RLP
  /** History of versioned tables: the value *before* block H (0x00 absent, 0x01 + value). */
  accountHist: 0x20,
  storageHist: 0x21,
  nodeHist: 0x23,
  /** Per-height list of history keys written by that block, consumed by pruning. */
  pruneJournal: 0x30, // + height(8)
  block: 0x40, // + number(8) -> block record
  blockHash: 0x41, // + hash(32) -> number(8)
  receipts: 0x42, // + number(8) -> receipts of the block
  txIndex: 0x43, // + txHash(32) -> number(8) + index(4)
  blockTxs: 0x44, // + number(8) -> raw transactions and senders
  logAddress: 0x45, // + address(20) + number(8) -> per receipt holding it: u32 index, u32 first logIndex
  logTopic: 0x46, // + topic(32) + number(8) -> per receipt holding it: u32 index, u32 first logIndex
  /** Committed heights not yet published (the cluster's executor; ExecutorOptions.outbox). */
  outbox: 0x50, // + number(8) -> encoded CommittedRecord
} as const;

/** Versioned tables: the latest prefix and the history prefix. */
export type Table = 'account' | 'storage' | 'node';
export const LATEST_PREFIX: Record<Table, number> = { account: P.account, storage: P.storage, node: P.node };
export const HIST_PREFIX: Record<Table, number> = {
  account: P.accountHist,
  storage: P.storageHist,
  node: P.nodeHist,
};

export const META = {
  height: 'height', // last committed block height (u64); absent before initChain
  genesisHeight: 'genesisHeight', // height of the genesis state (initial_height - 1)
  appHash: 'appHash',
  lastBlockHeight: 'lastBlockHeight', // last consensus block executed (0 until the first block)
  oldestState: 'oldestState', // lowest height whose state is still readable
  nextBaseFee: 'nextBaseFee',
  totalSupply: 'totalSupply',
  stateRoot: 'stateRoot',
  chainId: 'chainId',
  evmChainId: 'evmChainId',
} as const;

export function metaKey(name: string): Uint8Array {
  return concat(Uint8Array.of(P.meta), new TextEncoder().encode(name));
}

export function latestKey(table: Table, k: string): Uint8Array {
  return fromHex(LATEST_PREFIX[table].toString(16) + k);
}

export function histKey(table: Table, k: string, height: number): Uint8Array {
  return concat(fromHex(HIST_PREFIX[table].toString(16) + k), be64(height));
}

export function heightKey(prefix: number, height: number | bigint): Uint8Array {
  return concat(Uint8Array.of(prefix), be64(height));
}
