// An rpc-edge's reads over several state-stores (docs/cluster.md "Edge failover"): the first store of
// the list that is up answers; one that is unreachable, past its deadline, serving another chain or
// behind the height a read needs (StateStoreBehindError) is marked down and the read goes to the next,
// so a request that another store can answer does not fail. Reads have no side effects, so a read cut
// by a store's death is run again on the next one. A timer probes each store marked down (a Head that
// must reach the height it missed) and marks it up again when it answers, and reads go back to it
// when it comes first in the list. When every store fails, the read fails with each one's reason.
import type * as grpc from '@grpc/grpc-js';
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
  /** How often a store marked down is probed (ms; default 1,000). */
  probeMs?: number;
  /** The consensus chain id every store must serve; one serving another is never read from. */
  chainId?: string;
  /** Hooks for the service's logs and metrics. */
  events?: {
    /** A store was marked down (the reason), or up again (reason undefined). */
    health?(address: string, up: boolean, reason?: string): void;
    /** Reads now go to `to` (they went to `from`). */
    switched?(to: string, from: string): void;
  };
}

interface Store {
  client: StateReaderClient;
  down: boolean;
  /** The height a probe must see before the store is up again (0: any answer). */
  needs: bigint;
  /** Serves another chain: never read from. */
  wrongChain: boolean;
  probing: boolean;
}

class WrongChainError extends StateStoreUnavailableError {}

export class StateReaderFailover implements StateReader {
  private readonly stores: Store[];
  private inUse = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(
    addresses: readonly string[],
    private readonly opts: StateReaderFailoverOptions = {},
  ) {
    if (addresses.length === 0) throw new Error('StateReaderFailover: no state-store address');
    this.stores = addresses.map((address) => ({
      client: new StateReaderClient(address, {
        ...(opts.credentials ? { credentials: opts.credentials } : {}),
        ...(opts.deadlineMs !== undefined ? { deadlineMs: opts.deadlineMs } : {}),
        ...(opts.maxMessageBytes !== undefined ? { maxMessageBytes: opts.maxMessageBytes } : {}),
      }),
      down: false,
      needs: 0n,
      wrongChain: false,
      probing: false,
    }));
    this.timer = setInterval(() => this.probe(), opts.probeMs ?? 1_000);
    this.timer.unref();
  }

  /** The store reads go to (the last one that answered). */
  get address(): string {
    return this.stores[this.inUse]!.client.address;
  }

  /** Every store and whether it is up, in the list's order. */
  get health(): Array<{ address: string; up: boolean }> {
    return this.stores.map((s) => ({ address: s.client.address, up: !s.down }));
  }

  /** Resolves once any store accepts a connection; rejects naming them all after `timeoutMs`. */
  async waitReady(timeoutMs: number): Promise<void> {
    try {
      await Promise.any(this.stores.map((s) => s.client.waitReady(timeoutMs)));
    } catch {
      throw new Error(
        `no state-store reachable within ${timeoutMs} ms (tried ${this.stores.map((s) => s.client.address).join(', ')})`,
      );
    }
  }

  head(minHeight = 0n): Promise<StateHead> {
    return this.attempt(minHeight, async (c, check) => {
      const h = await c.head(minHeight);
      check(h);
      return h;
    });
  }

  read<T>(read: StateRead, args: unknown[], onHead?: (h: StateHead) => void, minHeight = 0n): Promise<T> {
    return this.attempt(minHeight, async (c, check) => {
      let seen: StateHead | undefined;
      const v = await c.read<T>(
        read,
        args,
        (h) => {
          check(h);
          seen = h;
        },
        minHeight,
      );
      if (seen !== undefined) onHead?.(seen);
      return v;
    });
  }

  close(): void {
    clearInterval(this.timer);
    for (const s of this.stores) s.client.close();
  }

  /** Runs `fn` on the stores up (in list order), then on those down; the first answer wins. */
  private async attempt<T>(
    minHeight: bigint,
    fn: (c: StateReaderClient, check: (h: StateHead) => void) => Promise<T>,
  ): Promise<T> {
    const usable = this.stores.map((s, i) => ({ s, i })).filter(({ s }) => !s.wrongChain);
    const order = [...usable.filter(({ s }) => !s.down), ...usable.filter(({ s }) => s.down)];
    const failures: Array<{ address: string; err: StateStoreUnavailableError }> = [];
    for (const { s, i } of order) {
      try {
        const v = await fn(s.client, (h) => this.checkChain(s, h));
        if (s.down) this.markUp(s);
        this.use(i);
        return v;
      } catch (err) {
        if (!(err instanceof StateStoreUnavailableError)) throw err; // an answer (a revert, bad input)
        failures.push({ address: s.client.address, err });
        this.markDown(s, err instanceof StateStoreBehindError ? minHeight : 0n, err.message);
      }
    }
    if (failures.length === 1) throw failures[0]!.err;
    const message = `no state-store could answer: ${failures.map((f) => f.err.message).join('; ')}`;
    if (failures.length > 0 && failures.every((f) => f.err instanceof StateStoreBehindError)) {
      // The furthest a store got (sorted: bigints have no Math.max).
      const ats = failures.map((f) => (f.err as StateStoreBehindError).at).sort((a, b) => (a < b ? -1 : 1));
      throw new StateStoreBehindError(message, ats[ats.length - 1]!);
    }
    throw new StateStoreUnavailableError(
      failures.length > 0
        ? message
        : 'no state-store serves this chain (every one in the list serves another)',
    );
  }

  private checkChain(s: Store, h: StateHead): void {
    const want = this.opts.chainId;
    if (want === undefined || h.chainId === want) return;
    s.wrongChain = true;
    throw new WrongChainError(
      `state-store at ${s.client.address} serves chain ${h.chainId}, not ${want}: never read from`,
    );
  }

  private use(i: number): void {
    if (i === this.inUse) return;
    const from = this.stores[this.inUse]!.client.address;
    this.inUse = i;
    this.opts.events?.switched?.(this.stores[i]!.client.address, from);
  }

  private markDown(s: Store, needs: bigint, reason: string): void {
    if (needs > s.needs) s.needs = needs;
    if (s.down) return;
    s.down = true;
    this.opts.events?.health?.(s.client.address, false, reason);
  }

  private markUp(s: Store): void {
    s.down = false;
    s.needs = 0n;
    this.opts.events?.health?.(s.client.address, true);
  }

  /** Each store marked down gets a Head that must reach the height it missed; an answer marks it up. */
  private probe(): void {
    for (const s of this.stores) {
      if (!s.down || s.wrongChain || s.probing) continue;
      s.probing = true;
      s.client
        .head(s.needs)
        .then(
          (h) => {
            this.checkChain(s, h);
            // Up again: the next read goes to it if it comes first in the list.
            if (s.down) this.markUp(s);
          },
          () => {},
        )
        .catch(() => {})
        .finally(() => {
          s.probing = false;
        });
    }
  }
}
