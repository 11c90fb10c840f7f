// An rpc-edge's reads over several state-stores (docs/cluster.md "Edge failover"), on the shared
// Failover (./failover.ts): the first store of the list that is up answers; one that is unreachable,
// past its deadline, serving another chain or behind the height a read needs (StateStoreBehindError)
// is marked down and the read goes to the next, so a request that another store can answer does not
// fail. Reads have no side effects, so a read cut by a store's death is run again on the next one. A
// store marked down is probed (a Head that must reach the height it missed) with a bounded backoff
// and marked up again when it answers, and reads go back to it when it comes first in the list.
// When every store fails, the read fails with each one's reason.
import type * as grpc from '@grpc/grpc-js';
import { Failover, type FailoverEvents, type FailoverFailure } from './failover.js';
import {
  type StateHead,
  type StateRead,
  type StateReader,
  StateReaderClient,
  StateStoreBehindError,
  StateStoreUnavailableError,
} from './state.js';

export interface StateReaderFailoverOptions {
  credentials?: grpc.ChannelCredentials;
  /** Each call's deadline (ms), as StateReaderClient's. */
  deadlineMs?: number;
  maxMessageBytes?: number;
  /** The first probe of a store marked down comes this long after (ms; default 250). */
  probeMs?: number;
  /** Each failed probe doubles the pause up to this (ms; default 5,000). */
  probeMaxMs?: number;
  /** The consensus chain id every store must serve; one serving another is never read from. */
  chainId?: string;
  /** Hooks for the service's logs and metrics. */
  events?: FailoverEvents;
}

class WrongChainError extends StateStoreUnavailableError {}

export class StateReaderFailover implements StateReader {
  private readonly failover: Failover<StateReaderClient>;
  /** Per store: the height a probe must see before it is up again (absent: any answer). */
  private readonly needs = new Map<StateReaderClient, bigint>();

  constructor(
    addresses: readonly string[],
    private readonly opts: StateReaderFailoverOptions = {},
  ) {
    if (addresses.length === 0) throw new Error('StateReaderFailover: no state-store address');
    const clients = addresses.map(
      (address) =>
        new StateReaderClient(address, {
          ...(opts.credentials ? { credentials: opts.credentials } : {}),
          ...(opts.deadlineMs !== undefined ? { deadlineMs: opts.deadlineMs } : {}),
          ...(opts.maxMessageBytes !== undefined ? { maxMessageBytes: opts.maxMessageBytes } : {}),
        }),
    );
    this.failover = new Failover(clients, {
      addressOf: (c) => c.address,
      isUnavailable: (err) => err instanceof StateStoreUnavailableError,
      probe: async (c) => {
        const h = await c.head(this.needs.get(c) ?? 0n);
        this.checkChain(c, h);
        this.needs.delete(c);
      },
      ...(opts.probeMs !== undefined ? { probeMinMs: opts.probeMs } : {}),
      ...(opts.probeMaxMs !== undefined ? { probeMaxMs: opts.probeMaxMs } : {}),
      ...(opts.events ? { events: opts.events } : {}),
    });
  }

  /** The store reads go to (the last one that answered). */
  get address(): string {
    return this.failover.address;
  }

  /** Every store and whether it is up, in the list's order. */
  get health(): Array<{ address: string; up: boolean }> {
    return this.failover.health;
  }

  /** Resolves once any store accepts a connection; rejects naming them all after `timeoutMs`. */
  async waitReady(timeoutMs: number): Promise<void> {
    const clients = this.failover.backends;
    try {
      await Promise.any(clients.map((c) => c.waitReady(timeoutMs)));
    } catch {
      throw new Error(
        `no state-store reachable within ${timeoutMs} ms (tried ${clients.map((c) => c.address).join(', ')})`,
      );
    }
  }

  head(minHeight = 0n): Promise<StateHead> {
    return this.attempt(minHeight, async (c) => {
      const h = await c.head(minHeight);
      this.checkChain(c, h);
      return h;
    });
  }

  read<T>(read: StateRead, args: unknown[], onHead?: (h: StateHead) => void, minHeight = 0n): Promise<T> {
    return this.attempt(minHeight, async (c) => {
      let seen: StateHead | undefined;
      const v = await c.read<T>(
        read,
        args,
        (h) => {
          this.checkChain(c, h);
          seen = h;
        },
        minHeight,
      );
      if (seen !== undefined) onHead?.(seen);
      return v;
    });
  }

  close(): void {
    this.failover.close();
    for (const c of this.failover.backends) c.close();
  }

  private attempt<T>(minHeight: bigint, fn: (c: StateReaderClient) => Promise<T>): Promise<T> {
    return this.failover.attempt(
      async (c) => {
        try {
          return await fn(c);
        } catch (err) {
          // Behind: its probe must see the height this read needed before it is up again.
          if (err instanceof StateStoreBehindError && minHeight > (this.needs.get(c) ?? 0n))
            this.needs.set(c, minHeight);
          throw err;
        }
      },
      (failures) => allFailed(failures),
    );
  }

  private checkChain(c: StateReaderClient, h: StateHead): void {
    const want = this.opts.chainId;
    if (want === undefined || h.chainId === want) return;
    const reason = `state-store at ${c.address} serves chain ${h.chainId}, not ${want}: never read from`;
    this.failover.exclude(c, reason);
    throw new WrongChainError(reason);
  }
}

/** The error of a read no store could answer: each one's reason; "behind" when all were behind. */
function allFailed(failures: FailoverFailure[]): Error {
  const errs = failures.map((f) => f.err as StateStoreUnavailableError);
  if (errs.length === 1) return errs[0]!;
  if (errs.length === 0)
    return new StateStoreUnavailableError(
      'no state-store serves this chain (every one in the list serves another)',
    );
  const message = `no state-store could answer: ${errs.map((e) => e.message).join('; ')}`;
  if (errs.every((e) => e instanceof StateStoreBehindError)) {
    // The furthest a store got (sorted: bigints have no Math.max).
    const ats = errs.map((e) => (e as StateStoreBehindError).at).sort((a, b) => (a < b ? -1 : 1));
    return new StateStoreBehindError(message, ats[ats.length - 1]!);
  }
  return new StateStoreUnavailableError(message);
}
