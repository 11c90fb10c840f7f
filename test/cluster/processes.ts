// Cluster services as real processes for tests: `noded service <name>` on a home, with its output
// kept, waited on until it says it runs, and stopped (SIGTERM, or SIGKILL after 15 s).
import { type ChildProcess, spawn } from 'node:child_process';
import { CLI } from '../e2e/harness.js';

export interface ServiceProcess {
  name: string;
  proc: ChildProcess;
  output: () => string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export function spawnService(name: string, home: string, env: NodeJS.ProcessEnv): ServiceProcess {
  let out = '';
  const proc = spawn(process.execPath, [CLI, 'service', name, '--home', home], {
    stdio: ['ignore', 'pipe', 'pipe'],
    // Each service's own metrics endpoint on a free port unless the test names one: tests run
    // several replicas of a service on one machine (the defaults 26680..26683 are one each).
    env: { NODED_SERVICE_METRICS_ADDRESS: '127.0.0.1:0', ...process.env, ...env },
  });
  proc.stdout?.on('data', (d) => {
    out += d;
  });
  proc.stderr?.on('data', (d) => {
    out += d;
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return {
    name,
    proc,
    output: () => out,
    exited,
    stop: async (signal: NodeJS.Signals = 'SIGTERM') => {
      if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
      const killer = setTimeout(() => proc.kill('SIGKILL'), 15_000);
      proc.kill(signal);
      const code = await exited;
      clearTimeout(killer);
      return code;
    },
  };
}

/**
 * Waits until the service's output matches `re` (it exiting first is an error with its output). The
 * default bound is for a start: at load 51-60 a `noded start` took 50 s to write its genesis state.
 */
export async function waitForService(s: ServiceProcess, re: RegExp, ms = 120_000): Promise<void> {
  const until = Date.now() + ms;
  while (!re.test(s.output())) {
    if (s.proc.exitCode !== null || s.proc.signalCode !== null || Date.now() > until) {
      throw new Error(
        `service ${s.name} output never matched ${re} within ${ms} ms (exit ${s.proc.exitCode ?? s.proc.signalCode})\n--- output ---\n${s.output().slice(-4000)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Polls `probe` until it returns a value (not undefined), or fails after `ms` with `what`. */
export async function until<T>(what: string, ms: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what}: not within ${ms} ms${last ? ` (last error: ${String(last)})` : ''}`);
}

/** GET of a CometBFT RPC route; the JSON-RPC `result` (an `error` throws). */
export async function comet<T = Record<string, unknown>>(base: string, path: string): Promise<T> {
  const res = await fetch(`${base}/${path}`, { signal: AbortSignal.timeout(30_000) });
  const json = (await res.json()) as { result?: T; error?: unknown };
  if (json.error !== undefined) throw new Error(`${path}: ${JSON.stringify(json.error)}`);
  return json.result as T;
}

/** One JSON-RPC call over HTTP; an error answer throws, naming the method. */
export async function rpc(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(30_000),
  });
  const json = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (json.error) throw new Error(`${method}: ${json.error.message}`);
  return json.result;
}
