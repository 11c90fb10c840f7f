// A real nats-server with JetStream for tests: 127.0.0.1, a free port, a temporary store directory
// (kept across restart() so the stream survives, removed by stop()), and max_payload 64 MiB as
// scripts/cluster.sh configures it (a CommittedHeight of a full block is several MB), unless the
// test asks for another; `config` is appended to its configuration (the cluster's authorization block).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../e2e/harness.js';

export const NATS_SERVER = process.env.NATS_SERVER ?? 'nats-server';

export interface NatsServer {
  url: string;
  port: number;
  storeDir: string;
  output: () => string;
  /** Stops the server process, keeping its store (restart() brings it back on the same port). */
  halt(): Promise<void>;
  restart(): Promise<void>;
  /** Stops it and removes its store. */
  stop(): Promise<void>;
}

/** The cluster's max_payload (nats-server's largest). */
export const CLUSTER_MAX_PAYLOAD = 64 * 1024 * 1024;

export async function startNatsServer(
  opts: { maxPayload?: number; config?: string } = {},
): Promise<NatsServer> {
  const port = await freePort();
  const storeDir = mkdtempSync(join(tmpdir(), 'noded-nats-'));
  const conf = join(storeDir, 'nats-server.conf');
  writeFileSync(conf, `max_payload: ${opts.maxPayload ?? CLUSTER_MAX_PAYLOAD}\n${opts.config ?? ''}`);
  let out = '';
  let proc: ChildProcess | undefined;
  const launch = async () => {
    const p = spawn(
      NATS_SERVER,
      ['-c', conf, '-js', '-a', '127.0.0.1', '-p', String(port), '-sd', storeDir],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    proc = p;
    p.stdout?.on('data', (d) => {
      out += d;
    });
    p.stderr?.on('data', (d) => {
      out += d;
    });
    const from = out.length;
    const until = Date.now() + 20_000;
    while (!out.slice(from).includes('Server is ready')) {
      if (p.exitCode !== null || Date.now() > until) {
        p.kill('SIGKILL');
        throw new Error(`nats-server did not start on port ${port}:\n${out.slice(-2000)}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const halt = async () => {
    const p = proc;
    proc = undefined;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise((r) => p.once('exit', r));
    const killer = setTimeout(() => p.kill('SIGKILL'), 10_000);
    p.kill('SIGTERM');
    await exited;
    clearTimeout(killer);
  };
  await launch();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    output: () => out,
    halt,
    restart: launch,
    stop: async () => {
      await halt();
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
}
