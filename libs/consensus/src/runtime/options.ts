// Options of the live consensus runtime and the ports it drives.
import type { KVStore } from '@noded/storage';
import type {
  Application,
  Block,
  Commit,
  ConsensusParams,
  EventBus,
  Logger,
  TimeNs,
  Validator,
} from '@noded/types';
import type { Verifier } from '../block.js';
import type { step } from '../engine/engine.js';
import type { ConsensusMessage, TimeoutConfig } from '../engine/types.js';
import type { DurableFs } from '../fs.js';

/** How consensus messages reach other validators (libp2p later; the simulator's network in tests). */
export interface ConsensusNetwork {
  broadcast(message: ConsensusMessage): void;
  send(peer: string, message: ConsensusMessage): void;
  /** Registers the receiver of incoming messages; returns a function that unregisters it. */
  subscribe(handler: (peer: string, message: ConsensusMessage) => void): () => void;
  /** A peer sent a message no honest peer sends (forged signature, ...); the network may drop it. */
  report?(peer: string, reason: string): void;
}

/**
 * Block sync's own protocol (`/noded/blocksync/1`): a peer's stored range (status), and committed
 * blocks asked for by height, each from one peer, with their commit (and extended commit where
 * vote extensions are on). CometBFT's blocksync reactor messages.
 */
export type BlockSyncMessage =
  | { kind: 'statusRequest' }
  /** `maxRange`: the most heights the sender answers in one block request (absent: 1, a peer without ranges). */
  | { kind: 'status'; base: number; height: number; maxRange?: number }
  /** `count`: consecutive heights from `height` (absent: 1); each is answered by a block or a "no block". */
  | { kind: 'blockRequest'; height: number; count?: number }
  | { kind: 'noBlock'; height: number }
  | { kind: 'block'; block: Block; commit: Commit; extendedCommit?: Commit };

/** How block sync reaches peers (a P2PHost channel in the node; in-memory in tests). */
export interface BlockSyncNetwork {
  broadcast(message: BlockSyncMessage): void;
  send(peer: string, message: BlockSyncMessage): void;
  /** Registers the receiver of incoming messages and of peers going away; returns an unsubscribe. */
  subscribe(
    handler: (peer: string, message: BlockSyncMessage) => void,
    peerDown: (peer: string) => void,
  ): () => void;
  /** The peer sent a block that does not verify: it is disconnected. */
  report(peer: string, reason: string): void;
}

/** Timers; the default uses setTimeout, the simulator a virtual clock. */
export interface Scheduler {
  setTimer(ms: number, fn: () => void): unknown;
  clearTimer(handle: unknown): void;
}

export const realScheduler: Scheduler = {
  setTimer: (ms, fn) => setTimeout(fn, ms),
  clearTimer: (h) => clearTimeout(h as NodeJS.Timeout),
};

export const systemNow = (): TimeNs => BigInt(Date.now()) * 1_000_000n;

export interface ConsensusGenesis {
  time: TimeNs;
  initialHeight: number;
  validators: Validator[];
  consensusParams: ConsensusParams;
  appState: unknown;
}

export type PrivValidatorSource =
  /** CometBFT files: config/priv_validator_key.json and data/priv_validator_state.json. */
  | { keyFile: string; stateFile: string }
  /** A key already in memory (simulator, tests) with its state file. */
  | { key: { seed: Uint8Array; publicKey: Uint8Array }; stateFile: string };

export interface ConsensusRuntimeOptions {
  chainId: string;
  genesis: ConsensusGenesis;
  /** config.toml [consensus] timeouts in milliseconds. */
  timeouts: TimeoutConfig;
  createEmptyBlocks: boolean;
  /**
   * config.toml [consensus] create_empty_blocks_interval in ms. Above 0 the node waits for
   * transactions (then proposes at once) or this long (then makes an empty block), as CometBFT.
   */
  createEmptyBlocksIntervalMs?: number;
  /**
   * Send each height's light block (its header, the commit that decided it, its validator set) to
   * the application in FinalizeBlockRequest.lightBlock: the cluster's consensus service sets it, so
   * that the executor puts it on the stream and every state-store checks the commit of each height
   * it applies. Off in the all-in-one node (its application has no use for it).
   */
  lightBlocks?: boolean;
  /**
   * config.toml [consensus] skip_timeout_commit: once every validator's precommit for the last block
   * is in, the next height starts without waiting timeout_commit (CometBFT's rule).
   */
  skipTimeoutCommit?: boolean;
  /**
   * Allow the dev chain's mining and time controls (mine, automine, interval, time offset); they
   * also need this node to be the only validator. The node sets it on chain-local.
   */
  devControls?: boolean;
  /** config.toml [consensus] double_sign_check_height; 0 disables the check. */
  doubleSignCheckHeight: number;
  privValidator: PrivValidatorSource | null;
  /** Directory of the consensus WAL (<home>/data/cs.wal). */
  walDir: string;
  blockStore: KVStore;
  stateStore: KVStore;
  app: Application;
  bus: EventBus;
  logger: Logger;
  /** Other validators; none means a single-node network. */
  network?: ConsensusNetwork;
  /**
   * Block sync over its own protocol, from several peers at once. Without it, a behind node is sent
   * committed blocks on the consensus network (the simulator's way).
   */
  blockSync?: BlockSyncNetwork;
  /** Block sync: blocks asked of one peer at a time (default 32). */
  blockSyncWindow?: number;
  /** Block sync: how long a requested block may take before it is asked of another peer (ms, default 10000). */
  blockSyncTimeoutMs?: number;
  /**
   * Block sync: check the commit signatures of blocks received ahead on a worker thread while the
   * blocks before them are applied (default true; ignored with a custom `verify`, which the engine
   * calls inline). The engine's checks and refusals are the same either way.
   */
  blockSyncVerifyThread?: boolean;
  /**
   * Block sync: while catching up, the most blocks applied between two sync points (default 100).
   * At a sync point the block store is fsynced, then the state store's writes held since the last
   * one, then the application's held commits are written (docs/p2p.md "Batched durability while
   * behind"), so a crash at any point leaves the state and the application behind the block store
   * on disk, never ahead. Behind an application without flushHeld() every block is a sync point.
   */
  catchupSyncBlocks?: number;
  now?: () => TimeNs;

  // Advanced: the simulator and tests replace these.
  scheduler?: Scheduler;
  /** File system of the WAL and the double-sign guard (default: the real disk). */
  fs?: DurableFs;
  verify?: Verifier;
  /** How often own messages and the status are re-sent to peers (default 1000 ms). */
  gossipIntervalMs?: number;
  /** How many committed heights are sent ahead of a behind peer (default 32, fewer past 4 MiB of blocks). */
  catchupBatch?: number;
  walRotateBytes?: number;
  /** Called once when the runtime stops on an unrecoverable error (I/O, application failure). */
  onFatal?: (err: Error) => void;
  /** Test hook: a replacement for the engine's step function (e.g. a deliberately broken one). */
  engineStep?: typeof step;
}
