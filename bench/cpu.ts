// CPU time of the node under test (its whole process tree, every thread) and of this bench process,
// so a burst can say how much CPU each transaction cost and how busy the machine's cores were.
import { readFileSync } from 'node:fs';
import { processTree } from './memory.js';

/** Linux reports utime/stime in clock ticks of 1/100 s (USER_HZ) on every architecture Node runs on. */
const TICK_MS = 10;

export interface CpuSample {
  /** CPU time (user + system) of the node's process tree so far, ms (every process of a cluster). */
  nodeMs: number;
  /** The same per process of the node (a cluster's nats-server, executor, ...), ms. */
  perProcess: Record<string, number>;
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

function treeCpuMs(pid: number): number {
  let ticks = 0;
  for (const p of processTree(pid)) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      // Fields after the command name: state is field 3, utime 14, stime 15 (1-based).
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]);
    } catch {
      // The process exited between the listing and the read.
    }
  }
  return ticks * TICK_MS;
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
    const u = process.cpuUsage();
    return { nodeMs, perProcess, clientMs: (u.user + u.system) / 1000, at: performance.now() };
  };
}

/**
 * CPU ms per 1,000 requests (or transactions) between two samples: each node process, `all` (their
 * sum) and `generator` (this bench process: the load generator's threads).
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
