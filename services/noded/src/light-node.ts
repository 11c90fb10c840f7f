// The light node (`noded start` on a home made by `noded init light`): no EVM state, no block
// execution. It follows the chain's headers from its peers over the light channel, verifies each
// against what it already trusts (libs/consensus light client: adjacent, or skipping with trust
// level 1/3 inside the trusting period, as CometBFT's light client), keeps only verified headers,
// commits and validator sets in data/light.db, and serves them on the CometBFT RPC (:26657) and a
// header-only subset of the Ethereum JSON-RPC (:8545/:8546). docs/light-client.md.

import { arch, platform } from 'node:os';
import {
  formatDuration,
  homePaths,
  loadNodeKey,
  loadValidatorKey,
  toCometRpcOptions,
  toEthRpcOptions,
  toInstrumentationOptions,
} from '@noded/config';
import {
  headerHash,
  type LightBlock,
  LightClient,
  type LightProvider,
  LightStore,
  type TrustRoot,
} from '@noded/consensus';
import { ed25519Verify } from '@noded/crypto';
import { LightChannel, LightRequestError } from '@noded/p2p';
import { CometRpcServer, EthRpcServer, TxIndexer } from '@noded/rpc';
import { p2pHostFor } from '@noded/service-p2p-gateway/src/p2p-host.js';
import { dialHost, hostPort } from '@noded/service-shared/src/addresses.js';
import { DATABASE_MEMORY } from '@noded/service-shared/src/databases.js';
import { NODED_VERSION } from '@noded/service-shared/src/version.js';
import { RocksKV } from '@noded/storage';
import { createLogger, MetricsServer, NodeMetrics } from '@noded/telemetry';
import { EventBus } from '@noded/types';
import type { RunNodeOptions, RunningNode } from './cli/commands/start.js';
import { NodeLifecycle } from './lifecycle.js';
import { ethBlockOfHeader, LightEthChain } from './light/eth-chain.js';
import { LightNodeReader } from './light/reader.js';
import { RpcLightSources } from './light/rpc-source.js';

/** How often the light node asks its peers for their latest header. */
export const LIGHT_POLL_MS = 1000;

export type LightNodeOptions = Omit<RunNodeOptions, 'mode'> & { mode: 'light' };

const MS = 1_000_000n;

export async function runLightNode(opts: LightNodeOptions): Promise<RunningNode> {
  const { config, app } = opts.loaded;
  const genesis = opts.genesis.runtime;
  const paths = homePaths(opts.home);
  const logger = createLogger({
    level: opts.logLevel,
    file: opts.logFile,
    // Readable lines only for a person at a terminal; JSON lines for collectors or when asked.
    pretty: opts.logFormat === 'plain' && process.stdout.isTTY === true,
  });
  const log = logger.child({ module: 'node' });
  const bus = new EventBus();
  const life = new NodeLifecycle(log, () => logger.flush?.());

  try {
    const kv = await RocksKV.open(paths.lightDb, DATABASE_MEMORY.light);
    life.add('light.db', () => kv.close());
    const store = await LightStore.open(kv);

    const nodeKey = loadNodeKey(paths.nodeKey);
    const cometOptions = toCometRpcOptions(config);
    const {
      p2p,
      pex,
      listen: p2pAt,
    } = p2pHostFor({
      config,
      addrBookFile: paths.addrBook,
      chainId: genesis.chainId,
      nodeKey,
      rpcAddress: cometOptions.laddr,
      txIndex: false,
      logger: logger.child({ module: 'p2p' }),
    });
    // The light channel only: no consensus, no mempool (full nodes send a peer only the channels it lists).
    const lightNet = new LightChannel(p2p, { logger: logger.child({ module: 'light' }) });
    life.add('light channel', () => lightNet.close());

    const root: TrustRoot =
      app.light.trustHeight > 0
        ? { kind: 'hash', height: app.light.trustHeight, hash: Buffer.from(app.light.trustHash, 'hex') }
        : {
            kind: 'genesis',
            initialHeight: genesis.initialHeight,
            time: genesis.time,
            validators: genesis.validators,
          };
    const eth = new LightEthChain(store, genesis.evmChainId);
    const publish = (lb: LightBlock) => {
      const header = lb.header;
      bus.publish({
        kind: 'NewBlock',
        block: { header, data: { txs: [] }, evidence: [], lastCommit: null },
        blockId: lb.commit.blockId,
        result: {
          events: [],
          txResults: [],
          validatorUpdates: [],
          consensusParamUpdates: null,
          appHash: header.appHash,
        },
      });
      bus.publish({ kind: 'EthNewHead', block: ethBlockOfHeader(header), logs: [] });
    };
    const client = new LightClient({
      chainId: genesis.chainId,
      store,
      root,
      trustingPeriodNs: BigInt(app.light.trustingPeriodMs) * MS,
      maxClockDriftNs: BigInt(app.light.maxClockDriftMs) * MS,
      now: () => BigInt(Date.now()) * MS,
      verify: ed25519Verify,
      logger: logger.child({ module: 'light-client' }),
      onVerified: (lb) => {
        log.info({ height: lb.header.height, hash: hexUpper(headerHash(lb.header)) }, 'header verified');
        publish(lb);
      },
    });
    // Sources: connected peers, and the RPC servers of [light] rpc_servers ("rpc:<url>").
    const rpcSources = new RpcLightSources(app.light.rpcServers, logger.child({ module: 'light' }));
    const provider: LightProvider = {
      sources: () => [...p2p.peerIds(), ...rpcSources.names()],
      fetch: async (source, height) => {
        if (rpcSources.owns(source)) return rpcSources.fetch(source, height);
        try {
          return await lightNet.request(source, height);
        } catch (err) {
          // Bytes that do not decode as a light block come from a faulty peer.
          if (err instanceof LightRequestError && err.code === 'INVALID_RESPONSE')
            p2p.disconnect(source, err.message);
          throw err;
        }
      },
      report: (source, reason) =>
        rpcSources.owns(source) ? rpcSources.suspend(source, reason) : p2p.disconnect(source, reason),
    };

    const validatorKey = (() => {
      try {
        const k = loadValidatorKey(paths.privValidatorKey);
        return { address: Buffer.from(k.address, 'hex'), pubKey: k.publicKey };
      } catch {
        return undefined;
      }
    })();
    const reader = new LightNodeReader({
      store,
      nodeId: nodeKey.nodeId,
      moniker: config.moniker,
      chainId: genesis.chainId,
      p2pListenAddr: config.p2p.laddr.raw,
      rpcAddress: cometOptions.laddr,
      genesisText: opts.genesis.text,
      version: NODED_VERSION,
      validatorKey,
      peers: () => p2p.peerInfos(),
      highestSeen: () => client.highestSeen,
    });

    const instrumentation = toInstrumentationOptions(config);
    const metrics = new NodeMetrics({
      namespace: instrumentation.namespace,
      chainId: genesis.chainId,
      bus,
      node: reader,
      logger,
    });
    life.add('metrics', () => metrics.close());

    const comet = new CometRpcServer({
      node: reader,
      bus,
      indexer: new TxIndexer({ disabled: true, bus, logger }),
      logger: logger.child({ module: 'rpc' }),
      options: cometOptions,
      observe: (method, ms, ok) => metrics.observeRpc(method, ms, ok),
    });
    life.add('rpc', () => comet.close());

    const ethOptions = toEthRpcOptions(app);
    const ethServer =
      ethOptions.enable || ethOptions.wsEnable
        ? new EthRpcServer({
            chain: eth,
            bus,
            logger: logger.child({ module: 'json-rpc' }),
            options: ethOptions,
            clientVersion: `noded/v${NODED_VERSION}/${platform()}-${arch()}/node${process.versions.node}/light`,
            devAccounts: null,
            peerCount: () => p2p.peerCount,
            syncing: () => {
              const s = reader.syncInfo();
              return s.catchingUp
                ? {
                    startingBlock: BigInt(s.earliestBlockHeight),
                    currentBlock: BigInt(s.latestBlockHeight),
                    highestBlock: BigInt(client.highestSeen),
                  }
                : false;
            },
            onRequest: (method, ms, ok) => metrics.observeRpc(method, ms, ok),
          })
        : undefined;
    if (ethServer) life.add('json-rpc', () => ethServer.close());

    const metricsServer = new MetricsServer({
      metrics,
      logger: logger.child({ module: 'metrics' }),
      options: instrumentation,
      readiness: () => ({ serving: life.serving, catchingUp: reader.syncInfo().catchingUp }),
    });
    life.add('metrics server', () => metricsServer.close());

    const p2pPort = await p2p.start();
    life.add('p2p', () => p2p.stop());
    if (pex) {
      pex.start();
      life.add('pex', () => pex.stop());
    }

    // The follow loop: one round a second, never two at once.
    let running = true;
    let timer: NodeJS.Timeout | undefined;
    let current: Promise<void> = Promise.resolve();
    const tick = () => {
      current = (async () => {
        try {
          await client.round(provider);
          metrics.setPeers(p2p.peerCount);
          metrics.recordPeerTraffic(p2p.traffic());
        } catch (err) {
          log.error({ err: (err as Error).message }, 'light client round failed');
        }
        if (running) timer = setTimeout(tick, LIGHT_POLL_MS);
      })();
    };
    life.add('light client', async () => {
      running = false;
      clearTimeout(timer);
      await current;
    });
    tick();

    const endpoints: string[] = [
      `P2P             tcp://${p2pAt.host}:${p2pPort}  (node ID ${nodeKey.nodeId})`,
    ];
    const rpcAt = hostPort(cometOptions.laddr);
    const rpcPort = await comet.listen(rpcAt.host, rpcAt.port);
    endpoints.push(
      `consensus RPC   http://${dialHost(rpcAt.host)}:${rpcPort}  (headers, commits, validators)`,
    );
    if (ethServer && ethOptions.enable) {
      const at = hostPort(app.evm.rpcAddress.raw);
      endpoints.push(
        `EVM JSON-RPC    http://${dialHost(at.host)}:${await ethServer.listenHttp(at.host, at.port)}  (headers only)`,
      );
    }
    if (ethServer && ethOptions.wsEnable) {
      const at = hostPort(app.evm.wsAddress.raw);
      endpoints.push(
        `EVM WebSocket   ws://${dialHost(at.host)}:${await ethServer.listenWs(at.host, at.port)}`,
      );
    }
    if (instrumentation.prometheus) {
      const at = hostPort(instrumentation.prometheusListenAddr);
      endpoints.push(
        `metrics         http://${dialHost(at.host)}:${await metricsServer.listen(at.host, at.port)}/metrics`,
      );
    }
    life.serving = true;

    const trustText =
      root.kind === 'genesis'
        ? `the genesis validators at height ${root.initialHeight}`
        : `header ${app.light.trustHash} at height ${root.height}`;
    const out = [
      '',
      `noded ${NODED_VERSION} light node on ${genesis.chainId}, verified up to height ${store.latest}`,
      `  trusts ${trustText}; trusting period ${formatDuration(app.light.trustingPeriodMs)}`,
      `  follows ${config.p2p.persistentPeers.length} persistent peers${app.light.rpcServers.length > 0 ? ` and RPC ${app.light.rpcServers.join(', ')}` : ''}`,
      '',
      ...endpoints.map((e) => `  ${e}`),
      '',
    ];
    process.stdout.write(`${out.join('\n')}\n`);
    log.info(
      { chainId: genesis.chainId, mode: 'light', height: store.latest, root: root.kind },
      'node started',
    );

    return life.handle();
  } catch (err) {
    await life.closeAll();
    throw err;
  }
}

function hexUpper(b: Uint8Array): string {
  return Buffer.from(b).toString('hex').toUpperCase();
}
