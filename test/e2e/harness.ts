// Starts real `noded` processes on 127.0.0.1 with free ports for end-to-end tests, and stops them.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

/** Starts `noded start` on a home and waits until the EVM RPC answers with block >= minBlock. */
export async function startNode(
  home: string,
  ports: NodePorts,
  args: string[] = [],
  minBlock = 1n,
): Promise<RunningNode> {
  let out = '';
  const proc = spawn(process.execPath, [CLI, 'start', '--home', home, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env },
  });
  proc.stdout?.on('data', (d) => {
    out += d;
  });
  proc.stderr?.on('data', (d) => {
    out += d;
  });
  const ethUrl = `http://127.0.0.1:${ports.evmHttp}`;
  const node: RunningNode = {
    home,
    ports,
    ethUrl,
    wsUrl: `ws://127.0.0.1:${ports.evmWs}`,
    cometUrl: `http://127.0.0.1:${ports.rpc}`,
    apiUrl: `http://127.0.0.1:${ports.api}`,
    metricsUrl: `http://127.0.0.1:${ports.metrics}`,
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
      45_000,
      proc,
      minBlock,
    );
  } catch (err) {
    await node.stop('SIGKILL');
    throw new Error(`${(err as Error).message}\n--- node output ---\n${out.slice(-4000)}`);
  }
  return node;
}

/**
 * Waits until the node's output matches `re`. startNode returns once the EVM JSON-RPC answers,
 * which is before the node has opened its other servers and printed its start-up summary.
 */
export async function waitForOutput(node: RunningNode, re: RegExp, ms = 15_000): Promise<void> {
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
export async function startLocalNode(opts: Parameters<typeof initLocalHome>[0] = {}) {
  const { home, ports } = await initLocalHome(opts);
  const node = await startNode(home, ports);
  return {
    node,
    cleanup: async () => {
      await node.stop();
      rmSync(home, { recursive: true, force: true });
    },
  };
}
