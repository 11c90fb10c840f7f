// CPU time of the node under test (its whole process tree, every thread) and of this bench process,
// so a burst can say how much CPU each transaction cost and how busy the machine's cores were.
import { readdirSync, readFileSync } from 'node:fs';
import { processTree } from './memory.js';

/** Linux reports utime/stime in clock ticks of 1/100 s (USER_HZ) on every architecture Node runs on. */
const TICK_MS = 10;

export interface CpuSample {
  /** CPU time (user + system) of the node's process tree so far, ms (every process of a cluster). */
  nodeMs: number;
  /** The same per process of the node (a cluster's nats-server, executor, ...), ms. */
  perProcess: Record<string, number>;
  /**
   * For a node of one process: CPU time of its main thread (`main-thread`) and of RocksDB's
   * background threads (`rocksdb`: compaction and flush threads, `rocksdb:low`/`rocksdb:high`), ms.
   */
  threads?: Record<string, number>;
  /** CPU time of this bench process so far, ms. */
  clientMs: number;
  /** performance.now() when taken. */
  at: number;
}

export interface CpuUse {
  /** CPU time of the node per transaction included in a block, ms. */
  nodeMsPerTx: number;
  /** CPU time of the bench (signing done beforehand; HTTP, JSON, the block watcher) per transaction, ms. */
  clientMsPerTx: number;
  /** (node + bench CPU time) / wall time: how many of the machine's cores the two kept busy. */
  coresBusy: number;
}

/** utime + stime of a /proc stat file, ticks (fields 14 and 15, after the command name). */
function statTicks(path: string): number {
  const stat = readFileSync(path, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(f[11]) + Number(f[12]);
}

function treeCpuMs(pid: number): number {
  let ticks = 0;
  for (const p of processTree(pid)) {
    try {
      ticks += statTicks(`/proc/${p}/stat`);
    } catch {
      // The process exited between the listing and the read.
    }
  }
  return ticks * TICK_MS;
}

/**
 * The main thread of `pid` and the RocksDB background threads of its tree, ms. Threads are told
 * apart by name (/proc/<pid>/task/<tid>/comm): RocksDB names its pools' threads `rocksdb:low`
 * (compaction) and `rocksdb:high` (flush); Node's own threads are all `node`.
 */
export function threadCpuMs(pid: number): Record<string, number> {
  let rocks = 0;
  let main = 0;
  for (const p of processTree(pid)) {
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${p}/task`);
    } catch {
      continue; // exited
    }
    for (const tid of tids) {
      try {
        if (p === pid && tid === String(pid)) main = statTicks(`/proc/${p}/task/${tid}/stat`);
        else if (readFileSync(`/proc/${p}/task/${tid}/comm`, 'utf8').startsWith('rocksdb:'))
          rocks += statTicks(`/proc/${p}/task/${tid}/stat`);
      } catch {
        // The thread ended between the listing and the read.
      }
    }
  }
  return { 'main-thread': main * TICK_MS, rocksdb: rocks * TICK_MS };
}

/** A process of the node under test, by the name its CPU is reported under. */
export interface NodeProcess {
  name: string;
  pid: number;
}

/** Samples the CPU of one node process tree, or of each process of a cluster (summed in nodeMs). */
export function cpuSampler(node: number | readonly NodeProcess[]): () => CpuSample {
  const procs = typeof node === 'number' ? [{ name: 'all', pid: node }] : node;
  return () => {
    const perProcess: Record<string, number> = {};
    let nodeMs = 0;
    for (const p of procs) {
      const ms = treeCpuMs(p.pid);
      perProcess[p.name] = ms;
      nodeMs += ms;
    }
    const threads = typeof node === 'number' ? threadCpuMs(node) : undefined;
    const u = process.cpuUsage();
    return { nodeMs, perProcess, threads, clientMs: (u.user + u.system) / 1000, at: performance.now() };
  };
}

/**
 * CPU ms per 1,000 requests (or transactions) between two samples: each node process, `all` (their
 * sum) and `generator` (this bench process: the load generator's threads); for a node of one
 * process also its `main-thread` and its `rocksdb` background threads (parts of `all`).
 */
export function cpuPer1k(
  from: CpuSample,
  to: CpuSample,
  requests: number,
): Record<string, number> | undefined {
  if (requests <= 0) return undefined;
  const out: Record<string, number> = {};
  for (const [name, ms] of Object.entries(to.perProcess))
    out[name] = ((ms - (from.perProcess[name] ?? 0)) * 1000) / requests;
  for (const [name, ms] of Object.entries(to.threads ?? {}))
    if (from.threads?.[name] !== undefined) out[name] = ((ms - from.threads[name]) * 1000) / requests;
  out.all = ((to.nodeMs - from.nodeMs) * 1000) / requests;
  out.generator = ((to.clientMs - from.clientMs) * 1000) / requests;
  return out;
}

export function cpuUse(from: CpuSample, to: CpuSample, txs: number): CpuUse | undefined {
  const wall = to.at - from.at;
  if (txs <= 0 || wall <= 0) return undefined;
  const node = to.nodeMs - from.nodeMs;
  const client = to.clientMs - from.clientMs;
  return { nodeMsPerTx: node / txs, clientMsPerTx: client / txs, coresBusy: (node + client) / wall };
}
