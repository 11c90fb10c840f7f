// The bench's cluster targets (bench/cluster.ts) for real: nats-server with the services' logins, the
// executor, consensus, a state-store and two rpc-edges behind haproxy, each a process sampled on its
// own. Requests over several connections reach both edges (each edge's own CPU grows), a transfer
// sent through the proxy is committed and read back, and stop() ends every process.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { JsonRpcProvider, Wallet } from 'ethers';
import { startCluster } from '../../bench/cluster.js';
import { cpuSampler } from '../../bench/cpu.js';
import { runReads } from '../../bench/reads.js';
import { type BenchTarget, stopAllTargets } from '../../bench/targets.js';
import { DEV_ADDRESSES, DEV_KEYS } from '../e2e/harness.js';

after(() => stopAllTargets());

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('bench target cluster-2edges', () => {
  it('runs the services as processes behind haproxy: both edges serve, a transfer commits, stop ends them all', async () => {
    const target: BenchTarget = await startCluster({ edges: 2 });
    const procs = [...target.processes!];
    try {
      assert.deepEqual(
        procs.map((p) => p.name),
        ['nats-server', 'executor', 'consensus', 'state-store', 'rpc-edge-1', 'rpc-edge-2', 'haproxy'],
      );
      const sample = cpuSampler(procs);
      const a = sample();
      const r = await runReads('node', {
        url: target.httpUrl,
        bodies: [
          JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'eth_getBalance',
            params: [DEV_ADDRESSES[1], 'latest'],
          }),
        ],
        seconds: 3,
        warmupSeconds: 0,
        concurrency: 8,
        cpu: sample,
      });
      const b = sample();
      assert.equal(r.errors, 0);
      assert.ok(r.requests > 50, `${r.requests} requests in 3 s`);
      for (const edge of ['rpc-edge-1', 'rpc-edge-2'])
        assert.ok(b.perProcess[edge]! - a.perProcess[edge]! >= 20, `${edge} served none of 8 connections`);
      assert.ok(r.cpuPer1k && r.cpuPer1k['rpc-edge-1']! > 0 && r.cpuPer1k.all! >= r.cpuPer1k['rpc-edge-1']!);

      const provider = new JsonRpcProvider(target.httpUrl, 31337, {
        staticNetwork: true,
        cacheTimeout: -1,
        pollingInterval: 250,
      });
      try {
        const before = await provider.getBalance(DEV_ADDRESSES[3]);
        const tx = await new Wallet(DEV_KEYS[0], provider).sendTransaction({
          to: DEV_ADDRESSES[3],
          value: 777n,
        });
        assert.equal((await tx.wait(1, 90_000))?.status, 1);
        assert.equal(await provider.getBalance(DEV_ADDRESSES[3]), before + 777n);
      } finally {
        provider.destroy();
      }
    } finally {
      await target.stop();
    }
    for (const p of procs) assert.ok(!alive(p.pid), `${p.name} (pid ${p.pid}) still running after stop()`);
  });
});
