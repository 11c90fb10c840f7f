// Heap caps of the node's two worker threads (the JSON-RPC thread, rpc-edge/thread.ts, and the
// transaction indexer, indexer-thread/thread.ts). Without them each worker isolate gets V8's defaults
// of a main thread: a young generation that grows to 16 MiB semi-spaces under load and is not given
// back while the thread lives (36-44 MB physical for 8-20 MB used on the JSON-RPC thread), and an old
// generation as large as the main thread's. docs/reliability.md ("Bounded memory") has the figures.
import type { ResourceLimits } from 'node:worker_threads';

/**
 * Both workers: an 8 MB young generation (V8 semi-spaces of about 2.7 MB) and a 512 MB old
 * generation. The old generation of the JSON-RPC thread holds connections, filters, subscriptions and
 * the replies being written; that of the indexer one block's transactions at a time: tens of MB at
 * the largest loads measured, so 512 MB is a ceiling against a runaway, not a working size.
 * Measured: 18-21 MB less RSS a minute after a 5-minute soak, for about 12% more CPU per transfer in
 * the sustained bench (more scavenges); 16 MB kept more memory and did not get the CPU back.
 */
export const WORKER_LIMITS: Readonly<ResourceLimits> = Object.freeze({
  maxYoungGenerationSizeMb: 8,
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
