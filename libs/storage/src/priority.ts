// CPU priority of storage's background threads. Under a load on a machine with few cores the node's
// threads want more CPU than there is, and the kernel shares it out by weight: at equal weights
// RocksDB's compaction and the transaction indexer took their shares from the main thread, which
// every block and every admission waits on (docs/benchmarks.md, "The main thread's share of two cores"). A higher nice value lowers
// only a thread's weight when threads compete; alone on a core it still runs at full speed. Lowering
// is always allowed; raising back needs CAP_SYS_NICE, so nothing here ever raises a priority.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/**
 * The nice value of RocksDB's compaction threads: weight 110 against a normal thread's 1,024, so
 * under contention they get about a tenth of a core's share, and all of an idle core. RocksDB's own
 * Env::LowerThreadPoolCPUPriority, which the binding does not expose, goes further (nice 19).
 */
export const COMPACTION_NICE = 10;

/**
 * The nice value of the transaction indexer's thread (tx_index.db): it writes each committed block's
 * index behind the chain, so under contention it may fall a block or two behind (measured: 180 ms on
 * average, at most 1.5 s, during a 60 s load that kept both cores busy), never ahead of anything that
 * waits for it.
 */
export const INDEXER_NICE = 10;

/** RocksDB names the threads of its low-priority pool (compactions) so; `rocksdb:high` flushes. */
const COMPACTION_THREAD = 'rocksdb:low';

/**
 * Sets thread `tid` of this process to `nice` unless its nice value is that or more already. false when the
 * thread is gone or the system refuses (no such call on this platform).
 */
function lowerThread(tid: number, nice: number): boolean {
  try {
    if (getPriority(tid) >= nice) return false;
    setPriority(tid, nice);
    return true;
  } catch {
    return false;
  }
}

/**
 * Lowers every thread of this process whose name (Linux's /proc/self/task/<tid>/comm) is `name` to
 * `nice`, and returns how many it lowered. 0 where /proc is missing: the priority is an
 * optimisation, never a condition of running.
 */
export function lowerThreadsNamed(name: string, nice: number): number {
  let tids: string[];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    return 0;
  }
  let lowered = 0;
  for (const tid of tids) {
    let comm: string;
    try {
      comm = readFileSync(`/proc/self/task/${tid}/comm`, 'latin1').trimEnd();
    } catch {
      continue; // the thread ended meanwhile
    }
    if (comm === name && lowerThread(Number(tid), nice)) lowered++;
  }
  return lowered;
}

/**
 * Lowers the calling thread (a worker thread's own, or the main thread's) to `nice`. false where
 * Linux's /proc/thread-self is missing or the system refuses.
 */
export function lowerThisThread(nice: number): boolean {
  let link: string;
  try {
    link = readlinkSync('/proc/thread-self');
  } catch {
    return false;
  }
  const tid = Number(link.slice(link.lastIndexOf('/') + 1));
  return Number.isSafeInteger(tid) && tid > 0 && lowerThread(tid, nice);
}

/**
 * RocksDB's compaction threads at COMPACTION_NICE. Its thread pools belong to the process (one Env
 * for every database) and grow when a database opens, so RocksKV.open calls this after each open.
 */
export function lowerCompactionThreads(): number {
  return lowerThreadsNamed(COMPACTION_THREAD, COMPACTION_NICE);
}
