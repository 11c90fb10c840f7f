// The application-side mempool: per-sender nonce queues (pending = executable run from the state
// nonce, queued = after a gap), geth's replacement rule (fee cap and tip both at least price_bump%
// higher), global count/byte limits with eviction (first from senders above their guaranteed
// share, then the cheapest), and proposal building by highest effective tip with nonce order per
// sender.
import { effectiveTip } from './feeMarket.js';
import { type DecodedTx, TxCode, TxRejectedError } from './txs.js';

export interface MempoolOptions {
  /** Maximum number of transactions ([mempool] size). */
  size: number;
  /** Maximum total bytes of transactions ([mempool] max_txs_bytes). */
  maxTxsBytes: number;
  /** Maximum bytes of one transaction ([mempool] max_tx_bytes). */
  maxTxBytes: number;
  /**
   * Transactions each sender is guaranteed in a full pool; also how far queued nonces may run
   * past the pending ones ([mempool] max_txs_per_sender).
   */
  maxTxsPerSender: number;
  /** Minimum fee increase in percent to replace a transaction ([mempool] price_bump). */
  priceBump: number;
  /** Re-validate balances after each block ([mempool] recheck). */
  recheck: boolean;
}

export const defaultMempoolOptions: MempoolOptions = {
  size: 5000,
  maxTxsBytes: 1_073_741_824,
  maxTxBytes: 1_048_576,
  maxTxsPerSender: 64,
  priceBump: 10,
  recheck: true,
};

export interface SenderState {
  nonce: bigint;
  balance: bigint;
}

export interface PoolEntry {
  d: DecodedTx;
  size: number;
  seq: number;
}

export interface AdmitPlan {
  replaces?: PoolEntry;
  evict: PoolEntry[];
}

/** Bytes a transaction takes in a block's protobuf Data (tag + length varint + bytes). */
export function protoTxSize(len: number): number {
  let v = 1;
  for (let n = len; n >= 0x80; n >>>= 7) v++;
  return 1 + v + len;
}

export function cmpPrice(a: DecodedTx, b: DecodedTx, baseFee: bigint): number {
  const ta = effectiveTip(a.feeCap, a.tipCap, baseFee);
  const tb = effectiveTip(b.feeCap, b.tipCap, baseFee);
  if (ta !== tb) return ta < tb ? -1 : 1;
  if (a.feeCap !== b.feeCap) return a.feeCap < b.feeCap ? -1 : 1;
  return 0;
}

/** One sender's transactions in the pool, with the sums admission needs kept up to date. */
interface SenderTxs {
  byNonce: Map<bigint, PoolEntry>;
  /** Sum of the entries' cost (value + gas * fee cap). */
  cost: bigint;
  /** The sender's state nonce when last seen (admission or a block). */
  stateNonce: bigint;
  /** Cached end of the executable run (first nonce from stateNonce not in the pool); undefined = unknown. */
  end?: bigint;
  /** Entries below stateNonce remain (an admission saw a newer state before the update after its block). */
  stale?: boolean;
}

/** The sender's highest-nonce transaction not in `skip` (evicting it opens no nonce gap). */
function tailOf(own: SenderTxs, skip: Set<PoolEntry>): PoolEntry | undefined {
  let tail: PoolEntry | undefined;
  for (const e of own.byNonce.values()) if (!skip.has(e) && (!tail || e.d.nonce > tail.d.nonce)) tail = e;
  return tail;
}

/** Whether the sender holds a transaction below `nonce` (one a newer state already ran). */
function hasBelow(own: SenderTxs, nonce: bigint): boolean {
  for (const n of own.byNonce.keys()) if (n < nonce) return true;
  return false;
}

export class Mempool {
  private readonly bySender = new Map<string, SenderTxs>();
  private readonly byHash = new Map<string, PoolEntry>();
  private bytes = 0;
  private seq = 0;

  constructor(readonly opts: MempoolOptions) {}

  get count(): number {
    return this.byHash.size;
  }

  get totalBytes(): number {
    return this.bytes;
  }

  get(hashHex: string): PoolEntry | undefined {
    return this.byHash.get(hashHex);
  }

  senders(): string[] {
    return [...this.bySender.keys()];
  }

  /**
   * Checks the pool rules for `d` (its sender's state given); throws with geth's message.
   *
   * `max_txs_per_sender` works like geth's account slots: every sender is guaranteed that many
   * transactions, and may hold more while the pool has room. A full pool makes room for a sender
   * within its guarantee by dropping the newest transactions of the sender furthest above it, and
   * only then by price; a sender already above its guarantee cannot push anybody out.
   */
  plan(d: DecodedTx, st: SenderState, baseFee: bigint): AdmitPlan {
    if (this.byHash.has(d.hashHex)) throw new TxRejectedError(TxCode.alreadyKnown, 'already known');
    if (d.nonce < st.nonce) {
      throw new TxRejectedError(
        TxCode.nonceTooLow,
        `nonce too low: next nonce ${st.nonce}, tx nonce ${d.nonce}`,
      );
    }
    const own = this.bySender.get(d.sender);
    const prev = own?.byNonce.get(d.nonce);
    const held = own?.byNonce.size ?? 0;
    // Transactions after a gap wait in the queue; at most max_txs_per_sender nonces beyond the run.
    const maxAhead = BigInt(this.opts.maxTxsPerSender);
    const next = own ? this.runEnd(own, st.nonce) : st.nonce;
    if (d.nonce >= next + maxAhead) {
      throw new TxRejectedError(
        TxCode.nonceTooHigh,
        `nonce too high: next nonce ${next}, tx nonce ${d.nonce} (at most max_txs_per_sender=${maxAhead} ahead)`,
      );
    }
    if (st.balance < d.cost) {
      throw new TxRejectedError(
        TxCode.insufficientFunds,
        `insufficient funds for gas * price + value: balance ${st.balance}, tx cost ${d.cost}, overshot ${d.cost - st.balance}`,
      );
    }
    const spent = own ? this.spent(own, st.nonce) : 0n;
    if (prev) {
      const bump = d.cost - prev.d.cost;
      const need = spent + bump;
      if (st.balance < need) {
        throw new TxRejectedError(
          TxCode.insufficientFunds,
          `insufficient funds for gas * price + value: balance ${st.balance}, queued cost ${spent}, tx cost ${bump}, overshot ${need - st.balance}`,
        );
      }
      const pct = BigInt(100 + this.opts.priceBump);
      const feeThreshold = (prev.d.feeCap * pct) / 100n;
      const tipThreshold = (prev.d.tipCap * pct) / 100n;
      if (
        prev.d.feeCap >= d.feeCap ||
        prev.d.tipCap >= d.tipCap ||
        d.feeCap < feeThreshold ||
        d.tipCap < tipThreshold
      ) {
        throw new TxRejectedError(TxCode.replacementUnderpriced, 'replacement transaction underpriced');
      }
    } else {
      const need = spent + d.cost;
      if (st.balance < need) {
        throw new TxRejectedError(
          TxCode.insufficientFunds,
          `insufficient funds for gas * price + value: balance ${st.balance}, queued cost ${spent}, tx cost ${d.cost}, overshot ${need - st.balance}`,
        );
      }
    }

    const size = d.raw.length;
    const evict: PoolEntry[] = [];
    let count = this.byHash.size + (prev ? 0 : 1);
    let bytes = this.bytes + size - (prev?.size ?? 0);
    if (count > this.opts.size || bytes > this.opts.maxTxsBytes) {
      if (!prev && held >= this.opts.maxTxsPerSender) {
        throw new TxRejectedError(
          TxCode.accountLimit,
          `account limit exceeded: the pool is full and sender 0x${d.sender} already has ${held} transactions in it (max_txs_per_sender ${this.opts.maxTxsPerSender})`,
        );
      }
      const chosen = new Set<PoolEntry>();
      const taken = new Map<string, number>();
      while (count > this.opts.size || bytes > this.opts.maxTxsBytes) {
        let victim = this.overLimitTail(d.sender, chosen, taken);
        if (!victim) {
          victim = this.cheapestTail(d.sender, chosen);
          if (!victim) throw new TxRejectedError(TxCode.poolFull, 'txpool is full');
          if (cmpPrice(d, victim.d, baseFee) <= 0) {
            throw new TxRejectedError(TxCode.underpriced, 'transaction underpriced');
          }
        }
        chosen.add(victim);
        taken.set(victim.d.sender, (taken.get(victim.d.sender) ?? 0) + 1);
        evict.push(victim);
        count--;
        bytes -= victim.size;
      }
    }
    return { replaces: prev, evict };
  }

  /** First nonce from `stateNonce` that the sender has no transaction for. */
  private runEnd(own: SenderTxs, stateNonce: bigint): bigint {
    const cached = own.stateNonce === stateNonce;
    let n = cached && own.end !== undefined ? own.end : stateNonce;
    while (own.byNonce.has(n)) n++;
    if (cached) own.end = n;
    return n;
  }

  /** What the sender's transactions from `stateNonce` on may spend. */
  private spent(own: SenderTxs, stateNonce: bigint): bigint {
    let stale = 0n;
    // Entries below the state nonce are dropped when a block lands; between that and now only
    // a newer state than the pool last saw can leave some behind.
    if (stateNonce !== own.stateNonce || own.stale) {
      for (const e of own.byNonce.values()) if (e.d.nonce < stateNonce) stale += e.d.cost;
    }
    return own.cost - stale;
  }

  /**
   * The newest not yet chosen transaction of the sender furthest above max_txs_per_sender (after
   * the evictions already chosen, counted in `taken`), other than `exceptSender`.
   */
  private overLimitTail(
    exceptSender: string,
    chosen: Set<PoolEntry>,
    taken: Map<string, number>,
  ): PoolEntry | undefined {
    let worst: SenderTxs | undefined;
    let most = this.opts.maxTxsPerSender;
    for (const [sender, own] of this.bySender) {
      if (sender === exceptSender) continue;
      const n = own.byNonce.size - (taken.get(sender) ?? 0);
      if (n > most) {
        most = n;
        worst = own;
      }
    }
    return worst && tailOf(worst, chosen);
  }

  /** Lowest-priced transaction among each other sender's highest nonce (no gaps are created). */
  private cheapestTail(exceptSender: string, skip: Set<PoolEntry>): PoolEntry | undefined {
    let best: PoolEntry | undefined;
    for (const [sender, own] of this.bySender) {
      if (sender === exceptSender) continue;
      const tail = tailOf(own, skip);
      if (!tail) continue;
      if (!best || cmpPrice(tail.d, best.d, 0n) < 0) best = tail;
    }
    return best;
  }

  apply(d: DecodedTx, plan: AdmitPlan, stateNonce: bigint): void {
    for (const e of plan.evict) this.remove(e.d.hashHex);
    if (plan.replaces) this.remove(plan.replaces.d.hashHex);
    let own = this.bySender.get(d.sender);
    if (!own) {
      own = { byNonce: new Map(), cost: 0n, stateNonce };
      this.bySender.set(d.sender, own);
    }
    if (own.stateNonce !== stateNonce) {
      own.stateNonce = stateNonce;
      own.end = undefined;
      // Entries a newer state already ran stay until the update after the block removes them;
      // until then spent() must keep leaving them out.
      if (hasBelow(own, stateNonce)) own.stale = true;
    }
    const e: PoolEntry = { d, size: d.raw.length, seq: this.seq++ };
    own.byNonce.set(d.nonce, e);
    own.cost += d.cost;
    this.byHash.set(d.hashHex, e);
    this.bytes += e.size;
  }

  remove(hashHex: string): PoolEntry | undefined {
    const e = this.byHash.get(hashHex);
    if (!e) return undefined;
    this.byHash.delete(hashHex);
    this.bytes -= e.size;
    const own = this.bySender.get(e.d.sender);
    if (own?.byNonce.get(e.d.nonce) === e) {
      own.byNonce.delete(e.d.nonce);
      own.cost -= e.d.cost;
      if (own.end !== undefined && e.d.nonce < own.end) own.end = undefined;
      if (own.byNonce.size === 0) this.bySender.delete(e.d.sender);
    }
    return e;
  }

  clear(): void {
    this.bySender.clear();
    this.byHash.clear();
    this.bytes = 0;
  }

  /** The sender's executable run of transactions, from its state nonce. */
  pending(sender: string): PoolEntry[] {
    const own = this.bySender.get(sender);
    if (!own) return [];
    const out: PoolEntry[] = [];
    for (let n = own.stateNonce; ; n++) {
      const e = own.byNonce.get(n);
      if (!e) break;
      out.push(e);
    }
    return out;
  }

  /** Whether some sender's next transaction (at its state nonce) waits: a block would include something. */
  hasExecutable(): boolean {
    for (const own of this.bySender.values()) if (own.byNonce.has(own.stateNonce)) return true;
    return false;
  }

  /** Next nonce counting pending transactions (eth_getTransactionCount "pending"). */
  pendingNonce(sender: string, stateNonce: bigint): bigint {
    const own = this.bySender.get(sender);
    return own ? this.runEnd(own, stateNonce) : stateNonce;
  }

  /** Pending and queued transactions by sender and nonce. */
  summary(): { pending: Map<string, PoolEntry[]>; queued: Map<string, PoolEntry[]> } {
    const pending = new Map<string, PoolEntry[]>();
    const queued = new Map<string, PoolEntry[]>();
    for (const [sender, own] of this.bySender) {
      const p = this.pending(sender);
      const inP = new Set(p);
      const q = [...own.byNonce.values()]
        .filter((e) => !inP.has(e))
        .sort((a, b) => (a.d.nonce < b.d.nonce ? -1 : 1));
      if (p.length) pending.set(sender, p);
      if (q.length) queued.set(sender, q);
    }
    return { pending, queued };
  }

  /** Drops what the new state made stale; with recheck also what the sender can no longer pay. */
  update(states: Map<string, SenderState>, recheck: boolean): PoolEntry[] {
    const dropped: PoolEntry[] = [];
    for (const [sender, st] of states) {
      const own = this.bySender.get(sender);
      if (!own) continue;
      own.stateNonce = st.nonce;
      own.end = undefined;
      own.stale = undefined;
      for (const e of [...own.byNonce.values()]) {
        if (e.d.nonce < st.nonce || (recheck && e.d.cost > st.balance)) {
          this.remove(e.d.hashHex);
          dropped.push(e);
        }
      }
    }
    return dropped;
  }

  /**
   * Transactions for a proposal: highest effective tip first across senders, nonce order within a
   * sender, stopping a sender at a fee cap below the base fee, within `maxBytes`.
   */
  select(baseFee: bigint, maxBytes: number): DecodedTx[] {
    const queues: PoolEntry[][] = [];
    for (const sender of this.bySender.keys()) {
      const p = this.pending(sender);
      if (p.length > 0) queues.push(p);
    }
    // Max-heap of queue heads by effective tip, then arrival order.
    const heads = queues.map((q) => ({ q, i: 0 }));
    const better = (a: { q: PoolEntry[]; i: number }, b: { q: PoolEntry[]; i: number }): boolean => {
      const c = cmpPrice(a.q[a.i].d, b.q[b.i].d, baseFee);
      return c !== 0 ? c > 0 : a.q[a.i].seq < b.q[b.i].seq;
    };
    const heap: Array<{ q: PoolEntry[]; i: number }> = [];
    const push = (h: { q: PoolEntry[]; i: number }) => {
      heap.push(h);
      let i = heap.length - 1;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (!better(heap[i], heap[p])) break;
        [heap[i], heap[p]] = [heap[p], heap[i]];
        i = p;
      }
    };
    const pop = () => {
      const top = heap[0];
      const last = heap.pop()!;
      if (heap.length > 0) {
        heap[0] = last;
        let i = 0;
        for (;;) {
          const l = 2 * i + 1;
          const r = l + 1;
          let m = i;
          if (l < heap.length && better(heap[l], heap[m])) m = l;
          if (r < heap.length && better(heap[r], heap[m])) m = r;
          if (m === i) break;
          [heap[i], heap[m]] = [heap[m], heap[i]];
          i = m;
        }
      }
      return top;
    };
    for (const h of heads) push(h);
    const out: DecodedTx[] = [];
    let used = 0;
    while (heap.length > 0) {
      const h = pop();
      const e = h.q[h.i];
      if (e.d.feeCap < baseFee) continue; // this sender cannot pay the base fee: later nonces wait too
      const sz = protoTxSize(e.size);
      if (used + sz > maxBytes) continue; // too big for what is left; the sender's later nonces wait
      used += sz;
      out.push(e.d);
      if (h.i + 1 < h.q.length) push({ q: h.q, i: h.i + 1 });
    }
    return out;
  }
}
