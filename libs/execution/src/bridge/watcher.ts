// The deposit watcher: polls the source chain's JSON-RPC for AssetsLocked events of the bridge
// contract in blocks at least `confirmations` deep, and keeps the deposits not yet minted on noded,
// by sequence number. A source chain that is down, slow or answering garbage is logged and retried
// at the next poll; the watcher never throws out of its loop and never invents a deposit.
import type { Logger } from '../../../types/index.js';
import { silentLogger } from '../../../types/index.js';
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
  /** Highest source block scanned (-1 before the first scan). */
  scannedTo: bigint;
  /** Latest source head seen (-1 before any). */
  sourceHead: bigint;
}

export class DepositWatcher {
  private readonly pending = new Map<bigint, Deposit>();
  private scannedTo = -1n;
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

  private async scan(): Promise<void> {
    const head = parseQuantity(await this.rpc('eth_blockNumber', []), 'eth_blockNumber');
    if (head < this.scannedTo) {
      // The source chain went back below what was read (a new chain, or a reorg deeper than the
      // confirmations): read it again from the start; deposits already held are checked against it.
      this.logger.warn(
        { head: String(head), scannedTo: String(this.scannedTo) },
        'bridge: the source chain head is below the blocks already read; rescanning',
      );
      this.scannedTo = -1n;
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
        return;
      }
      for (const d of fresh) this.keep(d);
      for (const d of deposits) if (d.sequence > this.lastObserved) this.lastObserved = d.sequence;
      this.scannedTo = to;
    }
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
