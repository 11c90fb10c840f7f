// The consensus service (docs/cluster.md): the engine, the WAL and the validator key on the home's
// block store and state store, driving the executor service through GrpcApplication, and the
// CometBFT RPC on [rpc] laddr. When the executor is lost (a failed FinalizeBlock or Commit, or it is
// unreachable), the runtime stops as CometBFT stops on a failed ABCI connection; the service then
// waits for the executor and starts a new runtime on the same stores, whose handshake replays the
// blocks the executor lacks.
import {
  Inject,
  Injectable,
  Module,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import {
  AbciClientError,
  AdmissionStream,
  GatewayHost,
  GrpcApplication,
  GrpcMempool,
  mutualTlsChannelCredentials,
} from '@noded/abci-grpc';
import {
  homePaths,
  loadNodeKey,
  loadValidatorKey,
  toCometRpcOptions,
  toConsensusTimeouts,
} from '@noded/config';
import { ConsensusRuntime } from '@noded/consensus';
import {
  type BlockStoreReads,
  BlockSyncChannel,
  ConsensusChannel,
  LightChannel,
  lightBlockSourceOf,
  MempoolChannel,
} from '@noded/p2p';
import { CometRpcServer, TxIndexer } from '@noded/rpc';
import { dialHost, hostPort } from '@noded/service-shared/src/addresses.js';
import {
  Closers,
  SERVICE_FATAL,
  SERVICE_LOGGER,
  SERVICE_SETTINGS,
  type ServiceFatal,
  type ServiceModuleFactory,
} from '@noded/service-shared/src/bootstrap.js';
import { DATABASE_MEMORY } from '@noded/service-shared/src/databases.js';
import { serveServiceMetrics } from '@noded/service-shared/src/service-metrics.js';
import type { ServiceSettings } from '@noded/service-shared/src/settings.js';
import { NODED_VERSION } from '@noded/service-shared/src/version.js';
import { type KVStore, RocksKV } from '@noded/storage';
import { EventBus, type Logger } from '@noded/types';
import { ExecutorGossipPool } from './gossip-pool.js';
import { IndexerThread } from './indexer-thread/thread.js';
import { ClusterNodeReader } from './reader.js';

export const BLOCKSTORE_DB = Symbol('blockstore.db');
export const STATE_DB = Symbol('state.db');
export const CONSENSUS_BUS = Symbol('EventBus');
export const PEER_NETWORK = Symbol('PeerNetwork');
export const EXECUTOR_MEMPOOL = Symbol('ExecutorMempool');

/**
 * The executor's mempool as consensus reaches it: unary calls (unconfirmed_txs, the pool for a new
 * peer) and the stream of admissions (gossip, blocks on demand).
 */
export interface ExecutorMempool {
  mempool: GrpcMempool;
  admissions: AdmissionStream;
}

/**
 * Peers through the p2p-gateway (NODED_P2P_GATEWAY_ADDRESS), or none: the channels of `noded start`
 * run here over the gateway's relay, and the runtime in use is set in `runtime` for the light channel.
 */
export interface PeerNetwork {
  gateway?: GatewayHost;
  consensus?: ConsensusChannel;
  blockSync?: BlockSyncChannel;
  runtime: { current?: ConsensusRuntime };
}

/** Pause between attempts to reach a lost executor (each attempt waits up to this long too). */
const RECONNECT_STEP_MS = 1_000;

/**
 * The consensus runtime of this service. `current` is the runtime running now; after the executor is
 * lost and back, it is a new runtime on the same stores.
 */
@Injectable()
export class ConsensusHost implements OnApplicationBootstrap, OnApplicationShutdown {
  private runtime: ConsensusRuntime | undefined;
  private recovering: Promise<void> | undefined;
  private stopping = false;
  /** The executor is lost and consensus waits for it (not ready). */
  private lost = false;
  private readonly log: Logger;
  private started: () => void = () => {};
  /** Resolves once the first runtime runs (the RPC starts after it). */
  readonly ready = new Promise<void>((resolve) => {
    this.started = resolve;
  });

  constructor(
    @Inject(SERVICE_SETTINGS) private readonly settings: ServiceSettings,
    @Inject(SERVICE_LOGGER) private readonly logger: Logger,
    @Inject(SERVICE_FATAL) private readonly fatal: ServiceFatal,
    @Inject(Closers) private readonly closers: Closers,
    @Inject(GrpcApplication) private readonly app: GrpcApplication,
    @Inject(BLOCKSTORE_DB) private readonly blockStore: KVStore,
    @Inject(STATE_DB) private readonly stateStore: KVStore,
    @Inject(CONSENSUS_BUS) private readonly bus: EventBus,
    @Inject(PEER_NETWORK) private readonly peers: PeerNetwork,
    @Inject(EXECUTOR_MEMPOOL) private readonly pool: ExecutorMempool,
  ) {
    this.log = logger.child({ module: 'service' });
  }

  /**
   * Blocks on demand, as `noded start` wires them (services/noded/src/node.ts): the runtime is told
   * that transactions wait on every admission the executor streams (from an rpc-edge, this RPC or a
   * peer) and, with create_empty_blocks = false, an empty-blocks interval or on chain-local, after a
   * block that left executable ones in the pool (a transaction behind a nonce gap does not keep
   * making blocks). The runtime decides what that means for its pacing.
   */
  private wakeOnAdmissions(): void {
    const off = this.pool.admissions.onBatch((b) => {
      // A dev operation the executor queued (chain-local) wants a block as a transaction does.
      if ((b.txs.length > 0 || b.devQueued) && this.runtime && !this.lost) this.runtime.txsAvailable();
    });
    this.closers.add('txs-available', off);
    const t = toConsensusTimeouts(this.settings.loaded.config);
    if (
      t.createEmptyBlocks &&
      t.createEmptyBlocksIntervalMs === 0 &&
      this.settings.genesis.runtime.chainId !== 'chain-local'
    )
      return;
    const unsubscribe = this.bus.subscribe((ev) => {
      if (ev.kind !== 'NewBlock') return;
      // HasExecutable stops at the first executable sender; UnconfirmedTxs(0) would build the
      // pool's whole summary after every block.
      this.pool.mempool.hasExecutable().then(
        (executable) => {
          if (executable && this.runtime && !this.lost) this.runtime.txsAvailable();
        },
        // The executor is unreachable: the stream's reconnection sends the pool when it is back.
        () => {},
      );
    });
    this.closers.add('txs-available after a block', unsubscribe);
  }

  /** A runtime is running and the executor is not lost. */
  get running(): boolean {
    return this.runtime !== undefined && !this.lost && !this.stopping;
  }

  get current(): ConsensusRuntime {
    if (!this.runtime) throw new Error('consensus is not running');
    return this.runtime;
  }

  async onApplicationBootstrap(): Promise<void> {
    this.closers.add('consensus', () => this.stop());
    await this.waitForExecutor(this.settings.cluster.executorWaitMs);
    this.runtime = await this.create();
    this.peers.runtime.current = this.runtime;
    await this.runtime.start();
    this.wakeOnAdmissions();
    this.pool.admissions.start();
    this.peers.gateway?.start();
    this.started();
    this.log.info(
      { height: this.runtime.blockStoreHeight(), executor: this.app.address },
      'consensus started',
    );
  }

  async onApplicationShutdown(): Promise<void> {
    await this.closers.closeAll();
  }

  private async stop(): Promise<void> {
    this.stopping = true;
    await this.recovering?.catch(() => {});
    await this.runtime?.stop();
  }

  private async waitForExecutor(totalMs: number): Promise<void> {
    const until = Date.now() + totalMs;
    let last: Error | undefined;
    while (!this.stopping) {
      try {
        await this.app.waitReady(Math.max(100, Math.min(RECONNECT_STEP_MS * 5, until - Date.now())));
        return;
      } catch (err) {
        last = err as Error;
      }
      if (Date.now() >= until) break;
      await new Promise((r) => setTimeout(r, RECONNECT_STEP_MS));
    }
    if (this.stopping) throw new Error('stopped while waiting for the executor');
    throw new Error(
      `the executor at ${this.app.address} did not answer within ${totalMs} ms ($NODED_EXECUTOR_WAIT): ${last?.message ?? 'no answer'}`,
    );
  }

  private async create(): Promise<ConsensusRuntime> {
    const s = this.settings;
    const genesis = s.genesis.runtime;
    const paths = homePaths(s.home);
    const timeouts = toConsensusTimeouts(s.loaded.config);
    return ConsensusRuntime.create({
      chainId: genesis.chainId,
      genesis: {
        time: genesis.time,
        initialHeight: genesis.initialHeight,
        validators: genesis.validators,
        consensusParams: genesis.consensusParams,
        appState: genesis.appState,
      },
      timeouts: timeouts.timeouts,
      createEmptyBlocks: timeouts.createEmptyBlocks,
      createEmptyBlocksIntervalMs: timeouts.createEmptyBlocksIntervalMs,
      skipTimeoutCommit: timeouts.skipTimeoutCommit,
      // Each FinalizeBlock carries the height's light block, which the executor puts on the stream
      // for the state-stores to verify (docs/cluster.md "Commit checks").
      lightBlocks: true,
      devControls: false,
      doubleSignCheckHeight: timeouts.doubleSignCheckHeight,
      privValidator: { keyFile: paths.privValidatorKey, stateFile: paths.privValidatorState },
      walDir: paths.csWal,
      blockStore: this.blockStore,
      stateStore: this.stateStore,
      app: this.app,
      bus: this.bus,
      ...(this.peers.consensus ? { network: this.peers.consensus } : {}),
      ...(this.peers.blockSync ? { blockSync: this.peers.blockSync } : {}),
      // Block sync batches its sync points only behind an application that holds its commits in
      // memory until one (Application.flushHeld): the executor over gRPC does not (its commit is
      // fsynced, CommitOptions do not cross gRPC), so the runtime makes every synced block its own
      // sync point here, and the application is never ahead of the block store after a power failure.
      logger: this.logger.child({ module: 'consensus' }),
      onFatal: (err) => this.onFatal(err),
    });
  }

  /** A lost executor is waited for; anything else stops the service. */
  private onFatal(err: Error): void {
    if (this.stopping) return;
    if (!(err instanceof AbciClientError) || !RECOVERABLE.has(err.code)) {
      this.fatal(err);
      return;
    }
    this.log.warn(
      { err: err.message, executor: this.app.address },
      'executor lost; waiting for it to come back',
    );
    this.lost = true;
    this.recovering = (async () => {
      // The stopped runtime still answers reads of its stores until the new one replaces it.
      await this.runtime?.stop();
      await this.waitForExecutor(this.settings.cluster.executorWaitMs);
      const rt = await this.create();
      this.runtime = rt;
      this.peers.runtime.current = rt;
      await rt.start();
      this.lost = false;
      this.log.info({ height: rt.blockStoreHeight() }, 'executor back; consensus restarted');
    })().catch((e: Error) => {
      if (!this.stopping)
        this.fatal(new Error(`executor at ${this.app.address} not recovered: ${e.message}`));
    });
  }
}

/** Failures of the connection, not of the application: the executor may come back. */
const RECOVERABLE = new Set(['UNREACHABLE', 'TIMEOUT', 'RPC']);

/** The CometBFT RPC on [rpc] laddr, with the tx indexer when tx_index.indexer = "kv". */
@Injectable()
export class CometRpcHost implements OnApplicationBootstrap {
  private readonly log: Logger;

  constructor(
    @Inject(SERVICE_SETTINGS) private readonly settings: ServiceSettings,
    @Inject(SERVICE_LOGGER) private readonly logger: Logger,
    @Inject(SERVICE_FATAL) private readonly fatal: ServiceFatal,
    @Inject(Closers) private readonly closers: Closers,
    @Inject(GrpcApplication) private readonly app: GrpcApplication,
    @Inject(CONSENSUS_BUS) private readonly bus: EventBus,
    @Inject(ConsensusHost) private readonly consensus: ConsensusHost,
    @Inject(PEER_NETWORK) private readonly peers: PeerNetwork,
    @Inject(EXECUTOR_MEMPOOL) private readonly pool: ExecutorMempool,
  ) {
    this.log = logger.child({ module: 'service' });
  }

  async onApplicationBootstrap(): Promise<void> {
    // Nest runs a module's bootstrap hooks concurrently: the RPC reads a running runtime.
    await this.consensus.ready;
    const s = this.settings;
    const { config } = s.loaded;
    const paths = homePaths(s.home);
    const options = toCometRpcOptions(config);
    const thread =
      config.txIndex.indexer === 'kv'
        ? await IndexerThread.open({ path: paths.txIndexDb, onFatal: (err) => this.fatal(err) })
        : undefined;
    const indexer = thread
      ? new TxIndexer({ backend: thread, bus: this.bus, logger: this.logger })
      : new TxIndexer({ disabled: true, bus: this.bus, logger: this.logger });
    if (thread)
      // tx_index.db is flushed in its own thread when this service's main thread goes quiet.
      this.closers.addDatabase('indexer', {
        location: thread.location,
        flushMemtables: (min) => thread.flushMemtables(min),
        evictBlockCache: (min) => thread.evictBlockCache(min),
        close: () => indexer.close(),
      });
    else this.closers.add('indexer', () => indexer.close());
    const reader = new ClusterNodeReader({
      consensus: () => this.consensus.current,
      app: this.app,
      mempool: this.pool.mempool,
      nodeId: loadNodeKey(paths.nodeKey).nodeId,
      moniker: config.moniker,
      chainId: s.genesis.runtime.chainId,
      rpcAddress: options.laddr,
      genesisText: s.genesis.text,
      version: NODED_VERSION,
      txIndex: indexer.enabled,
      ...(this.peers.gateway ? { gateway: this.peers.gateway } : {}),
    });
    const reindexed = await indexer.catchUp(reader);
    if (reindexed > 0) this.log.info({ blocks: reindexed }, 'tx index caught up with the block store');
    // consensus_* metrics from the bus and the reader (validators, block size), the RPC's calls.
    const metrics = await serveServiceMetrics(s, this.logger.child({ module: 'metrics' }), this.closers, {
      bus: this.bus,
      node: reader,
      readiness: () => ({ serving: this.consensus.running, catchingUp: false }),
    });
    // state_block_processing_time as CometBFT reports it: each FinalizeBlock as consensus sees it
    // (the gRPC round trip to the executor, execution included), in ms.
    this.closers.add(
      'finalize timing',
      this.app.onFinalizeBlock((_height, ms) => metrics.observeBlockProcessing(ms)),
    );
    const comet = new CometRpcServer({
      node: reader,
      bus: this.bus,
      indexer,
      logger: this.logger.child({ module: 'rpc' }),
      options,
      observe: (method, ms, ok) => metrics.observeRpc(method, ms, ok),
    });
    this.closers.add('rpc', () => comet.close());
    const at = hostPort(options.laddr);
    const port = await comet.listen(at.host, at.port);
    this.log.info({ url: `http://${dialHost(at.host)}:${port}` }, 'consensus RPC listening');
  }
}

/**
 * Without a p2p-gateway consensus has no peers: it can only run a chain this home validates alone.
 * With NODED_P2P_GATEWAY_ADDRESS set, any genesis goes (a validator among others, or a full node).
 */
function checkSingleValidator(s: ServiceSettings): void {
  if (s.cluster.p2pGatewayAddress !== null) return;
  const validators = s.genesis.runtime.validators;
  if (validators.length !== 1) {
    throw new Error(
      `genesis.json has ${validators.length} validators: without a p2p-gateway the consensus service runs a single-validator chain only; run "noded service p2p-gateway" and set $NODED_P2P_GATEWAY_ADDRESS`,
    );
  }
  const key = loadValidatorKey(homePaths(s.home).privValidatorKey);
  if (!Buffer.from(key.publicKey).equals(Buffer.from(validators[0]!.pubKey))) {
    throw new Error(
      `${homePaths(s.home).privValidatorKey} is not the key of genesis.json's only validator: without a p2p-gateway this node could never receive a block; run "noded service p2p-gateway" and set $NODED_P2P_GATEWAY_ADDRESS`,
    );
  }
}

/** The channels of `noded start` over the gateway's relay (nothing when no gateway is configured). */
function peerNetworkOf(
  s: ServiceSettings,
  app: GrpcApplication,
  executorMempool: ExecutorMempool,
  logger: Logger,
  closers: Closers,
): PeerNetwork {
  const runtime: PeerNetwork['runtime'] = {};
  const address = s.cluster.p2pGatewayAddress;
  if (address === null) return { runtime };
  const credentials = s.cluster.grpcTls ? mutualTlsChannelCredentials(s.cluster.grpcTls) : undefined;
  const gateway = new GatewayHost({
    address,
    chainId: s.genesis.runtime.chainId,
    nodeId: loadNodeKey(homePaths(s.home).nodeKey).nodeId,
    logger: logger.child({ module: 'p2p' }),
    ...(credentials ? { credentials } : {}),
  });
  closers.add('p2p-gateway client', () => gateway.stop());
  const maxBlockBytes = Number(s.genesis.runtime.consensusParams.block.maxBytes);
  const consensus = new ConsensusChannel(gateway, maxBlockBytes);
  // /noded/blocksync/1, as `noded start` runs it: peers behind catch up from this node and it from them.
  const blockSync = new BlockSyncChannel(gateway, maxBlockBytes);
  // The executor's admissions, streamed, go to the peers (StreamAdmitted; no polling).
  const pool = new ExecutorGossipPool(app, executorMempool.mempool, executorMempool.admissions);
  const gossip = new MempoolChannel(
    gateway,
    pool,
    s.loaded.config.mempool.maxTxBytes,
    logger.child({ module: 'mempool' }),
  );
  closers.add('mempool gossip', () => {
    pool.close();
    gossip.close();
  });
  // Light nodes ask for signed headers from the runtime in use (a new one after an executor loss).
  const store: BlockStoreReads = {
    blockStoreBase: () => runtime.current?.blockStoreBase() ?? 0,
    blockStoreHeight: () => runtime.current?.blockStoreHeight() ?? 0,
    loadBlockMeta: async (h) => runtime.current?.loadBlockMeta(h),
    loadCommit: async (h) => runtime.current?.loadCommit(h),
    validators: async (h) => runtime.current?.validators(h),
  };
  const light = new LightChannel(gateway, {
    source: lightBlockSourceOf(store),
    logger: logger.child({ module: 'light' }),
  });
  closers.add('light serving', () => light.close());
  return { gateway, consensus, blockSync, runtime };
}

export const consensusModule: ServiceModuleFactory = (settings, shared) => {
  checkSingleValidator(settings);
  return {
    module: ConsensusModule,
    providers: [
      { provide: SERVICE_SETTINGS, useValue: settings },
      { provide: SERVICE_LOGGER, useValue: shared.logger },
      { provide: SERVICE_FATAL, useValue: shared.fatal },
      { provide: Closers, useValue: shared.closers },
      { provide: CONSENSUS_BUS, useValue: new EventBus() },
      {
        provide: GrpcApplication,
        inject: [SERVICE_SETTINGS, Closers],
        useFactory: (s: ServiceSettings, closers: Closers) => {
          const app = new GrpcApplication(
            s.cluster.executorGrpcAddress,
            s.cluster.grpcTls ? { credentials: mutualTlsChannelCredentials(s.cluster.grpcTls) } : {},
          );
          closers.add('executor client', () => app.close());
          return app;
        },
      },
      {
        provide: BLOCKSTORE_DB,
        inject: [SERVICE_SETTINGS, Closers],
        useFactory: async (s: ServiceSettings, closers: Closers) => {
          const kv = await RocksKV.open(homePaths(s.home).blockstoreDb, DATABASE_MEMORY.blockstore);
          closers.addDatabase('blockstore.db', kv);
          return kv;
        },
      },
      {
        provide: STATE_DB,
        inject: [SERVICE_SETTINGS, Closers],
        useFactory: async (s: ServiceSettings, closers: Closers) => {
          const kv = await RocksKV.open(homePaths(s.home).stateDb, DATABASE_MEMORY.state);
          closers.addDatabase('state.db', kv);
          return kv;
        },
      },
      {
        provide: EXECUTOR_MEMPOOL,
        inject: [SERVICE_SETTINGS, Closers],
        useFactory: (s: ServiceSettings, closers: Closers): ExecutorMempool => {
          const credentials = s.cluster.grpcTls ? mutualTlsChannelCredentials(s.cluster.grpcTls) : undefined;
          const mempool = new GrpcMempool(s.cluster.executorGrpcAddress, credentials ? { credentials } : {});
          closers.add('executor mempool client', () => mempool.close());
          const admissions = new AdmissionStream(s.cluster.executorGrpcAddress, {
            logger: shared.logger.child({ module: 'mempool' }),
            ...(credentials ? { credentials } : {}),
          });
          closers.add('executor admission stream', () => admissions.stop());
          return { mempool, admissions };
        },
      },
      {
        provide: PEER_NETWORK,
        inject: [SERVICE_SETTINGS, GrpcApplication, EXECUTOR_MEMPOOL, Closers],
        useFactory: (s: ServiceSettings, app: GrpcApplication, pool: ExecutorMempool, closers: Closers) =>
          peerNetworkOf(s, app, pool, shared.logger, closers),
      },
      ConsensusHost,
      CometRpcHost,
    ],
  };
};

@Module({})
export class ConsensusModule {}
