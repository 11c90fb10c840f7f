// `npm run bench:network`: noded as a network. Every node is its own process on its own loopback IP
// (127.a.b.x, spec ports), written by `noded testnet`, as on separate hosts:
//   1. block interval: 4 validators, timeout_commit 1s, N empty blocks, median interval of header times;
//   2. transfers/s: 19 senders' pre-signed transfers sent round-robin to the 4 validators, clock
//      stopped at the last receipt; the same load on a 1-validator network in the same run (ratio);
//   3. block sync: a fresh full node joins the 4-validator network and syncs the chain (empty blocks,
//      then the transfer blocks), blocks/s measured from its first applied block to the tip.
// Output: a table on stdout and JSON under bench/results/.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'smol-toml';
import { currentFees, devAccounts, receivers, type SignedTx, signTx } from './chain.js';
import { cpuSampler } from './cpu.js';
import { JsonRpcClient } from './rpc.js';
import { median } from './stats.js';
import { NODED_CLI, repoRoot } from './targets.js';

const log = (msg: string) => console.log(`[bench:network] ${msg}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Args {
  blocks: number;
  senders: number;
  perSender: number;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { blocks: 100, senders: 19, perSender: 300 };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const v = Number(argv[i + 1]);
    if (k === '--blocks' || k === '--senders' || k === '--per-sender') {
      if (!Number.isInteger(v) || v < 1) throw new Error(`${k} needs a positive integer, got ${argv[i + 1]}`);
      if (k === '--blocks') a.blocks = v;
      else if (k === '--senders') a.senders = Math.min(v, 19);
      else a.perSender = v;
      i++;
    } else {
      throw new Error(`unknown option ${k} (use --blocks N --senders N --per-sender N)`);
    }
  }
  return a;
}

interface Net {
  dir: string;
  ips: string[];
  homes: string[];
  procs: Array<ChildProcess | null>;
}

const running = new Set<ChildProcess>();

function createNet(validators: number, nonValidators: number, commit: string): Net {
  const dir = mkdtempSync(join(tmpdir(), 'noded-benchnet-'));
  const start = `127.${10 + Math.floor(Math.random() * 240)}.${Math.floor(Math.random() * 250)}.2`;
  const out = join(dir, 'net');
  const r = spawnSync(
    process.execPath,
    [
      NODED_CLI,
      'testnet',
      '--validators',
      String(validators),
      '--non-validators',
      String(nonValidators),
    ].concat(['--output', out, '--starting-ip', start]),
    { encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`noded testnet failed: ${r.stderr}`);
  const base = start.split('.').map(Number);
  const n = validators + nonValidators;
  const ips = Array.from({ length: n }, (_, i) => `${base[0]}.${base[1]}.${base[2]}.${base[3]! + i}`);
  const homes = ips.map((_, i) => join(out, `node${i}`));
  for (const home of homes) {
    const file = join(home, 'config', 'config.toml');
    const doc = parse(readFileSync(file, 'utf8')) as Record<string, Record<string, unknown>>;
    doc.consensus!.timeout_commit = commit;
    doc.instrumentation!.prometheus = false;
    writeFileSync(file, stringify(doc));
  }
  return { dir, ips, homes, procs: homes.map(() => null) };
}

function startNode(net: Net, i: number): void {
  const p = spawn(process.execPath, [NODED_CLI, 'start', '--home', net.homes[i]!, '--log-level', 'warn'], {
    stdio: 'ignore',
  });
  running.add(p);
  p.once('exit', () => running.delete(p));
  net.procs[i] = p;
}

async function stopNet(net: Net): Promise<void> {
  await Promise.all(
    net.procs.map(
      (p) =>
        new Promise<void>((resolve) => {
          if (!p || p.exitCode !== null || p.signalCode !== null) return resolve();
          const t = setTimeout(() => p.kill('SIGKILL'), 10_000);
          p.once('exit', () => {
            clearTimeout(t);
            resolve();
          });
          p.kill('SIGTERM');
        }),
    ),
  );
  rmSync(net.dir, { recursive: true, force: true });
}

async function comet(ip: string, path: string): Promise<Record<string, unknown>> {
  const res = await fetch(`http://${ip}:26657${path}`, { signal: AbortSignal.timeout(5000) });
  const j = (await res.json()) as { result?: Record<string, unknown> };
  if (!j.result) throw new Error(`${path}: no result`);
  return j.result;
}

async function height(ip: string): Promise<number> {
  try {
    const st = await comet(ip, '/status');
    return Number((st.sync_info as Record<string, unknown>).latest_block_height);
  } catch {
    return -1;
  }
}

async function waitHeight(ips: string[], h: number, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const hs = await Promise.all(ips.map(height));
    if (hs.every((x) => x >= h)) return;
    await sleep(200);
  }
  throw new Error(`nodes ${ips.join(',')} did not reach height ${h} in ${ms} ms`);
}

/** "2026-11-25T12:00:00.123456789Z" as nanoseconds since the epoch. */
function rfc3339Ns(t: string): bigint {
  const frac = /\.(\d+)Z$/.exec(t)?.[1] ?? '';
  const whole = BigInt(Date.parse(t.replace(/\.\d+Z$/, 'Z')));
  return whole * 1_000_000n + BigInt(frac.padEnd(9, '0').slice(0, 9) || '0');
}

async function waitEth(ip: string): Promise<void> {
  const end = Date.now() + 60_000;
  while (Date.now() < end) {
    try {
      const rpc = new JsonRpcClient(`http://${ip}:8545`, { timeoutMs: 2000 });
      await rpc.call('eth_blockNumber');
      rpc.close();
      return;
    } catch {
      await sleep(200);
    }
  }
  throw new Error(`${ip}:8545 never answered`);
}

/** Header times (ns) of heights from..to, via /blockchain (20 per call). */
async function headerTimes(ip: string, from: number, to: number): Promise<Map<number, bigint>> {
  const out = new Map<number, bigint>();
  for (let hi = to; hi >= from; hi -= 20) {
    const lo = Math.max(from, hi - 19);
    const r = await comet(ip, `/blockchain?minHeight=${lo}&maxHeight=${hi}`);
    for (const m of r.block_metas as Array<{ header: { height: string; time: string } }>) {
      out.set(Number(m.header.height), rfc3339Ns(m.header.time));
    }
  }
  return out;
}

async function blockIntervals(ip: string, from: number, to: number): Promise<number[]> {
  const times = await headerTimes(ip, from, to);
  const out: number[] = [];
  for (let h = from + 1; h <= to; h++) {
    const a = times.get(h - 1);
    const b = times.get(h);
    if (a !== undefined && b !== undefined) out.push(Number(b - a) / 1e6);
  }
  return out;
}

/** Pre-signed transfers, `perSender` per sender, nonces from 0 (fresh genesis). */
async function presign(rpc: JsonRpcClient, senders: number, perSender: number): Promise<SignedTx[][]> {
  const fees = await currentFees(rpc, 4n);
  const to = receivers(64);
  return devAccounts(senders).map((acct, s) =>
    Array.from({ length: perSender }, (_, n) =>
      signTx(acct.key, acct.address, fees, {
        to: to[(s * 7 + n) % to.length]!,
        value: 1n,
        gasLimit: 21_000n,
        nonce: n,
      }),
    ),
  );
}

/**
 * Sends every sender's transactions in order (up to `window` unconfirmed each), sender s to node
 * s mod N, and waits for every receipt on node 0. Returns transfers/s from first submit to last receipt.
 */
interface LoadResult {
  txs: number;
  ms: number;
  /** CPU time of the nodes' processes (all threads) during the load, ms per transfer. */
  nodeCpuMsPerTx: number;
  /** CPU time of this load generator during the load, ms per transfer. */
  clientCpuMsPerTx: number;
  /** (nodes + generator CPU) / wall time: cores kept busy (this machine has cpus().length). */
  coresBusy: number;
}

/** pushLoad with the CPU time of the listed node processes and of this generator around it. */
async function measuredLoad(net: Net, nodes: number[], perSender: SignedTx[][]): Promise<LoadResult> {
  const samplers = nodes.map((i) => cpuSampler(net.procs[i]!.pid!));
  const before = samplers.map((s) => s());
  const r = await pushLoad(
    nodes.map((i) => net.ips[i]!),
    perSender,
  );
  const after = samplers.map((s) => s());
  const nodeMs = after.reduce((n, a, i) => n + a.nodeMs - before[i]!.nodeMs, 0);
  const clientMs = after[0]!.clientMs - before[0]!.clientMs;
  const wall = after[0]!.at - before[0]!.at;
  return {
    ...r,
    nodeCpuMsPerTx: nodeMs / r.txs,
    clientCpuMsPerTx: clientMs / r.txs,
    coresBusy: (nodeMs + clientMs) / wall,
  };
}

async function pushLoad(
  ips: string[],
  perSender: SignedTx[][],
  chunkSize = 32,
): Promise<{ txs: number; ms: number }> {
  const clients = ips.map((ip) => new JsonRpcClient(`http://${ip}:8545`, { maxSockets: 64 }));
  const reader = clients[0]!;
  const total = perSender.reduce((n, l) => n + l.length, 0);
  const t0 = performance.now();
  const pending = new Set<string>();
  let done = 0;
  // Two chunks of 32 in flight per sender: within the mempool's max_txs_per_sender (64).
  const senders = perSender.map(async (txs, s) => {
    const rpc = clients[s % clients.length]!;
    for (let i = 0; i < txs.length; i += chunkSize) {
      const chunk = txs.slice(i, i + chunkSize);
      // Chunk k waits for the last transaction of chunk k-2 to be mined.
      const gate = i >= 2 * chunkSize ? txs[i - chunkSize - 1]!.hash : undefined;
      if (gate) {
        const until = Date.now() + 120_000;
        while (pending.has(gate) && Date.now() < until) await sleep(20);
      }
      for (const t of chunk) pending.add(t.hash);
      await rpc.batch(chunk.map((t) => ({ method: 'eth_sendRawTransaction', params: [t.raw] })));
    }
  });
  const watcher = (async () => {
    const until = Date.now() + 600_000;
    while (done < total && Date.now() < until) {
      const batch = [...pending].slice(0, 500);
      if (batch.length === 0) {
        await sleep(50);
        continue;
      }
      const res = await reader.batch(
        batch.map((h) => ({ method: 'eth_getTransactionReceipt', params: [h] })),
      );
      res.forEach((r, i) => {
        if (r && !(r instanceof Error)) {
          pending.delete(batch[i]!);
          done++;
        }
      });
      await sleep(100);
    }
  })();
  await Promise.all([...senders, watcher]);
  const ms = performance.now() - t0;
  for (const c of clients) c.close();
  if (done < total) throw new Error(`only ${done} of ${total} transfers got receipts`);
  return { txs: total, ms };
}

/** Starts node i (fresh) and measures its sync rate over heights it applies until it reaches `target`. */
async function measureSync(net: Net, i: number, target: number): Promise<{ blocks: number; ms: number }> {
  startNode(net, i);
  const ip = net.ips[i]!;
  let first = -1;
  let t0 = 0;
  const end = Date.now() + 600_000;
  for (;;) {
    if (Date.now() > end) throw new Error(`node${i} did not sync to ${target}`);
    const h = await height(ip);
    if (first < 0 && h > 0) {
      first = h;
      t0 = performance.now();
    }
    if (h >= target) return { blocks: h - first, ms: performance.now() - t0 };
    await sleep(20);
  }
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const results: Record<string, unknown> = {
    when: new Date().toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model, loadavg: loadavg() },
    args,
  };
  process.on('SIGINT', () => {
    for (const p of running) p.kill('SIGKILL');
    process.exit(130);
  });

  // 1. Block interval, 4 validators, timeout_commit 1s.
  const net = createNet(4, 2, '1s');
  try {
    for (let i = 0; i < 4; i++) startNode(net, i);
    const vips = net.ips.slice(0, 4);
    await waitHeight(vips, 2, 90_000);
    const from = await height(vips[0]!);
    log(`4 validators up at height ${from}; waiting for ${args.blocks} blocks`);
    await waitHeight(vips, from + args.blocks, args.blocks * 3000 + 60_000);
    const intervals = await blockIntervals(vips[0]!, from, from + args.blocks);
    const hashes = await Promise.all(vips.map((ip) => comet(ip, `/block?height=${from + args.blocks}`)));
    const agree = new Set(hashes.map((b) => (b.block_id as { hash: string }).hash)).size === 1;
    const sorted = [...intervals].sort((a, b) => a - b);
    results.blockInterval = {
      blocks: intervals.length,
      medianMs: median(intervals),
      p90Ms: sorted[Math.floor(sorted.length * 0.9)],
      maxMs: sorted[sorted.length - 1],
      agree,
    };
    log(
      `block interval: median ${median(intervals)?.toFixed(0)} ms over ${intervals.length} blocks; agree=${agree}`,
    );

    // 3a. Sync of empty blocks by a fresh full node.
    const tipEmpty = await height(vips[0]!);
    const syncEmpty = await measureSync(net, 4, tipEmpty);
    results.syncEmpty = { ...syncEmpty, blocksPerSec: syncEmpty.blocks / (syncEmpty.ms / 1000) };
    log(`sync, empty blocks: ${syncEmpty.blocks} in ${syncEmpty.ms.toFixed(0)} ms`);

    // 2. Transfers through the 4 validators.
    await waitEth(vips[0]!);
    const rpc0 = new JsonRpcClient(`http://${vips[0]}:8545`);
    const load = await presign(rpc0, args.senders, args.perSender);
    rpc0.close();
    const hBefore = await height(vips[0]!);
    const net4 = await measuredLoad(net, [0, 1, 2, 3], load);
    const hAfter = await height(vips[0]!);
    results.transfers4 = { ...net4, txPerSec: net4.txs / (net4.ms / 1000), blocks: hAfter - hBefore };
    log(`4 validators: ${net4.txs} transfers in ${net4.ms.toFixed(0)} ms`);

    // 3b. Sync of the transfer blocks by a second fresh full node (from genesis: empty then full blocks).
    const tip = await height(vips[0]!);
    const syncAll = await measureSync(net, 5, tip);
    results.syncWithTransfers = {
      ...syncAll,
      blocksPerSec: syncAll.blocks / (syncAll.ms / 1000),
      transferBlocks: hAfter - hBefore,
      transfers: net4.txs,
    };
    log(`sync, all blocks: ${syncAll.blocks} in ${syncAll.ms.toFixed(0)} ms`);
  } finally {
    await stopNet(net);
  }

  // 2'. The same transfers on a single validator, same machine, same run.
  const single = createNet(1, 0, '1s');
  try {
    startNode(single, 0);
    await waitHeight(single.ips, 2, 60_000);
    await waitEth(single.ips[0]!);
    const rpc = new JsonRpcClient(`http://${single.ips[0]}:8545`);
    const load = await presign(rpc, args.senders, args.perSender);
    rpc.close();
    const one = await measuredLoad(single, [0], load);
    results.transfers1 = { ...one, txPerSec: one.txs / (one.ms / 1000) };
    log(`1 validator: ${one.txs} transfers in ${one.ms.toFixed(0)} ms`);
  } finally {
    await stopNet(single);
  }

  const r = results as {
    blockInterval: { medianMs: number; p90Ms: number; maxMs: number; blocks: number; agree: boolean };
    transfers4: LoadResult & { txPerSec: number; blocks: number };
    transfers1: LoadResult & { txPerSec: number };
    syncEmpty: { blocksPerSec: number; blocks: number };
    syncWithTransfers: { blocksPerSec: number; blocks: number; transferBlocks: number };
  };
  const rows = [
    [
      '4 validators: median block interval',
      `${r.blockInterval.medianMs.toFixed(0)} ms (p90 ${r.blockInterval.p90Ms.toFixed(0)}, max ${r.blockInterval.maxMs.toFixed(0)}, ${r.blockInterval.blocks} blocks, same hash on all: ${r.blockInterval.agree})`,
    ],
    ['transfers/s, 4 validators', `${r.transfers4.txPerSec.toFixed(0)} (${r.transfers4.blocks} blocks)`],
    ['transfers/s, 1 validator', r.transfers1.txPerSec.toFixed(0)],
    ['ratio 4 validators / 1', (r.transfers4.txPerSec / r.transfers1.txPerSec).toFixed(2)],
    [
      'node CPU per transfer, 4 validators (sum) / 1',
      `${r.transfers4.nodeCpuMsPerTx.toFixed(2)} ms / ${r.transfers1.nodeCpuMsPerTx.toFixed(2)} ms (cores busy ${r.transfers4.coresBusy.toFixed(2)} / ${r.transfers1.coresBusy.toFixed(2)} of ${cpus().length})`,
    ],
    [
      'load generator CPU per transfer, 4 / 1',
      `${r.transfers4.clientCpuMsPerTx.toFixed(3)} ms / ${r.transfers1.clientCpuMsPerTx.toFixed(3)} ms`,
    ],
    [
      'block sync, empty blocks',
      `${r.syncEmpty.blocksPerSec.toFixed(0)} blocks/s over ${r.syncEmpty.blocks}`,
    ],
    [
      'block sync, whole chain incl. transfer blocks',
      `${r.syncWithTransfers.blocksPerSec.toFixed(0)} blocks/s over ${r.syncWithTransfers.blocks} (${r.syncWithTransfers.transferBlocks} with transfers)`,
    ],
  ];
  console.log('');
  for (const [k, v] of rows) console.log(`${k.padEnd(48)} ${v}`);
  const dir = join(repoRoot(), 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `network-${Date.now()}.json`);
  writeFileSync(file, JSON.stringify(results, null, 2));
  log(`results in ${file}`);
}

main().catch((err) => {
  for (const p of running) p.kill('SIGKILL');
  console.error(`[bench:network] ${(err as Error).stack ?? String(err)}`);
  process.exit(1);
});
