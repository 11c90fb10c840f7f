// The executor's mempool as MempoolChannel's GossipPool in the consensus service: a transaction from a
// peer goes to the executor's CheckTx (the ABCI contract consensus already holds), and what the
// executor admits (from an rpc-edge, the consensus RPC or a peer) is found by reading its pool
// (noded.mempool.v1.Mempool PendingTransactions) every `intervalMs` and announced once per transaction
// while it waits. Polling keeps the executor's contract unchanged; it costs one pool read per interval
// and adds at most that interval to the gossip delay.
import type { GrpcApplication, GrpcMempool } from '../../../libs/abci-grpc/index.js';
import type { GossipPool } from '../../../libs/p2p/index.js';
import type { Logger } from '../../../libs/types/index.js';

export const DEFAULT_POOL_POLL_MS = 200;

export class ExecutorGossipPool implements GossipPool {
  private readonly listeners = new Set<(raw: Uint8Array, hash: string) => void>();
  /** Hashes in the pool at the last read: a transaction is announced when it first appears. */
  private seen = new Set<string>();
  private latest: Uint8Array[] = [];
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private failures = 0;

  constructor(
    private readonly app: GrpcApplication,
    private readonly mempool: GrpcMempool,
    private readonly log: Logger,
    private readonly intervalMs = DEFAULT_POOL_POLL_MS,
  ) {}

  async checkTx(tx: Uint8Array, kind: 'new'): Promise<{ code: number; log: string }> {
    const r = await this.app.checkTx(tx, kind);
    return { code: r.code, log: r.log };
  }

  onTxAdmitted(listener: (raw: Uint8Array, hash: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The pool at the last read (a peer that connects gets it). */
  pendingTxs(): Uint8Array[] {
    return this.latest;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.schedule(0);
  }

  stop(): void {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
  }

  private schedule(ms: number): void {
    if (!this.running) return;
    this.timer = setTimeout(() => void this.poll(), ms);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    try {
      const { pending, queued } = await this.mempool.pendingTransactions();
      const now = new Set<string>();
      const raws: Uint8Array[] = [];
      const fresh: Array<{ raw: Uint8Array; hash: string }> = [];
      for (const t of [...pending, ...queued]) {
        const hash = `0x${Buffer.from(t.hash).toString('hex')}`;
        now.add(hash);
        raws.push(t.raw);
        if (!this.seen.has(hash)) fresh.push({ raw: t.raw, hash });
      }
      this.seen = now;
      this.latest = raws;
      for (const f of fresh) for (const l of this.listeners) l(f.raw, f.hash);
      if (this.failures > 0) this.log.info('executor mempool readable again; gossip resumed');
      this.failures = 0;
    } catch (err) {
      this.failures++;
      if (this.failures === 1 || this.failures % 50 === 0)
        this.log.warn(
          { err: (err as Error).message, attempt: this.failures },
          'reading the executor mempool failed',
        );
    }
    this.schedule(this.intervalMs);
  }
}
