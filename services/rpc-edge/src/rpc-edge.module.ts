// The rpc-edge service (docs/cluster.md "rpc-edge"): the Ethereum JSON-RPC (HTTP on [evm] rpc_address,
// WebSocket on [evm] ws_address, every [evm]/[evm.rpc] limit of app.toml, as `noded start` applies
// them) over an EdgeChain: reads from the first state-store up of NODED_STATE_STORE_GRPC_ADDRESS (a
// comma-separated list: the next one when it is unavailable, back when it returns), transactions
// and the mempool's answers from the executor's noded.mempool.v1.Mempool at
// NODED_EXECUTOR_GRPC_ADDRESS, new heads and admitted transactions from NATS. And the REST API on
// [api] address with every [api] limit: its state routes over the same EdgeChain, its CometBFT-shaped
// routes (blocks, validator sets, node info, syncing, a transaction's block) over the consensus
// service's CometBFT RPC at NODED_CONSENSUS_RPC_ADDRESS (a comma-separated list: the next one when
// it does not answer, back when it returns). It holds no chain state; run as many as
// needed, each on its own ports.
import { arch, platform } from 'node:os';
import { Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import {
  GrpcDevChain,
  GrpcMempool,
  mutualTlsChannelCredentials,
  StateReaderFailover,
} from '@noded/abci-grpc';
import {
  homePaths,
  toApiOptions,
  toEthRpcOptions,
  toExecutorSettings,
  toInstrumentationOptions,
} from '@noded/config';
import { DEV_CHAIN_ID, HARDFORK } from '@noded/execution';
import { DevAccounts, EthRpcServer, RestServer } from '@noded/rpc';
import { dialHost, hostPort } from '@noded/service-shared/src/addresses.js';
import {
  Closers,
  SERVICE_LOGGER,
  SERVICE_SETTINGS,
  type ServiceModuleFactory,
} from '@noded/service-shared/src/bootstrap.js';
import { devAccountKeys } from '@noded/service-shared/src/dev-keys.js';
import { checkNatsLogin, natsConnectOptions } from '@noded/service-shared/src/nats.js';
import { serveServiceMetrics } from '@noded/service-shared/src/service-metrics.js';
import type { ServiceSettings } from '@noded/service-shared/src/settings.js';
import { NODED_VERSION } from '@noded/service-shared/src/version.js';
import { decodeHead, decodePendingTxs, headsSubject, pendingTxsSubject } from '@noded/stream';
import { EventBus, type Logger } from '@noded/types';
import { connect, type NatsConnection } from 'nats';
import { Gauge } from 'prom-client';
import { CometRpcFailover } from './consensus-failover.js';
import { EdgeChain, HeadFeed, restChain } from './edge-chain.js';

/** How long the edge waits for its state-store at start. */
const STATE_STORE_WAIT_MS = 60_000;

@Injectable()
export class RpcEdgeLifecycle implements OnApplicationShutdown {
  constructor(@Inject(Closers) private readonly closers: Closers) {}

  async onApplicationShutdown(): Promise<void> {
    await this.closers.closeAll();
  }
}

/**
 * After the method's name when the edge of a cluster that is not chain-local refuses a dev-chain
 * method (anvil_*, evm_*, hardhat_*).
 */
export const CLUSTER_DEV_REFUSAL =
  'is not served by the cluster: its services have no dev controls (they run in `noded start` on chain-local); the cluster makes blocks on demand as config.toml paces them ([consensus] create_empty_blocks_interval, docs/cluster.md)';

/**
 * After the method's name when the edge of a chain-local cluster refuses a dev-chain method it does
 * not serve: it serves the state setters and impersonation (through the executor's
 * noded.dev.v1.DevChain), not mining, time or snapshots.
 */
export const CLUSTER_DEV_LOCAL_REFUSAL =
  'is not served by the cluster: of the dev-chain methods it serves only the state setters and impersonation (mining, time and snapshots run in `noded start` on chain-local); the cluster makes blocks on demand as config.toml paces them ([consensus] create_empty_blocks_interval, docs/cluster.md)';

export const RPC_EDGE = Symbol('rpc-edge');

export const rpcEdgeModule: ServiceModuleFactory = (settings, shared) => ({
  module: RpcEdgeModule,
  providers: [
    { provide: SERVICE_SETTINGS, useValue: settings },
    { provide: SERVICE_LOGGER, useValue: shared.logger },
    { provide: Closers, useValue: shared.closers },
    {
      provide: RPC_EDGE,
      inject: [SERVICE_SETTINGS, SERVICE_LOGGER, Closers],
      useFactory: async (s: ServiceSettings, logger: Logger, closers: Closers) => {
        const log = logger.child({ module: 'service' });
        const options = toEthRpcOptions(s.loaded.app);
        const apiOptions = toApiOptions(s.loaded.app);
        if (!options.enable && !options.wsEnable && !apiOptions.enable) {
          throw new Error(
            'app.toml: [evm.rpc] enable and ws_enable and [api] enable are all false: an rpc-edge has nothing to serve',
          );
        }
        // Up before the wait for the state-store: /healthz answers, /readyz once the JSON-RPC serves.
        let serving = false;
        const metrics = await serveServiceMetrics(s, logger.child({ module: 'metrics' }), closers, {
          readiness: () => ({ serving, catchingUp: false }),
        });
        // Mutual TLS on both links when NODED_GRPC_TLS_* name the files; plaintext otherwise.
        const tls = s.cluster.grpcTls ? { credentials: mutualTlsChannelCredentials(s.cluster.grpcTls) } : {};
        const stores = s.cluster.stateStoreGrpcAddresses;
        const ns = toInstrumentationOptions(s.loaded.config).namespace;
        const inUse = new Gauge({
          name: `${ns}_rpc_edge_state_store_in_use`,
          help: 'The state-store this rpc-edge reads from (1) among those of its list (0).',
          labelNames: ['address'] as const,
          registers: [metrics.registry],
        });
        const up = new Gauge({
          name: `${ns}_rpc_edge_state_store_up`,
          help: 'Whether each state-store of this rpc-edge list answers (1) or is marked down (0).',
          labelNames: ['address'] as const,
          registers: [metrics.registry],
        });
        for (const a of stores) {
          inUse.set({ address: a }, a === stores[0] ? 1 : 0);
          up.set({ address: a }, 1);
        }
        const reader = new StateReaderFailover(stores, {
          ...tls,
          chainId: s.genesis.runtime.chainId,
          events: {
            health: (address, isUp, reason) => {
              up.set({ address }, isUp ? 1 : 0);
              if (isUp) log.info({ stateStore: address }, 'state-store answers again');
              else
                log.warn(
                  { stateStore: address, reason },
                  'state-store unavailable; reading from the next one',
                );
            },
            switched: (to, from) => {
              inUse.set({ address: from }, 0);
              inUse.set({ address: to }, 1);
              log.info({ stateStore: to, was: from }, 'reading from another state-store');
            },
          },
        });
        closers.add('state-store client', () => reader.close());
        const mempool = new GrpcMempool(s.cluster.executorGrpcAddress, tls);
        closers.add('mempool client', () => mempool.close());
        log.info({ stateStores: stores }, 'waiting for a state-store');
        await reader.waitReady(STATE_STORE_WAIT_MS);
        // The first answer: a store of another chain is refused by the reader (never read from).
        const head = await reader.head();
        const edge = new EdgeChain(reader, mempool, head);
        const devChain = s.genesis.runtime.chainId === DEV_CHAIN_ID;
        // chain-local: the state setters and impersonation go to the executor's DevChain service
        // (which refuses them itself when its home has no dev controls); any other chain refuses
        // every dev-chain method here, by name.
        let chain = edge.chain();
        if (devChain) {
          const dev = new GrpcDevChain(s.cluster.executorGrpcAddress, tls);
          closers.add('dev chain client', () => dev.close());
          chain = edge.withDev(chain, dev);
        }
        const bus = new EventBus();
        const devKeys = devChain ? devAccountKeys(homePaths(s.home).devAccounts, log) : [];
        const server = new EthRpcServer({
          chain,
          bus,
          logger: logger.child({ module: 'json-rpc' }),
          options,
          // A dev chain names itself anvil-compatible, as `noded start` does: Hardhat's network
          // helpers (impersonation, setBalance) only run against an "anvil" or "HardhatNetwork" node.
          clientVersion: `${devChain ? 'anvil/noded-' : 'noded/'}v${NODED_VERSION}/${platform()}-${arch()}/node${process.versions.node}`,
          devAccounts: devKeys.length > 0 ? new DevAccounts(devKeys) : null,
          devChain: devChain ? { hardfork: HARDFORK } : undefined,
          // What stays refused: on chain-local mining, time and snapshots; elsewhere every method.
          devRefusal: devChain ? CLUSTER_DEV_LOCAL_REFUSAL : CLUSTER_DEV_REFUSAL,
          peerCount: () => 0,
          syncing: () => false,
          onRequest: (method, ms, ok) => metrics.observeRpc(method, ms, ok),
        });
        const feed = new HeadFeed(edge, chain, bus, logger.child({ module: 'heads' }));
        closers.add('new heads', () => feed.close());
        // Core NATS heads only wake the feed up; it reads what it publishes from the state-store.
        // A refused login stops the start here, naming the user; an unreachable server does not.
        await checkNatsLogin(s.cluster, 'rpc-edge', log);
        let nc: NatsConnection | undefined;
        let natsClosed = false;
        const subscribe = async () => {
          while (!natsClosed) {
            try {
              nc = await connect({
                ...natsConnectOptions(s.cluster, 'rpc-edge'),
                name: 'noded-rpc-edge',
                maxReconnectAttempts: -1,
              });
              break;
            } catch (err) {
              log.warn(
                { err: (err as Error).message },
                'NATS unreachable; new heads by polling the state-store meanwhile',
              );
              await new Promise((r) => setTimeout(r, 1_000));
            }
          }
          if (nc === undefined) return;
          const chainId = s.genesis.runtime.chainId;
          // Admitted transactions: newPendingTransactions subscriptions and filters.
          nc.subscribe(pendingTxsSubject(chainId), {
            callback: (err, m) => {
              if (err) return;
              try {
                const p = decodePendingTxs(m.data);
                if (p.chainId !== chainId) return;
                for (const h of p.hashes)
                  bus.publish({ kind: 'EthPendingTx', hash: `0x${Buffer.from(h).toString('hex')}` });
              } catch (e) {
                log.warn({ err: (e as Error).message }, 'pending transactions message refused');
              }
            },
          });
          // Each head: the edge's `latest` moves to it at once (read-your-writes), then the feed.
          const sub = nc.subscribe(headsSubject(chainId));
          for await (const m of sub) {
            try {
              const h = decodeHead(m.data);
              if (h.chainId !== chainId) {
                log.warn({ chainId: h.chainId }, 'new head of another chain ignored');
                continue;
              }
              if (s.cluster.edgeReadYourWrites) edge.announce(BigInt(h.height));
            } catch (e) {
              log.warn({ err: (e as Error).message }, 'new head message refused');
              continue;
            }
            feed.poke();
          }
        };
        const natsLoop = subscribe();
        closers.add('nats', async () => {
          natsClosed = true;
          await nc?.close().catch(() => {});
          await natsLoop.catch(() => {});
        });
        const endpoints: string[] = [];
        if (options.enable) {
          const at = hostPort(s.loaded.app.evm.rpcAddress.raw);
          endpoints.push(`http://${dialHost(at.host)}:${await server.listenHttp(at.host, at.port)}`);
        }
        if (options.wsEnable) {
          const at = hostPort(s.loaded.app.evm.wsAddress.raw);
          endpoints.push(`ws://${dialHost(at.host)}:${await server.listenWs(at.host, at.port)}`);
        }
        closers.add('json-rpc', () => {
          serving = false;
          return server.close();
        });
        // REST: state routes through the state-store, CometBFT-shaped routes through consensus' RPC
        // (the first of NODED_CONSENSUS_RPC_ADDRESS that answers).
        const rpcAt = hostPort(s.loaded.config.rpc.laddr.raw);
        const consensusRpcs = s.cluster.consensusRpcAddresses ?? [`${dialHost(rpcAt.host)}:${rpcAt.port}`];
        if (apiOptions.enable) {
          const rpcInUse = new Gauge({
            name: `${ns}_rpc_edge_consensus_rpc_in_use`,
            help: 'The consensus RPC this rpc-edge REST reads blocks and validator sets from (1) among those of its list (0).',
            labelNames: ['address'] as const,
            registers: [metrics.registry],
          });
          const rpcUp = new Gauge({
            name: `${ns}_rpc_edge_consensus_rpc_up`,
            help: 'Whether each consensus RPC of this rpc-edge list answers (1) or is marked down (0).',
            labelNames: ['address'] as const,
            registers: [metrics.registry],
          });
          for (const a of consensusRpcs) {
            rpcInUse.set({ address: a }, a === consensusRpcs[0] ? 1 : 0);
            rpcUp.set({ address: a }, 1);
          }
          const consensus = new CometRpcFailover(consensusRpcs, {
            chainId: s.genesis.runtime.chainId,
            events: {
              health: (address, isUp, reason) => {
                rpcUp.set({ address }, isUp ? 1 : 0);
                if (isUp) log.info({ consensusRpc: address }, 'consensus RPC answers again');
                else
                  log.warn(
                    { consensusRpc: address, reason },
                    'consensus RPC unavailable; reading from the next one',
                  );
              },
              switched: (to, from) => {
                rpcInUse.set({ address: from }, 0);
                rpcInUse.set({ address: to }, 1);
                log.info({ consensusRpc: to, was: from }, 'reading from another consensus RPC');
              },
            },
          });
          closers.add('consensus RPC client', () => consensus.close());
          const rest = new RestServer({
            consensus,
            chain: restChain(chain),
            logger: logger.child({ module: 'api' }),
            options: apiOptions,
            evmChainId: s.genesis.runtime.evmChainId,
            gas: toExecutorSettings(s.loaded.config, s.loaded.app, 'full').gas,
            appVersion: { name: 'noded', version: NODED_VERSION },
          });
          const at = hostPort(apiOptions.address);
          endpoints.push(
            `${rest.tls ? 'https' : 'http'}://${dialHost(at.host)}:${await rest.listen(at.host, at.port)}`,
          );
          closers.add('api', () => rest.close());
        }
        serving = true;
        log.info(
          {
            endpoints,
            stateStore: reader.address,
            stateStores: stores,
            readYourWrites: s.cluster.edgeReadYourWrites,
            executor: s.cluster.executorGrpcAddress,
            consensusRpcs,
            height: head.latestHeight.toString(),
          },
          'serving the Ethereum JSON-RPC and the REST API',
        );
        return server;
      },
    },
    RpcEdgeLifecycle,
  ],
});

@Module({})
export class RpcEdgeModule {}
