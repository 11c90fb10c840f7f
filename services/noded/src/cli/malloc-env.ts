// glibc's malloc settings for a long-running node (docs/configuration.md, "Memory"; docs/reliability.md,
// "Bounded memory"). glibc reads MALLOC_* variables once, when the process starts, and Node 20 cannot
// replace its own process image (no execve), so bin/noded.js runs `noded start` and `noded service` once
// more as a child with them set when they are missing: the child is the node, the first process only
// forwards signals to it and exits with its exit code (or dies of the same signal). The Docker image and
// `make local` set the variables themselves, so no second process runs there.
import { spawn } from 'node:child_process';
import { constants } from 'node:os';

/**
 * The settings, as the Dockerfile and the Makefile set them: two malloc arenas instead of eight per
 * core, and fixed mmap and trim thresholds so that large freed blocks go back to the system instead of
 * staying in the arenas. Paired soaks: 38 MB less in malloc's heaps a minute after the load, and the RSS
 * growth of a 30-minute soak from +63 to +17 MB/hour.
 */
export const MALLOC_ENV: Readonly<Record<string, string>> = Object.freeze({
  MALLOC_ARENA_MAX: '2',
  MALLOC_MMAP_THRESHOLD_: '131072',
  MALLOC_TRIM_THRESHOLD_: '131072',
});

/** `NODED_MALLOC_ENV=off` runs the node in the environment as given (no second process). */
export const MALLOC_OPT_OUT = 'NODED_MALLOC_ENV';

/** The commands that run a node for a long time; the others end in a moment and keep one process. */
const LONG_RUNNING = new Set(['start', 'service']);

/** Set in the child's environment (and taken out of it at once): its first process is watching. */
export const CHILD_MARK = 'NODED_MALLOC_CHILD';

/** Signals the first process passes on to the node. */
export const FORWARDED_SIGNALS: readonly NodeJS.Signals[] = [
  'SIGTERM',
  'SIGINT',
  'SIGHUP',
  'SIGQUIT',
  'SIGUSR1',
  'SIGUSR2',
];

export class MallocEnvError extends Error {
  readonly code = 'BAD_MALLOC_ENV';
}

/**
 * The environment to run the node in once more, or undefined when this process should run the command
 * itself: not a long-running command, not glibc, the opt-out set, or every variable already set (which
 * is also what keeps the child from doing it again). A variable the user set keeps its value.
 */
export function mallocReexecEnv(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  glibc: boolean,
): NodeJS.ProcessEnv | undefined {
  const choice = env[MALLOC_OPT_OUT];
  if (choice !== undefined && choice !== 'on' && choice !== 'off')
    throw new MallocEnvError(
      `${MALLOC_OPT_OUT} must be "on" (set glibc's malloc variables that are missing, the default) or "off" (leave the environment as it is), got ${JSON.stringify(choice)}`,
    );
  if (choice === 'off' || !glibc) return undefined;
  const command = args.find((a) => !a.startsWith('-'));
  if (command === undefined || !LONG_RUNNING.has(command)) return undefined;
  const missing = Object.keys(MALLOC_ENV).filter((k) => env[k] === undefined || env[k] === '');
  if (missing.length === 0) return undefined;
  const out: NodeJS.ProcessEnv = { ...env };
  for (const k of missing) out[k] = MALLOC_ENV[k];
  return out;
}

/** Whether this process runs on glibc (the variables mean nothing to musl or another libc). */
export function runsOnGlibc(): boolean {
  if (process.platform !== 'linux') return false;
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
  return typeof report?.header?.glibcVersionRuntime === 'string';
}

/**
 * Runs `script args` in a child Node process with `env`, stdin, stdout and stderr shared, passes the
 * FORWARDED_SIGNALS on to it, and ends this process as the child ended: with its exit code, or by the
 * signal that stopped it (re-raised, so a parent sees the same death; 128 + its number if it survives).
 */
export function runAsChild(script: string, args: readonly string[], env: NodeJS.ProcessEnv): void {
  // The IPC channel is only a lifeline: it closes when this process ends, however it ends (watchParent).
  const child = spawn(process.execPath, [...process.execArgv, script, ...args], {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    env: { ...env, [CHILD_MARK]: '1' },
  });
  const forward = (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  for (const s of FORWARDED_SIGNALS) process.on(s, forward);
  child.once('error', (err) => {
    process.stderr.write(`noded: could not start the node process: ${err.message}\n`);
    process.exit(1);
  });
  child.once('exit', (code, signal) => {
    for (const s of FORWARDED_SIGNALS) process.off(s, forward);
    if (signal === null) {
      process.exit(code ?? 1);
    }
    process.exitCode = 128 + (constants.signals[signal] ?? 0);
    process.kill(process.pid, signal);
  });
}

/**
 * In the node run by runAsChild: when the first process is gone without passing a signal on (SIGKILL
 * cannot be caught), the node stops as on SIGTERM instead of running on unseen, holding its ports and
 * its home. Does nothing in a process that runAsChild did not start.
 */
export function watchParent(): void {
  const marked = process.env[CHILD_MARK] === '1';
  delete process.env[CHILD_MARK];
  if (!marked || !process.channel) return;
  process.channel.unref();
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
}
