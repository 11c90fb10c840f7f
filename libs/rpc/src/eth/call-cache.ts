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

export interface CallCacheStats {
  hits: number;
  misses: number;
}

export class CallCache<T> {
  private height = -1n;
  private entries = new Map<string, Promise<T>>();
  readonly stats: CallCacheStats = { hits: 0, misses: 0 };

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
  get(height: bigint, key: string, run: () => Promise<T>): Promise<T> {
    if (height < this.height || key.length > CALL_CACHE_MAX_KEY) return run();
    if (height > this.height) {
      // A new map rather than clear(): V8 would give the cleared map's new table to the old
      // generation, where this long-lived map lives (see JournaledState).
      this.entries = new Map();
      this.height = height;
    }
    const kept = this.entries.get(key);
    if (kept !== undefined) {
      this.stats.hits++;
      return kept;
    }
    this.stats.misses++;
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
