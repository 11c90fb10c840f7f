// The logs of the newest blocks, kept on the JSON-RPC thread so that eth_getLogs over recent blocks
// is answered there without a round trip to the chain's thread. Each block's logs arrive with its
// head (EthNewHead carries them for the subscriptions already); heights the edge never saw a head
// for (those before the thread started, or skipped by a state sync) are filled from the chain by a
// query with no criteria. A query is answered here only when every height of its range is held;
// otherwise it goes to the chain as before.
import type { EthLog, Hex, LogFilter } from '@noded/types';
import type { LogMatch } from './filters.js';
import { LogRuns, type RenderedLogs, renderLogs, withRuns } from './format.js';

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

/**
 * Where each address and each topic value (by position) stands in a block's logs: lowercased value
 * -> ascending positions in the block's `logs`.
 */
interface BlockIndex {
  addresses: Map<string, number[]>;
  /** By topic position. */
  topics: Array<Map<string, number[]>>;
  /** The fewest topics a log of the block has. */
  minTopics: number;
}

/** One block's logs, with their index. */
interface BlockLogs {
  logs: EthLog[];
  /** Built on the first query of the block. */
  index?: BlockIndex;
  /** The logs' JSON, rendered on the first query that matched one of them. */
  rendered?: RenderedLogs;
}

/** The criteria of a query, lowercased; an empty list becomes null (matches anything). */
function criteriaOf(filter: LogFilter): LogMatch {
  const topics = (filter.topics ?? []).map((t) => {
    if (t === null || t === undefined) return null;
    const list = (Array.isArray(t) ? t : [t]).map((x) => x.toLowerCase() as Hex);
    return list.length === 0 ? null : list;
  });
  return { addresses: (filter.addresses ?? []).map((a) => a.toLowerCase() as Hex), topics };
}

function put(index: Map<string, number[]>, k: string, i: number): void {
  const list = index.get(k);
  if (list === undefined) index.set(k, [i]);
  else list.push(i);
}

function indexOf(b: BlockLogs): BlockIndex {
  if (b.index !== undefined) return b.index;
  const index: BlockIndex = { addresses: new Map(), topics: [], minTopics: Number.POSITIVE_INFINITY };
  b.logs.forEach((l, i) => {
    if (l.topics.length < index.minTopics) index.minTopics = l.topics.length;
    put(index.addresses, l.address.toLowerCase(), i);
    l.topics.forEach((t, p) => {
      let m = index.topics[p];
      if (m === undefined) {
        m = new Map();
        index.topics[p] = m;
      }
      put(m, t.toLowerCase(), i);
    });
  });
  b.index = index;
  return index;
}

const NONE: readonly number[] = [];

/** The positions holding any of `values` (ascending, each once). */
function anyOf(index: Map<string, number[]> | undefined, values: readonly string[]): readonly number[] {
  if (index === undefined) return NONE;
  if (values.length === 1) return index.get(values[0]!) ?? NONE;
  const lists: number[][] = [];
  for (const v of values) {
    const hit = index.get(v);
    if (hit !== undefined && !lists.includes(hit)) lists.push(hit);
  }
  if (lists.length <= 1) return lists[0] ?? NONE;
  return [...new Set(lists.flat())].sort((x, y) => x - y);
}

/** The positions in both ascending lists. */
function both(a: readonly number[], b: readonly number[]): readonly number[] {
  if (a === b) return a;
  const out: number[] = [];
  for (let i = 0, j = 0; i < a.length && j < b.length; ) {
    if (a[i]! < b[j]!) i++;
    else if (a[i]! > b[j]!) j++;
    else {
      out.push(a[i]!);
      i++;
      j++;
    }
  }
  return out;
}

/**
 * The positions in `b` of the logs that match `c` (ascending), from the index alone: the positions
 * of each criterion intersected, the fewest first, and a log with fewer topics than the query has
 * positions left out (as logMatches: a wildcard position needs a topic too); undefined when the
 * query names nothing and every log of the block matches. The topic positions past the first are
 * looked up first (an indexed argument such as a Transfer's receiver: most blocks have none of it).
 */
function matching(b: BlockLogs, c: LogMatch): readonly number[] | undefined {
  const need = c.topics.length;
  const index = indexOf(b);
  const lists: Array<readonly number[]> = [];
  for (let p = need - 1; p >= 0; p--) {
    const values = c.topics[p];
    if (values === null || values === undefined) continue;
    const at = anyOf(index.topics[p], values);
    if (at.length === 0) return at;
    lists.push(at);
  }
  if (c.addresses.length > 0) {
    const at = anyOf(index.addresses, c.addresses);
    if (at.length === 0) return at;
    lists.push(at);
  }
  let out: readonly number[] | undefined;
  if (lists.length > 0) {
    if (lists.length > 1) lists.sort((x, y) => x.length - y.length);
    out = lists[0]!;
    // A list naming every log of the block (a token's address in its own busy block) changes nothing.
    for (let k = 1; k < lists.length && out.length > 0; k++)
      if (lists[k]!.length < b.logs.length) out = both(out, lists[k]!);
  }
  if (need <= index.minTopics) return out;
  const logs = b.logs;
  return (out ?? logs.map((_, i) => i)).filter((i) => logs[i]!.topics.length >= need);
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
   * The logs of [from, to] (by default the filter's range) that match, in order, at most
   * `filter.limit`; undefined when a height of the range is not held (ask the chain). The list
   * carries its blocks' rendered JSON for format.ts logsJson (withRuns).
   */
  query(filter: LogFilter, fromBlock = filter.fromBlock, toBlock = filter.toBlock): EthLog[] | undefined {
    const from = fromBlock < 0n ? 0 : Number(fromBlock);
    const to = Number(toBlock);
    for (let h = from; h <= to; h++) if (!this.byHeight.has(h)) return undefined;
    const c = criteriaOf(filter);
    const limit = filter.limit ?? Number.POSITIVE_INFINITY;
    const out: EthLog[] = [];
    const runs = new LogRuns();
    for (let h = from; h <= to && out.length < limit; h++) {
      const b = this.byHeight.get(h)!;
      const logs = b.logs;
      if (logs.length === 0) continue;
      const picked = matching(b, c);
      const n = picked === undefined ? logs.length : picked.length;
      if (n === 0) continue;
      b.rendered ??= renderLogs(logs);
      for (let k = 0; k < n && out.length < limit; k++) {
        const i = picked === undefined ? k : picked[k]!;
        out.push(logs[i]!);
        runs.add(b.rendered, i);
      }
    }
    return withRuns(out, runs);
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
