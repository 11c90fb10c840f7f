// The executor service (docs/cluster.md): the EVM executor on the home's application.db, served to
// consensus as noded.abci.v1.Application over gRPC with grpc.health.v1 on the same port. It is the
// only writer of committed data.
import { Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import {
  type AbciServer,
  type AdmissionStreamStats,
  mutualTlsServerCredentials,
  serveApplication,
} from '@noded/abci-grpc';
import { executorOpenOptions, homePaths, toExecutorSettings, toInstrumentationOptions } from '@noded/config';
import { DEV_CHAIN_ID, DepositWatcher, Executor, kvWatcherProgress } from '@noded/execution';
import {
  Closers,
  SERVICE_LOGGER,
  SERVICE_SETTINGS,
  type ServiceModuleFactory,
} from '@noded/service-shared/src/bootstrap.js';
import { DATABASE_MEMORY } from '@noded/service-shared/src/databases.js';
import { hasDevControls } from '@noded/service-shared/src/dev-controls.js';
import { checkNatsLogin, natsConnectOptions } from '@noded/service-shared/src/nats.js';
import { serveServiceMetrics } from '@noded/service-shared/src/service-metrics.js';
import type { ServiceSettings } from '@noded/service-shared/src/settings.js';
import { type KVStore, RocksKV } from '@noded/storage';
import { encodeCommitted } from '@noded/stream';
import { TraceBook } from '@noded/telemetry';
import { EventBus, type Logger } from '@noded/types';
import { Counter, Gauge } from 'prom-client';
import { BlockPublisher } from './publisher.js';

export const APPLICATION_DB = Symbol('application.db');
export const EXECUTOR_BUS = Symbol('EventBus');
export const ABCI_SERVER = Symbol('AbciServer');
export const EXECUTOR_METRICS = Symbol('NodeMetrics');
/** Each FinalizeBlock's span context by height, from the ABCI server to the publisher (tracing on). */
export const BLOCK_TRACES = Symbol('BlockTraces');
/** The bridge-in watcher the Executor provider made ([bridge] enable), for the metrics provider. */
export const BRIDGE_WATCHER = Symbol('DepositWatcher');
interface BridgeWatcherSlot {
  watcher: DepositWatcher | undefined;
}

/** Grace for calls in flight when the gRPC server stops (a FinalizeBlock or Commit finishes). */
const DRAIN_MS = 5_000;

/** Closes what the providers opened, in reverse order, when Nest shuts the context down. */
@Injectable()
export class ExecutorLifecycle implements OnApplicationShutdown {
  constructor(@Inject(Closers) private readonly closers: Closers) {}

  async onApplicationShutdown(): Promise<void> {
    await this.closers.closeAll();
  }
}

/** The admission streams' counters, kept by the gRPC server and read by the metrics. */
const ADMISSION_STATS = Symbol('AdmissionStreamStats');

export const executorModule: ServiceModuleFactory = (settings, shared) => ({
  module: ExecutorModule,
  providers: [
    { provide: SERVICE_SETTINGS, useValue: settings },
    { provide: SERVICE_LOGGER, useValue: shared.logger },
    { provide: Closers, useValue: shared.closers },
    { provide: EXECUTOR_BUS, useValue: new EventBus() },
    { provide: BLOCK_TRACES, useValue: new TraceBook(1_000) },
    { provide: BRIDGE_WATCHER, useValue: { watcher: undefined } satisfies BridgeWatcherSlot },
    {
      provide: APPLICATION_DB,
      inject: [SERVICE_SETTINGS, Closers],
      useFactory: async (s: ServiceSettings, closers: Closers): Promise<KVStore> => {
        const kv = await RocksKV.open(homePaths(s.home).applicationDb, DATABASE_MEMORY.application);
        closers.addDatabase('application.db', kv);
        return kv;
      },
    },
    {
      provide: Executor,
      inject: [SERVICE_SETTINGS, SERVICE_LOGGER, Closers, APPLICATION_DB, EXECUTOR_BUS, BRIDGE_WATCHER],
      useFactory: async (
        s: ServiceSettings,
        logger: Logger,
        closers: Closers,
        kv: KVStore,
        bus: EventBus,
        slot: BridgeWatcherSlot,
      ): Promise<Executor> => {
        const x = toExecutorSettings(
          s.loaded.config,
          s.loaded.app,
          s.loaded.app.mode === 'archive' ? 'archive' : 'full',
        );
        const genesis = s.genesis.runtime;
        // Bridge in: the source-chain watcher whose deposits this validator's vote extensions attest.
        const bridge = s.loaded.app.bridge;
        let lastInbound = () => 0n;
        const watcher = bridge.enable
          ? new DepositWatcher({
              rpcUrl: bridge.ethereumRpcUrl,
              bridgeAddress: bridge.bridgeAddress,
              confirmations: bridge.confirmations,
              pollIntervalMs: bridge.pollIntervalMs,
              startBlock: BigInt(bridge.startBlock),
              progress: kvWatcherProgress(kv, bridge.bridgeAddress),
              lastProcessed: () => lastInbound(),
              logger: logger.child({ module: 'bridge' }),
            })
          : undefined;
        const executor = await Executor.open({
          kv,
          location: homePaths(s.home).applicationDb,
          ...executorOpenOptions(genesis, x),
          // The state setters and impersonation (noded.dev.v1.DevChain, for the rpc-edges) on a
          // chain-local home with its single validator's key, as `noded start` decides it. Without
          // the journal: the cluster serves no evm_snapshot/evm_revert/anvil_reset.
          devControls: hasDevControls(genesis, homePaths(s.home).privValidatorKey, DEV_CHAIN_ID),
          devJournal: false,
          // Every committed height also goes to the outbox the publisher drains into JetStream.
          outbox: { encode: encodeCommitted },
          ...(watcher ? { deposits: watcher } : {}),
          bus,
          logger: logger.child({ module: 'execution' }),
        });
        closers.add('executor', () => executor.close());
        if (executor.hasDevControls())
          logger
            .child({ module: 'service' })
            .info(
              {},
              'dev controls on (chain-local, this home holds its single validator key): rpc-edges serve the state setters and impersonation',
            );
        // The consensus state store is another service's: a missing validator set is only reported.
        await executor.checkBridgeValidatorSets();
        if (watcher) {
          lastInbound = () => executor.lastInboundSequence();
          slot.watcher = watcher;
          watcher.start();
          closers.add('bridge watcher', () => watcher.stop());
        }
        return executor;
      },
    },
    {
      provide: BlockPublisher,
      inject: [SERVICE_SETTINGS, SERVICE_LOGGER, Closers, Executor, EXECUTOR_BUS, BLOCK_TRACES],
      useFactory: async (
        s: ServiceSettings,
        logger: Logger,
        closers: Closers,
        executor: Executor,
        bus: EventBus,
        blockTraces: TraceBook,
      ) => {
        // A refused login stops the start here, naming the user; an unreachable server does not.
        await checkNatsLogin(s.cluster, 'executor', logger.child({ module: 'publisher' }));
        const publisher = new BlockPublisher({
          executor,
          bus,
          chainId: s.genesis.runtime.chainId,
          servers: s.cluster.natsUrls,
          login: natsConnectOptions(s.cluster, 'executor'),
          logger,
          blockTraces,
        });
        // Closed after the gRPC server (no more commits) and before the executor it reads.
        closers.add('publisher', () => publisher.close());
        return publisher;
      },
    },
    {
      provide: ABCI_SERVER,
      // After the publisher: it is listening for commits before the first FinalizeBlock arrives.
      inject: [
        SERVICE_SETTINGS,
        SERVICE_LOGGER,
        Closers,
        Executor,
        BlockPublisher,
        BLOCK_TRACES,
        ADMISSION_STATS,
      ],
      useFactory: async (
        s: ServiceSettings,
        logger: Logger,
        closers: Closers,
        executor: Executor,
        _publisher: BlockPublisher,
        blockTraces: TraceBook,
        admissionStats: AdmissionStreamStats,
      ): Promise<AbciServer> => {
        const server = await serveApplication(executor, s.cluster.executorGrpcAddress, {
          logger: logger.child({ module: 'abci-grpc' }),
          // rpc-edges' 'pending' nonces, txpool_* and waiting transactions by hash; consensus'
          // unconfirmed_txs and its stream of admissions (gossip, blocks on demand).
          mempool: executor,
          // rpc-edges' anvil_/hardhat_ state setters and impersonation; refused without dev controls.
          dev: executor,
          admissions: { maxBufferedBytes: s.cluster.mempoolStreamMaxBytes, stats: admissionStats },
          blockTraces,
          // Mutual TLS when NODED_GRPC_TLS_* name the files; plaintext otherwise.
          ...(s.cluster.grpcTls ? { credentials: mutualTlsServerCredentials(s.cluster.grpcTls) } : {}),
        });
        // Closed first: no FinalizeBlock or Commit reaches an executor that is closing.
        closers.add('abci gRPC server', () => server.close(DRAIN_MS));
        logger.child({ module: 'service' }).info(
          {
            address: server.address,
            height: executor.latestHeight().toString(),
            tls: s.cluster.grpcTls ? 'mutual' : 'none',
          },
          'serving noded.abci.v1.Application, noded.mempool.v1.Mempool, noded.dev.v1.DevChain and grpc.health.v1',
        );
        return server;
      },
    },
    { provide: ADMISSION_STATS, useValue: { open: 0, cutoffs: 0 } satisfies AdmissionStreamStats },
    {
      provide: EXECUTOR_METRICS,
      // The EVM gauges from the executor's EthNewHead events; the mempool, FinalizeBlock time and
      // refused transactions sampled once a second (as `noded start` does); its committed height.
      inject: [
        SERVICE_SETTINGS,
        SERVICE_LOGGER,
        Closers,
        Executor,
        EXECUTOR_BUS,
        ABCI_SERVER,
        BRIDGE_WATCHER,
        ADMISSION_STATS,
      ],
      useFactory: async (
        s: ServiceSettings,
        logger: Logger,
        closers: Closers,
        executor: Executor,
        bus: EventBus,
        server: AbciServer,
        slot: BridgeWatcherSlot,
        admissionStats: AdmissionStreamStats,
      ) => {
        let open = true;
        closers.add('readiness', () => {
          open = false;
        });
        const metrics = await serveServiceMetrics(s, logger.child({ module: 'metrics' }), closers, {
          bus,
          readiness: () => ({ serving: open && server.address !== '', catchingUp: false }),
        });
        const ns = toInstrumentationOptions(s.loaded.config).namespace;
        const chainId = s.genesis.runtime.chainId;
        new Gauge({
          name: `${ns}_mempool_admission_streams`,
          help: 'StreamAdmitted consumers (consensus services) connected now.',
          labelNames: ['chain_id'] as const,
          registers: [metrics.registry],
          collect() {
            this.set({ chain_id: chainId }, admissionStats.open);
          },
        });
        new Counter({
          name: `${ns}_mempool_admission_stream_cutoffs_total`,
          help: 'StreamAdmitted consumers cut off for being more than NODED_MEMPOOL_STREAM_MAX_BYTES behind.',
          labelNames: ['chain_id'] as const,
          registers: [metrics.registry],
          collect() {
            this.reset();
            this.inc({ chain_id: chainId }, admissionStats.cutoffs);
          },
        });
        // Its committed height (ABCI Info's last_block_height), which the metrics service compares
        // with consensus' for the cluster's /readyz.
        new Gauge({
          name: `${ns}_executor_height`,
          help: 'Latest height the executor has committed.',
          labelNames: ['chain_id'] as const,
          registers: [metrics.registry],
          async collect() {
            this.set({ chain_id: chainId }, (await executor.info()).lastBlockHeight);
          },
        });
        let seen = executor.executionStats();
        const sample = () => {
          metrics.setMempoolSize(executor.mempoolSize());
          const x = executor.executionStats();
          if (x.lastFinalizeHeight !== seen.lastFinalizeHeight && x.lastFinalizeHeight > 0)
            metrics.observeBlockProcessing(x.lastFinalizeMs);
          if (x.refusedTxs > seen.refusedTxs) metrics.incFailedTxs(x.refusedTxs - seen.refusedTxs);
          seen = x;
        };
        // Bridge in: the watcher's numbers after each poll of the source chain, as `noded start` shows them.
        const watcher = slot.watcher;
        if (watcher) {
          const record = () =>
            metrics.recordBridge({
              ...watcher.stats(),
              ...executor.inboundLimits(BigInt(Math.floor(Date.now() / 1000))),
            });
          watcher.onStats(record);
          record();
        }
        const timer = setInterval(sample, 1000);
        timer.unref();
        closers.add('metrics sampling', () => clearInterval(timer));
        return metrics;
      },
    },
    ExecutorLifecycle,
  ],
});

@Module({})
export class ExecutorModule {}
