// Options of the executor, built by the node from app.toml ([evm.gas], pruning), config.toml
// ([mempool]) and the genesis. Defaults follow the seed (§2.4 [evm.gas]) and the ports brief.

import type { KVStore } from '@noded/storage';
import type { EventBus, Logger } from '@noded/types';
import type { DepositSource } from './bridge/inbound.js';
import { defaultMempoolOptions, type MempoolOptions } from './mempool.js';

export interface GasOptions {
  /** Initial base fee ([evm.gas] base_fee). */
  baseFee: bigint;
  /** Base fee floor and the minimum fee cap a transaction may carry ([evm.gas] min_gas_price). */
  minGasPrice: bigint;
  /** Base fee ceiling and the maximum fee cap a transaction may carry ([evm.gas] max_gas_price). */
  maxGasPrice: bigint;
  /** EIP-1559 gas target per block ([evm.gas] gas_target). */
  gasTarget: bigint;
  /** Gas limit reported in block headers and the per-transaction maximum ([evm.gas] block_gas_limit). */
  blockGasLimit: bigint;
}

export const defaultGasOptions: GasOptions = {
  baseFee: 1_000_000_000n,
  minGasPrice: 1_000_000_000n,
  maxGasPrice: 1_000_000_000_000n,
  gasTarget: 15_000_000n,
  blockGasLimit: 30_000_000n,
};

export interface ExecutorOptions {
  /** data/application.db */
  kv: KVStore;
  /** Consensus chain id (chain-local, chain-testnet, chain-mainnet). */
  chainId: string;
  /** EVM chain id (31337, 31611, 31612). */
  evmChainId: bigint;
  /** full keeps `keepRecent` heights of state; archive keeps all. */
  mode: 'full' | 'archive';
  /** app.toml pruning_keep_recent (full mode); default 100. */
  keepRecent: number;
  gas: GasOptions;
  mempool: MempoolOptions;
  /** Accept legacy transactions without EIP-155 replay protection over eth_sendRawTransaction. */
  allowUnprotectedTxs: boolean;
  /** eth_sendRawTransaction fee cap in base units (gas * fee cap); 0 = none. */
  txFeeCap: bigint;
  bus: EventBus;
  logger: Logger;
  /**
   * Run admitted transactions ahead of the next proposal (docs/execution.md); default true. Off
   * gives the same blocks and results, executed only once proposed.
   */
  runAhead?: boolean;
  /**
   * Accept dev-chain requests (devSetState, devSendImpersonated) from this node's RPC: true only on
   * the single validator of chain-local, whose proposals carry them. Blocks with dev operations are
   * executed on any chain-local node either way (dev.ts).
   */
  devControls?: boolean;
  /**
   * Journal every block's changes so that rollbackTo (evm_revert, anvil_reset) can undo them;
   * default: devControls. The cluster's executor has the dev controls but serves no snapshots, and
   * leaves it off (the journal would also travel to every state-store in the committed stream).
   */
  devJournal?: boolean;
  /** Where kv lives, for error messages (e.g. "<home>/data/application.db"). */
  location?: string;
  /**
   * The outbox of committed heights (the cluster's executor service): each commit also writes
   * `encode(height record)` under the outbox prefix in the same atomic write, so a publisher that
   * drains it (outboxEntries, clearOutbox) loses no height to a crash. Off in the all-in-one node.
   */
  outbox?: { encode(record: CommittedRecord): Uint8Array };
  /**
   * Bridge in: where this validator's vote extensions take the next source-chain deposits from (the
   * DepositWatcher, with app.toml [bridge] enable = true). Without it the node attests nothing but
   * still checks and mints what others attested.
   */
  deposits?: DepositSource;
  /**
   * genesis.json app_state.rewards.upgrade_height and params (docs/staking.md "Switching an existing
   * chain"): at exactly this height a chain with the validator pool and no reward account gets one,
   * and its fees are split from that block on instead of going to the proposer. Every node of the
   * network must run with the same (it changes the app hash from that height).
   */
  rewardsUpgrade?: { height: number; validatorShare: bigint; blockReward: bigint };
  /**
   * Plain value transfers applied without the EVM (BlockRun's plainTransfer; the same state as
   * runTx gives them). Default true; false runs every transaction through runTx, which tests use to
   * compare the two.
   */
  plainTransfers?: boolean;
}

/** What the executor committed at one height, as the outbox records it (docs/cluster.md). */
export interface CommittedRecord {
  chainId: string;
  height: number;
  blockHash: Uint8Array;
  parentHash: Uint8Array;
  headerRlp: Uint8Array;
  blockSize: bigint;
  appHash: Uint8Array;
  txs: Array<{ raw: Uint8Array; sender: Uint8Array; hash: Uint8Array }>;
  receipts: Array<{
    type: number;
    status: 0 | 1;
    cumulativeGasUsed: bigint;
    gasUsed: bigint;
    effectiveGasPrice: bigint;
    from: Uint8Array;
    to: Uint8Array | null;
    contractAddress: Uint8Array | null;
    logs: Array<{ address: Uint8Array; topics: Uint8Array[]; data: Uint8Array }>;
  }>;
  /** Account (key: address) and storage (key: address + slot) values after the height; undefined: deleted. */
  stateChanges: Array<{ kind: 'account' | 'storage'; key: Uint8Array; value: Uint8Array | undefined }>;
  codes: Array<{ codeHash: Uint8Array; code: Uint8Array }>;
  /**
   * The height's write to application.db, in order, without its own outbox record: a replica that
   * applies it mirrors the executor's database (docs/cluster.md). Empty from an older executor.
   */
  kvOps: Array<{ key: Uint8Array; value: Uint8Array | undefined }>;
  /**
   * The height's light block as consensus sent it in FinalizeBlock (FinalizeBlockRequest.lightBlock:
   * header, commit, validator set), for the state-stores to verify; absent in the genesis record
   * and when consensus sent none.
   */
  lightBlock?: Uint8Array;
}

export { defaultMempoolOptions };
export const DEFAULT_KEEP_RECENT = 100;
