// Starts real `noded` processes on 127.0.0.1 with free ports for end-to-end tests, and stops them.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'smol-toml';

/** The repository root: the nearest ancestor holding noded's package.json (works from any outDir). */
export function repoRoot(): string {
  let dir = fileURLToPath(new URL('.', import.meta.url));
  for (let i = 0; i < 10; i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string };
      if (pkg.name === 'noded') return dir;
    } catch {
      // not here; go up
    }
    dir = join(dir, '..');
  }
  throw new Error('cannot find the noded repository root above the test files');
}

/** dist/services/noded/src/cli/main.js, found relative to this compiled file (dist/test/e2e). */
export const CLI = fileURLToPath(new URL('../../services/noded/src/cli/main.js', import.meta.url));

export const DEV_KEYS = [
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
  '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
] as const;
export const DEV_ADDRESSES = [
  '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
  '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC',
  '0x90F79bf6EB2c4f870365E785982E1f101E93b906',
] as const;

import { freePort } from '../ports.js';

export { freePort };

export interface NodePorts {
  rpc: number;
  p2p: number;
  api: number;
  evmHttp: number;
  evmWs: number;
  metrics: number;
}

export interface RunningNode {
  home: string;
  ports: NodePorts;
  ethUrl: string;
  wsUrl: string;
  cometUrl: string;
  apiUrl: string;
  metricsUrl: string;
  proc: ChildProcess;
  output: () => string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export function runCli(args: string[], env: NodeJS.ProcessEnv = {}) {
  const res = spawnSync(process.execPath, [CLI, ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 60_000,
  });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

type Toml = Record<string, Record<string, unknown>>;

function editToml(file: string, edit: (doc: Toml) => void): void {
  const doc = parse(readFileSync(file, 'utf8')) as Toml;
  edit(doc);
  writeFileSync(file, stringify(doc));
}

/** The URLs of a node's public ports on 127.0.0.1 (the same for `noded start` and the cluster). */
function nodeUrls(ports: NodePorts) {
  return {
    ethUrl: `http://127.0.0.1:${ports.evmHttp}`,
    wsUrl: `ws://127.0.0.1:${ports.evmWs}`,
    cometUrl: `http://127.0.0.1:${ports.rpc}`,
    apiUrl: `http://127.0.0.1:${ports.api}`,
    metricsUrl: `http://127.0.0.1:${ports.metrics}`,
  };
}

export interface HomeOptions {
  timeoutCommit?: string;
  extra?: (config: Toml, app: Toml) => void;
}

/** `noded init full --chain-id chain-local` in a fresh temp home, rewired to free loopback ports. */
export async function initLocalHome(opts: HomeOptions = {}) {
  const home = mkdtempSync(join(tmpdir(), 'noded-e2e-'));
  const init = runCli(['init', 'full', '--chain-id', 'chain-local', '--home', home]);
  if (init.code !== 0) throw new Error(`init failed (${init.code}): ${init.stderr}`);
  return { home, ports: await rewireHome(home, opts) };
}

/** Points an existing home's listeners (and client.toml) at free loopback ports. */
export async function rewireHome(home: string, opts: HomeOptions = {}): Promise<NodePorts> {
  const ports: NodePorts = {
    rpc: await freePort(),
    p2p: await freePort(),
    api: await freePort(),
    evmHttp: await freePort(),
    evmWs: await freePort(),
    metrics: await freePort(),
  };
  let configDoc: Toml = {};
  editToml(join(home, 'config', 'config.toml'), (c) => {
    c.rpc.laddr = `tcp://127.0.0.1:${ports.rpc}`;
    c.p2p.laddr = `tcp://127.0.0.1:${ports.p2p}`;
    c.instrumentation.prometheus_listen_addr = `127.0.0.1:${ports.metrics}`;
    if (opts.timeoutCommit) {
      // Timed blocks only, as before blocks on demand: these tests pace the chain by timeout_commit.
      c.consensus.timeout_commit = opts.timeoutCommit;
      c.consensus.create_empty_blocks_interval = '0s';
      c.consensus.skip_timeout_commit = false;
    }
    configDoc = c;
  });
  editToml(join(home, 'config', 'app.toml'), (a) => {
    a.api.address = `tcp://127.0.0.1:${ports.api}`;
    a.evm.rpc_address = `127.0.0.1:${ports.evmHttp}`;
    a.evm.ws_address = `127.0.0.1:${ports.evmWs}`;
    a.evm.api_address = `127.0.0.1:${ports.api}`;
    if (opts.extra) opts.extra(configDoc, a);
  });
  if (opts.extra) editToml(join(home, 'config', 'config.toml'), (c) => opts.extra?.(c, {}));
  editToml(join(home, 'config', 'client.toml'), (c) => {
    (c as unknown as Record<string, unknown>).node = `tcp://127.0.0.1:${ports.rpc}`;
  });
  return ports;
}

async function waitForHttp(
  url: string,
  body: string,
  deadlineMs: number,
  proc: ChildProcess,
  minBlock: bigint,
): Promise<void> {
  const until = Date.now() + deadlineMs;
  let last: unknown;
  while (Date.now() < until) {
    if (proc.exitCode !== null) throw new Error(`node exited with ${proc.exitCode} before answering`);
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        signal: AbortSignal.timeout(2000),
      });
      if (res.ok) {
        const json = (await res.json()) as { result?: string };
        if (json.result && BigInt(json.result) >= minBlock) return;
      }
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`node did not reach block ${minBlock} within ${deadlineMs} ms: ${String(last)}`);
}

/**
 * How long a started node may take to answer eth_blockNumber with its first block. On a quiet machine
 * a few seconds; at load 51-60 (a shared 2-core machine) one `noded start` wrote its genesis state
 * 50 s after its spawn and missed the 45 s this used to be.
 */
const START_MS = 120_000;

/**
 * Which target the e2e suites run against: `node` (`noded start`, the default) or `cluster`
 * (scripts/cluster.sh, what `make cluster` runs), chosen by $NODED_E2E_TARGET. scripts/run-tests.mjs
 * runs the cluster-applicable suites a second time with `NODED_E2E_TARGET=cluster` (docs/cluster.md, "Tests").
 */
export type E2eTarget = 'node' | 'cluster';

export function e2eTarget(env: NodeJS.ProcessEnv = process.env): E2eTarget {
  const v = env.NODED_E2E_TARGET;
  if (v === undefined || v === '' || v === 'node') return 'node';
  if (v === 'cluster') return 'cluster';
  throw new Error(`$NODED_E2E_TARGET must be "node" or "cluster", got ${JSON.stringify(v)}`);
}

/**
 * Starts the e2e target on a home and waits until the EVM RPC answers with block >= minBlock:
 * `noded start` by default, the cluster when $NODED_E2E_TARGET is `cluster` (startCluster).
 */
export async function startNode(
  home: string,
  ports: NodePorts,
  args: string[] = [],
  minBlock = 1n,
): Promise<RunningNode> {
  if (e2eTarget() === 'cluster') {
    if (args.length > 0) {
      throw new Error(
        `NODED_E2E_TARGET=cluster runs scripts/cluster.sh, which takes no \`noded start\` flags; got ${args.join(' ')}`,
      );
    }
    return startCluster(home, ports, minBlock);
  }
  return startAllInOne(home, ports, args, minBlock);
}

/** `noded start` on a home; waits until the EVM RPC answers with block >= minBlock. */
export async function startAllInOne(
  home: string,
  ports: NodePorts,
  args: string[] = [],
  minBlock = 1n,
): Promise<RunningNode> {
  let out = '';
  // NODED_E2E_NODE_FLAGS: Node/V8 flags for the node's process (e.g. --trace-gc, which NODE_OPTIONS refuses).
  const flags = (process.env.NODED_E2E_NODE_FLAGS ?? '').split(' ').filter((f) => f !== '');
  const proc = spawn(process.execPath, [...flags, CLI, 'start', '--home', home, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env },
  });
  proc.stdout?.on('data', (d) => {
    out += d;
  });
  proc.stderr?.on('data', (d) => {
    out += d;
  });
  // NODED_E2E_NODE_OUTPUT=<file>: the node's stdout and stderr also go there (e.g. a soak run with
  // NODED_E2E_NODE_FLAGS=--trace-gc, whose lines would otherwise only be held in memory).
  const tee = process.env.NODED_E2E_NODE_OUTPUT;
  if (tee) {
    const file = createWriteStream(tee, { flags: 'a' });
    proc.stdout?.pipe(file, { end: false });
    proc.stderr?.pipe(file, { end: false });
    proc.once('exit', () => file.end());
  }
  const urls = nodeUrls(ports);
  const { ethUrl } = urls;
  const node: RunningNode = {
    home,
    ports,
    ...urls,
    proc,
    output: () => out,
    stop: (signal: NodeJS.Signals = 'SIGTERM') =>
      new Promise((resolve) => {
        if (proc.exitCode !== null) return resolve(proc.exitCode);
        const killer = setTimeout(() => proc.kill('SIGKILL'), 15_000);
        proc.once('exit', (code) => {
          clearTimeout(killer);
          resolve(code);
        });
        proc.kill(signal);
      }),
  };
  try {
    await waitForHttp(
      ethUrl,
      '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
      START_MS,
      proc,
      minBlock,
    );
  } catch (err) {
    await node.stop('SIGKILL');
    throw new Error(`${(err as Error).message}\n--- node output ---\n${out.slice(-4000)}`);
  }
  return node;
}

/** Every process below `root` (children, their children, ...), with its process group, from ps. */
function descendants(root: number): Array<{ pid: number; pgid: number }> {
  const ps = spawnSync('ps', ['-e', '-o', 'pid=,ppid=,pgid='], { encoding: 'utf8', timeout: 10_000 });
  const rows = (ps.stdout ?? '')
    .split('\n')
    .map((l) => l.trim().split(/\s+/).map(Number))
    .filter((r) => r.length === 3 && r.every(Number.isInteger)) as Array<[number, number, number]>;
  const found: Array<{ pid: number; pgid: number }> = [];
  const frontier = [root];
  while (frontier.length > 0) {
    const parent = frontier.pop()!;
    for (const [pid, ppid, pgid] of rows) {
      if (ppid === parent && !found.some((f) => f.pid === pid)) {
        found.push({ pid, pgid });
        frontier.push(pid);
      }
    }
  }
  return found;
}

/**
 * kill -9 of a whole cluster: the script and every process it started. scripts/cluster.sh runs each
 * service in its own process group (job control), so each of those groups is killed too, which also
 * takes a service its supervisor forked after the snapshot. Our own group is never signalled.
 */
function killClusterTree(script: ChildProcess): void {
  if (script.pid === undefined) return;
  const own = spawnSync('ps', ['-o', 'pgid=', '-p', String(process.pid)], { encoding: 'utf8' });
  const ownGroup = Number(own.stdout.trim());
  const tree = descendants(script.pid);
  const signal = (fn: () => void) => {
    try {
      fn();
    } catch {
      // already gone
    }
  };
  signal(() => process.kill(script.pid!, 'SIGKILL'));
  for (const g of new Set(tree.map((t) => t.pgid))) {
    if (g !== ownGroup && g > 1) signal(() => process.kill(-g, 'SIGKILL'));
  }
  for (const t of tree) signal(() => process.kill(t.pid, 'SIGKILL'));
}

/** Clusters still running, killed if the test process exits without stopping them. */
const liveClusters = new Set<ChildProcess>();
process.once('exit', () => {
  for (const script of liveClusters) killClusterTree(script);
});

/**
 * The cluster on a home, started exactly as `make cluster` does: `bash scripts/cluster.sh HOME`
 * (nats-server with JetStream and the services' logins from `noded nats-auth`, then the executor,
 * p2p-gateway, consensus, state-store, rpc-edge and metrics services). The public ports are the
 * home's, as rewireHome set them: the Ethereum JSON-RPC, its WebSocket and REST on the rpc-edge,
 * the CometBFT RPC on consensus, /metrics on the metrics service. The ports only the services use
 * (NATS, the executor's, state-store's and gateway's gRPC, each service's own metrics) are free
 * loopback ports passed through the script's environment overrides.
 * Returns once the edge answers eth_blockNumber >= minBlock and the metrics service's /readyz
 * passes (every service up, the state-store caught up). `proc` is the script, which exits once every
 * service has stopped; `stop('SIGTERM')` is Ctrl-C (the script stops them all and exits 0), and
 * `stop('SIGKILL')` kills the script and every process it started at once.
 */
export async function startCluster(home: string, ports: NodePorts, minBlock = 1n): Promise<RunningNode> {
  const loopback = async () => `127.0.0.1:${await freePort()}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NATS_PORT: String(await freePort()),
    NODED_EXECUTOR_GRPC_ADDRESS: await loopback(),
    NODED_STATE_STORE_GRPC_ADDRESS: await loopback(),
    NODED_P2P_GATEWAY_ADDRESS: await loopback(),
    EXECUTOR_METRICS: await loopback(),
    CONSENSUS_METRICS: await loopback(),
    STATE_STORE_METRICS: await loopback(),
    RPC_EDGE_METRICS: await loopback(),
    P2P_GATEWAY_METRICS: await loopback(),
  };
  // The script derives these from the ones above; an outer value would point the services elsewhere.
  delete env.NODED_NATS_URL;
  delete env.NODED_METRICS_TARGETS;
  let out = '';
  const proc = spawn('bash', [join(repoRoot(), 'scripts', 'cluster.sh'), home], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
  });
  liveClusters.add(proc);
  proc.stdout?.on('data', (d) => {
    out += d;
  });
  proc.stderr?.on('data', (d) => {
    out += d;
  });
  const exited = new Promise<number | null>((resolve) =>
    proc.once('exit', (code) => {
      liveClusters.delete(proc);
      resolve(code);
    }),
  );
  const urls = nodeUrls(ports);
  const { ethUrl } = urls;
  const node: RunningNode = {
    home,
    ports,
    ...urls,
    proc,
    output: () => out,
    stop: async (signal: NodeJS.Signals = 'SIGTERM') => {
      if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
      if (signal === 'SIGKILL') {
        killClusterTree(proc);
        return exited;
      }
      // The script stops the services one by one, half a second apart, each within its own grace.
      const killer = setTimeout(() => killClusterTree(proc), 45_000);
      proc.kill(signal);
      const code = await exited;
      clearTimeout(killer);
      return code;
    },
  };
  try {
    await waitForHttp(
      ethUrl,
      '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
      2 * START_MS,
      proc,
      minBlock,
    );
    await waitForReady(`${node.metricsUrl}/readyz`, 60_000, proc);
  } catch (err) {
    await node.stop('SIGKILL');
    throw new Error(`cluster: ${(err as Error).message}\n--- cluster output ---\n${out.slice(-6000)}`);
  }
  return node;
}

async function waitForReady(url: string, deadlineMs: number, proc: ChildProcess): Promise<void> {
  const until = Date.now() + deadlineMs;
  let last = '';
  while (Date.now() < until) {
    if (proc.exitCode !== null) throw new Error(`exited with ${proc.exitCode} before ${url} passed`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
      if (res.status === 200) return;
      last = `${res.status} ${await res.text()}`;
    } catch (err) {
      last = String(err);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not pass within ${deadlineMs} ms: ${last.slice(0, 500)}`);
}

/**
 * Waits until the node's output matches `re`. startNode returns once the EVM JSON-RPC answers,
 * which is before the node has opened its other servers and printed its start-up summary.
 */
export async function waitForOutput(node: RunningNode, re: RegExp, ms = 60_000): Promise<void> {
  const until = Date.now() + ms;
  while (!re.test(node.output())) {
    if (Date.now() > until || node.proc.exitCode !== null) {
      throw new Error(
        `node output never matched ${re} within ${ms} ms\n--- node output ---\n${node.output().slice(-4000)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A JSON-RPC reply as the node sent it: a result, or an error with its code. */
export interface RpcReply {
  result?: unknown;
  error?: { code: number; message: string; data?: string };
}

/** One JSON-RPC call over HTTP POST; the reply comes back whole, an error included. */
export async function jsonRpc(
  url: string,
  method: string,
  params: unknown[] = [],
  timeoutMs = 60_000,
): Promise<RpcReply> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  return (await res.json()) as RpcReply;
}

/** One JSON-RPC call whose result is returned and whose error is thrown as "<method>: <message>". */
export async function jsonRpcResult(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const reply = await jsonRpc(url, method, params, 10_000);
  if (reply.error) throw new Error(`${method}: ${reply.error.message}`);
  return reply.result;
}

/**
 * Polls `fn` every 200 ms until it gives a value (a throw counts as "not yet"); fails naming `what`
 * after `ms`.
 */
export async function until<T>(what: string, fn: () => Promise<T | undefined>, ms = 40_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A fresh chain-local node: init + start. Remove the home with `cleanup` after stop. */
/** Whether a start failed because a listener's port was taken (see startLocalNode). */
export function portTaken(err: unknown): boolean {
  return /address already in use|EADDRINUSE/.test(err instanceof Error ? err.message : String(err));
}

/**
 * Starts the e2e target on `home` (startNode). Its ports were probed free, then are bound by the
 * node a moment later: another test file running at the same time can take one in between. A start
 * refused for a taken port is retried on newly drawn ports (rewireHome), `attempts` times in all;
 * any other failure is thrown at once.
 */
export async function startOnFreePorts(
  home: string,
  ports: NodePorts,
  opts: HomeOptions = {},
  attempts = 3,
): Promise<RunningNode> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startNode(home, ports);
    } catch (err) {
      if (attempt >= attempts || !portTaken(err)) throw err;
      ports = await rewireHome(home, opts);
    }
  }
}

/** A fresh chain-local home started on free ports (startOnFreePorts), and how to stop and remove it. */
export async function startLocalNode(opts: HomeOptions = {}) {
  const { home, ports } = await initLocalHome(opts);
  let node: RunningNode;
  try {
    node = await startOnFreePorts(home, ports, opts);
  } catch (err) {
    rmSync(home, { recursive: true, force: true });
    throw err;
  }
  return {
    node,
    cleanup: async () => {
      await node.stop();
      rmSync(home, { recursive: true, force: true });
    },
  };
}
