// The executor's mempool as the consensus service sees it: what the executor admits (from an
// rpc-edge, consensus' own RPC or a peer) arrives on noded.mempool.v1.Mempool/StreamAdmitted, and
// each admission is (1) announced to MempoolChannel for gossip when a p2p-gateway is configured and
// (2) a wake-up of the runtime for blocks on demand (`txsAvailable`). A transaction from a peer goes
// to the executor's CheckTx (the ABCI contract consensus already holds). The stream reconnects with
// backoff (AdmissionStream) and, on each (re)connect, first gets the pool, so a restarted executor or
// a cut-off consumer loses nothing it needs: those transactions are announced once more and
// MempoolChannel drops the ones a peer is known to have.
//
// Why no polling fallback: the stream is on the same gRPC port and contract as every other mempool
// call, so an executor that cannot stream cannot answer a poll either.
import type { AdmissionStream, GrpcApplication, GrpcMempool } from '@noded/abci-grpc';
import type { GossipPool } from '@noded/p2p';
import type { TraceCarrier } from '@noded/telemetry';

export class ExecutorGossipPool implements GossipPool {
  private readonly listeners = new Set<(raw: Uint8Array, hash: string, trace?: TraceCarrier) => void>();
  private readonly off: () => void;

  constructor(
    private readonly app: GrpcApplication,
    private readonly mempool: GrpcMempool,
    admissions: AdmissionStream,
  ) {
    this.off = admissions.onBatch((b) => {
      // With the context of the executor's CheckTx that admitted it, when it traces: gossip carries
      // it to peers (/noded/mempool/2), so the trace goes on at the validator that proposes it.
      for (const t of b.txs) for (const l of this.listeners) l(t.raw, t.hash, t.trace);
    });
  }

  async checkTx(tx: Uint8Array, kind: 'new'): Promise<{ code: number; log: string }> {
    const r = await this.app.checkTx(tx, kind);
    return { code: r.code, log: r.log };
  }

  onTxAdmitted(listener: (raw: Uint8Array, hash: string, trace?: TraceCarrier) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The pool now, read from the executor (a peer that connects gets it). */
  async pendingTxs(): Promise<Uint8Array[]> {
    const { pending, queued } = await this.mempool.pendingTransactions();
    return [...pending, ...queued].map((t) => t.raw);
  }

  close(): void {
    this.off();
    this.listeners.clear();
  }
}
