// The deposit watcher: polls the source chain's JSON-RPC for AssetsLocked events of the bridge
// contract in blocks at least `confirmations` deep, and keeps the deposits not yet minted on noded,
// by sequence number. A source chain that is down, slow or answering garbage is logged and retried
// at the next poll; the watcher never throws out of its loop and never invents a deposit.
import type { KVStore } from '@noded/storage';
import type { Logger } from '@noded/types';
import { silentLogger } from '@noded/types';
import { metaKey } from '../store/keys.js';
import {
  ASSETS_LOCKED_TOPIC,
  type Deposit,
  parseAssetsLockedLog,
  parseQuantity,
  SourceChainError,
  sameDeposit,
} from './deposits.js';

export interface DepositWatcherOptions {
  /** The source chain's JSON-RPC (app.toml [bridge] ethereum_rpc_url). */
  rpcUrl: string;
  /** The contract emitting AssetsLocked ([bridge] bridge_address), 0x + 40 hex. */
  bridgeAddress: string;
  /** Blocks a deposit's block must be buried under: it is read once head - confirmations >= its block. */
  confirmations: number;
  pollIntervalMs: number;
  /** The last sequence number the chain has processed (minted or skipped); deposits up to it are dropped. */
  lastProcessed: () => bigint;
  logger?: Logger;
  /** Per-request timeout (default min(poll interval, 10 s), at least 1 s). */
  requestTimeoutMs?: number;
  /** Blocks per eth_getLogs request (default 5,000). */
  logRange?: number;
  /** Deposits held at most; beyond it the scan waits for mints (default 10,000). */
  maxPending?: number;
  /**
   * The first source block read ([bridge] start_block: the bridge contract's deployment block;
   * default 0). A reorg below what was read restarts the scan here, never below.
   */
  startBlock?: bigint;
  /** Where the scan's resume point survives a restart (kvWatcherProgress); without it, startBlock. */
  progress?: WatcherProgressStore;
}

/**
 * The watcher's resume point: the highest source block whose deposits the chain has all processed
 * (everything at or below it is minted or skipped), so a restart reads from the block after it and
 * loses no deposit it had seen but the chain had not processed yet.
 */
export interface WatcherProgressStore {
  /** The saved block and its hash, or undefined when none was saved (for this bridge contract). */
  load(): Promise<SavedProgress | undefined>;
  save(progress: SavedProgress): Promise<void>;
}

/** A resume point: a source block number and its hash (0x + 64 hex), to notice a changed chain. */
export interface SavedProgress {
  block: bigint;
  hash: string;
}

const PROGRESS_KEY = metaKey('bridge.watcher.progress');
const HASH = /^0x[0-9a-f]{64}$/;

/**
 * The resume point kept in the node's application.db (a local key outside the state root, like the
 * recorded validator sets). It names the bridge contract it belongs to: a progress saved for
 * another `bridge_address` is ignored, so changing the contract reads the new one from start_block.
 */
export function kvWatcherProgress(kv: KVStore, bridgeAddress: string): WatcherProgressStore {
  const bridge = bridgeAddress.toLowerCase();
  return {
    async load() {
      const raw = await kv.get(PROGRESS_KEY);
      if (!raw) return undefined;
      const v = JSON.parse(new TextDecoder().decode(raw)) as {
        bridge?: unknown;
        block?: unknown;
        hash?: unknown;
      };
      if (
        v.bridge !== bridge ||
        typeof v.block !== 'string' ||
        !/^[0-9]+$/.test(v.block) ||
        typeof v.hash !== 'string' ||
        !HASH.test(v.hash)
      )
        return undefined;
      return { block: BigInt(v.block), hash: v.hash };
    },
    async save({ block, hash }) {
      const value = new TextEncoder().encode(JSON.stringify({ bridge, block: block.toString(), hash }));
      await kv.write([{ type: 'put', key: PROGRESS_KEY, value }]);
    },
  };
}

/** What the metrics show (docs/metrics.md, `<ns>_bridge_*`). */
export interface DepositWatcherStats {
  /** Highest sequence number seen on the source chain (0 before any). */
  lastObserved: bigint;
  /** Highest sequence number this node put in a vote extension (0 before any). */
  lastAttested: bigint;
  /** The chain's last processed sequence number. */
  lastMinted: bigint;
  /** Deposits seen and not yet processed by the chain. */
  pending: number;
  /** Failed polls since start (source chain down, timing out, or answering garbage). */
  errors: number;
  /** Highest source block scanned (start_block - 1 before the first scan). */
  scannedTo: bigint;
  /** The resume point last saved (-1 before any): a restart reads from the block after it. */
  resumeFrom: bigint;
  /** Latest source head seen (-1 before any). */
  sourceHead: bigint;
}

export class DepositWatcher {
  private readonly pending = new Map<bigint, Deposit>();
  private readonly startBlock: bigint;
  private scannedTo: bigint;
  /** Whether the saved resume point was read (once, before the first scan). */
  private resumed = false;
  private saved = -1n;
  private sourceHead = -1n;
  private lastObserved = 0n;
  private lastAttested = 0n;
  private errors = 0;
  private failing = false;
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> | null = null;
  private stopped = true;
  private rpcId = 0;
  private readonly logger: Logger;
  private readonly timeoutMs: number;
  private readonly range: bigint;
  private readonly maxPending: number;
  private readonly listeners: Array<(s: DepositWatcherStats) => void> = [];

  constructor(private readonly opts: DepositWatcherOptions) {
    this.logger = opts.logger ?? silentLogger;
    this.timeoutMs = opts.requestTimeoutMs ?? Math.max(1000, Math.min(opts.pollIntervalMs, 10_000));
    this.range = BigInt(opts.logRange ?? 5000);
    this.maxPending = opts.maxPending ?? 10_000;
    this.startBlock = opts.startBlock ?? 0n;
    if (this.startBlock < 0n) throw new RangeError(`startBlock ${this.startBlock} is negative`);
    this.scannedTo = this.startBlock - 1n;
  }

  /** Polls now and then every poll interval until stop(). */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    const loop = () => {
      if (this.stopped) return;
      this.inFlight = this.poll().finally(() => {
        this.inFlight = null;
        if (!this.stopped) this.timer = setTimeout(loop, this.opts.pollIntervalMs);
      });
    };
    loop();
  }

  /** Stops polling; resolves once a poll in flight has finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.inFlight;
  }

  /** Called after every poll with the stats (metrics). */
  onStats(fn: (s: DepositWatcherStats) => void): void {
    this.listeners.push(fn);
  }

  stats(): DepositWatcherStats {
    this.prune();
    return {
      lastObserved: this.lastObserved,
      lastAttested: this.lastAttested,
      lastMinted: this.opts.lastProcessed(),
      pending: this.pending.size,
      errors: this.errors,
      scannedTo: this.scannedTo,
      sourceHead: this.sourceHead,
      resumeFrom: this.saved,
    };
  }

  /**
   * The next deposits to attest: consecutive sequence numbers from the chain's last processed + 1
   * (or from `from` when later: the block being voted on mints up to it), at most `max`, stopping at
   * the first one not seen yet (a gap is never skipped).
   */
  next(max: number, from?: bigint): Deposit[] {
    this.prune();
    const out: Deposit[] = [];
    let seq = this.opts.lastProcessed() + 1n;
    if (from !== undefined && from > seq) seq = from;
    while (out.length < max) {
      const d = this.pending.get(seq);
      if (!d) break;
      out.push(d);
      seq++;
    }
    return out;
  }

  /** Records that a vote extension carried deposits up to `sequence`. */
  markAttested(sequence: bigint): void {
    if (sequence > this.lastAttested) this.lastAttested = sequence;
  }

  private prune(): void {
    const done = this.opts.lastProcessed();
    for (const seq of this.pending.keys()) if (seq <= done) this.pending.delete(seq);
  }

  /** One poll: reads the head, then the logs of the confirmed blocks not scanned yet. Never throws. */
  async poll(): Promise<void> {
    try {
      await this.scan();
      if (this.failing) this.logger.info({ url: this.opts.rpcUrl }, 'bridge: the source chain answers again');
      this.failing = false;
    } catch (err) {
      this.errors++;
      const why = (err as Error).message;
      // The first failure of a streak is a warning; repeats are debug, so a long outage does not flood.
      const fields = { url: this.opts.rpcUrl, err: why, errors: this.errors };
      const msg =
        'bridge: reading the source chain failed; retrying at the next poll (nothing is attested from it)';
      if (this.failing) this.logger.debug(fields, msg);
      else this.logger.warn(fields, msg);
      this.failing = true;
    }
    const s = this.stats();
    for (const fn of this.listeners) fn(s);
  }

  /**
   * Reads the saved resume point once, and uses it when the source chain still has that block
   * (same hash): a new chain or a reorg below it is read again from start_block. A store or source
   * chain that fails is retried at the next poll.
   */
  private async resume(): Promise<void> {
    if (this.resumed) return;
    const p = this.opts.progress;
    const saved = p ? await p.load() : undefined;
    if (saved === undefined || saved.block <= this.scannedTo) {
      this.resumed = true;
      return;
    }
    const hash = await this.blockHash(saved.block);
    this.resumed = true;
    if (hash !== saved.hash) {
      this.logger.warn(
        {
          block: String(saved.block),
          saved: saved.hash,
          now: hash ?? 'none',
          startBlock: String(this.startBlock),
        },
        'bridge: the source chain no longer has the block the scan stopped at (a new chain or a reorg); reading again from start_block',
      );
      return;
    }
    this.saved = saved.block;
    this.scannedTo = saved.block;
    this.logger.info(
      { from: String(saved.block + 1n), startBlock: String(this.startBlock) },
      'bridge: resuming the source-chain scan after the last block whose deposits are all processed',
    );
  }

  /** The hash of source block `n`, or undefined when the chain has no such block. */
  private async blockHash(n: bigint): Promise<string | undefined> {
    const b = await this.rpc('eth_getBlockByNumber', [`0x${n.toString(16)}`, false]);
    if (b === null) return undefined;
    const hash = (b as { hash?: unknown } | undefined)?.hash;
    if (typeof b !== 'object' || typeof hash !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(hash))
      throw new SourceChainError(
        `eth_getBlockByNumber(${n}) answered no block hash: ${JSON.stringify(b)?.slice(0, 80)}`,
      );
    return hash.toLowerCase();
  }

  /**
   * The block a restart may resume after: every deposit at or below it is processed by the chain.
   * A deposit seen but not processed yet keeps it below that deposit's block, so it is read again.
   */
  private checkpoint(): bigint {
    this.prune();
    let b = this.scannedTo;
    for (const d of this.pending.values()) if (d.sourceBlock - 1n < b) b = d.sourceBlock - 1n;
    return b;
  }

  private async saveProgress(): Promise<void> {
    const p = this.opts.progress;
    if (!p) return;
    const b = this.checkpoint();
    if (b === this.saved || b < this.startBlock - 1n || b < 0n) return;
    const hash = await this.blockHash(b);
    if (hash === undefined) return;
    await p.save({ block: b, hash });
    this.saved = b;
  }

  private async scan(): Promise<void> {
    await this.resume();
    const head = parseQuantity(await this.rpc('eth_blockNumber', []), 'eth_blockNumber');
    if (head < this.scannedTo) {
      // The source chain went back below what was read (a new chain, or a reorg deeper than the
      // confirmations): read it again from start_block; deposits already held are checked against it.
      this.logger.warn(
        { head: String(head), scannedTo: String(this.scannedTo), startBlock: String(this.startBlock) },
        'bridge: the source chain head is below the blocks already read; rescanning from start_block',
      );
      this.scannedTo = this.startBlock - 1n;
    }
    this.sourceHead = head;
    const safe = head - BigInt(this.opts.confirmations);
    while (this.scannedTo < safe) {
      const from = this.scannedTo + 1n;
      const to = from + this.range - 1n < safe ? from + this.range - 1n : safe;
      const logs = await this.rpc('eth_getLogs', [
        {
          address: this.opts.bridgeAddress,
          topics: [ASSETS_LOCKED_TOPIC],
          fromBlock: `0x${from.toString(16)}`,
          toBlock: `0x${to.toString(16)}`,
        },
      ]);
      if (!Array.isArray(logs))
        throw new SourceChainError(`eth_getLogs answered ${JSON.stringify(logs)?.slice(0, 80)}, not a list`);
      // All of the range parses before any of it is kept: a garbage answer changes nothing.
      const deposits = logs.map((l) => parseAssetsLockedLog(l, this.opts.bridgeAddress));
      for (const d of deposits) {
        if (d.sourceBlock < from || d.sourceBlock > to)
          throw new SourceChainError(
            `eth_getLogs returned a log of block ${d.sourceBlock}, outside ${from}..${to}`,
          );
      }
      const done = this.opts.lastProcessed();
      const fresh = deposits.filter((d) => d.sequence > done);
      if (this.pending.size + fresh.length > this.maxPending) {
        this.logger.warn(
          { pending: this.pending.size, limit: this.maxPending },
          'bridge: too many deposits waiting to be minted; the scan waits',
        );
        break;
      }
      for (const d of fresh) this.keep(d);
      for (const d of deposits) if (d.sequence > this.lastObserved) this.lastObserved = d.sequence;
      this.scannedTo = to;
    }
    await this.saveProgress();
  }

  private keep(d: Deposit): void {
    const held = this.pending.get(d.sequence);
    if (held && !sameDeposit(held, d))
      this.logger.warn(
        { sequence: String(d.sequence), was: show(held), now: show(d) },
        'bridge: the source chain now reports a different deposit under this sequence number; attesting the new one',
      );
    this.pending.set(d.sequence, d);
  }

  private async rpc(method: string, params: unknown[]): Promise<unknown> {
    const id = ++this.rpcId;
    let res: Response;
    try {
      res = await fetch(this.opts.rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new SourceChainError(
        `${method}: ${this.opts.rpcUrl} unreachable (${cause?.code ?? cause?.message ?? (err as Error).message})`,
      );
    }
    const text = await res.text().catch(() => '');
    if (!res.ok)
      throw new SourceChainError(
        `${method}: HTTP ${res.status} from ${this.opts.rpcUrl}: ${text.slice(0, 120)}`,
      );
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new SourceChainError(`${method}: the answer is not JSON: ${text.slice(0, 80)}`);
    }
    const b = body as { id?: unknown; result?: unknown; error?: { message?: unknown } };
    if (typeof body !== 'object' || body === null || b.id !== id)
      throw new SourceChainError(`${method}: not a JSON-RPC answer to request ${id}: ${text.slice(0, 80)}`);
    if (b.error) throw new SourceChainError(`${method}: error ${JSON.stringify(b.error).slice(0, 160)}`);
    if (!('result' in b)) throw new SourceChainError(`${method}: answer without a result`);
    return b.result;
  }
}

function show(d: Deposit): string {
  return `${d.recipient} ${d.token} ${d.amount} (source block ${d.sourceBlock})`;
}
