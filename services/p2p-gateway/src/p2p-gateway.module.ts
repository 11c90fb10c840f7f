// The p2p-gateway service (docs/cluster.md "p2p-gateway"): the libp2p host on [p2p] laddr (:26656)
// with the home's node key, the handshake and its chain-id check, the peer limits, persistent peers
// and PEX, relaying channel frames to and from the consensus service over noded.p2p.v1.Gateway
// (proto/noded/p2p/v1/gateway.proto) on NODED_P2P_GATEWAY_ADDRESS. The host opens at the first
// attach of consensus (it then advertises the channels consensus named) and keeps its peers while
// consensus is away; a restarted consensus attaches again and gets the peers held.
import {
  Inject,
  Injectable,
  Module,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { GatewayRelay, mutualTlsServerCredentials, type RelayedHost, serveGateway } from '@noded/abci-grpc';
import { homePaths, loadNodeKey, toCometRpcOptions } from '@noded/config';
import type { P2PHost } from '@noded/p2p';
import {
  Closers,
  SERVICE_LOGGER,
  SERVICE_SETTINGS,
  type ServiceModuleFactory,
} from '@noded/service-shared/src/bootstrap.js';
import { serveServiceMetrics } from '@noded/service-shared/src/service-metrics.js';
import type { ServiceSettings } from '@noded/service-shared/src/settings.js';
import type { Logger } from '@noded/types';
import { p2pHostFor } from './p2p-host.js';

/** How often the peer gauges and traffic counters are sampled into the metrics (ms). */
const SAMPLE_MS = 1_000;

@Injectable()
export class P2PGateway implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log: Logger;
  private host: P2PHost | undefined;

  constructor(
    @Inject(SERVICE_SETTINGS) private readonly settings: ServiceSettings,
    @Inject(SERVICE_LOGGER) private readonly logger: Logger,
    @Inject(Closers) private readonly closers: Closers,
  ) {
    this.log = logger.child({ module: 'service' });
  }

  async onApplicationBootstrap(): Promise<void> {
    const s = this.settings;
    const { config } = s.loaded;
    const paths = homePaths(s.home);
    const nodeKey = loadNodeKey(paths.nodeKey);
    const chainId = s.genesis.runtime.chainId;
    const built = p2pHostFor({
      config,
      addrBookFile: paths.addrBook,
      chainId,
      nodeKey,
      // Peers learn the node's RPC and tx index from the handshake, as from `noded start`.
      rpcAddress: toCometRpcOptions(config).laddr,
      txIndex: config.txIndex.indexer === 'kv',
      logger: this.logger.child({ module: 'p2p' }),
    });
    const listenAddr = config.p2p.externalAddress || `${built.listen.host}:${built.listen.port}`;
    const relay = new GatewayRelay({
      chainId,
      nodeId: nodeKey.nodeId,
      listenAddr,
      logger: this.logger.child({ module: 'relay' }),
      openHost: async (channels) => {
        for (const ch of channels) built.p2p.register(ch);
        const port = await built.p2p.start();
        this.host = built.p2p;
        this.closers.add('p2p', () => built.p2p.stop());
        if (built.pex) {
          built.pex.start();
          this.closers.add('pex', () => built.pex?.stop());
        }
        this.log.info(
          {
            nodeId: nodeKey.nodeId,
            listen: `${built.listen.host}:${port}`,
            channels: channels.map((c) => c.protocol),
          },
          'P2P host listening',
        );
        return built.p2p satisfies RelayedHost;
      },
    });
    const address = s.cluster.p2pGatewayAddress!;
    const server = await serveGateway(relay, address, {
      ...(s.cluster.grpcTls ? { credentials: mutualTlsServerCredentials(s.cluster.grpcTls) } : {}),
    });
    this.closers.add('gateway server', () => server.close());
    const metrics = await serveServiceMetrics(s, this.logger.child({ module: 'metrics' }), this.closers, {
      readiness: () => {
        const problems: string[] = [];
        if (!this.host) problems.push('the P2P host opens when the consensus service first attaches');
        else if (!relay.attached) problems.push('no consensus service attached');
        return { serving: problems.length === 0, catchingUp: false, problems };
      },
    });
    const sample = setInterval(() => {
      const h = this.host;
      if (!h) return;
      metrics.setPeers(h.peerCount);
      metrics.recordPeerTraffic(h.traffic());
    }, SAMPLE_MS);
    sample.unref();
    this.closers.add('metrics sampling', () => clearInterval(sample));
    const colon = address.lastIndexOf(':');
    this.log.info(
      {
        relay: `${address.slice(0, colon)}:${server.port}`,
        p2p: `${built.listen.host}:${built.listen.port}`,
        nodeId: nodeKey.nodeId,
        tls: s.cluster.grpcTls ? 'mutual' : 'none',
      },
      'p2p-gateway serving; the P2P host opens when consensus attaches',
    );
  }

  async onApplicationShutdown(): Promise<void> {
    await this.closers.closeAll();
  }
}

export const p2pGatewayModule: ServiceModuleFactory = (settings, shared) => ({
  module: P2PGatewayModule,
  providers: [
    { provide: SERVICE_SETTINGS, useValue: settings },
    { provide: SERVICE_LOGGER, useValue: shared.logger },
    { provide: Closers, useValue: shared.closers },
    P2PGateway,
  ],
});

@Module({})
export class P2PGatewayModule {}
