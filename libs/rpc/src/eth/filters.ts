// Polling filters (eth_newFilter, eth_newBlockFilter, eth_newPendingTransactionFilter): installed
// node-wide, fed from the event bus, drained by eth_getFilterChanges, removed after filter_timeout
// without a poll, and capped at filter_cap live filters.
import { randomBytes } from 'node:crypto';
import type { EthBlock, EthLog, Hex } from '@noded/types';
import { RpcError, RpcErrorCode, serverError } from './errors.js';

/** Address and topic criteria shared by log filters, getLogs and logs subscriptions. */
export interface LogMatch {
  addresses: Hex[];
  /** Per position: null matches anything; a list matches any member. */
  topics: Array<Hex[] | null>;
}

export function logMatches(log: EthLog, m: LogMatch): boolean {
  if (m.addresses.length > 0 && !m.addresses.includes(log.address.toLowerCase() as Hex)) return false;
  if (m.topics.length > log.topics.length) return false;
  for (let i = 0; i < m.topics.length; i++) {
    const want = m.topics[i];
    if (want === null || want === undefined || want.length === 0) continue;
    if (!want.includes(log.topics[i]!.toLowerCase() as Hex)) return false;
  }
  return true;
}

/** geth's rpc.NewID: 16 random bytes as a hex quantity. */
export function newRpcId(): string {
  const digits = randomBytes(16).toString('hex').replace(/^0+/, '');
  return `0x${digits === '' ? '0' : digits}`;
}

export interface LogFilterSpec extends LogMatch {
  /** Numeric range bounds; undefined means open (tags such as latest follow the head). */
  fromBlock?: bigint;
  toBlock?: bigint;
  /** The criteria as given, for eth_getFilterLogs. */
  criteria: unknown;
}

// fromHeight (logs, blocks): the chain's latest height at install; only later blocks are collected
// (an rpc-edge hears of a height a little after reads already answer at it: see subscriptions.ts).
export type Filter =
  | { id: string; kind: 'logs'; spec: LogFilterSpec; items: EthLog[]; deadline: number; fromHeight?: bigint }
  | { id: string; kind: 'blocks'; items: Hex[]; deadline: number; fromHeight?: bigint }
  | { id: string; kind: 'pendingTxs'; fullTx: boolean; items: Hex[]; deadline: number };

type NewFilter =
  | { kind: 'logs'; spec: LogFilterSpec; fromHeight?: bigint }
  | { kind: 'blocks'; fromHeight?: bigint }
  | { kind: 'pendingTxs'; fullTx: boolean };

export interface FilterManagerOptions {
  cap: number;
  timeoutMs: number;
  /** Items kept per filter between polls; the oldest are dropped beyond this. */
  maxItems: number;
}

/** Heads whose number onRewound can look up by hash. */
const HEAD_NUMBERS_KEPT = 4096;

export class FilterManager {
  private readonly filters = new Map<string, Filter>();
  /** Recent heads: hash -> number. */
  private readonly headNumbers = new Map<Hex, bigint>();
  private readonly sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly opts: FilterManagerOptions,
    private readonly now: () => number = Date.now,
  ) {
    if (opts.timeoutMs > 0) {
      this.sweeper = setInterval(() => this.sweep(), Math.max(10, opts.timeoutMs));
      this.sweeper.unref();
    }
  }

  get size(): number {
    return this.filters.size;
  }

  install(f: NewFilter): string {
    this.sweep();
    if (this.opts.cap > 0 && this.filters.size >= this.opts.cap) {
      throw new RpcError(
        RpcErrorCode.limitExceeded,
        `too many filters: filter_cap of ${this.opts.cap} reached (uninstall unused filters or wait for filter_timeout)`,
      );
    }
    const id = newRpcId();
    const deadline = this.deadline();
    if (f.kind === 'logs')
      this.filters.set(id, { id, kind: 'logs', spec: f.spec, items: [], deadline, fromHeight: f.fromHeight });
    else if (f.kind === 'blocks')
      this.filters.set(id, { id, kind: 'blocks', items: [], deadline, fromHeight: f.fromHeight });
    else this.filters.set(id, { id, kind: 'pendingTxs', fullTx: f.fullTx, items: [], deadline });
    return id;
  }

  uninstall(id: string): boolean {
    return this.filters.delete(id);
  }

  /** The live filter (its timeout restarts), or geth's "filter not found". */
  get(id: string): Filter {
    const f = this.filters.get(id);
    if (f === undefined || this.expired(f)) {
      this.filters.delete(id);
      throw serverError('filter not found');
    }
    f.deadline = this.deadline();
    return f;
  }

  /** Everything collected since the previous poll. */
  takeChanges(id: string): Filter {
    const f = this.get(id);
    const copy = { ...f, items: f.items } as Filter;
    f.items = [];
    return copy;
  }

  onHead(block: EthBlock, logs: EthLog[]): void {
    this.headNumbers.set(block.hash, block.number);
    if (this.headNumbers.size > HEAD_NUMBERS_KEPT)
      this.headNumbers.delete(this.headNumbers.keys().next().value!);
    for (const f of this.filters.values()) {
      if (f.kind !== 'pendingTxs' && f.fromHeight !== undefined && block.number <= f.fromHeight) continue;
      if (f.kind === 'blocks') this.push(f, block.hash);
      else if (f.kind === 'logs') {
        const { fromBlock, toBlock } = f.spec;
        if (fromBlock !== undefined && block.number < fromBlock) continue;
        if (toBlock !== undefined && block.number > toBlock) continue;
        for (const log of logs) if (logMatches(log, f.spec)) this.push(f, log);
      }
    }
  }

  /**
   * The dev chain reverted to `height` (evm_revert): items not yet polled that belong to a removed
   * block (its hash, its logs) are dropped; a block hash of unknown height is dropped too.
   */
  onRewound(height: number): void {
    const h = BigInt(height);
    for (const f of this.filters.values()) {
      if (f.kind !== 'pendingTxs' && f.fromHeight !== undefined && f.fromHeight > h) f.fromHeight = h;
      if (f.kind === 'logs') f.items = f.items.filter((l) => l.blockNumber <= h);
      else if (f.kind === 'blocks') f.items = f.items.filter((x) => (this.headNumbers.get(x) ?? h + 1n) <= h);
    }
    for (const [hash, n] of this.headNumbers) if (n > h) this.headNumbers.delete(hash);
  }

  onPendingTx(hash: Hex): void {
    for (const f of this.filters.values()) if (f.kind === 'pendingTxs') this.push(f, hash);
  }

  sweep(): void {
    for (const [id, f] of this.filters) if (this.expired(f)) this.filters.delete(id);
  }

  close(): void {
    if (this.sweeper !== undefined) clearInterval(this.sweeper);
    this.filters.clear();
  }

  private push<T>(f: { items: T[] }, item: T): void {
    f.items.push(item);
    if (f.items.length > this.opts.maxItems) f.items.splice(0, f.items.length - this.opts.maxItems);
  }

  private deadline(): number {
    return this.opts.timeoutMs > 0 ? this.now() + this.opts.timeoutMs : Number.POSITIVE_INFINITY;
  }

  private expired(f: Filter): boolean {
    return this.now() > f.deadline;
  }
}
