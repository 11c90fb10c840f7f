// Resident memory of a node process and its descendants, read from /proc/<pid>/status (Linux).
import { readdirSync, readFileSync } from 'node:fs';

export interface MemorySample {
  /** Sum of VmRSS over the process tree, in MB (10^6 bytes; /proc reports KiB). */
  rssMB: number;
  /** Sum of VmHWM (peak resident size) over the process tree, in MB. */
  peakMB: number;
  pids: number[];
}

function statusKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

function parentOf(pid: number): number {
  try {
    // The command name (field 2) may hold spaces and parentheses; the parent pid follows the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return -1;
  }
}

/** The pid and every descendant that is alive now. */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    const ppid = parentOf(pid);
    const list = children.get(ppid) ?? [];
    list.push(pid);
    children.set(ppid, list);
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length > 0 && out.length < 10_000) {
    const pid = queue.shift()!;
    out.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

export function sampleMemory(pid: number): MemorySample {
  const pids = processTree(pid);
  let rss = 0;
  let peak = 0;
  for (const p of pids) {
    rss += statusKiB(p, 'VmRSS');
    peak += statusKiB(p, 'VmHWM');
  }
  return { rssMB: (rss * 1024) / 1e6, peakMB: (peak * 1024) / 1e6, pids };
}
