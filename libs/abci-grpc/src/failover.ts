// Reads over an ordered list of equivalent backends (docs/cluster.md "Edge failover"): the first
// backend up answers; one whose call fails in a way the caller calls "unavailable" (unreachable,
// past its deadline, behind the height the read needs) is marked down and the same read runs on the
// next, so a request another backend can answer does not fail. A backend marked down is probed with
// a bounded backoff (first after `probeMinMs`, doubling to `probeMaxMs`) and marked up once a probe
// answers; reads go back to it when it comes first in the list. A backend found serving something
// else (another chain) is excluded for good.
//
// Only for calls that are safe to repeat: a read cut short by a backend's death runs again on the
// next one. Writes (eth_sendRawTransaction, broadcast_tx_*) never go through this.
//
// Shared by an rpc-edge's state-store reads (StateReaderFailover) and its REST's reads of the
// consensus service's CometBFT RPC (services/rpc-edge), so both behave and log alike.

export interface FailoverEvents {
  /** A backend was marked down (with the reason), or up again (reason undefined). */
  health?(address: string, up: boolean, reason?: string): void;
  /** Reads now go to `to` (they went to `from`). */
  switched?(to: string, from: string): void;
  /** The next probe of a backend down is due in `pauseMs`. */
  probeScheduled?(address: string, pauseMs: number): void;
}

export interface FailoverOptions<B> {
  /** The backend's address, as logs, metrics and errors name it. */
  addressOf(backend: B): string;
  /** True when `err` means the backend could not answer (try the next); false: it is the answer. */
  isUnavailable(err: unknown): boolean;
  /** Resolves when a backend marked down answers again; rejects while it does not. */
  probe(backend: B): Promise<void>;
  /** The first probe of a backend marked down comes this long after (ms; default 250). */
  probeMinMs?: number;
  /** Each failed probe doubles the pause, up to this (ms; default 5,000). */
  probeMaxMs?: number;
  events?: FailoverEvents;
}

/** Every backend that was tried failed: each one's address and error, in the order tried. */
export interface FailoverFailure {
  address: string;
  err: unknown;
}

interface Slot<B> {
  backend: B;
  address: string;
  down: boolean;
  excluded: boolean;
  probing: boolean;
  pauseMs: number;
  timer: NodeJS.Timeout | undefined;
}

export class Failover<B> {
  private readonly slots: Slot<B>[];
  private inUse = 0;
  private closed = false;
  private readonly minMs: number;
  private readonly maxMs: number;

  constructor(
    backends: readonly B[],
    private readonly opts: FailoverOptions<B>,
  ) {
    if (backends.length === 0) throw new Error('Failover: no backend');
    this.minMs = opts.probeMinMs ?? 250;
    this.maxMs = Math.max(this.minMs, opts.probeMaxMs ?? 5_000);
    this.slots = backends.map((backend) => ({
      backend,
      address: opts.addressOf(backend),
      down: false,
      excluded: false,
      probing: false,
      pauseMs: this.minMs,
      timer: undefined,
    }));
  }

  /** The backend reads go to (the last one that answered). */
  get address(): string {
    return this.slots[this.inUse]!.address;
  }

  /** Every backend in the list's order, and whether it is up. */
  get health(): Array<{ address: string; up: boolean }> {
    return this.slots.map((s) => ({ address: s.address, up: !s.down && !s.excluded }));
  }

  get backends(): B[] {
    return this.slots.map((s) => s.backend);
  }

  /**
   * Runs `fn` on the backends up (in list order), then on those down; the first answer wins. An
   * error `isUnavailable` does not claim is the answer and is thrown as is. When every backend
   * failed, `allFailed` builds the error from each one's (it gets an empty list when every backend
   * is excluded).
   */
  async attempt<T>(
    fn: (backend: B) => Promise<T>,
    allFailed: (failures: FailoverFailure[]) => Error,
  ): Promise<T> {
    const usable = this.slots.map((s, i) => ({ s, i })).filter(({ s }) => !s.excluded);
    const order = [...usable.filter(({ s }) => !s.down), ...usable.filter(({ s }) => s.down)];
    const failures: FailoverFailure[] = [];
    for (const { s, i } of order) {
      if (s.excluded) continue; // excluded by an answer of another read meanwhile
      try {
        const v = await fn(s.backend);
        if (s.down) this.markUp(s);
        this.use(i);
        return v;
      } catch (err) {
        if (!this.opts.isUnavailable(err)) throw err; // an answer (a revert, bad input, not found)
        failures.push({ address: s.address, err });
        this.markDown(s, err instanceof Error ? err.message : String(err));
      }
    }
    throw allFailed(failures);
  }

  /** Marks `backend` down (a caller's own reason, e.g. behind the height a read needs). */
  down(backend: B, reason: string): void {
    const s = this.slots.find((x) => x.backend === backend);
    if (s) this.markDown(s, reason);
  }

  /** Never reads from `backend` again (it serves another chain, the reason); no probe either. */
  exclude(backend: B, reason: string): void {
    const s = this.slots.find((x) => x.backend === backend);
    if (!s || s.excluded) return;
    s.excluded = true;
    if (s.timer) clearTimeout(s.timer);
    s.timer = undefined;
    if (!s.down) this.opts.events?.health?.(s.address, false, reason);
    s.down = true;
  }

  close(): void {
    this.closed = true;
    for (const s of this.slots) {
      if (s.timer) clearTimeout(s.timer);
      s.timer = undefined;
    }
  }

  private use(i: number): void {
    if (i === this.inUse) return;
    const from = this.slots[this.inUse]!.address;
    this.inUse = i;
    this.opts.events?.switched?.(this.slots[i]!.address, from);
  }

  private markDown(s: Slot<B>, reason: string): void {
    if (s.down || s.excluded) return;
    s.down = true;
    s.pauseMs = this.minMs;
    this.opts.events?.health?.(s.address, false, reason);
    this.schedule(s);
  }

  private markUp(s: Slot<B>): void {
    s.down = false;
    if (s.timer) clearTimeout(s.timer);
    s.timer = undefined;
    this.opts.events?.health?.(s.address, true);
  }

  /** The next probe of a backend down, after its pause; a failed probe doubles the pause (bounded). */
  private schedule(s: Slot<B>): void {
    if (this.closed || s.timer || s.excluded) return;
    this.opts.events?.probeScheduled?.(s.address, s.pauseMs);
    s.timer = setTimeout(() => {
      s.timer = undefined;
      if (!s.down || s.excluded || s.probing || this.closed) return;
      s.probing = true;
      this.opts
        .probe(s.backend)
        .then(
          () => {
            // Up again: the next read goes to it if it comes first in the list.
            if (s.down && !s.excluded) this.markUp(s);
          },
          () => {
            s.pauseMs = Math.min(s.pauseMs * 2, this.maxMs);
          },
        )
        .finally(() => {
          s.probing = false;
          if (s.down) this.schedule(s);
        });
    }, s.pauseMs);
    s.timer.unref();
  }
}
