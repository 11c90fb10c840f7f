// The logs of the newest blocks, kept on the JSON-RPC thread so that eth_getLogs over recent blocks
// is answered there without a round trip to the chain's thread. Each block's logs arrive with its
// head (EthNewHead carries them for the subscriptions already); heights the edge never saw a head
// for (those before the thread started, or skipped by a state sync) are filled from the chain by a
// query with no criteria. A query is answered here only when every height of its range is held;
// otherwise it goes to the chain as before.
import type { EthLog, Hex, LogFilter } from '@noded/types';
import { type LogMatch, logMatches } from './filters.js';

/**
 * What the cache keeps. Measured: about 0.9 kB a log as objects, 2.1 kB once its JSON text and the
 * index are built (50,000 logs: 45 MB, 105 MB).
 */
export interface RecentLogsLimits {
  /** Heights kept below the newest (a query of "the last 1,000 blocks" fits). */
  blocks: number;
  /** Logs kept over all heights; the oldest heights go first. */
  logs: number;
}

// 20,000 logs: about 42 MB at most, held after a load until newer blocks push them out (docs/reliability.md memory).
export const DEFAULT_RECENT_LOGS: RecentLogsLimits = { blocks: 1024, logs: 20_000 };

/** One block's logs, with an index of each address and topic value (any position) to its logs. */
interface BlockLogs {
  logs: EthLog[];
  /** Lowercased address or topic -> ascending positions in `logs`; built on the first query. */
  index?: Map<string, number[]>;
}

/** The criteria of a query, lowercased (the shape logMatches takes); an empty list becomes null. */
function criteriaOf(filter: LogFilter): LogMatch {
  const topics = (filter.topics ?? []).map((t) => {
    if (t === null || t === undefined) return null;
    const list = (Array.isArray(t) ? t : [t]).map((x) => x.toLowerCase() as Hex);
    return list.length === 0 ? null : list;
  });
  return { addresses: (filter.addresses ?? []).map((a) => a.toLowerCase() as Hex), topics };
}

function indexOf(b: BlockLogs): Map<string, number[]> {
  if (b.index !== undefined) return b.index;
  const index = new Map<string, number[]>();
  const put = (k: string, i: number) => {
    const list = index.get(k);
    if (list === undefined) index.set(k, [i]);
    else if (list[list.length - 1] !== i) list.push(i); // a value twice in one log counts once
  };
  b.logs.forEach((l, i) => {
    put(l.address.toLowerCase(), i);
    for (const t of l.topics) put(t.toLowerCase(), i);
  });
  b.index = index;
  return index;
}

/**
 * The positions in `b` that may match: those of the criterion (the addresses, or one topic
 * position) naming the fewest logs; every log when the query names nothing.
 */
function candidates(b: BlockLogs, c: LogMatch): number[] | undefined {
  const lists: string[][] = [];
  if (c.addresses.length > 0) lists.push(c.addresses);
  for (const t of c.topics) if (t !== null) lists.push(t);
  if (lists.length === 0) return undefined;
  const index = indexOf(b);
  let best: number[] | undefined;
  for (const values of lists) {
    const found: number[][] = [];
    let n = 0;
    for (const v of values) {
      const hit = index.get(v);
      if (hit !== undefined) {
        found.push(hit);
        n += hit.length;
      }
    }
    if (best !== undefined && n >= best.length) continue;
    best = found.length === 1 ? found[0]! : [...new Set(found.flat())].sort((x, y) => x - y);
    if (best.length === 0) return best;
  }
  return best;
}

export class RecentLogs {
  /** By height (as a number: a Map of bigint keys is several times slower to look up). */
  private readonly byHeight = new Map<number, BlockLogs>();
  private count = 0;
  /** No height below this is held or filled again (heights dropped for the log budget). */
  private floor = 0;
  /** The newest height added. */
  private newest = -1;

  constructor(readonly limits: RecentLogsLimits = DEFAULT_RECENT_LOGS) {}

  /** Logs held, over all heights. */
  get size(): number {
    return this.count;
  }

  /** Heights held. */
  get heights(): number {
    return this.byHeight.size;
  }

  /** The logs of block `height`, in block order (a head, or a fill). Replaces what was held. */
  add(height: bigint, logs: EthLog[]): void {
    this.put(Number(height), logs);
  }

  private put(height: number, logs: EthLog[]): void {
    if (height < this.floor) return;
    if (height > this.newest) this.newest = height;
    this.dropOne(height);
    this.byHeight.set(height, { logs });
    this.count += logs.length;
    this.trim();
  }

  /** Blocks [from, to] as answered by a query with no criteria (`logs` ascending, every log of them). */
  fill(from: bigint, to: bigint, logs: EthLog[]): void {
    let i = 0;
    for (let h = Number(from); h <= Number(to); h++) {
      const start = i;
      while (i < logs.length && Number(logs[i]!.blockNumber) === h) i++;
      if (!this.byHeight.has(h)) this.put(h, logs.slice(start, i));
    }
  }

  /** A rewind: heights above `height` are gone (they will be made again). */
  dropAbove(height: bigint): void {
    const top = Number(height);
    for (const h of [...this.byHeight.keys()]) if (h > top) this.dropOne(h);
    if (this.newest > top) this.newest = top;
    if (this.floor > top + 1) this.floor = top + 1;
  }

  /** Heights of [from, to] not held, as at most `max` of the newest; empty when the range is held. */
  missing(from: bigint, to: bigint, max: number): bigint[] {
    const out: bigint[] = [];
    const low = Math.max(0, Number(from));
    for (let h = Number(to); h >= low && out.length < max; h--)
      if (!this.byHeight.has(h)) out.push(BigInt(h));
    return out.reverse();
  }

  /** Whether heights below `height` may still be held (filling them is not pointless). */
  canHold(height: bigint): boolean {
    const h = Number(height);
    return h >= this.floor && h > this.newest - this.limits.blocks;
  }

  /**
   * The logs of [filter.fromBlock, filter.toBlock] that match, in order, at most `filter.limit`;
   * undefined when a height of the range is not held (ask the chain).
   */
  query(filter: LogFilter): EthLog[] | undefined {
    const from = filter.fromBlock < 0n ? 0 : Number(filter.fromBlock);
    const to = Number(filter.toBlock);
    for (let h = from; h <= to; h++) if (!this.byHeight.has(h)) return undefined;
    const c = criteriaOf(filter);
    const limit = filter.limit ?? Number.POSITIVE_INFINITY;
    const out: EthLog[] = [];
    for (let h = from; h <= to && out.length < limit; h++) {
      const b = this.byHeight.get(h)!;
      if (b.logs.length === 0) continue;
      const picked = candidates(b, c);
      if (picked === undefined) {
        for (const l of b.logs) {
          if (out.length >= limit) break;
          if (logMatches(l, c)) out.push(l);
        }
        continue;
      }
      for (const i of picked) {
        if (out.length >= limit) break;
        const l = b.logs[i]!;
        if (logMatches(l, c)) out.push(l);
      }
    }
    return out;
  }

  private dropOne(h: number): void {
    const b = this.byHeight.get(h);
    if (b === undefined) return;
    this.byHeight.delete(h);
    this.count -= b.logs.length;
  }

  /** Drops the oldest heights past the window or the log budget; the latter raises the floor. */
  private trim(): void {
    const lowest = this.newest - this.limits.blocks + 1;
    // Heights held below the window while fewer than `blocks` are held cost no more than a full window.
    if (this.count <= this.limits.logs && this.byHeight.size <= this.limits.blocks) return;
    const heights = [...this.byHeight.keys()].sort((a, b) => a - b);
    for (const h of heights) {
      if (h >= lowest && this.count <= this.limits.logs) break;
      if (this.count > this.limits.logs && h + 1 > this.floor) this.floor = h + 1;
      this.dropOne(h);
    }
  }
}
