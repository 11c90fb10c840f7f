// The REST API's CometBFT-shaped reads (node info, syncing, blocks, validator sets, a transaction's
// block and results) over a list of CometBFT RPCs (NODED_CONSENSUS_RPC_ADDRESS, docs/cluster.md
// "Edge failover"): the consensus service's own :26657 first, then, say, a full node or another
// validator of the same chain. The same Failover as the state-store reads (libs/abci-grpc): the
// first RPC up answers; one that does not answer (refused, reset, past its 5 s, HTTP 502/503/504 or
// a 5xx that is not JSON-RPC) is marked down and the same read goes to the next; a probe (`status`) with a bounded
// backoff marks it up again and reads go back to it. Every call here is a read (status, block,
// block_results, validators, tx), so running it again elsewhere is safe; nothing here writes.
//
// Each RPC must serve this chain: its `status` must name the genesis' chain id as its network before
// anything it answers is used (checked on first use and after each time it was unavailable); one of
// another chain is never read from.
import { Failover, type FailoverEvents, type FailoverFailure } from '@noded/abci-grpc';
import { CometRpcConsensus, type GatewayError, type RestConsensus, unavailable } from '@noded/rpc';
import type { Block, BlockId, ExecTxResult, NodeIdentity, Validator } from '@noded/types';

export interface CometRpcFailoverOptions {
  /** The chain every RPC must serve (its status' node_info.network). */
  chainId: string;
  /** Time allowed for one call to one RPC (default 5 s, as CometRpcConsensus). */
  timeoutMs?: number;
  probeMinMs?: number;
  probeMaxMs?: number;
  events?: FailoverEvents;
}

const isUnavailable = (err: unknown): boolean => (err as GatewayError | null)?.grpcCode === 14;

export class CometRpcFailover implements RestConsensus {
  private readonly failover: Failover<CometRpcConsensus>;
  /** RPCs whose status named this chain since they last failed. */
  private readonly verified = new Set<CometRpcConsensus>();

  constructor(
    addresses: readonly string[],
    private readonly opts: CometRpcFailoverOptions,
  ) {
    if (addresses.length === 0) throw new Error('CometRpcFailover: no consensus RPC address');
    const rpcs = addresses.map(
      (a) => new CometRpcConsensus(a, opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
    );
    this.failover = new Failover(rpcs, {
      addressOf: (c) => c.address,
      isUnavailable,
      probe: (c) => this.verify(c),
      ...(opts.probeMinMs !== undefined ? { probeMinMs: opts.probeMinMs } : {}),
      ...(opts.probeMaxMs !== undefined ? { probeMaxMs: opts.probeMaxMs } : {}),
      ...(opts.events ? { events: opts.events } : {}),
    });
  }

  /** The RPC reads go to (the last one that answered). */
  get address(): string {
    return this.failover.address;
  }

  get health(): Array<{ address: string; up: boolean }> {
    return this.failover.health;
  }

  identity(): Promise<NodeIdentity> {
    return this.attempt((c) => c.identity());
  }

  catchingUp(): Promise<boolean> {
    return this.attempt((c) => c.catchingUp());
  }

  storeRange(): Promise<{ base: number; height: number }> {
    return this.attempt((c) => c.storeRange());
  }

  block(height: number): Promise<{ block: Block; blockId: BlockId } | undefined> {
    return this.attempt((c) => c.block(height));
  }

  txResults(height: number): Promise<ExecTxResult[] | undefined> {
    return this.attempt((c) => c.txResults(height));
  }

  validators(height: number): Promise<Validator[] | undefined> {
    return this.attempt((c) => c.validators(height));
  }

  txByCometHash(hash: Uint8Array): Promise<Uint8Array | undefined> {
    return this.attempt((c) => c.txByCometHash(hash));
  }

  close(): void {
    this.failover.close();
  }

  private attempt<T>(fn: (c: CometRpcConsensus) => Promise<T>): Promise<T> {
    return this.failover.attempt(async (c) => {
      try {
        await this.verify(c);
        return await fn(c);
      } catch (err) {
        // Checked again before its next answer is used: what answers there may have changed.
        if (isUnavailable(err)) this.verified.delete(c);
        throw err;
      }
    }, allFailed);
  }

  /** Its status names this chain (once per stretch of answers); otherwise it is never read from. */
  private async verify(c: CometRpcConsensus): Promise<void> {
    if (this.verified.has(c)) return;
    const { network } = await c.identity();
    if (network !== this.opts.chainId) {
      const reason = `the consensus RPC at ${c.address} serves chain ${network}, not ${this.opts.chainId}: never read from`;
      this.failover.exclude(c, reason);
      throw unavailable(reason);
    }
    this.verified.add(c);
  }
}

function allFailed(failures: FailoverFailure[]): Error {
  if (failures.length === 1) return failures[0]!.err as Error;
  if (failures.length === 0)
    return unavailable('no consensus RPC of $NODED_CONSENSUS_RPC_ADDRESS serves this chain');
  return unavailable(
    `no consensus RPC could answer: ${failures.map((f) => (f.err as Error).message).join('; ')}`,
  );
}
