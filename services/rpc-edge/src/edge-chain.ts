// The EthChain an rpc-edge serves the Ethereum JSON-RPC from (docs/cluster.md "rpc-edge"): reads go
// to one state-store over noded.state.v1.StateReader, transactions to the executor's CheckTx over
// noded.abci.v1.Application. The edge keeps no chain state: its synchronous getters (eth_blockNumber,
// eth_gasPrice...) answer from the state-store's position as last reported, which every read's answer
// and every Head call move forward.
//
// HeadFeed turns the executor's new heads (core NATS `noded.<chain_id>.heads`) into the EthNewHead
// events the server's newHeads/logs subscriptions and filters consume: on each head (and once a
// second, since core NATS delivers at most once) it asks the state-store for its position and
// publishes every height it now holds that was not published yet, with the block and its logs as the
// state-store answers them. So subscribers see the heights the state-store can answer reads at.
import type {
  GrpcApplication,
  StateHead,
  StateRead,
  StateReaderClient,
} from '../../../libs/abci-grpc/index.js';
import { keccak256 } from '../../../libs/crypto/index.js';
import {
  ChainError,
  type EthBlock,
  type EthChain,
  type EthLog,
  type EventBus,
  type Hex,
  type Logger,
  type PendingTxSummary,
} from '../../../libs/types/index.js';

const hex = (b: Uint8Array): Hex => `0x${Buffer.from(b).toString('hex')}`;

export class EdgeChain {
  private head: StateHead;

  constructor(
    private readonly reader: StateReaderClient,
    private readonly executor: GrpcApplication,
    initial: StateHead,
  ) {
    this.head = initial;
  }

  get position(): StateHead {
    return this.head;
  }

  /** Takes a position reported by the state-store; never moves back (a lagging answer is older). */
  observe(h: StateHead): void {
    if (h.latestHeight >= this.head.latestHeight) this.head = h;
  }

  async refresh(): Promise<StateHead> {
    this.observe(await this.reader.head());
    return this.head;
  }

  private read<T>(m: StateRead, ...args: unknown[]): Promise<T> {
    return this.reader.read<T>(m, args, (h) => this.observe(h));
  }

  /** The EthChain the JSON-RPC server is built on. */
  chain(): EthChain {
    const r = <T>(m: StateRead, ...a: unknown[]) => this.read<T>(m, ...a);
    return {
      chainId: () => this.head.evmChainId,
      latestHeight: () => this.head.latestHeight,
      oldestStateHeight: () => this.head.oldestStateHeight,
      nextBaseFee: () => this.head.nextBaseFee,
      suggestedTip: () => this.head.suggestedTip,
      getBlockByNumber: (n) => r('getBlockByNumber', n),
      getBlockByHash: (h) => r('getBlockByHash', h),
      getBlockTransactions: (n) => r('getBlockTransactions', n),
      getBlockReceipts: (n) => r('getBlockReceipts', n),
      getTransaction: (h) => r('getTransaction', h),
      getReceipt: (h) => r('getReceipt', h),
      getLogs: (f) => r('getLogs', f),
      getBalance: (a, h) => r('getBalance', a, h),
      // 'pending' is answered from committed state: the state-store has no mempool (docs/cluster.md).
      getNonce: (a, h) => r('getNonce', a, h),
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
      sendRawTransaction: (raw) => this.send(raw),
      txPool: (): Promise<PendingTxSummary> =>
        Promise.reject(
          new ChainError(
            -32000,
            'txpool_* is not served by an rpc-edge yet: the executor does not expose its mempool over the contract',
          ),
        ),
    };
  }

  /** eth_sendRawTransaction: the executor's CheckTx; a refusal answers with the executor's reason. */
  private async send(raw: Uint8Array): Promise<Hex> {
    let res: Awaited<ReturnType<GrpcApplication['checkTx']>>;
    try {
      res = await this.executor.checkTx(raw, 'new');
    } catch (err) {
      throw new ChainError(-32000, `transaction not accepted: ${(err as Error).message}`);
    }
    if (res.code !== 0) throw new ChainError(-32000, res.log);
    return hex(res.hash.length === 32 ? res.hash : keccak256(raw));
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
