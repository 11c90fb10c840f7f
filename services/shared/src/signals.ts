// How a long-running process (the all-in-one node, a service) reads repeated stop signals.

/**
 * A stop signal within this long of the first is the same request delivered twice, not a second one:
 * a terminal's Ctrl-C (the whole process group) and a service manager's stop (the whole cgroup) reach
 * both bin/noded.js's first process, which passes signals on (malloc-env.ts), and the node itself.
 * A later one still means "stop now, without waiting".
 */
export const REPEATED_SIGNAL_MS = 1000;

/**
 * Stops the process on SIGINT or SIGTERM: the first runs `stop`, then exits 0 (1 when `stop`
 * failed); the same signal delivered twice within REPEATED_SIGNAL_MS is ignored; a later one exits 1
 * at once. `what` ends the line that says a stop began (`noded: SIGINT received, stopping<what>`).
 * Returns a function that tells whether a stop has begun.
 */
export function stopOnSignals(what: string, stop: () => Promise<void>): () => boolean {
  let stoppingSince: number | undefined;
  const shutdown = async (signal: string) => {
    if (stoppingSince !== undefined) {
      if (Date.now() - stoppingSince < REPEATED_SIGNAL_MS) return;
      process.stderr.write(`noded: ${signal} again, exiting without waiting\n`);
      process.exit(1);
    }
    stoppingSince = Date.now();
    process.stderr.write(`noded: ${signal} received, stopping${what}\n`);
    let code = 0;
    try {
      await stop();
    } catch (err) {
      process.stderr.write(`noded: stopping failed: ${(err as Error).message}\n`);
      code = 1;
    }
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  return () => stoppingSince !== undefined;
}
