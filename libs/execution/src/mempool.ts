// The application-side mempool: per-sender nonce queues (pending = executable run from the state
// nonce, queued = after a gap), geth's replacement rule (fee cap and tip both at least price_bump%
// higher), global count/byte limits with eviction of the cheapest, a per-sender limit, and
// proposal building by highest effective tip with nonce order per sender.
import { effectiveTip } from './feeMarket.js';
import { type DecodedTx, TxCode, TxRejectedError } from './txs.js';

export interface MempoolOptions {
  /** Maximum number of transactions ([mempool] size). */
  size: number;
  /** Maximum total bytes of transactions ([mempool] max_txs_bytes). */
  maxTxsBytes: number;
  /** Maximum bytes of one transaction ([mempool] max_tx_bytes). */
  maxTxBytes: number;
  /** Maximum transactions of one sender, pending and queued ([mempool] max_txs_per_sender). */
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

function cmpPrice(a: DecodedTx, b: DecodedTx, baseFee: bigint): number {
  const ta = effectiveTip(a.feeCap, a.tipCap, baseFee);
  const tb = effectiveTip(b.feeCap, b.tipCap, baseFee);
  if (ta !== tb) return ta < tb ? -1 : 1;
  if (a.feeCap !== b.feeCap) return a.feeCap < b.feeCap ? -1 : 1;
  return 0;
}

export class Mempool {
  private readonly bySender = new Map<string, Map<bigint, PoolEntry>>();
  private readonly byHash = new Map<string, PoolEntry>();
  /** Last known state nonce of each sender with transactions in the pool. */
  private readonly nonces = new Map<string, bigint>();
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

  /** Checks the pool rules for `d` (its sender's state given); throws with geth's message. */
  plan(d: DecodedTx, st: SenderState, baseFee: bigint): AdmitPlan {
    if (this.byHash.has(d.hashHex)) throw new TxRejectedError(TxCode.alreadyKnown, 'already known');
    if (d.nonce < st.nonce) {
      throw new TxRejectedError(
        TxCode.nonceTooLow,
        `nonce too low: next nonce ${st.nonce}, tx nonce ${d.nonce}`,
      );
    }
    const own = this.bySender.get(d.sender);
    const prev = own?.get(d.nonce);
    if (!prev && (own?.size ?? 0) >= this.opts.maxTxsPerSender) {
      throw new TxRejectedError(
        TxCode.accountLimit,
        `account limit exceeded: sender 0x${d.sender} already has ${own?.size} transactions in the pool (max_txs_per_sender ${this.opts.maxTxsPerSender})`,
      );
    }
    const maxAhead = BigInt(this.opts.maxTxsPerSender);
    if (d.nonce >= st.nonce + maxAhead) {
      throw new TxRejectedError(
        TxCode.nonceTooHigh,
        `nonce too high: next nonce ${st.nonce}, tx nonce ${d.nonce} (at most max_txs_per_sender=${maxAhead} ahead)`,
      );
    }
    if (st.balance < d.cost) {
      throw new TxRejectedError(
        TxCode.insufficientFunds,
        `insufficient funds for gas * price + value: balance ${st.balance}, tx cost ${d.cost}, overshot ${d.cost - st.balance}`,
      );
    }
    let spent = 0n;
    for (const e of own?.values() ?? []) if (e.d.nonce >= st.nonce) spent += e.d.cost;
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
      const chosen = new Set<PoolEntry>();
      while (count > this.opts.size || bytes > this.opts.maxTxsBytes) {
        const victim = this.cheapestTail(d.sender, chosen);
        if (!victim) throw new TxRejectedError(TxCode.poolFull, 'txpool is full');
        if (cmpPrice(d, victim.d, baseFee) <= 0) {
          throw new TxRejectedError(TxCode.underpriced, 'transaction underpriced');
        }
        chosen.add(victim);
        evict.push(victim);
        count--;
        bytes -= victim.size;
      }
    }
    return { replaces: prev, evict };
  }

  /** Lowest-priced transaction among each other sender's highest nonce (no gaps are created). */
  private cheapestTail(exceptSender: string, skip: Set<PoolEntry>): PoolEntry | undefined {
    let best: PoolEntry | undefined;
    for (const [sender, m] of this.bySender) {
      if (sender === exceptSender) continue;
      let tail: PoolEntry | undefined;
      for (const e of m.values()) if (!skip.has(e) && (!tail || e.d.nonce > tail.d.nonce)) tail = e;
      if (!tail) continue;
      if (!best || cmpPrice(tail.d, best.d, 0n) < 0) best = tail;
    }
    return best;
  }

  apply(d: DecodedTx, plan: AdmitPlan, stateNonce: bigint): void {
    for (const e of plan.evict) this.remove(e.d.hashHex);
    if (plan.replaces) this.remove(plan.replaces.d.hashHex);
    let m = this.bySender.get(d.sender);
    if (!m) {
      m = new Map();
      this.bySender.set(d.sender, m);
    }
    const e: PoolEntry = { d, size: d.raw.length, seq: this.seq++ };
    m.set(d.nonce, e);
    this.byHash.set(d.hashHex, e);
    this.bytes += e.size;
    this.nonces.set(d.sender, stateNonce);
  }

  remove(hashHex: string): PoolEntry | undefined {
    const e = this.byHash.get(hashHex);
    if (!e) return undefined;
    this.byHash.delete(hashHex);
    this.bytes -= e.size;
    const m = this.bySender.get(e.d.sender);
    if (m) {
      m.delete(e.d.nonce);
      if (m.size === 0) {
        this.bySender.delete(e.d.sender);
        this.nonces.delete(e.d.sender);
      }
    }
    return e;
  }

  clear(): void {
    this.bySender.clear();
    this.byHash.clear();
    this.nonces.clear();
    this.bytes = 0;
  }

  /** The sender's executable run of transactions, from its state nonce. */
  pending(sender: string): PoolEntry[] {
    const m = this.bySender.get(sender);
    const n0 = this.nonces.get(sender);
    if (!m || n0 === undefined) return [];
    const out: PoolEntry[] = [];
    for (let n = n0; ; n++) {
      const e = m.get(n);
      if (!e) break;
      out.push(e);
    }
    return out;
  }

  /** Next nonce counting pending transactions (eth_getTransactionCount "pending"). */
  pendingNonce(sender: string, stateNonce: bigint): bigint {
    const m = this.bySender.get(sender);
    if (!m) return stateNonce;
    let n = stateNonce;
    while (m.has(n)) n++;
    return n;
  }

  /** Pending and queued transactions by sender and nonce. */
  summary(): { pending: Map<string, PoolEntry[]>; queued: Map<string, PoolEntry[]> } {
    const pending = new Map<string, PoolEntry[]>();
    const queued = new Map<string, PoolEntry[]>();
    for (const [sender, m] of this.bySender) {
      const p = this.pending(sender);
      const inP = new Set(p);
      const q = [...m.values()].filter((e) => !inP.has(e)).sort((a, b) => (a.d.nonce < b.d.nonce ? -1 : 1));
      if (p.length) pending.set(sender, p);
      if (q.length) queued.set(sender, q);
    }
    return { pending, queued };
  }

  /** Drops what the new state made stale; with recheck also what the sender can no longer pay. */
  update(states: Map<string, SenderState>, recheck: boolean): PoolEntry[] {
    const dropped: PoolEntry[] = [];
    for (const [sender, st] of states) {
      const m = this.bySender.get(sender);
      if (!m) continue;
      this.nonces.set(sender, st.nonce);
      for (const e of [...m.values()]) {
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
