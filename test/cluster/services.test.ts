// nats-server (JetStream), `noded service executor` and `noded service consensus` as separate
// processes on one chain-local home: blocks are made through the ABCI gRPC contract, a transaction
// broadcast on consensus' :26657 is committed by the executor, the executor answers grpc.health.v1
// and publishes one JetStream message per height, and kill -9 of the executor followed by its
// restart loses nothing (consensus waits, then replays what the executor lacks; the stream has
// every height once). Bad arguments and variables are refused with the name of what is wrong.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { ABCI_SERVICE_NAME, healthProto } from '@noded/abci-grpc';
import { blocksStreamName, decodeCommitted } from '@noded/stream';
import { Wallet } from 'ethers';
import { connect } from 'nats';
import { DEV_ADDRESSES, DEV_KEYS, freePort, initLocalHome, runCli } from '../e2e/harness.js';
import { startNatsServer } from './nats.js';
import { comet, type ServiceProcess, spawnService, until, waitForService } from './processes.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const GWEI = 1_000_000_000n;

async function transfer(nonce: number, valueWei: bigint): Promise<string> {
  const raw = await new Wallet(DEV_KEYS[0]).signTransaction({
    type: 2,
    chainId: 31337,
    nonce,
    to: DEV_ADDRESSES[1],
    value: valueWei,
    gasLimit: 21_000,
    maxFeePerGas: 50n * GWEI,
    maxPriorityFeePerGas: 1n * GWEI,
  });
  return raw;
}

interface TxCommit {
  check_tx: { code: number; log: string };
  tx_result: { code: number; log: string };
  hash: string;
  height: string;
}

async function health(address: string, service: string): Promise<number> {
  const client = new healthProto.HealthClient(address, grpc.credentials.createInsecure());
  try {
    return await new Promise<number>((resolve, reject) =>
      client.check({ service }, new grpc.Metadata(), { deadline: Date.now() + 5_000 }, (err, res) =>
        err ? reject(err) : resolve(res.status),
      ),
    );
  } finally {
    client.close();
  }
}

const heightOf = async (rpc: string) =>
  Number(
    (await comet<{ sync_info: { latest_block_height: string } }>(rpc, 'status')).sync_info
      .latest_block_height,
  );

describe('noded service executor + consensus', () => {
  it('make blocks over gRPC, commit a broadcast transaction, and survive kill -9 of the executor', async () => {
    const { home, ports } = await initLocalHome({ timeoutCommit: '300ms' });
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const nats = await startNatsServer();
    cleanups.push(() => nats.stop());
    const grpcAt = `127.0.0.1:${await freePort()}`;
    const env = { NODED_EXECUTOR_GRPC_ADDRESS: grpcAt, NODED_EXECUTOR_WAIT: '60s', NODED_NATS_URL: nats.url };
    const rpc = `http://127.0.0.1:${ports.rpc}`;
    const running: ServiceProcess[] = [];
    cleanups.push(async () => {
      for (const s of running.reverse()) await s.stop();
    });

    let executor = spawnService('executor', home, env);
    running.push(executor);
    await waitForService(executor, /noded service executor is running/);
    assert.equal(await health(grpcAt, ''), healthProto.HealthCheckResponse_ServingStatus.SERVING);
    assert.equal(
      await health(grpcAt, ABCI_SERVICE_NAME),
      healthProto.HealthCheckResponse_ServingStatus.SERVING,
    );

    const consensus = spawnService('consensus', home, env);
    running.push(consensus);
    await waitForService(consensus, /noded service consensus is running/);
    await until('consensus reaches height 3', 60_000, async () =>
      (await heightOf(rpc)) >= 3 ? true : undefined,
    );

    // A transfer through :26657 is checked by the executor over gRPC and committed.
    const firstRaw = await transfer(0, 7n * GWEI);
    const first = await comet<TxCommit>(rpc, `broadcast_tx_commit?tx=${firstRaw}`);
    assert.equal(first.check_tx.code, 0, first.check_tx.log);
    assert.equal(first.tx_result.code, 0, first.tx_result.log);
    const txHeight = Number(first.height);
    assert.ok(txHeight >= 1);
    // the same transaction again is refused by the executor's checks, naming why
    const again = await comet<TxCommit>(rpc, `broadcast_tx_commit?tx=${await transfer(0, 7n * GWEI)}`);
    assert.notEqual(again.check_tx.code, 0, 'a replayed nonce is refused');
    assert.match(again.check_tx.log, /nonce|known|already/i);

    const info = await comet<{ response: { last_block_height: string } }>(rpc, 'abci_info');
    assert.ok(Number(info.response.last_block_height) >= txHeight, 'abci_info reaches the executor');

    // kill -9 of the executor: consensus stops making blocks and waits for it.
    executor.proc.kill('SIGKILL');
    await executor.exited;
    running.splice(running.indexOf(executor), 1);
    await waitForService(consensus, /executor lost; waiting for it to come back/, 30_000);
    const stalled = await heightOf(rpc);
    await new Promise((r) => setTimeout(r, 1500));
    assert.ok((await heightOf(rpc)) <= stalled + 1, 'no block is made without the executor');

    executor = spawnService('executor', home, env);
    running.push(executor);
    await waitForService(executor, /noded service executor is running/);
    await waitForService(consensus, /executor back; consensus restarted/, 60_000);
    await until('blocks again after the executor came back', 60_000, async () =>
      (await heightOf(rpc)) >= stalled + 3 ? true : undefined,
    );

    // Nothing lost: the first transfer's nonce is used (a second with nonce 1 commits), the executor
    // is at consensus' height, and every height has its block and results.
    const second = await comet<TxCommit>(rpc, `broadcast_tx_commit?tx=${await transfer(1, 5n * GWEI)}`);
    assert.equal(second.check_tx.code, 0, second.check_tx.log);
    assert.equal(second.tx_result.code, 0, second.tx_result.log);
    const top = await heightOf(rpc);
    const after = await comet<{ response: { last_block_height: string } }>(rpc, 'abci_info');
    assert.ok(
      Number(after.response.last_block_height) >= top - 1,
      `executor at ${after.response.last_block_height}, consensus at ${top}`,
    );
    for (let h = 1; h <= top; h++) {
      const b = await comet<{ block: { header: { height: string } } }>(rpc, `block?height=${h}`);
      assert.equal(b.block.header.height, String(h));
      const r = await comet<{ height: string }>(rpc, `block_results?height=${h}`);
      assert.equal(r.height, String(h));
    }
    const tx = await comet<{ height: string; tx_result: { code: number } }>(rpc, `tx?hash=0x${first.hash}`);
    assert.equal(Number(tx.height), txHeight);
    assert.equal(tx.tx_result.code, 0);

    // JetStream holds every height the executor committed, once, in order, with the transfer.
    const nc = await connect({ servers: nats.url });
    cleanups.push(() => nc.close());
    const jsm = await nc.jetstreamManager();
    const stream = blocksStreamName('chain-local');
    const executorTop = Number(after.response.last_block_height);
    const messages = await until('the stream reaches the executor height', 30_000, async () => {
      const n = (await jsm.streams.info(stream)).state.messages;
      return n >= executorTop + 1 ? n : undefined;
    });
    const seen: number[] = [];
    let withTx = 0;
    for (let seq = 1; seq <= messages; seq++) {
      const m = await jsm.streams.getMessage(stream, { seq });
      const r = decodeCommitted(m.data);
      assert.equal(m.header?.get('Nats-Msg-Id'), String(r.height));
      seen.push(r.height);
      if (r.txs.some((t) => `0x${Buffer.from(t.raw).toString('hex')}` === firstRaw)) withTx = r.height;
    }
    assert.deepEqual(
      seen,
      Array.from({ length: messages }, (_, i) => i),
      'every height once, in order',
    );
    assert.equal(withTx, txHeight, "the transfer is in its height's message");

    // SIGTERM stops both cleanly (exit 0).
    assert.equal(await consensus.stop(), 0, consensus.output().slice(-2000));
    assert.equal(await executor.stop(), 0, executor.output().slice(-2000));
    running.length = 0;
  });

  it('refuses an unknown service, bad variables and a missing executor, naming what is wrong', async () => {
    const { home } = await initLocalHome();
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const unknown = runCli(['service', 'sentry', '--home', home]);
    assert.equal(unknown.code, 1);
    assert.match(
      unknown.stderr,
      /<name>: must be one of executor, consensus, state-store, rpc-edge, metrics, p2p-gateway, got "sentry"/,
    );

    const bad = runCli(['service', 'executor', '--home', home], {
      NODED_EXECUTOR_GRPC_ADDRESS: 'localhost',
      NODED_NATS_URL: 'http://127.0.0.1:4222',
      NODED_API_ADDRESS: 'nowhere',
      NODED_STATE_STORE_DB: join(home, 'data', 'application.db'),
      NODED_STATE_STORE_GRPC_ADDRESS: '127.0.0.1:99999',
      NODED_CONSENSUS_RPC_ADDRESS: 'http://127.0.0.1:26657',
      NODED_P2P_GATEWAY_ADDRESS: 'gateway',
    });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /\$NODED_EXECUTOR_GRPC_ADDRESS: must be host:port .*got "localhost"/);
    assert.match(
      bad.stderr,
      /\$NODED_NATS_URL: each URL must be nats:\/\/host:port or tls:\/\/host:port, got "http:\/\/127\.0\.0\.1:4222"/,
    );
    assert.match(bad.stderr, /app\.toml: api\.address: .*\(set by \$NODED_API_ADDRESS\)/);
    assert.match(bad.stderr, /\$NODED_STATE_STORE_DB: must not be the node's own application\.db/);
    assert.match(bad.stderr, /\$NODED_STATE_STORE_GRPC_ADDRESS: port must be 1\.\.65535, got 99999/);
    assert.match(
      bad.stderr,
      /\$NODED_CONSENSUS_RPC_ADDRESS: must be host:port .*got "http:\/\/127\.0\.0\.1:26657"/,
    );
    assert.match(bad.stderr, /\$NODED_P2P_GATEWAY_ADDRESS: must be host:port .*got "gateway"/);

    // An rpc-edge with all three endpoints disabled has nothing to serve, and says so.
    const idle = runCli(['service', 'rpc-edge', '--home', home], {
      NODED_EVM_RPC_ENABLE: 'false',
      NODED_EVM_RPC_WS_ENABLE: 'false',
      NODED_API_ENABLE: 'false',
    });
    assert.equal(idle.code, 1);
    assert.match(
      idle.stderr,
      /\[evm\.rpc\] enable and ws_enable and \[api\] enable are all false: an rpc-edge has nothing to serve/,
    );

    const nobody = `127.0.0.1:${await freePort()}`;
    const lonely = runCli(['service', 'consensus', '--home', home], {
      NODED_EXECUTOR_GRPC_ADDRESS: nobody,
      NODED_EXECUTOR_WAIT: '1s',
      NODED_RPC_LADDR: `tcp://127.0.0.1:${await freePort()}`,
    });
    assert.equal(lonely.code, 1);
    assert.match(lonely.stderr, new RegExp(`the executor at ${nobody} did not answer within 1000 ms`));
  });
});
