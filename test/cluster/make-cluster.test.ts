// scripts/cluster.sh (what `make cluster` runs after initialising the home): nats-server with
// JetStream and the executor, p2p-gateway, consensus, state-store and rpc-edge services as processes with prefixed
// output; blocks are made and published and the Ethereum JSON-RPC answers on app.toml's [evm]
// rpc_address through the edge; a service killed with -9 is restarted by the script;
// SIGTERM (what Ctrl-C does at a terminal) stops every process it started, and the script exits 0;
// the state-store's own RocksDB then holds every height, chained.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { RocksKV } from '@noded/storage';
import { blocksStreamName, ReplicaStore } from '@noded/stream';
import { connect } from 'nats';
import { DEV_ADDRESSES, freePort, initLocalHome, repoRoot } from '../e2e/harness.js';
import { comet, spawnService, until, waitForService } from './processes.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('make cluster (scripts/cluster.sh)', () => {
  it('runs nats-server, executor and consensus, restarts a killed service, and stops them all on SIGTERM', async () => {
    const { home, ports } = await initLocalHome({ timeoutCommit: '300ms' });
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const natsPort = await freePort();
    const executorAt = `127.0.0.1:${await freePort()}`;
    const stateStoreAt = `127.0.0.1:${await freePort()}`;
    const rpc = `http://127.0.0.1:${ports.rpc}`;
    let out = '';
    const script = spawn('bash', [join(repoRoot(), 'scripts', 'cluster.sh'), home], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        NATS_PORT: String(natsPort),
        NODED_EXECUTOR_GRPC_ADDRESS: executorAt,
        NODED_STATE_STORE_GRPC_ADDRESS: stateStoreAt,
        EXECUTOR_METRICS: `127.0.0.1:${await freePort()}`,
        CONSENSUS_METRICS: `127.0.0.1:${await freePort()}`,
        STATE_STORE_METRICS: `127.0.0.1:${await freePort()}`,
        RPC_EDGE_METRICS: `127.0.0.1:${await freePort()}`,
        P2P_GATEWAY_METRICS: `127.0.0.1:${await freePort()}`,
        NODED_P2P_GATEWAY_ADDRESS: `127.0.0.1:${await freePort()}`,
      },
    });
    script.stdout.on('data', (d) => {
      out += d;
    });
    script.stderr.on('data', (d) => {
      out += d;
    });
    const exited = new Promise<number | null>((r) => script.once('exit', (code) => r(code)));
    const pids = new Set<number>();
    cleanups.push(async () => {
      if (script.exitCode === null) {
        script.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
      }
      for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
    });
    const pidOf = (name: string, re: RegExp) =>
      until(`${name}'s pid in the output`, 60_000, async () => {
        const all = [...out.matchAll(re)].map((m) => Number(m[1]));
        return all.length > 0 ? all : undefined;
      });

    const heightOf = async () =>
      Number(
        (await comet<{ sync_info: { latest_block_height: string } }>(rpc, 'status')).sync_info
          .latest_block_height,
      );
    await until('blocks through the cluster', 90_000, async () =>
      (await heightOf()) >= 3 ? true : undefined,
    );
    assert.match(out, /^\[nats\] .*Server is ready/m);
    assert.match(out, /^\[executor\] noded service executor is running/m);
    assert.match(out, /^\[consensus\] noded service consensus is running/m);
    await until('the state-store runs', 60_000, async () =>
      /^\[state-store\] noded service state-store is running/m.test(out) ? true : undefined,
    );
    const natsPid = (await pidOf('nats', /^\[nats\] \[(\d+)\]/gm))[0]!;
    const [executorPid] = await pidOf(
      'executor',
      /^\[executor\] noded service executor is running \(pid (\d+)\)/gm,
    );
    const [consensusPid] = await pidOf(
      'consensus',
      /^\[consensus\] noded service consensus is running \(pid (\d+)\)/gm,
    );
    const [storePid] = await pidOf(
      'state-store',
      /^\[state-store\] noded service state-store is running \(pid (\d+)\)/gm,
    );
    const [edgePid] = await pidOf(
      'rpc-edge',
      /^\[rpc-edge\] noded service rpc-edge is running \(pid (\d+)\)/gm,
    );
    const [gatewayPid] = await pidOf(
      'p2p-gateway',
      /^\[p2p-gateway\] noded service p2p-gateway is running \(pid (\d+)\)/gm,
    );
    for (const p of [natsPid, executorPid!, consensusPid!, storePid!, edgePid!, gatewayPid!]) pids.add(p);
    // consensus attached to the gateway, whose host listens on the home's [p2p] laddr.
    await until('consensus attached to the gateway', 60_000, async () =>
      /^\[p2p-gateway\] .*consensus service attached/m.test(out) ? true : undefined,
    );
    const status = await comet<{ node_info: { listen_addr: string } }>(rpc, 'status');
    assert.equal(status.node_info.listen_addr, `127.0.0.1:${ports.p2p}`);
    const ethHeight = async (port = ports.evmHttp) => {
      const res = await fetch(`http://127.0.0.1:${port}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] }),
        signal: AbortSignal.timeout(10_000),
      });
      return Number(((await res.json()) as { result: string }).result);
    };
    await until('the edge answers eth_blockNumber', 60_000, async () =>
      (await ethHeight()) >= 3 ? true : undefined,
    );

    // The metrics service gathers every service on the home's prometheus_listen_addr.
    await until('the cluster metrics are ready', 60_000, async () =>
      (await fetch(`http://127.0.0.1:${ports.metrics}/readyz`)).status === 200 ? true : undefined,
    );
    const exposition = await (await fetch(`http://127.0.0.1:${ports.metrics}/metrics`)).text();
    for (const service of ['executor', 'consensus', 'state-store', 'rpc-edge', 'p2p-gateway', 'metrics'])
      assert.match(
        exposition,
        new RegExp(`^process_cpu_seconds_total\\{.*service="${service}"`, 'm'),
        service,
      );
    const [metricsPid] = await pidOf(
      'metrics',
      /^\[metrics\] noded service metrics is running \(pid (\d+)\)/gm,
    );
    pids.add(metricsPid!);

    // A second edge beside the script's: one command with env overrides (docs/cluster.md).
    const edge2Port = await freePort();
    const edge2Api = await freePort();
    const edge2 = spawnService('rpc-edge', home, {
      NODED_NATS_URL: `nats://127.0.0.1:${natsPort}`,
      NODED_STATE_STORE_GRPC_ADDRESS: stateStoreAt,
      NODED_EXECUTOR_GRPC_ADDRESS: executorAt,
      NODED_EVM_RPC_ADDRESS: `127.0.0.1:${edge2Port}`,
      NODED_EVM_WS_ADDRESS: `127.0.0.1:${await freePort()}`,
      // nats-server requires a login: the edge's, as the script wrote it (docs/cluster.md)
      NODED_NATS_USER: 'rpc-edge',
      NODED_NATS_PASSWORD_FILE: join(home, 'data', 'nats', 'rpc-edge.password'),
      NODED_API_ADDRESS: `tcp://127.0.0.1:${edge2Api}`,
      NODED_EVM_API_ADDRESS: `127.0.0.1:${edge2Api}`,
    });
    cleanups.push(() => edge2.stop());
    await waitForService(edge2, /noded service rpc-edge is running/, 60_000);
    await until('the second edge answers', 30_000, async () =>
      (await ethHeight(edge2Port)) >= 3 ? true : undefined,
    );
    // REST on both edges: blocks from consensus' RPC on [rpc] laddr, balances from the state-store.
    for (const api of [ports.api, edge2Api]) {
      const block = await fetch(`http://127.0.0.1:${api}/cosmos/base/tendermint/v1beta1/blocks/2`);
      assert.equal(block.status, 200);
      const json = (await block.json()) as { block: { header: { height: string; chain_id: string } } };
      assert.deepEqual([json.block.header.height, json.block.header.chain_id], ['2', 'chain-local']);
      const bank = await fetch(`http://127.0.0.1:${api}/cosmos/bank/v1beta1/balances/${DEV_ADDRESSES[1]}`);
      assert.equal(bank.status, 200);
      assert.equal(((await bank.json()) as { balances: unknown[] }).balances.length, 1);
    }
    await edge2.stop();

    // kill -9 of the executor: the script starts a new one, and blocks continue.
    process.kill(executorPid!, 'SIGKILL');
    const restarted = await until('a new executor', 60_000, async () => {
      const all = [...out.matchAll(/^\[executor\] noded service executor is running \(pid (\d+)\)/gm)].map(
        (m) => Number(m[1]),
      );
      return all.length >= 2 ? all[all.length - 1] : undefined;
    });
    pids.add(restarted);
    assert.match(out, /^\[executor\] exited with code 137; restarting in 1 s/m);
    const before = await heightOf();
    await until('blocks after the executor restarted', 90_000, async () =>
      (await heightOf()) >= before + 3 ? true : undefined,
    );
    await until('the edge follows past the restart', 60_000, async () =>
      (await ethHeight()) >= before + 2 ? true : undefined,
    );

    // every height the executor committed is in the stream
    // (nats-server refuses a client without a login; the state-store's may read the stream)
    await assert.rejects(
      connect({ servers: `nats://127.0.0.1:${natsPort}`, reconnect: false }),
      /Authorization Violation/i,
    );
    const nc = await connect({
      servers: `nats://127.0.0.1:${natsPort}`,
      user: 'state-store',
      pass: readFileSync(join(home, 'data', 'nats', 'state-store.password'), 'utf8').trim(),
      inboxPrefix: '_INBOX.state-store',
    });
    const info = await (await nc.jetstreamManager()).streams.info(blocksStreamName('chain-local'));
    await nc.close();
    assert.equal(info.state.first_seq, 1);
    assert.ok(info.state.messages >= before, `${info.state.messages} messages for ${before} heights`);

    script.kill('SIGTERM');
    const code = await Promise.race([
      exited,
      new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 45_000)),
    ]);
    assert.equal(code, 0, out.slice(-3000));
    assert.match(out, /\[cluster\] all services stopped/);
    assert.match(out, /^\[consensus\] noded: SIGTERM received, stopping service consensus/m);
    assert.match(out, /^\[executor\] noded: SIGTERM received, stopping service executor/m);
    assert.match(out, /^\[rpc-edge\] noded: SIGTERM received, stopping service rpc-edge/m);
    assert.match(out, /^\[metrics\] noded: SIGTERM received, stopping service metrics/m);
    assert.match(out, /^\[p2p-gateway\] noded: SIGTERM received, stopping service p2p-gateway/m);
    for (const p of pids) assert.equal(alive(p), false, `pid ${p} still runs after the script exited`);

    // the state-store followed the stream into its own RocksDB: every height, chained
    const kv = await RocksKV.open(join(home, 'data', 'state-store.db'));
    try {
      const replica = await ReplicaStore.open(kv, 'chain-local');
      assert.ok(replica.height >= before, `state-store at ${replica.height}, the chain passed ${before}`);
      for (let h = 1; h <= replica.height; h++) {
        assert.deepEqual((await replica.record(h))?.parentHash, (await replica.record(h - 1))?.blockHash);
      }
    } finally {
      await kv.close();
    }
  });
});
