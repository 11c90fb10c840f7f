// The bench's cluster targets (issue 22): the chain-local chain run as `make cluster` runs it, each
// service its own process on 127.0.0.1 free ports — nats-server (JetStream, the services' logins from
// `noded nats-auth`), `noded service executor`, `consensus`, `state-store`, and one rpc-edge, or two
// behind haproxy (TCP mode, round-robin per connection: a keep-alive connection stays on its edge).
// The metrics service is left out: it is not on any request's path. gRPC is plaintext (loopback).
// Each process is a child of the bench, sampled on its own (BenchTarget.processes), so the table can
// say how much CPU each one spent per 1,000 requests.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../test/e2e/harness.js';
import type { NodeProcess } from './cpu.js';
import { JsonRpcClient } from './rpc.js';
import { type BenchTarget, editToml, NODED_CLI, TargetError, trackTarget, untrackTarget } from './targets.js';

const OUTPUT_KEEP = 32 * 1024;
const NATS_SERVER = process.env.NATS_SERVER ?? 'nats-server';
const HAPROXY = process.env.BENCH_HAPROXY ?? 'haproxy';

interface Child {
  name: string;
  proc: ChildProcess;
  output: () => string;
}

function launch(name: string, cmd: string, args: string[], env?: NodeJS.ProcessEnv): Child {
  let out = '';
  const proc = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  const keep = (d: Buffer) => {
    out += d.toString('utf8');
    if (out.length > 2 * OUTPUT_KEEP) out = out.slice(-OUTPUT_KEEP);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  proc.on('error', (err) => keep(Buffer.from(`\n${name}: ${err.message}\n`)));
  return { name, proc, output: () => out };
}

const exited = (c: Child) => c.proc.exitCode !== null || c.proc.signalCode !== null;

function stopChild(c: Child): Promise<void> {
  if (exited(c)) return Promise.resolve();
  return new Promise((resolve) => {
    const killer = setTimeout(() => c.proc.kill('SIGKILL'), 15_000);
    c.proc.once('exit', () => {
      clearTimeout(killer);
      resolve();
    });
    c.proc.kill('SIGTERM');
  });
}

/** Waits until `ready` holds, failing with the child's output if it exits or the time runs out. */
async function waitFor(c: Child, what: string, ready: () => boolean | Promise<boolean>, ms: number) {
  const until = Date.now() + ms;
  let last: unknown;
  for (;;) {
    if (exited(c))
      throw new TargetError(
        `${c.name} exited (${c.proc.exitCode ?? c.proc.signalCode}) before ${what}:\n${c.output().slice(-3000)}`,
      );
    try {
      if (await ready()) return;
    } catch (err) {
      last = err;
    }
    if (Date.now() > until)
      throw new TargetError(
        `${c.name}: not ${what} within ${ms} ms${last ? ` (${String(last)})` : ''}:\n${c.output().slice(-3000)}`,
      );
    await new Promise((r) => setTimeout(r, 200));
  }
}

const running = /noded service \S+ is running/;

function haproxyConfig(listen: Array<[number, number[]]>): string {
  const lines = [
    '# Written by bench/cluster.ts: round-robin over the rpc-edges, per TCP connection.',
    'global',
    '  maxconn 8000',
    'defaults',
    '  mode tcp',
    '  timeout connect 5s',
    '  timeout client 300s',
    '  timeout server 300s',
  ];
  listen.forEach(([port, edges], i) => {
    lines.push(`listen edges${i}`, `  bind 127.0.0.1:${port}`, '  balance roundrobin');
    for (const [k, p] of edges.entries()) lines.push(`  server edge${k + 1} 127.0.0.1:${p}`);
  });
  return `${lines.join('\n')}\n`;
}

export interface ClusterStartOptions {
  /** rpc-edges: 1 (the target `cluster`) or 2 behind haproxy (`cluster-2edges`). */
  edges: 1 | 2;
  timeoutCommit?: string;
}

/** A fresh chain-local home (`noded init full`) run as the cluster's services, ready when a block is readable through the edges. */
export async function startCluster(opts: ClusterStartOptions): Promise<BenchTarget> {
  if (!existsSync(NODED_CLI))
    throw new TargetError(`noded CLI not built: ${NODED_CLI} is missing (npm run build)`);
  for (const [bin, what] of [
    [NATS_SERVER, 'nats-server'],
    ...(opts.edges > 1 ? [[HAPROXY, 'haproxy']] : []),
  ] as const) {
    const v = spawnSync(bin, ['-v'], { encoding: 'utf8', timeout: 10_000 });
    if (v.error) throw new TargetError(`${what} (${bin}) is not installed: scripts/test-deps.sh installs it`);
  }
  const name = opts.edges === 1 ? 'cluster' : 'cluster-2edges';
  const home = mkdtempSync(join(tmpdir(), 'noded-bench-cluster-'));
  const children: Child[] = [];
  const cleanup = () => rmSync(home, { recursive: true, force: true });
  const cli = (args: string[]) =>
    spawnSync(process.execPath, [NODED_CLI, ...args], { encoding: 'utf8', timeout: 60_000 });

  let stopping: Promise<void> | undefined;
  const stop = () => {
    // Reverse order of start: the edges first, nats-server last (the executor's last publish reaches it).
    stopping ??= (async () => {
      for (const c of [...children].reverse()) await stopChild(c);
      untrackTarget(target);
      try {
        cleanup();
      } catch {
        // Temporary files only.
      }
    })();
    return stopping;
  };
  const ports = await Promise.all(Array.from({ length: 14 }, () => freePort()));
  const [rpcPort, p2pPort, promPort, natsPort, execPort, storePort, proxyHttp, proxyWs] = ports;
  const edgePorts = [ports.slice(8, 11), ports.slice(11, 14)] as Array<[number, number, number]>;
  const version = (cli(['--version']).stdout || 'unknown').trim();
  const processes: NodeProcess[] = [];
  const httpUrl = opts.edges === 1 ? `http://127.0.0.1:${edgePorts[0]![0]}` : `http://127.0.0.1:${proxyHttp}`;
  const wsUrl = opts.edges === 1 ? `ws://127.0.0.1:${edgePorts[0]![1]}` : `ws://127.0.0.1:${proxyWs}`;
  const target: BenchTarget = {
    name,
    version: `noded ${version} as services: nats-server, executor, consensus, state-store, ${opts.edges === 1 ? 'one rpc-edge' : 'two rpc-edges behind haproxy (tcp, round-robin)'}`,
    httpUrl,
    wsUrl,
    get pid() {
      return processes.find((p) => p.name.startsWith('rpc-edge'))?.pid ?? -1;
    },
    processes,
    output: () =>
      children
        .map((c) => `--- ${c.name} ---\n${c.output().slice(-OUTPUT_KEEP / children.length)}`)
        .join('\n'),
    stop,
  };
  trackTarget(target);
  const add = (c: Child) => {
    children.push(c);
    if (c.proc.pid !== undefined) processes.push({ name: c.name, pid: c.proc.pid });
    return c;
  };
  try {
    const init = cli(['init', 'full', '--chain-id', 'chain-local', '--home', home]);
    if (init.status !== 0)
      throw new TargetError(`noded init failed (exit ${init.status}): ${init.stderr || init.stdout}`);
    editToml(join(home, 'config', 'config.toml'), (c) => {
      c.rpc.laddr = `tcp://127.0.0.1:${rpcPort}`;
      c.p2p.laddr = `tcp://127.0.0.1:${p2pPort}`;
      c.instrumentation.prometheus_listen_addr = `127.0.0.1:${promPort}`;
      if (opts.timeoutCommit) {
        c.consensus.timeout_commit = opts.timeoutCommit;
        c.consensus.create_empty_blocks_interval = opts.timeoutCommit;
      }
    });
    const [h1, w1, a1] = edgePorts[0]!;
    editToml(join(home, 'config', 'app.toml'), (a) => {
      a.api.address = `tcp://127.0.0.1:${a1}`;
      a.evm.rpc_address = `127.0.0.1:${h1}`;
      a.evm.ws_address = `127.0.0.1:${w1}`;
      a.evm.api_address = `127.0.0.1:${a1}`;
    });
    // The services' NATS logins, as `make cluster` makes them.
    const auth = cli(['nats-auth', '--home', home]);
    if (auth.status !== 0) throw new TargetError(`noded nats-auth failed: ${auth.stderr || auth.stdout}`);
    const natsDir = join(home, 'data', 'nats');
    writeFileSync(join(natsDir, 'nats-server.conf'), 'max_payload: 67108864\ninclude "auth.conf"\n');
    const nats = add(
      launch('nats-server', NATS_SERVER, [
        '-c',
        join(natsDir, 'nats-server.conf'),
        '-js',
        '-a',
        '127.0.0.1',
        '-p',
        String(natsPort),
        '-sd',
        natsDir,
      ]),
    );
    await waitFor(nats, 'ready', () => nats.output().includes('Server is ready'), 20_000);

    const env = (user?: string): NodeJS.ProcessEnv => ({
      NODED_NATS_URL: `nats://127.0.0.1:${natsPort}`,
      NODED_EXECUTOR_GRPC_ADDRESS: `127.0.0.1:${execPort}`,
      NODED_STATE_STORE_GRPC_ADDRESS: `127.0.0.1:${storePort}`,
      NODED_SERVICE_METRICS_ADDRESS: '127.0.0.1:0',
      ...(user ? { NODED_NATS_USER: user, NODED_NATS_PASSWORD_FILE: join(natsDir, `${user}.password`) } : {}),
    });
    const service = (svc: string, e: NodeJS.ProcessEnv, label = svc, extra: string[] = []) =>
      add(launch(label, process.execPath, [NODED_CLI, 'service', svc, '--home', home, ...extra], e));
    const executor = service('executor', env('executor'));
    await waitFor(executor, 'running', () => running.test(executor.output()), 120_000);
    const consensus = service('consensus', env());
    const store = service('state-store', env('state-store'));
    await waitFor(store, 'running', () => running.test(store.output()), 120_000);
    await waitFor(consensus, 'running', () => running.test(consensus.output()), 120_000);
    const edges: Child[] = [];
    for (let i = 0; i < opts.edges; i++) {
      const [h, w, a] = edgePorts[i]!;
      const label = opts.edges === 1 ? 'rpc-edge' : `rpc-edge-${i + 1}`;
      edges.push(
        service(
          'rpc-edge',
          {
            ...env('rpc-edge'),
            ...(i > 0
              ? {
                  NODED_EVM_RPC_ADDRESS: `127.0.0.1:${h}`,
                  NODED_EVM_WS_ADDRESS: `127.0.0.1:${w}`,
                  NODED_API_ADDRESS: `tcp://127.0.0.1:${a}`,
                  NODED_EVM_API_ADDRESS: `127.0.0.1:${a}`,
                }
              : {}),
          },
          label,
          ['--log-file', join(home, 'logs', `${label}.log`)],
        ),
      );
    }
    // Ready means a block is readable through each edge (it reads the state-store, which follows NATS).
    for (const [i, edge] of edges.entries()) {
      const rpc = new JsonRpcClient(`http://127.0.0.1:${edgePorts[i]![0]}`, {
        maxSockets: 1,
        timeoutMs: 2000,
      });
      try {
        await waitFor(
          edge,
          'serving block 1',
          async () => BigInt(await rpc.call<string>('eth_blockNumber')) >= 1n,
          120_000,
        );
      } finally {
        rpc.close();
      }
    }
    if (opts.edges > 1) {
      const cfg = join(home, 'haproxy.cfg');
      writeFileSync(
        cfg,
        haproxyConfig([
          [proxyHttp!, edgePorts.slice(0, opts.edges).map((p) => p[0])],
          [proxyWs!, edgePorts.slice(0, opts.edges).map((p) => p[1])],
        ]),
      );
      const proxy = add(launch('haproxy', HAPROXY, ['-db', '-f', cfg]));
      const rpc = new JsonRpcClient(httpUrl, { maxSockets: 1, timeoutMs: 2000 });
      try {
        await waitFor(
          proxy,
          'forwarding',
          async () => BigInt(await rpc.call<string>('eth_blockNumber')) >= 1n,
          30_000,
        );
      } finally {
        rpc.close();
      }
    }
    return target;
  } catch (err) {
    const out = target.output();
    await stop();
    if (err instanceof TargetError) throw err;
    throw new TargetError(`${name} did not start: ${(err as Error).message}\n${out.slice(-4000)}`);
  }
}
