// How a long-running process (the all-in-one node, a service) reads repeated stop signals.

/**
 * A stop signal within this long of the first is the same request delivered twice, not a second one:
 * a terminal's Ctrl-C (the whole process group) and a service manager's stop (the whole cgroup) reach
 * both bin/noded.js's first process, which passes signals on (malloc-env.ts), and the node itself.
 * A later one still means "stop now, without waiting".
 */
export const REPEATED_SIGNAL_MS = 1000;
