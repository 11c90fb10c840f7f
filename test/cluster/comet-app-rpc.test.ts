// The CometBFT RPC methods of consensus' :26657 that reach the executor's application and mempool,
// through real processes (nats-server, `noded service executor`, `consensus`) on one chain-local
// home with `[rpc] unsafe = true`: abci_query is the executor's Query (the same code as `noded
// start`: values, heights, errors), unsafe_flush_mempool is its FlushMempool, and HasExecutable
// answers whether a block could take a transaction without building the pool's summary (timed
// against UnconfirmedTxs(0) on a pool of 1,200 queued transactions). Then `noded start` on the same
// home answers the same abci_query JSON at the same heights and the same unsafe_flush_mempool.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { after, describe, it } from 'node:test';
import { GrpcMempool } from '@noded/abci-grpc';
import { keccak256 } from '@noded/crypto';
import { Wallet } from 'ethers';
import { DEV_ADDRESSES, DEV_KEYS, freePort, initLocalHome, startAllInOne } from '../e2e/harness.js';
import { startNatsServer } from './nats.js';
import { comet, type ServiceProcess, spawnService, until, waitForService } from './processes.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const GWEI = 1_000_000_000n;
const hexOf = (b: Uint8Array) => `0x${Buffer.from(b).toString('hex')}`;
const b64 = (s: string) => Buffer.from(s).toString('base64');

async function signed(key: string, nonce: number): Promise<Uint8Array> {
  const raw = await new Wallet(key).signTransaction({
    type: 2,
    chainId: 31337,
    nonce,
    to: DEV_ADDRESSES[1],
    value: 1n,
    gasLimit: 21_000,
    maxFeePerGas: 50n * GWEI,
    maxPriorityFeePerGas: 1n * GWEI,
  });
  return Buffer.from(raw.slice(2), 'hex');
}

interface QueryResponse {
  code: number;
  log: string;
  key: string | null;
  value: string | null;
  height: string;
}

const query = async (rpc: string, path: string, height: number) =>
  (
    await comet<{ response: QueryResponse }>(
      rpc,
      `abci_query?path=${encodeURIComponent(JSON.stringify(path))}&height=${height}`,
    )
  ).response;

/** The median of `n` timed calls of `fn`, in ms. */
async function medianMs(n: number, fn: () => Promise<unknown>): Promise<number> {
  const t: number[] = [];
  for (let i = 0; i < n; i++) {
    const s = performance.now();
    await fn();
    t.push(performance.now() - s);
  }
  t.sort((a, b) => a - b);
  return t[Math.floor(n / 2)]!;
}

describe("consensus' CometBFT RPC in the cluster: abci_query, unsafe_flush_mempool, HasExecutable", {
  timeout: 300_000,
}, () => {
  it('answers as `noded start` does on the same home', async () => {
    const { home, ports } = await initLocalHome({
      extra: (c) => {
        if (c.rpc) c.rpc.unsafe = true;
        // Room for a pool of queued transactions from three senders.
        if (c.mempool) c.mempool.max_txs_per_sender = 1000;
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
    const env = {
      NODED_EXECUTOR_GRPC_ADDRESS: grpcAt,
      NODED_EXECUTOR_WAIT: '60s',
      NODED_NATS_URL: nats.url,
    };
    const rpc = `http://127.0.0.1:${ports.rpc}`;
    const running: ServiceProcess[] = [];
    cleanups.push(async () => {
      for (const s of running.reverse()) await s.stop();
    });
    const mempool = new GrpcMempool(grpcAt);
    cleanups.push(() => mempool.close());
    const executor = spawnService('executor', home, env);
    running.push(executor);
    await waitForService(executor, /noded service executor is running/);
    const consensus = spawnService('consensus', home, env);
    running.push(consensus);
    await waitForService(consensus, /noded service consensus is running/, 90_000);

    // ---- a transfer of 1 base unit from dev 0 to dev 1, through consensus' broadcast_tx_sync ------
    const transfer = await signed(DEV_KEYS[0]!, 0);
    const sent = await comet<{ code: number }>(rpc, `broadcast_tx_sync?tx=${hexOf(transfer)}`);
    assert.equal(sent.code, 0);
    const tx = await until('the transfer committed', 30_000, async () => {
      const r = await fetch(`${rpc}/tx?hash=0x${Buffer.from(keccak256(transfer)).toString('hex')}`);
      const j = (await r.json()) as { result?: { height: string } };
      return j.result;
    });
    const h = Number(tx.height);

    // ---- abci_query: the executor's state at the heights asked, over Application/Query -----------
    const to = DEV_ADDRESSES[1].toLowerCase();
    const from = DEV_ADDRESSES[0].toLowerCase();
    const paths: Array<[string, number]> = [
      [`/evm/balance/${to}`, h],
      [`/evm/balance/${to}`, h - 1],
      [`/evm/nonce/${from}`, h],
      [`/evm/nonce/${from}`, h - 1],
      [`/evm/code/${from}`, h],
      [`/evm/storage/${from}/0x0`, h],
      ['/store/acc', h],
      [`/evm/balance/0x1234`, h],
      [`/evm/nonce/${from}/extra`, h],
      [`/evm/balance/${to}`, h + 1_000_000],
    ];
    const answers: QueryResponse[] = [];
    for (const [path, at] of paths) answers.push(await query(rpc, path, at));
    const [balAt, balBefore, nonceAt, nonceBefore, code, storage, unknown, badAddress, extra, future] =
      answers as [QueryResponse, ...QueryResponse[]] & QueryResponse[];
    const decoded = (r: QueryResponse) => Buffer.from(r.value ?? '', 'base64').toString();
    assert.equal(balAt!.code, 0, balAt!.log);
    assert.equal(balAt!.height, String(h));
    assert.equal(balAt!.key, b64(`/evm/balance/${to}`));
    assert.equal(BigInt(decoded(balAt!)) - BigInt(decoded(balBefore!)), 1n, 'the transfer moved 1 base unit');
    assert.equal(decoded(nonceAt!), '1');
    assert.equal(decoded(nonceBefore!), '0');
    assert.equal(decoded(code!), '0x');
    assert.equal(decoded(storage!), `0x${'0'.repeat(64)}`);
    assert.equal(unknown!.code, 1);
    assert.equal(
      unknown!.log,
      'unknown query path "/store/acc": use /evm/{balance,nonce,code}/<0xaddress> or /evm/storage/<0xaddress>/<0xslot>',
    );
    assert.equal(unknown!.value, null);
    assert.equal(badAddress!.log, 'invalid address "0x1234": must be 0x followed by 40 hex digits');
    assert.equal(extra!.log, `unknown query path "/evm/nonce/${from}/extra"`);
    assert.equal(future!.code, 1);
    assert.match(
      future!.log,
      new RegExp(`^state at height ${h + 1_000_000} is not available yet \\(latest \\d+\\)$`),
    );
    assert.equal(future!.height, String(h + 1_000_000));
    // Height 0 is the executor's latest: the transfer's height or later, with the same balance.
    const latest = await query(rpc, `/evm/balance/${to}`, 0);
    assert.ok(Number(latest.height) >= h, `latest ${latest.height} >= ${h}`);
    assert.equal(latest.value, balAt!.value);

    // ---- a pool of queued transactions (each sender's nonce 0 missing): 3 x 400 ----------------
    const queued: Uint8Array[] = [];
    for (const key of DEV_KEYS.slice(1)) for (let n = 1; n <= 400; n++) queued.push(await signed(key, n));
    for (const raw of queued) await mempool.sendRawTransaction(raw);
    const num = await comet<{ total: string }>(rpc, 'num_unconfirmed_txs');
    assert.equal(num.total, String(queued.length));
    // None is executable: nothing for a block. HasExecutable stops at each sender's first nonce;
    // UnconfirmedTxs(0) builds the summary of all 1,200 (what consensus asked after every block).
    assert.equal(await mempool.hasExecutable(), false);
    assert.equal((await mempool.unconfirmedTxs(0)).pending, 0);
    const summaryMs = await medianMs(200, () => mempool.unconfirmedTxs(0));
    const hasMs = await medianMs(200, () => mempool.hasExecutable());
    console.log(
      `# pool of ${queued.length} queued: UnconfirmedTxs(0) median ${summaryMs.toFixed(3)} ms, HasExecutable median ${hasMs.toFixed(3)} ms (gRPC round trip included, 200 calls each)`,
    );
    // Dev 1's missing nonce 0 makes its 400 executable: HasExecutable says so at once.
    await mempool.sendRawTransaction(await signed(DEV_KEYS[1]!, 0));
    assert.equal(await mempool.hasExecutable(), true);
    // Blocks on demand take dev 1's 401; the other two senders' 800 stay queued.
    await until('dev 1 mined', 60_000, async () =>
      (await comet<{ total: string }>(rpc, 'num_unconfirmed_txs')).total === '800' ? true : undefined,
    );
    assert.equal(await mempool.hasExecutable(), false);

    // ---- unsafe_flush_mempool: the executor's pool is emptied -----------------------------------
    const flushed = await comet(rpc, 'unsafe_flush_mempool');
    assert.deepEqual(flushed, {});
    assert.deepEqual(await comet(rpc, 'num_unconfirmed_txs'), {
      n_txs: '0',
      total: '0',
      total_bytes: '0',
      txs: null,
    });
    assert.match(executor.output(), /mempool flushed \(unsafe_flush_mempool\)/);
    // The pool takes transactions again; the flushed nonces can be sent anew.
    const again = queued[400]!; // dev 2's nonce 1, queued again
    await mempool.sendRawTransaction(again);
    assert.equal((await comet<{ total: string }>(rpc, 'num_unconfirmed_txs')).total, '1');
    const clusterFlush = await fetch(`${rpc}/unsafe_flush_mempool`).then((r) => r.json());

    // ---- `noded start` on the same home: the same answers at the same heights --------------------
    for (const s of running.reverse()) await s.stop();
    running.length = 0;
    const node = await startAllInOne(home, ports);
    cleanups.push(() => node.stop());
    // (A height not reached names the latest one, which moves on: compared without it.)
    const masked = (r: QueryResponse) => ({ ...r, log: r.log.replace(/\(latest \d+\)/, '(latest N)') });
    for (const [i, [path, at]] of paths.entries())
      assert.deepEqual(
        masked(await query(rpc, path, at)),
        masked(answers[i]!),
        `abci_query ${path} at ${at}`,
      );
    await fetch(`http://127.0.0.1:${ports.evmHttp}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'eth_sendRawTransaction',
        params: [hexOf(again)],
      }),
    });
    assert.equal((await comet<{ total: string }>(rpc, 'num_unconfirmed_txs')).total, '1');
    assert.deepEqual(await fetch(`${rpc}/unsafe_flush_mempool`).then((r) => r.json()), clusterFlush);
    assert.equal((await comet<{ total: string }>(rpc, 'num_unconfirmed_txs')).total, '0');
  });
});
