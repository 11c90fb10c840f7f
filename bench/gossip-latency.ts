// `node dist/bench/gossip-latency.js [txs]` (after `npm run build`): mempool gossip latency from a
// cluster node to a peer. `noded testnet --validators 1 --non-validators 1`; node0 runs as the
// cluster (nats-server, `noded service executor`, `p2p-gateway`, `consensus`), node1 as `noded start`
// peered with it. Each of `txs` transactions (one at a time, each behind a nonce gap so that it stays
// in both pools and no block interferes) is admitted by node0's executor over its Mempool gRPC service
// (as an rpc-edge sends it), and the time until node1's `unconfirmed_txs` (polled every 2 ms) holds it
// is taken: admission on node0's executor -> node0's consensus learns of it -> the gateway -> node1's
// pool. NODED_BENCH_CLI=<path to another build's dist/services/noded/src/cli/main.js> runs another
// build's processes with this driver (how the before/after in docs/cluster.md was measured).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { GrpcMempool } from '@noded/abci-grpc';
import { Wallet } from 'ethers';
import { startNatsServer } from '../test/cluster/nats.js';
import { CLI, DEV_ADDRESSES, DEV_KEYS, freePort } from '../test/e2e/harness.js';
import { randomBaseIp } from '../test/e2e/network.js';

const cli = process.env.NODED_BENCH_CLI ?? CLI;
const count = Number(process.argv[2] ?? 40);
const GWEI = 1_000_000_000n;

interface Proc {
  name: string;
  proc: ChildProcess;
  out: () => string;
}

const procs: Proc[] = [];
function run(name: string, args: string[], env: NodeJS.ProcessEnv = {}): Proc {
  let out = '';
  const proc = spawn(process.execPath, [cli, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODED_SERVICE_METRICS_ADDRESS: '127.0.0.1:0', ...env },
  });
  const keep = (d: Buffer) => {
    out = (out + d.toString()).slice(-100_000);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  const p = { name, proc, out: () => out };
  procs.push(p);
  return p;
}

async function waitFor(what: string, ms: number, probe: () => Promise<boolean> | boolean): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    try {
      if (await probe()) return;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(
    `${what}: not within ${ms} ms\n${procs.map((p) => `--- ${p.name}\n${p.out().slice(-2000)}`).join('\n')}`,
  );
}

async function comet(url: string, path: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}/${path}`, { signal: AbortSignal.timeout(5_000) });
  return ((await res.json()) as { result: Record<string, unknown> }).result;
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'noded-gossip-bench-'));
  const base = randomBaseIp();
  const r = spawnSync(process.execPath, [
    cli,
    'testnet',
    '--validators',
    '1',
    '--non-validators',
    '1',
    '--output',
    join(dir, 'net'),
    '--chain-id',
    'chain-local',
    '--starting-ip',
    base,
  ]);
  if (r.status !== 0) throw new Error(`noded testnet failed: ${r.stderr}`);
  const ip = (i: number) => base.replace(/\d+$/, (n) => String(Number(n) + i));
  const home = (i: number) => join(dir, 'net', `node${i}`);
  const nats = await startNatsServer();
  const env = {
    NODED_NATS_URL: nats.url,
    NODED_EXECUTOR_GRPC_ADDRESS: `127.0.0.1:${await freePort()}`,
    NODED_P2P_GATEWAY_ADDRESS: `127.0.0.1:${await freePort()}`,
  };
  try {
    const executor = run('executor', ['service', 'executor', '--home', home(0)], env);
    await waitFor('executor', 90_000, () => /noded service executor is running/.test(executor.out()));
    const gateway = run('p2p-gateway', ['service', 'p2p-gateway', '--home', home(0)], env);
    await waitFor('gateway', 60_000, () => /noded service p2p-gateway is running/.test(gateway.out()));
    const consensus = run('consensus', ['service', 'consensus', '--home', home(0)], env);
    await waitFor('consensus', 90_000, () => /noded service consensus is running/.test(consensus.out()));
    run('node1', ['start', '--home', home(1)]);
    const node1 = `http://${ip(1)}:26657`;
    await waitFor('node1 peered and at height 2', 120_000, async () => {
      const ni = await comet(node1, 'net_info');
      const st = (await comet(node1, 'status')) as { sync_info: { latest_block_height: string } };
      return Number(ni.n_peers) >= 1 && Number(st.sync_info.latest_block_height) >= 2;
    });
    const mempool = new GrpcMempool(env.NODED_EXECUTOR_GRPC_ADDRESS);
    const wallet = new Wallet(DEV_KEYS[0]!);
    const latencies: number[] = [];
    for (let i = 0; i < count; i++) {
      // nonce 1 + i with nonce 0 never sent: each waits behind the gap in both pools (at most 63).
      const raw = await wallet.signTransaction({
        type: 2,
        chainId: 31337,
        nonce: 1 + (i % 63),
        to: DEV_ADDRESSES[1],
        value: BigInt(1 + i),
        gasLimit: 21_000,
        maxFeePerGas: 50n * GWEI + BigInt(i) * GWEI * 10n,
        maxPriorityFeePerGas: 1n * GWEI + BigInt(i) * GWEI,
      });
      const b64 = Buffer.from(raw.slice(2), 'hex').toString('base64');
      const t0 = performance.now();
      await mempool.sendRawTransaction(Buffer.from(raw.slice(2), 'hex'));
      const until = Date.now() + 10_000;
      let seen = false;
      while (!seen && Date.now() < until) {
        const u = (await comet(node1, 'unconfirmed_txs?limit=100')) as { txs: string[] | null };
        seen = (u.txs ?? []).includes(b64);
        if (!seen) await new Promise((r) => setTimeout(r, 2));
      }
      if (!seen) throw new Error(`transaction ${i} never reached node1's pool within 10 s`);
      latencies.push(performance.now() - t0);
      // spread the admissions over the poll interval (if any)
      await new Promise((r) => setTimeout(r, 37));
    }
    mempool.close();
    const mean = latencies.reduce((a, b) => a + b, 0) / latencies.length;
    console.log(
      JSON.stringify({
        cli,
        txs: count,
        p50_ms: Number(quantile(latencies, 0.5).toFixed(1)),
        p90_ms: Number(quantile(latencies, 0.9).toFixed(1)),
        max_ms: Number(Math.max(...latencies).toFixed(1)),
        mean_ms: Number(mean.toFixed(1)),
        loadavg: loadavg().map((x) => Number(x.toFixed(1))),
      }),
    );
  } finally {
    for (const p of procs.reverse()) {
      if (p.proc.exitCode === null && p.proc.signalCode === null) {
        p.proc.kill('SIGTERM');
        await new Promise((r) => {
          const t = setTimeout(() => p.proc.kill('SIGKILL'), 15_000);
          p.proc.once('exit', () => {
            clearTimeout(t);
            r(undefined);
          });
        });
      }
    }
    await nats.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
