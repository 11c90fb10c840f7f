// Heap caps of the node's two worker threads (the JSON-RPC thread, rpc-edge/thread.ts, and the
// transaction indexer, indexer-thread/thread.ts). Without them each worker isolate gets V8's defaults
// of a main thread, among them an old generation as large as the main thread's. docs/reliability.md
// ("Bounded memory") has the figures.
import type { ResourceLimits } from 'node:worker_threads';

/**
 * Both workers: a 48 MB young generation (V8's own size for a main thread: semi-spaces of 16 MB) and a
 * 512 MB old generation. The old generation of the JSON-RPC thread holds connections, filters,
 * subscriptions and the replies being written; that of the indexer one block's transactions at a time:
 * tens of MB at the largest loads measured, so 512 MB is a ceiling against a runaway, not a working size.
 * The young generation was 8 MB from 2026-11-27: it kept 18-21 MB of RSS off the node after a load, for
 * about 11-13% more node CPU per value transfer (more scavenges). Since the idle reclaim
 * (idle-reclaim.ts) gives a quiet thread's young generation back, the full size costs no memory after a
 * load and the CPU is kept (docs/benchmarks.md, "The workers' young generation again").
 */
export const WORKER_LIMITS: Readonly<ResourceLimits> = Object.freeze({
  maxYoungGenerationSizeMb: 48,
  maxOldGenerationSizeMb: 512,
});

/**
 * The error to stop the node with when a worker failed: a worker that reached its heap cap says which
 * thread, and the cap, instead of Node's bare "reached memory limit".
 */
export function workerFailure(thread: string, err: Error & { code?: string }, limits: ResourceLimits): Error {
  if (err.code === 'ERR_WORKER_OUT_OF_MEMORY')
    return new Error(
      `the ${thread} thread ran out of memory: its heap reached the cap of ${limits.maxOldGenerationSizeMb ?? '?'} MB old + ${limits.maxYoungGenerationSizeMb ?? '?'} MB young generation (${err.message})`,
    );
  return new Error(`the ${thread} thread failed: ${err.message}`);
}
