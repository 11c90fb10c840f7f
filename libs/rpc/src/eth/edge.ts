// The Ethereum JSON-RPC edge over a message channel: the servers (HTTP, WebSocket, JSON, dev-account
// signing, subscriptions) run on one side, the chain on the other. The node puts the edge on a
// worker thread so that parsing, encoding and socket writes use the second core and never wait
// behind a block being executed; the same protocol can carry it to another process.
//
// Host side (next to the chain): EthEdgeHost answers chain calls, forwards the bus events the
// server needs (EthNewHead, EthPendingTx) and a snapshot of the chain's synchronous getters, and
// sends the edge its commands (listen, close). Edge side: EthEdgeClient gives the server an EthChain,
// an EventBus, a Logger and a metrics hook that all travel over the channel.
//
// Ordering: one channel delivers in order, and the host sends pending events and a changed
// snapshot before any reply, so a client that saw a block in a reply never reads an older
// eth_blockNumber afterwards.
import { getHeapStatistics } from 'node:v8';
import type {
  AccessListEntry,
  AccountProof,
  CallOptions,
  CallRequest,
  CallResult,
  DevStateChange,
  EthBlock,
  EthChain,
  EthDevControl,
  EthLog,
  EthReceipt,
  EthTx,
  FeeHistory,
  HeadAccount,
  Hex,
  LogFilter,
  Logger,
  NodeEvent,
  PendingTxSummary,
  StateOverrides,
  SubscribeOptions,
  TracerConfig,
} from '@noded/types';
import { ChainError, EventBus } from '@noded/types';
import { RecentLogs, type RecentLogsLimits } from './recent-logs.js';

/** A worker thread, its parentPort, or a MessagePort. */
export interface EdgeChannel {
  postMessage(message: unknown): void;
  on(event: 'message', listener: (message: unknown) => void): unknown;
}

/** The chain's synchronous getters, refreshed whenever the latest height moves. */
export interface ChainSnapshot {
  latestHeight: bigint;
  oldestStateHeight: bigint;
  nextBaseFee: bigint;
  suggestedTip: bigint;
}

/** What the edge needs at start, passed along with the thread (workerData). */
export interface EdgeInit {
  chainId: bigint;
  snapshot: ChainSnapshot;
  /** Whether the chain has the dev-chain calls (EthChain.devSetState, devSendImpersonated). */
  dev: boolean;
  /**
   * Whether every block's head carries all of its logs (EthEdgeHostDeps.headLogs): the edge then
   * keeps recent blocks' logs and answers eth_getLogs over them itself.
   */
  headLogs?: boolean;
}

/** The commands the host sends the edge; the edge side implements them with its server. */
export interface EdgeServer {
  listenHttp(host: string, port: number): Promise<number>;
  listenWs(host: string, port: number): Promise<number>;
  close(): Promise<void>;
}

/** `heap` is answered by the edge itself: its thread's V8 heap (EthEdgeHost.heap). */
type CommandName = keyof EdgeServer | 'heap';

/** The edge thread's V8 heap, bytes: v8.getHeapStatistics()'s used_heap_size and total_heap_size. */
export interface EdgeHeap {
  used: number;
  total: number;
}
type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error';

interface WireError {
  name: string;
  message: string;
  code?: number | string;
  data?: Hex;
  stack?: string;
}

type HostToEdge =
  | { t: 'ret'; id: number; v: unknown }
  | { t: 'err'; id: number; e: WireError }
  | { t: 'snap'; s: ChainSnapshot }
  | { t: 'head'; block: EthBlock; logs: EthLog[]; accounts?: HeadAccount[] }
  | { t: 'pending'; hashes: Hex[] }
  | { t: 'rewound'; height: number }
  // `logs` of every receipt left empty: the edge takes them from the block's head (`hash`), whose
  // logs (`logCount` of them) it was sent just before; cloning them a second time cost about as much
  // as the rest of the receipts.
  | { t: 'receipts'; height: bigint; hash: Hex; logCount: number; receipts: EthReceipt[] }
  | { t: 'cmd'; id: number; c: CommandName; a: [string, number] | [] };

type EdgeToHost =
  | { t: 'call'; id: number; m: ChainCall; a: unknown[] }
  | { t: 'dev'; id: number; m: DevCall; a: unknown[] }
  | { t: 'done'; id: number; v: unknown }
  | { t: 'fail'; id: number; e: WireError }
  | { t: 'log'; b: Record<string, unknown>; l: LogLevel; o?: object; msg?: string }
  | { t: 'obs'; names: string[]; ms: Float64Array; tag: Uint16Array };

/** The asynchronous EthChain methods the edge may call; anything else is refused by the host. */
const CHAIN_CALLS = [
  'getBlockByNumber',
  'getBlockByHash',
  'getBlockTransactions',
  'getBlockReceipts',
  'getTransaction',
  'getReceipt',
  'getLogs',
  'getBalance',
  'getNonce',
  'getCode',
  'getStorageAt',
  'getProof',
  'call',
  'estimateGas',
  'createAccessList',
  'feeHistory',
  'sendRawTransaction',
  'txPool',
  'traceTransaction',
  'traceCall',
  'traceBlock',
  'devSetState',
  'devSendImpersonated',
  'devImpersonate',
  'devImpersonatedAccounts',
] as const;
type ChainCall = (typeof CHAIN_CALLS)[number];
/** The EthDevControl methods; answered by the host's `dev`, refused when it has none. */
const DEV_CALLS = [
  'mine',
  'setAutomine',
  'setIntervalMining',
  'increaseTime',
  'setNextBlockTimestamp',
  'snapshot',
  'revert',
  'reset',
] as const;
type DevCall = (typeof DEV_CALLS)[number];
const DEV_CALL_SET: ReadonlySet<string> = new Set(DEV_CALLS);
const CHAIN_CALL_SET: ReadonlySet<string> = new Set(CHAIN_CALLS);
/** How long after a receipt was asked for the host keeps sending new blocks' receipts ahead. */
const RECEIPTS_WANTED_MS = 30_000;
/** Blocks (the newest, empty ones counted) whose receipts the edge keeps; older ones are asked of the host. */
const RECENT_RECEIPT_BLOCKS = 32;

/** Heights of recent logs the edge asks the host for at once (see EthEdgeClient.fillLogs). */
const LOG_FILL_HEIGHTS = 64;

/** Chain calls the host starts per turn of its event loop (an eth_call is about 0.1 ms). */
const CALLS_PER_TURN = 16;

function toWire(err: unknown): WireError {
  if (!(err instanceof Error)) return { name: 'Error', message: String(err) };
  const e = err as Error & { code?: unknown; data?: unknown };
  // A ChainError subclass (PrunedStateError, …) travels as a ChainError: its code is the answer.
  const name = err instanceof ChainError ? 'ChainError' : e.name;
  const out: WireError = { name, message: e.message, stack: e.stack };
  if (typeof e.code === 'number' || typeof e.code === 'string') out.code = e.code;
  if (typeof e.data === 'string') out.data = e.data as Hex;
  return out;
}

function fromWire(w: WireError): Error {
  if (w.name === 'ChainError' && typeof w.code === 'number') return new ChainError(w.code, w.message, w.data);
  const err = new Error(w.message) as Error & { code?: number | string };
  err.name = w.name;
  if (w.code !== undefined) err.code = w.code;
  if (w.stack !== undefined) err.stack = w.stack;
  return err;
}

function snapshotOf(chain: EthChain): ChainSnapshot {
  return {
    latestHeight: chain.latestHeight(),
    oldestStateHeight: chain.oldestStateHeight(),
    nextBaseFee: chain.nextBaseFee(),
    suggestedTip: chain.suggestedTip(),
  };
}

/**
 * One side's sender. push() sends a message at once, preceded by what `prelude` says must come
 * first (the host's pending-transaction hashes and changed snapshot); later() holds a message
 * until the end of the event loop's turn (setImmediate) or the next push(), so that what one turn
 * produced leaves in one postMessage; schedule() asks for such a flush with nothing held.
 * Holding the host's replies back until the end of the turn was measured: it lowered eth_call from
 * 3500 to 2400-2750 requests/s (both threads waited on each other's batches) and did not change
 * the transfer figures. So replies go with soon(), held only while the microtasks queued before
 * them run: a burst of eth_sendRawTransaction started together answers in one postMessage (the
 * host's postMessage was 4% of its thread under the transfer loads; value transfers +2-4%, reads
 * unchanged, docs/benchmarks.md "The main thread's share of two cores"). The pending hashes
 * (hundreds per block) and the edge's eth_sendRawTransaction calls (many per turn in a burst) are
 * held. Holding every chain call halved eth_call throughput in one run of two (6,783 against
 * 14,141 req/s on the 4,096-holder row), so reads are pushed.
 */
class Outbox<M> {
  private scheduled = false;
  private microtaskQueued = false;
  private held: M[] = [];

  constructor(
    private readonly channel: EdgeChannel,
    private readonly onUncloneable: (m: M, err: Error) => M | undefined,
    private readonly prelude: () => M[] = () => [],
  ) {}

  push(m: M): void {
    this.flush(m);
  }

  later(m: M): void {
    this.held.push(m);
    this.schedule();
  }

  /**
   * Holds `m` only until the microtasks queued before it have run: the replies of calls that finish
   * together (a batch of eth_sendRawTransaction started in one go, each admitted without touching
   * the disk) leave in one postMessage, and none waits for the end of the turn.
   */
  soon(m: M): void {
    this.held.push(m);
    if (this.microtaskQueued) return;
    this.microtaskQueued = true;
    queueMicrotask(() => {
      this.microtaskQueued = false;
      if (this.held.length > 0) this.flush();
    });
  }

  schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(m?: M): void {
    this.scheduled = false;
    const batch = this.prelude();
    if (this.held.length > 0) {
      for (const x of this.held) batch.push(x);
      this.held = [];
    }
    if (m !== undefined) batch.push(m);
    if (batch.length === 0) return;
    try {
      this.channel.postMessage(batch);
    } catch (err) {
      // One message could not be cloned: send the others, and a replacement for that one.
      for (const x of batch) {
        try {
          this.channel.postMessage([x]);
        } catch {
          const alt = this.onUncloneable(x, err as Error);
          if (alt !== undefined) this.channel.postMessage([alt]);
        }
      }
    }
  }
}

export interface EthEdgeHostDeps {
  channel: EdgeChannel;
  chain: EthChain;
  bus: { subscribe(listener: (ev: NodeEvent) => void, opts?: SubscribeOptions): () => void };
  logger: Logger;
  /** The dev chain's mining and time controls (chain-local); absent elsewhere. */
  dev?: EthDevControl;
  /** The metrics hook of the server, called on the host for every request the edge served. */
  onRequest?: (method: string, ms: number, ok: boolean) => void;
  /**
   * The bus's EthNewHead events carry every log of their block (as the executor's do; a light
   * node's carry none), so the edge may answer eth_getLogs from the logs it was sent. Default false.
   */
  headLogs?: boolean;
}

/**
 * Requests sent across a channel and waiting for their reply, by id (one table per side; the
 * node's indexer thread keeps one too).
 */
export class Awaiting {
  private readonly open = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private next = 1;

  /** Registers a request and hands its id to `send`; resolves or rejects with its reply. */
  request(send: (id: number) => void): Promise<unknown> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.open.set(id, { resolve, reject });
      send(id);
    });
  }

  resolve(id: number, v: unknown): void {
    const c = this.open.get(id);
    this.open.delete(id);
    c?.resolve(v);
  }

  reject(id: number, err: Error): void {
    const c = this.open.get(id);
    this.open.delete(id);
    c?.reject(err);
  }

  rejectAll(err: Error): void {
    for (const c of this.open.values()) c.reject(err);
    this.open.clear();
  }
}

/** The host side: serves the edge's chain calls and sends it events and commands. */
export class EthEdgeHost {
  private readonly pending: Hex[] = [];
  private readonly out: Outbox<HostToEdge>;
  private sentHeight: bigint;
  private readonly commands = new Awaiting();
  private readonly unsubscribe: () => void;
  private closed = false;
  /** Chain calls received and not yet started; see drain(). */
  private readonly queue: Array<{ id: number; m: ChainCall; a: unknown[] }> = [];
  /** Calls this turn of the event loop may still start; see drain(). */
  private budget = CALLS_PER_TURN;
  private turnScheduled = false;
  /** Method names of the edge's metrics observations, by id (see EthEdgeClient.onRequest). */
  private readonly obsNames: string[] = [];
  /** Until when (ms) each new block's receipts are sent ahead: someone asked for a receipt lately. */
  private receiptsWantedUntil = 0;
  /** Counts rewinds, so that receipts read before one are not sent after it. */
  private generation = 0;

  constructor(private readonly deps: EthEdgeHostDeps) {
    this.sentHeight = deps.chain.latestHeight();
    this.out = new Outbox<HostToEdge>(
      deps.channel,
      (m, err) => {
        deps.logger.error({ kind: m.t, err: err.message }, 'JSON-RPC edge: message not transferable');
        return m.t === 'ret' ? { t: 'err', id: m.id, e: toWire(err) } : undefined;
      },
      () => this.prelude(),
    );
    deps.channel.on('message', (batch) => {
      for (const m of batch as EdgeToHost[]) this.onMessage(m);
      // Start calls now, within this turn's budget, rather than behind the callbacks already
      // queued for the turn: the main thread's setImmediate work (block execution, transactions
      // run ahead) goes in slices of up to 10 ms.
      if (this.queue.length > 0) this.drain();
    });
    this.unsubscribe = deps.bus.subscribe((ev) => this.onEvent(ev), { headAccounts: true });
  }

  /** What the edge starts from; pass it to the thread. */
  init(): EdgeInit {
    this.sentHeight = this.deps.chain.latestHeight();
    return {
      chainId: this.deps.chain.chainId(),
      snapshot: snapshotOf(this.deps.chain),
      dev:
        this.deps.chain.devSetState !== undefined &&
        this.deps.chain.devSendImpersonated !== undefined &&
        this.deps.chain.devImpersonate !== undefined &&
        this.deps.chain.devImpersonatedAccounts !== undefined,
      headLogs: this.deps.headLogs === true,
    };
  }

  listenHttp(host: string, port: number): Promise<number> {
    return this.command('listenHttp', [host, port]) as Promise<number>;
  }

  listenWs(host: string, port: number): Promise<number> {
    return this.command('listenWs', [host, port]) as Promise<number>;
  }

  /** The edge thread's V8 heap, as that thread reads it (for the node's metrics). */
  heap(): Promise<EdgeHeap> {
    return this.command('heap', []) as Promise<EdgeHeap>;
  }

  /** Closes the edge's servers and stops forwarding; the channel itself is the caller's. */
  async close(): Promise<void> {
    if (this.closed) return;
    try {
      await this.command('close', []);
    } finally {
      this.closed = true;
      this.unsubscribe();
    }
  }

  /** Fails every command still waiting (the edge died). */
  abort(err: Error): void {
    this.closed = true;
    this.unsubscribe();
    this.commands.rejectAll(err);
  }

  private command(c: CommandName, a: [string, number] | []): Promise<unknown> {
    if (this.closed) return Promise.reject(new Error('JSON-RPC edge is closed'));
    return this.commands.request((id) => this.out.push({ t: 'cmd', id, c, a }));
  }

  /**
   * Sent ahead of every batch: pending-transaction hashes and, when the height moved, a fresh
   * snapshot, so that no reply computed at a new height arrives before the height itself.
   */
  private prelude(): HostToEdge[] {
    const pre: HostToEdge[] = [];
    if (this.pending.length > 0) pre.push({ t: 'pending', hashes: this.pending.splice(0) });
    const h = this.deps.chain.latestHeight();
    if (h !== this.sentHeight) {
      this.sentHeight = h;
      pre.push({ t: 'snap', s: snapshotOf(this.deps.chain) });
    }
    return pre;
  }

  private onEvent(ev: NodeEvent): void {
    if (this.closed) return;
    if (ev.kind === 'EthNewHead') {
      // Heads published together (block sync's batch at a sync point) travel as one message.
      this.out.later({ t: 'head', block: ev.block, logs: ev.logs, accounts: ev.accounts });
      if (ev.block.transactions.length > 0 && Date.now() < this.receiptsWantedUntil)
        void this.sendReceipts(ev.block.number);
    } else if (ev.kind === 'EthPendingTx') {
      this.pending.push(ev.hash);
      this.out.schedule();
    } else if (ev.kind === 'ChainRewound') {
      // The next batch carries a fresh snapshot even if the height is the same number again.
      this.sentHeight = -1n;
      this.generation++;
      this.out.push({ t: 'rewound', height: ev.height });
    }
  }

  /**
   * A new block's receipts, sent ahead to the edge while clients poll for receipts (as every
   * wallet, ethers' wait() and cast do after sending): the edge answers eth_getTransactionReceipt
   * for recent blocks itself, and a poll no longer waits for this thread between two blocks' work.
   */
  private async sendReceipts(height: bigint): Promise<void> {
    const generation = this.generation;
    try {
      const receipts = await this.deps.chain.getBlockReceipts(height);
      if (generation !== this.generation || this.closed || receipts.length === 0) return;
      let logCount = 0;
      const bare = receipts.map((r) => {
        logCount += r.logs.length;
        return { ...r, logs: [] };
      });
      this.out.push({ t: 'receipts', height, hash: receipts[0]!.blockHash, logCount, receipts: bare });
    } catch (err) {
      this.deps.logger.debug(
        { height: String(height), err: (err as Error).message },
        'receipts not sent ahead',
      );
    }
  }

  private onMessage(m: EdgeToHost): void {
    switch (m.t) {
      case 'call':
        if (m.m === 'getReceipt') this.receiptsWantedUntil = Date.now() + RECEIPTS_WANTED_MS;
        this.queue.push(m);
        return;
      case 'dev':
        void this.serveDev(m.id, m.m, m.a);
        return;
      case 'done':
        this.commands.resolve(m.id, m.v);
        return;
      case 'fail':
        this.commands.reject(m.id, fromWire(m.e));
        return;
      case 'log': {
        const target = Object.keys(m.b).length > 0 ? this.deps.logger.child(m.b) : this.deps.logger;
        if (m.o !== undefined) target[m.l](m.o, m.msg);
        else target[m.l](m.msg ?? '');
        return;
      }
      case 'obs': {
        // Method ids are assigned by the edge in order; new names arrive with the first batch
        // that uses them, so every tag below refers to a name already known.
        for (const name of m.names) this.obsNames.push(name);
        const hook = this.deps.onRequest;
        if (hook === undefined) return;
        for (let i = 0; i < m.tag.length; i++) {
          const name = this.obsNames[m.tag[i] >> 1];
          if (name !== undefined) hook(name, m.ms[i], (m.tag[i] & 1) === 1);
        }
        return;
      }
    }
  }

  /**
   * Starts queued chain calls, at most CALLS_PER_TURN per turn of the event loop: from the
   * message callback as they arrive, the rest from the next turn (setImmediate). A message
   * port hands over up to a thousand queued messages in one go; serving each as it arrived kept
   * the loop in that one callback for as long as 150 ms under an eth_call load, and the
   * consensus timers (block production) and everything else waited.
   */
  private drain(): void {
    const n = Math.min(this.queue.length, this.budget);
    for (let i = 0; i < n; i++) {
      const c = this.queue.shift()!;
      void this.serve(c.id, c.m, c.a);
    }
    this.budget -= n;
    if (this.turnScheduled) return;
    this.turnScheduled = true;
    setImmediate(() => {
      this.turnScheduled = false;
      this.budget = CALLS_PER_TURN;
      if (this.queue.length > 0) this.drain();
    });
  }

  private async serve(id: number, method: string, args: unknown[]): Promise<void> {
    let reply: HostToEdge;
    try {
      if (!CHAIN_CALL_SET.has(method)) throw new Error(`JSON-RPC edge: unknown chain call ${method}`);
      const fn = (this.deps.chain as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[
        method
      ];
      reply = { t: 'ret', id, v: await fn.apply(this.deps.chain, args) };
    } catch (err) {
      reply = { t: 'err', id, e: toWire(err) };
    }
    if (!this.closed) this.out.soon(reply);
  }

  private async serveDev(id: number, method: string, args: unknown[]): Promise<void> {
    let reply: HostToEdge;
    try {
      const dev = this.deps.dev;
      if (!DEV_CALL_SET.has(method)) throw new Error(`JSON-RPC edge: unknown dev call ${method}`);
      if (dev === undefined) {
        const err = new Error('this node has no dev controls') as Error & { code: string };
        err.code = 'DEV_CONTROLS_REFUSED';
        throw err;
      }
      const fn = (dev as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[method]!;
      reply = { t: 'ret', id, v: await fn.apply(dev, args) };
    } catch (err) {
      reply = { t: 'err', id, e: toWire(err) };
    }
    if (!this.closed) this.out.soon(reply);
  }
}

/** A Logger whose records are written by the host's logger (one log file, one writer). */
function channelLogger(post: (m: EdgeToHost) => void, bindings: Record<string, unknown>): Logger {
  const at =
    (l: LogLevel) =>
    (a: object | string, msg?: string): void =>
      post(
        typeof a === 'string'
          ? { t: 'log', b: bindings, l, msg: a }
          : { t: 'log', b: bindings, l, o: a, msg },
      );
  return {
    trace: at('trace'),
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (more) => channelLogger(post, { ...bindings, ...more }),
  };
}

function safeText(v: unknown): string {
  try {
    return JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? x.toString() : x));
  } catch {
    return String(v);
  }
}

/**
 * Metrics observations are sent in batches: at most this many, or every FLUSH_MS. A batch is kept
 * in typed arrays (duration, and method id with the outcome in the low bit), not as an array of
 * method strings and boxed numbers: that array held each request's values until its batch left,
 * long enough for V8 to promote them, and it was nearly all of the JSON-RPC thread's old-generation
 * growth under a read load (a mark-compact every 1-2 s).
 */
const OBS_BATCH = 512;
const OBS_FLUSH_MS = 100;
/** Distinct method names the edge reports; the server passes known names or "unknown". */
const OBS_MAX_NAMES = 0x7fff;

export interface EthEdgeClientOptions {
  /**
   * Recovers a raw transaction's sender before it is sent to the chain (see
   * EthChain.sendRawTransaction); undefined leaves recovery to the chain.
   */
  recoverSender?: (raw: Uint8Array) => Uint8Array | undefined;
  /** What the edge keeps of recent blocks' logs (when the host sends them with each head). */
  recentLogs?: RecentLogsLimits;
}

/**
 * Gives each receipt sent ahead (logs left out) its logs from the block's head: those with its
 * transaction index, in order. False, and the receipts are not kept (the host answers for them),
 * when the head is not the receipts' block or its logs are not the `logCount` the host counted.
 */
function withHeadLogs(
  receipts: EthReceipt[],
  head: { hash: Hex; logs: EthLog[] } | undefined,
  hash: Hex,
  logCount: number,
): boolean {
  if (head === undefined || head.hash !== hash || head.logs.length !== logCount) return false;
  let j = 0;
  for (const r of receipts) {
    const logs: EthLog[] = [];
    while (j < head.logs.length && head.logs[j]!.transactionIndex === r.transactionIndex)
      logs.push(head.logs[j++]!);
    r.logs = logs;
  }
  return j === head.logs.length;
}

/**
 * The receipts of the newest blocks on the edge side, by transaction hash. A receipt is answered
 * only once its block is at or below the height the edge knows as latest (never ahead of
 * eth_blockNumber); anything else is asked of the host.
 */
class RecentReceipts {
  private readonly byHash = new Map<string, { height: bigint; receipt: EthReceipt }>();
  private readonly heights: Array<{ height: bigint; hashes: string[] }> = [];

  constructor(private readonly keepBlocks: number) {}

  add(height: bigint, receipts: EthReceipt[]): void {
    const hashes: string[] = [];
    for (const r of receipts) {
      const k = r.transactionHash.toLowerCase();
      this.byHash.set(k, { height, receipt: r });
      hashes.push(k);
    }
    this.heights.push({ height, hashes });
    while (this.heights.length > this.keepBlocks) this.forget(this.heights.shift()!);
  }

  get(hash: Hex, latest: bigint): EthReceipt | undefined {
    const e = this.byHash.get(hash.toLowerCase());
    return e !== undefined && e.height <= latest ? e.receipt : undefined;
  }

  /** Receipts of blocks below `height` are let go. */
  dropBelow(height: bigint): void {
    while (this.heights.length > 0 && this.heights[0]!.height < height) this.forget(this.heights.shift()!);
  }

  /** A rewind: receipts of the removed heights are gone. */
  dropAbove(height: bigint): void {
    for (let i = this.heights.length - 1; i >= 0; i--) {
      if (this.heights[i]!.height > height) this.forget(this.heights.splice(i, 1)[0]!);
    }
  }

  private forget(h: { height: bigint; hashes: string[] }): void {
    for (const k of h.hashes) if (this.byHash.get(k)?.height === h.height) this.byHash.delete(k);
  }
}

/** Accounts whose balance and nonce the edge keeps at the latest height (oldest let go first). */
const HEAD_ACCOUNTS = 65_536;

/**
 * Balances and nonces at one height, the latest the edge knows, so that eth_getBalance and
 * eth_getTransactionCount at the latest height are answered on this thread, without waiting for the
 * host's (the block executor's) turn. It holds a subset of the accounts, each right at `height`:
 * values the host answered at that height, and every account each new head changed (the head
 * carries them all: EthNewHead.accounts). A head that follows another one directly moves it to the
 * new height with that head's changes; any other head (a gap, or one without its accounts), a
 * rewind, or a latest height it is not at leaves it empty or unused, and the host answers.
 */
class HeadAccounts {
  private readonly byAddress = new Map<string, { balance?: bigint; nonce?: bigint }>();
  /** The height every entry is right at; -1 when none. */
  height = -1n;

  constructor(private readonly keep: number) {}

  /** A new head: its changes applied when it follows `height`, else everything let go. */
  head(number: bigint, accounts: HeadAccount[] | undefined): void {
    if (accounts === undefined || number !== this.height + 1n) {
      this.byAddress.clear();
      this.height = accounts === undefined ? -1n : number;
      if (accounts === undefined) return;
    }
    this.height = number;
    for (const a of accounts) {
      const k = a.address.toLowerCase();
      this.byAddress.delete(k);
      this.byAddress.set(k, { balance: a.balance, nonce: a.nonce });
    }
    this.trim();
  }

  clear(): void {
    this.byAddress.clear();
    this.height = -1n;
  }

  get(address: Hex, field: 'balance' | 'nonce', height: bigint): bigint | undefined {
    if (height !== this.height) return undefined;
    return this.byAddress.get(address.toLowerCase())?.[field];
  }

  /** A value the host answered at `height`: kept only if that is still the height held. */
  put(address: Hex, field: 'balance' | 'nonce', height: bigint, value: bigint): void {
    if (height !== this.height) return;
    const k = address.toLowerCase();
    const e = this.byAddress.get(k);
    if (e !== undefined) e[field] = value;
    else {
      this.byAddress.set(k, { [field]: value });
      this.trim();
    }
  }

  private trim(): void {
    for (const k of this.byAddress.keys()) {
      if (this.byAddress.size <= this.keep) return;
      this.byAddress.delete(k);
    }
  }
}

/** The edge side: the chain, bus, logger and metrics hook an EthRpcServer is built with. */
export class EthEdgeClient {
  readonly chain: EthChain;
  /** The host's dev controls, over the channel (the host refuses when it has none). */
  readonly dev: EthDevControl;
  readonly bus = new EventBus();
  readonly logger: Logger;
  private readonly calls = new Awaiting();
  private snapshot: ChainSnapshot;
  private readonly obsMs = new Float64Array(OBS_BATCH);
  private readonly obsTag = new Uint16Array(OBS_BATCH);
  private obsLen = 0;
  private readonly obsIds = new Map<string, number>();
  /** Names given an id since the last batch; sent with the next one. */
  private obsNewNames: string[] = [];
  private obsTimer: NodeJS.Timeout | undefined;
  private server: EdgeServer | undefined;
  private readonly out: Outbox<EdgeToHost>;
  /** The logs of the newest heads, by height: the receipts sent ahead take theirs from here. */
  private readonly headLogs = new Map<bigint, { hash: Hex; logs: EthLog[] }>();
  /** Receipts of the newest blocks, sent ahead by the host: transaction hash -> receipt. */
  private readonly recent = new RecentReceipts(RECENT_RECEIPT_BLOCKS);
  /** Balances and nonces at the latest height; see HeadAccounts. */
  private readonly accounts = new HeadAccounts(HEAD_ACCOUNTS);
  /** Logs of the newest blocks, when the host's heads carry them all; see getLogs(). */
  private readonly recentLogs: RecentLogs | undefined;
  /** Counts rewinds, so that logs asked for before one are not kept after it. */
  private logsGeneration = 0;
  private logsFilling = false;

  constructor(channel: EdgeChannel, init: EdgeInit, opts: EthEdgeClientOptions = {}) {
    this.snapshot = init.snapshot;
    this.recentLogs = init.headLogs === true ? new RecentLogs(opts.recentLogs) : undefined;
    this.out = new Outbox<EdgeToHost>(channel, (m, err) => {
      if (m.t === 'log') return { ...m, o: { record: safeText(m.o) } };
      if (m.t === 'call') this.calls.reject(m.id, err);
      return undefined;
    });
    this.logger = channelLogger((m) => this.out.push(m), {});
    this.chain = remoteChain(
      init.chainId,
      init.dev,
      () => this.snapshot,
      (m, a) => this.call(m, a),
      opts.recoverSender,
      (hash) => this.recent.get(hash, this.snapshot.latestHeight),
      (filter) => this.getLogs(filter),
      (field, address, height) => this.accountField(field, address, height),
    );
    const d = <T>(m: DevCall, ...a: unknown[]) =>
      this.calls.request((id) => this.out.push({ t: 'dev', id, m, a })) as Promise<T>;
    this.dev = {
      mine: (count, intervalSec, timestampSec) => d<void>('mine', count, intervalSec, timestampSec),
      setAutomine: (on) => d<void>('setAutomine', on),
      setIntervalMining: (ms) => d<void>('setIntervalMining', ms),
      increaseTime: (seconds) => d<bigint>('increaseTime', seconds),
      setNextBlockTimestamp: (seconds) => d<void>('setNextBlockTimestamp', seconds),
      snapshot: () => d<bigint>('snapshot'),
      revert: (id) => d<boolean>('revert', id),
      reset: () => d<void>('reset'),
    };
    channel.on('message', (batch) => {
      for (const m of batch as HostToEdge[]) this.onMessage(m);
    });
  }

  /** The server the host's commands go to. */
  serve(server: EdgeServer): void {
    this.server = server;
  }

  /** The server's metrics hook. */
  readonly onRequest = (method: string, ms: number, ok: boolean): void => {
    let id = this.obsIds.get(method);
    if (id === undefined) {
      if (this.obsIds.size >= OBS_MAX_NAMES) return;
      id = this.obsIds.size;
      this.obsIds.set(method, id);
      this.obsNewNames.push(method);
    }
    this.obsMs[this.obsLen] = ms;
    this.obsTag[this.obsLen] = (id << 1) | (ok ? 1 : 0);
    this.obsLen++;
    if (this.obsLen >= OBS_BATCH) this.flushObs();
    else this.obsTimer ??= setTimeout(() => this.flushObs(), OBS_FLUSH_MS);
  };

  private flushObs(): void {
    if (this.obsTimer !== undefined) clearTimeout(this.obsTimer);
    this.obsTimer = undefined;
    if (this.obsLen === 0) return;
    const names = this.obsNewNames;
    this.obsNewNames = [];
    const ms = this.obsMs.slice(0, this.obsLen);
    const tag = this.obsTag.slice(0, this.obsLen);
    this.obsLen = 0;
    this.out.push({ t: 'obs', names, ms, tag });
  }

  private call(m: ChainCall, a: unknown[]): Promise<unknown> {
    return this.calls.request((id) =>
      m === 'sendRawTransaction'
        ? this.out.later({ t: 'call', id, m, a })
        : this.out.push({ t: 'call', id, m, a }),
    );
  }

  /**
   * A balance or nonce: from the accounts kept at the latest height when the edge is at that height
   * and holds the account, else from the host (and kept, if the edge is still at that height).
   */
  private accountField(field: 'balance' | 'nonce', address: Hex, height: bigint): Promise<bigint> {
    const latest = this.snapshot.latestHeight;
    if (height === latest) {
      const v = this.accounts.get(address, field, height);
      if (v !== undefined) return Promise.resolve(v);
    }
    const asked = this.call(field === 'balance' ? 'getBalance' : 'getNonce', [
      address,
      height,
    ]) as Promise<bigint>;
    if (height !== latest) return asked;
    return asked.then((v) => {
      this.accounts.put(address, field, height, v);
      return v;
    });
  }

  /**
   * eth_getLogs: answered from the recent blocks' logs when every height of the range (up to the
   * latest height this edge shows) is held; otherwise asked of the host, and the newest heights of
   * the range that are missing are filled in the background, so that the next such query is
   * answered here.
   */
  private getLogs(filter: LogFilter): Promise<EthLog[]> {
    const cache = this.recentLogs;
    const asked = () => this.call('getLogs', [filter]) as Promise<EthLog[]>;
    if (cache === undefined) return asked();
    const latest = this.snapshot.latestHeight;
    const from = filter.fromBlock < 0n ? 0n : filter.fromBlock;
    let to = filter.toBlock;
    if (to > latest) to = latest;
    if (from > to) return asked();
    const hit = cache.query(filter, from, to);
    if (hit !== undefined) return Promise.resolve(hit);
    const reply = asked();
    this.fillLogs(cache, from, to);
    return reply;
  }

  /** Asks the host for every log of up to LOG_FILL_HEIGHTS missing heights of [from, to], one fill at a time. */
  private fillLogs(cache: RecentLogs, from: bigint, to: bigint): void {
    if (this.logsFilling) return;
    const missing = cache.missing(from, to, LOG_FILL_HEIGHTS).filter((h) => cache.canHold(h));
    if (missing.length === 0) return;
    const last = missing[missing.length - 1]!;
    const first =
      missing[0]! > last - BigInt(LOG_FILL_HEIGHTS) + 1n ? missing[0]! : last - BigInt(LOG_FILL_HEIGHTS) + 1n;
    const generation = this.logsGeneration;
    const limit = cache.limits.logs;
    this.logsFilling = true;
    const ask = { fromBlock: first, toBlock: last, addresses: [], topics: [], limit };
    (this.call('getLogs', [ask]) as Promise<EthLog[]>)
      .then((logs) => {
        if (generation !== this.logsGeneration) return;
        // At the limit the last block may be cut: keep the heights before it only.
        const upTo = logs.length >= limit ? logs[logs.length - 1]!.blockNumber - 1n : last;
        if (upTo >= first) cache.fill(first, upTo, logs);
      })
      .catch((err: Error) => this.logger.debug({ err: err.message }, 'recent logs not filled'))
      .finally(() => {
        this.logsFilling = false;
      });
  }

  private onMessage(m: HostToEdge): void {
    switch (m.t) {
      case 'ret':
        this.calls.resolve(m.id, m.v);
        return;
      case 'err':
        this.calls.reject(m.id, fromWire(m.e));
        return;
      case 'snap':
        this.snapshot = m.s;
        return;
      case 'head':
        // Every block (empty ones too) ages the receipts kept, so they are let go after a load.
        this.recent.dropBelow(m.block.number - BigInt(RECENT_RECEIPT_BLOCKS) + 1n);
        this.recentLogs?.add(m.block.number, m.logs);
        this.headLogs.set(m.block.number, { hash: m.block.hash, logs: m.logs });
        this.accounts.head(m.block.number, m.accounts);
        for (const h of this.headLogs.keys())
          if (h <= m.block.number - BigInt(RECENT_RECEIPT_BLOCKS)) this.headLogs.delete(h);
        this.bus.publish({ kind: 'EthNewHead', block: m.block, logs: m.logs });
        return;
      case 'pending':
        for (const hash of m.hashes) this.bus.publish({ kind: 'EthPendingTx', hash });
        return;
      case 'rewound':
        this.recent.dropAbove(BigInt(m.height));
        this.recentLogs?.dropAbove(BigInt(m.height));
        this.accounts.clear();
        for (const h of this.headLogs.keys()) if (h > BigInt(m.height)) this.headLogs.delete(h);
        this.logsGeneration++;
        this.bus.publish({ kind: 'ChainRewound', height: m.height });
        return;
      case 'receipts':
        if (withHeadLogs(m.receipts, this.headLogs.get(m.height), m.hash, m.logCount))
          this.recent.add(m.height, m.receipts);
        return;
      case 'cmd':
        void this.runCommand(m.id, m.c, m.a);
        return;
    }
  }

  private async runCommand(id: number, c: CommandName, a: [string, number] | []): Promise<void> {
    try {
      if (c === 'heap') {
        const h = getHeapStatistics();
        this.out.push({
          t: 'done',
          id,
          v: { used: h.used_heap_size, total: h.total_heap_size } satisfies EdgeHeap,
        });
        return;
      }
      if (this.server === undefined) throw new Error('JSON-RPC edge: no server to command');
      const v = c === 'close' ? await this.server.close() : await this.server[c](...(a as [string, number]));
      // Metrics still held go out ahead of the answer, after which the host ends the thread.
      if (c === 'close') this.flushObs();
      this.out.push({ t: 'done', id, v });
    } catch (err) {
      this.out.push({ t: 'fail', id, e: toWire(err) });
    }
  }
}

function remoteChain(
  chainId: bigint,
  dev: boolean,
  snap: () => ChainSnapshot,
  call: (m: ChainCall, a: unknown[]) => Promise<unknown>,
  recoverSender: ((raw: Uint8Array) => Uint8Array | undefined) | undefined,
  recentReceipt: (hash: Hex) => EthReceipt | undefined,
  getLogs: (filter: LogFilter) => Promise<EthLog[]>,
  accountField: (field: 'balance' | 'nonce', address: Hex, height: bigint) => Promise<bigint>,
): EthChain {
  const c = <T>(m: ChainCall, ...a: unknown[]) => call(m, a) as Promise<T>;
  const devCalls: Pick<
    EthChain,
    'devSetState' | 'devSendImpersonated' | 'devImpersonate' | 'devImpersonatedAccounts'
  > = dev
    ? {
        devSetState: (change: DevStateChange) => c<bigint>('devSetState', change),
        devSendImpersonated: (sender: Hex, raw: Uint8Array) => c<Hex>('devSendImpersonated', sender, raw),
        devImpersonate: (address: Hex, on: boolean) => c<boolean>('devImpersonate', address, on),
        devImpersonatedAccounts: () => c<Hex[]>('devImpersonatedAccounts'),
      }
    : {};
  return {
    ...devCalls,
    chainId: () => chainId,
    latestHeight: () => snap().latestHeight,
    oldestStateHeight: () => snap().oldestStateHeight,
    nextBaseFee: () => snap().nextBaseFee,
    suggestedTip: () => snap().suggestedTip,
    getBlockByNumber: (n: bigint) => c<EthBlock | undefined>('getBlockByNumber', n),
    getBlockByHash: (hash: Hex) => c<EthBlock | undefined>('getBlockByHash', hash),
    getBlockTransactions: (n: bigint) => c<EthTx[]>('getBlockTransactions', n),
    getBlockReceipts: (n: bigint) => c<EthReceipt[]>('getBlockReceipts', n),
    getTransaction: (hash: Hex) => c<EthTx | undefined>('getTransaction', hash),
    getReceipt: (hash: Hex) => {
      const r = recentReceipt(hash);
      return r !== undefined ? Promise.resolve(r) : c<EthReceipt | undefined>('getReceipt', hash);
    },
    getLogs,
    getBalance: (address: Hex, height: bigint) => accountField('balance', address, height),
    getNonce: (address: Hex, height: bigint | 'pending') =>
      height === 'pending' ? c<bigint>('getNonce', address, height) : accountField('nonce', address, height),
    getCode: (address: Hex, height: bigint) => c<Hex>('getCode', address, height),
    getStorageAt: (address: Hex, slot: Hex, height: bigint) => c<Hex>('getStorageAt', address, slot, height),
    getProof: (address: Hex, slots: Hex[], height: bigint) =>
      c<AccountProof>('getProof', address, slots, height),
    call: (req: CallRequest, height: bigint, overrides: StateOverrides | undefined, opts: CallOptions) =>
      c<CallResult>('call', req, height, overrides, opts),
    estimateGas: (
      req: CallRequest,
      height: bigint,
      overrides: StateOverrides | undefined,
      opts: CallOptions,
    ) => c<bigint>('estimateGas', req, height, overrides, opts),
    createAccessList: (req: CallRequest, height: bigint, opts: CallOptions) =>
      c<{ accessList: AccessListEntry[]; gasUsed: bigint; error?: string }>(
        'createAccessList',
        req,
        height,
        opts,
      ),
    feeHistory: (blockCount: number, newest: bigint, percentiles: number[] | undefined) =>
      c<FeeHistory>('feeHistory', blockCount, newest, percentiles),
    sendRawTransaction: (raw: Uint8Array, senderPublicKey?: Uint8Array) =>
      c<Hex>('sendRawTransaction', raw, senderPublicKey ?? recoverSender?.(raw)),
    txPool: () => c<PendingTxSummary>('txPool'),
    traceTransaction: (hash: Hex, config: TracerConfig) => c<unknown>('traceTransaction', hash, config),
    traceCall: (req: CallRequest, height: bigint, config: TracerConfig) =>
      c<unknown>('traceCall', req, height, config),
    traceBlock: (n: bigint, config: TracerConfig) =>
      c<Array<{ txHash: Hex; result: unknown }>>('traceBlock', n, config),
  };
}
