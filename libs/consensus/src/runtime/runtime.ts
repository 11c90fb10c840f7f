// The live consensus runtime: drives the pure engine with real (or simulated) timers, the WAL,
// the double-sign guard, the block and state stores, the application and the network.
//
// One serial queue owns the engine: every input (timeout, network message, gossip tick, RPC call)
// is processed to completion, including the effects it causes and their answers, before the next
// one. Effects run in the order the engine emitted them, so an own vote is in the WAL (fsynced)
// before it is broadcast. A decided block is stored with its commit (synced) and an end-height
// marker written to the WAL before the application sees it; then finalizeBlock, the block results
// are saved, commit, the new state is saved, and NewBlock / Tx / ValidatorSetUpdates are published.
import { AsyncResource } from 'node:async_hooks';
import { ed25519Verify } from '@noded/crypto';
import { HoldingKV } from '@noded/storage';
import type {
  Block,
  BlockId,
  BlockMeta,
  Commit,
  ConsensusParams,
  DuplicateVoteEvidence,
  FinalizeBlockResponse,
  Logger,
  RoundStateSummary,
  StoredBlockResults,
  SyncInfo,
  TimeNs,
  Validator,
  Vote,
} from '@noded/types';
import { evidenceBytes, lastCommitInfo, maxDataBytes, proposerPicksTime } from '../block.js';
import { type ChainState, genesisChainState, nextChainState } from '../chainstate.js';
import { MAX_BLOCK_RANGE } from '../codec/blocksync.js';
import {
  createEngine,
  step as engineStep,
  gossipMessages,
  messagesForPeer,
  proposerOf,
  statusMessage,
} from '../engine/engine.js';
import type { ConsensusMessage, EngineEffect, EngineEvent, EngineState } from '../engine/types.js';
import { ConsensusError, DoubleSignError, HandshakeError } from '../errors.js';
import { type DurableFs, NodeFs } from '../fs.js';
import { blockIdKey, blockIdOf, bytesEqual, hex, hexUpper } from '../hash.js';
import { encodeLightBlock } from '../light/codec.js';
import { FilePV } from '../privval.js';
import { MAX_VOTE_EXTENSION_BYTES, voteExtensionProblem, voteExtensionsEnabled } from '../voteset.js';
import { Wal } from '../wal.js';
import { BlockPool } from './blockpool.js';
import { type CommitCheck, CommitVerifier } from './commit-verifier.js';
import { EvidencePool } from './evidencepool.js';
import {
  type BlockSyncMessage,
  type ConsensusNetwork,
  type ConsensusRuntimeOptions,
  realScheduler,
  type Scheduler,
  systemNow,
} from './options.js';
import { type RollbackTarget, rollbackConsensusStores, writeRollbackIntent } from './rollback.js';
import { BlockStore, StateStore } from './stores.js';

type Input =
  | { kind: 'engine'; event: EngineEvent }
  | { kind: 'net'; peer: string; message: ConsensusMessage }
  | { kind: 'blockSync'; peer: string; message: BlockSyncMessage }
  | { kind: 'blockSyncDown'; peer: string }
  | { kind: 'blockSyncTick' }
  | { kind: 'blockSyncVerified' }
  | { kind: 'gossip' }
  | { kind: 'call'; fn: () => Promise<void> };

/** What evm_snapshot keeps (devSnapshot) and evm_revert brings back (devRewind). */
export interface DevSnapshot<A> {
  target: RollbackTarget<A>;
  clockOffsetNs: bigint;
  nextBlockTimeNs: bigint | null;
  timeMoved: boolean;
}

interface BlockRef {
  hash: Uint8Array;
  appHash: Uint8Array;
  height: number;
  time: TimeNs;
}

/** Block sync: heights sent ahead of a behind peer (catchupBatch), and at most about this many bytes at once. */
const CATCHUP_WINDOW = 32;
const CATCHUP_WINDOW_BYTES = 4 * 1024 * 1024;
/** Block sync protocol: how often requests are checked for timeouts and refilled, and statuses asked (ms). */
const BLOCK_SYNC_TICK_MS = 100;
const BLOCK_SYNC_STATUS_MS = 1000;
/**
 * Block sync's batched durability while catching up: the longest a block applied without fsync
 * waits for a sync point (ms; the timer's sync point), and the most blocks, or transaction bytes,
 * applied between two sync points (the count's sync point, inline).
 */
const UNPUBLISHED_FLUSH_MS = 250;
const CATCHUP_SYNC_BLOCKS = 100;
const CATCHUP_SYNC_TX_BYTES = 8 * 1024 * 1024;
/** Block sync: the answers to one range request are sent in groups of about this many bytes. */
const RANGE_SEND_BYTES = 256 * 1024;

interface SyncStats {
  since: number;
  lastEnd: number;
  blocks: number;
  txs: number;
  totalMs: number;
  verifyMs: number;
  executeMs: number;
  commitMs: number;
  storeMs: number;
  publishMs: number;
  waitMs: number;
  /** Times the applier stopped with the next block there but its commit still on the thread. */
  verdictWaits: number;
}

function newSyncStats(since: number): SyncStats {
  return {
    since,
    lastEnd: 0,
    blocks: 0,
    txs: 0,
    totalMs: 0,
    verifyMs: 0,
    executeMs: 0,
    commitMs: 0,
    storeMs: 0,
    publishMs: 0,
    waitMs: 0,
    verdictWaits: 0,
  };
}

function fingerprint(b: Uint8Array): string {
  return hexUpper(b.subarray(0, 6)).padEnd(12, '0');
}

/** CometBFT's Vote.String(), used by the round state dump. */
function voteString(v: Vote): string {
  const type = v.type === 1 ? 'SIGNED_MSG_TYPE_PREVOTE(Prevote)' : 'SIGNED_MSG_TYPE_PRECOMMIT(Precommit)';
  const time = new Date(Number(v.timestamp / 1_000_000n)).toISOString();
  return `Vote{${v.validatorIndex}:${fingerprint(v.validatorAddress)} ${v.height}/${String(v.round).padStart(2, '0')}/${type} ${fingerprint(v.blockId.hash)} ${fingerprint(v.signature)} 000000000000 @ ${time}}`;
}

export class ConsensusRuntime {
  private engine!: EngineState;
  private chain!: ChainState;
  private readonly queue: Input[] = [];
  private draining: Promise<void> | null = null;
  /**
   * The async context the runtime was created in. Its work (the queue's drain and every timer it
   * arms) runs there, never in the context of whichever caller's input started a drain: a traced
   * broadcast_tx_sync that wakes the runtime must not become the parent of the block it causes.
   */
  private readonly home = new AsyncResource('noded.consensus.runtime');
  private replaying = false;
  private started = false;
  private stopped = false;
  private fatalError: Error | null = null;
  private readonly timers = new Set<unknown>();
  private wal: Wal | null = null;
  /** stop() closed the WAL and the file system. */
  private released = false;
  private unsubscribe: (() => void) | null = null;
  private readonly lastCatchup = new Map<string, number>();
  /** The peer whose message is being processed (engine rejections are reported against it). */
  private sender: string | null = null;
  /** Block sync: the last height sent to each behind peer, and in which gossip tick. */
  private readonly catchupSent = new Map<string, { tick: number; upTo: number }>();
  /** Block sync: sizes of recently sent blocks by height (the window's byte cap). */
  private readonly blockSizes = new Map<number, number>();
  /** The height each peer last reported in its status, and when (ms). */
  private readonly peerHeights = new Map<string, { height: number; at: number }>();
  private gossipTick = 0;
  /** Block sync: where a catching-up node's time went since its last `block sync progress` line. */
  private sync = newSyncStats(0);
  /** A synced block is being applied: the engine's signature checks count as block sync's verify. */
  private syncing = false;
  /** Block sync protocol: the request scheduler (null without opts.blockSync). */
  private blockPool: BlockPool | null = null;
  /**
   * Block sync: the commits of blocks received ahead, checked on a worker thread (null: checked
   * inline by the engine, as with a custom verifier or `blockSyncVerifyThread: false`).
   */
  private commitVerifier: CommitVerifier | null = null;
  /** A block from the block sync protocol is being applied: the engine's rejection is recorded here. */
  private blockSyncRejection: string | null = null;
  private applyingFromBlockSync = false;
  private lastBlockSyncStatus = 0;
  /**
   * Block sync's fast path: the blocks applied since the last sync point, whose block store,
   * results and state writes are not on disk yet, in height order. Their events (NewBlock, Tx,
   * waiters, the latest height) wait until they are, so that no height is published twice, even
   * when a power failure sends the handshake back to replay it (see commitDecided).
   */
  private unpublished: Array<{ block: Block; blockId: BlockId; res: FinalizeBlockResponse }> = [];
  /** Transaction bytes of the unpublished blocks (a sync point comes at CATCHUP_SYNC_TX_BYTES). */
  private unpublishedTxBytes = 0;
  /** The timer that makes the unpublished blocks durable if no sync point comes first (one at a time). */
  private flushTimer: unknown = null;
  private latest: BlockRef | null = null;
  private earliest: BlockRef | null = null;
  private waiters: Array<{
    height: number;
    resolve: () => void;
    reject: (e: Error) => void;
    timer: unknown;
  }> = [];
  private readonly scheduler: Scheduler;
  /** The clock without the dev time offset. */
  private readonly baseNow: () => TimeNs;
  /** The clock consensus runs on: votes are stamped with it, so block times follow it. */
  private readonly now = (): TimeNs => this.baseNow() + this.clockOffsetNs;
  // Block pacing (docs/consensus.md, Blocks on demand): when the NewHeight wait ends.
  /** Transactions start the next height as soon as the commit wait is over. */
  private automine: boolean;
  /** Empty blocks: ms after the commit wait; null = none (only transactions or mine calls). */
  private emptyBlockMs: number | null;
  /** The NewHeight wait in progress: its height, when the commit wait is over (ms), its timer. */
  private heightWait: { height: number; round: number; readyAt: number; timer: unknown } | null = null;
  /** txsAvailable() was called since the current height started. */
  private txsWaiting = false;
  /** Transactions in the last committed block: more than one means load (see startHeightWait). */
  private lastBlockTxs = 0;
  // Dev time controls: an offset added to the clock, and the time of the next block if set.
  private clockOffsetNs = 0n;
  private nextBlockTimeNs: bigint | null = null;
  /** The offset moved since the last block: the next block takes the clock's time. */
  private timeMoved = false;
  private readonly verify: (pk: Uint8Array, msg: Uint8Array, sig: Uint8Array) => boolean;
  private readonly step: typeof engineStep;
  private readonly logger: Logger;
  private readonly network: ConsensusNetwork | undefined;
  private readonly pool: EvidencePool;

  private constructor(
    private readonly opts: ConsensusRuntimeOptions,
    private readonly fs: DurableFs,
    private readonly ownsFs: boolean,
    private readonly blockStore: BlockStore,
    private readonly stateStore: StateStore,
    private readonly privval: FilePV | null,
    /** The state store's database: block sync holds its writes between two sync points. */
    private readonly stateKV: HoldingKV,
    /** The block store's database: block sync holds its writes between two sync points too. */
    private readonly blockKV: HoldingKV,
  ) {
    this.scheduler = opts.scheduler ?? realScheduler;
    this.baseNow = opts.now ?? systemNow;
    const interval = opts.createEmptyBlocksIntervalMs ?? 0;
    this.automine = interval > 0;
    this.emptyBlockMs = interval;
    const verify = opts.verify ?? ed25519Verify;
    this.verify = (pk, msg, sig) => {
      if (!this.syncing) return verify(pk, msg, sig);
      const t = performance.now();
      try {
        // A signature the thread checked is answered by its verdict, anything else here.
        return this.commitVerifier?.lookup(pk, msg, sig) ?? verify(pk, msg, sig);
      } finally {
        this.sync.verifyMs += performance.now() - t;
      }
    };
    this.step = opts.engineStep ?? engineStep;
    this.logger = opts.logger;
    this.network = opts.network;
    this.pool = new EvidencePool(opts.chainId, blockStore, stateStore, this.verify, opts.logger);
  }

  /** Opens the stores, performs the handshake with the application and prepares the engine. */
  static async create(opts: ConsensusRuntimeOptions): Promise<ConsensusRuntime> {
    validateOptions(opts);
    const fs = opts.fs ?? new NodeFs();
    const blockKV = new HoldingKV(opts.blockStore);
    const blockStore = await BlockStore.open(blockKV);
    const stateKV = new HoldingKV(opts.stateStore);
    const stateStore = new StateStore(stateKV);
    let privval: FilePV | null = null;
    if (opts.privValidator) {
      const src = opts.privValidator;
      privval =
        'keyFile' in src
          ? await FilePV.load(src.keyFile, src.stateFile, fs)
          : await FilePV.fromKey(src.key, src.stateFile, fs);
    }
    const rt = new ConsensusRuntime(opts, fs, !opts.fs, blockStore, stateStore, privval, stateKV, blockKV);
    await rt.pool.load();
    await rt.handshake();
    // The extended commit (vote extensions on) holds what the next proposal needs; else the seen one.
    const top = rt.chain.lastBlockHeight;
    const seen =
      top >= rt.chain.initialHeight
        ? ((await blockStore.loadExtendedCommit(top)) ?? (await blockStore.loadSeenCommit(top)))
        : undefined;
    rt.engine = rt.newEngine(seen ?? null);
    await rt.refreshRefs();
    return rt;
  }

  /** A fresh engine at the height after the current chain state (start-up, and after a revert). */
  private newEngine(seen: Commit | null): EngineState {
    return createEngine(
      {
        ownAddress: this.privval ? this.privval.address() : null,
        timeouts: this.opts.timeouts,
        // With an interval the runtime does the waiting for transactions (in NewHeight).
        createEmptyBlocks: this.opts.createEmptyBlocks || (this.opts.createEmptyBlocksIntervalMs ?? 0) > 0,
        verify: this.verify,
      },
      this.chain,
      seen,
    );
  }

  // -------------------------------------------------------------------------------------------
  // Handshake (CometBFT's Handshaker.ReplayBlocks)

  private async handshake(): Promise<void> {
    const { app, genesis } = this.opts;
    const info = await app.info();
    const appHeight = info.lastBlockHeight;
    const storeHeight = this.blockStore.height;
    let state = await this.stateStore.loadState();
    if (!state) {
      if (storeHeight > 0)
        throw new HandshakeError(
          `the state store is empty but the block store holds blocks up to height ${storeHeight}`,
        );
      state = genesisChainState({ chainId: this.opts.chainId, ...genesis }, new Uint8Array(0));
    }
    if (state.chainId !== this.opts.chainId)
      throw new HandshakeError(`the stores belong to chain "${state.chainId}", not "${this.opts.chainId}"`);
    if (appHeight > storeHeight) {
      throw new HandshakeError(
        `the application is ahead of consensus: application height ${appHeight}, block store height ${storeHeight}; ` +
          'the application data does not belong to these stores (reset both together)',
      );
    }
    const stateHeight = state.lastBlockHeight;
    // The state may lag the block store by more than one block: block sync saves the state (and
    // the application's commit) without fsync, so a power failure can lose several of them; the
    // block store and the block results are synced, and what is missing is rebuilt below.
    if (storeHeight > 0 && stateHeight > storeHeight) {
      throw new HandshakeError(
        `the state store (height ${stateHeight}) is ahead of the block store (height ${storeHeight})`,
      );
    }
    let appHash: Uint8Array;
    if (appHeight === 0) {
      const res = await app.initChain({
        chainId: this.opts.chainId,
        time: genesis.time,
        initialHeight: genesis.initialHeight,
        validators: genesis.validators,
        consensusParams: genesis.consensusParams,
        appState: genesis.appState,
      });
      appHash = res.appHash;
      if (stateHeight < genesis.initialHeight) {
        state = { ...state, appHash };
        await this.stateStore.saveState(state);
      }
      this.logger.info(
        { appHash: hexUpper(appHash), initialHeight: genesis.initialHeight },
        'initChain done',
      );
    } else {
      appHash = info.lastBlockAppHash;
    }
    this.chain = state;
    // The application committed blocks whose state was not saved: rebuild the state from the block
    // results saved (synced) before each of those commits.
    while (this.chain.lastBlockHeight < appHeight) {
      const h = this.chain.lastBlockHeight + 1;
      const block = await this.blockStore.loadBlock(h);
      const res = await this.stateStore.loadResults(h);
      if (!block || !res)
        throw new HandshakeError(`block results of height ${h} are missing; cannot rebuild the state`);
      if (h === appHeight && !bytesEqual(res.appHash, appHash))
        throw new HandshakeError(
          `app hash mismatch at height ${h}: the application has ${hexUpper(appHash)}, the saved results say ${hexUpper(res.appHash)}`,
        );
      await this.advanceState(block, blockIdOf(block), res);
    }
    const first = Math.max(appHeight + 1, genesis.initialHeight);
    let replayed = 0;
    for (let h = first; h <= storeHeight; h++) {
      const block = await this.blockStore.loadBlock(h);
      if (!block) throw new HandshakeError(`block ${h} is missing from the block store`);
      if (!bytesEqual(block.header.appHash, appHash)) {
        throw new HandshakeError(
          `app hash mismatch before replaying block ${h}: the application has ${hexUpper(appHash)}, block ${h} was built on ${hexUpper(block.header.appHash)}`,
        );
      }
      const blockId = blockIdOf(block);
      if (h > this.chain.lastBlockHeight) {
        appHash = (await this.applyBlock(block, blockId)).appHash;
      } else {
        const res = await this.finalize(block, blockId);
        await this.opts.app.commit();
        appHash = res.appHash;
      }
      replayed++;
    }
    if (!bytesEqual(this.chain.appHash, appHash)) {
      throw new HandshakeError(
        `app hash mismatch at height ${this.chain.lastBlockHeight}: the application has ${hexUpper(appHash)}, consensus state expects ${hexUpper(this.chain.appHash)}`,
      );
    }
    this.logger.info(
      { appHeight, storeHeight, stateHeight, replayed, height: this.chain.lastBlockHeight + 1 },
      'handshake complete',
    );
  }

  // -------------------------------------------------------------------------------------------
  // Lifecycle

  /** Replays the WAL of the current height, then drives consensus with timers and the network. */
  async start(): Promise<void> {
    if (this.started) return;
    if (this.stopped)
      throw new ConsensusError('STOPPED', 'the consensus runtime was stopped; create a new one');
    this.started = true;
    await this.checkDoubleSignRisk();
    this.wal = await Wal.open(this.fs, this.opts.walDir, this.logger, this.opts.walRotateBytes);
    const records = this.wal.entriesFor(this.engine.height);
    if (records.length > 0) {
      this.replaying = true;
      try {
        for (const r of records) await this.process(r.entry);
      } finally {
        this.replaying = false;
      }
      this.logger.info(
        {
          height: this.engine.height,
          entries: records.length,
          round: this.engine.round,
          step: this.engine.step,
        },
        'WAL replayed',
      );
    }
    this.wal.releaseReplayData();
    if (this.network) {
      this.unsubscribe = this.network.subscribe((peer, message) =>
        this.enqueue({ kind: 'net', peer, message }),
      );
      this.scheduleGossip();
    }
    if (this.opts.blockSync) {
      this.blockPool = new BlockPool(
        this.engine.height,
        this.opts.blockSyncWindow ?? 32,
        this.opts.blockSyncTimeoutMs ?? 10_000,
      );
      // Only behind node:crypto's ed25519 (the thread's): a custom verifier is the engine's to call.
      if (!this.opts.verify && this.opts.blockSyncVerifyThread !== false)
        this.commitVerifier = new CommitVerifier(
          this.opts.chainId,
          (height) => {
            // The block the node waits for is checked: apply it (and what follows).
            if (height === this.engine.height) this.enqueue({ kind: 'blockSyncVerified' });
          },
          this.logger,
        );
      const off = this.opts.blockSync.subscribe(
        (peer, message) => this.enqueue({ kind: 'blockSync', peer, message }),
        (peer) => this.enqueue({ kind: 'blockSyncDown', peer }),
      );
      const prev = this.unsubscribe;
      this.unsubscribe = () => {
        prev?.();
        off();
      };
      this.opts.blockSync.broadcast({ kind: 'statusRequest' });
      this.scheduleBlockSyncTick();
    }
    this.enqueue({ kind: 'engine', event: { kind: 'start', now: this.now() } });
    await this.idle();
  }

  /** Stops timers and the network, waiting for any block being committed. */
  async stop(): Promise<void> {
    if (!this.stopped) {
      this.stopped = true;
      this.shutdownIo();
    }
    await this.idle();
    // A block applied by block sync whose events still wait for its state to be on disk.
    if (!this.fatalError && !this.released) await this.flushUnpublished();
    // Once, also after a fatal error (which stops the runtime but leaves the WAL open): a service
    // that recovers from a lost executor creates a new runtime on the same WAL directory.
    if (this.released) return;
    this.released = true;
    await this.wal?.close();
    if (this.ownsFs) await this.fs.close();
    for (const w of this.waiters)
      w.reject(new ConsensusError('STOPPED', `stopped before height ${w.height} was committed`));
    this.waiters = [];
  }

  private shutdownIo(): void {
    void this.commitVerifier?.close();
    for (const t of this.timers) this.scheduler.clearTimer(t);
    this.timers.clear();
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  /** Resolves once every queued input has been processed (the simulator steps through this). */
  async idle(): Promise<void> {
    while (this.draining) await this.draining;
  }

  /** The error that stopped the runtime, if any. */
  get fatal(): Error | null {
    return this.fatalError;
  }

  private fail(err: Error): void {
    if (this.fatalError) return;
    this.fatalError = err;
    this.stopped = true;
    this.shutdownIo();
    this.queue.length = 0;
    this.logger.error({ err: err.message }, 'consensus stopped on an unrecoverable error');
    for (const w of this.waiters) w.reject(err);
    this.waiters = [];
    this.opts.onFatal?.(err);
  }

  private enqueue(input: Input): void {
    if (this.stopped) return;
    this.queue.push(input);
    if (!this.draining) this.draining = this.home.runInAsyncScope(() => this.drain());
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0 && !this.stopped) {
        const input = this.queue.shift()!;
        await this.handle(input);
      }
    } catch (err) {
      this.fail(err instanceof Error ? err : new Error(String(err)));
    } finally {
      this.draining = null;
    }
  }

  private async handle(input: Input): Promise<void> {
    switch (input.kind) {
      case 'engine':
        await this.process(input.event);
        return;
      case 'gossip':
        this.gossip();
        return;
      case 'blockSync':
        await this.onBlockSyncMessage(input.peer, input.message);
        return;
      case 'blockSyncDown':
        this.blockPool?.removePeer(input.peer);
        return;
      case 'blockSyncTick':
        this.blockSyncTick();
        return;
      case 'blockSyncVerified':
        if (!this.blockPool) return;
        await this.applyPooled();
        this.requestBlocks();
        return;
      case 'call':
        await input.fn();
        return;
      case 'net':
        this.sender = input.peer;
        try {
          await this.onNetMessage(input.peer, input.message);
        } finally {
          this.sender = null;
        }
        return;
    }
  }

  /** Runs one event and everything it causes (answers of effects) to completion. */
  private async process(event: EngineEvent): Promise<void> {
    const work: EngineEvent[] = [event];
    while (work.length > 0) {
      const ev = work.shift()!;
      const { state, effects } = this.step(this.engine, ev);
      this.engine = state;
      for (const eff of effects) {
        const follow = await this.execute(eff);
        if (follow) work.push(follow);
      }
    }
  }

  private async execute(eff: EngineEffect): Promise<EngineEvent | undefined> {
    const replay = this.replaying;
    switch (eff.kind) {
      case 'wal':
        if (!replay) await this.wal!.write(this.engine.height, eff.entry, eff.sync);
        return undefined;
      case 'broadcast':
        if (!replay) this.network?.broadcast(eff.message);
        return undefined;
      case 'publish':
        if (!replay) this.opts.bus.publish(eff.event);
        return undefined;
      case 'rejected':
        if (this.applyingFromBlockSync) {
          this.blockSyncRejection = eff.reason;
          return undefined;
        }
        if (!replay && this.sender !== null) {
          // A network that can act on it logs the disconnection with the reason; log it here otherwise.
          if (this.network?.report) this.network.report(this.sender, eff.reason);
          else
            this.logger.info(
              { peer: this.sender, reason: eff.reason },
              'invalid consensus message from a peer',
            );
        }
        return undefined;
      case 'scheduleTimeout': {
        if (replay || this.stopped) return undefined;
        const { height, round, step } = eff;
        if (step === 'NewHeight') {
          this.startHeightWait(height, round, eff.durationMs);
          return undefined;
        }
        const t = this.scheduler.setTimer(eff.durationMs, () => {
          this.timers.delete(t);
          this.enqueue({ kind: 'engine', event: { kind: 'timeout', height, round, step, now: this.now() } });
        });
        this.timers.add(t);
        return undefined;
      }
      case 'signVote': {
        if (replay || !this.privval) return undefined;
        try {
          const unsigned = eff.extend
            ? { ...eff.vote, extension: await this.extendVote(eff.vote) }
            : eff.vote;
          const vote = await this.privval.signVote(this.opts.chainId, unsigned, eff.extend);
          return { kind: 'ownVote', vote, now: this.now() };
        } catch (err) {
          if (!(err instanceof DoubleSignError)) throw err;
          // Signed something else at this height/round/step before a crash that lost it from the
          // WAL: that vote never left the node. Send it now (no new signature) rather than stay
          // silent, which could stall the network when this validator's power is needed.
          let stored = this.privval.storedVote(this.opts.chainId, eff.vote);
          if (stored) {
            this.logger.warn(
              { height: stored.height, round: stored.round, type: stored.type },
              'using the vote signed before a restart',
            );
            if (
              stored.type === 2 &&
              stored.blockId.hash.length > 0 &&
              voteExtensionsEnabled(this.chain.consensusParams, stored.height)
            )
              stored = this.privval.withExtensionSignature(this.opts.chainId, {
                ...stored,
                extension: await this.extendVote(stored),
              });
            return { kind: 'ownVote', vote: stored, now: this.now() };
          }
          this.logger.error(
            { err: err.message, height: eff.vote.height, round: eff.vote.round },
            'refused to sign a vote',
          );
          return undefined;
        }
      }
      case 'signProposal': {
        if (replay || !this.privval) return undefined;
        try {
          const proposal = await this.privval.signProposal(this.opts.chainId, eff.proposal);
          return { kind: 'ownProposal', proposal, block: eff.block, now: this.now() };
        } catch (err) {
          if (err instanceof DoubleSignError) {
            this.logger.error(
              { err: err.message, height: eff.proposal.height, round: eff.proposal.round },
              'refused to sign a proposal',
            );
            return undefined;
          }
          throw err;
        }
      }
      case 'requestProposal': {
        if (replay) return undefined;
        const params = this.chain.consensusParams;
        const evidence = this.pool.forProposal(params.evidence.maxBytes);
        const maxTxBytes = maxDataBytes(params, evidenceBytes(evidence), eff.validatorCount);
        let txs: Uint8Array[] = [];
        const time = this.proposalTime(eff.time);
        try {
          txs = await this.opts.app.prepareProposal({
            height: eff.height,
            time,
            proposerAddress: eff.proposerAddress,
            maxTxBytes,
            ...(eff.localLastCommit ? { localLastCommit: eff.localLastCommit } : {}),
          });
        } catch (err) {
          this.logger.error(
            { err: (err as Error).message, height: eff.height },
            'prepareProposal failed; proposing no transactions',
          );
        }
        const answer: EngineEvent = {
          kind: 'proposalTxs',
          height: eff.height,
          round: eff.round,
          txs,
          evidence,
          now: this.now(),
        };
        if (time !== eff.time) answer.time = time;
        return answer;
      }
      case 'validateBlock': {
        if (replay) return undefined;
        const reason = await this.pool.checkBlock(eff.block.evidence, this.chain);
        let valid = reason === null;
        if (reason)
          this.logger.warn(
            { height: eff.height, round: eff.round, reason },
            'proposed block has invalid evidence',
          );
        if (valid) {
          valid = await this.opts.app.processProposal({
            height: eff.height,
            time: eff.block.header.time,
            proposerAddress: eff.block.header.proposerAddress,
            hash: eff.blockId.hash,
            txs: eff.block.data.txs,
          });
          if (!valid)
            this.logger.warn(
              { height: eff.height, round: eff.round },
              'the application rejected the proposed block',
            );
        }
        return {
          kind: 'blockValidated',
          height: eff.height,
          blockHash: eff.blockId.hash,
          valid,
          now: this.now(),
        };
      }
      case 'decide':
        // Transactions admitted from here on are for the next height (see txsAvailable).
        this.txsWaiting = false;
        this.lastBlockTxs = eff.block.data.txs.length;
        await this.commitDecided(eff.block, eff.blockId, eff.commit, eff.extendedCommit);
        return { kind: 'committed', chain: this.chain, now: this.now() };
      case 'conflictingVotes':
        await this.pool.reportConflict(eff.voteA, eff.voteB, this.chain);
        this.logger.warn(
          {
            height: eff.voteA.height,
            round: eff.voteA.round,
            type: eff.voteA.type,
            validator: hexUpper(eff.voteA.validatorAddress),
          },
          'conflicting votes from one validator',
        );
        return undefined;
    }
  }

  // -------------------------------------------------------------------------------------------
  // Vote extensions (ABCI 2.0)

  /**
   * The application's extension for the local precommit of `vote.blockId`. A failing or oversized
   * answer is logged and replaced by an empty extension: the validator still votes (CometBFT would
   * stop the node; an empty extension only withholds this validator's attestation).
   */
  private async extendVote(vote: Vote): Promise<Uint8Array> {
    const app = this.opts.app;
    if (!app.extendVote) return new Uint8Array(0);
    const rec = this.engine.blocks.get(hex(vote.blockId.hash));
    try {
      const ext = await app.extendVote({
        height: vote.height,
        round: vote.round,
        hash: vote.blockId.hash,
        time: rec?.block.header.time ?? 0n,
        txs: rec?.block.data.txs ?? [],
        proposerAddress: rec?.block.header.proposerAddress ?? new Uint8Array(0),
      });
      if (ext.length <= MAX_VOTE_EXTENSION_BYTES) return ext;
      this.logger.error(
        { height: vote.height, round: vote.round, bytes: ext.length, limit: MAX_VOTE_EXTENSION_BYTES },
        'extendVote returned an extension over the limit; precommitting with an empty one',
      );
    } catch (err) {
      this.logger.error(
        { height: vote.height, round: vote.round, err: (err as Error).message },
        'extendVote failed; precommitting with an empty extension',
      );
    }
    return new Uint8Array(0);
  }

  /** Answers of verifyVoteExtension at the current height, by validator/round/extension signature. */
  private extensionVerdicts = new Map<string, boolean>();
  private extensionVerdictsHeight = -1;

  /**
   * VerifyVoteExtension for a peer's non-nil precommit of the current height, and of the previous
   * one (late precommits join the last commit, whose extensions the next proposer hands its
   * application; CometBFT does not ask there, so an extension its application would refuse can
   * reach PrepareProposal). A rejected one is logged and dropped before the engine counts it.
   * Votes the engine refuses anyway (bad signatures, wrong validator, extensions off) pass through
   * so the engine rejects them and reports the peer; an honest peer relays another validator's
   * extension without judging it, so the application's refusal does not blame the peer.
   */
  private async appAcceptsExtension(vote: Vote): Promise<boolean> {
    const app = this.opts.app;
    const e = this.engine;
    if (!app.verifyVoteExtension || vote.type !== 2 || vote.blockId.hash.length === 0) return true;
    if (vote.height !== e.height && vote.height !== e.height - 1) return true;
    if (!voteExtensionsEnabled(this.chain.consensusParams, vote.height)) return true;
    const set = vote.height === e.height ? e.chain.validators : e.chain.lastValidators;
    const val = set.getByIndex(vote.validatorIndex);
    if (!val || !bytesEqual(val.address, vote.validatorAddress)) return true;
    if (voteExtensionProblem(this.opts.chainId, vote, true, val.pubKey, this.verify) !== null) return true;
    if (this.extensionVerdictsHeight !== e.height) {
      this.extensionVerdicts.clear();
      this.extensionVerdictsHeight = e.height;
    }
    const key = `${vote.height}/${vote.validatorIndex}/${vote.round}/${blockIdKey(vote.blockId)}/${hex(vote.extensionSignature!)}`;
    let ok = this.extensionVerdicts.get(key);
    if (ok === undefined) {
      try {
        ok = await app.verifyVoteExtension({
          height: vote.height,
          round: vote.round,
          hash: vote.blockId.hash,
          validatorAddress: vote.validatorAddress,
          voteExtension: vote.extension ?? new Uint8Array(0),
        });
      } catch (err) {
        this.logger.error(
          { height: vote.height, round: vote.round, err: (err as Error).message },
          'verifyVoteExtension failed; treating the extension as rejected',
        );
        ok = false;
      }
      if (this.extensionVerdicts.size < 10_000) this.extensionVerdicts.set(key, ok);
      if (!ok)
        this.logger.warn(
          {
            height: vote.height,
            round: vote.round,
            validator: hexUpper(vote.validatorAddress),
            peer: this.sender,
          },
          'the application rejected a vote extension; precommit not counted',
        );
    }
    return ok;
  }

  // -------------------------------------------------------------------------------------------
  // Committing

  private async commitDecided(
    block: Block,
    blockId: BlockId,
    commit: Commit,
    extendedCommit: Commit | null,
  ): Promise<void> {
    const h = block.header.height;
    const t = performance.now();
    // While catching up (a block from a peer's commit, peers two or more heights ahead), a block's
    // writes are batched between sync points (every CATCHUP_SYNC_BLOCKS blocks or
    // CATCHUP_SYNC_TX_BYTES of transactions, or the flush timer's UNPUBLISHED_FLUSH_MS): the WAL
    // marker is written without fsync, while the block store's writes, the block results, the state
    // and the application's commit are held in memory (HoldingKV, CommitOptions.hold). At a sync
    // point, in this order: the held blocks and the sync point's own are written with one fsync,
    // then the held state-store writes are written with fsync, then the application's held commits
    // without one. So on disk, after a crash at any point, the state and the application are never
    // past the block store, and the application never past the results: the handshake replays the
    // rest (docs/p2p.md). The blocks applied since the last sync point are published after it. The
    // block at the tip gets all five fsyncs, so a node that switches to consensus has everything on
    // disk. Behind an application that cannot hold its commits (no flushHeld: the executor over
    // gRPC) every block is its own sync point.
    const durable = !(this.syncing && this.catchingUp());
    const syncPoint =
      durable ||
      typeof this.opts.app.flushHeld !== 'function' ||
      this.unpublished.length + 1 >= (this.opts.catchupSyncBlocks ?? CATCHUP_SYNC_BLOCKS) ||
      this.unpublishedTxBytes >= CATCHUP_SYNC_TX_BYTES;
    // Between two sync points the block store's writes are held in memory too (read back as
    // written); a sync point's write takes them with its own block, in one synced batch.
    if (syncPoint) this.blockKV.stopHolding();
    else this.blockKV.hold();
    if (this.blockStore.height < h)
      await this.blockStore.saveBlock(block, blockId, commit, extendedCommit, syncPoint);
    else if (syncPoint) await this.blockStore.sync();
    await this.wal!.writeEndHeight(h, durable);
    if (this.syncing) this.sync.storeMs += performance.now() - t;
    await this.applyBlock(block, blockId, durable, syncPoint);
    // While catching up the `block sync progress` line stands for the blocks of each second: the
    // per-block line is debug then (it was 2.6% of a syncing node's main thread at 400 blocks/s).
    this.logger[durable ? 'info' : 'debug'](
      { height: h, round: commit.round, hash: hexUpper(blockId.hash), txs: block.data.txs.length },
      'committed block',
    );
  }

  private async finalize(block: Block, blockId: BlockId, syncResults = true): Promise<FinalizeBlockResponse> {
    const h = block.header;
    // The set that signed block.lastCommit: the state's last set, except when the handshake replays
    // a block the saved state is already past (the application is one block behind).
    let lastValidators = this.chain.lastValidators;
    if (h.height !== this.chain.lastBlockHeight + 1 && block.lastCommit) {
      const saved = await this.stateStore.loadValidators(h.height - 1);
      if (!saved)
        throw new HandshakeError(
          `the validator set of height ${h.height - 1} is missing from the state store`,
        );
      lastValidators = saved;
    }
    const lightBlock = this.opts.lightBlocks ? await this.lightBlockOf(block, blockId) : undefined;
    const res = await this.opts.app.finalizeBlock({
      height: h.height,
      time: h.time,
      proposerAddress: h.proposerAddress,
      hash: blockId.hash,
      txs: block.data.txs,
      misbehavior: block.evidence.map((e) => ({
        type: 'duplicate_vote' as const,
        validatorAddress: e.voteA.validatorAddress,
        height: e.voteA.height,
        time: e.timestamp,
        totalVotingPower: e.totalVotingPower,
      })),
      decidedLastCommit: lastCommitInfo(block, lastValidators),
      ...(lightBlock ? { lightBlock } : {}),
    });
    if (res.txResults.length !== block.data.txs.length) {
      throw new ConsensusError(
        'INVALID_BLOCK',
        `finalizeBlock of height ${h.height} returned ${res.txResults.length} tx results for ${block.data.txs.length} transactions`,
      );
    }
    const t = performance.now();
    await this.stateStore.saveResults(h.height, res, syncResults);
    // A sync point of block sync: the results, states and validator sets held since the last one
    // go to disk with these results, in one synced write (the block store is synced already).
    if (syncResults && this.stateKV.holding) await this.stateKV.release({ sync: true });
    if (this.syncing) {
      const ms = performance.now() - t;
      this.sync.storeMs += ms;
      this.sync.executeMs -= ms;
    }
    return res;
  }

  /**
   * The light block of a block about to be finalized (the lightBlocks option): its header, the
   * commit the block store holds for it (saved with the block before FinalizeBlock, also when the
   * handshake replays it) and the validator set of its height (the state's, or the saved one when
   * the handshake replays a block the state is already past).
   */
  private async lightBlockOf(block: Block, blockId: BlockId): Promise<Uint8Array> {
    const h = block.header.height;
    const stored = await this.blockStore.loadCommit(h);
    if (!stored || !bytesEqual(stored.commit.blockId.hash, blockId.hash))
      throw new ConsensusError(
        'INVALID_BLOCK',
        `the commit of height ${h} is missing from the block store; cannot send its light block`,
      );
    const validators =
      h === this.chain.lastBlockHeight + 1 ? this.chain.validators : await this.stateStore.loadValidators(h);
    if (!validators)
      throw new HandshakeError(`the validator set of height ${h} is missing from the state store`);
    return encodeLightBlock({
      header: block.header,
      commit: stored.commit,
      validators: validators.validators,
    });
  }

  /**
   * finalizeBlock, save results, commit, save the next state, update evidence, publish. Not
   * `durable`: block sync's fast path (see commitDecided): the commit and the state are not
   * fsynced, and the events wait until the state is on disk. `syncPoint` (always when durable):
   * the results are fsynced, and with them the states saved before them.
   */
  private async applyBlock(
    block: Block,
    blockId: BlockId,
    durable = true,
    syncPoint = true,
  ): Promise<FinalizeBlockResponse> {
    const t0 = performance.now();
    // Between two sync points the state store's writes (results, state) are held in memory.
    const hold = !durable && !syncPoint;
    if (hold) this.stateKV.hold();
    const res = await this.finalize(block, blockId, durable || syncPoint);
    const t1 = performance.now();
    // A sync point: the block store was synced up to this block (commitDecided), the results were
    // just written synced, and with them the states saved before them: the events of the blocks
    // applied before this one can go out.
    if (durable || syncPoint) await this.publishPending();
    if (this.syncing) this.sync.publishMs += performance.now() - t1;
    const tc = performance.now();
    const next = nextChainState(this.chain, block, blockId, res);
    // Held between two sync points; at one, the held commits are written with this one (no fsync:
    // the results before them are on disk, and a lost commit is replayed from the block store).
    await (durable ? this.opts.app.commit() : this.opts.app.commit({ durable: false, hold }));
    const t2 = performance.now();
    await this.stateStore.saveState(next, durable);
    const t3 = performance.now();
    this.chain = next;
    if (durable) {
      await this.afterCommit(block, blockId, res);
    } else {
      this.unpublished.push({ block, blockId, res });
      for (const tx of block.data.txs) this.unpublishedTxBytes += tx.length;
      // Normally a later sync point publishes it; if none comes in time, the stores are synced here.
      if (this.flushTimer === null) {
        const t = this.scheduler.setTimer(UNPUBLISHED_FLUSH_MS, () => {
          this.timers.delete(t);
          this.flushTimer = null;
          this.enqueue({ kind: 'call', fn: () => this.flushUnpublished() });
        });
        this.flushTimer = t;
        this.timers.add(t);
      }
    }
    if (this.syncing) {
      this.sync.executeMs += t1 - t0;
      this.sync.commitMs += t2 - tc;
      this.sync.storeMs += t3 - t2;
      this.sync.publishMs += performance.now() - t3;
    }
    return res;
  }

  /** Publishes the events of the blocks whose state was saved without fsync (the caller made them durable), in order. */
  private async publishPending(): Promise<void> {
    const pending = this.unpublished;
    if (pending.length === 0) return;
    this.unpublished = [];
    this.unpublishedTxBytes = 0;
    for (const p of pending) await this.afterCommit(p.block, p.blockId, p.res);
  }

  /**
   * The timer's sync point (or shutdown): fast-path blocks wait without one. As at an inline sync
   * point: the block store is synced first, then the state (with the held results and states
   * before it), then the application's held commits are written; then their events go out.
   */
  private async flushUnpublished(): Promise<void> {
    if (this.unpublished.length === 0 && !this.stateKV.holding && !this.blockKV.holding) return;
    this.blockKV.stopHolding();
    await this.blockStore.sync();
    await this.stateStore.saveState(this.chain);
    if (this.stateKV.holding) await this.stateKV.release({ sync: true });
    await this.opts.app.flushHeld?.();
    await this.publishPending();
  }

  /** The application already committed `block`; rebuild the state from its saved results. */
  private async advanceState(block: Block, blockId: BlockId, res: FinalizeBlockResponse): Promise<void> {
    const next = nextChainState(this.chain, block, blockId, res);
    await this.stateStore.saveState(next);
    this.chain = next;
    await this.afterCommit(block, blockId, res);
  }

  private async afterCommit(block: Block, blockId: BlockId, res: FinalizeBlockResponse): Promise<void> {
    const h = block.header.height;
    await this.pool.update(block.evidence, h, this.chain);
    this.latest = { hash: blockId.hash, appHash: this.chain.appHash, height: h, time: block.header.time };
    if (!this.earliest) await this.refreshRefs();
    const bus = this.opts.bus;
    bus.publish({ kind: 'NewBlock', block, blockId, result: res });
    block.data.txs.forEach((tx, index) => {
      bus.publish({ kind: 'Tx', height: h, index, tx, result: res.txResults[index]! });
    });
    if (res.validatorUpdates.length > 0)
      bus.publish({ kind: 'ValidatorSetUpdates', updates: res.validatorUpdates });
    const ready = this.waiters.filter((w) => w.height <= h);
    this.waiters = this.waiters.filter((w) => w.height > h);
    for (const w of ready) {
      this.scheduler.clearTimer(w.timer);
      w.resolve();
    }
  }

  private async refreshRefs(): Promise<void> {
    const top = Math.min(this.blockStore.height, this.chain.lastBlockHeight);
    if (top >= this.chain.initialHeight && top > 0) {
      const m = await this.blockStore.loadBlockMeta(top);
      if (m)
        this.latest = { hash: m.blockId.hash, appHash: this.chain.appHash, height: top, time: m.header.time };
      const base = this.blockStore.base;
      const e = await this.blockStore.loadBlockMeta(base);
      if (e)
        this.earliest = {
          hash: e.blockId.hash,
          appHash: e.header.appHash,
          height: base,
          time: e.header.time,
        };
    }
  }

  // -------------------------------------------------------------------------------------------
  // Network

  private scheduleGossip(): void {
    if (this.stopped) return;
    const t = this.scheduler.setTimer(this.opts.gossipIntervalMs ?? 1000, () => {
      this.timers.delete(t);
      this.enqueue({ kind: 'gossip' });
      this.scheduleGossip();
    });
    this.timers.add(t);
  }

  private gossip(): void {
    const net = this.network;
    if (!net || this.stopped) return;
    this.gossipTick++;
    const s = this.engine;
    net.broadcast(statusMessage(s));
    for (const m of gossipMessages(s)) net.broadcast(m);
    for (const evidence of this.pool.forProposal(this.chain.consensusParams.evidence.maxBytes).slice(0, 4)) {
      net.broadcast({ kind: 'evidence', evidence });
    }
  }

  private async onNetMessage(peer: string, message: ConsensusMessage): Promise<void> {
    const now = this.now();
    switch (message.kind) {
      case 'proposal':
        await this.process({ kind: 'proposal', proposal: message.proposal, block: message.block, now });
        return;
      case 'vote':
        if (!(await this.appAcceptsExtension(message.vote))) return;
        await this.process({ kind: 'vote', vote: message.vote, now });
        // skip_timeout_commit: the last precommit came in during the commit wait, which may end now
        // (after a batch, a quarter of timeout_commit from now, as startHeightWait does).
        if (
          this.opts.skipTimeoutCommit &&
          this.heightWait &&
          this.engine.step === 'NewHeight' &&
          this.allPrecommitsIn()
        ) {
          const wait = this.lastBlockTxs > 1 ? this.opts.timeouts.commit / 4 : 0;
          this.heightWait.readyAt = Math.min(this.heightWait.readyAt, this.wallMs() + wait);
          this.armHeightWait();
        }
        return;
      case 'commit': {
        if (!(await this.applySynced(message.block, message.commit, message.extendedCommit))) return;
        // Block sync: while behind, ask the peer that sent this for more at once instead of at the
        // next gossip tick, so catching up runs at execution speed.
        if (this.catchingUp()) this.network?.send(peer, statusMessage(this.engine));
        return;
      }
      case 'evidence':
        try {
          await this.pool.add(message.evidence, this.chain);
        } catch (err) {
          this.logger.debug({ peer, err: (err as Error).message }, 'evidence from a peer rejected');
        }
        return;
      case 'status': {
        this.peerHeights.set(peer, { height: message.height, at: this.nowMs() });
        if (message.height === this.engine.height) {
          if (this.lastCatchup.get(peer) === this.gossipTick) return;
          this.lastCatchup.set(peer, this.gossipTick);
          for (const m of messagesForPeer(this.engine, message)) this.network?.send(peer, m);
          return;
        }
        // With the block sync protocol, a behind peer asks for blocks there.
        if (this.opts.blockSync) return;
        const top = Math.min(this.blockStore.height, this.chain.lastBlockHeight);
        if (message.height > top || message.height < this.blockStore.base) return;
        // A window of `catchupBatch` heights ahead of the peer is in flight: within one gossip tick
        // only heights not sent yet go out (the peer asks again after each block it applies); at
        // the next tick the window is sent again from the peer's height, in case some were lost.
        const sent = this.catchupSent.get(peer);
        let from = message.height;
        if (sent && sent.tick === this.gossipTick) from = Math.max(from, sent.upTo + 1);
        const to = await this.catchupWindowEnd(message.height, top);
        if (from > to) return;
        this.catchupSent.set(peer, { tick: this.gossipTick, upTo: to });
        for (let h = from; h <= to; h++) {
          const block = await this.blockStore.loadBlock(h);
          const c = await this.blockStore.loadCommit(h);
          if (!block || !c) return;
          // Where extensions are on, the block goes with its extended commit when this store has it.
          // A store written before extended commits were kept per height has only the top one; the
          // others go with their plain commit, which the peer accepts since this node stores a
          // later block (it will not propose the next height: docs/consensus.md 7b).
          const ext = await this.blockStore.loadExtendedCommit(h);
          if (!ext && voteExtensionsEnabled(this.chain.consensusParams, h))
            this.logger.debug(
              { peer, height: h },
              'block sync: no extended commit stored; sending the commit',
            );
          this.network?.send(peer, {
            kind: 'commit',
            block,
            commit: c.commit,
            ...(ext ? { extendedCommit: ext } : {}),
          });
        }
        return;
      }
    }
  }

  /**
   * Applies a committed block from a peer (block sync, either way): the engine verifies the commit
   * (and the extended commit) and decides the height. True when the node moved past it.
   */
  private async applySynced(
    block: Block,
    commit: Commit,
    extendedCommit: Commit | undefined,
  ): Promise<boolean> {
    const before = this.engine.height;
    const t0 = performance.now();
    this.syncing = true;
    // A peer that stores (or works above) block h + 1 shows it is committed: then this node will not
    // propose h + 1 and may take block h without its extended commit.
    const h = block.header.height;
    let nextHeightCommitted = false;
    for (const p of this.peerHeights.values()) if (p.height >= h + 2) nextHeightCommitted = true;
    try {
      await this.process({
        kind: 'commitCert',
        block,
        commit,
        ...(extendedCommit ? { extendedCommit } : {}),
        nextHeightCommitted,
        now: this.now(),
      });
    } finally {
      this.syncing = false;
    }
    if (this.engine.height === before) return false;
    const t1 = performance.now();
    const st = this.sync;
    // A new run of synced blocks (at start, or after a while at the tip) counts from its first block.
    if (st.blocks === 0 && t0 - st.since > 1000) st.since = t0;
    // Idle time between two synced blocks is waiting for the network (a gap over a second is
    // not block sync: the node was at the tip).
    if (st.lastEnd > 0 && t0 - st.lastEnd < 1000) st.waitMs += t0 - st.lastEnd;
    st.lastEnd = t1;
    st.totalMs += t1 - t0;
    st.blocks++;
    st.txs += block.data.txs.length;
    if (t1 - st.since >= 1000 || !this.catchingUp()) this.logSyncProgress(t1);
    return true;
  }

  // -------------------------------------------------------------------------------------------
  // Block sync protocol (/noded/blocksync/1): statuses, and blocks asked by height of several peers
  // (BlockPool); each block is applied in order through the same commitCert path as above.

  private scheduleBlockSyncTick(): void {
    if (this.stopped) return;
    const t = this.scheduler.setTimer(BLOCK_SYNC_TICK_MS, () => {
      this.timers.delete(t);
      this.enqueue({ kind: 'blockSyncTick' });
      this.scheduleBlockSyncTick();
    });
    this.timers.add(t);
  }

  /** This node's stored range, as block sync statuses carry it. */
  private blockSyncStatus(): BlockSyncMessage {
    const top = Math.min(this.blockStore.height, this.chain.lastBlockHeight);
    return {
      kind: 'status',
      base: top > 0 ? this.blockStore.base : 0,
      height: top,
      maxRange: MAX_BLOCK_RANGE,
    };
  }

  private blockSyncTick(): void {
    const net = this.opts.blockSync;
    const pool = this.blockPool;
    if (!net || !pool || this.stopped) return;
    const now = this.wallMs();
    if (now - this.lastBlockSyncStatus >= BLOCK_SYNC_STATUS_MS) {
      this.lastBlockSyncStatus = now;
      net.broadcast(this.blockSyncStatus());
      net.broadcast({ kind: 'statusRequest' });
    }
    for (const peer of pool.expire(now))
      this.logger.info({ peer }, 'block sync: a requested block timed out; asking other peers');
    this.requestBlocks();
    // Caught up (consensus has the node now): the commit thread would sit idle until the node stops,
    // so it is stopped; it starts again with the next block taken while the node is behind.
    if (this.commitVerifier?.running && pool.buffered === 0 && !this.catchingUp()) {
      this.logger.debug({ height: this.engine.height }, 'block sync: caught up; commit thread stopped');
      void this.commitVerifier.park();
    }
  }

  private requestBlocks(): void {
    const pool = this.blockPool;
    const net = this.opts.blockSync;
    if (!pool || !net) return;
    pool.advance(this.engine.height);
    for (const r of pool.scheduleRanges(this.wallMs()))
      net.send(r.peer, {
        kind: 'blockRequest',
        height: r.height,
        ...(r.count > 1 ? { count: r.count } : {}),
      });
  }

  private async onBlockSyncMessage(peer: string, m: BlockSyncMessage): Promise<void> {
    const net = this.opts.blockSync!;
    const pool = this.blockPool!;
    switch (m.kind) {
      case 'statusRequest':
        net.send(peer, this.blockSyncStatus());
        return;
      case 'status':
        pool.setStatus(peer, m.base, m.height, m.maxRange ?? 1);
        // A peer storing block h works on h + 1 (catchingUp() compares consensus heights).
        this.peerHeights.set(peer, { height: m.height + 1, at: this.nowMs() });
        this.requestBlocks();
        return;
      case 'blockRequest': {
        // Each height of the range (one without `count`) gets its block or a "no block", in order.
        // The answers are sent together, up to RANGE_SEND_BYTES at a time, so that the P2P host
        // writes them as one frame (writeNow's coalescing); a block read for the height after
        // serves the one before it its canonical commit, and is not read again.
        const end = m.height + (m.count ?? 1);
        let out: BlockSyncMessage[] = [];
        let outBytes = 0;
        const send = () => {
          for (const o of out) net.send(peer, o);
          out = [];
          outBytes = 0;
        };
        let ahead: { height: number; block: Block | undefined } | undefined;
        const load = async (h: number, top: number) => {
          if (ahead?.height === h) return ahead.block;
          return h <= top && h >= this.blockStore.base && h > 0
            ? await this.blockStore.loadBlock(h)
            : undefined;
        };
        for (let h = m.height; h < end && !this.stopped; h++) {
          const top = Math.min(this.blockStore.height, this.chain.lastBlockHeight);
          const block = await load(h, top);
          // The canonical commit of h is the next block's last commit; the top one is the seen commit.
          let commit: Commit | undefined;
          if (block && h < this.blockStore.height) {
            const next = await load(h + 1, this.blockStore.height);
            ahead = { height: h + 1, block: h + 1 <= top ? next : undefined };
            commit = next?.lastCommit ?? undefined;
          }
          if (block && !commit) commit = await this.blockStore.loadSeenCommit(h);
          const ext = commit ? await this.blockStore.loadExtendedCommit(h) : undefined;
          if (!block || !commit) {
            out.push({ kind: 'noBlock', height: h });
            continue;
          }
          // Where extensions are on, a block goes with its extended commit, or with its plain commit
          // where this store has none (written before they were kept per height): h is below this
          // node's top, so the peer knows h + 1 is committed and needs no extensions of h
          // (docs/consensus.md 7b).
          if (!ext && voteExtensionsEnabled(this.chain.consensusParams, h))
            this.logger.debug(
              { peer, height: h },
              'block sync: no extended commit stored; sending the commit',
            );
          out.push({ kind: 'block', block, commit, ...(ext ? { extendedCommit: ext } : {}) });
          outBytes += 1024;
          for (const tx of block.data.txs) outBytes += tx.length;
          if (outBytes >= RANGE_SEND_BYTES) send();
        }
        send();
        return;
      }
      case 'noBlock':
        pool.noBlock(peer, m.height);
        this.requestBlocks();
        return;
      case 'block': {
        const ext = m.extendedCommit ? { extendedCommit: m.extendedCommit } : {};
        if (!pool.addBlock({ peer, block: m.block, commit: m.commit, ...ext })) return;
        // Its commit's signatures are checked on the thread while the blocks before it are applied
        // (the engine's verifyCommit checks the commit it decides on: the extended one if present).
        // At the tip (a block or two late) the thread is not started for it: the engine checks that
        // one inline. The thread runs while the node catches up and is stopped at the tip (tick).
        if (this.commitVerifier?.running || this.catchingUp())
          this.commitVerifier?.submit(
            m.block.header.height,
            m.extendedCommit ?? m.commit,
            this.chain.validators,
          );
        await this.applyPooled();
        this.requestBlocks();
        return;
      }
    }
  }

  /** Applies the pooled blocks that come next, in order; a block that does not verify drops its peer. */
  private async applyPooled(): Promise<void> {
    const pool = this.blockPool!;
    pool.advance(this.engine.height);
    this.commitVerifier?.forgetBelow(pool.next);
    for (let b = pool.peek(); b && !this.stopped; b = pool.peek()) {
      // Its commit is still on the thread: applied once the verdict is in ('blockSyncVerified').
      if (this.commitVerifier?.status(pool.next) === 'pending') {
        this.sync.verdictWaits++;
        return;
      }
      this.blockSyncRejection = null;
      this.applyingFromBlockSync = true;
      let applied: boolean;
      try {
        applied = await this.applySynced(b.block, b.commit, b.extendedCommit);
      } finally {
        this.applyingFromBlockSync = false;
      }
      if (applied) {
        pool.advance(this.engine.height);
        this.commitVerifier?.forgetBelow(pool.next);
        continue;
      }
      const reason = this.blockSyncRejection as string | null;
      if (reason === null) {
        // The engine had decided this height already (consensus got there first): the block waits
        // until the height is committed, then advance() drops it. Nothing wrong with the peer.
        return;
      }
      const dropped = pool.removePeer(b.peer);
      this.logger.warn(
        { peer: b.peer, height: b.block.header.height, reason, dropped },
        'block sync: a peer sent a block that does not verify; disconnecting it and asking others',
      );
      this.opts.blockSync!.report(b.peer, reason);
    }
  }

  /**
   * The last height of the window sent ahead of a peer at `from`: `catchupBatch` heights, fewer
   * when their blocks add up to more than CATCHUP_WINDOW_BYTES (always at least one).
   */
  private async catchupWindowEnd(from: number, top: number): Promise<number> {
    const last = Math.min(top, from + (this.opts.catchupBatch ?? CATCHUP_WINDOW) - 1);
    let bytes = 0;
    for (let h = from; h <= last; h++) {
      let size = this.blockSizes.get(h);
      if (size === undefined) {
        size = (await this.blockStore.loadBlockMeta(h))?.blockSize ?? 0;
        if (this.blockSizes.size >= 4096) this.blockSizes.clear();
        this.blockSizes.set(h, size);
      }
      bytes += size;
      if (bytes > CATCHUP_WINDOW_BYTES && h > from) return h - 1;
    }
    return last;
  }

  /** One `block sync progress` line: blocks applied from peers since the last one, and where the time went. */
  private logSyncProgress(now: number): void {
    const st = this.sync;
    const sigs = this.commitVerifier?.take();
    if (st.blocks > 0) {
      const r = (ms: number) => Math.round(ms * 10) / 10;
      const other = st.totalMs - st.verifyMs - st.executeMs - st.commitMs - st.storeMs - st.publishMs;
      this.logger.info(
        {
          height: this.chain.lastBlockHeight,
          blocks: st.blocks,
          txs: st.txs,
          blocksPerSec: r((st.blocks * 1000) / Math.max(1, now - st.since)),
          verifyMs: r(st.verifyMs),
          executeMs: r(st.executeMs),
          commitMs: r(st.commitMs),
          storeMs: r(st.storeMs),
          publishMs: r(st.publishMs),
          otherMs: r(other),
          waitMs: r(st.waitMs),
          verdictWaits: st.verdictWaits,
          // Commit signatures answered by the verification thread's verdicts, and checked here.
          ...(sigs ? { sigsAhead: sigs.ahead, sigsInline: sigs.inline } : {}),
        },
        'block sync progress',
      );
    }
    this.sync = newSyncStats(now);
    this.sync.lastEnd = st.lastEnd;
  }

  // -------------------------------------------------------------------------------------------
  // Safety checks

  /** double_sign_check_height: refuse to start if our key signed one of the last N-1 commits. */
  private async checkDoubleSignRisk(): Promise<void> {
    const n = this.opts.doubleSignCheckHeight;
    if (!this.privval || n <= 0) return;
    const height = this.engine.height;
    const addr = this.privval.address();
    const limit = Math.min(n, height);
    for (let i = 1; i < limit; i++) {
      const c = await this.blockStore.loadCommit(height - i);
      if (!c) continue;
      if (c.commit.signatures.some((s) => s.blockIdFlag === 2 && bytesEqual(s.validatorAddress, addr))) {
        throw new ConsensusError(
          'DOUBLE_SIGN_RISK',
          `validator ${hexUpper(addr)} signed the commit of height ${height - i}, within double_sign_check_height ${n}: ` +
            'another node may be running with this key; stop it, wait for that many blocks, then start',
        );
      }
    }
  }

  // -------------------------------------------------------------------------------------------
  // Inputs from the node

  /**
   * The mempool has transactions: with create_empty_blocks = false or an empty-blocks interval the
   * next block is proposed at once (after the commit wait). Cheap to call for every admitted
   * transaction: only the first call of a height does anything.
   */
  txsAvailable(): void {
    if (this.txsWaiting || this.stopped) return;
    this.txsWaiting = true;
    this.enqueue({
      kind: 'call',
      fn: async () => {
        this.armHeightWait();
        await this.process({ kind: 'txsAvailable', now: this.now() });
      },
    });
  }

  // -------------------------------------------------------------------------------------------
  // Block pacing: when the NewHeight wait ends. The engine asked for timeout_commit (counted from
  // the decision); the runtime delivers that same NewHeight timeout, earlier or later:
  // - skip_timeout_commit with every precommit in: the commit wait is 0 (a quarter of timeout_commit
  //   after a block of several transactions, so that blocks under load stay batches);
  // - automine (an empty-blocks interval, or evm_setAutomine): transactions end the wait once the
  //   commit wait is over;
  // - empty blocks: the commit wait plus create_empty_blocks_interval (or the dev interval), or
  //   never (evm_setIntervalMining 0).
  // Safety never depends on when a round starts; the block still goes through proposal, votes,
  // the WAL and the double-sign guard.

  private wallMs(): number {
    return Number(this.baseNow() / 1_000_000n);
  }

  /** Every validator of the last height has its precommit in the engine's last commit. */
  private allPrecommitsIn(): boolean {
    const lc = this.engine.lastCommit;
    return lc !== null && lc.sum === this.engine.chain.lastValidators.totalVotingPower;
  }

  private startHeightWait(height: number, round: number, commitWaitMs: number): void {
    if (this.heightWait) this.scheduler.clearTimer(this.heightWait.timer);
    let wait = commitWaitMs;
    if (this.opts.skipTimeoutCommit && this.allPrecommitsIn()) {
      // Under load (the last block carried a batch) the next block still gathers one: a quarter of
      // timeout_commit. Measured with the transfers bench (6000 transfers, 19 senders): no wait made
      // 303 blocks of ~20 at 141 tx/s, a quarter (250 ms) 24 blocks of ~250 at 766 tx/s, the whole
      // timeout_commit 22 blocks at 248 tx/s. One transaction at a time is not load: it goes at once.
      wait = this.lastBlockTxs > 1 ? Math.min(commitWaitMs, this.opts.timeouts.commit / 4) : 0;
    }
    this.heightWait = { height, round, readyAt: this.wallMs() + wait, timer: undefined };
    this.armHeightWait();
  }

  /** (Re)arms the timer that ends the NewHeight wait, from the pacing state. */
  private armHeightWait(): void {
    const w = this.heightWait;
    if (!w || this.stopped) return;
    if (w.timer !== undefined) {
      this.scheduler.clearTimer(w.timer);
      this.timers.delete(w.timer);
      w.timer = undefined;
    }
    if (this.engine.height !== w.height || this.engine.step !== 'NewHeight') {
      this.heightWait = null;
      return;
    }
    let due: number | null = null;
    if (this.automine && this.txsWaiting) due = w.readyAt;
    else if (this.emptyBlockMs !== null) due = w.readyAt + this.emptyBlockMs;
    if (due === null) return;
    const t = this.scheduler.setTimer(Math.max(0, due - this.wallMs()), () => {
      this.timers.delete(t);
      if (this.heightWait === w) this.heightWait = null;
      this.enqueue({
        kind: 'engine',
        event: { kind: 'timeout', height: w.height, round: w.round, step: 'NewHeight', now: this.now() },
      });
    });
    w.timer = t;
    this.timers.add(t);
  }

  /** The time of the block being proposed: BFT time unless a dev time control set another. */
  private proposalTime(bftTime: TimeNs): TimeNs {
    if (this.nextBlockTimeNs === null && !this.timeMoved) return bftTime;
    if (!proposerPicksTime(this.chain)) return bftTime;
    let t = this.nextBlockTimeNs ?? this.now();
    if (t < bftTime && this.nextBlockTimeNs === null) t = bftTime;
    this.nextBlockTimeNs = null;
    this.timeMoved = false;
    return t > this.chain.lastBlockTime ? t : bftTime;
  }

  // -------------------------------------------------------------------------------------------
  // Dev chain controls (evm_mine, evm_setAutomine, evm_increaseTime, ...): only on a chain that
  // enables them (chain-local) and has this node as its only validator.

  /** Why the dev controls are refused here, or null when they are available. */
  devControlsRefusal(): string | null {
    if (!this.opts.devControls) return 'the dev controls are only enabled on chain-local';
    const vals = this.chain.validators.validators;
    if (vals.length !== 1) return `the chain has ${vals.length} validators`;
    if (!this.privval || !bytesEqual(vals[0]!.address, this.privval.address()))
      return 'this node is not the validator';
    return null;
  }

  private devCall<T>(fn: () => Promise<T> | T): Promise<T> {
    const refusal = this.devControlsRefusal();
    if (refusal !== null) return Promise.reject(new ConsensusError('DEV_CONTROLS_REFUSED', refusal));
    return this.queued(fn);
  }

  /** Runs `fn` in the input queue, between engine events, and resolves with its result. */
  private queued<T>(fn: () => Promise<T> | T): Promise<T> {
    return new Promise((resolve, reject) => {
      if (this.stopped) {
        reject(new ConsensusError('STOPPED', 'consensus is stopped'));
        return;
      }
      this.enqueue({
        kind: 'call',
        fn: async () => {
          try {
            resolve(await fn());
          } catch (err) {
            reject(err);
          }
        },
      });
    });
  }

  /** Starts the next height now; resolves to the height that is being (or was) produced. */
  private async startBlockNow(): Promise<number> {
    const s = this.engine;
    const height = s.height;
    if (s.step === 'NewHeight') {
      if (this.heightWait) {
        this.scheduler.clearTimer(this.heightWait.timer);
        this.timers.delete(this.heightWait.timer);
        this.heightWait = null;
      }
      await this.process({ kind: 'timeout', height, round: s.round, step: 'NewHeight', now: this.now() });
    } else if (s.step === 'NewRound' && s.round === 0) {
      // create_empty_blocks = false and no transactions: a block is asked for all the same.
      await this.process({ kind: 'txsAvailable', now: this.now() });
    }
    return height;
  }

  /**
   * Mines `count` blocks through consensus, one after the other. The first takes `firstTimeNs`
   * when given; each later one its predecessor's time plus `intervalNs` when given.
   */
  async mineBlocks(count: number, opts: { firstTimeNs?: bigint; intervalNs?: bigint } = {}): Promise<void> {
    if (opts.firstTimeNs !== undefined) await this.setNextBlockTime(opts.firstTimeNs);
    for (let i = 0; i < count; i++) {
      if (i > 0 && opts.intervalNs !== undefined) {
        const step = opts.intervalNs > 0n ? opts.intervalNs : 1_000_000n;
        await this.devCall(() => {
          const t = this.chain.lastBlockTime + step;
          this.nextBlockTimeNs = t;
          if (t > this.now()) this.clockOffsetNs = t - this.baseNow();
        });
      }
      const height = await this.devCall(() => this.startBlockNow());
      await this.waitForHeight(height, 60_000);
    }
  }

  /** evm_setAutomine: on, transactions start a block at once; off, only timed blocks. */
  setAutomine(on: boolean): Promise<void> {
    return this.devCall(() => {
      this.automine = on;
      this.armHeightWait();
    });
  }

  /** evm_setIntervalMining: an empty block every `ms` (after the commit wait); 0 = none. */
  setIntervalMining(ms: number): Promise<void> {
    return this.devCall(() => {
      this.emptyBlockMs = ms > 0 ? ms : null;
      this.armHeightWait();
    });
  }

  /** evm_increaseTime: moves the clock forward; the next block takes the new time. Returns the offset. */
  increaseTime(ns: bigint): Promise<bigint> {
    return this.devCall(() => {
      this.clockOffsetNs += ns;
      this.timeMoved = true;
      return this.clockOffsetNs;
    });
  }

  /** evm_setNextBlockTimestamp: the next block's time; later blocks continue from it. */
  setNextBlockTime(timeNs: bigint): Promise<void> {
    return this.devCall(() => {
      if (timeNs <= this.chain.lastBlockTime) {
        throw new ConsensusError(
          'INVALID_TIME',
          `timestamp ${timeNs} ns is not after the last block's time ${this.chain.lastBlockTime} ns`,
        );
      }
      this.nextBlockTimeNs = timeNs;
      this.clockOffsetNs = timeNs - this.baseNow();
    });
  }

  /**
   * evm_snapshot: what devRewind() brings the chain back to, taken between blocks: the chain
   * state, the application's point (`appPoint`, read in the same queue turn) and the dev clock.
   */
  devSnapshot<A>(appPoint: () => Promise<A>): Promise<DevSnapshot<A>> {
    return this.devCall(async () => ({
      target: { chainState: this.chain, app: await appPoint() },
      clockOffsetNs: this.clockOffsetNs,
      nextBlockTimeNs: this.nextBlockTimeNs,
      timeMoved: this.timeMoved,
    }));
  }

  /**
   * evm_revert: brings every store back to the snapshot's height (rollback.ts: intent, the
   * application through `rollbackApp`, block and state stores, WAL, double-sign guard), then
   * continues from there as after a restart at that height, with the snapshot's dev clock.
   * Refused unless this node is chain-local's single validator (the guard moves back only here).
   */
  devRewind<A>(
    snap: DevSnapshot<A>,
    io: { intentFile: string; rollbackApp: (app: A, height: number) => Promise<void> },
  ): Promise<void> {
    return this.devCall(async () => {
      const height = snap.target.chainState.lastBlockHeight;
      if (height > this.chain.lastBlockHeight)
        throw new ConsensusError(
          'ROLLBACK',
          `cannot revert to height ${height}: the chain is at ${this.chain.lastBlockHeight}`,
        );
      // Quiet: no timer fires and no queued engine event of the removed heights runs later.
      for (const t of this.timers) this.scheduler.clearTimer(t);
      this.timers.clear();
      this.heightWait = null;
      for (let i = this.queue.length - 1; i >= 0; i--) {
        const k = this.queue[i]!.kind;
        if (k === 'engine' || k === 'gossip') this.queue.splice(i, 1);
      }
      await this.wal?.close();
      this.wal = null;
      await writeRollbackIntent(this.fs, io.intentFile, snap.target);
      try {
        await this.rewindStores(snap, io, height);
      } catch (err) {
        // Stores between two heights: stop here; the next start finishes the revert (intent file).
        const e = new ConsensusError(
          'ROLLBACK',
          `evm_revert to height ${height} failed: ${(err as Error).message}`,
        );
        this.fail(e);
        throw e;
      }
      this.chain = snap.target.chainState;
      const seen =
        height >= this.chain.initialHeight ? await this.blockStore.loadSeenCommit(height) : undefined;
      this.engine = this.newEngine(seen ?? null);
      this.latest = null;
      await this.refreshRefs();
      this.clockOffsetNs = snap.clockOffsetNs;
      this.nextBlockTimeNs = snap.nextBlockTimeNs;
      this.timeMoved = snap.timeMoved;
      this.txsWaiting = false;
      this.lastBlockTxs = 0;
      for (const w of this.waiters) {
        this.scheduler.clearTimer(w.timer);
        w.reject(new ConsensusError('ROLLBACK', `reverted to height ${height} before height ${w.height}`));
      }
      this.waiters = [];
      this.wal = await Wal.open(this.fs, this.opts.walDir, this.logger, this.opts.walRotateBytes);
      this.wal.releaseReplayData();
      if (this.network) this.scheduleGossip();
      if (this.blockPool) {
        this.blockPool = new BlockPool(
          this.engine.height,
          this.opts.blockSyncWindow ?? 32,
          this.opts.blockSyncTimeoutMs ?? 10_000,
        );
        this.scheduleBlockSyncTick();
      }
      this.logger.info({ height }, 'reverted to a snapshot');
      this.opts.bus.publish({ kind: 'ChainRewound', height });
      // As after a commit (not as at start-up, which begins round 0 at once): the next block comes
      // when the pacing says so (a transaction, evm_mine, the empty-block interval).
      this.startHeightWait(this.engine.height, 0, 0);
    });
  }

  /** devRewind's steps after the intent: the application, the consensus stores, the intent removed. */
  private async rewindStores<A>(
    snap: DevSnapshot<A>,
    io: { intentFile: string; rollbackApp: (app: A, height: number) => Promise<void> },
    height: number,
  ): Promise<void> {
    // Blocks held by block sync go out with the rollback's batch (which deletes those above it).
    this.blockKV.stopHolding();
    await io.rollbackApp(snap.target.app, height);
    await rollbackConsensusStores(
      {
        fs: this.fs,
        blockStore: this.blockStore,
        stateStore: this.stateStore,
        walDir: this.opts.walDir,
        privValidatorStateFile: undefined,
        privval: this.privval,
      },
      snap.target.chainState,
    );
    await this.fs.remove(io.intentFile);
  }

  /** The pacing and clock state the dev controls set (anvil_nodeInfo-like reads, tests). */
  devState(): { automine: boolean; intervalMs: number | null; clockOffsetNs: bigint } {
    return { automine: this.automine, intervalMs: this.emptyBlockMs, clockOffsetNs: this.clockOffsetNs };
  }

  /** Verifies evidence and adds it to the pool; resolves to its hash. */
  submitEvidence(evidence: DuplicateVoteEvidence): Promise<Uint8Array> {
    return this.queued(() => this.pool.add(evidence, this.chain));
  }

  /** Evidence waiting to be included in a block. */
  pendingEvidence(): DuplicateVoteEvidence[] {
    return this.pool.forProposal(BigInt(Number.MAX_SAFE_INTEGER));
  }

  /** Resolves when `height` is committed and applied; rejects after timeoutMs. */
  waitForHeight(height: number, timeoutMs: number): Promise<void> {
    if (this.chain.lastBlockHeight >= height) return Promise.resolve();
    if (this.fatalError) return Promise.reject(this.fatalError);
    return new Promise((resolve, reject) => {
      const w = {
        height,
        resolve,
        reject,
        timer: undefined as unknown,
      };
      w.timer = this.scheduler.setTimer(timeoutMs, () => {
        this.waiters = this.waiters.filter((x) => x !== w);
        reject(
          new ConsensusError(
            'TIMEOUT',
            `height ${height} was not committed within ${timeoutMs} ms (at ${this.chain.lastBlockHeight})`,
          ),
        );
      });
      this.waiters.push(w);
    });
  }

  // -------------------------------------------------------------------------------------------
  // Reads (the block-store / round-state part of NodeReader)

  /** Lowest stored height (0 when empty). */
  blockStoreBase(): number {
    return this.blockStore.base;
  }

  /**
   * Block sync: where the commit of a received block stands on the verification thread (undefined:
   * not sent to it, or forgotten once applied). Diagnostics and tests.
   */
  blockSyncCommitCheck(height: number): CommitCheck | undefined {
    return this.commitVerifier?.status(height);
  }

  /** Whether block sync's commit thread is running (it runs only while the node catches up). */
  blockSyncVerifierRunning(): boolean {
    return this.commitVerifier?.running ?? false;
  }

  /** Highest height stored and applied by the application (0 before the first block). */
  blockStoreHeight(): number {
    return Math.min(
      this.blockStore.height,
      this.chain.lastBlockHeight < this.chain.initialHeight ? 0 : this.chain.lastBlockHeight,
    );
  }

  loadBlock(height: number): Promise<Block | undefined> {
    if (height > this.blockStoreHeight()) return Promise.resolve(undefined);
    return this.blockStore.loadBlock(height);
  }

  async loadBlockByHash(hash: Uint8Array): Promise<{ block: Block; blockId: BlockId } | undefined> {
    const h = await this.blockStore.heightOfHash(hash);
    if (h === undefined || h > this.blockStoreHeight()) return undefined;
    const block = await this.blockStore.loadBlock(h);
    return block ? { block, blockId: blockIdOf(block) } : undefined;
  }

  loadBlockMeta(height: number): Promise<BlockMeta | undefined> {
    if (height > this.blockStoreHeight()) return Promise.resolve(undefined);
    return this.blockStore.loadBlockMeta(height);
  }

  loadCommit(height: number): Promise<{ commit: Commit; canonical: boolean } | undefined> {
    if (height > this.blockStoreHeight()) return Promise.resolve(undefined);
    return this.blockStore.loadCommit(height);
  }

  async loadBlockResults(height: number): Promise<StoredBlockResults | undefined> {
    if (height > this.blockStoreHeight()) return undefined;
    const r = await this.stateStore.loadResults(height);
    if (!r) return undefined;
    return {
      height,
      txResults: r.txResults,
      finalizeBlockEvents: r.events,
      validatorUpdates: r.validatorUpdates,
      consensusParamUpdates: r.consensusParamUpdates,
      appHash: r.appHash,
    };
  }

  /** Validator set (with proposer priorities) of `height`, up to the next height. */
  async validators(height: number): Promise<Validator[] | undefined> {
    if (height > this.chain.lastBlockHeight + 1) return undefined;
    return (await this.stateStore.loadValidators(height))?.validators;
  }

  async consensusParams(height: number): Promise<ConsensusParams | undefined> {
    if (height > this.chain.lastBlockHeight + 1) return undefined;
    return this.stateStore.loadParams(height);
  }

  /** The replicated state consensus is building on. */
  chainState(): ChainState {
    return this.chain;
  }

  /** Read-only view of the engine (simulator and tests). */
  engineState(): Readonly<EngineState> {
    return this.engine;
  }

  syncInfo(): SyncInfo {
    const empty = new Uint8Array(0);
    return {
      latestBlockHash: this.latest?.hash ?? empty,
      latestAppHash: this.latest ? this.latest.appHash : this.chain.appHash,
      latestBlockHeight: this.latest?.height ?? 0,
      latestBlockTime: this.latest?.time ?? this.chain.lastBlockTime,
      earliestBlockHash: this.earliest?.hash ?? empty,
      earliestAppHash: this.earliest?.appHash ?? this.chain.appHash,
      earliestBlockHeight: this.earliest?.height ?? 0,
      earliestBlockTime: this.earliest?.time ?? this.chain.lastBlockTime,
      catchingUp: this.catchingUp(),
    };
  }

  private nowMs(): number {
    return Number(this.now() / 1_000_000n);
  }

  /**
   * Whether a peer heard from in the last 10 s works on a height at least two above this node's:
   * this node is missing committed blocks and fetches them (block sync). Peers' heights are taken as
   * reported, as CometBFT's block sync takes them; a lying peer can keep this true, not make the
   * node accept anything (every synced block carries a commit the engine verifies).
   */
  catchingUp(): boolean {
    const since = this.nowMs() - 10_000;
    for (const [peer, p] of this.peerHeights) {
      if (p.at < since) this.peerHeights.delete(peer);
      else if (p.height >= this.engine.height + 2) return true;
    }
    return false;
  }

  validatorInfo(): { address: Uint8Array; pubKey: Uint8Array; votingPower: bigint } {
    if (!this.privval) return { address: new Uint8Array(0), pubKey: new Uint8Array(0), votingPower: 0n };
    const address = this.privval.address();
    const i = this.chain.validators.indexOf(address);
    return {
      address,
      pubKey: this.privval.pubKey,
      votingPower: i >= 0 ? this.chain.validators.getByIndex(i)!.votingPower : 0n,
    };
  }

  roundState(): RoundStateSummary {
    const s = this.engine;
    const vals = s.chain.validators;
    const render = (set: ReturnType<EngineState['votes']['prevotes']>) =>
      vals.validators.map((_, i) => {
        const v = set.get(i);
        return v ? voteString(v) : 'nil-Vote';
      });
    const votes = s.votes.roundNumbers().length > 0 ? s.votes.roundNumbers() : [s.round];
    const proposer = vals.size > 0 ? proposerOf(s, s.round) : null;
    const proposal = s.proposals.get(s.round);
    return {
      height: s.height,
      round: s.round,
      step: `RoundStep${s.step}`,
      startTime: s.startTime,
      proposerAddress: proposer?.address ?? null,
      votes: votes.map((r) => ({
        round: r,
        prevotes: render(s.votes.prevotes(r)),
        prevotesBitArray: s.votes.prevotes(r).bitArrayString(),
        precommits: render(s.votes.precommits(r)),
        precommitsBitArray: s.votes.precommits(r).bitArrayString(),
      })),
      lockedRound: s.lockedRound,
      validRound: s.validRound,
      raw: {
        height: String(s.height),
        round: s.round,
        step: `RoundStep${s.step}`,
        start_time: new Date(Number(s.startTime / 1_000_000n)).toISOString(),
        commit_round: s.commitRound,
        proposer: proposer
          ? { address: hexUpper(proposer.address), index: vals.indexOf(proposer.address) }
          : null,
        proposal: proposal
          ? {
              height: String(proposal.proposal.height),
              round: proposal.proposal.round,
              pol_round: proposal.proposal.polRound,
              block_id: hexUpper(proposal.blockId.hash),
            }
          : null,
        locked_round: s.lockedRound,
        locked_block_hash: s.lockedBlock ? hexUpper(s.lockedBlock.blockId.hash) : '',
        valid_round: s.validRound,
        valid_block_hash: s.validBlock ? hexUpper(s.validBlock.blockId.hash) : '',
        validators: vals.validators.map((v) => ({
          address: hexUpper(v.address),
          voting_power: v.votingPower.toString(),
          proposer_priority: v.proposerPriority.toString(),
        })),
        last_commit: s.lastCommit
          ? { round: s.lastCommit.round, bit_array: s.lastCommit.bitArrayString() }
          : null,
        evidence_pending: this.pool.pendingCount(),
      },
    };
  }
}

function validateOptions(o: ConsensusRuntimeOptions): void {
  const bad = (field: string, why: string): never => {
    throw new ConsensusError('INVALID_OPTIONS', `consensus options: ${field}: ${why}`);
  };
  if (!o.chainId) bad('chainId', 'must not be empty');
  for (const [k, v] of Object.entries(o.timeouts)) {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
      bad(`timeouts.${k}`, `must be a non-negative number of ms, got ${v}`);
  }
  if (!Number.isInteger(o.doubleSignCheckHeight) || o.doubleSignCheckHeight < 0)
    bad('doubleSignCheckHeight', `must be a non-negative integer, got ${o.doubleSignCheckHeight}`);
  if (o.genesis.validators.length === 0) bad('genesis.validators', 'must list at least one validator');
  if (!o.walDir) bad('walDir', 'must be set');
}
