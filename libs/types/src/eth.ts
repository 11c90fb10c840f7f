// The Ethereum view of the chain that libs/execution serves and libs/rpc renders as geth does.
// Byte fields are 0x-prefixed lowercase hex strings; quantities are bigint (the RPC layer turns
// them into hex quantities). Addresses are lowercase 0x hex; the RPC layer may checksum them.

export type Hex = `0x${string}`;

/** A block number after tags were resolved. */
export type BlockNumber = bigint;

export interface EthBlock {
  number: bigint;
  hash: Hex;
  parentHash: Hex;
  nonce: Hex; // always 0x0000000000000000
  sha3Uncles: Hex; // keccak256(rlp([]))
  logsBloom: Hex;
  transactionsRoot: Hex;
  stateRoot: Hex;
  receiptsRoot: Hex;
  miner: Hex;
  difficulty: bigint; // 0 (no proof of work)
  totalDifficulty: bigint;
  extraData: Hex;
  size: bigint;
  gasLimit: bigint;
  gasUsed: bigint;
  timestamp: bigint;
  mixHash: Hex; // PREVRANDAO
  baseFeePerGas: bigint;
  withdrawalsRoot?: Hex;
  blobGasUsed?: bigint;
  excessBlobGas?: bigint;
  parentBeaconBlockRoot?: Hex;
  requestsHash?: Hex;
  /** Transaction hashes in block order. */
  transactions: Hex[];
}

export interface AccessListEntry {
  address: Hex;
  storageKeys: Hex[];
}

export interface AuthorizationEntry {
  chainId: bigint;
  address: Hex;
  nonce: bigint;
  yParity: bigint;
  r: Hex;
  s: Hex;
}

export interface EthTx {
  hash: Hex;
  type: number; // 0 legacy, 1 EIP-2930, 2 EIP-1559, 4 EIP-7702
  chainId?: bigint;
  nonce: bigint;
  from: Hex;
  to: Hex | null;
  value: bigint;
  gas: bigint;
  gasPrice: bigint; // legacy/2930: gas price; 1559: effective gas price once mined, max fee when pending
  maxFeePerGas?: bigint;
  maxPriorityFeePerGas?: bigint;
  input: Hex;
  accessList?: AccessListEntry[];
  authorizationList?: AuthorizationEntry[];
  v: bigint;
  r: Hex;
  s: Hex;
  yParity?: bigint;
  /** Null while pending. */
  blockHash: Hex | null;
  blockNumber: bigint | null;
  transactionIndex: bigint | null;
}

export interface EthLog {
  address: Hex;
  topics: Hex[];
  data: Hex;
  blockNumber: bigint;
  blockHash: Hex;
  blockTimestamp?: bigint;
  transactionHash: Hex;
  transactionIndex: bigint;
  logIndex: bigint;
  removed: boolean;
}

export interface EthReceipt {
  transactionHash: Hex;
  transactionIndex: bigint;
  blockHash: Hex;
  blockNumber: bigint;
  from: Hex;
  to: Hex | null;
  cumulativeGasUsed: bigint;
  gasUsed: bigint;
  effectiveGasPrice: bigint;
  contractAddress: Hex | null;
  logs: EthLog[];
  logsBloom: Hex;
  status: 0 | 1;
  type: number;
}

/** eth_call / eth_estimateGas / eth_createAccessList transaction object, already decoded. */
export interface CallRequest {
  from?: Hex;
  to?: Hex | null;
  gas?: bigint;
  gasPrice?: bigint;
  maxFeePerGas?: bigint;
  maxPriorityFeePerGas?: bigint;
  value?: bigint;
  data?: Hex;
  nonce?: bigint;
  accessList?: AccessListEntry[];
  type?: number;
}

/** geth's state override set for eth_call. */
export interface AccountOverride {
  nonce?: bigint;
  code?: Hex;
  balance?: bigint;
  state?: Record<Hex, Hex>;
  stateDiff?: Record<Hex, Hex>;
}
export type StateOverrides = Record<Hex, AccountOverride>;

export interface CallOptions {
  /** Gas cap for the call (app.toml [json-rpc] gas_cap); 0 means none. */
  gasCap: bigint;
  /** Wall-clock limit for one EVM run in milliseconds; 0 means none. */
  timeoutMs: number;
}

export interface CallResult {
  returnData: Hex;
  gasUsed: bigint;
  /** Set when the call reverted: the revert data (may be 0x). */
  reverted?: boolean;
  /** Set when the EVM halted with an error other than revert (e.g. "out of gas", "invalid opcode"). */
  error?: string;
  logs: Array<Pick<EthLog, 'address' | 'topics' | 'data'>>;
}

export interface LogFilter {
  fromBlock: bigint;
  toBlock: bigint;
  /** Empty or undefined: any address. */
  addresses?: Hex[];
  /** Per position: null matches anything, an array matches any of its members. */
  topics?: Array<Hex | Hex[] | null>;
  /**
   * Optional: the caller needs at most this many logs (the RPC refuses results above its logs cap
   * and asks for cap + 1), so the chain may stop scanning once it has found `limit` logs.
   */
  limit?: number;
}

export interface FeeHistory {
  oldestBlock: bigint;
  baseFeePerGas: bigint[]; // blockCount + 1 entries (includes the next block)
  gasUsedRatio: number[];
  reward?: bigint[][];
}

export interface AccountProof {
  address: Hex;
  accountProof: Hex[];
  balance: bigint;
  codeHash: Hex;
  nonce: bigint;
  storageHash: Hex;
  storageProof: Array<{ key: Hex; value: bigint; proof: Hex[] }>;
}

export interface TracerConfig {
  /** undefined: the struct-log tracer; 'callTracer': geth's call tracer. */
  tracer?: 'callTracer';
  tracerConfig?: { onlyTopCall?: boolean; withLog?: boolean };
  disableStorage?: boolean;
  disableStack?: boolean;
  enableMemory?: boolean;
  enableReturnData?: boolean;
  timeoutMs?: number;
}

export interface PendingTxSummary {
  pending: Map<Hex, Map<bigint, EthTx>>; // sender -> nonce -> tx
  queued: Map<Hex, Map<bigint, EthTx>>;
}

/** A state change of the dev-chain methods (anvil_setBalance, anvil_setNonce, anvil_setCode, anvil_setStorageAt). */
export type DevStateChange =
  | { kind: 'balance'; address: Hex; value: bigint }
  | { kind: 'nonce'; address: Hex; value: bigint }
  | { kind: 'code'; address: Hex; code: Hex }
  /** `slot` and `value`: 32 bytes each. */
  | { kind: 'storage'; address: Hex; slot: Hex; value: Hex };

/**
 * Typed error raised by the chain for a request it refuses. `code` follows geth's JSON-RPC codes
 * (-32000 for most state errors, 3 for reverts, -32602 for invalid params); `data` is the revert data.
 */
export class ChainError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Hex,
  ) {
    super(message);
    this.name = 'ChainError';
  }
}

/**
 * What the Ethereum JSON-RPC needs from the chain. libs/execution implements it; a gRPC client can
 * implement it too (DESIGN.md: rpc-edge reads from state-store). Heights passed in are already
 * resolved from tags; methods throw ChainError (e.g. the pruned-state error) for refusals.
 */
export interface EthChain {
  chainId(): bigint;
  /** Height of the latest committed (and therefore final) block. */
  latestHeight(): bigint;
  /** Lowest height whose state can still be read (0 on an archive node). */
  oldestStateHeight(): bigint;

  getBlockByNumber(n: bigint): Promise<EthBlock | undefined>;
  getBlockByHash(hash: Hex): Promise<EthBlock | undefined>;
  getBlockTransactions(n: bigint): Promise<EthTx[]>;
  getBlockReceipts(n: bigint): Promise<EthReceipt[]>;
  /** Mined or pending (pending ones have null blockHash). */
  getTransaction(hash: Hex): Promise<EthTx | undefined>;
  getReceipt(hash: Hex): Promise<EthReceipt | undefined>;
  getLogs(filter: LogFilter): Promise<EthLog[]>;

  getBalance(address: Hex, height: bigint): Promise<bigint>;
  /** With height 'pending' the mempool's next nonce for the sender. */
  getNonce(address: Hex, height: bigint | 'pending'): Promise<bigint>;
  getCode(address: Hex, height: bigint): Promise<Hex>;
  getStorageAt(address: Hex, slot: Hex, height: bigint): Promise<Hex>;
  getProof(address: Hex, slots: Hex[], height: bigint): Promise<AccountProof>;

  call(
    req: CallRequest,
    height: bigint,
    overrides: StateOverrides | undefined,
    opts: CallOptions,
  ): Promise<CallResult>;
  estimateGas(
    req: CallRequest,
    height: bigint,
    overrides: StateOverrides | undefined,
    opts: CallOptions,
  ): Promise<bigint>;
  createAccessList(
    req: CallRequest,
    height: bigint,
    opts: CallOptions,
  ): Promise<{ accessList: AccessListEntry[]; gasUsed: bigint; error?: string }>;

  /** Base fee the next block will charge. */
  nextBaseFee(): bigint;
  /** Suggested priority fee (eth_maxPriorityFeePerGas). */
  suggestedTip(): bigint;
  feeHistory(
    blockCount: number,
    newest: bigint,
    rewardPercentiles: number[] | undefined,
  ): Promise<FeeHistory>;

  /**
   * checkTx + add to the mempool; returns the tx hash or throws ChainError with geth's message.
   * `senderPublicKey`, when given, was recovered from `raw` by a trusted thread of this node (the
   * RPC thread) and spares the chain the signature recovery.
   */
  sendRawTransaction(raw: Uint8Array, senderPublicKey?: Uint8Array): Promise<Hex>;
  txPool(): Promise<PendingTxSummary>;

  traceTransaction(hash: Hex, config: TracerConfig): Promise<unknown>;
  traceCall(req: CallRequest, height: bigint, config: TracerConfig): Promise<unknown>;
  traceBlock(n: bigint, config: TracerConfig): Promise<Array<{ txHash: Hex; result: unknown }>>;

  /**
   * Dev chain (a single-validator chain-local node only; docs/json-rpc.md, "Dev-chain methods"):
   * queues the change for the next block and resolves with the height of the committed block that
   * applied it. Chains without dev controls leave it out or refuse with ChainError -32000.
   */
  devSetState?(change: DevStateChange): Promise<bigint>;
  /**
   * Dev chain: queues the transaction of an impersonated sender (`raw` carries a placeholder
   * signature, which is not checked) for the next block; resolves with its hash once queued.
   */
  devSendImpersonated?(sender: Hex, raw: Uint8Array): Promise<Hex>;
  /**
   * Dev chain: starts (`on`) or stops impersonating `address` (anvil_impersonateAccount,
   * anvil_stopImpersonatingAccount); resolves with whether it was impersonated before. The chain
   * owns the set, so every RPC front of it (each rpc-edge of a cluster) sees the same one, and
   * devSendImpersonated refuses a sender that is not in it.
   */
  devImpersonate?(address: Hex, on: boolean): Promise<boolean>;
  /** Dev chain: the impersonated addresses (lowercase), in the order they were added. */
  devImpersonatedAccounts?(): Promise<Hex[]>;
}

/**
 * The dev chain's mining and time controls behind evm_mine, evm_setAutomine, evm_increaseTime, ...
 * (chain-local with a single validator). Blocks still go through consensus. Refusals are errors with
 * code 'DEV_CONTROLS_REFUSED'; a block time that is not after the last block's, 'INVALID_TIME'.
 */
export interface EthDevControl {
  /** Mines `count` blocks; the first at `timestampSec` if given, each later one `intervalSec` after the previous. */
  mine(count: number, intervalSec: bigint | undefined, timestampSec: bigint | undefined): Promise<void>;
  setAutomine(on: boolean): Promise<void>;
  /** An empty block every `ms` milliseconds; 0 = none. */
  setIntervalMining(ms: number): Promise<void>;
  /** Moves the clock forward; resolves to the total offset in seconds. */
  increaseTime(seconds: bigint): Promise<bigint>;
  setNextBlockTimestamp(seconds: bigint): Promise<void>;
  /** evm_snapshot: the id of a snapshot of the whole chain as it is now. */
  snapshot(): Promise<bigint>;
  /** evm_revert: brings the chain back to snapshot `id`; false for an unknown or used id. */
  revert(id: bigint): Promise<boolean>;
  /**
   * anvil_reset / hardhat_reset: brings the chain back to its genesis (height 0: no blocks, the
   * genesis state, the dev clock at zero) and forgets every snapshot.
   */
  reset(): Promise<void>;
}
