// The JSON-RPC edge protocol (libs/rpc/src/eth/edge.ts): an EthRpcServer built over an
// EthEdgeClient on one end of a MessageChannel, the chain behind an EthEdgeHost on the other, so
// every call, reply, event and log is structured-cloned as between the node's two threads.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MessageChannel } from 'node:worker_threads';
import {
  DevAccounts,
  defaultEthRpcOptions,
  EthEdgeClient,
  EthEdgeHost,
  EthRpcServer,
} from '@noded/rpc/src/eth/index.js';
import { EventBus, type Hex, type Logger } from '@noded/types';
import { Wallet } from 'ethers';
import { addr, FakeChain, LOGGER, REVERT_STRING } from './fake-chain.js';
import { call, DEV_KEYS, rpc, sleep, WsClient } from './helpers.js';

/** A signed EIP-1559 transfer of 1 wei to LOGGER, nonce 0. */
function transfer(key: string): Promise<string> {
  return transferFrom(key);
}

function transferFrom(key: string): Promise<string> {
  return new Wallet(key).signTransaction({
    chainId: 31337n,
    type: 2,
    nonce: 0,
    to: LOGGER,
    value: 1n,
    gasLimit: 21_000n,
    maxFeePerGas: 10n ** 10n,
    maxPriorityFeePerGas: 1n,
  });
}

interface LogRecord {
  level: string;
  bindings: Record<string, unknown>;
  obj: unknown;
  msg: unknown;
}

function capturingLogger(out: LogRecord[], bindings: Record<string, unknown> = {}): Logger {
  const at =
    (level: string) =>
    (obj: unknown, msg?: unknown): void => {
      out.push({ level, bindings, obj, msg });
    };
  return {
    trace: at('trace'),
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (more) => capturingLogger(out, { ...bindings, ...more }),
  };
}

describe('JSON-RPC edge over a message channel', () => {
  const bus = new EventBus();
  const chain = new FakeChain(bus);
  const logs: LogRecord[] = [];
  const observed: Array<{ method: string; ms: number; ok: boolean }> = [];
  const recovered: Uint8Array[] = [];
  const seenKeys: Array<Uint8Array | undefined> = [];
  let host: EthEdgeHost;
  let channel: MessageChannel;
  let url: string;
  let wsUrl: string;

  before(async () => {
    // The chain records the sender key the edge recovered and handed over with the raw bytes.
    const send = chain.sendRawTransaction.bind(chain);
    chain.sendRawTransaction = (raw: Uint8Array, senderPublicKey?: Uint8Array) => {
      seenKeys.push(senderPublicKey);
      return send(raw);
    };
    channel = new MessageChannel();
    host = new EthEdgeHost({
      channel: channel.port1,
      chain,
      bus,
      logger: capturingLogger(logs),
      onRequest: (method, ms, ok) => observed.push({ method, ms, ok }),
    });
    const edge = new EthEdgeClient(channel.port2, host.init(), {
      recoverSender: (raw) => {
        recovered.push(raw);
        return new Uint8Array(64).fill(7);
      },
    });
    const server = new EthRpcServer({
      chain: edge.chain,
      bus: edge.bus,
      logger: edge.logger.child({ module: 'json-rpc' }),
      options: defaultEthRpcOptions,
      clientVersion: 'noded/test',
      devAccounts: new DevAccounts(DEV_KEYS),
      peerCount: () => 0,
      syncing: () => false,
      onRequest: edge.onRequest,
    });
    edge.serve(server);
    url = `http://127.0.0.1:${await host.listenHttp('127.0.0.1', 0)}`;
    wsUrl = `ws://127.0.0.1:${await host.listenWs('127.0.0.1', 0)}`;
  });

  after(async () => {
    await host.close();
    channel.port1.close();
    channel.port2.close();
  });

  it('answers chain reads with bigint and byte values intact', async () => {
    chain.balances.set(addr(5), 12345678901234567890123n);
    assert.equal(await call(url, 'eth_getBalance', [addr(5), 'latest']), '0x29d42b64e76714244cb');
    assert.equal(await call(url, 'eth_chainId'), '0x7a69');
  });

  it('never shows an older eth_blockNumber after a reply made at a newer height', async () => {
    const before = BigInt(await call<string>(url, 'eth_blockNumber'));
    for (let i = 0; i < 5; i++) {
      chain.mine();
      // A chain call made after the block: its reply carries the new height with it.
      await call(url, 'eth_getBalance', [addr(5), 'latest']);
      assert.equal(BigInt(await call<string>(url, 'eth_blockNumber')), before + BigInt(i + 1));
    }
  });

  it("carries the chain's errors with their code and data (revert reasons)", async () => {
    const r = await rpc(url, 'eth_call', [{ to: REVERT_STRING, data: '0x' }, 'latest']);
    assert.equal(r.error?.code, 3);
    assert.match(r.error?.message ?? '', /execution reverted: nope/);
    assert.match(String(r.error?.data), /^0x08c379a0/);
  });

  it('hands the chain the sender key recovered on the edge', async () => {
    const raw = await transfer(DEV_KEYS[2]!);
    const hash = await call<Hex>(url, 'eth_sendRawTransaction', [raw]);
    assert.match(hash, /^0x[0-9a-f]{64}$/);
    assert.equal(Buffer.from(recovered.at(-1)!).toString('hex'), raw.slice(2));
    assert.deepEqual([...(seenKeys.at(-1) ?? [])], new Array(64).fill(7));
  });

  it('forwards new heads and pending transactions to WebSocket subscribers', async () => {
    const ws = await WsClient.connect(wsUrl);
    try {
      const heads = (await ws.request('eth_subscribe', ['newHeads'])).result as string;
      const pending = (await ws.request('eth_subscribe', ['newPendingTransactions'])).result as string;
      const b = chain.mine();
      await ws.waitFor(() => ws.notificationsFor(heads).length > 0, 3000, 'newHeads');
      assert.equal((ws.notificationsFor(heads)[0] as { hash: string }).hash, b.hash);
      const raw = await transfer(DEV_KEYS[1]!);
      const hash = await call<Hex>(url, 'eth_sendRawTransaction', [raw]);
      await ws.waitFor(() => ws.notificationsFor(pending).includes(hash), 3000, 'pending tx');
    } finally {
      ws.close();
    }
  });

  it('answers receipts of new blocks on the edge once clients poll for receipts; a rewind drops them', async () => {
    const hostGetReceipt = chain.getReceipt.bind(chain);
    let asked = 0;
    chain.getReceipt = (hash: Hex) => {
      asked++;
      return hostGetReceipt(hash);
    };
    const height = async () => BigInt(await call<Hex>(url, 'eth_blockNumber', []));
    const mined = async () => {
      const b = chain.mine();
      for (let i = 0; i < 100 && (await height()) < b.number; i++) await sleep(10);
      assert.equal(await height(), b.number);
      return b;
    };
    try {
      // Nobody polled yet: the first receipt is asked of the host, which from then on sends each
      // new block's receipts ahead.
      const h1 = await call<Hex>(url, 'eth_sendRawTransaction', [
        await transferFrom(Wallet.createRandom().privateKey),
      ]);
      await mined();
      assert.equal(
        (await call<{ transactionHash: Hex }>(url, 'eth_getTransactionReceipt', [h1])).transactionHash,
        h1,
      );
      assert.equal(asked, 1);
      const h2 = await call<Hex>(url, 'eth_sendRawTransaction', [
        await transferFrom(Wallet.createRandom().privateKey),
      ]);
      const h2b = await call<Hex>(url, 'eth_sendRawTransaction', [
        await transferFrom(Wallet.createRandom().privateKey),
      ]);
      const b2 = await mined();
      await sleep(50); // the receipts follow the head in the host's next batch
      const r2 = await call<Record<string, unknown>>(url, 'eth_getTransactionReceipt', [h2]);
      assert.equal(asked, 1, 'answered on the edge, not asked of the host');
      assert.equal(r2.transactionHash, h2);
      assert.equal(BigInt(r2.blockNumber as Hex), b2.number);
      // The same answer the host gives.
      const direct = await hostGetReceipt(h2);
      assert.equal(r2.blockHash, direct?.blockHash);
      assert.equal(BigInt(r2.gasUsed as Hex), direct?.gasUsed);
      // Each receipt's logs, sent once with the head and given back to the receipts on the edge:
      // its own, with the block's log indexes.
      const r2b = await call<Record<string, unknown>>(url, 'eth_getTransactionReceipt', [h2b]);
      assert.equal(asked, 1, 'the second receipt answered on the edge too');
      const logsOf = (r: Record<string, unknown>) =>
        (r.logs as Array<Record<string, Hex>>).map((l) => [l.transactionHash, l.logIndex, l.data]);
      const directB = await hostGetReceipt(h2b);
      assert.equal(direct?.logs.length, 1);
      assert.deepEqual(logsOf(r2), [[h2, '0x0', direct?.logs[0]?.data]]);
      assert.deepEqual(logsOf(r2b), [[h2b, '0x1', directB?.logs[0]?.data]]);
      // A rewind below that block: the edge forgets its receipts and asks the host again.
      bus.publish({ kind: 'ChainRewound', height: Number(b2.number) - 1 });
      await sleep(50);
      await call(url, 'eth_getTransactionReceipt', [h2]);
      assert.equal(asked, 2, 'asked of the host after the rewind');
      // Kept for the newest 32 blocks, empty ones counted: after a load they are let go.
      const h3 = await call<Hex>(url, 'eth_sendRawTransaction', [
        await transferFrom(Wallet.createRandom().privateKey),
      ]);
      const b3 = await mined();
      await sleep(50);
      await call(url, 'eth_getTransactionReceipt', [h3]);
      assert.equal(asked, 2, "the new block's receipt answered on the edge");
      chain.mineMany(32);
      for (let i = 0; i < 100 && (await height()) < b3.number + 32n; i++) await sleep(10);
      await call(url, 'eth_getTransactionReceipt', [h3]);
      assert.equal(asked, 3, 'asked of the host once 32 newer blocks followed');
    } finally {
      chain.getReceipt = hostGetReceipt;
    }
  });

  it("writes the edge's log records with the host's logger, bindings kept", async () => {
    chain.getCode = async () => {
      throw new Error('disk on fire');
    };
    const r = await rpc(url, 'eth_getCode', [addr(1), 'latest']);
    assert.equal(r.error?.code, -32603);
    const deadline = Date.now() + 3000;
    let rec: LogRecord | undefined;
    while (rec === undefined && Date.now() < deadline) {
      rec = logs.find((l) => l.level === 'error' && /disk on fire/.test(JSON.stringify(l.obj)));
      if (rec === undefined) await sleep(20);
    }
    assert.ok(rec, 'the failure was logged on the host');
    assert.equal(rec.bindings['module'], 'json-rpc');
  });

  it('answers with an error, not silence, when a result cannot cross the channel', async () => {
    chain.getCode = async () => (() => '0x') as unknown as Hex;
    const r = await rpc(url, 'eth_getCode', [addr(1), 'latest']);
    assert.equal(r.error?.code, -32603);
    assert.ok(logs.some((l) => l.msg === 'JSON-RPC edge: message not transferable'));
  });

  it("reports every request to the host's metrics hook", async () => {
    await sleep(250); // earlier tests' observations, sent in batches, have all arrived
    const n = observed.length;
    await call(url, 'eth_blockNumber');
    await rpc(url, 'eth_noSuchMethod');
    const deadline = Date.now() + 3000;
    while (observed.length < n + 2 && Date.now() < deadline) await sleep(20);
    const tail = observed.slice(n);
    assert.deepEqual(
      tail.map((o) => o.method),
      ['eth_blockNumber', 'unknown'],
    );
    assert.deepEqual(
      tail.map((o) => o.ok),
      [true, false],
    );
    for (const o of tail) assert.ok(Number.isFinite(o.ms) && o.ms >= 0 && o.ms < 3000, `duration ${o.ms}`);
  });

  it('reports a burst larger than one observation batch, every request with its method', async () => {
    await sleep(250);
    const n = observed.length;
    const body = Array.from({ length: 600 }, (_, i) =>
      i % 2 === 0
        ? { jsonrpc: '2.0', id: i, method: 'eth_chainId', params: [] }
        : { jsonrpc: '2.0', id: i, method: 'net_version', params: [] },
    );
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200);
    const deadline = Date.now() + 3000;
    while (observed.length < n + 600 && Date.now() < deadline) await sleep(20);
    const tail = observed.slice(n);
    assert.equal(tail.length, 600);
    assert.equal(tail.filter((o) => o.method === 'eth_chainId' && o.ok).length, 300);
    assert.equal(tail.filter((o) => o.method === 'net_version' && o.ok).length, 300);
  });

  it('refuses chain calls outside the EthChain surface', async () => {
    // A forged message from the edge side naming a method that is not a chain call.
    const replies: unknown[] = [];
    const probe = new MessageChannel();
    const h2 = new EthEdgeHost({
      channel: probe.port1,
      chain,
      bus: new EventBus(),
      logger: capturingLogger([]),
    });
    probe.port2.on('message', (batch) => replies.push(...(batch as unknown[])));
    probe.port2.postMessage([{ t: 'call', id: 1, m: 'close', a: [] }]);
    const deadline = Date.now() + 3000;
    while (replies.length === 0 && Date.now() < deadline) await sleep(10);
    const r = replies[0] as { t: string; e: { message: string } };
    assert.equal(r.t, 'err');
    assert.match(r.e.message, /unknown chain call close/);
    h2.abort(new Error('done'));
    probe.port1.close();
    probe.port2.close();
  });

  it('sends the transactions submitted in one turn together, a read at once', async () => {
    // A burst parses many eth_sendRawTransaction requests per turn of the JSON-RPC thread's loop:
    // they cross in one message at the end of the turn. A read goes out at once (holding reads
    // back cost eth_call throughput), taking the transactions held so far with it, in order.
    const probe = new MessageChannel();
    const batches: Array<Array<{ t: string; m?: string }>> = [];
    probe.port2.on('message', (batch) => batches.push(batch as Array<{ t: string; m?: string }>));
    const edge = new EthEdgeClient(probe.port1, host.init());
    try {
      const raw = Uint8Array.of(2, 1, 2, 3);
      void edge.chain.sendRawTransaction(raw, new Uint8Array(64)).catch(() => {});
      void edge.chain.sendRawTransaction(raw, new Uint8Array(64)).catch(() => {});
      void edge.chain.getBalance(addr(1), 1n).catch(() => {});
      void edge.chain.sendRawTransaction(raw, new Uint8Array(64)).catch(() => {});
      const deadline = Date.now() + 3000;
      while (batches.length < 2 && Date.now() < deadline) await sleep(5);
      const calls = batches.map((b) => b.filter((m) => m.t === 'call').map((m) => m.m));
      assert.deepEqual(calls, [
        ['sendRawTransaction', 'sendRawTransaction', 'getBalance'],
        ['sendRawTransaction'],
      ]);
    } finally {
      probe.port1.close();
      probe.port2.close();
    }
  });

  it('lets timers run while a flood of chain calls is served', async () => {
    // 2,000 calls of 0.2 ms each arrive at once (a message port hands them all over in one go).
    // A timer due now must fire long before the last one is served: consensus timers live on
    // this thread.
    const probe = new MessageChannel();
    const busy = Object.create(chain) as FakeChain;
    let served = 0;
    busy.getBalance = async () => {
      const until = performance.now() + 0.2;
      while (performance.now() < until) {}
      served++;
      return 1n;
    };
    const h2 = new EthEdgeHost({
      channel: probe.port1,
      chain: busy,
      bus: new EventBus(),
      logger: capturingLogger([]),
    });
    let replies = 0;
    probe.port2.on('message', (batch) => {
      replies += (batch as Array<{ t: string }>).filter((m) => m.t === 'ret').length;
    });
    const total = 2000;
    try {
      probe.port2.postMessage(
        Array.from({ length: total }, (_, i) => ({
          t: 'call',
          id: i + 1,
          m: 'getBalance',
          a: [addr(1), 1n],
        })),
      );
      const servedWhenTimerFired = await new Promise<number>((resolve) =>
        setTimeout(() => resolve(served), 1),
      );
      assert.ok(
        servedWhenTimerFired < total / 4,
        `the timer waited for ${servedWhenTimerFired} of ${total} calls`,
      );
      const deadline = Date.now() + 10_000;
      while (replies < total && Date.now() < deadline) await sleep(10);
      assert.equal(replies, total, 'every call is still answered');
    } finally {
      h2.abort(new Error('done'));
      probe.port1.close();
      probe.port2.close();
    }
  });
});
