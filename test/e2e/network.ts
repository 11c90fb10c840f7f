// Multi-node networks for end-to-end tests: `noded testnet` writes the homes, each node runs as its
// own process on its own loopback IP (127.a.b.2, .3, ...) with the spec's default ports, as on N hosts.
// The first two octets are random so that parallel runs and a developer's `make localnet` do not collide.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'smol-toml';
import { CLI, runCli } from './harness.js';

export interface NetNode {
  index: number;
  home: string;
  ip: string;
  ethUrl: string;
  cometUrl: string;
  proc: ChildProcess | null;
  output: string;
}

export interface Network {
  dir: string;
  nodes: NetNode[];
  start(i: number): void;
  kill(i: number, signal?: NodeJS.Signals): Promise<void>;
  stopAll(): Promise<void>;
  cleanup(): Promise<void>;
}

/**
 * How long a freshly started network may take to make its first heights. At load 45-55 (a shared
 * 2-core machine) four nodes took about two minutes from spawn to height 1, and e2e/evidence and
 * e2e/bridge-crash failed their 90 s wait for height 2; on a quiet machine it takes seconds.
 */
export const NETWORK_UP_MS = 180_000;

export function randomBaseIp(): string {
  const a = 10 + Math.floor(Math.random() * 240);
  const b = Math.floor(Math.random() * 250);
  return `127.${a}.${b}.2`;
}

/** `noded testnet` into a temp dir, with optional config.toml edits applied to every home. */
export function createNetwork(opts: {
  validators: number;
  nonValidators?: number;
  chainId?: string;
  editConfig?: (doc: Record<string, Record<string, unknown>>, index: number) => void;
}): Network {
  const dir = mkdtempSync(join(tmpdir(), 'noded-net-'));
  const out = join(dir, 'net');
  const startIp = randomBaseIp();
  const args = [
    'testnet',
    '--validators',
    String(opts.validators),
    '--non-validators',
    String(opts.nonValidators ?? 0),
    '--output',
    out,
    '--chain-id',
    opts.chainId ?? 'chain-local',
    '--starting-ip',
    startIp,
  ];
  const r = runCli(args);
  if (r.code !== 0) throw new Error(`noded testnet failed (${r.code}): ${r.stderr}${r.stdout}`);
  const base = startIp.split('.').map(Number);
  const total = opts.validators + (opts.nonValidators ?? 0);
  const nodes: NetNode[] = [];
  for (let i = 0; i < total; i++) {
    const ip = `${base[0]}.${base[1]}.${base[2]}.${base[3]! + i}`;
    const home = join(out, `node${i}`);
    if (opts.editConfig) {
      const file = join(home, 'config', 'config.toml');
      const doc = parse(readFileSync(file, 'utf8')) as Record<string, Record<string, unknown>>;
      opts.editConfig(doc, i);
      writeFileSync(file, stringify(doc));
    }
    nodes.push({
      index: i,
      home,
      ip,
      ethUrl: `http://${ip}:8545`,
      cometUrl: `http://${ip}:26657`,
      proc: null,
      output: '',
    });
  }
  const net: Network = {
    dir,
    nodes,
    start(i) {
      const n = nodes[i]!;
      if (n.proc && n.proc.exitCode === null && n.proc.signalCode === null)
        throw new Error(`node${i} is running`);
      const proc = spawn(process.execPath, [CLI, 'start', '--home', n.home], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      n.output = '';
      const keep = (d: Buffer) => {
        n.output = (n.output + d.toString()).slice(-200_000);
      };
      proc.stdout?.on('data', keep);
      proc.stderr?.on('data', keep);
      n.proc = proc;
    },
    kill(i, signal = 'SIGKILL') {
      const n = nodes[i]!;
      const proc = n.proc;
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
      return new Promise((resolve) => {
        // A SIGTERM's grace: a node saves its address book and closes its stores on the way out,
        // which took over 15 s on a machine at load average 40.
        const hard = setTimeout(() => proc.kill('SIGKILL'), signal === 'SIGKILL' ? 0 : 30_000);
        proc.once('exit', () => {
          clearTimeout(hard);
          resolve();
        });
        proc.kill(signal);
      });
    },
    async stopAll() {
      await Promise.all(nodes.map((_, i) => net.kill(i, 'SIGTERM')));
    },
    async cleanup() {
      await Promise.all(nodes.map((_, i) => net.kill(i, 'SIGKILL')));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return net;
}

/**
 * How long an answer the tests act on may take. A node of a 4-6 node network on a machine at load 30-45
 * took more than 3 s to answer /consensus_state (seen in e2e/bridge-crash, "The operation was aborted
 * due to timeout"): a slow answer is not a failure of what these tests check.
 */
const ANSWER_MS = 15_000;

export async function rpc(
  url: string,
  path: string,
  timeoutMs = ANSWER_MS,
): Promise<Record<string, unknown>> {
  let res: Response;
  try {
    res = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    // undici says only "fetch failed"; its cause (ECONNREFUSED, a reset, the timeout) is what tells.
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(
      `${url}${path}: ${(err as Error).message}${cause ? ` (${cause.code ?? cause.message})` : ''}`,
    );
  }
  const json = (await res.json()) as { result?: Record<string, unknown>; error?: unknown };
  if (!json.result) throw new Error(`${path}: ${JSON.stringify(json.error)}`);
  return json.result;
}

/** The node's latest committed height, or -1 when it does not answer (within 10 s: it is down or hung). */
export async function heightOf(n: NetNode): Promise<number> {
  try {
    const st = await rpc(n.cometUrl, '/status', 10_000);
    return Number((st.sync_info as Record<string, unknown>).latest_block_height);
  } catch {
    return -1;
  }
}

export async function blockHashAt(n: NetNode, height: number): Promise<string> {
  const b = await rpc(n.cometUrl, `/block?height=${height}`);
  return String((b.block_id as Record<string, unknown>).hash);
}

/**
 * Polls `cond` every 250 ms until it holds; fails naming `what` after `ms`. A condition that throws
 * (a node restarting, an answer slower than its timeout) counts as "not yet"; the last such error is
 * in the failure message.
 */
export async function waitFor(
  what: string,
  cond: () => Promise<boolean>,
  ms: number,
  net?: Network,
): Promise<void> {
  const end = Date.now() + ms;
  let last: unknown;
  while (Date.now() < end) {
    try {
      if (await cond()) return;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  const tails = net
    ? net.nodes.map((n) => `--- node${n.index} ---\n${n.output.slice(-2500)}`).join('\n')
    : '';
  const why = last === undefined ? '' : ` (last error: ${(last as Error).message ?? String(last)})`;
  throw new Error(`timed out after ${ms} ms waiting for ${what}${why}\n${tails}`);
}

/** Waits until every listed node has committed at least `height`. */
export async function waitHeight(net: Network, which: number[], height: number, ms: number): Promise<void> {
  await waitFor(
    `nodes ${which.join(',')} at height ${height}`,
    async () => (await Promise.all(which.map((i) => heightOf(net.nodes[i]!)))).every((h) => h >= height),
    ms,
    net,
  );
}

/**
 * Turns node `i` into a light node: its home's app.toml `mode` becomes "light", as `noded init light`
 * records it, with `light` merged into its [light] section; the rest of the home (its IP, ports,
 * persistent peers, genesis) stays as testnet wrote it.
 */
export function makeLight(net: Network, i: number, light: Record<string, unknown> = {}): void {
  const file = join(net.nodes[i]!.home, 'config', 'app.toml');
  const doc = parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  doc.mode = 'light';
  doc.light = { ...(doc.light as Record<string, unknown> | undefined), ...light };
  writeFileSync(file, stringify(doc));
}
