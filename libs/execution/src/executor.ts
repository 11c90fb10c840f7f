// The executor: the application consensus drives (ABCI 2.0-style Application) and the chain the
// Ethereum JSON-RPC reads (EthChain). It owns the EVM, the world state, the mempool and the
// Ethereum view of blocks, and persists each block in one synced RocksDB batch at commit.
import { performance } from 'node:perf_hooks';
import type { Common } from '@ethereumjs/common';
import type { EVMMockBlockchainInterface } from '@ethereumjs/evm';
import { getCalldataFloorGas } from '@ethereumjs/tx';
import { Address } from '@ethereumjs/util';
import {
  type RewardsGenesisJson,
  rewardsParamsOf,
  rewardsUpgradeHeightOf,
  type StakingGenesisJson,
  toStakingGenesis,
  validateRewardsGenesis,
  validateStakingGenesis,
} from '@noded/config';
import { keccak256 } from '@noded/crypto';
import { type BatchOp, HoldingKV } from '@noded/storage';
import {
  type AbciEvent,
  type AccessListEntry,
  type AccountProof,
  type AppInfo,
  type Application,
  type AppQueryRequest,
  type AppQueryResult,
  type CallOptions,
  type CallRequest,
  type CallResult,
  ChainError,
  type CheckTxResult,
  type CommitOptions,
  type DevStateChange,
  type EthBlock,
  type EthChain,
  type EthLog,
  type EthReceipt,
  type EthTx,
  type ExecTxResult,
  type ExecutionStats,
  type ExtendVoteRequest,
  type FeeHistory,
  type FinalizeBlockRequest,
  type FinalizeBlockResponse,
  type HeadAccount,
  type Hex,
  type InitChainRequest,
  type InitChainResponse,
  type LogFilter,
  type PendingTxSummary,
  type PrepareProposalRequest,
  type ProcessProposalRequest,
  type StateOverrides,
  type TracerConfig,
  type Validator,
  type VerifyVoteExtensionRequest,
} from '@noded/types';
import { attr, BlockRun } from './blockrun.js';
import { BridgeIn } from './bridge/inbound.js';
import { isBridgeTx } from './bridge/mint.js';
import {
  bigIntToFixed,
  bytesToBigInt,
  concat,
  EMPTY,
  equal,
  fromHex,
  minBig,
  normAddress,
  padLeft,
  stripZeros,
  toHex,
  toKey,
} from './bytes.js';
import { bloomAdd, type EthHeader, ZERO_ADDRESS } from './chain/header.js';
import { bloomMayMatch, compileLogFilter, type RawLogFilter, scanLogs } from './chain/log-filter.js';
import {
  renderBlock,
  renderLog,
  renderLogs,
  renderReceipt,
  renderReceipts,
  renderTx,
} from './chain/render.js';
import {
  ChainStore,
  encodeConsensusReceipt,
  logIndexHas,
  logIndexPairs,
  type StoredBlock,
  type StoredReceipt,
  type StoredTx,
  sealBlock,
} from './chain/store.js';
import { DEV_CHAIN_ID, type DevOp, decodeDevOp, describeDevOp, encodeDevOp, isDevTx } from './dev.js';
import { ArchiveOnPrunedStoreError, ExecutionError, SupplyInvariantError } from './errors.js';
import { chainCommon } from './evm/common.js';
import { estimateGas, createAccessList as runAccessList } from './evm/estimate.js';
import { evmFilesUnpatched } from './evm/patched.js';
import {
  type BlockContext,
  type CallOutcome,
  hexData,
  intrinsicShortfall,
  makeBlock,
  makeCallTx,
  makeVm,
  outcome,
  runPlainCall,
  runTx,
} from './evm/run.js';
import { makeTracer, TraceTimeoutError } from './evm/tracers.js';
import { nextBaseFee } from './feeMarket.js';
import { cmpPrice, Mempool, protoTxSize, type SenderState } from './mempool.js';
import type { CommittedRecord, ExecutorOptions } from './options.js';
import { uintWord } from './precompiles/abi.js';
import {
  BRIDGE_OUT_ADDRESS,
  BRIDGE_OUT_CODE,
  type BridgeParams,
  bridgeOutGenesisStorage,
  type InboundState,
  inflowRoom,
  parseBridgeParams,
  readInbound,
} from './precompiles/bridge-out.js';
import { BTC_TOKEN_ADDRESS, BTC_TOKEN_CODE, SUPPLY_SLOT } from './precompiles/btc-token.js';
import {
  genesisRewardStorage,
  REWARD_ADDRESS_HEX,
  REWARD_KEY,
  RewardStore,
} from './precompiles/reward-state.js';
import { applySlashingWithGuard } from './precompiles/staking-slashing.js';
import {
  completeMatured,
  endBlockValidatorUpdates,
  genesisPoolStorage,
  STAKING_ADDRESS_HEX,
  STAKING_KEY,
  StakingStore,
} from './precompiles/staking-state.js';
import { abciQuery } from './query.js';
import { type AccountData, decodeAccount, EMPTY_CODE_HASH, newAccount } from './state/account.js';
import { ACCOUNT_TRIE_OWNER, type BuiltState, StateDb, storageOwner } from './state/db.js';
import { JournaledState, type StateSource } from './state/journaled.js';
import { heightKey, META, metaKey, P } from './store/keys.js';
import { EMPTY_TRIE_ROOT, orderedTrieRoot } from './trie/mpt.js';
import {
  checkStateless,
  checkTxFeeCap,
  type DecodedTx,
  decodeImpersonatedTx,
  decodeTx,
  TxCode,
  TxRejectedError,
} from './txs.js';

const APP_VERSION = 1n;

/**
 * The CometBFT app hash: a commitment to the state the next block starts from (state root and
 * the base fee it will charge), not the Ethereum block hash. It changes only when state changes, so
 * `create_empty_blocks = false` can idle (CometBFT makes a proof block whenever the app hash moved);
 * the transactions and their results are committed by the consensus header (data_hash,
 * last_results_hash).
 */
function appHashOf(stateRoot: Uint8Array, nextBaseFee: bigint): Uint8Array {
  return keccak256(concat(stateRoot, bigIntToFixed(nextBaseFee, 32)));
}
/**
 * Longest stretch of block execution without a turn of the event loop. EthereumJS only awaits
 * promises that are already resolved, so a block of a thousand transactions otherwise held the
 * thread for hundreds of milliseconds: every transaction submitted and every read made meanwhile
 * waited for the whole block. Nothing that runs in these turns writes the state being built.
 */
const EXEC_SLICE_MS = 10;
const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Longest stretch of running transactions ahead of the proposal without a turn of the event loop:
 * shorter than EXEC_SLICE_MS, because it runs while transactions arrive and their CheckTx answers
 * hold the senders' next submissions.
 */
const AHEAD_SLICE_MS = 5;

/**
 * Transactions run ahead of the next proposal (docs/execution.md): those admitted to the mempool,
 * in the order a proposal takes them, on the state the block will start from. FinalizeBlock keeps
 * the longest prefix the proposed block shares with them and runs only the rest.
 */
/** A committed height of the application and its meta records, for rollbackTo(). */
export interface AppRollbackPoint {
  height: number;
  /** META name -> stored text, as at that height. */
  meta: Record<string, string>;
}

interface Ahead {
  /** The height it runs for, on the state committed at height - 1. */
  height: number;
  /** The block context as far as it is known: timestamp and mixHash are placeholders. */
  ctx: BlockContext;
  run: BlockRun | undefined;
  /**
   * The first transaction it ran, whose price (mempool's cmpPrice) is the run's level. A proposal
   * orders by price, then by arrival, so arrival order is the block's order among transactions of
   * one price; cheaper ones are left for the block, a dearer one ends the run.
   */
  first: DecodedTx | undefined;
  queue: DecodedTx[];
  next: number;
  /** Takes transactions: false once a proposal for its height was seen, or a run failed. */
  open: boolean;
  busy: Promise<void> | undefined;
  scheduled: boolean;
}

/** Idle VMs kept for eth_call / estimateGas / createAccessList. */
const VM_POOL = 8;
/** eth_getLogs stops reading the log index once this few blocks remain candidates (see logCandidates). */
const FEW_LOG_CANDIDATES = 32;
/**
 * eth_getLogs stops reading the log index once the candidate receipts, over all candidate blocks,
 * are this few: comparing their logs' bytes costs less than reading another criterion's entries.
 */
const FEW_LOG_RECEIPTS = 64;

/** Whether every candidate block names its receipts and they are FEW_LOG_RECEIPTS at most. */
function fewReceipts(set: Map<bigint, Map<number, number> | null>): boolean {
  let n = 0;
  for (const r of set.values()) {
    if (r === null) return false;
    n += r.size;
    if (n > FEW_LOG_RECEIPTS) return false;
  }
  return true;
}

/** eth_getLogs reads the headers and receipts records of this many candidate blocks at once. */
const LOG_SCAN_CHUNK = 64;

interface PooledVm {
  vm: Awaited<ReturnType<typeof makeVm>>;
  state: JournaledState;
}

const EMPTY_SOURCE: StateSource = {
  account: async () => undefined,
  storage: async () => new Uint8Array(0),
  code: async () => new Uint8Array(0),
};
const DECODED_CACHE = 10_000;
const TIP_HISTORY = 20;
/** Blocks a read replica looks back over for recent tips when it opens (reloadCommitted). */
const TIP_SCAN = 1024;
/**
 * The least tip eth_maxPriorityFeePerGas suggests (1 gwei, as a Hardhat node). Idle blocks carry no
 * tips; a zero suggestion would make wallets' "add 10% to replace" bumps zero too.
 */
export const MIN_SUGGESTED_TIP = 1_000_000_000n;

interface PendingBlock {
  height: number;
  built: BuiltState;
  block: StoredBlock;
  txs: StoredTx[];
  receipts: StoredReceipt[];
  nextBaseFee: bigint;
  supply: bigint;
  appHash: Uint8Array;
  minTip: bigint | undefined;
  /** The dev operations the block carried, by their hex bytes (dev.ts). */
  devTxs: Set<string>;
  /** The validator set of height + 2 (bridge in: attestations are checked against it). */
  valsetOps: BatchOp[];
  /** FinalizeBlockRequest.lightBlock, for the outbox record (the state-stores verify it). */
  lightBlock: Uint8Array | undefined;
}

/** A dev operation waiting for the next proposal of this node (the single validator of chain-local). */
interface QueuedDevOp {
  raw: Uint8Array;
  key: string;
  op: DevOp;
  /** Impersonated transactions: the decoded transaction (for nonces and eth_getTransactionByHash). */
  d?: DecodedTx;
  /** State changes: settled once the block that carries it is committed. */
  done?: { resolve: (height: bigint) => void; reject: (err: Error) => void };
}

/** What the dev-chain methods answer on a node without dev controls. */
const NO_DEV_CONTROLS = 'dev-chain methods are only available on a single-validator chain-local node';
const UINT256_MAX = (1n << 256n) - 1n;
const UINT64_MAX = (1n << 64n) - 1n;

/** Applies a dev state change to the block's state; returns the change of the coin supply. */
async function applyDevChange(
  state: JournaledState,
  op: Exclude<DevOp, { kind: 'impersonated' }>,
): Promise<bigint> {
  const addr = new Address(op.address);
  const key = toKey(op.address);
  switch (op.kind) {
    case 'balance': {
      const old = (await state.readAccount(key))?.balance ?? 0n;
      await state.modifyAccountFields(addr, { balance: op.value });
      return op.value - old;
    }
    case 'nonce':
      await state.modifyAccountFields(addr, { nonce: op.value });
      return 0n;
    case 'code':
      await state.putCode(addr, op.code);
      return 0n;
    case 'storage':
      if ((await state.readAccount(key)) === undefined) await state.modifyAccountFields(addr, {});
      state.writeSlot(key, toKey(op.slot), op.value);
      return 0n;
  }
}

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

/** Seconds from consensus time (ns). */
function seconds(t: bigint): bigint {
  return t / 1_000_000_000n;
}

function mix(hash: Uint8Array): Uint8Array {
  return hash.length === 32 ? hash : keccak256(hash);
}

export class Executor implements Application, EthChain {
  private readonly common: Common;
  private readonly db: StateDb;
  private readonly chain: ChainStore;
  private readonly pool: Mempool;
  private readonly decoded = new Map<string, DecodedTx>();
  /**
   * The same decodings by their bytes' identity (d.raw): the array a transaction was admitted with
   * comes back in the proposal and in the block to execute, and finding it here spares hashing it
   * twice more. An entry lives exactly as long as its `decoded` entry (see forget()), so a block
   * store that keeps the bytes never keeps a decoding alive. Transaction bytes are never written to
   * once received.
   */
  private readonly decodedBytes = new WeakMap<Uint8Array, DecodedTx>();
  private readonly blockchain: EVMMockBlockchainInterface;
  private genesisHeight = 0;
  private lastBlockHeight = 0;
  private appHash: Uint8Array = EMPTY;
  private baseFee: bigint;
  private supply = 0n;
  private initialized = false;
  private closed = false;
  private pending: PendingBlock | undefined;
  /**
   * The position of every transaction of the blocks committed since the mempool was last updated
   * against their state (recheckMempool) and of the newest RECENT_LOCATION_BLOCKS, by height. A
   * transaction in the mempool and in none of these is in no block (the pool drops a mined one at
   * that update), so a receipt poll for it needs no read of the tx-hash index; one in these blocks
   * is found here (see minedLocation). Under the sustained loads nearly all of this thread's
   * RocksDB reads were those index reads.
   */
  private recentlyMined: Array<{ height: number; hashes: Map<string, number> }> = [];
  /** Commits held in memory (CommitOptions.hold) whose EthNewHead waits for their write, in order. */
  private heldHeads: PendingBlock[] = [];
  private recentTips: bigint[] = [];
  /** reloadCommitted (read replica) has looked back for recent tips. */
  private tipsLoaded = false;
  private readonly admissionListeners = new Set<(raw: Uint8Array, hash: Hex) => void>();
  /** Dev operations for this node's next proposal, in arrival order (dev.ts). */
  private devQueue: QueuedDevOp[] = [];
  private readonly devListeners = new Set<() => void>();
  /** Impersonated senders (lowercase 0x hex), in the order they were added (devImpersonate). */
  private readonly impersonated = new Set<string>();
  private timing = { txs: 0, stateRoot: 0, rest: 0 };
  /** The last executed block: its transactions, and how many of them had run ahead. */
  private lastRun = { txs: 0, ahead: 0, plain: 0 };
  /** Since start: transactions refused at admission, and block transactions that had run ahead. */
  private counts = { refused: 0, ranAhead: 0, heldBackJails: 0 };
  private lastFinalize = { height: 0, ms: 0 };
  private ahead: Ahead | undefined;
  /** The proposer of the last committed block, and the coinbase to run ahead with (see commit). */
  private lastProposer: Uint8Array | undefined;
  private aheadCoinbase: Uint8Array | undefined;
  private readonly vmPool: PooledVm[] = [];
  /** The EthereumJS block of the last eth_call (blocks never change once committed). */
  private callBlock: { height: number; priced: boolean; block: ReturnType<typeof makeBlock> } | undefined;
  private readonly bridgeIn: BridgeIn;
  /** Bridge in: the state committed at the latest height (last processed deposit, pause, inflow window). */
  private inbound: InboundState = {
    token: '',
    lastSequence: 0n,
    totalIn: 0n,
    paused: false,
    windowSeconds: 0n,
    maxInflow: 0n,
    windowIndex: 0n,
    windowInflow: 0n,
    maxDeposit: 0n,
    overCapCount: 0n,
    overCapAmount: 0n,
  };

  private constructor(
    private readonly opts: ExecutorOptions,
    /** opts.kv: the store itself, through which commits with `hold` stay in memory (flushHeld). */
    private readonly held: HoldingKV,
  ) {
    this.common = chainCommon(opts.evmChainId);
    // The dev chain journals every block's changes, so that evm_revert can undo them (rollbackTo).
    this.db = new StateDb(opts.kv, {
      mode: opts.mode,
      keepRecent: opts.keepRecent,
      journal: opts.devControls === true && opts.devJournal !== false,
    });
    this.chain = new ChainStore(opts.kv);
    this.bridgeIn = new BridgeIn(opts.kv, opts.chainId, opts.logger, opts.deposits);
    this.pool = new Mempool(opts.mempool);
    this.baseFee = opts.gas.baseFee;
    this.blockchain = {
      getBlock: async (n: number) => {
        const b = await this.chain.block(BigInt(n));
        const h = b ? b.hash : new Uint8Array(32);
        return { hash: () => h };
      },
      putBlock: async () => {},
      shallowCopy() {
        return this;
      },
    } as EVMMockBlockchainInterface;
  }

  /** Opens the executor on data/application.db; refuses archive mode on a pruned store. */
  static async open(opts: ExecutorOptions): Promise<Executor> {
    const unpatched = evmFilesUnpatched();
    if (unpatched.length > 0) {
      opts.logger.warn(
        { files: unpatched },
        'EthereumJS lacks the rewrites of scripts/patch-deps.mjs (run npm install with scripts enabled): eth_call and block execution will run slower',
      );
    }
    if (!Number.isInteger(opts.keepRecent) || opts.keepRecent < 1) {
      throw new ExecutionError(
        'BAD_OPTIONS',
        `keepRecent (app.toml pruning_keep_recent) must be an integer >= 1, got ${opts.keepRecent}`,
      );
    }
    if (opts.keepRecent === 1) {
      // The previous height's state is still read while a block is being committed.
      opts.logger.warn(
        'pruning_keep_recent = 1 is raised to 2: a full node keeps at least two heights of state',
      );
      opts = { ...opts, keepRecent: 2 };
    }
    if (opts.gas.minGasPrice > opts.gas.maxGasPrice) {
      throw new ExecutionError(
        'BAD_OPTIONS',
        `[evm.gas] min_gas_price ${opts.gas.minGasPrice} is above max_gas_price ${opts.gas.maxGasPrice}`,
      );
    }
    if (opts.gas.gasTarget <= 0n || opts.gas.blockGasLimit <= 0n) {
      throw new ExecutionError('BAD_OPTIONS', '[evm.gas] gas_target and block_gas_limit must be positive');
    }
    // Every read and write goes through the holding layer, so held commits read as committed.
    const held = new HoldingKV(opts.kv);
    const ex = new Executor({ ...opts, kv: held }, held);
    await ex.load();
    return ex;
  }

  private async meta(name: string): Promise<string | undefined> {
    const v = await this.opts.kv.get(metaKey(name));
    return v ? dec(v) : undefined;
  }

  private async load(): Promise<void> {
    const height = await this.meta(META.height);
    if (height === undefined) return;
    const storedEvmChainId = await this.meta(META.evmChainId);
    if (storedEvmChainId !== undefined && BigInt(storedEvmChainId) !== this.opts.evmChainId) {
      throw new ExecutionError(
        'CHAIN_ID_MISMATCH',
        `application.db belongs to EVM chain id ${storedEvmChainId}, but the node is configured for ${this.opts.evmChainId}`,
      );
    }
    this.genesisHeight = Number(await this.meta(META.genesisHeight));
    const oldest = Number((await this.meta(META.oldestState)) ?? this.genesisHeight);
    if (this.opts.mode === 'archive' && oldest > this.genesisHeight) {
      throw new ArchiveOnPrunedStoreError(
        this.opts.location ?? 'data/application.db',
        oldest,
        this.genesisHeight,
      );
    }
    this.lastBlockHeight = Number((await this.meta(META.lastBlockHeight)) ?? 0);
    this.appHash = fromHex((await this.meta(META.appHash)) ?? '0x');
    this.baseFee = BigInt((await this.meta(META.nextBaseFee)) ?? this.opts.gas.baseFee);
    this.supply = BigInt((await this.meta(META.totalSupply)) ?? 0);
    const root = fromHex((await this.meta(META.stateRoot)) ?? toHex(EMPTY_TRIE_ROOT));
    this.db.init(Number(height), oldest, root);
    this.initialized = true;
    this.inbound = await this.inboundAt(Number(height));
    this.opts.logger.info(
      {
        height: Number(height),
        lastBlockHeight: this.lastBlockHeight,
        oldestState: oldest,
        mode: this.opts.mode,
      },
      'execution state loaded',
    );
  }

  /**
   * Throws ArchiveOnPrunedStoreError when `kv` holds a store that a full node pruned; for the CLI's
   * startup check before anything else opens.
   */
  static async assertArchiveCompatible(kv: ExecutorOptions['kv'], location: string): Promise<void> {
    const g = await kv.get(metaKey(META.genesisHeight));
    const o = await kv.get(metaKey(META.oldestState));
    if (!g || !o) return;
    const genesis = Number(dec(g));
    const oldest = Number(dec(o));
    if (oldest > genesis) throw new ArchiveOnPrunedStoreError(location, oldest, genesis);
  }

  async close(): Promise<void> {
    this.closed = true;
    const queued = this.devQueue;
    this.devQueue = [];
    for (const q of queued) q.done?.reject(new ChainError(-32000, 'the node is shutting down'));
    await this.dropAhead();
    this.pool.clear();
  }

  private assertOpen(): void {
    if (this.closed) throw new ExecutionError('NOT_INITIALIZED', 'executor is closed');
  }

  private assertInitialized(): void {
    this.assertOpen();
    if (!this.initialized) {
      throw new ExecutionError(
        'NOT_INITIALIZED',
        'the chain has no genesis state yet (InitChain has not run)',
      );
    }
  }

  // =================================================================== Application

  async info(): Promise<AppInfo> {
    return {
      data: 'noded-evm',
      version: '0.1.0',
      appVersion: APP_VERSION,
      lastBlockHeight: this.lastBlockHeight,
      lastBlockAppHash: this.lastBlockHeight === 0 && !this.initialized ? EMPTY : this.appHash,
    };
  }

  async initChain(req: InitChainRequest): Promise<InitChainResponse> {
    this.assertOpen();
    if (this.initialized) {
      const chainId = await this.meta(META.chainId);
      if (chainId !== req.chainId) {
        throw new ExecutionError(
          'CHAIN_ID_MISMATCH',
          `application.db was initialised for chain ${chainId}, InitChain is for ${req.chainId}`,
        );
      }
      const genesis = await this.chain.block(BigInt(this.genesisHeight));
      return {
        appHash: genesis ? appHashOf(genesis.header.stateRoot, genesis.header.baseFeePerGas) : this.appHash,
      };
    }
    const accounts = parseGenesisAccounts(req.appState, this.opts.evmChainId);
    const pool = await genesisPoolAccount(req);
    if (pool) {
      if (accounts.some((a) => a.addr === pool.addr))
        throw new ExecutionError(
          'BAD_GENESIS',
          `genesis.json:app_state.evm.accounts: ${STAKING_ADDRESS_HEX} is the validator pool's account, written from app_state.staking; it cannot be listed`,
        );
      accounts.push(pool);
      const reward = genesisRewardAccount(req);
      if (accounts.some((a) => a.addr === reward.addr))
        throw new ExecutionError(
          'BAD_GENESIS',
          `genesis.json:app_state.evm.accounts: ${REWARD_ADDRESS_HEX} is the reward stake's account, written from app_state.rewards; it cannot be listed`,
        );
      // With an upgrade height after the first block the account is created at that height
      // (executeBlock), as on the nodes of a chain that was started without it.
      const upgrade = rewardsUpgradeHeightOf((req.appState as { rewards?: RewardsGenesisJson }).rewards);
      if (upgrade === undefined || upgrade <= req.initialHeight) accounts.push(reward);
    } else if ((req.appState as { rewards?: unknown } | null)?.rewards !== undefined) {
      throw new ExecutionError(
        'BAD_GENESIS',
        'genesis.json:app_state.rewards: needs app_state.staking (the validators are paid through the validator pool)',
      );
    }
    // After the pool: the token's supply counts every genesis balance, bonds included.
    accounts.push(btcTokenGenesisAccount(accounts.reduce((sum, a) => sum + a.data.balance, 0n)));
    accounts.push(bridgeOutGenesisAccount(parseBridgeParams(req.appState)));
    const height = Math.max(0, req.initialHeight - 1);
    const g = await this.db.buildGenesis(accounts, height);
    const header: EthHeader = {
      parentHash: new Uint8Array(32),
      coinbase: ZERO_ADDRESS,
      stateRoot: g.stateRoot,
      transactionsRoot: EMPTY_TRIE_ROOT,
      receiptsRoot: EMPTY_TRIE_ROOT,
      logsBloom: new Uint8Array(256),
      number: BigInt(height),
      gasLimit: this.opts.gas.blockGasLimit,
      gasUsed: 0n,
      timestamp: seconds(req.time),
      extraData: EMPTY,
      mixHash: new Uint8Array(32),
      baseFeePerGas: this.baseFee,
    };
    const block = sealBlock(header, [], []);
    const ops: BatchOp[] = [
      ...g.ops,
      ...this.chain.blockOps(block, [], []),
      ...this.bridgeIn.genesisOps(req.initialHeight, req.validators),
    ];
    const metaOps: Record<string, string> = {
      [META.height]: String(height),
      [META.genesisHeight]: String(height),
      [META.lastBlockHeight]: '0',
      [META.appHash]: toHex(appHashOf(g.stateRoot, this.baseFee)),
      [META.oldestState]: String(height),
      [META.nextBaseFee]: this.baseFee.toString(),
      [META.totalSupply]: g.supply.toString(),
      [META.stateRoot]: toHex(g.stateRoot),
      [META.chainId]: req.chainId,
      [META.evmChainId]: this.opts.evmChainId.toString(),
    };
    for (const [k, v] of Object.entries(metaOps)) ops.push({ type: 'put', key: metaKey(k), value: enc(v) });
    if (this.opts.outbox) {
      // The genesis state is the outbox's first record: a replica starts from it.
      const record = genesisRecord(req.chainId, height, block, g.ops, appHashOf(g.stateRoot, this.baseFee));
      record.kvOps = kvOpsOf(ops);
      ops.push({ type: 'put', key: heightKey(P.outbox, height), value: this.opts.outbox.encode(record) });
    }
    await this.opts.kv.write(ops, { sync: true });
    this.genesisHeight = height;
    this.appHash = appHashOf(g.stateRoot, this.baseFee);
    this.supply = g.supply;
    this.db.init(height, height, g.stateRoot);
    this.initialized = true;
    this.opts.logger.info(
      { accounts: accounts.length, supply: g.supply.toString(), stateRoot: toHex(g.stateRoot) },
      'genesis state written',
    );
    return { appHash: this.appHash };
  }

  private decode(raw: Uint8Array, senderPublicKey?: Uint8Array): DecodedTx {
    const same = this.decodedBytes.get(raw);
    if (same) return same;
    const hash = keccak256(raw);
    const hit = this.decoded.get(toHex(hash));
    if (hit) return hit;
    const d = decodeTx(raw, this.common, this.opts.evmChainId, hash, senderPublicKey);
    if (this.decoded.size >= DECODED_CACHE) {
      let n = DECODED_CACHE / 10;
      for (const k of this.decoded.keys()) {
        if (this.pool.get(k)) continue;
        this.forget(k);
        if (--n <= 0) break;
      }
    }
    this.decoded.set(d.hashHex, d);
    this.decodedBytes.set(d.raw, d);
    return d;
  }

  private forget(hashHex: string): void {
    const d = this.decoded.get(hashHex);
    if (d === undefined) return;
    this.decoded.delete(hashHex);
    this.decodedBytes.delete(d.raw);
  }

  private limits() {
    const g = this.opts.gas;
    return { maxTxGas: g.blockGasLimit, minGasPrice: g.minGasPrice, maxGasPrice: g.maxGasPrice };
  }

  private async senderState(sender: string): Promise<SenderState> {
    const a = await this.db.account(sender, this.db.latest);
    return { nonce: a?.nonce ?? 0n, balance: a?.balance ?? 0n };
  }

  /** Validates `raw` for the mempool; with `admit` adds it. Throws TxRejectedError. */
  private async admit(
    raw: Uint8Array,
    admit: boolean,
    rpc: boolean,
    senderPublicKey?: Uint8Array,
  ): Promise<DecodedTx> {
    this.assertInitialized();
    if (raw.length > this.opts.mempool.maxTxBytes) {
      throw new TxRejectedError(
        TxCode.oversized,
        `oversized data: transaction size ${raw.length}, limit ${this.opts.mempool.maxTxBytes}`,
      );
    }
    const d = this.decode(raw, senderPublicKey);
    if (admit && this.pool.get(d.hashHex)) throw new TxRejectedError(TxCode.alreadyKnown, 'already known');
    if (rpc) {
      checkTxFeeCap(d, this.opts.txFeeCap);
      if (d.chainId === undefined && !this.opts.allowUnprotectedTxs) {
        throw new TxRejectedError(
          TxCode.unprotected,
          'only replay-protected (EIP-155) transactions allowed over RPC',
        );
      }
    }
    checkStateless(d, this.limits());
    if (d.feeCap < this.baseFee) {
      throw new TxRejectedError(
        TxCode.feeCapTooLow,
        `max fee per gas less than block base fee: address 0x${d.sender}, maxFeePerGas: ${d.feeCap}, baseFee: ${this.baseFee}`,
      );
    }
    for (let attempt = 0; ; attempt++) {
      const height = this.db.latest;
      const st = await this.senderState(d.sender);
      if (height !== this.db.latest && attempt < 3) continue;
      const acct = await this.db.account(d.sender, this.db.latest);
      if (acct && !equal(acct.codeHash, EMPTY_CODE_HASH)) {
        const code = await this.db.code(acct.codeHash);
        if (!(code[0] === 0xef && code[1] === 0x01 && code[2] === 0x00)) {
          throw new TxRejectedError(
            TxCode.senderNotEoa,
            `sender not an eoa: address 0x${d.sender}, codehash: ${toHex(acct.codeHash)}`,
          );
        }
      }
      if (!admit && this.pool.get(d.hashHex)) {
        // Re-validating a pooled transaction: only what the new state can have changed.
        if (d.nonce < st.nonce) {
          throw new TxRejectedError(
            TxCode.nonceTooLow,
            `nonce too low: next nonce ${st.nonce}, tx nonce ${d.nonce}`,
          );
        }
        if (st.balance < d.cost) {
          throw new TxRejectedError(
            TxCode.insufficientFunds,
            `insufficient funds for gas * price + value: balance ${st.balance}, tx cost ${d.cost}, overshot ${d.cost - st.balance}`,
          );
        }
        return d;
      }
      const plan = this.pool.plan(d, st, this.baseFee);
      if (!admit) return d;
      this.pool.apply(d, plan, st.nonce);
      this.runAheadOf(d);
      for (const e of plan.evict)
        this.opts.logger.debug({ hash: e.d.hashHex }, 'mempool: evicted cheapest transaction');
      this.opts.bus.publish({ kind: 'EthPendingTx', hash: d.hashHex });
      for (const l of this.admissionListeners) l(d.raw, d.hashHex);
      return d;
    }
  }

  /** Calls `listener` with every transaction the mempool admits (mempool gossip); returns the unsubscriber. */
  onTxAdmitted(listener: (raw: Uint8Array, hash: Hex) => void): () => void {
    this.admissionListeners.add(listener);
    return () => this.admissionListeners.delete(listener);
  }

  async checkTx(tx: Uint8Array, kind: 'new' | 'recheck'): Promise<CheckTxResult> {
    try {
      const d = await this.admit(tx, kind === 'new', false);
      return { code: 0, log: '', gasWanted: d.gasLimit, codespace: '', hash: d.hash };
    } catch (err) {
      if (err instanceof TxRejectedError) {
        if (kind === 'new') this.counts.refused++;
        return { code: err.code, log: err.message, gasWanted: 0n, codespace: 'evm', hash: keccak256(tx) };
      }
      throw err;
    }
  }

  async prepareProposal(req: PrepareProposalRequest): Promise<Uint8Array[]> {
    this.assertInitialized();
    if (this.ahead?.height === req.height) this.ahead.open = false;
    // The bridge transaction is always first (index 0), then dev operations in arrival order: a
    // state change applies before the transactions proposed with it, as it would have applied
    // before they were sent.
    const dev: Uint8Array[] = [];
    let bytes = 0;
    const bridge = await this.bridgeIn.prepare(
      req.height,
      req.localLastCommit,
      await this.inboundAt(this.db.latest),
      seconds(req.time),
    );
    if (bridge && protoTxSize(bridge.length) <= req.maxTxBytes) {
      dev.push(bridge);
      bytes += protoTxSize(bridge.length);
    }
    const seen = new Set<string>();
    for (const q of this.devQueue) {
      if (seen.has(q.key)) continue;
      // The rest wait for the next block, in order: a later change to the same account must not
      // overtake an earlier one.
      const size = protoTxSize(q.raw.length);
      if (bytes + size > req.maxTxBytes) break;
      seen.add(q.key);
      dev.push(q.raw);
      bytes += size;
    }
    const txs = this.pool.select(this.baseFee, req.maxTxBytes - bytes).map((d) => d.raw);
    return dev.length === 0 ? txs : [...dev, ...txs];
  }

  async processProposal(req: ProcessProposalRequest): Promise<boolean> {
    this.assertInitialized();
    if (this.ahead?.height === req.height) this.ahead.open = false;
    for (const [i, raw] of req.txs.entries()) {
      if (isBridgeTx(raw)) {
        const why =
          i !== 0
            ? `the bridge transaction is at index ${i}, not 0`
            : await this.bridgeIn.check(
                raw,
                req.height,
                await this.inboundAt(this.db.latest),
                seconds(req.time),
              );
        if (why !== null) {
          this.opts.logger.warn({ height: req.height, reason: why }, 'bridge: rejecting proposal');
          return false;
        }
        continue;
      }
      if (isDevTx(raw)) {
        const why = this.devTxProblem(raw);
        if (why !== undefined) {
          this.opts.logger.info(
            { height: req.height, reason: why },
            'rejecting proposal with a dev operation',
          );
          return false;
        }
        continue;
      }
      try {
        const d = this.decode(raw);
        if (d.gasLimit > this.opts.gas.blockGasLimit) return false;
      } catch (err) {
        if (err instanceof TxRejectedError) {
          this.opts.logger.info(
            { height: req.height, reason: err.message },
            'rejecting proposal with an undecodable transaction',
          );
          return false;
        }
        throw err;
      }
    }
    return true;
  }

  /** Bridge-in state (bridge-out precompile slots) committed at `height`. */
  private inboundAt(height: number): Promise<InboundState> {
    return readInbound({
      readSlot: (a, k) => this.db.storage(a, k, height),
      writeSlot: () => {
        throw new Error('inboundAt reads only');
      },
    });
  }

  /** The last bridge-in deposit sequence number the committed state has processed (the watcher's start). */
  lastInboundSequence(): bigint {
    return this.inbound.lastSequence;
  }

  /**
   * Bridge in checks attestations against the validator sets this executor records from InitChain
   * on. An application.db written before it did has none, and then refuses every bridge
   * transaction. At start this copies the missing sets from `source` (consensus' state store, on
   * the all-in-one node), and otherwise says so at error level with the fix. Returns the heights
   * still missing (empty when all is well or nothing is bridged in).
   */
  async checkBridgeValidatorSets(
    source?: (height: number) => Promise<Validator[] | undefined>,
  ): Promise<number[]> {
    if (!this.initialized || this.inbound.token === '') return [];
    const latest = this.db.latest;
    let missing = await this.bridgeIn.missingSets(latest, this.genesisHeight + 1);
    if (missing.length === 0) return [];
    const copied: number[] = [];
    if (source) {
      for (const h of missing) {
        const set = await source(h);
        if (set && set.length > 0) {
          await this.bridgeIn.backfill(h, set);
          copied.push(h);
        }
      }
      missing = missing.filter((h) => !copied.includes(h));
    }
    if (copied.length > 0)
      this.opts.logger.info(
        { heights: copied },
        'bridge: copied the validator sets application.db lacked from the consensus state store (data/state.db)',
      );
    if (missing.length > 0)
      this.opts.logger.error(
        { heights: missing, latest },
        'bridge: application.db has no validator set recorded for these heights (it was written before bridge in recorded them), so every bridge transaction will be refused and nothing is minted; run `noded start` once on a home holding both data/application.db and data/state.db to copy them from the consensus state store, or start the chain from a new genesis',
      );
    return missing;
  }

  /**
   * Bridge-in limits for the metrics, from the latest committed state: the admin's pause, the BTC
   * minted in the inflow window holding `timestamp` (seconds), the limit (0 = none), and the
   * deposits processed without a mint for being above the per-deposit cap.
   */
  inboundLimits(timestamp: bigint): {
    paused: boolean;
    windowInflow: bigint;
    maxInflow: bigint;
    overCapDeposits: bigint;
  } {
    return {
      paused: this.inbound.paused,
      windowInflow: inflowRoom(this.inbound, timestamp).used,
      maxInflow: this.inbound.maxInflow,
      overCapDeposits: this.inbound.overCapCount,
    };
  }

  /** ExtendVote: this validator's attestation of the next source-chain deposits (docs/bridge.md). */
  async extendVote(req: ExtendVoteRequest): Promise<Uint8Array> {
    this.assertInitialized();
    return this.bridgeIn.extendVote(req.txs);
  }

  /**
   * VerifyVoteExtension: empty, or the attestation of deposits from the next one to mint after the
   * state the vote's block executes on (height - 1), or later. A state no longer kept refuses.
   */
  async verifyVoteExtension(req: VerifyVoteExtensionRequest): Promise<boolean> {
    this.assertInitialized();
    if (req.voteExtension.length === 0) return true;
    let next: bigint;
    try {
      next = (await this.inboundAt(req.height - 1)).lastSequence + 1n;
    } catch (err) {
      this.opts.logger.debug(
        { height: req.height, err: (err as Error).message },
        'bridge: extension of an old height',
      );
      return false;
    }
    return this.bridgeIn.verifyVoteExtension(req.voteExtension, next);
  }

  /** Committed state at `height`, as the EVM overlay reads it. */
  private stateSource(height: number): StateSource {
    return {
      account: (a) => this.db.account(a, height),
      storage: (a, s) => this.db.storage(a, s, height),
      code: (h) => this.db.code(h),
    };
  }

  async finalizeBlock(req: FinalizeBlockRequest): Promise<FinalizeBlockResponse> {
    this.assertInitialized();
    const t0 = performance.now();
    if (this.pending) {
      if (this.pending.height !== req.height) {
        throw new ExecutionError(
          'HEIGHT_MISMATCH',
          `finalizeBlock(${req.height}) while block ${this.pending.height} awaits commit`,
        );
      }
      this.pending = undefined;
      this.db.resetTries();
    }
    if (req.height !== this.db.latest + 1) {
      throw new ExecutionError(
        'HEIGHT_MISMATCH',
        `finalizeBlock for height ${req.height}, but the executed state is at height ${this.db.latest}`,
      );
    }
    const ahead = this.ahead;
    this.ahead = undefined;
    if (ahead) {
      ahead.open = false;
      await ahead.busy;
    }
    try {
      const res = await this.executeBlock(req, ahead);
      this.lastFinalize = { height: req.height, ms: performance.now() - t0 };
      return res;
    } catch (err) {
      this.pending = undefined;
      this.db.resetTries();
      throw err;
    }
  }

  private async executeBlock(
    req: FinalizeBlockRequest,
    ahead: Ahead | undefined,
  ): Promise<FinalizeBlockResponse> {
    const tStart = performance.now();
    const height = req.height;
    const parent = await this.chain.block(BigInt(height - 1));
    if (!parent)
      throw new ExecutionError(
        'HEIGHT_MISMATCH',
        `parent block ${height - 1} is missing from application.db`,
      );
    const baseFee = this.baseFee;
    const coinbase = req.proposerAddress.length === 20 ? req.proposerAddress : ZERO_ADDRESS;
    const ctx: BlockContext = {
      number: BigInt(height),
      timestamp: seconds(req.time),
      coinbase,
      baseFee,
      gasLimit: this.opts.gas.blockGasLimit,
      mixHash: mix(req.hash),
    };
    const devOps: Array<DevOp | undefined> = [];
    const devTxs = new Set<string>();
    const bridgeTx = req.txs[0] !== undefined && isBridgeTx(req.txs[0]) ? req.txs[0] : undefined;
    const decoded: Array<DecodedTx | TxRejectedError> = req.txs.map((raw, i) => {
      try {
        if (i === 0 && bridgeTx) return new TxRejectedError(TxCode.decode, 'bridge transaction');
        if (isDevTx(raw)) {
          const op = this.devOpOf(raw);
          devOps[i] = op;
          devTxs.add(toHex(raw));
          if (op.kind === 'impersonated') return this.decodeImpersonated(op);
          // Applied by applyDevChange below, never run as a transaction.
          return new TxRejectedError(TxCode.decode, 'dev operation');
        }
        return this.decode(raw);
      } catch (err) {
        if (err instanceof TxRejectedError) return err;
        throw err;
      }
    });
    // A run ahead never saw the dev operations: a block that carries any runs from its start.
    const run = await this.runFor(devTxs.size > 0 || bridgeTx ? undefined : ahead, ctx, decoded);
    let devMinted = 0n;
    let bridgeMinted = 0n;
    const reused = run.records.length;
    if (reused < decoded.length) {
      const touched: string[] = [toKey(coinbase)];
      for (let i = reused; i < decoded.length; i++) {
        const d = decoded[i];
        if (!(d instanceof TxRejectedError)) touched.push(d.sender, ...(d.to ? [d.to] : []));
      }
      await this.db.prefetchAccounts(touched);
    }
    let sliceStart = performance.now();
    for (let i = reused; i < decoded.length; i++) {
      if (performance.now() - sliceStart >= EXEC_SLICE_MS) {
        // Let the rest of the node run (CheckTx of arriving transactions, JSON-RPC reads of the
        // committed state), as CometBFT runs CheckTx beside FinalizeBlock; see EXEC_SLICE_MS.
        await yieldToLoop();
        sliceStart = performance.now();
      }
      if (i === 0 && bridgeTx) {
        const { minted, result } = await this.bridgeIn.apply(run.state, bridgeTx, height, ctx.timestamp);
        bridgeMinted += minted;
        run.recordOther(result);
        continue;
      }
      const op = devOps[i];
      if (op !== undefined && op.kind !== 'impersonated') {
        devMinted += await applyDevChange(run.state, op);
        run.recordOther({
          code: 0,
          data: EMPTY,
          log: describeDevOp(op),
          info: '',
          gasWanted: 0n,
          gasUsed: 0n,
          events: [
            {
              type: 'dev_operation',
              attributes: [attr('kind', op.kind), attr('address', toHex(op.address))],
            },
          ],
          codespace: '',
        });
        continue;
      }
      await run.apply(decoded[i], baseFee);
    }
    run.settle();
    const state = run.state;
    const txResults: ExecTxResult[] = [];
    const txs: StoredTx[] = [];
    const receipts: StoredReceipt[] = [];
    const receiptBlooms: Uint8Array[] = [];
    const txHashes: Uint8Array[] = [];
    const blockBloom = new Uint8Array(256);
    let baseFees = 0n;
    let tips = 0n;
    let minTip: bigint | undefined;
    for (const r of run.records) {
      txResults.push(r.result);
      const inc = r.included;
      if (!inc) continue;
      baseFees += inc.receipt.gasUsed * baseFee;
      tips += inc.receipt.gasUsed * inc.tip;
      if (minTip === undefined || inc.tip < minTip) minTip = inc.tip;
      if (inc.receipt.logs.length > 0) for (let b = 0; b < 256; b++) blockBloom[b] |= inc.bloom[b];
      receipts.push(inc.receipt);
      receiptBlooms.push(inc.bloom);
      txs.push(inc.tx);
      txHashes.push(inc.hash);
    }
    const gasUsed = run.gasUsed;
    let plain = 0;
    for (const r of run.records) if (r.plain) plain++;
    this.lastRun = { txs: decoded.length, ahead: reused, plain };
    this.counts.ranAhead += reused;

    // EIP-1559 burns the base fee; this chain keeps it, with the tips, in the supply. With the
    // reward account (genesis app_state.staking) the block's fees are split between validators and
    // reward stakers (reward-state.ts): the tips runTx credited to the coinbase move to the reward
    // account with the base fees. Without it the proposer keeps them all.
    const rewards = new RewardStore(state);
    let rewardEvents: AbciEvent[] = [];
    let minted = 0n;
    let rewardsOn = await rewards.enabled();
    const upgrade = this.opts.rewardsUpgrade;
    if (!rewardsOn && upgrade && upgrade.height === height && (await new StakingStore(state).enabled())) {
      await createRewardAccount(state, upgrade);
      rewardsOn = true;
      this.opts.logger.info(
        { height },
        'rewards: the fee split starts at this height (app_state.rewards.upgrade_height); the reward account is created',
      );
    }
    if (rewardsOn) {
      const cb = toKey(coinbase);
      const credited = (await state.readAccount(cb))?.balance ?? 0n;
      // The coinbase (a consensus address) has no key to spend with; a dev chain could impersonate
      // it, so never take more than it holds.
      const taken = tips < credited ? tips : credited;
      if (taken > 0n) await state.addBalance(cb, -taken);
      const fees = baseFees + taken;
      if (fees > 0n) await state.addBalance(REWARD_KEY, fees);
      const r = await rewards.distribute(state, ctx.timestamp, fees);
      rewardEvents = r.events;
      minted = r.minted;
    } else if (baseFees > 0n) await state.addBalance(toKey(coinbase), baseFees);
    // The validator pool's slashing (evidence, missed blocks), then its end of block: powers that
    // bonding, slashing or jailing changed go to consensus (H + 2). Slashing runs after the
    // transactions (the Cosmos SDK runs it before them): the block's transactions may already have
    // run ahead of FinalizeBlock, before its evidence and last commit were known.
    const { events: slashEvents, heldBack } = await applySlashingWithGuard(state, {
      height,
      time: ctx.timestamp,
      misbehavior: req.misbehavior,
      lastCommit: req.decidedLastCommit,
    });
    // The liveness guard (docs/staking.md "Keeping the chain live"): a downtime jail that would
    // leave <= 2/3 of the power online is held back; every node holds back the same ones.
    for (const h of heldBack) {
      this.counts.heldBackJails++;
      this.opts.logger.warn(
        {
          height,
          operator: toHex(h.operator),
          power: h.power.toString(),
          onlinePower: h.online.toString(),
          totalPower: h.total.toString(),
        },
        'staking: downtime jail held back, it would leave 2/3 or less of the voting power online',
      );
    }
    // Unbonding and redelegation entries that matured leave the lists a slash walks (no-op without a pool).
    const staking = new StakingStore(state);
    if (await staking.enabled()) await completeMatured(state, ctx.timestamp);
    // A validator's rewards are booked with its old power before the power changes (reward-state.ts).
    const validatorUpdates = await endBlockValidatorUpdates(
      state,
      ctx.timestamp,
      rewardsOn ? (op, from, to) => rewards.powerChange(staking, op, from, to) : undefined,
      ctx.number,
    );
    const tExec = performance.now();

    // Bridged-in BTC and the block reward are minted like a dev balance change: the supply check counts them.
    const expectedDelta = devMinted + bridgeMinted + minted - state.burned;
    // The BTC token's totalSupply() reads the supply from its storage (see btc-token.ts).
    if (expectedDelta !== 0n) {
      state.writeSlot(toKey(BTC_TOKEN_ADDRESS), SUPPLY_SLOT, uintWord(this.supply + expectedDelta));
    }
    const built = await this.db.build(state.overlay());
    const tRoot = performance.now();
    if (built.balanceDelta !== expectedDelta) {
      throw new SupplyInvariantError(height, expectedDelta, built.balanceDelta);
    }
    const supply = this.supply + built.balanceDelta;

    const header: EthHeader = {
      parentHash: parent.hash,
      coinbase,
      stateRoot: built.stateRoot,
      transactionsRoot: await orderedTrieRoot(txs.map((t) => t.raw)),
      receiptsRoot: await orderedTrieRoot(
        receipts.map((r, i) => encodeConsensusReceipt(r, receiptBlooms[i])),
      ),
      logsBloom: blockBloom,
      number: BigInt(height),
      gasLimit: this.opts.gas.blockGasLimit,
      gasUsed,
      timestamp: ctx.timestamp,
      extraData: EMPTY,
      mixHash: ctx.mixHash,
      baseFeePerGas: baseFee,
    };
    const stored = sealBlock(
      header,
      txHashes,
      txs.map((t) => t.raw),
    );
    const next = nextBaseFee(baseFee, gasUsed, this.opts.gas);
    const tEnd = performance.now();
    this.timing = { txs: tExec - tStart, stateRoot: tRoot - tExec, rest: tEnd - tRoot };
    this.pending = {
      height,
      built,
      block: stored,
      txs,
      receipts,
      nextBaseFee: next,
      supply,
      appHash: appHashOf(built.stateRoot, next),
      minTip,
      devTxs,
      valsetOps: await this.bridgeIn.nextSetOps(height, validatorUpdates),
      lightBlock: req.lightBlock,
    };
    return {
      events: [
        {
          type: 'fee_market',
          attributes: [attr('base_fee', baseFee.toString()), attr('next_base_fee', next.toString())],
        },
        {
          type: 'block_gas',
          attributes: [attr('height', String(height)), attr('amount', gasUsed.toString())],
        },
        ...rewardEvents,
        ...slashEvents,
      ],
      txResults,
      validatorUpdates,
      consensusParamUpdates: null,
      appHash: appHashOf(built.stateRoot, next),
    };
  }

  async commit(opts?: CommitOptions): Promise<{ retainHeight: number }> {
    this.assertInitialized();
    const p = this.pending;
    if (!p) throw new ExecutionError('NO_PENDING_BLOCK', 'commit without a finalized block');
    const { ops, newOldest } = await this.db.commitOps(p.built);
    ops.push(...this.chain.blockOps(p.block, p.txs, p.receipts), ...p.valsetOps);
    const metaOps: Record<string, string> = {
      [META.height]: String(p.height),
      [META.lastBlockHeight]: String(p.height),
      [META.appHash]: toHex(p.appHash),
      [META.oldestState]: String(newOldest),
      [META.nextBaseFee]: p.nextBaseFee.toString(),
      [META.totalSupply]: p.supply.toString(),
      [META.stateRoot]: toHex(p.built.stateRoot),
    };
    for (const [k, v] of Object.entries(metaOps)) ops.push({ type: 'put', key: metaKey(k), value: enc(v) });
    if (this.opts.outbox) {
      // In the same write as the block: a crash cannot commit a height without its outbox record.
      const value = this.opts.outbox.encode(this.committedRecord(p, ops));
      ops.push({ type: 'put', key: heightKey(P.outbox, p.height), value });
    }
    this.db.beginCommit(p.built, newOldest);
    const tWrite = performance.now();
    // Held (block sync between two sync points): kept in memory until flushHeld() or the next
    // commit without hold, which writes the held ones and this one as one batch.
    if (opts?.hold) {
      this.held.hold();
      await this.held.write(ops);
    } else await this.held.release({ sync: opts?.durable !== false }, ops);
    const writeMs = performance.now() - tWrite;
    this.db.finishCommit(p.built, newOldest);
    if (p.block.txHashes.length > 0)
      this.recentlyMined.push({
        height: p.height,
        hashes: new Map(p.block.txHashes.map((h, i) => [toHex(h), i])),
      });
    this.opts.logger.debug(
      {
        height: p.height,
        txs: p.txs.length,
        gasUsed: p.block.header.gasUsed.toString(),
        execMs: Math.round(this.timing.txs),
        stateRootMs: Math.round(this.timing.stateRoot),
        finishMs: Math.round(this.timing.rest),
        writeMs: Math.round(writeMs),
        ranAhead: this.lastRun.ahead,
        ops: ops.length,
      },
      'block committed',
    );
    this.pending = undefined;
    for (const h of p.block.txHashes) this.forget(toHex(h));
    this.lastBlockHeight = p.height;
    this.appHash = p.appHash;
    this.baseFee = p.nextBaseFee;
    this.supply = p.supply;
    this.inbound = await this.inboundAt(p.height);
    if (p.minTip !== undefined) {
      this.recentTips.push(p.minTip);
      if (this.recentTips.length > TIP_HISTORY) this.recentTips.shift();
    }
    // A held commit's head goes out when the commit is written (flushHeld, or the next commit not
    // held), with the others of its batch: block sync publishes the blocks of a batch at its sync
    // point, and a crash loses held commits and their heads alike.
    if (opts?.hold) this.heldHeads.push(p);
    else {
      this.publishHeldHeads();
      this.publishHead(p);
    }
    if (p.devTxs.size > 0) this.settleDevQueue(p.devTxs, BigInt(p.height));
    await this.recheckMempool();
    // Run ahead only with a coinbase that held for two blocks: the proposer is the consensus'
    // choice, and under a rotating one every run ahead would be done twice.
    const proposer = p.block.header.coinbase;
    this.aheadCoinbase = this.lastProposer && equal(this.lastProposer, proposer) ? proposer : undefined;
    this.lastProposer = proposer;
    this.startAhead(true);
    return { retainHeight: 0 };
  }

  /** Writes the commits held since the last write, as one batch without fsync (Application.flushHeld). */
  async flushHeld(): Promise<void> {
    await this.held.release();
    this.publishHeldHeads();
  }

  private publishHead(p: PendingBlock): void {
    const logs = renderLogs(p.block, p.receipts).flat();
    const bus = this.opts.bus;
    // The accounts only for a reader of them (the JSON-RPC thread's host): the cluster's executor
    // and a node without JSON-RPC have none, and would build them for nobody.
    if (bus.wantsHeadAccounts)
      bus.publish({ kind: 'EthNewHead', block: renderBlock(p.block), logs, accounts: headAccounts(p.built) });
    else bus.publish({ kind: 'EthNewHead', block: renderBlock(p.block), logs });
  }

  private publishHeldHeads(): void {
    const heads = this.heldHeads;
    if (heads.length === 0) return;
    this.heldHeads = [];
    for (const h of heads) this.publishHead(h);
  }

  /** Bytes of the commits held in memory (flushHeld writes them). */
  heldBytes(): number {
    return this.held.heldBytes;
  }

  // ------------------------------------------------------------ rollback (dev chain evm_revert)

  /**
   * Where rollbackTo() can bring the application back to: the committed height and its meta
   * records (app hash, base fee, supply, state root, ...), read between blocks (consensus calls it
   * from its input queue). Only with dev controls, whose blocks journal their changes.
   */
  async rollbackPoint(): Promise<AppRollbackPoint> {
    this.assertInitialized();
    if (this.opts.devControls !== true || this.opts.devJournal === false)
      throw new ExecutionError(
        'BAD_OPTIONS',
        'a rollback point needs the dev controls (chain-local) with their journal (devJournal)',
      );
    if (this.pending) throw new ExecutionError('NO_PENDING_BLOCK', 'a block is being committed');
    const meta: Record<string, string> = {};
    for (const name of Object.values(META)) {
      const v = await this.meta(name);
      if (v !== undefined) meta[name] = v;
    }
    return { height: this.db.latest, meta };
  }

  /**
   * Brings data/application.db back to `point` in one synced batch: the versioned state from the
   * journals, the blocks, transactions, receipts, tx-hash and log indexes of later heights deleted,
   * the meta records of the point. Then every cache is dropped and the mempool rechecked against
   * the older state. Idempotent: at the point's height only the meta and caches are rewritten (the
   * node finishes an interrupted revert at startup this way).
   */
  async rollbackTo(point: AppRollbackPoint): Promise<void> {
    this.assertInitialized();
    if (this.opts.devControls !== true || this.opts.devJournal === false)
      throw new ExecutionError(
        'BAD_OPTIONS',
        'rollback needs the dev controls (chain-local) with their journal (devJournal)',
      );
    const target = point.height;
    const top = this.db.latest;
    if (!Number.isSafeInteger(target) || target < 0 || target > top)
      throw new ExecutionError(
        'BAD_OPTIONS',
        `rollback target ${target} is not a committed height (latest ${top})`,
      );
    await this.dropAhead();
    this.pending = undefined;
    const ops = await this.db.rollbackOps(target);
    for (let h = BigInt(target) + 1n; h <= BigInt(top); h++) ops.push(...(await this.chain.dropOps(h)));
    ops.push(...this.bridgeIn.dropOps(target, top));
    const oldest = Math.max(Number(point.meta[META.oldestState] ?? this.db.oldest), this.db.oldest);
    const meta: Record<string, string> = { ...point.meta, [META.oldestState]: String(oldest) };
    for (const [k, v] of Object.entries(meta)) ops.push({ type: 'put', key: metaKey(k), value: enc(v) });
    await this.opts.kv.write(ops, { sync: true });
    this.chain.clearCaches();
    // Heights at or below the target were rechecked when committed; those above are gone.
    this.recentlyMined = [];
    this.callBlock = undefined;
    this.recentTips = [];
    this.lastProposer = undefined;
    this.aheadCoinbase = undefined;
    this.lastBlockHeight = Number(meta[META.lastBlockHeight] ?? 0);
    this.appHash = fromHex(meta[META.appHash] ?? '0x');
    this.baseFee = BigInt(meta[META.nextBaseFee] ?? this.opts.gas.baseFee);
    this.supply = BigInt(meta[META.totalSupply] ?? 0);
    const root = fromHex(meta[META.stateRoot] ?? toHex(EMPTY_TRIE_ROOT));
    this.db.reset(Number(meta[META.height] ?? target), oldest, root);
    this.inbound = await this.inboundAt(this.db.latest);
    await this.recheckMempool();
    this.opts.logger.info({ height: target, from: top }, 'application rolled back');
  }

  private committedRecord(p: PendingBlock, ops: BatchOp[]): CommittedRecord {
    const stateChanges: CommittedRecord['stateChanges'] = [];
    for (const c of p.built.changes) {
      if (c.table === 'node') continue; // trie nodes: a replica keeps flat state, checked by the header
      stateChanges.push({ kind: c.table, key: fromHex(c.k), value: c.value });
    }
    return {
      chainId: this.opts.chainId,
      height: p.height,
      blockHash: p.block.hash,
      parentHash: p.block.header.parentHash,
      headerRlp: p.block.headerEnc,
      blockSize: p.block.size,
      appHash: p.appHash,
      txs: p.txs.map((t, i) => ({ raw: t.raw, sender: t.sender, hash: p.block.txHashes[i]! })),
      receipts: p.receipts,
      stateChanges,
      codes: p.built.code.map(([hash, code]) => ({ codeHash: fromHex(hash), code })),
      kvOps: kvOpsOf(ops),
      ...(p.lightBlock ? { lightBlock: p.lightBlock } : {}),
    };
  }

  // ------------------------------------------------------------ read replica (state-store)

  /**
   * For an executor opened on a read replica's copy of application.db (the state-store, whose
   * database receives each committed height's write batch from the stream): re-reads the committed
   * position from the meta table and forgets every cached state value, so that reads see the height
   * just written; each new block's lowest tip (from its receipts) joins the recent tips as commit()
   * adds it, for eth_maxPriorityFeePerGas. Call it between writes, with no read in flight.
   */
  async reloadCommitted(): Promise<void> {
    this.assertOpen();
    const height = await this.meta(META.height);
    if (height === undefined) return;
    // The first time, the tips of the blocks before the view opened count too, as they did for an
    // executor that has been running (up to TIP_HISTORY blocks with transactions in the last
    // TIP_SCAN), so that two replicas answer eth_maxPriorityFeePerGas alike whenever they started.
    const first = !this.tipsLoaded;
    this.tipsLoaded = true;
    const before = first ? -1 : this.initialized ? this.db.latest : -1;
    this.genesisHeight = Number(await this.meta(META.genesisHeight));
    const oldest = Number((await this.meta(META.oldestState)) ?? this.genesisHeight);
    this.lastBlockHeight = Number((await this.meta(META.lastBlockHeight)) ?? 0);
    this.appHash = fromHex((await this.meta(META.appHash)) ?? '0x');
    this.baseFee = BigInt((await this.meta(META.nextBaseFee)) ?? this.opts.gas.baseFee);
    this.supply = BigInt((await this.meta(META.totalSupply)) ?? 0);
    const root = fromHex((await this.meta(META.stateRoot)) ?? toHex(EMPTY_TRIE_ROOT));
    this.db.reset(Number(height), oldest, root);
    this.callBlock = undefined;
    this.initialized = true;
    // The lowest tip of each new block with transactions (commit() keeps the same from execution).
    const from = first ? Math.max(this.genesisHeight + 1, Number(height) - TIP_SCAN + 1) : before + 1;
    for (let n = Math.max(from, this.genesisHeight + 1); n <= Number(height); n++) {
      const b = await this.chain.block(BigInt(n));
      if (!b) continue;
      const rs = await this.chain.receipts(b.number);
      let min: bigint | undefined;
      for (const r of rs) {
        const tip = r.effectiveGasPrice - b.header.baseFeePerGas;
        if (min === undefined || tip < min) min = tip;
      }
      if (min === undefined) continue;
      this.recentTips.push(min);
      if (this.recentTips.length > TIP_HISTORY) this.recentTips.shift();
    }
  }

  /** Up to `limit` outbox records in height order (ExecutorOptions.outbox): what is not published yet. */
  async outboxEntries(limit: number): Promise<Array<{ height: number; record: Uint8Array }>> {
    const out: Array<{ height: number; record: Uint8Array }> = [];
    const range = { gte: heightKey(P.outbox, 0), lt: Uint8Array.of(P.outbox + 1), limit };
    for await (const [k, v] of this.opts.kv.iterate(range)) {
      out.push({
        height: Number(new DataView(k.buffer, k.byteOffset + 1, 8).getBigUint64(0)),
        record: v.slice(),
      });
    }
    return out;
  }

  /** Removes the outbox records up to `height` (published and acknowledged). */
  async clearOutbox(height: number): Promise<void> {
    const ops: BatchOp[] = [];
    for await (const [k] of this.opts.kv.iterate({
      gte: heightKey(P.outbox, 0),
      lte: heightKey(P.outbox, height),
    })) {
      ops.push({ type: 'del', key: k.slice() });
    }
    if (ops.length > 0) await this.opts.kv.write(ops);
  }

  // ------------------------------------------------------------ execution ahead of the proposal

  /** The run ahead of the next proposal, if one is under way: how many ran, how many wait. */
  aheadStatus(): { height: number; ran: number; waiting: number; open: boolean } | undefined {
    const a = this.ahead;
    if (!a) return undefined;
    return {
      height: a.height,
      ran: a.run?.records.length ?? 0,
      waiting: a.queue.length - a.next,
      open: a.open,
    };
  }

  /** For metrics: counts since start, and how long the last FinalizeBlock took. */
  executionStats(): ExecutionStats {
    return {
      refusedTxs: this.counts.refused,
      ranAheadTxs: this.counts.ranAhead,
      heldBackJails: this.counts.heldBackJails,
      lastFinalizeHeight: this.lastFinalize.height,
      lastFinalizeMs: this.lastFinalize.ms,
    };
  }

  /** The last executed block: its transaction count, and how many of them had run ahead. */
  lastExecution(): { txs: number; ranAhead: number } {
    return { txs: this.lastRun.txs, ranAhead: this.lastRun.ahead };
  }

  /** How many transactions of the last executed block were plain transfers, applied without the EVM. */
  lastPlainTransfers(): number {
    return this.lastRun.plain;
  }

  /** Queues a transaction just admitted to the mempool to run ahead of the next proposal. */
  private runAheadOf(d: DecodedTx): void {
    if (this.pending || this.closed) return;
    const a = this.ahead ?? this.startAhead(false);
    if (!a?.open) return;
    a.queue.push(d);
    this.kickAhead(a);
  }

  /** Starts a run ahead for the next height; with `seed`, of what the mempool holds already. */
  private startAhead(seed: boolean): Ahead | undefined {
    const coinbase = this.aheadCoinbase;
    if (this.opts.runAhead === false || !coinbase || this.pending || this.closed) return undefined;
    const height = this.db.latest + 1;
    const a: Ahead = {
      height,
      ctx: {
        number: BigInt(height),
        timestamp: 0n,
        coinbase,
        baseFee: this.baseFee,
        gasLimit: this.opts.gas.blockGasLimit,
        mixHash: new Uint8Array(32),
      },
      run: undefined,
      first: undefined,
      queue: seed ? this.pool.select(this.baseFee, Number.MAX_SAFE_INTEGER) : [],
      next: 0,
      open: true,
      busy: undefined,
      scheduled: false,
    };
    this.ahead = a;
    if (a.queue.length > 0) this.kickAhead(a);
    return a;
  }

  private kickAhead(a: Ahead): void {
    if (a.busy !== undefined || a.scheduled) return;
    a.scheduled = true;
    setImmediate(() => {
      a.scheduled = false;
      if (this.ahead !== a || !a.open || a.busy !== undefined) return;
      a.busy = this.driveAhead(a).finally(() => {
        a.busy = undefined;
        if (this.ahead === a && a.open && a.next < a.queue.length) this.kickAhead(a);
      });
    });
  }

  /** Runs queued transactions ahead for one slice. */
  private async driveAhead(a: Ahead): Promise<void> {
    try {
      a.run ??= await BlockRun.open(
        this.common,
        this.stateSource(a.height - 1),
        this.blockchain,
        a.ctx,
        this.limits(),
        true,
        { plainTransfers: this.opts.plainTransfers },
      );
      const start = performance.now();
      while (a.open && a.next < a.queue.length && performance.now() - start < AHEAD_SLICE_MS) {
        const d = a.queue[a.next++];
        if (this.pool.get(d.hashHex) === undefined) continue; // included, replaced or dropped since
        a.first ??= d;
        const price = cmpPrice(d, a.first, a.ctx.baseFee);
        if (price > 0) {
          // Dearer: the proposal puts it before what ran, which is reused only up to there.
          a.open = false;
          break;
        }
        // Cheaper: the proposal puts it after everything at the run's price, so the block
        // executes it (and the sender's later nonces, which fail here for the gap).
        if (price < 0) continue;
        // A transaction that read TIMESTAMP or PREVRANDAO ends the run: what follows may depend on it.
        if (!(await a.run.runAhead(d, a.ctx.baseFee)) && a.run.blocked) a.open = false;
      }
      if (a.next === a.queue.length) {
        a.queue = [];
        a.next = 0;
      }
    } catch (err) {
      // The block will be executed from its first transaction; nothing was written.
      a.open = false;
      a.run = undefined;
      this.opts.logger.warn({ err: (err as Error).message }, 'execution ahead of the proposal stopped');
    }
  }

  private async dropAhead(): Promise<void> {
    const a = this.ahead;
    this.ahead = undefined;
    if (!a) return;
    a.open = false;
    await a.busy;
  }

  /**
   * The run that executes a block with context `ctx` and transactions `decoded`: the run ahead cut
   * back to the prefix it shares with the block, when it ran with the same known context; a fresh
   * run otherwise.
   */
  private async runFor(
    ahead: Ahead | undefined,
    ctx: BlockContext,
    decoded: Array<DecodedTx | TxRejectedError>,
  ): Promise<BlockRun> {
    const run = ahead?.run;
    const k = ahead?.ctx;
    if (
      run &&
      k &&
      ahead.height === Number(ctx.number) &&
      k.baseFee === ctx.baseFee &&
      k.gasLimit === ctx.gasLimit &&
      equal(k.coinbase, ctx.coinbase)
    ) {
      let shared = 0;
      while (shared < run.records.length && shared < decoded.length) {
        const d = decoded[shared];
        if (d instanceof TxRejectedError || d.hashHex !== run.records[shared].hashHex) break;
        shared++;
      }
      await run.truncate(shared);
      run.useContext(ctx);
      return run;
    }
    return BlockRun.open(
      this.common,
      this.stateSource(this.db.latest),
      this.blockchain,
      ctx,
      this.limits(),
      false,
      { plainTransfers: this.opts.plainTransfers },
    );
  }

  private async recheckMempool(): Promise<void> {
    // Every sender with a pooled transaction gets its nonce at this height: a pooled transaction
    // mined at or below it leaves the pool (nonce too low), so those heights' hashes are no longer
    // needed by minedLocation.
    const height = this.db.latest;
    const senders = this.pool.senders();
    if (senders.length > 0) {
      await this.db.prefetchAccounts(senders);
      const states = new Map<string, SenderState>();
      for (const s of senders) states.set(s, await this.senderState(s));
      const dropped = this.pool.update(states, this.opts.mempool.recheck);
      for (const e of dropped) this.forget(e.d.hashHex);
    }
    // The newest RECENT_LOCATION_BLOCKS stay too: their receipts are the ones polled for.
    this.recentlyMined = this.recentlyMined.filter(
      (m) => m.height > height || m.height > this.db.latest - RECENT_LOCATION_BLOCKS,
    );
  }

  /**
   * Where the transaction `hash` (lowercase 0x hex) was mined, or undefined: from recentlyMined,
   * else nowhere for a transaction waiting in the mempool, else from the tx-hash index.
   */
  private async minedLocation(hash: Hex): Promise<{ number: bigint; index: number } | undefined> {
    for (const m of this.recentlyMined) {
      const index = m.hashes.get(hash);
      if (index !== undefined)
        return m.height <= this.db.latest ? { number: BigInt(m.height), index } : undefined;
    }
    if (this.pool.get(hash)) return undefined;
    const loc = await this.chain.txLocation(fromHex(hash));
    return loc && loc.number <= BigInt(this.db.latest) ? loc : undefined;
  }

  // =================================================================== mempool extras (NodeReader)

  /**
   * Transactions in the mempool, pending first (unconfirmed_txs), and its totals; `pending` counts
   * the executable ones (not waiting behind a nonce gap).
   */
  unconfirmedTxs(limit: number): { txs: Uint8Array[]; total: number; totalBytes: number; pending: number } {
    const { pending, queued } = this.pool.summary();
    const out: Uint8Array[] = [];
    let executable = 0;
    for (const list of pending.values()) executable += list.length;
    for (const m of [pending, queued]) {
      for (const list of m.values()) {
        for (const e of list) {
          if (out.length >= limit) break;
          out.push(e.d.raw);
        }
      }
    }
    return { txs: out, total: this.pool.count, totalBytes: this.pool.totalBytes, pending: executable };
  }

  /** How many transactions the mempool holds (pending and queued), without building its summary. */
  mempoolSize(): number {
    return this.pool.count;
  }

  /** Whether the pool holds a transaction the next block could include (not only ones queued behind a nonce gap). */
  hasExecutableTxs(): boolean {
    return this.pool.hasExecutable();
  }

  /** Every transaction in the mempool, pending first, each sender's in nonce order (for a new peer). */
  pendingTxs(): Uint8Array[] {
    return this.unconfirmedTxs(Number.MAX_SAFE_INTEGER).txs;
  }

  flushMempool(): void {
    void this.dropAhead();
    this.pool.clear();
  }

  /** abci_query (Application.query): the paths of query.ts, read from the committed state. */
  query(req: AppQueryRequest): Promise<AppQueryResult> {
    return abciQuery(this, req);
  }

  /** Native coin supply in base units (checked at the end of every block). */
  totalSupply(): bigint {
    return this.supply;
  }

  // =================================================================== dev chain (dev.ts)

  /** Calls `listener` whenever a dev operation is queued for the next proposal; returns the unsubscriber. */
  onDevQueued(listener: () => void): () => void {
    this.devListeners.add(listener);
    return () => this.devListeners.delete(listener);
  }

  /** Whether this executor accepts dev-chain requests (ExecutorOptions.devControls on chain-local). */
  hasDevControls(): boolean {
    return this.opts.devControls === true && this.opts.chainId === DEV_CHAIN_ID;
  }

  /** Dev operations waiting for this node's next proposal. */
  devQueueLength(): number {
    return this.devQueue.length;
  }

  /** Why the dev operation `raw` cannot be in a block of this chain, or undefined when it can. */
  private devTxProblem(raw: Uint8Array): string | undefined {
    try {
      const op = this.devOpOf(raw);
      if (op.kind === 'impersonated') this.decodeImpersonated(op);
      return undefined;
    } catch (err) {
      return (err as Error).message;
    }
  }

  /** The dev operation of a block entry; TxRejectedError off chain-local or when malformed. */
  private devOpOf(raw: Uint8Array): DevOp {
    if (this.opts.chainId !== DEV_CHAIN_ID) {
      throw new TxRejectedError(
        TxCode.decode,
        `dev operations are only valid on ${DEV_CHAIN_ID}; this chain is ${this.opts.chainId}`,
      );
    }
    try {
      return decodeDevOp(raw);
    } catch (err) {
      throw new TxRejectedError(TxCode.decode, (err as Error).message);
    }
  }

  private decodeImpersonated(op: Extract<DevOp, { kind: 'impersonated' }>): DecodedTx {
    return decodeImpersonatedTx(op.raw, op.sender, this.common, this.opts.evmChainId);
  }

  private assertDevControls(): void {
    this.assertInitialized();
    if (this.opts.devControls !== true || this.opts.chainId !== DEV_CHAIN_ID) {
      throw new ChainError(-32000, NO_DEV_CONTROLS);
    }
  }

  private queueDev(q: QueuedDevOp): void {
    this.devQueue.push(q);
    for (const l of this.devListeners) l();
  }

  /** Resolves the queued operations the committed block at `height` carried and drops them. */
  private settleDevQueue(included: Set<string>, height: bigint): void {
    const keep: QueuedDevOp[] = [];
    for (const q of this.devQueue) {
      if (included.has(q.key)) q.done?.resolve(height);
      else keep.push(q);
    }
    this.devQueue = keep;
  }

  async devSetState(change: DevStateChange): Promise<bigint> {
    this.assertDevControls();
    if (!/^0x[0-9a-fA-F]{40}$/.test(change.address)) {
      throw new ChainError(-32602, `invalid address ${change.address}: want 0x and 40 hex digits`);
    }
    const address = fromHex(change.address);
    let op: DevOp;
    switch (change.kind) {
      case 'balance':
        if (change.value < 0n || change.value > UINT256_MAX) {
          throw new ChainError(-32602, `balance ${change.value} is outside 0 .. 2^256-1`);
        }
        op = { kind: 'balance', address, value: change.value };
        break;
      case 'nonce':
        if (change.value < 0n || change.value > UINT64_MAX) {
          throw new ChainError(-32602, `nonce ${change.value} is outside 0 .. 2^64-1`);
        }
        op = { kind: 'nonce', address, value: change.value };
        break;
      case 'code':
        if (!/^0x([0-9a-fA-F]{2})*$/.test(change.code)) {
          throw new ChainError(-32602, 'code must be 0x followed by an even number of hex digits');
        }
        op = { kind: 'code', address, code: fromHex(change.code) };
        break;
      case 'storage':
        for (const [what, v] of [
          ['slot', change.slot],
          ['value', change.value],
        ] as const) {
          if (!/^0x[0-9a-fA-F]{64}$/.test(v)) {
            throw new ChainError(-32602, `storage ${what} ${v} must be 0x followed by 64 hex digits`);
          }
        }
        op = { kind: 'storage', address, slot: fromHex(change.slot), value: fromHex(change.value) };
        break;
    }
    const raw = encodeDevOp(op);
    return new Promise<bigint>((resolve, reject) => {
      this.queueDev({ raw, key: toHex(raw), op, done: { resolve, reject } });
    });
  }

  async devSendImpersonated(sender: Hex, raw: Uint8Array): Promise<Hex> {
    this.assertDevControls();
    if (!this.impersonated.has(normAddress(sender))) {
      throw new ChainError(
        -32000,
        `${sender.toLowerCase()} is not impersonated: call anvil_impersonateAccount or hardhat_impersonateAccount first`,
      );
    }
    const op: DevOp = { kind: 'impersonated', sender: fromHex(sender), raw };
    let d: DecodedTx;
    try {
      d = this.decodeImpersonated(op);
      checkStateless(d, this.limits());
      if (d.feeCap < this.baseFee) {
        throw new TxRejectedError(
          TxCode.feeCapTooLow,
          `max fee per gas less than block base fee: address 0x${d.sender}, maxFeePerGas: ${d.feeCap}, baseFee: ${this.baseFee}`,
        );
      }
      const acct = await this.db.account(d.sender, this.db.latest);
      const next = await this.getNonce(`0x${d.sender}`, 'pending');
      const current = acct?.nonce ?? 0n;
      if (d.nonce < current) {
        throw new TxRejectedError(
          TxCode.nonceTooLow,
          `nonce too low: next nonce ${current}, tx nonce ${d.nonce}`,
        );
      }
      if (d.nonce !== next) {
        throw new TxRejectedError(
          TxCode.nonceTooHigh,
          `nonce ${d.nonce} of an impersonated sender must be its next pending nonce ${next} (no gaps or replacements)`,
        );
      }
      const balance = acct?.balance ?? 0n;
      if (balance < d.cost) {
        throw new TxRejectedError(
          TxCode.insufficientFunds,
          `insufficient funds for gas * price + value: balance ${balance}, tx cost ${d.cost}, overshot ${d.cost - balance}`,
        );
      }
    } catch (err) {
      if (err instanceof TxRejectedError) throw new ChainError(-32000, err.message);
      throw err;
    }
    const envelope = encodeDevOp(op);
    this.queueDev({ raw: envelope, key: toHex(envelope), op, d });
    this.opts.bus.publish({ kind: 'EthPendingTx', hash: d.hashHex });
    return d.hashHex;
  }

  async devImpersonate(address: Hex, on: boolean): Promise<boolean> {
    this.assertDevControls();
    const key = normAddress(address);
    const was = this.impersonated.has(key);
    if (on) this.impersonated.add(key);
    else this.impersonated.delete(key);
    return was;
  }

  async devImpersonatedAccounts(): Promise<Hex[]> {
    this.assertDevControls();
    return [...this.impersonated] as Hex[];
  }

  // =================================================================== EthChain: blocks

  chainId(): bigint {
    return this.opts.evmChainId;
  }

  latestHeight(): bigint {
    return BigInt(Math.max(this.db.latest, 0));
  }

  oldestStateHeight(): bigint {
    return BigInt(this.db.oldest);
  }

  async getBlockByNumber(n: bigint): Promise<EthBlock | undefined> {
    if (n > BigInt(this.db.latest)) return undefined;
    const b = await this.chain.block(n);
    return b ? renderBlock(b) : undefined;
  }

  async getBlockByHash(hash: Hex): Promise<EthBlock | undefined> {
    const n = await this.chain.numberByHash(fromHex(hash));
    return n === undefined ? undefined : this.getBlockByNumber(n);
  }

  async getBlockTransactions(n: bigint): Promise<EthTx[]> {
    const b = n <= BigInt(this.db.latest) ? await this.chain.block(n) : undefined;
    if (!b) return [];
    const txs = await this.chain.txs(n);
    return txs.map((t, i) =>
      renderTx(t.raw, toHex(b.txHashes[i]), toHex(t.sender), {
        blockHash: toHex(b.hash),
        blockNumber: n,
        transactionIndex: BigInt(i),
        baseFee: b.header.baseFeePerGas,
      }),
    );
  }

  async getBlockReceipts(n: bigint): Promise<EthReceipt[]> {
    const b = n <= BigInt(this.db.latest) ? await this.chain.block(n) : undefined;
    if (!b) return [];
    const rs = await this.chain.receipts(n);
    return renderReceipts(b, rs, rs.map(receiptBloom));
  }

  async getTransaction(hash: Hex): Promise<EthTx | undefined> {
    const loc = await this.minedLocation(hash.toLowerCase() as Hex);
    if (loc) {
      const b = await this.chain.block(loc.number);
      const t = (await this.chain.txs(loc.number))[loc.index];
      if (b && t) {
        return renderTx(t.raw, toHex(b.txHashes[loc.index]), toHex(t.sender), {
          blockHash: toHex(b.hash),
          blockNumber: loc.number,
          transactionIndex: BigInt(loc.index),
          baseFee: b.header.baseFeePerGas,
        });
      }
    }
    const e = this.pool.get(hash.toLowerCase());
    if (e) return renderTx(e.d.raw, e.d.hashHex, `0x${e.d.sender}`, pendingPlacement);
    const q = this.devQueue.find((x) => x.d?.hashHex === hash.toLowerCase());
    if (q?.d) return renderTx(q.d.raw, q.d.hashHex, `0x${q.d.sender}`, pendingPlacement);
    return undefined;
  }

  async getReceipt(hash: Hex): Promise<EthReceipt | undefined> {
    const loc = await this.minedLocation(hash.toLowerCase() as Hex);
    if (!loc) return undefined;
    const b = await this.chain.block(loc.number);
    const rs = await this.chain.receipts(loc.number);
    if (!b || !rs[loc.index]) return undefined;
    return renderReceipt(b, rs, loc.index, receiptBloom(rs[loc.index]));
  }

  async getLogs(filter: LogFilter): Promise<EthLog[]> {
    const latest = BigInt(this.db.latest);
    const from = filter.fromBlock < 0n ? 0n : filter.fromBlock;
    const to = filter.toBlock > latest ? latest : filter.toBlock;
    if (from > to) return [];
    const f = compileLogFilter(filter.addresses, filter.topics);
    const limit = filter.limit ?? Number.POSITIVE_INFINITY;
    const out: EthLog[] = [];
    const candidates = await this.logCandidates(f, from, to);
    const count = candidates ? candidates.length : Number(to - from) + 1;
    for (let c = 0; c < count && out.length < limit; c += LOG_SCAN_CHUNK) {
      const picked: Array<{ n: bigint; only: Map<number, number> | null }> = [];
      for (let j = c; j < count && j < c + LOG_SCAN_CHUNK; j++)
        picked.push(candidates ? candidates[j]! : { n: from + BigInt(j), only: null });
      const read = await Promise.all(picked.map((p) => this.chain.block(p.n)));
      const blocks: Array<{ b: StoredBlock; only: Map<number, number> | null }> = [];
      read.forEach((b, j) => {
        if (
          b !== undefined &&
          bloomMayMatch(f, b.header.logsBloom) &&
          !b.header.logsBloom.every((x) => x === 0)
        )
          blocks.push({ b, only: picked[j]!.only });
      });
      if (blocks.length === 0) continue;
      const records = await this.chain.receiptsEncoded(blocks.map((x) => x.b.number));
      for (let j = 0; j < blocks.length && out.length < limit; j++) {
        const { b, only } = blocks[j]!;
        const enc = records[j];
        if (!enc) continue;
        const blockHash = toHex(b.hash);
        scanLogs(
          enc,
          f,
          (i, logIndex, l) => {
            out.push(renderLog(b, l, i, BigInt(logIndex), blockHash, toHex(b.txHashes[i])));
            return out.length < limit;
          },
          only ?? undefined,
        );
      }
    }
    return out;
  }

  /**
   * The blocks of [from, to] the log index says may hold a match, ascending, each with the receipts
   * that may (null: any of the block's); undefined when the filter names no address or topic. The
   * index keys a block by each emitter and by each topic value whatever its position, listing the
   * receipts that hold it, so every named position narrows the blocks and the receipts: positions
   * past the first (indexed event arguments such as a Transfer's receiver) are read first, then the
   * addresses, then the first topic (an event signature, which every emitter of the event shares).
   * Once the candidate blocks are few (at most an eighth of the range: reading a criterion's index
   * costs about one entry per block of the range, a candidate block about as much as a dozen
   * entries), the rest are left to the bloom and the byte comparison of each log.
   */
  private async logCandidates(
    f: RawLogFilter,
    from: bigint,
    to: bigint,
  ): Promise<Array<{ n: bigint; only: Map<number, number> | null }> | undefined> {
    const criteria: Array<{ prefix: number; keys: Uint8Array[] }> = [];
    for (let i = 1; i < f.topics.length; i++) {
      const alts = f.topics[i];
      if (alts) criteria.push({ prefix: P.logTopic, keys: alts });
    }
    if (f.addresses) criteria.push({ prefix: P.logAddress, keys: f.addresses });
    if (f.topics[0]) criteria.push({ prefix: P.logTopic, keys: f.topics[0] });
    if (criteria.length === 0) return undefined;
    const span = Number(to - from) + 1;
    let set: Map<bigint, Map<number, number> | null> | undefined;
    for (const { prefix, keys } of criteria) {
      if (set && set.size <= Math.max(FEW_LOG_CANDIDATES, span / 8)) break;
      if (set && fewReceipts(set)) break;
      // This criterion's blocks, each with its alternatives' entries (null: any receipt may hold it).
      const hits = new Map<bigint, Uint8Array[] | null>();
      for (const k of keys) {
        for (const { number: n, receipts } of await this.chain.indexedReceipts(prefix, k, from, to)) {
          if (set && !set.has(n)) continue;
          const had = hits.get(n);
          if (had === undefined) hits.set(n, receipts && [receipts]);
          else if (had !== null) {
            if (receipts === null) hits.set(n, null);
            else had.push(receipts);
          }
        }
      }
      // A log that matches holds every criterion, so its receipt is in each criterion's receipts:
      // the candidates so far are looked up in this criterion's entries as stored (no copies of
      // an event signature's or a busy contract's long lists).
      const next = new Map<bigint, Map<number, number> | null>();
      for (const [n, entries] of hits) {
        const prev = set?.get(n) ?? null;
        if (entries === null) {
          next.set(n, prev);
          continue;
        }
        if (prev === null) {
          const all = logIndexPairs(entries[0]!);
          for (let e = 1; e < entries.length; e++)
            for (const [i, first] of logIndexPairs(entries[e]!)) all.set(i, first);
          next.set(n, all);
          continue;
        }
        const both = new Map<number, number>();
        for (const [i, first] of prev) if (entries.some((v) => logIndexHas(v, i))) both.set(i, first);
        if (both.size > 0) next.set(n, both);
      }
      set = next;
      if (set.size === 0) return [];
    }
    return [...(set ?? [])]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([n, only]) => ({ n, only }));
  }

  // =================================================================== EthChain: state

  private height(h: bigint): number {
    const n = Number(h);
    this.db.checkReadable(n);
    return n;
  }

  async getBalance(address: Hex, height: bigint): Promise<bigint> {
    const a = await this.db.account(toKey(fromHex(normAddress(address))), this.height(height));
    return a?.balance ?? 0n;
  }

  async getNonce(address: Hex, height: bigint | 'pending'): Promise<bigint> {
    const addr = toKey(fromHex(normAddress(address)));
    if (height === 'pending') {
      const st = await this.db.account(addr, this.db.latest);
      let n = this.pool.pendingNonce(addr, st?.nonce ?? 0n);
      for (const q of this.devQueue) if (q.d?.sender === addr && q.d.nonce >= n) n = q.d.nonce + 1n;
      return n;
    }
    const a = await this.db.account(addr, this.height(height));
    return a?.nonce ?? 0n;
  }

  async getCode(address: Hex, height: bigint): Promise<Hex> {
    const a = await this.db.account(toKey(fromHex(normAddress(address))), this.height(height));
    if (!a) return '0x';
    return toHex(await this.db.code(a.codeHash));
  }

  async getStorageAt(address: Hex, slot: Hex, height: bigint): Promise<Hex> {
    const s = toKey(padLeft(fromHex(slot), 32));
    if (s.length !== 64) throw new ChainError(-32602, `invalid storage slot ${slot}: more than 32 bytes`);
    const v = await this.db.storage(toKey(fromHex(normAddress(address))), s, this.height(height));
    return toHex(padLeft(v, 32));
  }

  async getProof(address: Hex, slots: Hex[], height: bigint): Promise<AccountProof> {
    const h = this.height(height);
    const b = await this.chain.block(BigInt(h));
    if (!b) throw new ChainError(-32000, `header for height ${h} not found`);
    const addr = toKey(fromHex(normAddress(address)));
    const accountTrie = this.db.trieAt(ACCOUNT_TRIE_OWNER, b.header.stateRoot, h);
    const accountProof = await accountTrie.prove(keccak256(fromHex(addr)));
    const a: AccountData = (await this.db.account(addr, h)) ?? newAccount();
    const storageTrie = this.db.trieAt(storageOwner(addr), a.storageRoot, h);
    const storageProof = [];
    for (const slot of slots) {
      const key = padLeft(fromHex(slot), 32);
      if (key.length !== 32) throw new ChainError(-32602, `invalid storage key ${slot}: more than 32 bytes`);
      const value = bytesToBigInt(await this.db.storage(addr, toKey(key), h));
      storageProof.push({
        key: slot,
        value,
        proof: (await storageTrie.prove(keccak256(key))).map(toHex),
      });
    }
    return {
      address: normAddress(address),
      accountProof: accountProof.map(toHex),
      balance: a.balance,
      codeHash: toHex(a.codeHash),
      nonce: a.nonce,
      storageHash: toHex(a.storageRoot),
      storageProof,
    };
  }

  // =================================================================== EthChain: calls

  /** A VM with its own state overlay, reused across calls (building an EVM costs about a ms). */
  private async borrowVm(height: number): Promise<PooledVm> {
    const source = this.stateSource(height);
    const pooled = this.vmPool.pop();
    if (pooled) {
      pooled.state.reset(source);
      return pooled;
    }
    const state = new JournaledState(source);
    return { state, vm: await makeVm(this.common, state, this.blockchain) };
  }

  private releaseVm(v: PooledVm): void {
    v.state.reset(EMPTY_SOURCE);
    // An aborted run (timeout) may leave EIP-1153 transient storage behind.
    (v.vm.evm as unknown as { transientStorage?: { clear(): void } }).transientStorage?.clear();
    if (this.vmPool.length < VM_POOL) this.vmPool.push(v);
  }

  private async applyOverrides(state: JournaledState, overrides: StateOverrides | undefined): Promise<void> {
    for (const [address, o] of Object.entries(overrides ?? {})) {
      const addr = toKey(fromHex(normAddress(address)));
      const cur = { ...((await state.readAccount(addr)) ?? newAccount()) };
      if (o.nonce !== undefined) cur.nonce = o.nonce;
      if (o.balance !== undefined) cur.balance = o.balance;
      state.accounts.set(addr, cur);
      if (o.code !== undefined) {
        await state.putCode(new Address(fromHex(addr)), fromHex(o.code));
      }
      if (o.state && o.stateDiff) {
        throw new ChainError(-32602, `account ${address} has both 'state' and 'stateDiff'`);
      }
      if (o.state) {
        state.storage.set(addr, new Map());
        state.cleared.add(addr);
      }
      for (const [slot, v] of Object.entries(o.state ?? o.stateDiff ?? {})) {
        state.writeSlot(addr, toKey(padLeft(fromHex(slot), 32)), padLeft(fromHex(v), 32));
      }
    }
  }

  private async blockContext(height: number): Promise<BlockContext> {
    const b = await this.chain.block(BigInt(height));
    if (!b) throw new ChainError(-32000, `header for height ${height} not found`);
    return {
      number: b.number,
      timestamp: b.header.timestamp,
      coinbase: b.header.coinbase,
      baseFee: b.header.baseFeePerGas,
      gasLimit: b.header.gasLimit,
      mixHash: b.header.mixHash,
    };
  }

  /** Gas for a call: the request's, else the cap, never above the per-transaction maximum. */
  private callGas(req: CallRequest, opts: CallOptions): bigint {
    let max = this.opts.gas.blockGasLimit;
    if (this.common.isActivatedEIP(7825) && max > 16_777_216n) max = 16_777_216n;
    if (opts.gasCap > 0n && opts.gasCap < max) max = opts.gasCap;
    return minBig(req.gas ?? max, max);
  }

  /**
   * Runs one call on a fresh state at `height` (geth's DoCall): no fee when no price is given
   * (then BASEFEE reads 0 as in geth), nonce and EOA checks skipped.
   */
  private async runCall(
    req: CallRequest,
    height: number,
    overrides: StateOverrides | undefined,
    gas: bigint,
    opts: { timeoutMs: number; tracer?: ReturnType<typeof makeTracer>; accessList?: AccessListEntry[] },
  ): Promise<CallOutcome & { accessList?: AccessListEntry[] }> {
    // Traced runs get a VM of their own (listeners attach to it); plain calls reuse pooled VMs.
    const v = opts.tracer
      ? await (async () => {
          const state = new JournaledState(this.stateSource(height));
          return { state, vm: await makeVm(this.common, state, this.blockchain) };
        })()
      : await this.borrowVm(height);
    try {
      await this.applyOverrides(v.state, overrides);
      return await this.runCallOn(v, req, height, gas, opts);
    } finally {
      if (!opts.tracer) this.releaseVm(v);
    }
  }

  private async runCallOn(
    { vm, state }: PooledVm,
    req: CallRequest,
    height: number,
    gas: bigint,
    opts: { timeoutMs: number; tracer?: ReturnType<typeof makeTracer>; accessList?: AccessListEntry[] },
  ): Promise<CallOutcome & { accessList?: AccessListEntry[] }> {
    const ctx = await this.blockContext(height);
    const from = req.from ? fromHex(normAddress(req.from)) : ZERO_ADDRESS;
    const fromKey = toKey(from);
    const priced = (req.gasPrice ?? 0n) > 0n || (req.maxFeePerGas ?? 0n) > 0n;
    if (priced && req.gasPrice !== undefined && req.maxFeePerGas !== undefined) {
      throw new ChainError(-32602, 'both gasPrice and (maxFeePerGas or maxPriorityFeePerGas) specified');
    }
    const feeCap = req.maxFeePerGas ?? req.gasPrice ?? 0n;
    if (priced && feeCap < ctx.baseFee) {
      throw new ChainError(
        -32000,
        `max fee per gas less than block base fee: address ${toHex(from)}, maxFeePerGas: ${feeCap}, baseFee: ${ctx.baseFee}`,
      );
    }
    const acct = (await state.readAccount(fromKey)) ?? newAccount();
    const value = req.value ?? 0n;
    const want = value + (priced ? gas * feeCap : 0n);
    if (acct.balance < want) {
      throw new ChainError(
        -32000,
        `insufficient funds for gas * price + value: address ${toHex(from)} have ${acct.balance} want ${want}`,
      );
    }
    const accessList = opts.accessList ?? req.accessList;
    // Most calls (no price, a target, no access list, no tracer) run as a bare message call;
    // the rest as an unsigned transaction through runTx.
    const plain = !priced && req.to != null && accessList === undefined && opts.tracer === undefined;
    const tx = plain
      ? undefined
      : makeCallTx(this.common, this.opts.evmChainId, {
          from,
          to: req.to ? fromHex(normAddress(req.to)) : null,
          gas,
          gasPrice: req.gasPrice,
          maxFeePerGas: req.maxFeePerGas,
          maxPriorityFeePerGas: req.maxPriorityFeePerGas,
          value,
          data: hexData(req.data),
          nonce: acct.nonce,
          accessList,
        });
    // geth skips the EOA check for calls: hide the sender's code from that one check only.
    if (tx && !equal(acct.codeHash, EMPTY_CODE_HASH)) state.hideSenderCode(fromKey, acct);
    let block =
      this.callBlock?.height === height && this.callBlock.priced === priced
        ? this.callBlock.block
        : undefined;
    if (!block) {
      block = makeBlock(this.common, Object.assign({}, ctx, { baseFee: priced ? ctx.baseFee : 0n }));
      this.callBlock = { height, priced, block };
    }
    const deadline = opts.timeoutMs > 0 ? Date.now() + opts.timeoutMs : 0;
    if (deadline > 0) {
      state.onAccess = () => {
        if (Date.now() > deadline) throw new TraceTimeoutError(opts.timeoutMs);
      };
    }
    const detach = opts.tracer?.attach(vm.evm as never, deadline);
    try {
      if (!tx) {
        return outcome(
          await runPlainCall(vm, {
            caller: new Address(from),
            to: new Address(fromHex(normAddress(req.to!))),
            data: hexData(req.data),
            value,
            gasLimit: gas,
            block,
          }),
        );
      }
      const res = await runTx(vm, {
        tx,
        block,
        skipNonce: true,
        skipBalance: true,
        skipHardForkValidation: true,
        skipBlockGasLimitValidation: true,
        reportAccessList: opts.accessList !== undefined,
      });
      const out = outcome(res);
      return { ...out, accessList: res.accessList as AccessListEntry[] | undefined };
    } catch (err) {
      if (err instanceof TraceTimeoutError || (err as Error).name === 'TraceTimeoutError') {
        throw new ChainError(-32000, `execution aborted (timeout = ${opts.timeoutMs / 1000}s)`);
      }
      if (err instanceof ChainError) throw err;
      const msg = (err as Error).message.replace(/ \(.*$/, '');
      if (tx && /INTRINSIC_GAS_TOO_LOW|lower than the minimum gas limit/.test(msg)) {
        const short = intrinsicShortfall(
          gas,
          tx.getIntrinsicGas(),
          getCalldataFloorGas(tx, new Address(from)),
        );
        throw new ChainError(-32000, short ?? msg);
      }
      throw new ChainError(-32000, msg);
    } finally {
      detach?.();
      state.onAccess = undefined;
    }
  }

  async call(
    req: CallRequest,
    height: bigint,
    overrides: StateOverrides | undefined,
    opts: CallOptions,
  ): Promise<CallResult> {
    const h = this.height(height);
    const out = await this.runCall(req, h, overrides, this.callGas(req, opts), { timeoutMs: opts.timeoutMs });
    return {
      returnData: toHex(out.returnData),
      gasUsed: out.gasUsed,
      ...(out.reverted ? { reverted: true } : {}),
      ...(out.error ? { error: out.error } : {}),
      logs: (out.result.execResult.logs ?? []).map(([a, t, d]) => ({
        address: toHex(a),
        topics: t.map(toHex),
        data: toHex(d),
      })),
    };
  }

  async estimateGas(
    req: CallRequest,
    height: bigint,
    overrides: StateOverrides | undefined,
    opts: CallOptions,
  ): Promise<bigint> {
    const h = this.height(height);
    const probe = await this.borrowVm(h);
    let balance: bigint;
    let toHasCode: boolean | undefined;
    try {
      await this.applyOverrides(probe.state, overrides);
      const from = req.from ? toKey(fromHex(normAddress(req.from))) : toKey(ZERO_ADDRESS);
      balance = (await probe.state.readAccount(from))?.balance ?? 0n;
      if (req.to !== undefined && req.to !== null) {
        const to = await probe.state.readAccount(toKey(fromHex(normAddress(req.to))));
        toHasCode = to !== undefined && !equal(to.codeHash, EMPTY_CODE_HASH);
      }
    } finally {
      this.releaseVm(probe);
    }
    return estimateGas({
      req,
      hi: this.callGas({ ...req, gas: req.gas }, opts),
      balance,
      toHasCode,
      run: (gas) => this.runCall({ ...req, gas }, h, overrides, gas, { timeoutMs: opts.timeoutMs }),
    });
  }

  async createAccessList(
    req: CallRequest,
    height: bigint,
    opts: CallOptions,
  ): Promise<{ accessList: AccessListEntry[]; gasUsed: bigint; error?: string }> {
    const h = this.height(height);
    const gas = this.callGas(req, opts);
    return runAccessList({
      req,
      run: (accessList) => this.runCall(req, h, undefined, gas, { timeoutMs: opts.timeoutMs, accessList }),
    });
  }

  // =================================================================== EthChain: fees

  nextBaseFee(): bigint {
    return this.baseFee;
  }

  /** The 60th percentile of the lowest tip of each of the last 20 blocks with transactions, at least 1 gwei. */
  suggestedTip(): bigint {
    if (this.recentTips.length === 0) return MIN_SUGGESTED_TIP;
    const sorted = [...this.recentTips].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const p60 = sorted[Math.floor(((sorted.length - 1) * 60) / 100)];
    return p60 > MIN_SUGGESTED_TIP ? p60 : MIN_SUGGESTED_TIP;
  }

  async feeHistory(
    blockCount: number,
    newest: bigint,
    rewardPercentiles: number[] | undefined,
  ): Promise<FeeHistory> {
    const latest = BigInt(this.db.latest);
    if (newest > latest) newest = latest;
    const count = BigInt(Math.max(0, Math.min(blockCount, Number(newest - BigInt(this.genesisHeight)) + 1)));
    const oldest = newest - count + 1n;
    const baseFeePerGas: bigint[] = [];
    const gasUsedRatio: number[] = [];
    const reward: bigint[][] = [];
    for (let n = oldest; n <= newest; n++) {
      const b = await this.chain.block(n);
      if (!b) break;
      baseFeePerGas.push(b.header.baseFeePerGas);
      gasUsedRatio.push(Number(b.header.gasUsed) / Number(b.header.gasLimit));
      if (rewardPercentiles) reward.push(await this.blockRewards(b, rewardPercentiles));
    }
    if (count > 0n) {
      const after =
        newest === latest ? this.baseFee : (await this.chain.block(newest + 1n))?.header.baseFeePerGas;
      baseFeePerGas.push(after ?? this.baseFee);
    }
    return {
      oldestBlock: count > 0n ? oldest : newest,
      baseFeePerGas,
      gasUsedRatio,
      ...(rewardPercentiles ? { reward } : {}),
    };
  }

  private async blockRewards(b: StoredBlock, percentiles: number[]): Promise<bigint[]> {
    const rs = await this.chain.receipts(b.number);
    if (rs.length === 0) return percentiles.map(() => 0n);
    const items = rs
      .map((r) => ({ tip: r.effectiveGasPrice - b.header.baseFeePerGas, gas: r.gasUsed }))
      .sort((x, y) => (x.tip < y.tip ? -1 : x.tip > y.tip ? 1 : 0));
    const total = b.header.gasUsed;
    const out: bigint[] = [];
    let i = 0;
    let sum = items[0].gas;
    for (const p of percentiles) {
      const threshold = (Number(total) * p) / 100;
      while (Number(sum) < threshold && i < items.length - 1) {
        i++;
        sum += items[i].gas;
      }
      out.push(items[i].tip);
    }
    return out;
  }

  // =================================================================== EthChain: mempool

  async sendRawTransaction(raw: Uint8Array, senderPublicKey?: Uint8Array): Promise<Hex> {
    try {
      const d = await this.admit(raw, true, true, senderPublicKey);
      return d.hashHex;
    } catch (err) {
      if (err instanceof TxRejectedError) {
        this.counts.refused++;
        throw new ChainError(-32000, err.message);
      }
      throw err;
    }
  }

  async txPool(): Promise<PendingTxSummary> {
    const { pending, queued } = this.pool.summary();
    const conv = (m: Map<string, Array<{ d: DecodedTx }>>) => {
      const out = new Map<Hex, Map<bigint, EthTx>>();
      for (const [sender, list] of m) {
        const inner = new Map<bigint, EthTx>();
        for (const e of list)
          inner.set(e.d.nonce, renderTx(e.d.raw, e.d.hashHex, `0x${sender}`, pendingPlacement));
        out.set(`0x${sender}`, inner);
      }
      return out;
    };
    return { pending: conv(pending), queued: conv(queued) };
  }

  /** The mempool's transactions as the cluster's Mempool contract carries them (raw, sender, hash). */
  pendingPool(): { pending: PoolTxRecord[]; queued: PoolTxRecord[] } {
    const { pending, queued } = this.pool.summary();
    const flat = (m: Map<string, Array<{ d: DecodedTx }>>) =>
      [...m.values()].flat().map((e) => poolTxOf(e.d));
    return { pending: flat(pending), queued: flat(queued) };
  }

  /** A transaction waiting in the mempool (or this node's dev queue), by hash. */
  pendingTx(hash: Hex): PoolTxRecord | undefined {
    const e = this.pool.get(hash.toLowerCase());
    if (e) return poolTxOf(e.d);
    const q = this.devQueue.find((x) => x.d?.hashHex === hash.toLowerCase());
    return q?.d ? poolTxOf(q.d) : undefined;
  }

  // =================================================================== EthChain: traces

  private async replayTo(n: bigint, until: number, tracer?: { index: number; cfg: TracerConfig }) {
    const b = await this.chain.block(n);
    if (!b || n > BigInt(this.db.latest)) throw new ChainError(-32000, `block #${n} not found`);
    if (n === BigInt(this.genesisHeight)) throw new ChainError(-32000, 'genesis is not traceable');
    const h = Number(n) - 1;
    this.db.checkReadable(h);
    const state = new JournaledState(this.stateSource(h));
    const vm = await makeVm(this.common, state, this.blockchain);
    const block = makeBlock(this.common, {
      number: b.number,
      timestamp: b.header.timestamp,
      coinbase: b.header.coinbase,
      baseFee: b.header.baseFeePerGas,
      gasLimit: b.header.gasLimit,
      mixHash: b.header.mixHash,
    });
    const txs = await this.chain.txs(n);
    const results: Array<{ txHash: Hex; result: unknown }> = [];
    let gasUsed = 0n;
    for (let i = 0; i <= until && i < txs.length; i++) {
      const d = decodeTx(txs[i].raw, this.common, this.opts.evmChainId);
      const trace = tracer && (tracer.index < 0 || tracer.index === i);
      const t = trace ? makeTracer(tracer!.cfg, d.gasLimit) : undefined;
      const timeout = tracer?.cfg.timeoutMs ?? 0;
      const detach = t?.attach(vm.evm as never, timeout > 0 ? Date.now() + timeout : 0);
      try {
        const res = await runTx(vm, { tx: d.tx, block, skipHardForkValidation: true, blockGasUsed: gasUsed });
        gasUsed += res.totalGasSpent;
        if (t) {
          const o = outcome(res);
          results.push({
            txHash: d.hashHex,
            result: t.result(res.totalGasSpent, o.reverted || o.error !== undefined, o.returnData, o.error),
          });
        }
      } catch (err) {
        if ((err as Error).name === 'TraceTimeoutError') {
          throw new ChainError(-32000, `execution timeout: tracing exceeded ${timeout / 1000}s`);
        }
        throw err;
      } finally {
        detach?.();
      }
    }
    return results;
  }

  async traceTransaction(hash: Hex, config: TracerConfig): Promise<unknown> {
    const loc = await this.chain.txLocation(fromHex(hash));
    if (!loc || loc.number > BigInt(this.db.latest))
      throw new ChainError(-32000, `transaction ${hash} not found`);
    const r = await this.replayTo(loc.number, loc.index, { index: loc.index, cfg: config });
    return r[r.length - 1]?.result;
  }

  async traceBlock(n: bigint, config: TracerConfig): Promise<Array<{ txHash: Hex; result: unknown }>> {
    return this.replayTo(n, Number.MAX_SAFE_INTEGER, { index: -1, cfg: config });
  }

  async traceCall(req: CallRequest, height: bigint, config: TracerConfig): Promise<unknown> {
    const h = this.height(height);
    const gas = this.callGas(req, { gasCap: 0n, timeoutMs: 0 });
    const tracer = makeTracer(config, gas);
    const out = await this.runCall(req, h, undefined, gas, { timeoutMs: config.timeoutMs ?? 0, tracer });
    return tracer.result(out.gasUsed, out.reverted || out.error !== undefined, out.returnData, out.error);
  }
}

const pendingPlacement = { blockHash: null, blockNumber: null, transactionIndex: null, baseFee: null };

/** A mempool transaction as it leaves the executor (the cluster's Mempool contract). */
export interface PoolTxRecord {
  raw: Uint8Array;
  /** 20 bytes. */
  sender: Uint8Array;
  /** 32 bytes. */
  hash: Uint8Array;
  nonce: bigint;
}

function poolTxOf(d: DecodedTx): PoolTxRecord {
  return { raw: d.raw, sender: fromHex(d.sender), hash: d.hash, nonce: d.nonce };
}

/** A waiting transaction as eth_getTransactionByHash and txpool_content render it (no block yet). */
export function renderPendingTx(t: PoolTxRecord): EthTx {
  return renderTx(t.raw, toHex(t.hash), toHex(t.sender), pendingPlacement);
}

function receiptBloom(r: StoredReceipt): Uint8Array {
  if (r.bloom !== undefined) return r.bloom;
  const bloom = new Uint8Array(256);
  for (const l of r.logs) {
    bloomAdd(bloom, l.address);
    for (const t of l.topics) bloomAdd(bloom, t);
  }
  return bloom;
}

/** Blocks whose transaction positions the executor keeps in memory for receipt polls (minedLocation). */
const RECENT_LOCATION_BLOCKS = 4;

/** The pool account's code: PUSH1 0 PUSH1 0 REVERT (see genesisPoolAccount). */
const POOL_ACCOUNT_CODE = Uint8Array.of(0x60, 0x00, 0x60, 0x00, 0xfd);

/**
 * The validator pool's genesis account from app_state.staking (checked again here against the
 * consensus validators of InitChain): params and bonds in its storage, the bonds as its balance,
 * nonce 1 so that the account is never "empty" (EIP-161 would delete it with its storage).
 */

async function genesisPoolAccount(req: InitChainRequest): Promise<GenesisAccount | undefined> {
  const staking = (req.appState as { staking?: unknown } | null)?.staking;
  if (staking === undefined) return undefined;
  const consensus = new Map<string, { index: number; power: bigint }>();
  for (const [index, v] of req.validators.entries())
    consensus.set(Buffer.from(v.pubKey).toString('base64'), { index, power: v.votingPower });
  const problems: string[] = [];
  validateStakingGenesis(staking, consensus, (key, message) => problems.push(`${key}: ${message}`));
  if (problems.length > 0) throw new ExecutionError('BAD_GENESIS', `genesis.json:${problems.join('; ')}`);
  const g = toStakingGenesis(staking as StakingGenesisJson);
  const { slots, balance } = await genesisPoolStorage(
    g.params,
    g.validators.map((v) => ({ ...v, operator: fromHex(v.operator) })),
  );
  const data = newAccount();
  data.balance = balance;
  data.nonce = 1n;
  // Code that only reverts, as chains with stateful precompiles do: Solidity checks that a callee
  // has code before a call through an interface; the EVM runs the precompile, never this code.
  const code = POOL_ACCOUNT_CODE;
  data.codeHash = keccak256(code);
  return { addr: STAKING_KEY, data, code, storage: slots };
}

/**
 * The reward account 0x7b7c…0016 at genesis (a chain with a validator pool): app_state.rewards'
 * params (or the defaults) in its storage, nothing locked, nonce 1 and the reverting marker code
 * as the pool's.
 */
function genesisRewardAccount(req: InitChainRequest): GenesisAccount {
  const rewards = (req.appState as { rewards?: unknown } | null)?.rewards;
  if (rewards !== undefined) {
    const problems: string[] = [];
    validateRewardsGenesis(rewards, true, (key, message) => problems.push(`${key}: ${message}`));
    if (problems.length > 0) throw new ExecutionError('BAD_GENESIS', `genesis.json:${problems.join('; ')}`);
  }
  const data = newAccount();
  data.nonce = 1n;
  data.codeHash = keccak256(POOL_ACCOUNT_CODE);
  const staking = toStakingGenesis((req.appState as { staking: StakingGenesisJson }).staking);
  const power = staking.validators.reduce((t, v) => t + v.selfBond / staking.params.powerReduction, 0n);
  const storage = genesisRewardStorage(rewardsParamsOf(rewards as RewardsGenesisJson | undefined), power);
  return { addr: REWARD_KEY, data, code: POOL_ACCOUNT_CODE, storage };
}

/**
 * The reward account created at app_state.rewards.upgrade_height on a chain whose state has none:
 * the same storage genesis would have written (the params, the total power handed to consensus),
 * nonce 1 and the marker code. Its balance is kept (0 unless something was sent there before).
 */
async function createRewardAccount(
  state: JournaledState,
  p: { validatorShare: bigint; blockReward: bigint },
): Promise<void> {
  const staking = new StakingStore(state);
  let power = 0n;
  for (const op of await staking.operators()) power += await staking.lastPower(op);
  for (const [slot, value] of genesisRewardStorage(p, power)) state.writeSlot(REWARD_KEY, slot, value);
  const address = new Address(fromHex(REWARD_ADDRESS_HEX));
  await state.putCode(address, POOL_ACCOUNT_CODE);
  await state.modifyAccountFields(address, { nonce: 1n });
}

interface GenesisAccount {
  addr: string;
  data: AccountData;
  code?: Uint8Array;
  storage: Map<string, Uint8Array>;
}

function parseGenesisAccounts(appState: unknown, evmChainId: bigint): GenesisAccount[] {
  const fail = (why: string): never => {
    throw new ExecutionError('BAD_GENESIS', `genesis.json:app_state.evm: ${why}`);
  };
  const evm = (appState as { evm?: { chain_id?: unknown; accounts?: unknown } } | null)?.evm;
  if (!evm || typeof evm !== 'object') return fail('missing (want {"chain_id": "...", "accounts": [...]})');
  if (evm.chain_id !== undefined && String(evm.chain_id) !== evmChainId.toString()) {
    fail(`chain_id ${JSON.stringify(evm.chain_id)} does not match the node's EVM chain id ${evmChainId}`);
  }
  const list = evm.accounts ?? [];
  if (!Array.isArray(list)) return fail('accounts must be an array');
  const seen = new Set<string>();
  const out: GenesisAccount[] = [];
  list.forEach((raw: Record<string, unknown>, i: number) => {
    const where = `accounts[${i}]`;
    if (typeof raw?.address !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(raw.address)) {
      fail(`${where}.address ${JSON.stringify(raw?.address)} is not a 0x-prefixed 20-byte hex address`);
    }
    const addr = (raw.address as string).slice(2).toLowerCase();
    if (seen.has(addr)) fail(`${where}.address 0x${addr} appears twice`);
    if (addr === toKey(BTC_TOKEN_ADDRESS)) {
      fail(`${where}.address 0x${addr} is reserved for the BTC token precompile (docs/btc-token.md)`);
    }
    if (addr === toKey(BRIDGE_OUT_ADDRESS)) {
      fail(`${where}.address 0x${addr} is reserved for the bridge-out precompile (docs/bridge.md)`);
    }
    seen.add(addr);
    const int = (v: unknown, field: string): bigint => {
      if (v === undefined) return 0n;
      if (typeof v !== 'string' || !/^(0|[1-9][0-9]*)$/.test(v)) {
        return fail(`${where}.${field} ${JSON.stringify(v)} must be a decimal integer string`);
      }
      return BigInt(v);
    };
    const data = newAccount();
    data.balance = int(raw.balance, 'balance');
    data.nonce = int(raw.nonce, 'nonce');
    let code: Uint8Array | undefined;
    if (raw.code !== undefined) {
      if (typeof raw.code !== 'string' || !/^0x([0-9a-fA-F]{2})*$/.test(raw.code)) {
        fail(`${where}.code must be 0x-prefixed hex bytes`);
      }
      code = fromHex(raw.code as string);
      if (code.length > 0) data.codeHash = keccak256(code);
    }
    const storage = new Map<string, Uint8Array>();
    if (raw.storage !== undefined) {
      if (typeof raw.storage !== 'object' || raw.storage === null) fail(`${where}.storage must be an object`);
      for (const [k, v] of Object.entries(raw.storage as Record<string, unknown>)) {
        if (!/^0x[0-9a-fA-F]{1,64}$/.test(k))
          fail(`${where}.storage key ${JSON.stringify(k)} is not a 32-byte hex slot`);
        if (typeof v !== 'string' || !/^0x[0-9a-fA-F]{0,64}$/.test(v)) {
          fail(`${where}.storage[${k}] ${JSON.stringify(v)} is not a 32-byte hex value`);
        }
        const val = fromHex(v as string);
        let i0 = 0;
        while (i0 < val.length && val[i0] === 0) i0++;
        storage.set(toKey(padLeft(fromHex(k), 32)), val.slice(i0));
      }
    }
    out.push({ addr, data, code, storage });
  });
  return out;
}

/** Every account a block changed, with its balance and nonce after the block (EthNewHead.accounts). */
function headAccounts(built: BuiltState): HeadAccount[] {
  const out: HeadAccount[] = [];
  for (const c of built.changes) {
    if (c.table !== 'account') continue;
    const a = c.value === undefined ? undefined : decodeAccount(c.value);
    out.push({ address: `0x${c.k}`, balance: a?.balance ?? 0n, nonce: a?.nonce ?? 0n });
  }
  return out;
}

/** The genesis height's outbox record: the genesis block and every account, slot and code it writes. */
function genesisRecord(
  chainId: string,
  height: number,
  block: StoredBlock,
  ops: BatchOp[],
  appHash: Uint8Array,
): CommittedRecord {
  const stateChanges: CommittedRecord['stateChanges'] = [];
  const codes: CommittedRecord['codes'] = [];
  for (const op of ops) {
    if (op.type !== 'put') continue;
    const prefix = op.key[0];
    if (prefix === P.account) stateChanges.push({ kind: 'account', key: op.key.slice(1), value: op.value });
    else if (prefix === P.storage)
      stateChanges.push({ kind: 'storage', key: op.key.slice(1), value: op.value });
    else if (prefix === P.code) codes.push({ codeHash: op.key.slice(1), code: op.value });
  }
  return {
    chainId,
    height,
    blockHash: block.hash,
    parentHash: block.header.parentHash,
    headerRlp: block.headerEnc,
    blockSize: block.size,
    appHash,
    txs: [],
    receipts: [],
    stateChanges,
    codes,
    kvOps: [],
  };
}

/** A write batch as a CommittedRecord carries it (a deletion has no value). */
function kvOpsOf(ops: BatchOp[]): CommittedRecord['kvOps'] {
  return ops.map((op) => ({ key: op.key, value: op.type === 'put' ? op.value : undefined }));
}

/** The BTC token precompile's account at genesis: its marker code and the supply in slot 0. */
function btcTokenGenesisAccount(supply: bigint): GenesisAccount {
  const data = newAccount();
  data.codeHash = keccak256(BTC_TOKEN_CODE);
  const storage = new Map<string, Uint8Array>();
  if (supply > 0n) storage.set(SUPPLY_SLOT, stripZeros(uintWord(supply)));
  return { addr: toKey(BTC_TOKEN_ADDRESS), data, code: BTC_TOKEN_CODE, storage };
}

/** The bridge-out precompile's account at genesis: marker code and app_state.bridge's parameters. */
function bridgeOutGenesisAccount(params: BridgeParams | undefined): GenesisAccount {
  const data = newAccount();
  data.codeHash = keccak256(BRIDGE_OUT_CODE);
  const storage = bridgeOutGenesisStorage(params);
  return { addr: toKey(BRIDGE_OUT_ADDRESS), data, code: BRIDGE_OUT_CODE, storage };
}
