// The threads of this test process as Linux lists them, for tests of thread priorities.
import { readdirSync, readFileSync } from 'node:fs';
import { getPriority } from 'node:os';

export interface ProcessThread {
  tid: number;
  /** The thread's name (/proc/self/task/<tid>/comm): `node`, `rocksdb:low`, ... */
  comm: string;
  /** Its nice value. */
  nice: number;
}

/** Every thread of this process now, with its name and nice value. */
export function processThreads(): ProcessThread[] {
  return readdirSync('/proc/self/task').map((tid) => ({
    tid: Number(tid),
    comm: readFileSync(`/proc/self/task/${tid}/comm`, 'latin1').trimEnd(),
    nice: getPriority(Number(tid)),
  }));
}
