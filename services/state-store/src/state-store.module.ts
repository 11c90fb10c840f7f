// The state-store service (docs/cluster.md): a read replica. Its own RocksDB (NODED_STATE_STORE_DB,
// default <home>/data/state-store.db) fed by the executor's JetStream stream in height order, each
// height being the executor's own write batch, so the database is a copy of application.db. An
// Executor opened on it (no mempool use, no commits) answers noded.state.v1.StateReader on
// NODED_STATE_STORE_GRPC_ADDRESS with the node's own read code; after each applied height it
// reloads its committed position. A read whose min_height (read-your-writes) is ahead of it waits for
// that height up to NODED_STATE_STORE_READ_WAIT (AppliedHeights).
import { Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import { mutualTlsServerCredentials, type StateReaderServer, serveStateReader } from '@noded/abci-grpc';
import { executorOpenOptions, toExecutorSettings, toInstrumentationOptions } from '@noded/config';
import { Executor } from '@noded/execution';
import {
  Closers,
  SERVICE_FATAL,
  SERVICE_LOGGER,
  SERVICE_SETTINGS,
  type ServiceFatal,
  type ServiceModuleFactory,
} from '@noded/service-shared/src/bootstrap.js';
import { DATABASE_MEMORY } from '@noded/service-shared/src/databases.js';
import { checkNatsLogin, natsConnectOptions } from '@noded/service-shared/src/nats.js';
import { serveServiceMetrics } from '@noded/service-shared/src/service-metrics.js';
import type { ServiceSettings } from '@noded/service-shared/src/settings.js';
import { type KVStore, RocksKV } from '@noded/storage';
import { CommitChecker, ReplicaStore } from '@noded/stream';
import { TraceBook } from '@noded/telemetry';
import { EventBus, type Logger } from '@noded/types';
import { Counter, Gauge } from 'prom-client';
import { AppliedHeights } from './applied.js';
import { StreamFollower } from './follower.js';
import { ReadWriteGate } from './gate.js';

export const REPLICA_DB = Symbol('state-store.db');
/** Heights refused for their commit, by CommitErrorCode (registered on the service's metrics). */
export const COMMIT_REFUSALS = Symbol('CommitRefusals');
export const STATE_READER_SERVER = Symbol('StateReaderServer');
export const STATE_STORE_METRICS = Symbol('NodeMetrics');
/** Each applied height's span context, from the follower to the reads that link to it (tracing on). */
export const APPLIED_TRACES = Symbol('AppliedTraces');

@Injectable()
export class StateStoreLifecycle implements OnApplicationShutdown {
  constructor(@Inject(Closers) private readonly closers: Closers) {}

  async onApplicationShutdown(): Promise<void> {
    await this.closers.closeAll();
  }
}

export const stateStoreModule: ServiceModuleFactory = (settings, shared) => ({
  module: StateStoreModule,
  providers: [
    { provide: SERVICE_SETTINGS, useValue: settings },
    { provide: SERVICE_LOGGER, useValue: shared.logger },
    { provide: SERVICE_FATAL, useValue: shared.fatal },
    { provide: Closers, useValue: shared.closers },
    { provide: APPLIED_TRACES, useValue: new TraceBook(1_000) },
    {
      provide: REPLICA_DB,
      inject: [SERVICE_SETTINGS, Closers],
      useFactory: async (s: ServiceSettings, closers: Closers): Promise<KVStore> => {
        const kv = await RocksKV.open(s.cluster.stateStoreDb, DATABASE_MEMORY.application);
        closers.addDatabase('state-store.db', kv);
        return kv;
      },
    },
    {
      provide: ReplicaStore,
      inject: [SERVICE_SETTINGS, REPLICA_DB],
      useFactory: (s: ServiceSettings, kv: KVStore) => {
        const g = s.genesis.runtime;
        // Every height's commit is checked against the validator sets consensus has: genesis.json's
        // for the first height, then each header's next_validators_hash (docs/cluster.md "Commit checks").
        const commits = new CommitChecker({
          chainId: g.chainId,
          initialHeight: g.initialHeight,
          genesisValidators: g.validators,
          consensusParams: g.consensusParams,
          genesisTime: g.time,
        });
        return ReplicaStore.open(kv, g.chainId, commits);
      },
    },
    { provide: ReadWriteGate, useValue: new ReadWriteGate() },
    {
      provide: COMMIT_REFUSALS,
      inject: [SERVICE_SETTINGS],
      useFactory: (s: ServiceSettings) =>
        new Counter({
          name: `${toInstrumentationOptions(s.loaded.config).namespace}_state_store_commit_refusals_total`,
          help: 'Times this replica refused a committed height because its commit does not verify, by reason (it stays at the height before and reads the height again every 5 s).',
          labelNames: ['chain_id', 'reason'] as const,
          registers: [],
        }),
    },
    {
      provide: AppliedHeights,
      inject: [Executor, Closers],
      useFactory: (view: Executor, closers: Closers) => {
        const applied = new AppliedHeights(() => view.latestHeight());
        closers.add('read waits', () => applied.close());
        return applied;
      },
    },
    {
      provide: Executor,
      inject: [SERVICE_SETTINGS, SERVICE_LOGGER, Closers, REPLICA_DB],
      useFactory: async (s: ServiceSettings, logger: Logger, closers: Closers, kv: KVStore) => {
        const x = toExecutorSettings(
          s.loaded.config,
          s.loaded.app,
          s.loaded.app.mode === 'archive' ? 'archive' : 'full',
        );
        const genesis = s.genesis.runtime;
        // The executor's read code on the replica's copy of application.db. Its pruning position
        // comes from the copied meta table (the executor's), not from these options.
        const view = await Executor.open({
          kv,
          location: s.cluster.stateStoreDb,
          ...executorOpenOptions(genesis, x),
          devControls: false,
          bus: new EventBus(),
          logger: logger.child({ module: 'execution' }),
        });
        await view.reloadCommitted();
        closers.add('executor view', () => view.close());
        return view;
      },
    },
    {
      provide: STATE_READER_SERVER,
      inject: [
        SERVICE_SETTINGS,
        SERVICE_LOGGER,
        Closers,
        Executor,
        ReadWriteGate,
        APPLIED_TRACES,
        AppliedHeights,
      ],
      useFactory: async (
        s: ServiceSettings,
        logger: Logger,
        closers: Closers,
        view: Executor,
        gate: ReadWriteGate,
        appliedTraces: TraceBook,
        applied: AppliedHeights,
      ): Promise<StateReaderServer> => {
        const server = await serveStateReader(
          {
            chain: view,
            chainId: s.genesis.runtime.chainId,
            gate: (read) => gate.read(read),
            waitFor: (height, ms) => applied.waitFor(height, ms),
          },
          s.cluster.stateStoreGrpcAddress,
          {
            logger: logger.child({ module: 'state-grpc' }),
            appliedTraces,
            readWaitMs: s.cluster.stateStoreReadWaitMs,
            ...(s.cluster.grpcTls ? { credentials: mutualTlsServerCredentials(s.cluster.grpcTls) } : {}),
          },
        );
        closers.add('state gRPC server', () => server.close(5_000));
        logger
          .child({ module: 'service' })
          .info(
            { address: server.address, tls: s.cluster.grpcTls ? 'mutual' : 'none' },
            'serving noded.state.v1.StateReader and grpc.health.v1',
          );
        return server;
      },
    },
    {
      provide: StreamFollower,
      inject: [
        SERVICE_SETTINGS,
        SERVICE_LOGGER,
        SERVICE_FATAL,
        Closers,
        ReplicaStore,
        Executor,
        ReadWriteGate,
        STATE_READER_SERVER,
        APPLIED_TRACES,
        AppliedHeights,
        COMMIT_REFUSALS,
      ],
      useFactory: async (
        s: ServiceSettings,
        logger: Logger,
        fatal: ServiceFatal,
        closers: Closers,
        replica: ReplicaStore,
        view: Executor,
        gate: ReadWriteGate,
        _server: StateReaderServer,
        appliedTraces: TraceBook,
        waits: AppliedHeights,
        refusals: Counter<'chain_id' | 'reason'>,
      ) => {
        // A refused login stops the start here, naming the user; an unreachable server does not.
        await checkNatsLogin(s.cluster, 'state-store', logger.child({ module: 'follower' }));
        const follower = new StreamFollower({
          replica,
          onRefused: (err) => refusals.inc({ chain_id: replica.chainId, reason: err.code }),
          servers: s.cluster.natsUrls,
          login: natsConnectOptions(s.cluster, 'state-store'),
          logger,
          onFatal: fatal,
          appliedTraces,
          applyGate: (apply) =>
            gate
              .write(async () => {
                const applied = await apply();
                if (applied) await view.reloadCommitted();
                return applied;
              })
              .then((applied) => {
                // After the gate: the reads woken here run on the refreshed view.
                if (applied) waits.applied();
                return applied;
              }),
        });
        closers.add('follower', () => follower.close());
        follower.start();
        logger
          .child({ module: 'service' })
          .info({ db: s.cluster.stateStoreDb, height: replica.height }, 'following the committed heights');
        return follower;
      },
    },
    {
      provide: STATE_STORE_METRICS,
      // Its height, which the metrics service compares with consensus' for the cluster's /readyz.
      inject: [SERVICE_SETTINGS, SERVICE_LOGGER, Closers, ReplicaStore, COMMIT_REFUSALS, StreamFollower],
      useFactory: async (
        s: ServiceSettings,
        logger: Logger,
        closers: Closers,
        replica: ReplicaStore,
        refusals: Counter<'chain_id' | 'reason'>,
      ) => {
        const metrics = await serveServiceMetrics(s, logger.child({ module: 'metrics' }), closers);
        metrics.registry.registerMetric(refusals);
        const chainId = s.genesis.runtime.chainId;
        new Gauge({
          name: `${toInstrumentationOptions(s.loaded.config).namespace}_state_store_height`,
          help: 'Latest height this state-store replica has applied.',
          labelNames: ['chain_id'] as const,
          registers: [metrics.registry],
          collect() {
            this.set({ chain_id: chainId }, replica.height);
          },
        });
        return metrics;
      },
    },
    StateStoreLifecycle,
  ],
});

@Module({})
export class StateStoreModule {}
