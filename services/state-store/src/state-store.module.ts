// The state-store service (docs/cluster.md): a read replica. Its own RocksDB (NODED_STATE_STORE_DB,
// default <home>/data/state-store.db) fed by the executor's JetStream stream in height order. The
// gRPC read contract that rpc-edges will use is not built yet.
import { Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import { type KVStore, RocksKV } from '../../../libs/storage/index.js';
import { ReplicaStore } from '../../../libs/stream/index.js';
import type { Logger } from '../../../libs/types/index.js';
import {
  Closers,
  SERVICE_FATAL,
  SERVICE_LOGGER,
  SERVICE_SETTINGS,
  type ServiceFatal,
  type ServiceModuleFactory,
} from '../../shared/src/bootstrap.js';
import type { ServiceSettings } from '../../shared/src/settings.js';
import { StreamFollower } from './follower.js';

export const REPLICA_DB = Symbol('state-store.db');

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
    {
      provide: REPLICA_DB,
      inject: [SERVICE_SETTINGS, Closers],
      useFactory: async (s: ServiceSettings, closers: Closers): Promise<KVStore> => {
        const kv = await RocksKV.open(s.cluster.stateStoreDb);
        closers.add('state-store.db', () => kv.close());
        return kv;
      },
    },
    {
      provide: ReplicaStore,
      inject: [SERVICE_SETTINGS, REPLICA_DB],
      useFactory: (s: ServiceSettings, kv: KVStore) => ReplicaStore.open(kv, s.genesis.runtime.chainId),
    },
    {
      provide: StreamFollower,
      inject: [SERVICE_SETTINGS, SERVICE_LOGGER, SERVICE_FATAL, Closers, ReplicaStore],
      useFactory: (
        s: ServiceSettings,
        logger: Logger,
        fatal: ServiceFatal,
        closers: Closers,
        replica: ReplicaStore,
      ) => {
        const follower = new StreamFollower({ replica, servers: s.cluster.natsUrls, logger, onFatal: fatal });
        closers.add('follower', () => follower.close());
        follower.start();
        logger
          .child({ module: 'service' })
          .info({ db: s.cluster.stateStoreDb, height: replica.height }, 'following the committed heights');
        return follower;
      },
    },
    StateStoreLifecycle,
  ],
});

@Module({})
export class StateStoreModule {}
