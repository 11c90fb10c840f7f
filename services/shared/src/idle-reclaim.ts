// Gives a thread's grown V8 heap back once the thread has gone quiet after being busy. After a load,
// V8 keeps the heap pages it grew into until its memory reducer runs, and the reducer starts only
// after a major collection: a minute after 5-minute soaks the main heap was 1.6-12.8 MB over idle
// when it had run and 24.6-35.7 MB when it had not (docs/reliability.md, "Bounded memory"). Each
// thread (the main one, the JSON-RPC thread, the indexer) runs one of these: every few seconds it
// reads the thread's event-loop utilisation; after a busy interval and then a run of quiet ones, if
// the heap's physical size is well over the smallest it has been, it runs a full collection twice,
// which frees the empty pages and then the sparse ones; the next collection waits for the thread to
// be busy again. Every run of quiet readings, collected or not, is handed to `onQuiet`
// (native-reclaim.ts: RocksDB's memtables and glibc's heaps).
//
// A thread that is never quiet and never busy enough for V8 to collect its old generation (the
// JSON-RPC thread at 6-13% under the soak's steady load: in a 30-minute soak V8 ran no major
// collection of its own there, its old generation growing by what each scavenge promoted, and its
// committed pages with it; the sweep ran 28, 65 s apart) is swept: when no major collection has
// happened for sweepAfterMs and the old generation grew by sweepGrowthBytes since the last one, the
// same double collection runs, loaded or not.
import { performance } from 'node:perf_hooks';
import { getHeapSpaceStatistics, getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Logger } from '@noded/types';

export interface IdleReclaimOptions {
  /** How often the thread's load is read, ms. */
  intervalMs: number;
  /** An interval whose event-loop utilisation is under this counts as quiet. */
  quietUtilization: number;
  /**
   * An interval under this fraction of the busiest one since the last collection counts as quiet too:
   * on a machine whose other work slows every callback, a quiet thread's utilisation is well over
   * its quiet-machine figure, but still well under what its load took.
   */
  quietFraction: number;
  /** Quiet intervals in a row before a collection. */
  quietIntervals: number;
  /** Growth of the heap's physical size over the smallest it has been that is worth a collection, bytes. */
  minGrowthBytes: number;
  /** The steady-load sweep: this long without a major collection (V8's or ours), ms; 0: no sweep. */
  sweepAfterMs: number;
  /** ... and the old generation grown by this much since it, bytes. */
  sweepGrowthBytes: number;
  /**
   * Called after every run of `quietIntervals` quiet readings (after the collection, if one ran),
   * loaded before or not: for native memory writes left behind (native-reclaim.ts), which a load too
   * light to arm the collection leaves as well.
   */
  onQuiet?: () => void;
  /**
   * The thread's busy share since the previous reading, 0-1. Default: its event-loop utilisation,
   * which counts wall time, so other work on the machine inflates it; a test that must know the
   * readings (which thresholds arm a collection) gives its own.
   */
  utilization?: () => number;
}

/**
 * 5 s readings, 15 s under 25% busy (or under half the busiest reading since the last collection),
 * 4 MB grown. Measured event-loop utilisation (a chain-local node, 2 shared cores): the main thread
 * 1.5-20% idle (the higher figures on a busy machine) and 12-79% under the soak's load; the JSON-RPC
 * thread under 0.1% idle and 6-13% loaded; the indexer under 0.2% idle and 1.5-3.5% loaded (each
 * reading tagged by its thread's own module, 2026-11-29; that morning's notes had the two workers
 * swapped). On a machine at load average 45-55 the main thread's heap was still 20-33 MB over idle a
 * minute after soaks, where 25% alone was rarely seen (docs/reliability.md, "Bounded memory"): half
 * its loaded figure is.
 * Readings under 25% in a load also count as quiet, and each such run hands onQuiet a flush of the
 * memtables: with 10% here (tried 2026-11-29) the load's memtables filled to their budgets between
 * flushes instead, and a 30-minute soak's RSS swung by 40 MB. A collection taken for quiet costs two
 * full collections of these heaps (20-60 ms each), and the next waits for 4 MB more growth.
 */
export const defaultIdleReclaimOptions: IdleReclaimOptions = {
  intervalMs: 5_000,
  quietUtilization: 0.25,
  quietFraction: 0.5,
  quietIntervals: 3,
  minGrowthBytes: 4 << 20,
  sweepAfterMs: 60_000,
  sweepGrowthBytes: 2 << 20,
};

/**
 * The two worker threads' (JSON-RPC, tx indexer): 1% busy. Read every 5 s in a 30-minute soak
 * (2026-11-29, each reading tagged by its thread): idle, both at 0.04-0.2%; under the soak's load the
 * JSON-RPC thread at 6-13% and the indexer at only 1.5-3.5%, which the 3% these had before missed in
 * part. The main thread's 25% is further off still.
 */
export const workerIdleReclaimOptions: Partial<IdleReclaimOptions> = { quietUtilization: 0.01 };

export interface Reclaimed {
  /** The heap's physical size before and after the collection, bytes. */
  before: number;
  after: number;
  ms: number;
  /** The steady-load sweep took it, not a quiet spell. */
  sweep?: true;
}

export interface IdleReclaim {
  stop(): void;
  /** Collections run so far. */
  count(): number;
}

type Collect = () => void;

/** A debug line per collection: which thread, the heap's physical size before and after, how long. */
export function logReclaim(log: Logger, thread: string): (r: Reclaimed) => void {
  return (r) =>
    log.debug(
      {
        thread,
        beforeMB: +(r.before / 1e6).toFixed(1),
        afterMB: +(r.after / 1e6).toFixed(1),
        ms: Math.round(r.ms),
      },
      r.sweep
        ? 'no major collection for a while under load: heap swept'
        : 'the thread went quiet: heap collected',
    );
}

/**
 * V8's collection function. Node hands it out only with `--expose-gc` on the command line, which the
 * Docker image, `make local` and every test would have to pass; setting the flag at run time makes V8
 * install `gc` in contexts created afterwards, so one is created here to take it from. The flag stays
 * on (as with the command-line flag): turning it off again could race with another thread doing this.
 */
function collector(): Collect | undefined {
  const own = (globalThis as { gc?: unknown }).gc;
  if (typeof own === 'function') return own as Collect;
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('typeof gc === "function" ? gc : undefined') as unknown;
  return typeof gc === 'function' ? (gc as Collect) : undefined;
}

/** Bytes used in V8's old space (what a scavenge promotes into and only a major collection frees). */
function oldSpaceUsed(): number {
  for (const sp of getHeapSpaceStatistics()) if (sp.space_name === 'old_space') return sp.space_used_size;
  return 0;
}

/**
 * Starts watching this thread (its timer does not keep the thread alive). `onReclaim` hears about each
 * collection. Returns undefined if this V8 gives no collection function.
 */
export function startIdleReclaim(
  onReclaim: (r: Reclaimed) => void = () => {},
  options: Partial<IdleReclaimOptions> = {},
): IdleReclaim | undefined {
  const o = { ...defaultIdleReclaimOptions, ...options };
  const gc = collector();
  if (gc === undefined) return undefined;
  let last = performance.eventLoopUtilization();
  const utilization =
    o.utilization ??
    (() => {
      const now = performance.eventLoopUtilization();
      const u = performance.eventLoopUtilization(now, last).utilization;
      last = now;
      return u;
    });
  let quiet = 0;
  // Armed by a busy interval, spent by a collection: one collection per load, however long the quiet.
  let armed = false;
  // The busiest interval since the last collection: under quietFraction of it is quiet.
  let peak = 0;
  let lowest = Number.POSITIVE_INFINITY;
  let count = 0;
  // The old generation's used size after the last major collection, and when that was. Between two
  // major collections it only grows (scavenges promote into it), so a reading below the one before
  // means V8 ran one: its clock restarts there, even when the survivors left more than before.
  let oldFloor = oldSpaceUsed();
  let oldFloorAt = performance.now();
  let oldBefore = oldFloor;
  /**
   * One reclaim, two full collections (the sweep's or a quiet one): counted, reported, the sweep's
   * clock restarted.
   */
  const collect = (before: number, sweep: boolean) => {
    const started = performance.now();
    // Twice: the first collection finds what died, but it picks the pages to compact from what
    // their live bytes were before, so it frees only the pages left empty; the second, knowing each
    // page's live bytes, moves the survivors off the sparse ones and gives those back. Measured (a
    // 20-minute soak, the main thread and the indexer): the second gave 0.5-2.9 MB more of old space,
    // mostly about 2; a third seldom more (0.5 and 1.0 MB, twice); 20-60 ms each.
    gc();
    gc();
    count++;
    oldFloor = oldSpaceUsed();
    oldBefore = oldFloor;
    oldFloorAt = performance.now();
    const after = getHeapStatistics().total_physical_size;
    onReclaim(
      sweep
        ? { before, after, ms: oldFloorAt - started, sweep }
        : { before, after, ms: oldFloorAt - started },
    );
  };
  const timer = setInterval(() => {
    const busy = utilization();
    const old = oldSpaceUsed();
    const fell = old < oldBefore;
    oldBefore = old;
    if (fell) {
      oldFloor = old;
      oldFloorAt = performance.now();
    } else if (
      o.sweepAfterMs > 0 &&
      performance.now() - oldFloorAt >= o.sweepAfterMs &&
      old - oldFloor >= o.sweepGrowthBytes
    )
      collect(getHeapStatistics().total_physical_size, true);
    const size = getHeapStatistics().total_physical_size;
    lowest = Math.min(lowest, size);
    peak = Math.max(peak, busy);
    if (busy >= Math.max(o.quietUtilization, peak * o.quietFraction)) {
      armed = true;
      quiet = 0;
      return;
    }
    quiet++;
    if (quiet < o.quietIntervals) return;
    quiet = 0;
    if (armed) {
      armed = false;
      peak = 0;
      if (size - lowest >= o.minGrowthBytes) collect(size, false);
    }
    // Native memory does not show in the heap's size, and a light load (the main thread under
    // quietUtilization throughout) never arms the collection above: onQuiet hears of every run of
    // quiet intervals and gives back what there is (native-reclaim.ts: memtables over 1 MiB;
    // nothing when nothing was written).
    o.onQuiet?.();
    last = performance.eventLoopUtilization();
  }, o.intervalMs);
  timer.unref();
  return {
    stop: () => clearInterval(timer),
    count: () => count,
  };
}
