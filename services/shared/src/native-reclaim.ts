// Gives back the native memory a load left behind once the thread that did the writing has gone quiet
// (idle-reclaim.ts calls it): RocksDB flushes a memtable only when it is full, so a quiet database
// keeps its last writes in memory (up to half its budget: 16 MiB of a 32 MiB one) until the next load;
// its block cache keeps the blocks the load read (up to its size, 2-8 MiB a database) until evicted;
// and glibc keeps the freed blocks of a load (RocksDB's table reads, Buffers) inside its heaps, which
// only malloc_trim gives back from their middle. Measured in docs/reliability.md, "Bounded memory".
import { mallocInfo, mallocTrim, nativeStatus } from '@noded/native';
import type { Logger } from '@noded/types';

/**
 * A database whose memtables can be flushed and block cache emptied: a RocksKV, or one in another
 * thread (IndexerThread).
 */
export interface Flushable {
  readonly location: string;
  flushMemtables(minBytes?: number): boolean | Promise<boolean>;
  /** Bytes freed from the block cache; 0 when it held under minBytes. */
  evictBlockCache(minBytes?: number): number | Promise<number>;
}

export interface NativeReclaimOptions {
  /** Memtables under this many bytes are left as they are (a flush writes a table file). */
  minMemtableBytes: number;
  /** Block caches holding under this many bytes are left as they are. */
  minCacheBytes: number;
  /** How long after the flushes are scheduled malloc_trim runs, ms: they free their memory when done. */
  trimDelayMs: number;
}

/**
 * 1 MiB: an idle chain-local node writes a few KB a block, and its block caches hold 0.1-0.5 MB.
 * 3 s: flushing a 16 MiB memtable took 0.1-0.5 s here.
 */
export const defaultNativeReclaimOptions: NativeReclaimOptions = {
  minMemtableBytes: 1 << 20,
  minCacheBytes: 1 << 20,
  trimDelayMs: 3_000,
};

/** Logs once whether the add-on is there, so an operator knows which reclaim runs. */
export function logNativeStatus(log: Logger): void {
  const s = nativeStatus();
  if (s.loaded && s.flush)
    log.debug('native memory reclaim available (memtable flush, block cache eviction, malloc_trim)');
  else
    log.warn(
      { reason: s.reason },
      'native memory reclaim partly off: memory comes back more slowly after load',
    );
}

/**
 * Returns an `onQuiet` for startIdleReclaim: schedules a flush of each database's memtables, empties
 * its block cache of what no reader holds, then (trimDelayMs later, off the thread's critical path)
 * malloc_trim. The first reads after the quiet go to the table files (docs/reliability.md has the
 * cost: "Block caches emptied when quiet"). Errors are logged, never thrown: a
 * refused flush costs memory, not data (the writes are in the WAL and the memtable as before).
 */
export function nativeReclaim(
  databases: () => Flushable[],
  log: Logger,
  options: Partial<NativeReclaimOptions> = {},
): () => void {
  const o = { ...defaultNativeReclaimOptions, ...options };
  return () => {
    void (async () => {
      const flushed: string[] = [];
      let evicted = 0;
      await Promise.all(
        databases().map(async (db) => {
          try {
            if (await db.flushMemtables(o.minMemtableBytes)) flushed.push(db.location);
          } catch (err) {
            log.warn({ db: db.location, err: (err as Error).message }, 'memtable flush refused');
          }
          try {
            evicted += await db.evictBlockCache(o.minCacheBytes);
          } catch (err) {
            log.warn({ db: db.location, err: (err as Error).message }, 'block cache eviction refused');
          }
        }),
      );
      // Nothing flushed or evicted: nothing new freed since the last call (a quiet node is asked every
      // 15 s).
      if (flushed.length === 0 && evicted === 0) return;
      const timer = setTimeout(() => {
        const before = process.memoryUsage.rss();
        const trimmed = mallocTrim();
        log.debug(
          {
            flushed,
            evictedMB: +(evicted / 1e6).toFixed(1),
            trimmed,
            rssBeforeMB: +(before / 1e6).toFixed(1),
            rssAfterMB: +(process.memoryUsage.rss() / 1e6).toFixed(1),
          },
          'the node went quiet: native memory given back',
        );
      }, o.trimDelayMs);
      timer.unref();
    })();
  };
}

export interface BusyTrimOptions {
  /** How often glibc's heaps are looked at, ms. */
  everyMs: number;
  /** malloc_trim runs only when the heaps hold at least this many free bytes. */
  minFreeBytes: number;
}

/**
 * Once a minute, 16 MiB. A 60-minute soak (docs/reliability.md, "glibc's heaps under a load that never
 * pauses") saw glibc's heaps grow about 28 MB an hour under a steady load, free pages between live
 * blocks given back only once the node went quiet. mallinfo2 keeps counting pages malloc_trim gave
 * back as free, so a heap that once had 16 MiB free is trimmed at every look: measured in a child
 * process, a heap of 71 MB with 34 MB free took 13.7 ms to give 25 MB back, then 1.7-1.9 ms a look
 * with nothing left to give.
 */
export const defaultBusyTrimOptions: BusyTrimOptions = { everyMs: 60_000, minFreeBytes: 16 << 20 };

/**
 * Gives glibc's free pages back while the node is busy too: every `everyMs`, when mallinfo2 says the
 * heaps hold at least `minFreeBytes` free (resident or already given back), malloc_trim(0). A load that never pauses otherwise keeps
 * every page its freed buffers left until it ends. Returns the stop function; undefined (nothing
 * started) without the add-on.
 */
export function startBusyTrim(log: Logger, options: Partial<BusyTrimOptions> = {}): (() => void) | undefined {
  const o = { ...defaultBusyTrimOptions, ...options };
  if (mallocInfo() === undefined) return undefined;
  const timer = setInterval(() => {
    const info = mallocInfo();
    if (info === undefined || info.free < o.minFreeBytes) return;
    const started = performance.now();
    const before = process.memoryUsage.rss();
    mallocTrim();
    log.debug(
      {
        heapMB: +(info.heap / 1e6).toFixed(1),
        freeMB: +(info.free / 1e6).toFixed(1),
        rssBeforeMB: +(before / 1e6).toFixed(1),
        rssAfterMB: +(process.memoryUsage.rss() / 1e6).toFixed(1),
        ms: +(performance.now() - started).toFixed(2),
      },
      "glibc's free pages given back under load",
    );
  }, o.everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
