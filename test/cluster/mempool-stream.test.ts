// The executor's mempool as the consensus service sees it, through real processes (nats-server,
// `noded service executor`, `consensus`, `state-store`, `rpc-edge`) on one chain-local home paced
// for blocks on demand only (an empty block 120 s after the last): a transfer sent to the rpc-edge
// (not through consensus' RPC) has its receipt within seconds, since consensus hears of it on
// StreamAdmitted, and the edge refuses evm_setAutomine / evm_mine saying what paces the cluster; unconfirmed_txs / num_unconfirmed_txs on consensus' :26657
// answer the executor's pool, and the same JSON as `noded start` on the same home with the same pool;
// a StreamAdmitted consumer gets the pool, then each admission, and after kill -9 of the executor and
// its restart reconnects by itself; blocks on demand work again after the restart; a consumer that
// does not read is cut off with RESOURCE_EXHAUSTED once it is NODED_MEMPOOL_STREAM_MAX_BYTES behind,
// and the executor counts it in its metrics.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { AdmissionStream, type AdmittedBatch, GrpcMempool, mempoolProto } from '@noded/abci-grpc';
import { keccak256 } from '@noded/crypto';
import { silentLogger } from '@noded/types';
import { Wallet } from 'ethers';
import { DEV_ADDRESSES, DEV_KEYS, freePort, initLocalHome, startAllInOne } from '../e2e/harness.js';
import { startNatsServer } from './nats.js';
import { comet, type ServiceProcess, spawnService, until, waitForService } from './processes.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const GWEI = 1_000_000_000n;

async function signed(key: string, nonce: number, data = '0x'): Promise<Uint8Array> {
  const raw = await new Wallet(key).signTransaction({
    type: 2,
    chainId: 31337,
    nonce,
    to: DEV_ADDRESSES[1],
    value: 1n,
    data,
    gasLimit: data === '0x' ? 21_000 : 2_000_000,
    maxFeePerGas: 50n * GWEI,
    maxPriorityFeePerGas: 1n * GWEI,
  });
  return Buffer.from(raw.slice(2), 'hex');
}

/** A JSON-RPC call; an error is thrown as "<code> <message>". */
async function ethRpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(10_000),
  });
  const j = (await res.json()) as { result?: unknown; error?: { code: number; message: string } };
  if (j.error) throw new Error(`${j.error.code} ${j.error.message}`);
  return j.result;
}

const hexOf = (b: Uint8Array) => `0x${Buffer.from(b).toString('hex')}`;
const heightOf = async (rpc: string) =>
  Number(
    (await comet<{ sync_info: { latest_block_height: string } }>(rpc, 'status')).sync_info
      .latest_block_height,
  );

/** Heights from..to of consensus' block store that hold `raw` (base64 as /block shows it). */
async function blockWith(rpc: string, raw: Uint8Array, from: number): Promise<number | undefined> {
  const to = await heightOf(rpc);
  const b64 = Buffer.from(raw).toString('base64');
  for (let h = from; h <= to; h++) {
    const b = await comet<{ block: { data: { txs: string[] | null } } }>(rpc, `block?height=${h}`);
    if ((b.block.data.txs ?? []).includes(b64)) return h;
  }
  return undefined;
}

describe('the executor mempool over gRPC in the cluster', { timeout: 400_000 }, () => {
  it('blocks on demand from streamed admissions, unconfirmed_txs, a stream that survives an executor restart, a slow consumer cut off', async () => {
    const { home, ports } = await initLocalHome({
      extra: (c) => {
        if (!c.consensus) return;
        // Blocks on demand only: without a transaction the next block is 120 s away.
        c.consensus.create_empty_blocks_interval = '120s';
        c.consensus.skip_timeout_commit = true;
        c.consensus.timeout_commit = '1s';
      },
    });
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const nats = await startNatsServer();
    cleanups.push(() => nats.stop());
    const grpcAt = `127.0.0.1:${await freePort()}`;
    const executorMetrics = `127.0.0.1:${await freePort()}`;
    const env = {
      NODED_EXECUTOR_GRPC_ADDRESS: grpcAt,
      NODED_EXECUTOR_WAIT: '60s',
      NODED_NATS_URL: nats.url,
      NODED_STATE_STORE_GRPC_ADDRESS: `127.0.0.1:${await freePort()}`,
    };
    const executorEnv = {
      ...env,
      NODED_SERVICE_METRICS_ADDRESS: executorMetrics,
      // 256 KiB: a consumer that does not read is cut off after a few large transactions.
      NODED_MEMPOOL_STREAM_MAX_BYTES: String(256 * 1024),
    };
    const rpc = `http://127.0.0.1:${ports.rpc}`;
    const running: ServiceProcess[] = [];
    cleanups.push(async () => {
      for (const s of running.reverse()) await s.stop();
    });
    const mempool = new GrpcMempool(grpcAt);
    cleanups.push(() => mempool.close());

    let executor = spawnService('executor', home, executorEnv);
    running.push(executor);
    await waitForService(executor, /noded service executor is running/);
    const consensus = spawnService('consensus', home, env);
    running.push(consensus);
    await waitForService(consensus, /noded service consensus is running/, 90_000);
    const store = spawnService('state-store', home, env);
    running.push(store);
    await waitForService(store, /noded service state-store is running/, 90_000);
    const edge = spawnService('rpc-edge', home, env);
    running.push(edge);
    await waitForService(edge, /noded service rpc-edge is running/, 90_000);
    const evm = `http://127.0.0.1:${ports.evmHttp}`;
    // The chain settles (the genesis height and the proof block after it), then stays put.
    await until('consensus idle', 60_000, async () => {
      const h = await heightOf(rpc);
      await new Promise((r) => setTimeout(r, 2_500));
      return h >= 1 && (await heightOf(rpc)) === h ? h : undefined;
    });
    const idle = await heightOf(rpc);

    // ---- a StreamAdmitted consumer: the (empty) pool first, then each admission ----------------
    const stream = new AdmissionStream(grpcAt, {
      logger: silentLogger,
      minBackoffMs: 100,
      maxBackoffMs: 500,
    });
    cleanups.push(() => stream.stop());
    const batches: AdmittedBatch[] = [];
    stream.onBatch((b) => batches.push(b));
    stream.start();
    await until('the pool snapshot', 10_000, async () => (batches.length > 0 ? true : undefined));
    assert.deepEqual(
      batches[0],
      { pool: true, devQueued: false, txs: [] },
      'an empty pool is one empty snapshot',
    );

    // ---- blocks on demand: a transfer sent to the rpc-edge, whose receipt the edge gives ---------
    const key = DEV_KEYS[0]!;
    const first = await signed(key, 0);
    const sentAt = Date.now();
    const hash = (await ethRpc(evm, 'eth_sendRawTransaction', [hexOf(first)])) as string;
    const receipt = await until(
      'the receipt through the edge',
      20_000,
      async () =>
        ((await ethRpc(evm, 'eth_getTransactionReceipt', [hash])) ?? undefined) as
          | { blockNumber: string; status: string }
          | undefined,
    );
    const onDemandMs = Date.now() - sentAt;
    assert.equal(receipt.status, '0x1');
    const included = await blockWith(rpc, first, idle + 1);
    assert.equal(included, Number(receipt.blockNumber));
    console.log(
      `# blocks on demand: eth_sendRawTransaction on the edge -> receipt on the edge (block ${included}) after ${onDemandMs} ms`,
    );
    // The dev-chain pacing methods are refused by the edge, saying why and what paces the cluster.
    for (const method of ['evm_setAutomine', 'evm_mine']) {
      await assert.rejects(ethRpc(evm, method, method === 'evm_mine' ? [] : [true]), (err: Error) => {
        assert.equal(
          err.message,
          `-32000 ${method} is not served by the cluster: of the dev-chain methods it serves only the state setters and impersonation (mining, time and snapshots run in \`noded start\` on chain-local); the cluster makes blocks on demand as config.toml paces them ([consensus] create_empty_blocks_interval, docs/cluster.md)`,
        );
        return true;
      });
    }
    const streamed = batches.flatMap((b) => (b.pool ? [] : b.txs));
    assert.deepEqual(
      streamed.map((t) => [t.hash, hexOf(t.raw)]),
      [[hash, hexOf(first)]],
      'the stream carried the admission with its hash',
    );

    // ---- unconfirmed_txs: a transaction behind a nonce gap stays in the pool ---------------------
    const gapped = await signed(key, 5);
    await mempool.sendRawTransaction(gapped);
    const gappedB64 = Buffer.from(gapped).toString('base64');
    const unconfirmed = await comet(rpc, 'unconfirmed_txs?limit=10');
    assert.deepEqual(unconfirmed, {
      n_txs: '1',
      total: '1',
      total_bytes: String(gapped.length),
      txs: [gappedB64],
    });
    const num = await comet(rpc, 'num_unconfirmed_txs');
    assert.deepEqual(num, { n_txs: '1', total: '1', total_bytes: String(gapped.length), txs: null });
    // A transaction behind a gap makes one block at most (its admission), not one per commit.
    const afterGap = await heightOf(rpc);
    await new Promise((r) => setTimeout(r, 4_000));
    assert.ok((await heightOf(rpc)) <= afterGap + 1, 'a queued transaction does not keep making blocks');

    // ---- kill -9 of the executor: the consumer reconnects by itself, the pool is empty again -----
    executor.proc.kill('SIGKILL');
    await executor.exited;
    running.splice(running.indexOf(executor), 1);
    await waitForService(
      consensus,
      /executor lost; waiting for it to come back|admission stream ended/,
      30_000,
    );
    const before = batches.length;
    executor = spawnService('executor', home, executorEnv);
    running.push(executor);
    await waitForService(executor, /noded service executor is running/);
    // An idle consensus does not call the executor, so it does not lose it: only the stream notices.
    await until('the stream reconnected', 30_000, async () =>
      batches.slice(before).some((b) => b.pool) ? true : undefined,
    );
    assert.ok(stream.connects >= 2, `the stream was opened ${stream.connects} times`);
    await until("consensus' admission stream open again", 30_000, async () =>
      /executor admission stream open again/.test(consensus.output()) ? true : undefined,
    );
    // The restarted executor's pool is empty (the mempool is not persisted, as CometBFT's).
    assert.equal((await comet<{ total: string }>(rpc, 'num_unconfirmed_txs')).total, '0');
    // Blocks on demand again, through the reconnected stream.
    const h2 = await heightOf(rpc);
    const second = await signed(key, 1);
    const t2 = Date.now();
    await mempool.sendRawTransaction(second);
    const included2 = await until('the second transfer in a block', 20_000, () => blockWith(rpc, second, h2));
    console.log(
      `# blocks on demand after the executor restart: in block ${included2} after ${Date.now() - t2} ms`,
    );
    await until('the second transfer streamed', 10_000, async () =>
      batches.some((b) => b.txs.some((t) => hexOf(t.raw) === hexOf(second))) ? true : undefined,
    );

    // ---- a consumer that never reads is cut off, and the executor counts it ---------------------
    const client = new grpc.Client(grpcAt, grpc.credentials.createInsecure());
    cleanups.push(() => client.close());
    const def = mempoolProto.MempoolService.streamAdmitted;
    const open = () =>
      client.makeBidiStreamRequest(
        def.path,
        def.requestSerialize,
        def.responseDeserialize,
        new grpc.Metadata(),
        {},
      );
    // An acknowledgement of a response never sent is refused, naming the field.
    const liar = open();
    liar.on('data', () => {});
    const liarEnd = new Promise<grpc.ServiceError>((resolve) => liar.on('error', resolve));
    liar.write({ includePool: true, ack: 0n });
    liar.write({ includePool: false, ack: 99n });
    const refused = await liarEnd;
    assert.equal(refused.code, grpc.status.INVALID_ARGUMENT);
    assert.match(refused.details, /StreamAdmittedRequest\.ack: 99 is above the last seq sent \(1\)/);
    // A consumer that reads but never acknowledges: the server keeps at most the bound for it.
    const stuck = open();
    let stuckGot = 0;
    stuck.on('data', () => {
      stuckGot++;
    });
    const stuckEnd = new Promise<grpc.ServiceError>((resolve) => stuck.on('error', resolve));
    stuck.write({ includePool: false, ack: 0n });
    // ~120 KB transactions behind a nonce gap (they stay in the pool, unmined), from other senders.
    const big = `0x${'00'.repeat(120_000)}`;
    let sent = 0;
    let cut: grpc.ServiceError | undefined;
    stuckEnd.then((e) => {
      cut = e;
    });
    for (let k = 2; k < DEV_KEYS.length && cut === undefined; k++) {
      for (let n = 1; n < 64 && cut === undefined; n++) {
        await mempool.sendRawTransaction(await signed(DEV_KEYS[k]!, n, big));
        sent++;
        await new Promise((r) => setImmediate(r));
      }
    }
    const err = await Promise.race([
      stuckEnd,
      new Promise<undefined>((r) => setTimeout(() => r(undefined), 10_000)),
    ]);
    assert.ok(err, `the stuck consumer was not cut off after ${sent} large admissions`);
    assert.equal(err.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.match(err.details, /over 262144 bytes behind \(\$NODED_MEMPOOL_STREAM_MAX_BYTES\)/);
    console.log(
      `# a consumer that never acknowledges: cut off after ${sent} admissions of ~120 KB (${stuckGot} responses)`,
    );
    // The server held at most the bound for it: cut off at the admission that would pass it.
    const behind = /"behind":(\d+),"max":262144/.exec(executor.output());
    assert.ok(behind, 'the executor logged the cut-off');
    assert.ok(Number(behind[1]) <= 262_144 && Number(behind[1]) + 120_000 > 262_144, behind[0]);
    const metrics = await (await fetch(`http://${executorMetrics}/metrics`)).text();
    assert.match(metrics, /_mempool_admission_stream_cutoffs_total\{chain_id="chain-local"\} 1\b/);
    // consensus' own stream kept up and still counts as a consumer.
    assert.match(metrics, /_mempool_admission_streams\{chain_id="chain-local"\} [12]\b/);
    assert.ok(
      batches.some((b) => b.txs.some((t) => t.raw.length > 100_000)),
      'the reading consumer got the large transactions',
    );

    // ---- a pool larger than the bound is sent as the consumer acknowledges, never all at once ------
    for (let n = 1; n <= 12; n++) await mempool.sendRawTransaction(await signed(DEV_KEYS[3]!, n, big));
    const poolTotal = Number((await comet<{ total: string }>(rpc, 'num_unconfirmed_txs')).total);
    assert.ok(poolTotal >= 13, `pool of ${poolTotal}`);
    const slow = open();
    const slowGot: Array<{ seq: bigint; pool: boolean; txs: unknown[] }> = [];
    slow.on('data', (m: { seq: bigint; pool: boolean; txs: unknown[] }) => slowGot.push(m));
    slow.on('error', () => {});
    slow.write({ includePool: true, ack: 0n });
    await until('the first part of the pool', 10_000, async () => (slowGot.length > 0 ? true : undefined));
    await new Promise((r) => setTimeout(r, 1_500));
    // One message (up to 1 MiB) is past the 256 KiB bound: nothing more until it is acknowledged.
    assert.equal(slowGot.length, 1, 'one message in flight without an acknowledgement');
    assert.equal(slowGot[0]!.pool, true);
    let got = slowGot[0]!.txs.length;
    while (got < poolTotal) {
      const last = slowGot[slowGot.length - 1]!;
      slow.write({ includePool: false, ack: last.seq });
      const before = slowGot.length;
      await until('the next part of the pool', 10_000, async () =>
        slowGot.length > before ? true : undefined,
      );
      got += slowGot[slowGot.length - 1]!.txs.length;
    }
    assert.equal(got, poolTotal, 'the whole pool, part by part');
    assert.ok(slowGot.every((m) => m.pool));
    slow.cancel();

    // ---- the same unconfirmed_txs JSON as `noded start` on this home with the same pool ---------
    stream.stop();
    for (const s of running.reverse()) await s.stop();
    running.length = 0;
    // The same transaction behind its gap, sent to `noded start`'s JSON-RPC: the same two answers.
    const node = await startAllInOne(home, ports);
    cleanups.push(() => node.stop());
    assert.equal(await ethRpc(evm, 'eth_sendRawTransaction', [hexOf(gapped)]), hexOf(keccak256(gapped)));
    assert.deepEqual(await comet(rpc, 'unconfirmed_txs?limit=10'), unconfirmed);
    assert.deepEqual(await comet(rpc, 'num_unconfirmed_txs'), num);
  });
});
