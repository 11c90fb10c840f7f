// A small deterministic in-memory EthChain: test scaffolding for the JSON-RPC server (dispatch,
// formatting, filters, subscriptions, limits), not an execution engine. Transactions are decoded
// with ethers, "mined" by mine(), and a few magic addresses make eth_call revert, halt or stall.

import {
  type AccessListEntry,
  type AccountProof,
  type CallOptions,
  type CallRequest,
  type CallResult,
  ChainError,
  type EthBlock,
  type EthChain,
  type EthLog,
  type EthReceipt,
  type EthTx,
  type EventBus,
  type FeeHistory,
  type Hex,
  type LogFilter,
  type PendingTxSummary,
  type StateOverrides,
  type TracerConfig,
} from '@noded/types';
import { AbiCoder, id as ethersId, keccak256, Transaction } from 'ethers';

export const addr = (n: number): Hex => `0x${n.toString(16).padStart(40, '0')}`;
export const word = (n: bigint | number): Hex => `0x${BigInt(n).toString(16).padStart(64, '0')}`;

/** eth_call to these addresses behaves specially. */
export const REVERT_STRING = addr(0xdead01);
export const REVERT_PANIC = addr(0xdead02);
export const REVERT_CUSTOM = addr(0xdead03);
export const REVERT_EMPTY = addr(0xdead04);
export const HALT = addr(0xdead05);
export const SLOW = addr(0xdead06);
/** Transactions to this address emit one log each: topic0 = TRANSFER_TOPIC, topic1 = sender. */
export const LOGGER = addr(0x10c);
export const TRANSFER_TOPIC = ethersId('Transfer(address,address,uint256)') as Hex;

export const BASE_FEE = 1_000_000_000n;
export const TIP = 1_000_000n;

const hashOf = (label: string): Hex => keccak256(Buffer.from(label)) as Hex;
const EMPTY_BLOOM = `0x${'0'.repeat(512)}` as Hex;

export interface FakeChainCalls {
  call?: { req: CallRequest; height: bigint; overrides: StateOverrides | undefined; opts: CallOptions };
  estimate?: { req: CallRequest; height: bigint; opts: CallOptions };
  logFilter?: LogFilter;
}

export class FakeChain implements EthChain {
  readonly blocks: EthBlock[] = [];
  readonly blockTxs: EthTx[][] = [];
  readonly blockReceipts: EthReceipt[][] = [];
  readonly balances = new Map<Hex, bigint>();
  readonly nonces = new Map<Hex, bigint>();
  readonly code = new Map<Hex, Hex>();
  pending: EthTx[] = [];
  oldest = 0n;
  slowMs = 0;
  /** How many times eth_call reached the chain. */
  callCount = 0;
  /** eth_call to this address throws this error (once set). */
  failCall: { to: Hex; error: Error } | undefined;
  /** The last arguments the server passed (to check gas cap / EVM timeout / limits plumbing). */
  readonly seen: FakeChainCalls = {};

  constructor(
    private readonly bus: EventBus,
    readonly id = 31337n,
  ) {
    this.blocks.push(this.makeBlock(0n, []));
    this.blockTxs.push([]);
    this.blockReceipts.push([]);
  }

  private makeBlock(number: bigint, txs: EthTx[]): EthBlock {
    const parent = number === 0n ? (`0x${'0'.repeat(64)}` as Hex) : this.blocks[Number(number) - 1]!.hash;
    return {
      number,
      hash: hashOf(`block-${number}`),
      parentHash: parent,
      nonce: '0x0000000000000000',
      sha3Uncles: '0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347',
      logsBloom: EMPTY_BLOOM,
      transactionsRoot: hashOf(`txroot-${number}`),
      stateRoot: hashOf(`state-${number}`),
      receiptsRoot: hashOf(`receipts-${number}`),
      miner: addr(0xc0ffee),
      difficulty: 0n,
      totalDifficulty: 0n,
      extraData: '0x',
      size: 1000n + BigInt(txs.length) * 100n,
      gasLimit: 30_000_000n,
      gasUsed: 21_000n * BigInt(txs.length),
      timestamp: 1_700_000_000n + number,
      mixHash: hashOf(`mix-${number}`),
      baseFeePerGas: BASE_FEE,
      withdrawalsRoot: '0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421',
      transactions: txs.map((t) => t.hash),
    };
  }

  /** Decodes a raw transaction as the mempool would (via ethers). */
  static decode(raw: Uint8Array): EthTx {
    const t = Transaction.from(`0x${Buffer.from(raw).toString('hex')}`);
    const sig = t.signature!;
    const tx: EthTx = {
      hash: t.hash as Hex,
      type: t.type ?? 0,
      nonce: BigInt(t.nonce),
      from: t.from!.toLowerCase() as Hex,
      to: t.to === null ? null : (t.to.toLowerCase() as Hex),
      value: t.value,
      gas: t.gasLimit,
      gasPrice: (t.type ?? 0) >= 2 ? t.maxFeePerGas! : t.gasPrice!,
      input: t.data as Hex,
      v: t.type === 0 ? (sig.networkV ?? BigInt(sig.v)) : BigInt(sig.yParity),
      r: sig.r as Hex,
      s: sig.s as Hex,
      blockHash: null,
      blockNumber: null,
      transactionIndex: null,
    };
    if (t.chainId !== 0n) tx.chainId = t.chainId;
    if ((t.type ?? 0) >= 1) {
      tx.accessList = (t.accessList ?? []).map((e) => ({
        address: e.address as Hex,
        storageKeys: e.storageKeys as Hex[],
      }));
      tx.yParity = BigInt(sig.yParity);
    }
    if ((t.type ?? 0) >= 2) {
      tx.maxFeePerGas = t.maxFeePerGas!;
      tx.maxPriorityFeePerGas = t.maxPriorityFeePerGas!;
    }
    return tx;
  }

  /** Puts a transaction into the pool directly (for shapes ethers cannot sign here, e.g. type 4). */
  inject(tx: EthTx): void {
    this.pending.push(tx);
    this.bus.publish({ kind: 'EthPendingTx', hash: tx.hash });
  }

  /** Commits the pool as the next block and publishes EthNewHead, like execution after commit. */
  mine(): EthBlock {
    const number = BigInt(this.blocks.length);
    const txs = this.pending;
    this.pending = [];
    const block = this.makeBlock(number, txs);
    const minedTxs: EthTx[] = [];
    const receipts: EthReceipt[] = [];
    const blockLogs: EthLog[] = [];
    let cumulative = 0n;
    txs.forEach((t, i) => {
      const tip = t.maxPriorityFeePerGas ?? t.gasPrice;
      const effective =
        t.type >= 2 ? (BASE_FEE + tip < t.gasPrice ? BASE_FEE + tip : t.gasPrice) : t.gasPrice;
      const mined: EthTx = {
        ...t,
        gasPrice: effective,
        blockHash: block.hash,
        blockNumber: number,
        transactionIndex: BigInt(i),
      };
      minedTxs.push(mined);
      this.nonces.set(t.from, (this.nonces.get(t.from) ?? 0n) + 1n);
      cumulative += 21_000n;
      const logs: EthLog[] = [];
      if (t.to === LOGGER) {
        logs.push({
          address: LOGGER,
          topics: [TRANSFER_TOPIC, word(BigInt(t.from))],
          data: word(t.value),
          blockNumber: number,
          blockHash: block.hash,
          blockTimestamp: block.timestamp,
          transactionHash: t.hash,
          transactionIndex: BigInt(i),
          logIndex: BigInt(blockLogs.length),
          removed: false,
        });
      }
      blockLogs.push(...logs);
      receipts.push({
        transactionHash: t.hash,
        transactionIndex: BigInt(i),
        blockHash: block.hash,
        blockNumber: number,
        from: t.from,
        to: t.to,
        cumulativeGasUsed: cumulative,
        gasUsed: 21_000n,
        effectiveGasPrice: effective,
        contractAddress: t.to === null ? addr(0xc0de) : null,
        logs,
        logsBloom: EMPTY_BLOOM,
        status: 1,
        type: t.type,
      });
    });
    this.blocks.push(block);
    this.blockTxs.push(minedTxs);
    this.blockReceipts.push(receipts);
    this.bus.publish({ kind: 'EthNewHead', block, logs: blockLogs });
    return block;
  }

  mineMany(n: number): void {
    for (let i = 0; i < n; i++) this.mine();
  }

  chainId(): bigint {
    return this.id;
  }
  latestHeight(): bigint {
    return BigInt(this.blocks.length - 1);
  }
  oldestStateHeight(): bigint {
    return this.oldest;
  }
  async getBlockByNumber(n: bigint): Promise<EthBlock | undefined> {
    return this.blocks[Number(n)];
  }
  async getBlockByHash(hash: Hex): Promise<EthBlock | undefined> {
    return this.blocks.find((b) => b.hash === hash);
  }
  async getBlockTransactions(n: bigint): Promise<EthTx[]> {
    return this.blockTxs[Number(n)] ?? [];
  }
  async getBlockReceipts(n: bigint): Promise<EthReceipt[]> {
    return this.blockReceipts[Number(n)] ?? [];
  }
  async getTransaction(hash: Hex): Promise<EthTx | undefined> {
    for (const txs of this.blockTxs) for (const t of txs) if (t.hash === hash) return t;
    return this.pending.find((t) => t.hash === hash);
  }
  async getReceipt(hash: Hex): Promise<EthReceipt | undefined> {
    for (const rs of this.blockReceipts) for (const r of rs) if (r.transactionHash === hash) return r;
    return undefined;
  }
  /**
   * Every log of the block range, up to `limit`: address and topic matching belong to the executor
   * (test/rpc-eth/executor-logs.test.ts runs them); the RPC tests here check the filter it is handed.
   */
  async getLogs(filter: LogFilter): Promise<EthLog[]> {
    this.seen.logFilter = filter;
    const out: EthLog[] = [];
    for (let n = filter.fromBlock; n <= filter.toBlock && n < BigInt(this.blocks.length); n++) {
      for (const r of this.blockReceipts[Number(n)]!) {
        for (const l of r.logs) {
          out.push(l);
          if (filter.limit !== undefined && out.length >= filter.limit) return out;
        }
      }
    }
    return out;
  }
  async getBalance(address: Hex, _height: bigint): Promise<bigint> {
    if (address === SLOW && this.slowMs > 0) await new Promise((r) => setTimeout(r, this.slowMs));
    return this.balances.get(address) ?? 0n;
  }
  async getNonce(address: Hex, height: bigint | 'pending'): Promise<bigint> {
    const committed = this.nonces.get(address) ?? 0n;
    if (height !== 'pending') return committed;
    return committed + BigInt(this.pending.filter((t) => t.from === address).length);
  }
  async getCode(address: Hex, _height: bigint): Promise<Hex> {
    return this.code.get(address) ?? '0x';
  }
  async getStorageAt(_address: Hex, slot: Hex, _height: bigint): Promise<Hex> {
    return slot === word(0) ? '0x2a' : '0x0';
  }
  async getProof(address: Hex, slots: Hex[], _height: bigint): Promise<AccountProof> {
    return {
      address,
      accountProof: ['0xf8518080'],
      balance: this.balances.get(address) ?? 0n,
      codeHash: '0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470',
      nonce: this.nonces.get(address) ?? 0n,
      storageHash: '0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421',
      storageProof: slots.map((key) => ({ key, value: key === word(0) ? 42n : 0n, proof: [] })),
    };
  }
  async call(
    req: CallRequest,
    height: bigint,
    overrides: StateOverrides | undefined,
    opts: CallOptions,
  ): Promise<CallResult> {
    this.seen.call = { req, height, overrides, opts };
    this.callCount++;
    if (this.failCall !== undefined && req.to === this.failCall.to) throw this.failCall.error;
    const abi = AbiCoder.defaultAbiCoder();
    switch (req.to) {
      case REVERT_STRING:
        return {
          returnData: `0x08c379a0${abi.encode(['string'], ['nope']).slice(2)}` as Hex,
          gasUsed: 1n,
          reverted: true,
          logs: [],
        };
      case REVERT_PANIC:
        return {
          returnData: `0x4e487b71${abi.encode(['uint256'], [0x11]).slice(2)}` as Hex,
          gasUsed: 1n,
          reverted: true,
          logs: [],
        };
      case REVERT_CUSTOM:
        return { returnData: '0xdeadbeef', gasUsed: 1n, reverted: true, logs: [] };
      case REVERT_EMPTY:
        return { returnData: '0x', gasUsed: 1n, reverted: true, logs: [] };
      case HALT:
        return { returnData: '0x', gasUsed: 1n, error: 'invalid opcode: INVALID', logs: [] };
      case SLOW:
        await new Promise((r) => setTimeout(r, this.slowMs));
        break;
    }
    return { returnData: word(42), gasUsed: 21_000n, logs: [] };
  }
  async estimateGas(
    req: CallRequest,
    height: bigint,
    _overrides: StateOverrides | undefined,
    opts: CallOptions,
  ): Promise<bigint> {
    this.seen.estimate = { req, height, opts };
    if (req.to === REVERT_STRING) {
      const data = `0x08c379a0${AbiCoder.defaultAbiCoder().encode(['string'], ['nope']).slice(2)}` as Hex;
      throw new ChainError(3, 'execution reverted: nope', data);
    }
    const dataLen = req.data === undefined ? 0 : (req.data.length - 2) / 2;
    return 21_000n + 16n * BigInt(dataLen);
  }
  async createAccessList(
    _req: CallRequest,
    _height: bigint,
    _opts: CallOptions,
  ): Promise<{ accessList: AccessListEntry[]; gasUsed: bigint; error?: string }> {
    return { accessList: [{ address: LOGGER, storageKeys: [word(1)] }], gasUsed: 23_000n };
  }
  nextBaseFee(): bigint {
    return BASE_FEE;
  }
  suggestedTip(): bigint {
    return TIP;
  }
  async feeHistory(
    blockCount: number,
    newest: bigint,
    percentiles: number[] | undefined,
  ): Promise<FeeHistory> {
    const oldest = newest - BigInt(blockCount) + 1n;
    const f: FeeHistory = {
      oldestBlock: oldest,
      baseFeePerGas: Array.from({ length: blockCount + 1 }, () => BASE_FEE),
      gasUsedRatio: Array.from({ length: blockCount }, () => 0.5),
    };
    if (percentiles !== undefined)
      f.reward = Array.from({ length: blockCount }, () => percentiles.map(() => TIP));
    return f;
  }
  async sendRawTransaction(raw: Uint8Array): Promise<Hex> {
    let tx: EthTx;
    try {
      tx = FakeChain.decode(raw);
    } catch (e) {
      throw new ChainError(-32000, `rlp: ${(e as Error).message.split(' (')[0]}`);
    }
    if (tx.nonce < (this.nonces.get(tx.from) ?? 0n)) throw new ChainError(-32000, 'nonce too low');
    if (this.pending.some((t) => t.hash === tx.hash)) throw new ChainError(-32000, 'already known');
    this.inject(tx);
    return tx.hash;
  }
  async txPool(): Promise<PendingTxSummary> {
    const pending = new Map<Hex, Map<bigint, EthTx>>();
    for (const t of this.pending) {
      const bySender = pending.get(t.from) ?? new Map<bigint, EthTx>();
      bySender.set(t.nonce, t);
      pending.set(t.from, bySender);
    }
    return { pending, queued: new Map() };
  }
  async traceTransaction(hash: Hex, config: TracerConfig): Promise<unknown> {
    const tx = await this.getTransaction(hash);
    if (tx === undefined) throw new ChainError(-32000, `transaction ${hash} not found`);
    if (config.tracer === 'callTracer') {
      return {
        type: 'CALL',
        from: tx.from,
        to: tx.to,
        gas: `0x${tx.gas.toString(16)}`,
        gasUsed: '0x5208',
        value: '0x0',
        input: tx.input,
      };
    }
    return {
      gas: 21_000n,
      failed: false,
      returnValue: '',
      structLogs: [],
      timeoutMs: config.timeoutMs ?? null,
    };
  }
  async traceCall(req: CallRequest, height: bigint, config: TracerConfig): Promise<unknown> {
    return {
      type: 'CALL',
      from: req.from ?? addr(0),
      to: req.to ?? null,
      height: Number(height),
      tracer: config.tracer ?? 'struct',
    };
  }
  async traceBlock(n: bigint, config: TracerConfig): Promise<Array<{ txHash: Hex; result: unknown }>> {
    const txs = await this.getBlockTransactions(n);
    return Promise.all(
      txs.map(async (t) => ({ txHash: t.hash, result: await this.traceTransaction(t.hash, config) })),
    );
  }
}
