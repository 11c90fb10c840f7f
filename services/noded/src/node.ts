// The all-in-one node: consensus, execution, storage and every server in one process, wired by
// hand in one place (DESIGN.md "Embedded default"). The CLI (`noded start`) validates the home,
// holds its lock and calls runNode(); this module owns start-up order and shutdown.

import { existsSync } from 'node:fs';
import { arch, platform } from 'node:os';
import {
  executorOpenOptions,
  homePaths,
  loadNodeKey,
  toApiOptions,
  toChecksumAddress,
  toCometRpcOptions,
  toConsensusTimeouts,
  toEthRpcOptions,
  toExecutorSettings,
  toInstrumentationOptions,
} from '@noded/config';
import { ConsensusRuntime, StateStore } from '@noded/consensus';
import { DEV_CHAIN_ID, DepositWatcher, Executor, HARDFORK, kvWatcherProgress } from '@noded/execution';
import {
  BlockSyncChannel,
  ConsensusChannel,
  LightChannel,
  lightBlockSourceOf,
  MempoolChannel,
} from '@noded/p2p';
import { CometRpcServer, DevAccounts, RestServer, TxIndexer } from '@noded/rpc';
import { IndexerThread } from '@noded/service-consensus/src/indexer-thread/thread.js';
import { p2pHostFor } from '@noded/service-p2p-gateway/src/p2p-host.js';
import { dialHost, hostPort } from '@noded/service-shared/src/addresses.js';
import { DATABASE_MEMORY } from '@noded/service-shared/src/databases.js';
import { hasDevControls } from '@noded/service-shared/src/dev-controls.js';
import { devAccountKeys } from '@noded/service-shared/src/dev-keys.js';
import { logReclaim, startIdleReclaim } from '@noded/service-shared/src/idle-reclaim.js';
import {
  type Flushable,
  logNativeStatus,
  nativeReclaim,
  startBusyTrim,
} from '@noded/service-shared/src/native-reclaim.js';
import { NODED_VERSION } from '@noded/service-shared/src/version.js';
import { type KVStore, RocksKV, type RocksOptions } from '@noded/storage';
import { createLogger, MetricsServer, NodeMetrics, type ThreadHeap } from '@noded/telemetry';
import { type EthDevControl, EventBus } from '@noded/types';
import type { RunNodeOptions, RunningNode } from './cli/commands/start.js';
import { DevSnapshots, finishInterruptedRevert, recordGenesisPoint } from './dev-snapshots.js';
import { NodeLifecycle } from './lifecycle.js';
import { LocalNodeReader } from './node-reader.js';
import { EthRpcThread } from './rpc-edge/thread.js';
import { startTerminalFeed } from './terminal.js';

const NS_PER_S = 1_000_000_000n;

/** The JSON-RPC's mining and time controls, served by consensus (which refuses them unless single-validator). */
function devControlOf(consensus: ConsensusRuntime, snapshots: DevSnapshots): EthDevControl {
  return {
    snapshot: () => snapshots.snapshot(),
    revert: (id) => snapshots.revert(id),
    reset: () => snapshots.reset(),
    mine: (count, intervalSec, timestampSec) =>
      consensus.mineBlocks(count, {
        firstTimeNs: timestampSec === undefined ? undefined : timestampSec * NS_PER_S,
        intervalNs: intervalSec === undefined ? undefined : intervalSec * NS_PER_S,
      }),
    setAutomine: (on) => consensus.setAutomine(on),
    setIntervalMining: (ms) => consensus.setIntervalMining(ms),
    increaseTime: async (seconds) => (await consensus.increaseTime(seconds * NS_PER_S)) / NS_PER_S,
    setNextBlockTimestamp: (seconds) => consensus.setNextBlockTime(seconds * NS_PER_S),
  };
}

export async function runNode(opts: RunNodeOptions): Promise<RunningNode> {
  const { config, app } = opts.loaded;
  const genesis = opts.genesis.runtime;
  const paths = homePaths(opts.home);
  // JSON lines to the log file; on a terminal also readable lines, elsewhere JSON on stdout for collectors.
  // A person at a terminal gets transactions and blocks as anvil prints them (terminal.ts) and the
  // log's warnings; collectors (not a terminal, or --log-format json) get every JSON line.
  const human = opts.logFormat === 'plain' && process.stdout.isTTY === true;
  const logger = createLogger({
    level: opts.logLevel,
    file: opts.logFile,
    pretty: human,
    consoleLevel: human ? 'warn' : undefined,
  });
  const log = logger.child({ module: 'node' });
  const bus = new EventBus();
  const life = new NodeLifecycle(log, () => logger.flush?.());
  const fatal = (err: Error) => life.fail(err);

  try {
    const databases: Array<{ name: string; kv: RocksKV }> = [];
    const openKv = async (name: string, dir: string, memory: RocksOptions): Promise<KVStore> => {
      const kv = await RocksKV.open(dir, memory);
      databases.push({ name, kv });
      life.add(name, () => kv.close());
      return kv;
    };
    const [applicationDb, blockStore, stateStore] = [
      await openKv('application.db', paths.applicationDb, DATABASE_MEMORY.application),
      await openKv('blockstore.db', paths.blockstoreDb, DATABASE_MEMORY.blockstore),
      await openKv('state.db', paths.stateDb, DATABASE_MEMORY.state),
    ];

    const settings = toExecutorSettings(config, app, opts.mode);
    const devControls = hasDevControls(genesis, paths.privValidatorKey, DEV_CHAIN_ID);
    // Bridge in: the watcher reads the source chain; the executor's vote extensions attest what it
    // holds, from the chain's last processed deposit on (read from the executor once it is open).
    let lastInbound = () => 0n;
    const watcher = app.bridge.enable
      ? new DepositWatcher({
          rpcUrl: app.bridge.ethereumRpcUrl,
          bridgeAddress: app.bridge.bridgeAddress,
          confirmations: app.bridge.confirmations,
          pollIntervalMs: app.bridge.pollIntervalMs,
          startBlock: BigInt(app.bridge.startBlock),
          progress: kvWatcherProgress(applicationDb, app.bridge.bridgeAddress),
          lastProcessed: () => lastInbound(),
          logger: logger.child({ module: 'bridge' }),
        })
      : undefined;
    const executor = await Executor.open({
      kv: applicationDb,
      location: paths.applicationDb,
      ...executorOpenOptions(genesis, settings),
      devControls,
      ...(watcher ? { deposits: watcher } : {}),
      bus,
      logger: logger.child({ module: 'execution' }),
    });
    life.add('executor', () => executor.close());
    lastInbound = () => executor.lastInboundSequence();
    // An application.db written before bridge in recorded validator sets: copy them from consensus.
    const consensusState = new StateStore(stateStore);
    await executor.checkBridgeValidatorSets(
      async (h) => (await consensusState.loadValidators(h))?.validators,
    );

    // tx_index.db belongs to the indexer's own thread; "null" indexes nothing (as CometBFT).
    const indexerThread =
      config.txIndex.indexer === 'kv'
        ? await IndexerThread.open({
            path: paths.txIndexDb,
            onFatal: (err) => {
              log.error({ err: err.message }, 'the indexer thread stopped; stopping the node');
              fatal(err);
            },
          })
        : undefined;
    const indexer = indexerThread
      ? new TxIndexer({ backend: indexerThread, bus, logger })
      : new TxIndexer({ disabled: true, bus, logger });
    life.add('indexer', () => indexer.close());

    // Peers on [p2p] laddr: consensus messages and mempool gossip over libp2p.
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
      txIndex: config.txIndex.indexer === 'kv',
      logger: logger.child({ module: 'p2p' }),
    });
    const consensusNet = new ConsensusChannel(p2p, Number(genesis.consensusParams.block.maxBytes));
    const blockSyncNet = new BlockSyncChannel(p2p, Number(genesis.consensusParams.block.maxBytes));
    const mempoolNet = new MempoolChannel(
      p2p,
      executor,
      config.mempool.maxTxBytes,
      logger.child({ module: 'mempool' }),
    );
    life.add('mempool gossip', () => mempoolNet.close());

    // A revert (evm_revert) that a stopped process began is finished before consensus opens.
    const reverted = await finishInterruptedRevert({
      devControls,
      intentFile: paths.rollbackIntent,
      blockStore,
      stateStore,
      walDir: paths.csWal,
      privValidatorStateFile: paths.privValidatorState,
      executor,
      indexer,
      logger: log,
    });
    if (reverted !== undefined) log.info({ height: reverted }, 'interrupted evm_revert finished');

    const timeouts = toConsensusTimeouts(config);
    const consensus = await ConsensusRuntime.create({
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
      devControls: genesis.chainId === 'chain-local',
      doubleSignCheckHeight: timeouts.doubleSignCheckHeight,
      privValidator: { keyFile: paths.privValidatorKey, stateFile: paths.privValidatorState },
      walDir: paths.csWal,
      blockStore,
      stateStore,
      app: executor,
      bus,
      network: consensusNet,
      blockSync: blockSyncNet,
      logger: logger.child({ module: 'consensus' }),
      onFatal: (err) => {
        log.error({ err: err.message }, 'consensus stopped on an unrecoverable error');
        fatal(err);
      },
    });
    life.add('consensus', () => consensus.stop());
    // The point anvil_reset goes back to, recorded before the dev chain's first block.
    if (devControls && (await recordGenesisPoint({ consensus, executor, file: paths.devGenesis })))
      log.info({ file: paths.devGenesis }, 'genesis point recorded (anvil_reset)');
    // Light nodes ask for signed headers and validator sets (docs/light-client.md).
    const lightNet = new LightChannel(p2p, {
      source: lightBlockSourceOf(consensus),
      logger: logger.child({ module: 'light' }),
    });
    life.add('light serving', () => lightNet.close());

    const reader = new LocalNodeReader({
      consensus,
      executor,
      nodeId: nodeKey.nodeId,
      moniker: config.moniker,
      chainId: genesis.chainId,
      p2pListenAddr: config.p2p.laddr.raw,
      rpcAddress: cometOptions.laddr,
      genesisText: opts.genesis.text,
      mode: opts.mode,
      version: NODED_VERSION,
      txIndex: indexer.enabled,
      peers: () => p2p.peerInfos(),
      addPeers: (addrs, o) => p2p.addPeers(addrs, o),
    });
    // A dev operation (anvil_setBalance & co.) waits for a block like a transaction does.
    if (devControls) {
      const unsubscribe = executor.onDevQueued(() => consensus.txsAvailable());
      life.add('dev-ops-available', () => {
        unsubscribe();
      });
    }
    if (
      !timeouts.createEmptyBlocks ||
      timeouts.createEmptyBlocksIntervalMs > 0 ||
      genesis.chainId === 'chain-local'
    ) {
      // Blocks on demand (create_empty_blocks = false, an empty-blocks interval, or evm_setAutomine
      // on chain-local): consensus is told that transactions wait, on admission
      // (eth_sendRawTransaction and broadcast_tx_*) and after a block that left executable ones behind
      // (a transaction queued behind a nonce gap makes no block until the gap is filled).
      const wake = bus.subscribe((ev) => {
        if (ev.kind === 'EthPendingTx' || (ev.kind === 'NewBlock' && executor.hasExecutableTxs())) {
          consensus.txsAvailable();
        }
      });
      life.add('txs-available', wake);
    }
    if (human) {
      const stopFeed = startTerminalFeed({
        bus,
        chain: executor,
        write: (text) => process.stdout.write(text),
      });
      life.add('terminal', stopFeed);
    }
    const reindexed = await indexer.catchUp(reader);
    if (reindexed > 0) log.info({ blocks: reindexed }, 'tx index caught up with the block store');

    const instrumentation = toInstrumentationOptions(config);
    const metrics = new NodeMetrics({
      namespace: instrumentation.namespace,
      chainId: genesis.chainId,
      bus,
      node: reader,
      logger,
    });
    life.add('metrics', () => metrics.close());
    logNativeStatus(log);
    const reclaim = startIdleReclaim(logReclaim(log, 'main'), {
      onQuiet: nativeReclaim(() => {
        const all: Flushable[] = databases.map(({ kv }) => kv);
        if (indexerThread) all.push(indexerThread);
        return all;
      }, log),
    });
    life.add('idle-reclaim', () => reclaim?.stop());
    const stopTrim = startBusyTrim(log);
    if (stopTrim) life.add('busy-trim', stopTrim);
    metrics.watchStorageMemory(async () => {
      const all = databases.map(({ name, kv }) => ({ db: name.replace(/\.db$/, ''), ...kv.memoryUsage() }));
      // tx_index.db lives in the indexer's thread; a thread that is stopping leaves it out of the scrape.
      const txIndex = await indexerThread?.memoryUsage().catch(() => undefined);
      if (txIndex) all.push({ db: 'tx_index', ...txIndex });
      return all;
    });
    // Sampled once a second rather than per admitted transaction: counting walks the pool.
    const sampleGauges = () => {
      metrics.setMempoolSize(reader.mempoolSize());
      metrics.setPeers(reader.peers().length);
      metrics.recordPeerTraffic(p2p.traffic());
    };
    if (watcher) {
      watcher.onStats((st) =>
        metrics.recordBridge({ ...st, ...executor.inboundLimits(BigInt(Math.floor(Date.now() / 1000))) }),
      );
      watcher.start();
      life.add('bridge watcher', () => watcher.stop());
      log.info(
        {
          source: app.bridge.ethereumRpcUrl,
          bridge: app.bridge.bridgeAddress,
          confirmations: app.bridge.confirmations,
        },
        'bridge: watching the source chain for deposits',
      );
    }
    sampleGauges();
    const mempoolGauge = setInterval(sampleGauges, 1000);
    mempoolGauge.unref();
    life.add('mempool gauge', () => clearInterval(mempoolGauge));

    const devKeys = genesis.chainId === 'chain-local' ? devAccountKeys(paths.devAccounts, log) : [];
    if (genesis.chainId !== 'chain-local' && existsSync(paths.devAccounts)) {
      log.warn(
        { file: paths.devAccounts, chainId: genesis.chainId },
        'dev accounts file ignored: dev accounts are unlocked on chain-local only; delete it from this home',
      );
    }
    const ethOptions = toEthRpcOptions(app);
    // The JSON-RPC thread is started only when [evm] serves HTTP or WebSocket.
    const ethServed = ethOptions.enable || ethOptions.wsEnable;
    const eth = ethServed
      ? new EthRpcThread({
          chain: executor,
          dev:
            genesis.chainId === 'chain-local'
              ? devControlOf(
                  consensus,
                  new DevSnapshots({
                    consensus,
                    executor,
                    indexer,
                    intentFile: paths.rollbackIntent,
                    genesisFile: paths.devGenesis,
                  }),
                )
              : undefined,
          bus,
          logger: logger.child({ module: 'json-rpc' }),
          options: ethOptions,
          // A dev chain names itself anvil-compatible: Hardhat's network helpers (loadFixture, time,
          // mine, impersonation) only run against a web3_clientVersion that starts "anvil" or
          // "HardhatNetwork", and chain-local serves anvil's dev methods.
          clientVersion: `${devControls ? 'anvil/noded-' : 'noded/'}v${NODED_VERSION}/${platform()}-${arch()}/node${process.versions.node}`,
          devKeys,
          devChain: devControls ? { hardfork: HARDFORK } : undefined,
          onRequest: (method, ms, ok) => metrics.observeRpc(method, ms, ok),
          onFatal: (err) => {
            log.error({ err: err.message }, 'the JSON-RPC thread stopped; stopping the node');
            fatal(err);
          },
        })
      : undefined;
    if (eth) life.add('json-rpc', () => eth.close());
    // Each worker thread reads its own heap. One stopping, failed or not answering within a second
    // is left out of that scrape rather than holding it.
    metrics.watchThreadHeaps(async () => {
      const asked: Array<[string, Promise<{ used: number; total: number }> | undefined]> = [
        ['json-rpc', eth?.heap()],
        ['tx-indexer', indexerThread?.heap()],
      ];
      const heaps: ThreadHeap[] = [];
      for (const [thread, p] of asked) {
        if (p === undefined) continue;
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<undefined>((r) => {
          timer = setTimeout(() => r(undefined), 1000);
        });
        const h = await Promise.race([p.catch(() => undefined), late]);
        clearTimeout(timer);
        if (h) heaps.push({ thread, ...h });
      }
      return heaps;
    });

    const comet = new CometRpcServer({
      node: reader,
      bus,
      indexer,
      logger: logger.child({ module: 'rpc' }),
      options: cometOptions,
      observe: (method, ms, ok) => metrics.observeRpc(method, ms, ok),
    });
    life.add('rpc', () => comet.close());

    const apiOptions = toApiOptions(app);
    const rest = new RestServer({
      node: reader,
      chain: executor,
      logger: logger.child({ module: 'api' }),
      options: apiOptions,
      evmChainId: genesis.evmChainId,
      gas: settings.gas,
      indexer: indexer.enabled ? indexer : undefined,
      appVersion: { name: 'noded', version: NODED_VERSION },
    });
    life.add('api', () => rest.close());

    const metricsServer = new MetricsServer({
      metrics,
      logger: logger.child({ module: 'metrics' }),
      options: instrumentation,
      readiness: () => ({ serving: life.serving, catchingUp: reader.syncInfo().catchingUp }),
    });
    life.add('metrics server', () => metricsServer.close());

    // The host stops after consensus (closers run in reverse), so no message arrives at a stopped engine.
    const p2pPort = await p2p.start();
    life.addClosingAfter('p2p', () => p2p.stop(), 'consensus');
    if (pex) {
      pex.start();
      life.addClosingAfter('pex', () => pex.stop(), 'p2p');
    }
    await consensus.start();

    const endpoints: string[] = [
      `P2P             tcp://${p2pAt.host}:${p2pPort}  (node ID ${nodeKey.nodeId})`,
    ];
    const rpcAt = hostPort(cometOptions.laddr);
    const rpcPort = await comet.listen(rpcAt.host, rpcAt.port);
    endpoints.push(
      `consensus RPC   http://${dialHost(rpcAt.host)}:${rpcPort}  (WebSocket ws://${dialHost(rpcAt.host)}:${rpcPort}/websocket)`,
    );
    if (eth && ethOptions.enable) {
      const at = hostPort(app.evm.rpcAddress.raw);
      endpoints.push(`EVM JSON-RPC    http://${dialHost(at.host)}:${await eth.listenHttp(at.host, at.port)}`);
    }
    if (eth && ethOptions.wsEnable) {
      const at = hostPort(app.evm.wsAddress.raw);
      endpoints.push(`EVM WebSocket   ws://${dialHost(at.host)}:${await eth.listenWs(at.host, at.port)}`);
    }
    if (apiOptions.enable) {
      const at = hostPort(apiOptions.address);
      const scheme = apiOptions.tlsCertFile ? 'https' : 'http';
      endpoints.push(
        `REST API        ${scheme}://${dialHost(at.host)}:${await rest.listen(at.host, at.port)}`,
      );
    }
    if (instrumentation.prometheus) {
      const at = hostPort(instrumentation.prometheusListenAddr);
      endpoints.push(
        `metrics         http://${dialHost(at.host)}:${await metricsServer.listen(at.host, at.port)}/metrics`,
      );
    }
    life.serving = true;

    announce(endpoints, devKeys, genesis.chainId, reader.syncInfo().latestBlockHeight);
    log.info(
      { chainId: genesis.chainId, mode: opts.mode, height: reader.syncInfo().latestBlockHeight },
      'node started',
    );

    return life.handle();
  } catch (err) {
    await life.closeAll();
    throw err;
  }
}

/** What a developer sees on start, as a Hardhat node shows it: endpoints and test-only accounts. */
function announce(endpoints: string[], devKeys: string[], chainId: string, height: number): void {
  const out: string[] = ['', `noded ${NODED_VERSION} on ${chainId}, at height ${height}`, ''];
  for (const e of endpoints) out.push(`  ${e}`);
  if (devKeys.length > 0) {
    const accounts = deriveAddresses(devKeys);
    out.push('', 'Accounts (unlocked for eth_sendTransaction; 10000 BTC each at genesis)');
    out.push(
      'WARNING: these keys are public test keys. Never send real funds to them or use them on mainnet.',
      '',
    );
    accounts.forEach((a, i) => {
      out.push(`Account #${i}: ${a.address}`, `Private Key: ${a.key}`, '');
    });
  }
  process.stdout.write(`${out.join('\n')}\n`);
}

function deriveAddresses(keys: string[]): Array<{ address: string; key: string }> {
  return new DevAccounts(keys)
    .accounts()
    .map((address, i) => ({ address: toChecksumAddress(address), key: keys[i] }));
}
