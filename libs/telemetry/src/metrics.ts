// The node's Prometheus metrics: CometBFT's names under the [instrumentation] namespace (so
// existing dashboards work), plus noded's own (RPC calls, EVM gas, base fee) and process metrics.

import type { EventBus, Logger, NodeEvent, NodeReader, Validator } from '@noded/types';
import { silentLogger } from '@noded/types';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { InstrumentationConfigError } from './options.js';

export interface NodeMetricsDeps {
  /** [instrumentation] namespace, e.g. "cometbft". */
  namespace: string;
  /** Every CometBFT metric carries chain_id, as CometBFT's do. */
  chainId: string;
  /** Events that feed the consensus, tx and gas metrics. */
  bus?: EventBus;
  /** Read for the validator set and exact block sizes after each block. */
  node?: NodeReader;
  logger?: Logger;
  /** process_* and nodejs_* metrics (default true). */
  processMetrics?: boolean;
}

/** prom-client's linear buckets (Go's prometheus.LinearBuckets). */
function linear(start: number, width: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => start + i * width);
}

/** Go client's default buckets (CometBFT histograms without explicit ones use them). */
const GO_DEFAULT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const METHOD_LIMIT = 256;

/** One database's RocksDB memory, bytes (`<ns>_storage_memory_bytes`). */
export interface StorageMemory {
  db: string;
  memtables: number;
  blockCache: number;
  tableReaders: number;
}

/**
 * One worker thread's V8 heap, bytes (`<ns>_thread_heap_bytes`): v8.getHeapStatistics() read in that
 * thread, `used_heap_size` and `total_heap_size`. The main thread's own is nodejs_heap_size_*_bytes.
 */
export interface ThreadHeap {
  thread: string;
  used: number;
  total: number;
}

/** Bytes a peer sent and received on one channel since it connected (the P2P host's counts). */
export interface PeerTraffic {
  peer: string;
  /** The channel's protocol ID ("/noded/consensus/1"), used as CometBFT's chID label. */
  channel: string;
  sent: number;
  received: number;
}

export class NodeMetrics {
  readonly registry = new Registry();
  private readonly label: { chain_id: string };
  private readonly unsubscribe: (() => void) | undefined;
  private readonly node?: NodeReader;
  private readonly logger: Logger;
  private readonly namespace: string;
  private lastBlockTimeNs: bigint | undefined;
  /**
   * The node read for the block size and validator set gauges: one at a time, of the latest
   * height. Blocks published while one runs (block sync publishes a batch of up to 100 at once)
   * leave only their last height to read next, since the gauges show the latest block.
   */
  private nodeRead: { running: boolean; next: number | undefined } = { running: false, next: undefined };
  private readonly methods = new Set<string>();

  // CometBFT (consensus, mempool, p2p, state)
  private readonly height: Gauge<'chain_id'>;
  private readonly rounds: Gauge<'chain_id'>;
  private readonly validators: Gauge<'chain_id'>;
  private readonly validatorsPower: Gauge<'chain_id'>;
  private readonly blockInterval: Histogram<'chain_id'>;
  private readonly numTxs: Gauge<'chain_id'>;
  private readonly totalTxs: Gauge<'chain_id'>;
  private readonly blockSize: Gauge<'chain_id'>;
  private readonly latestBlockHeight: Gauge<'chain_id'>;
  private readonly mempoolSize: Gauge<'chain_id'>;
  private readonly mempoolFailedTxs: Counter<'chain_id'>;
  private readonly peers: Gauge<'chain_id'>;
  private readonly peerReceiveBytes: Counter<'chain_id' | 'peer_id' | 'chID'>;
  private readonly peerSendBytes: Counter<'chain_id' | 'peer_id' | 'chID'>;
  /** Each connected peer's counts per channel at the last recordPeerTraffic (keyed peer + channel). */
  private lastTraffic = new Map<string, PeerTraffic>();
  private readonly blockProcessing: Histogram<'chain_id'>;
  // noded
  private readonly rpcRequests: Counter<'method' | 'outcome'>;
  private readonly rpcLatency: Histogram<'method'>;
  private readonly gasUsed: Gauge<'chain_id'>;
  private readonly gasUsedTotal: Counter<'chain_id'>;
  private readonly gasLimit: Gauge<'chain_id'>;
  private readonly baseFee: Gauge<'chain_id'>;
  private readonly ranAhead: Counter<'chain_id'>;
  // bridge in (docs/bridge.md): set by recordBridge after each poll of the source chain
  private readonly bridgeObserved: Gauge<'chain_id'>;
  private readonly bridgeAttested: Gauge<'chain_id'>;
  private readonly bridgeMinted: Gauge<'chain_id'>;
  private readonly bridgePending: Gauge<'chain_id'>;
  private readonly bridgeErrors: Counter<'chain_id'>;
  private readonly bridgePaused: Gauge<'chain_id'>;
  private readonly bridgeWindowInflow: Gauge<'chain_id'>;
  private readonly bridgeInflowLimit: Gauge<'chain_id'>;
  private readonly bridgeOverCap: Gauge<'chain_id'>;
  private bridgeErrorsSeen = 0;
  /** The node's execution counters when last read (metrics count the increase). */
  private seen = { refusedTxs: 0, ranAheadTxs: 0, lastFinalizeHeight: 0, heldBackJails: 0 };
  private readonly heldBackJails: Counter<'chain_id'>;

  constructor(deps: NodeMetricsDeps) {
    const ns = deps.namespace;
    this.namespace = ns;
    if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(ns)) {
      throw new InstrumentationConfigError(
        `config.toml:instrumentation.namespace: ${JSON.stringify(ns)} must match [a-zA-Z_:][a-zA-Z0-9_:]*`,
      );
    }
    this.node = deps.node;
    this.logger = deps.logger ?? silentLogger;
    this.label = { chain_id: deps.chainId };
    const registers = [this.registry];
    const gauge = (name: string, help: string) =>
      new Gauge({ name: `${ns}_${name}`, help, labelNames: ['chain_id'] as const, registers });
    this.height = gauge('consensus_height', 'Height of the chain.');
    this.rounds = gauge('consensus_rounds', 'Number of rounds.');
    this.validators = gauge('consensus_validators', 'Number of validators.');
    this.validatorsPower = gauge('consensus_validators_power', 'Total power of all validators.');
    this.blockInterval = new Histogram({
      name: `${ns}_consensus_block_interval_seconds`,
      help: 'Time between this and the last block.',
      labelNames: ['chain_id'] as const,
      buckets: GO_DEFAULT_BUCKETS,
      registers,
    });
    this.numTxs = gauge('consensus_num_txs', 'Number of transactions.');
    this.totalTxs = gauge('consensus_total_txs', 'Total number of transactions.');
    this.blockSize = gauge('consensus_block_size_bytes', 'Size of the block.');
    this.latestBlockHeight = gauge('consensus_latest_block_height', 'The latest block height.');
    this.mempoolSize = gauge('mempool_size', 'Number of uncommitted transactions in the mempool.');
    this.mempoolFailedTxs = new Counter({
      name: `${ns}_mempool_failed_txs`,
      help: 'Number of failed transactions.',
      labelNames: ['chain_id'] as const,
      registers,
    });
    this.peers = gauge('p2p_peers', 'Number of peers.');
    const peerCounter = (name: string, help: string) =>
      new Counter({
        name: `${ns}_${name}`,
        help,
        labelNames: ['chain_id', 'peer_id', 'chID'] as const,
        registers,
      });
    this.peerReceiveBytes = peerCounter(
      'p2p_peer_receive_bytes_total',
      'Number of bytes received from a given peer.',
    );
    this.peerSendBytes = peerCounter('p2p_peer_send_bytes_total', 'Number of bytes sent to a given peer.');
    this.blockProcessing = new Histogram({
      name: `${ns}_state_block_processing_time`,
      help: 'Time spent processing FinalizeBlock',
      labelNames: ['chain_id'] as const,
      buckets: linear(1, 10, 10),
      registers,
    });

    this.rpcRequests = new Counter({
      name: `${ns}_rpc_requests_total`,
      help: 'JSON-RPC requests handled, by method and outcome (ok or error).',
      labelNames: ['method', 'outcome'] as const,
      registers,
    });
    this.rpcLatency = new Histogram({
      name: `${ns}_rpc_request_duration_seconds`,
      help: 'JSON-RPC request latency by method.',
      labelNames: ['method'] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.gasUsed = gauge('evm_block_gas_used', 'Gas used by the latest block.');
    this.gasUsedTotal = new Counter({
      name: `${ns}_evm_gas_used_total`,
      help: 'Gas used by all blocks since start.',
      labelNames: ['chain_id'] as const,
      registers,
    });
    this.gasLimit = gauge('evm_block_gas_limit', 'Gas limit of the latest block.');
    this.baseFee = gauge(
      'evm_base_fee_per_gas',
      'Base fee per gas of the latest block, in abtc (10^-18 BTC).',
    );

    this.heldBackJails = new Counter({
      name: `${ns}_staking_jails_held_back_total`,
      help: 'Downtime jails the liveness guard held back because they would leave 2/3 or less of the voting power online (one per validator per block).',
      labelNames: ['chain_id'] as const,
      registers,
    });
    this.ranAhead = new Counter({
      name: `${ns}_evm_txs_ran_ahead_total`,
      help: 'Transactions of committed blocks that had executed before their block was proposed.',
      labelNames: ['chain_id'] as const,
      registers,
    });

    if (deps.processMetrics !== false) {
      collectDefaultMetrics({ register: this.registry });
      // Gauges named *_total break Prometheus naming rules (promtool flags them); the per-type
      // nodejs_active_handles / _requests / _resources gauges carry the same numbers.
      for (const name of [
        'nodejs_active_handles_total',
        'nodejs_active_requests_total',
        'nodejs_active_resources_total',
      ]) {
        this.registry.removeSingleMetric(name);
      }
    }
    this.bridgeObserved = gauge(
      'bridge_last_observed_sequence',
      'Highest deposit sequence number seen on the source chain (confirmed blocks).',
    );
    this.bridgeAttested = gauge(
      'bridge_last_attested_sequence',
      'Highest deposit sequence number this validator attested in a vote extension.',
    );
    this.bridgeMinted = gauge(
      'bridge_last_minted_sequence',
      'Last deposit sequence number the chain processed (minted, or skipped for an unmapped token).',
    );
    this.bridgePending = gauge(
      'bridge_pending_deposits',
      'Deposits seen on the source chain and not processed yet.',
    );
    this.bridgePaused = gauge(
      'bridge_paused',
      '1 while the admin has paused the bridge (no mint, no bridgeOut).',
    );
    this.bridgeWindowInflow = gauge(
      'bridge_window_inflow_btc',
      'BTC minted by bridge-in in the current inflow window.',
    );
    this.bridgeInflowLimit = gauge(
      'bridge_inflow_limit_btc',
      'Most BTC bridge-in mints per window (genesis max_inflow_per_window; 0 = no limit).',
    );
    this.bridgeOverCap = gauge(
      'bridge_over_cap_deposits',
      'Deposits processed without a mint for being above genesis max_deposit_amount (committed state).',
    );
    this.bridgeErrors = new Counter({
      name: `${ns}_bridge_errors_total`,
      help: 'Failed reads of the source chain (down, timing out, or answering garbage).',
      labelNames: ['chain_id'] as const,
      registers,
    });
    this.unsubscribe = deps.bus?.subscribe((ev) => this.handle(ev));
  }

  /** The deposit watcher's numbers after a poll (errors is its running count since start). */
  recordBridge(s: {
    lastObserved: bigint;
    lastAttested: bigint;
    lastMinted: bigint;
    pending: number;
    errors: number;
    /** From the committed state: the pause switch and the inflow window (base units). */
    paused?: boolean;
    windowInflow?: bigint;
    maxInflow?: bigint;
    overCapDeposits?: bigint;
  }): void {
    this.bridgeObserved.set(this.label, Number(s.lastObserved));
    this.bridgeAttested.set(this.label, Number(s.lastAttested));
    this.bridgeMinted.set(this.label, Number(s.lastMinted));
    this.bridgePending.set(this.label, s.pending);
    if (s.paused !== undefined) this.bridgePaused.set(this.label, s.paused ? 1 : 0);
    if (s.windowInflow !== undefined) this.bridgeWindowInflow.set(this.label, btc(s.windowInflow));
    if (s.maxInflow !== undefined) this.bridgeInflowLimit.set(this.label, btc(s.maxInflow));
    if (s.overCapDeposits !== undefined) this.bridgeOverCap.set(this.label, Number(s.overCapDeposits));
    // An increase of 0 still creates the series, so a healthy watcher shows errors_total 0.
    this.bridgeErrors.inc(this.label, Math.max(0, s.errors - this.bridgeErrorsSeen));
    this.bridgeErrorsSeen = s.errors;
  }

  /**
   * Native memory held by the node's databases, read at each scrape: `<ns>_storage_memory_bytes` with
   * labels `db` and `kind` (memtables, block_cache, table_readers). V8's nodejs_* figures never see it.
   * `read` may answer later (a database another thread owns is asked for its figures).
   */
  watchStorageMemory(read: () => StorageMemory[] | Promise<StorageMemory[]>): void {
    new Gauge({
      name: `${this.namespace}_storage_memory_bytes`,
      help: 'Memory RocksDB holds for one database: memtables, block cache, table readers (index and filter blocks).',
      labelNames: ['db', 'kind'] as const,
      registers: [this.registry],
      async collect() {
        for (const m of await read()) {
          this.set({ db: m.db, kind: 'memtables' }, m.memtables);
          this.set({ db: m.db, kind: 'block_cache' }, m.blockCache);
          this.set({ db: m.db, kind: 'table_readers' }, m.tableReaders);
        }
      },
    });
  }

  /**
   * The worker threads' V8 heaps, read at each scrape: `<ns>_thread_heap_bytes` with labels `thread`
   * and `kind` (used, total). Each thread answers for itself (a heap is only visible from its own
   * isolate); a thread missing from an answer (stopped, or too busy to answer) has no series in that
   * scrape rather than a stale one.
   */
  watchThreadHeaps(read: () => Promise<ThreadHeap[]>): void {
    new Gauge({
      name: `${this.namespace}_thread_heap_bytes`,
      help: "A worker thread's V8 heap: used and total (reserved) bytes; the main thread's is nodejs_heap_size_*.",
      labelNames: ['thread', 'kind'] as const,
      registers: [this.registry],
      async collect() {
        const heaps = await read();
        this.reset();
        for (const h of heaps) {
          this.set({ thread: h.thread, kind: 'used' }, h.used);
          this.set({ thread: h.thread, kind: 'total' }, h.total);
        }
      },
    });
  }

  /** Records one RPC call (JSON-RPC method or route). Unknown-looking names are folded into "other". */
  observeRpc(method: string, ms: number, ok: boolean): void {
    let name = /^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(method) ? method : 'other';
    if (!this.methods.has(name)) {
      if (this.methods.size >= METHOD_LIMIT) name = 'other';
      else this.methods.add(name);
    }
    this.rpcRequests.inc({ method: name, outcome: ok ? 'ok' : 'error' });
    this.rpcLatency.observe({ method: name }, ms / 1000);
  }

  setMempoolSize(n: number): void {
    this.mempoolSize.set(this.label, n);
  }

  incFailedTxs(n = 1): void {
    this.mempoolFailedTxs.inc(this.label, n);
  }

  setPeers(n: number): void {
    this.peers.set(this.label, n);
  }

  /**
   * Adds each peer's traffic since the previous call, from cumulative counts per peer and channel.
   * The counts restart at zero when a peer reconnects: a peer missing from a sample is forgotten, and
   * a count below the last one is taken as a new connection whose whole count is new.
   */
  recordPeerTraffic(samples: readonly PeerTraffic[]): void {
    const next = new Map<string, PeerTraffic>();
    for (const t of samples) {
      const key = `${t.peer} ${t.channel}`;
      const last = this.lastTraffic.get(key);
      const reset = !last || t.sent < last.sent || t.received < last.received;
      const labels = { ...this.label, peer_id: t.peer, chID: t.channel };
      const sent = reset ? t.sent : t.sent - last.sent;
      const received = reset ? t.received : t.received - last.received;
      if (sent > 0) this.peerSendBytes.inc(labels, sent);
      if (received > 0) this.peerReceiveBytes.inc(labels, received);
      next.set(key, { ...t });
    }
    this.lastTraffic = next;
  }

  /** FinalizeBlock duration in milliseconds (state_block_processing_time). */
  observeBlockProcessing(ms: number): void {
    this.blockProcessing.observe(this.label, ms);
  }

  setValidatorSet(validators: Validator[]): void {
    this.validators.set(this.label, validators.length);
    this.validatorsPower.set(this.label, Number(validators.reduce((sum, v) => sum + v.votingPower, 0n)));
  }

  /** Feeds one node event (the bus subscription calls this). */
  handle(ev: NodeEvent): void {
    switch (ev.kind) {
      case 'NewBlock': {
        const header = ev.block.header;
        const txs = ev.block.data.txs;
        this.height.set(this.label, header.height + 1);
        this.latestBlockHeight.set(this.label, header.height);
        this.numTxs.set(this.label, txs.length);
        this.totalTxs.inc(this.label, txs.length);
        if (this.lastBlockTimeNs !== undefined && header.time > this.lastBlockTimeNs) {
          this.blockInterval.observe(this.label, Number(header.time - this.lastBlockTimeNs) / 1e9);
        }
        this.lastBlockTimeNs = header.time;
        this.readExecution(header.height);
        this.blockSize.set(
          this.label,
          txs.reduce((n, tx) => n + tx.length, 0),
        );
        if (this.node) this.readLatest(header.height);
        break;
      }
      case 'NewRound':
        this.rounds.set(this.label, ev.round);
        break;
      case 'EthNewHead':
        this.gasUsed.set(this.label, Number(ev.block.gasUsed));
        this.gasUsedTotal.inc(this.label, Number(ev.block.gasUsed));
        this.gasLimit.set(this.label, Number(ev.block.gasLimit));
        this.baseFee.set(this.label, Number(ev.block.baseFeePerGas));
        break;
      default:
        break;
    }
  }

  /** FinalizeBlock's duration for `height`, and the refused and ran-ahead counts since last read. */
  private readExecution(height: number): void {
    const x = this.node?.executionStats?.();
    if (!x) return;
    if (x.lastFinalizeHeight === height && height !== this.seen.lastFinalizeHeight) {
      this.blockProcessing.observe(this.label, x.lastFinalizeMs);
    }
    if (x.refusedTxs > this.seen.refusedTxs)
      this.mempoolFailedTxs.inc(this.label, x.refusedTxs - this.seen.refusedTxs);
    if (x.ranAheadTxs > this.seen.ranAheadTxs)
      this.ranAhead.inc(this.label, x.ranAheadTxs - this.seen.ranAheadTxs);
    const held = x.heldBackJails ?? 0;
    if (held > this.seen.heldBackJails) this.heldBackJails.inc(this.label, held - this.seen.heldBackJails);
    this.seen = {
      refusedTxs: x.refusedTxs,
      ranAheadTxs: x.ranAheadTxs,
      lastFinalizeHeight: x.lastFinalizeHeight,
      heldBackJails: held,
    };
  }

  private readLatest(height: number): void {
    const r = this.nodeRead;
    r.next = height;
    if (r.running) return;
    r.running = true;
    void (async () => {
      try {
        while (r.next !== undefined) {
          const h = r.next;
          r.next = undefined;
          await this.readFromNode(h);
        }
      } finally {
        r.running = false;
      }
    })();
  }

  private async readFromNode(height: number): Promise<void> {
    try {
      const [meta, vals] = await Promise.all([
        this.node!.loadBlockMeta(height),
        this.node!.validators(height),
      ]);
      if (meta) this.blockSize.set(this.label, meta.blockSize);
      if (vals) this.setValidatorSet(vals);
    } catch (err) {
      this.logger.debug({ err: (err as Error).message, height }, 'metrics: could not read block meta');
    }
  }

  /** The text exposition of every metric. */
  async text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** Stops listening to the bus. */
  close(): void {
    this.unsubscribe?.();
  }
}

/** Base units (1e-18 BTC) as BTC for a gauge (a float: exact to about 15 digits). */
function btc(units: bigint): number {
  return Number(units / 10n ** 9n) / 1e9;
}
