// libs/execution: turns ordered transactions into state, receipts and the Ethereum view; the
// application consensus drives and the chain the Ethereum JSON-RPC reads.

// Bridge in: AssetsLocked deposits read from the source chain, the attestation validators put in
// their vote extensions, and the watcher that polls the source chain (docs/bridge.md).
export {
  ASSETS_LOCKED_TOPIC,
  type Deposit,
  decodeAttestation,
  encodeAttestation,
  MAX_ATTESTED_DEPOSITS,
  parseAssetsLockedLog,
  SourceChainError,
  sameDeposit,
} from './src/bridge/deposits.js';
export type { DepositSource } from './src/bridge/inbound.js';
export {
  type AttestingValidator,
  BRIDGE_TX_MAGIC,
  type BridgeTx,
  BridgeTxError,
  checkBridgeTx,
  decodeBridgeTx,
  encodeBridgeTx,
  isBridgeTx,
  type SupportingVote,
  tallyAttestations,
} from './src/bridge/mint.js';
export {
  DepositWatcher,
  type DepositWatcherOptions,
  type DepositWatcherStats,
  kvWatcherProgress,
  type SavedProgress,
  type WatcherProgressStore,
} from './src/bridge/watcher.js';
// The 0x address check every layer shares: a precise -32602 naming the bad value.
export { normAddress } from './src/bytes.js';
// The Ethereum header's RLP (a read replica ties a block to the consensus block it was executed from).
export { decodeHeader as decodeEthHeader, type EthHeader } from './src/chain/header.js';
// The consensus chain whose blocks may carry dev operations (anvil_setBalance & co., dev.ts).
export { DEV_CHAIN_ID } from './src/dev.js';
// Typed errors the node reacts to at startup (archive on a pruned home) and at runtime (halt).
export {
  ArchiveOnPrunedStoreError,
  ExecutionError,
  type ExecutionErrorCode,
  SupplyInvariantError,
} from './src/errors.js';
// The hardfork the EVM runs, for anvil_nodeInfo.
export { HARDFORK } from './src/evm/common.js';
// The executor the node constructs (Executor.open) and plugs into consensus and the JSON-RPC.
export {
  type AppRollbackPoint,
  Executor,
  type PoolTxRecord,
  renderPendingTx,
} from './src/executor.js';
// Fee-market math, public for the RPC's documentation and for tests.
export {
  BASE_FEE_CHANGE_DENOMINATOR,
  clampBaseFee,
  ELASTICITY_MULTIPLIER,
  effectiveTip,
  nextBaseFee,
} from './src/feeMarket.js';
export type { MempoolOptions } from './src/mempool.js';
// Its options, with the seed's defaults for [evm.gas] and config.toml [mempool].
export {
  type CommittedRecord,
  DEFAULT_KEEP_RECENT,
  defaultGasOptions,
  defaultMempoolOptions,
  type ExecutorOptions,
  type GasOptions,
} from './src/options.js';
// The refusal for state older than a full node keeps (a ChainError the RPC renders as -32000).
export { PrunedStateError } from './src/state/db.js';
// CheckTx result codes (codespace "evm") so the CometBFT RPC can document them; sender recovery
// for the RPC thread, which hands the executor transactions with their sender already recovered.
export { senderRecovery, TxCode } from './src/txs.js';
