// The EthChain an rpc-edge serves the Ethereum JSON-RPC from (docs/cluster.md "rpc-edge"): reads go
// to a state-store over noded.state.v1.StateReader (the first one up of its list, StateReaderFailover);
// transactions and what only the mempool knows (the 'pending' nonce, txpool_*, a transaction not yet
// in a block) to the executor's noded.mempool.v1.Mempool, whose SendRawTransaction is CheckTx's
// admission plus the JSON-RPC's own checks (allow_unprotected_txs, rpc_tx_fee_cap), as `noded start`
// applies them. The edge keeps no chain state.
//
// Read-your-writes (docs/cluster.md "Read-your-writes"): `latest` (eth_blockNumber, and every read at
// 'latest') is the higher of the state-store's position as last reported and the newest head the
// executor announced on NATS that this edge heard of (announce()). Every read carries that height as
// its min_height, so a state-store that has not applied it yet waits for its follower (bounded,
// NODED_STATE_STORE_READ_WAIT) before it answers: a client that saw a receipt through another edge
// reads the state after it here. The other synchronous getters (eth_gasPrice, eth_chainId, the oldest
// state kept) answer from the state-store's last reported position, which the HeadFeed moves to the
// announced height as soon as the state-store reaches it (its Head waits for it as reads do).
//
// HeadFeed turns the executor's new heads (core NATS `noded.<chain_id>.heads`) into the EthNewHead
// events the server's newHeads/logs subscriptions and filters consume: on each head (and once a
// second, since core NATS delivers at most once) it asks the state-store for its position and
// publishes every height it now holds that was not published yet, with the block and its logs as the
// state-store answers them. So subscribers see the heights the state-store can answer reads at.
import {
  type GrpcDevChain,
  type GrpcMempool,
  type StateHead,
  type StateRead,
  type StateReader,
  StateStoreUnavailableError,
} from '@noded/abci-grpc';
import { normAddress, renderPendingTx } from '@noded/execution';
import { unavailable } from '@noded/rpc';
import {
  type EthBlock,
  type EthChain,
  type EthLog,
  type EthTx,
  type EventBus,
  type Hex,
  type Logger,
  type PendingTxSummary,
} from '@noded/types';

const hex = (b: Uint8Array): Hex => `0x${Buffer.from(b).toString('hex')}`;

/** How long a transaction lookup that missed both the state-store and the mempool waits for the state-store's next height. */
const TX_LOOKUP_WAIT_MS = 300;

export class EdgeChain {
  private head: StateHead;
  /** The newest head the executor announced that this edge heard of (-1: none yet). */
  private announced = -1n;

  constructor(
    private readonly reader: StateReader,
    private readonly mempool: GrpcMempool,
    initial: StateHead,
  ) {
    this.head = initial;
  }

  /** The state-store's position as last reported. */
  get position(): StateHead {
    return this.head;
  }

  /** The edge's `latest`: the state-store's position or the announced head, whichever is higher. */
  get latest(): bigint {
    const stored = this.head.latestHeight;
    if (this.announced > stored) return this.announced;
    return stored;
  }

  /** Takes a position reported by the state-store; never moves back (a lagging answer is older). */
  observe(h: StateHead): void {
    if (h.latestHeight >= this.head.latestHeight) this.head = h;
  }

  /** Takes a head the executor announced (core NATS); never moves back. */
  announce(height: bigint): void {
    if (height > this.announced) this.announced = height;
  }

  /** The state-store's position, once it holds the edge's `latest` (bounded by its wait). */
  async refresh(): Promise<StateHead> {
    this.observe(await this.reader.head(this.latest));
    return this.head;
  }

  private read<T>(m: StateRead, ...args: unknown[]): Promise<T> {
    return this.reader.read<T>(m, args, (h) => this.observe(h), this.latest);
  }

  /** The EthChain the JSON-RPC server is built on. */
  chain(): EthChain {
    const r = <T>(m: StateRead, ...a: unknown[]) => this.read<T>(m, ...a);
    return {
      chainId: () => this.head.evmChainId,
      latestHeight: () => this.latest,
      oldestStateHeight: () => this.head.oldestStateHeight,
      nextBaseFee: () => this.head.nextBaseFee,
      suggestedTip: () => this.head.suggestedTip,
      getBlockByNumber: (n) => r('getBlockByNumber', n),
      getBlockByHash: (h) => r('getBlockByHash', h),
      getBlockTransactions: (n) => r('getBlockTransactions', n),
      getBlockReceipts: (n) => r('getBlockReceipts', n),
      // In a block: the state-store; still waiting: the executor's mempool (as the node answers).
      getTransaction: (h) => this.transaction(h),
      getReceipt: (h) => r('getReceipt', h),
      getLogs: (f) => r('getLogs', f),
      getBalance: (a, h) => r('getBalance', a, h),
      getNonce: (a, h) => (h === 'pending' ? this.pendingNonce(a) : r('getNonce', a, h)),
      getCode: (a, h) => r('getCode', a, h),
      getStorageAt: (a, s, h) => r('getStorageAt', a, s, h),
      getProof: (a, s, h) => r('getProof', a, s, h),
      call: (req, h, o, opts) => r('call', req, h, o, opts),
      estimateGas: (req, h, o, opts) => r('estimateGas', req, h, o, opts),
      createAccessList: (req, h, opts) => r('createAccessList', req, h, opts),
      feeHistory: (c, n, p) => r('feeHistory', c, n, p),
      traceTransaction: (h, c) => r('traceTransaction', h, c),
      traceCall: (req, h, c) => r('traceCall', req, h, c),
      traceBlock: (n, c) => r('traceBlock', n, c),
      sendRawTransaction: (raw) => this.mempool.sendRawTransaction(raw),
      txPool: () => this.txPool(),
    };
  }

  /**
   * `chain` with the dev-chain calls of a chain-local executor (noded.dev.v1.DevChain): the executor
   * queues a state change for its next proposal and answers with the committed height, which the
   * edge takes as announced, so that a read of 'latest' right after (on this edge) waits for a
   * state-store holding it and sees the change, as in `noded start`.
   */
  withDev(chain: EthChain, dev: GrpcDevChain): EthChain {
    return {
      ...chain,
      devSetState: async (change) => {
        const height = await dev.devSetState(change);
        this.announce(height);
        return height;
      },
      devSendImpersonated: (sender, raw) => dev.devSendImpersonated(sender, raw),
      devImpersonate: (address, on) => dev.devImpersonate(address, on),
      devImpersonatedAccounts: () => dev.devImpersonatedAccounts(),
    };
  }

  private async pendingNonce(address: Hex): Promise<bigint> {
    return this.mempool.pendingNonce(Uint8Array.from(Buffer.from(normAddress(address).slice(2), 'hex')));
  }

  /**
   * A transaction by hash: mined (the state-store) or waiting (the executor's mempool). One that
   * leaves the mempool in a block between the two reads is in neither until the state-store applies
   * that block, so after two misses the state-store is asked again once its height has moved
   * (waiting up to TX_LOOKUP_WAIT_MS for it), rather than answering null for a known transaction.
   */
  private async transaction(hash: Hex): Promise<EthTx | undefined> {
    const before = this.latest;
    const mined = await this.read<EthTx | undefined>('getTransaction', hash);
    if (mined !== undefined) return mined;
    const waiting = await this.pendingTx(hash);
    if (waiting !== undefined) return waiting;
    const deadline = Date.now() + TX_LOOKUP_WAIT_MS;
    while ((await this.refresh()).latestHeight <= before && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 50));
    return this.head.latestHeight > before ? this.read<EthTx | undefined>('getTransaction', hash) : undefined;
  }

  private async pendingTx(hash: Hex): Promise<EthTx | undefined> {
    if (!/^0x[0-9a-fA-F]{64}$/.test(hash)) return undefined;
    const t = await this.mempool.pendingTransaction(Uint8Array.from(Buffer.from(hash.slice(2), 'hex')));
    return t === undefined ? undefined : renderPendingTx(t);
  }

  private async txPool(): Promise<PendingTxSummary> {
    const pool = await this.mempool.pendingTransactions();
    const group = (list: typeof pool.pending) => {
      const out = new Map<Hex, Map<bigint, EthTx>>();
      for (const t of list) {
        const sender = hex(t.sender);
        let inner = out.get(sender);
        if (!inner) {
          inner = new Map();
          out.set(sender, inner);
        }
        inner.set(t.nonce, renderPendingTx(t));
      }
      return out;
    };
    return { pending: group(pool.pending), queued: group(pool.queued) };
  }
}

/** Publishes EthNewHead for each height the state-store holds, in order, once (see the header). */
export class HeadFeed {
  private published: bigint;
  private running: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly edge: EdgeChain,
    private readonly chain: EthChain,
    private readonly bus: EventBus,
    private readonly logger: Logger,
    pollMs = 1_000,
  ) {
    this.published = edge.position.latestHeight;
    this.timer = setInterval(() => this.poke(), pollMs);
  }

  /** A new head was announced (or the poll fired): catch up with the state-store. */
  poke(): void {
    if (this.closed) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.catchUp()
      .catch((err: unknown) =>
        this.logger.warn({ err: (err as Error).message }, 'new heads: state-store not answering'),
      )
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.poke();
        }
      });
  }

  private async catchUp(): Promise<void> {
    const head = await this.edge.refresh();
    while (!this.closed && this.published < head.latestHeight) {
      const n = this.published + 1n;
      const block = await this.chain.getBlockByNumber(n);
      if (block === undefined) return;
      const logs = await this.chain.getLogs({ fromBlock: n, toBlock: n });
      this.bus.publish({ kind: 'EthNewHead', block: block as EthBlock, logs: logs as EthLog[] });
      this.published = n;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }
}

/**
 * The EthChain the edge's REST API reads: the same reads, except that a state-store that does not
 * answer is the REST API's 503 (gRPC-gateway code 14, the reason in the message) instead of a 500.
 */
export function restChain(chain: EthChain): EthChain {
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(chain) as Array<[string, (...a: unknown[]) => unknown]>) {
    wrapped[name] = (...args: unknown[]) => {
      const out = fn(...args);
      if (!(out instanceof Promise)) return out;
      return out.catch((err: unknown) => {
        if (err instanceof StateStoreUnavailableError) throw unavailable(err.message);
        throw err;
      });
    };
  }
  return wrapped as unknown as EthChain;
}
