// V8 settings a long-running node process gives itself before it starts its threads (V8's flags
// are the process's: they hold for the main thread and every worker alike).
//
// Allocation-site pretenuring off. V8 watches which object and array literals make objects that
// survive young-generation collections and, once a literal's survival rate is high, allocates its
// objects straight into the old generation. A load of held requests (eth_sendRawTransaction
// waiting on admission, receipts polled for) makes the JSON-RPC server's per-request literals look
// long-lived; after the load the same literals made short-lived objects in the old generation, and
// the JSON-RPC thread ran two or three mark-compacts a second under reads (each ~15 ms of marking
// plus its helper threads' CPU), where a fresh node ran none: eth_blockNumber's p99 at 32
// connections went from 1.1 to 6.7-7.4 ms. With the flag the same reads after the same load ran
// no mark-compact and a p99 of 1.9 ms (docs/benchmarks.md, "The JSON POST front").
import { setFlagsFromString } from 'node:v8';

/** The flags, as `node` would take them on its command line. */
export const SERVER_V8_FLAGS = ['--no-allocation-site-pretenuring'] as const;

/** Sets SERVER_V8_FLAGS on this process; call it before any worker thread starts. */
export function applyServerV8Flags(): void {
  for (const flag of SERVER_V8_FLAGS) setFlagsFromString(flag);
}
