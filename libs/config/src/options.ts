// Mappers from the parsed files to the option records each lib takes (camelCase of the keys,
// durations in ms, integer strings as bigint).
import type { TimeoutConfig } from '@noded/consensus';
import type { ExecutorOptions, GasOptions, MempoolOptions } from '@noded/execution';
import type { ApiOptions, CometRpcOptions, EthRpcOptions } from '@noded/rpc';
import type { InstrumentationOptions } from '@noded/telemetry';
import type { RuntimeGenesis } from './genesis.js';
import type { AppToml } from './schema/app-toml.js';
import type { ConfigToml } from './schema/config-toml.js';

// The option records of the servers are owned by their libs (STYLE: each lib owns its section);
// this module only maps the parsed files onto them.
export type { ApiOptions, CometRpcOptions, EthRpcOptions } from '@noded/rpc';
export type { InstrumentationOptions } from '@noded/telemetry';

/**
 * What execution takes from config.toml [mempool] and app.toml (pruning, [evm], [evm.gas],
 * [evm.rpc]); the fields match libs/execution's ExecutorOptions so the node can spread them in.
 */
export interface ExecutorSettings {
  /** "archive" keeps all state (app.toml mode "archive" or pruning "nothing"); "full" prunes. */
  mode: 'full' | 'archive';
  /** pruning_keep_recent: heights of state kept in full mode. */
  keepRecent: number;
  /** [evm.gas]: the fee market. */
  gas: GasOptions;
  mempool: MempoolOptions & { cacheSize: number };
  /** [evm.rpc] allow_unprotected_txs. */
  allowUnprotectedTxs: boolean;
  /** [evm.rpc] txfee_cap in base units; 0n = no cap. */
  txFeeCap: bigint;
  /** [evm] min/max_gas_price: the gas prices this node admits into its mempool. */
  txMinGasPrice: bigint;
  txMaxGasPrice: bigint;
}

/** [consensus], shaped like libs/consensus's ConsensusRuntimeOptions (timeouts in ms). */
export interface ConsensusTimeouts {
  timeouts: TimeoutConfig;
  createEmptyBlocks: boolean;
  createEmptyBlocksIntervalMs: number;
  skipTimeoutCommit: boolean;
  doubleSignCheckHeight: number;
}

export function toEthRpcOptions(app: AppToml): EthRpcOptions {
  return {
    ...app.evm.rpc,
    apis: [...app.evm.rpc.apis],
    corsAllowedOrigins: [...app.evm.rpc.corsAllowedOrigins],
  };
}

export function toCometRpcOptions(config: ConfigToml): CometRpcOptions {
  return {
    ...config.rpc,
    laddr: config.rpc.laddr.raw,
    corsAllowedOrigins: [...config.rpc.corsAllowedOrigins],
  };
}

export function toApiOptions(app: AppToml): ApiOptions {
  return { ...app.api, address: app.api.address.raw };
}

export function toInstrumentationOptions(config: ConfigToml): InstrumentationOptions {
  return { ...config.instrumentation, prometheusListenAddr: config.instrumentation.prometheusListenAddr.raw };
}

/** `mode` is the mode the node runs in (`start --mode`), default from app.toml. */
export function toExecutorSettings(
  config: ConfigToml,
  app: AppToml,
  mode?: 'full' | 'archive',
): ExecutorSettings {
  const g = app.evm.gas;
  return {
    mode: mode ?? (app.mode === 'archive' || app.pruning === 'nothing' ? 'archive' : 'full'),
    keepRecent: Number(app.pruningKeepRecent),
    gas: {
      baseFee: g.baseFee,
      minGasPrice: g.minGasPrice,
      maxGasPrice: g.maxGasPrice,
      gasTarget: g.gasTarget,
      blockGasLimit: g.blockGasLimit,
    },
    mempool: { ...config.mempool },
    allowUnprotectedTxs: app.evm.rpc.allowUnprotectedTxs,
    txFeeCap: app.evm.rpc.txFeeCap,
    txMinGasPrice: app.evm.minGasPrice,
    txMaxGasPrice: app.evm.maxGasPrice,
  };
}

/** What every executor of a home is opened with, whoever opens it (see executorOpenOptions). */
export type ExecutorOpenOptions = Pick<
  ExecutorOptions,
  | 'chainId'
  | 'evmChainId'
  | 'mode'
  | 'keepRecent'
  | 'gas'
  | 'mempool'
  | 'allowUnprotectedTxs'
  | 'txFeeCap'
  | 'rewardsUpgrade'
>;

/**
 * The options the all-in-one node, the executor service and the state-store's read view open their
 * Executor with: the chain's ids, the settings from the home's files and genesis's fee-split
 * switch. One function, so the three cannot drift apart (a view opened without an option the
 * writer has would answer reads differently).
 */
export function executorOpenOptions(genesis: RuntimeGenesis, x: ExecutorSettings): ExecutorOpenOptions {
  return {
    chainId: genesis.chainId,
    evmChainId: genesis.evmChainId,
    mode: x.mode,
    keepRecent: x.keepRecent,
    gas: x.gas,
    mempool: x.mempool,
    allowUnprotectedTxs: x.allowUnprotectedTxs,
    txFeeCap: x.txFeeCap,
    // app_state.rewards.upgrade_height: the height the fee split starts at (docs/staking.md).
    ...(genesis.rewards && genesis.rewardsUpgradeHeight !== undefined
      ? { rewardsUpgrade: { height: genesis.rewardsUpgradeHeight, ...genesis.rewards } }
      : {}),
  };
}

export function toConsensusTimeouts(config: ConfigToml): ConsensusTimeouts {
  const c = config.consensus;
  return {
    timeouts: {
      propose: c.timeoutProposeMs,
      proposeDelta: c.timeoutProposeDeltaMs,
      prevote: c.timeoutPrevoteMs,
      prevoteDelta: c.timeoutPrevoteDeltaMs,
      precommit: c.timeoutPrecommitMs,
      precommitDelta: c.timeoutPrecommitDeltaMs,
      commit: c.timeoutCommitMs,
    },
    createEmptyBlocks: c.createEmptyBlocks,
    createEmptyBlocksIntervalMs: c.createEmptyBlocksIntervalMs,
    skipTimeoutCommit: c.skipTimeoutCommit,
    doubleSignCheckHeight: c.doubleSignCheckHeight,
  };
}
