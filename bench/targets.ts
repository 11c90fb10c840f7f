// The nodes under test, started the way a developer runs them, on 127.0.0.1 free ports: hardhat@2's
// `hardhat node` (automine), anvil (automine, and with one-second blocks), a fresh `noded init full
// --chain-id chain-local` + `noded start`; and the canned server that measures the load generator.
// All are child processes; every one started is registered so run.ts can stop it on error or SIGINT.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'smol-toml';
import { freePort } from '../test/e2e/harness.js';
import type { TargetName } from './args.js';
import type { NodeProcess } from './cpu.js';
import { JsonRpcClient } from './rpc.js';

export interface BenchTarget {
  readonly name: TargetName | 'stub';
  readonly version: string;
  readonly httpUrl: string;
  readonly wsUrl: string;
  /** The process whose CPU and memory are the node's (a cluster: its first rpc-edge; see processes). */
  readonly pid: number;
  /** A cluster's processes by name (each sampled on its own); absent: `pid` and its descendants. */
  readonly processes?: readonly NodeProcess[];
  /** Last 64 KiB the process printed. */
  output(): string;
  /** Stops the process (SIGTERM, SIGKILL after 15 s) and removes its temporary files. Idempotent. */
  stop(): Promise<void>;
}

export class TargetError extends Error {
  readonly code = 'BENCH_TARGET';
}

const HERE = dirname(fileURLToPath(import.meta.url));

/** The repository root: the first ancestor of this compiled file that holds node_modules/hardhat. */
export function repoRoot(): string {
  let dir = HERE;
  for (let i = 0; i < 8; i++) {
    if (
      existsSync(join(dir, 'package.json')) &&
      existsSync(join(dir, 'node_modules', 'hardhat', 'package.json'))
    ) {
      return dir;
    }
    dir = dirname(dir);
  }
  throw new TargetError(`no repository root with node_modules/hardhat above ${HERE}`);
}

/** The compiled noded CLI of the same build as this file (<dist>/services/noded/src/cli/main.js). */
export const NODED_CLI = fileURLToPath(new URL('../services/noded/src/cli/main.js', import.meta.url));

const live = new Set<BenchTarget>();

/** Registers a target built elsewhere (bench/cluster.ts), so stopAllTargets stops it too. */
export function trackTarget(t: BenchTarget): void {
  live.add(t);
}

/** Forgets a target that has stopped. */
export function untrackTarget(t: BenchTarget): void {
  live.delete(t);
}

/** Stops every target still running (used on error, SIGINT and SIGTERM). */
export async function stopAllTargets(): Promise<void> {
  await Promise.allSettled([...live].map((t) => t.stop()));
}

const OUTPUT_KEEP = 64 * 1024;

function supervise(
  name: TargetName | 'stub',
  version: string,
  proc: ChildProcess,
  urls: { httpUrl: string; wsUrl: string },
  cleanup: () => void,
): BenchTarget {
  let out = '';
  const keep = (d: Buffer) => {
    out += d.toString('utf8');
    if (out.length > 2 * OUTPUT_KEEP) out = out.slice(-OUTPUT_KEEP);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  if (process.env.BENCH_TEE && name === 'noded') {
    // Appended, so that every round's node lands in the one file; closed when the node exits.
    const tee = createWriteStream(process.env.BENCH_TEE, { flags: 'a' });
    proc.stdout?.pipe(tee, { end: false });
    proc.stderr?.pipe(tee, { end: false });
    proc.once('exit', () => tee.end());
  }
  let stopping: Promise<void> | undefined;
  const target: BenchTarget = {
    name,
    version,
    ...urls,
    pid: proc.pid ?? -1,
    output: () => out.slice(-OUTPUT_KEEP),
    stop: () => {
      stopping ??= new Promise<void>((resolve) => {
        const done = () => {
          live.delete(target);
          try {
            cleanup();
          } catch {
            // Temporary files only; a leftover directory must not hide the real result.
          }
          resolve();
        };
        if (proc.exitCode !== null || proc.signalCode !== null) return done();
        const killer = setTimeout(() => proc.kill('SIGKILL'), 15_000);
        proc.once('exit', () => {
          clearTimeout(killer);
          done();
        });
        proc.kill('SIGTERM');
      });
      return stopping;
    },
  };
  live.add(target);
  return target;
}

/** Polls until `ready` resolves true, the process exits, or the deadline passes. */
async function waitReady(target: BenchTarget, proc: ChildProcess, ready: () => Promise<boolean>, ms: number) {
  const until = Date.now() + ms;
  let last: unknown = 'no answer yet';
  let why = `not ready within ${ms} ms`;
  while (Date.now() < until) {
    if (proc.exitCode !== null || proc.signalCode !== null) {
      why = `exited (${proc.exitCode ?? proc.signalCode}) before it was ready`;
      last = undefined;
      break;
    }
    try {
      if (await ready()) return;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  await target.stop();
  throw new TargetError(
    `${target.name} ${why}${last === undefined ? '' : `: ${String(last)}`}\n--- ${target.name} output ---\n${target
      .output()
      .slice(-4000)}`,
  );
}

function packageVersion(root: string, pkg: string): string {
  try {
    return (
      JSON.parse(readFileSync(join(root, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }
    ).version;
  } catch {
    return 'unknown';
  }
}

/**
 * `hardhat node` from a throwaway project under <repo>/.tmp (Hardhat refuses to run without a local
 * installation above its working directory). Defaults as users get them: automine, chain id 31337,
 * the 20 accounts of the test mnemonic with 10000 ETH each.
 */
export async function startHardhat(): Promise<BenchTarget> {
  const root = repoRoot();
  mkdirSync(join(root, '.tmp'), { recursive: true });
  const project = mkdtempSync(join(root, '.tmp', 'bench-hardhat-'));
  writeFileSync(join(project, 'package.json'), '{"name":"bench-hardhat","private":true}\n');
  writeFileSync(
    join(project, 'hardhat.config.cjs'),
    '// Written by bench/targets.ts: the defaults of `hardhat node`.\nmodule.exports = { networks: { hardhat: { chainId: 31337 } } };\n',
  );
  const port = await freePort();
  const cli = join(root, 'node_modules', 'hardhat', 'internal', 'cli', 'cli.js');
  const proc = spawn(process.execPath, [cli, 'node', '--hostname', '127.0.0.1', '--port', String(port)], {
    cwd: project,
    env: { ...process.env, HARDHAT_DISABLE_TELEMETRY_PROMPT: 'true' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const target = supervise(
    'hardhat',
    `hardhat ${packageVersion(root, 'hardhat')}`,
    proc,
    { httpUrl: `http://127.0.0.1:${port}`, wsUrl: `ws://127.0.0.1:${port}` },
    () => rmSync(project, { recursive: true, force: true }),
  );
  const rpc = new JsonRpcClient(target.httpUrl, { maxSockets: 1, timeoutMs: 2000 });
  try {
    await waitReady(target, proc, async () => (await rpc.call<string>('eth_chainId')) === '0x7a69', 60_000);
  } finally {
    rpc.close();
  }
  return target;
}

/** The npm packages that carry Foundry's Linux x86-64 binaries, and the version the bench installs. */
export const ANVIL_PACKAGE = '@foundry-rs/anvil-linux-amd64';
export const CAST_PACKAGE = '@foundry-rs/cast-linux-amd64';
export const FOUNDRY_VERSION = '1.7.1';

/**
 * A Foundry binary (`anvil`, `cast`), installed on first use into <repo>/.tmp/<tool> with npm's own
 * client (`npm install --prefix .tmp/<tool>`), never into the shared node_modules: the bench is its
 * only user, and a 40 MB Rust binary has no place among the node's dependencies. `envVar` names
 * another binary (BENCH_ANVIL, BENCH_CAST).
 */
function foundryBinary(tool: 'anvil' | 'cast', pkg: string, envVar: string): string {
  const given = process.env[envVar];
  if (given) return given;
  const prefix = join(repoRoot(), '.tmp', tool);
  const bin = join(prefix, 'node_modules', ...pkg.split('/'), 'bin', tool);
  if (existsSync(bin)) return bin;
  mkdirSync(prefix, { recursive: true });
  const r = spawnSync(
    'npm',
    [
      'install',
      '--prefix',
      prefix,
      '--no-save',
      '--no-package-lock',
      '--no-audit',
      '--no-fund',
      `${pkg}@${FOUNDRY_VERSION}`,
    ],
    { encoding: 'utf8', timeout: 300_000 },
  );
  if (r.status !== 0 || !existsSync(bin)) {
    throw new TargetError(
      `could not install ${pkg}@${FOUNDRY_VERSION} into ${prefix} (npm exit ${r.status ?? r.error?.message}): ${(r.stderr || r.stdout || '').slice(-1000)}`,
    );
  }
  return bin;
}

export const anvilBinary = (): string => foundryBinary('anvil', ANVIL_PACKAGE, 'BENCH_ANVIL');
export const castBinary = (): string => foundryBinary('cast', CAST_PACKAGE, 'BENCH_CAST');

/**
 * anvil as a developer runs it: its defaults (chain id 31337, the test mnemonic's accounts with 10000
 * ETH, automine) except 20 accounts, as Hardhat has (anvil makes 10), and with `blockTime` seconds,
 * `--block-time` (interval mining, like noded's one-second blocks).
 */
export async function startAnvil(blockTime?: number): Promise<BenchTarget> {
  const bin = anvilBinary();
  const port = await freePort();
  const args = ['--host', '127.0.0.1', '--port', String(port), '--accounts', '20', '--chain-id', '31337'];
  if (blockTime) args.push('--block-time', String(blockTime));
  const v = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  const version = /Version:\s*(\S+)/.exec(v.stdout ?? '')?.[1] ?? 'unknown';
  const proc = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const target = supervise(
    blockTime ? 'anvil-1s' : 'anvil',
    `anvil ${version}${blockTime ? ` --block-time ${blockTime}` : ''}`,
    proc,
    { httpUrl: `http://127.0.0.1:${port}`, wsUrl: `ws://127.0.0.1:${port}` },
    () => {},
  );
  const rpc = new JsonRpcClient(target.httpUrl, { maxSockets: 1, timeoutMs: 2000 });
  try {
    await waitReady(target, proc, async () => (await rpc.call<string>('eth_chainId')) === '0x7a69', 60_000);
  } finally {
    rpc.close();
  }
  return target;
}

/** The canned JSON-RPC server (bench/stub-server.ts) in its own process: the generator's ceiling. */
export async function startStub(): Promise<BenchTarget> {
  const script = fileURLToPath(new URL('./stub-server.js', import.meta.url));
  const proc = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'pipe'] });
  const port = await new Promise<number>((resolve, reject) => {
    let text = '';
    const t = setTimeout(
      () => reject(new TargetError(`stub server printed no port within 10 s: ${text}`)),
      10_000,
    );
    proc.stdout?.on('data', (d: Buffer) => {
      text += d.toString('utf8');
      const m = /listening (\d+)/.exec(text);
      if (m) {
        clearTimeout(t);
        resolve(Number(m[1]));
      }
    });
    proc.once('exit', (code) => reject(new TargetError(`stub server exited (${code}): ${text}`)));
  });
  return supervise(
    'stub',
    'canned JSON-RPC server (node:net)',
    proc,
    { httpUrl: `http://127.0.0.1:${port}`, wsUrl: '' },
    () => {},
  );
}

export type Toml = Record<string, Record<string, unknown>>;

export function editToml(file: string, edit: (doc: Toml) => void): void {
  const doc = parse(readFileSync(file, 'utf8')) as Toml;
  edit(doc);
  writeFileSync(file, stringify(doc));
}

export interface NodedStartOptions {
  /** Run under `node --cpu-prof`; the .cpuprofile is written here when the node exits. */
  cpuProfDir?: string;
  timeoutCommit?: string;
}

/** Bytes of the files under `dir`, all levels down. */
function dirBytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += dirBytes(path);
    else if (entry.isFile()) total += statSync(path).size;
  }
  return total;
}

/** "N MB (application.db N, ...)": a stopped node's data directory, and each database in it. */
function diskReport(data: string): string {
  if (!existsSync(data)) return 'no data directory';
  const mb = (b: number) => (b / 1e6).toFixed(0);
  let total = 0;
  const dbs: string[] = [];
  for (const entry of readdirSync(data, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const path = join(data, entry.name);
    const bytes = entry.isDirectory() ? dirBytes(path) : entry.isFile() ? statSync(path).size : 0;
    total += bytes;
    if (entry.isDirectory() && entry.name.endsWith('.db')) dbs.push(`${entry.name} ${mb(bytes)}`);
  }
  return `${mb(total)} MB (${dbs.join(', ')})`;
}

/** A fresh chain-local home (`noded init full`), every listener moved to a free 127.0.0.1 port, then `noded start`. */
export async function startNoded(opts: NodedStartOptions = {}): Promise<BenchTarget> {
  if (!existsSync(NODED_CLI))
    throw new TargetError(`noded CLI not built: ${NODED_CLI} is missing (npm run build)`);
  const home = mkdtempSync(join(tmpdir(), 'noded-bench-'));
  const remove = () => rmSync(home, { recursive: true, force: true });
  const cleanup = () => {
    console.log(`[bench] noded: on disk at the stop, ${diskReport(join(home, 'data'))}`);
    remove();
  };
  const init = spawnSync(
    process.execPath,
    [NODED_CLI, 'init', 'full', '--chain-id', 'chain-local', '--home', home],
    {
      encoding: 'utf8',
      timeout: 60_000,
    },
  );
  if (init.status !== 0) {
    remove();
    throw new TargetError(`noded init failed (exit ${init.status}): ${init.stderr || init.stdout}`);
  }
  const [rpcPort, p2pPort, apiPort, evmHttp, evmWs, metrics] = await Promise.all(
    Array.from({ length: 6 }, () => freePort()),
  );
  editToml(join(home, 'config', 'config.toml'), (c) => {
    c.rpc.laddr = `tcp://127.0.0.1:${rpcPort}`;
    c.p2p.laddr = `tcp://127.0.0.1:${p2pPort}`;
    c.instrumentation.prometheus_listen_addr = `127.0.0.1:${metrics}`;
    if (opts.timeoutCommit) {
      // chain-local mines on demand; the override also sets the pace of its empty blocks.
      c.consensus.timeout_commit = opts.timeoutCommit;
      c.consensus.create_empty_blocks_interval = opts.timeoutCommit;
    }
  });
  editToml(join(home, 'config', 'app.toml'), (a) => {
    a.api.address = `tcp://127.0.0.1:${apiPort}`;
    a.evm.rpc_address = `127.0.0.1:${evmHttp}`;
    a.evm.ws_address = `127.0.0.1:${evmWs}`;
    a.evm.api_address = `127.0.0.1:${apiPort}`;
  });
  editToml(join(home, 'config', 'client.toml'), (c) => {
    (c as unknown as Record<string, unknown>).node = `tcp://127.0.0.1:${rpcPort}`;
  });

  const nodeFlags = opts.cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', opts.cpuProfDir] : [];
  if (process.env.BENCH_NODED_FLAGS) nodeFlags.push(...process.env.BENCH_NODED_FLAGS.split(' '));
  const proc = spawn(process.execPath, [...nodeFlags, NODED_CLI, 'start', '--home', home], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env },
  });
  const version = spawnSync(process.execPath, [NODED_CLI, '--version'], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  const target = supervise(
    'noded',
    `noded ${(version.stdout || 'unknown').trim()}`,
    proc,
    { httpUrl: `http://127.0.0.1:${evmHttp}`, wsUrl: `ws://127.0.0.1:${evmWs}` },
    cleanup,
  );
  const rpc = new JsonRpcClient(target.httpUrl, { maxSockets: 1, timeoutMs: 2000 });
  try {
    // Ready means producing blocks, not just listening: block 1 must exist.
    await waitReady(
      target,
      proc,
      async () => BigInt(await rpc.call<string>('eth_blockNumber')) >= 1n,
      60_000,
    );
  } finally {
    rpc.close();
  }
  return target;
}

/** Worker threads of noded, told apart by the script each one runs. */
const WORKER_SCRIPTS: Array<[string, string]> = [
  ['rpc-edge/worker.js', 'json-rpc'],
  ['indexer-thread/worker.js', 'tx-index'],
];

/**
 * The profiles `node --cpu-prof` wrote, one per thread: CPU.<date>.<time>.<pid>.<thread id>.<seq>.
 * Thread 0 is the main thread (consensus, execution, storage); a worker is named by the script
 * its profile runs (thread ids follow the order the workers happened to start in).
 */
export function threadProfiles(dir: string): Array<{ thread: string; file: string }> {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .sort()
    .map((f) => {
      const file = join(dir, f);
      const threadId = Number(f.split('.').at(-3));
      if (threadId === 0) return { thread: 'main', file };
      const text = readFileSync(file, 'utf8');
      const known = WORKER_SCRIPTS.find(([script]) => text.includes(script));
      return { thread: known?.[1] ?? `worker ${threadId}`, file };
    });
}
