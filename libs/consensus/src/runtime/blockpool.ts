// Block sync's request scheduler (CometBFT's BlockPool, without its goroutines): which peer holds
// which heights, which height is asked of which peer, what came back and is not applied yet. Pure
// bookkeeping with the time passed in; the runtime sends the requests and applies the blocks in order.
//
// Heights from the next one to apply are spread over the peers that hold them, the least loaded
// first, at most `window` outstanding per peer, and at most MAX_AHEAD heights past the next one (the
// memory bound). A peer that answers ranges (its status says how many heights a request may ask) is
// given runs of consecutive heights, up to half its window and its range, and a new run only once
// half its window is free, so that one request message asks for several blocks (ranges()); a peer
// without ranges is asked one height per request, as CometBFT's blocksync does. A request unanswered after `timeoutMs` is dropped with its peer (asked again of
// another); a peer that says it has no such block is no longer asked for it; a peer whose block fails
// verification is removed with every block it sent that is not applied yet, and those heights are asked
// of the others.
import type { Block, Commit } from '@noded/types';

/** Heights past the next one to apply that may be requested or held (CometBFT's maxPendingRequests is 600). */
export const MAX_AHEAD = 256;

export interface PooledBlock {
  peer: string;
  block: Block;
  commit: Commit;
  extendedCommit?: Commit;
}

interface PeerState {
  base: number;
  height: number;
  inflight: number;
  /** The most heights one request to it may ask (1: no ranges). */
  maxRange: number;
}

/** Consecutive heights asked of one peer in one request. */
export interface BlockRange {
  peer: string;
  height: number;
  count: number;
}

/**
 * Groups scheduled requests (in the order schedule() returns them) into runs of consecutive heights
 * per peer, each at most `maxOf(peer)` long (the range the peer answers).
 */
export function ranges(
  requests: Array<{ peer: string; height: number }>,
  maxOf: (peer: string) => number,
): BlockRange[] {
  const out: BlockRange[] = [];
  const open = new Map<string, BlockRange>();
  for (const r of requests) {
    const run = open.get(r.peer);
    if (run && run.height + run.count === r.height && run.count < maxOf(r.peer)) run.count++;
    else {
      const next = { peer: r.peer, height: r.height, count: 1 };
      open.set(r.peer, next);
      out.push(next);
    }
  }
  return out;
}

export class BlockPool {
  private readonly peers = new Map<string, PeerState>();
  /** height -> the peer asked and when (ms). */
  private readonly requests = new Map<number, { peer: string; at: number }>();
  private readonly blocks = new Map<number, PooledBlock>();

  constructor(
    /** The next height to apply. */
    public next: number,
    private readonly window: number,
    private readonly timeoutMs: number,
  ) {}

  get peerCount(): number {
    return this.peers.size;
  }

  /** The highest block a peer said it stores (0 without peers). */
  maxPeerHeight(): number {
    let max = 0;
    for (const p of this.peers.values()) max = Math.max(max, p.height);
    return max;
  }

  setStatus(peer: string, base: number, height: number, maxRange = 1): void {
    const p = this.peers.get(peer);
    if (p) {
      p.base = base;
      p.height = height;
      p.maxRange = maxRange;
    } else this.peers.set(peer, { base, height, inflight: 0, maxRange });
  }

  /** The heights one run to this peer may hold: half the window (so the other half stays in flight), within its range. */
  private runOf(p: PeerState): number {
    return Math.max(1, Math.min(p.maxRange, Math.ceil(this.window / 2)));
  }

  /** Forgets a peer, its requests and the blocks it sent that are not applied; returns how many blocks were dropped. */
  removePeer(peer: string): number {
    this.peers.delete(peer);
    for (const [h, r] of this.requests) if (r.peer === peer) this.requests.delete(h);
    let dropped = 0;
    for (const [h, b] of this.blocks)
      if (b.peer === peer) {
        this.blocks.delete(h);
        dropped++;
      }
    return dropped;
  }

  /**
   * Requests to send now: each a height and the peer to ask, in height order (ranges() groups them
   * into request messages).
   */
  schedule(now: number): Array<{ peer: string; height: number }> {
    const out: Array<{ peer: string; height: number }> = [];
    const last = Math.min(this.maxPeerHeight(), this.next + MAX_AHEAD - 1);
    // The run being built: the peer given the previous height in this call, and how many it got in a row.
    let run: { entry: [string, PeerState]; length: number; end: number } | null = null;
    for (let h = this.next; h <= last; h++) {
      if (this.requests.has(h) || this.blocks.has(h)) continue;
      let best: [string, PeerState] | null = null;
      let length = 1;
      if (run && run.end === h - 1 && run.length < this.runOf(run.entry[1])) {
        const p = run.entry[1];
        if (h >= p.base && h <= p.height && p.inflight < this.window) {
          best = run.entry;
          length = run.length + 1;
        }
      }
      if (!best) {
        for (const e of this.peers) {
          const p = e[1];
          if (h < p.base || h > p.height || p.inflight >= this.window) continue;
          // A peer that answers ranges starts a new run only with room for a whole one.
          if (p.maxRange > 1 && this.window - p.inflight < this.runOf(p)) continue;
          if (!best || p.inflight < best[1].inflight) best = e;
        }
        if (!best) {
          // Nobody can take this height now; later ones may still go to peers with room.
          run = null;
          continue;
        }
      }
      run = { entry: best, length, end: h };
      best[1].inflight++;
      this.requests.set(h, { peer: best[0], at: now });
      out.push({ peer: best[0], height: h });
    }
    return out;
  }

  /** schedule(), as request messages: consecutive heights of one peer grouped within the range it answers. */
  scheduleRanges(now: number): BlockRange[] {
    return ranges(this.schedule(now), (peer) => this.peers.get(peer)?.maxRange ?? 1);
  }

  /** Peers with a request older than the timeout: they are removed (their heights go to others). */
  expire(now: number): string[] {
    const late = new Set<string>();
    for (const r of this.requests.values()) if (now - r.at > this.timeoutMs) late.add(r.peer);
    for (const p of late) this.removePeer(p);
    return [...late];
  }

  /**
   * A block from a peer. Kept when it answers this node's request of that peer for its height;
   * otherwise (unasked, or asked of another peer) it is ignored and false is returned.
   */
  addBlock(b: PooledBlock): boolean {
    const h = b.block.header.height;
    const r = this.requests.get(h);
    if (!r || r.peer !== b.peer) return false;
    this.requests.delete(h);
    const p = this.peers.get(b.peer);
    if (p) p.inflight--;
    this.blocks.set(h, b);
    return true;
  }

  /** The peer does not have `height` (pruned, or it misreported): not asked for it, or above, again. */
  noBlock(peer: string, height: number): void {
    const r = this.requests.get(height);
    if (r?.peer === peer) this.requests.delete(height);
    const p = this.peers.get(peer);
    if (!p) return;
    if (r?.peer === peer) p.inflight--;
    if (height >= p.base) p.height = Math.min(p.height, height - 1);
  }

  /** The block for the next height, if it came. */
  peek(): PooledBlock | undefined {
    return this.blocks.get(this.next);
  }

  /** The node is at `next` now (applied blocks, or decided by consensus): older heights are forgotten. */
  advance(next: number): void {
    if (next <= this.next) return;
    for (let h = this.next; h < next; h++) {
      this.blocks.delete(h);
      const r = this.requests.get(h);
      if (r) {
        this.requests.delete(h);
        const p = this.peers.get(r.peer);
        if (p) p.inflight--;
      }
    }
    this.next = next;
  }

  /** Blocks received and waiting (diagnostics and tests). */
  get buffered(): number {
    return this.blocks.size;
  }
}
