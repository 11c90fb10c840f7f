// eth_call results at the newest height asked, shared by identical calls.
//
// A committed block is final (BFT: no reorgs) and eth_call is deterministic in (state at a height,
// the call's fields, the server's gas cap and timeout), so an identical call at the same height has
// the same answer. dApp front ends poll the same view calls (balanceOf, allowance, reserves) every
// block; answering repeats from here keeps them off the EVM. Calls at older heights, calls with state
// overrides and failed calls (errors, timeouts) are never kept; reverts are results and are kept.

/** Calls kept per height. */
export const CALL_CACHE_ENTRIES = 1024;
/** Keys (the call's fields) longer than this are not kept: large calldata is rarely repeated. */
export const CALL_CACHE_MAX_KEY = 4096;
/** Results whose return data is longer than this (hex characters) are not kept. */
export const CALL_CACHE_MAX_RESULT = 32_768;
/**
 * Scan guard. A client cycling through more distinct calls than the cache holds (balanceOf over
 * thousands of holders, say) gets no hit from a cache that keeps every new call: each entry is
 * pushed out before its call comes round again, and the churn only feeds the garbage collector
 * (docs/benchmarks.md, round 9). When fewer than 1 lookup in SCAN_ENTER hit over a window, only 1
 * miss in SCAN_ADMIT is kept, so the entries that are kept live long enough to be asked again;
 * once 1 lookup in SCAN_LEAVE hits, every miss is kept again.
 */
export const SCAN_ENTER = 8;
export const SCAN_LEAVE = 2;
export const SCAN_ADMIT = 16;

export interface CallCacheStats {
  hits: number;
  misses: number;
}

export class CallCache<T> {
  private height = -1n;
  private entries = new Map<string, Promise<T>>();
  readonly stats: CallCacheStats = { hits: 0, misses: 0 };
  /** Lookups and hits in the current window of the scan guard. */
  private windowLookups = 0;
  private windowHits = 0;
  private scanning = false;

  /**
   * @param size Returns the size of a result (hex characters of its return data) to weigh against
   * CALL_CACHE_MAX_RESULT.
   */
  constructor(
    private readonly size: (result: T) => number,
    private readonly maxEntries = CALL_CACHE_ENTRIES,
  ) {}

  /**
   * The result of `run()` for `key` at `height`: computed once while `height` is the newest height
   * asked, and shared by calls that arrive while it runs. A newer height empties the cache.
   */
  /** Forgets every result and the height (the chain went back: a height may come again). */
  reset(): void {
    this.entries = new Map();
    this.height = -1n;
  }

  get(height: bigint, key: string, run: () => Promise<T>): Promise<T> {
    if (height < this.height || key.length > CALL_CACHE_MAX_KEY) return run();
    if (height > this.height) {
      // A new map rather than clear(): V8 would give the cleared map's new table to the old
      // generation, where this long-lived map lives (see JournaledState).
      this.entries = new Map();
      this.height = height;
    }
    const kept = this.entries.get(key);
    this.observe(kept !== undefined);
    if (kept !== undefined) {
      this.stats.hits++;
      return kept;
    }
    this.stats.misses++;
    if (this.scanning && this.stats.misses % SCAN_ADMIT !== 0) return run();
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    const p = run();
    this.entries.set(key, p);
    const forget = () => {
      if (this.entries.get(key) === p) this.entries.delete(key);
    };
    p.then((r) => {
      if (this.size(r) > CALL_CACHE_MAX_RESULT) forget();
    }, forget);
    return p;
  }

  /**
   * Counts a lookup for the scan guard. A window is four times the cache's size (at least 1,024
   * lookups): under a scan the hits come in runs (the kept calls, asked in the scan's order), and
   * a shorter window could see only a run.
   */
  private observe(hit: boolean): void {
    this.windowLookups++;
    if (hit) this.windowHits++;
    if (this.windowLookups < Math.max(4 * this.maxEntries, 1024)) return;
    const hits = this.windowHits;
    const lookups = this.windowLookups;
    this.scanning = this.scanning ? hits * SCAN_LEAVE < lookups : hits * SCAN_ENTER < lookups;
    this.windowLookups = 0;
    this.windowHits = 0;
  }

  /** Whether the scan guard keeps only some misses now (for tests and metrics). */
  get sampling(): boolean {
    return this.scanning;
  }

  /** Entries held now (for tests and metrics). */
  get count(): number {
    return this.entries.size;
  }
}

/** The cache key of a call request: its fields, with hex case and number formatting made uniform. */
export function callKey(req: object): string {
  return JSON.stringify(req, (_k, v: unknown) =>
    typeof v === 'bigint' ? `n${v.toString(16)}` : v,
  ).toLowerCase();
}
