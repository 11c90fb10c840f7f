// WebSocket transport: requests, eth_subscribe/eth_unsubscribe, and the per-connection limits.
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { EthBlock, Hex } from '@noded/types';
import { Wallet } from 'ethers';
import { LOGGER, TRANSFER_TOPIC, word } from './fake-chain.js';
import { DEV_KEYS, type Harness, rpc, sleep, startHarness, WsClient } from './helpers.js';

const wallet = new Wallet(DEV_KEYS[0]!);
let nonce = 0;
const signedToLogger = () =>
  wallet.signTransaction({
    chainId: 31337n,
    to: LOGGER,
    type: 2,
    nonce: nonce++,
    gasLimit: 21_000n,
    maxFeePerGas: 3_000_000_000n,
    maxPriorityFeePerGas: 1n,
  });

describe('WebSocket subscriptions', () => {
  let h: Harness;
  let c: WsClient;
  before(async () => {
    h = await startHarness({ options: { maxSubscriptionsPerConnection: 4, maxBodyBytes: 50_000 } });
    c = await WsClient.connect(h.wsUrl);
  });
  after(async () => {
    c.close();
    await h.close();
  });

  it('answers calls and batches on the socket', async () => {
    assert.equal((await c.request('eth_chainId')).result, '0x7a69');
    const parseErr = await new Promise<unknown>((resolve) => {
      c.ws.once('message', (d) => resolve(JSON.parse(d.toString())));
      c.ws.send('{oops');
    });
    assert.deepEqual(parseErr, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } });
    const batchReply = await new Promise<unknown>((resolve) => {
      c.ws.once('message', (d) => resolve(JSON.parse(d.toString())));
      c.ws.send(
        '[{"jsonrpc":"2.0","id":"a","method":"eth_blockNumber"},{"jsonrpc":"2.0","id":"b","method":"net_version"}]',
      );
    });
    assert.deepEqual(batchReply, [
      { jsonrpc: '2.0', id: 'a', result: '0x0' },
      { jsonrpc: '2.0', id: 'b', result: '31337' },
    ]);
  });

  it('newHeads delivers geth headers for each committed block', async () => {
    const sub = (await c.request('eth_subscribe', ['newHeads'])).result as string;
    assert.match(sub, /^0x[0-9a-f]+$/);
    const b1 = h.chain.mine();
    const b2 = h.chain.mine();
    await c.waitFor(() => c.notificationsFor(sub).length === 2, 3000, 'two heads');
    const [n1, n2] = c.notificationsFor(sub) as Array<Record<string, unknown>>;
    assert.equal(n1!['hash'], b1.hash);
    assert.equal(n2!['hash'], b2.hash);
    assert.equal(n2!['number'], '0x2');
    assert.equal(n1!['transactions'], undefined, 'headers carry no transaction list');
    assert.equal(n1!['baseFeePerGas'], '0x3b9aca00');
    assert.equal((await c.request('eth_unsubscribe', [sub])).result, true);
    h.chain.mine();
    await c.request('eth_chainId'); // a round trip after the head: anything sent would be here by now
    assert.equal(c.notificationsFor(sub).length, 2);
    assert.deepEqual((await c.request('eth_unsubscribe', [sub])).error, {
      code: -32000,
      message: 'subscription not found',
    });
  });

  it('logs honours address and topic filters, one notification per log', async () => {
    const match = (await c.request('eth_subscribe', ['logs', { address: LOGGER, topics: [TRANSFER_TOPIC] }]))
      .result as string;
    const miss = (await c.request('eth_subscribe', ['logs', { topics: [null, word(1)] }])).result as string;
    await rpc(h.url, 'eth_sendRawTransaction', [await signedToLogger()]);
    await rpc(h.url, 'eth_sendRawTransaction', [await signedToLogger()]);
    h.chain.mine();
    await c.waitFor(() => c.notificationsFor(match).length === 2, 3000, 'two logs');
    const log = c.notificationsFor(match)[0] as Record<string, unknown>;
    assert.equal(log['address'], LOGGER);
    assert.equal(log['removed'], false);
    assert.equal(log['logIndex'], '0x0');
    assert.equal(c.notificationsFor(miss).length, 0);
    await c.request('eth_unsubscribe', [match]);
    await c.request('eth_unsubscribe', [miss]);
  });

  it('a subscription gets only blocks after the latest one at install, even when a head is published late', async () => {
    // An rpc-edge publishes a head a little after its state-store answers reads at it: a client that
    // read block H (a receipt) and then subscribed must not be sent H's logs or header.
    let late: { block: EthBlock; logs: unknown[] } | undefined;
    const stop = h.bus.subscribe((ev) => {
      if (ev.kind === 'EthNewHead' && late === undefined) late = { block: ev.block, logs: ev.logs };
    });
    await rpc(h.url, 'eth_sendRawTransaction', [await signedToLogger()]);
    const read = h.chain.mine();
    stop();
    assert.equal(late?.block.hash, read.hash);
    assert.equal(late?.logs.length, 1);
    const logs = (await c.request('eth_subscribe', ['logs', { address: LOGGER }])).result as string;
    const heads = (await c.request('eth_subscribe', ['newHeads'])).result as string;
    h.bus.publish({ kind: 'EthNewHead', block: late!.block, logs: late!.logs as never });
    await rpc(h.url, 'eth_sendRawTransaction', [await signedToLogger()]);
    const next = h.chain.mine();
    await c.waitFor(() => c.notificationsFor(logs).length >= 1, 3000, "the next block's log");
    await c.request('eth_chainId'); // a round trip: anything else sent would be here by now
    assert.deepEqual(
      c.notificationsFor(heads).map((n) => (n as Record<string, unknown>)['hash']),
      [next.hash],
    );
    assert.deepEqual(
      c.notificationsFor(logs).map((n) => (n as Record<string, unknown>)['blockHash']),
      [next.hash],
    );
    await c.request('eth_unsubscribe', [logs]);
    await c.request('eth_unsubscribe', [heads]);
  });

  it('newPendingTransactions sends hashes, or full transactions with true', async () => {
    const hashes = (await c.request('eth_subscribe', ['newPendingTransactions'])).result as string;
    const full = (await c.request('eth_subscribe', ['newPendingTransactions', true])).result as string;
    const sent = (await rpc(h.url, 'eth_sendRawTransaction', [await signedToLogger()])).result as Hex;
    await c.waitFor(() => c.notificationsFor(full).length === 1 && c.notificationsFor(hashes).length === 1);
    assert.deepEqual(c.notificationsFor(hashes), [sent]);
    const tx = c.notificationsFor(full)[0] as Record<string, unknown>;
    assert.equal(tx['hash'], sent);
    assert.equal(tx['blockHash'], null);
    h.chain.mine();
    await c.request('eth_unsubscribe', [hashes]);
    await c.request('eth_unsubscribe', [full]);
  });

  it('syncing sends false right after the subscription id when in sync', async () => {
    const order: string[] = [];
    const listener = (d: Buffer) => {
      const m = JSON.parse(d.toString());
      order.push(m.method === 'eth_subscription' ? `note:${JSON.stringify(m.params.result)}` : 'reply');
    };
    c.ws.on('message', listener);
    const sub = (await c.request('eth_subscribe', ['syncing'])).result as string;
    await c.waitFor(() => c.notificationsFor(sub).length === 1);
    c.ws.off('message', listener);
    assert.deepEqual(order, ['reply', 'note:false']);
    await c.request('eth_unsubscribe', [sub]);
  });

  it('subscription errors: unknown kind, missing criteria, per-connection cap', async () => {
    assert.deepEqual((await c.request('eth_subscribe', ['blocks'])).error, {
      code: -32601,
      message: 'no "blocks" subscription in eth namespace',
    });
    assert.deepEqual((await c.request('eth_subscribe', ['logs'])).error, {
      code: -32602,
      message: 'missing value for required argument 1',
    });
    assert.deepEqual((await c.request('eth_subscribe', [])).error, {
      code: -32602,
      message: 'expected subscription name as first argument',
    });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await c.request('eth_subscribe', ['newHeads'])).result as string);
    const refused = await c.request('eth_subscribe', ['newHeads']);
    assert.equal(refused.error?.code, -32005);
    assert.match(refused.error!.message, /max_subscriptions_per_connection is 4/);
    for (const id of ids) await c.request('eth_unsubscribe', [id]);
    assert.equal(typeof (await c.request('eth_subscribe', ['newHeads'])).result, 'string');
  });

  it('a message above max_body_bytes closes that connection (1009); others keep working', async () => {
    const big = await WsClient.connect(h.wsUrl);
    big.ws.send(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: ['x'.repeat(60_000)] }),
    );
    await big.waitFor(() => big.closeCode !== undefined, 3000, 'close');
    assert.equal(big.closeCode, 1009);
    assert.equal((await c.request('eth_chainId')).result, '0x7a69');
    const again = await WsClient.connect(h.wsUrl);
    assert.equal((await again.request('eth_chainId')).result, '0x7a69');
    again.close();
  });
});

describe('WebSocket liveness and flow control', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({
      options: { wsPingIntervalMs: 1000, corsAllowedOrigins: ['https://app.example'] },
    });
  });
  after(() => h.close());

  it('drops a peer that answers none of two pings; keeps one that misses one, and a healthy one', async () => {
    const connectedAt = Date.now();
    const deaf = await WsClient.connect(h.wsUrl, { autoPong: false });
    // Answers every second ping only, as a client whose event loop stalls past one ping would: one
    // missed pong in a row must not cut it (a build that drops at the first missed pong does).
    const forgetful = await WsClient.connect(h.wsUrl, { autoPong: false });
    let pings = 0;
    forgetful.ws.on('ping', (data) => {
      pings += 1;
      if (pings % 2 === 0) forgetful.ws.pong(data);
    });
    const healthy = await WsClient.connect(h.wsUrl);
    // The server pings every 1 s and drops a peer with two pings unanswered at the next round: the
    // deaf peer's first ping comes 0-1 s after it connects, so it goes 2-3 s after (never sooner). The
    // server and the peers share this process, so a stall of it longer than the interval could delay a
    // pong; the healthy and the forgetful peers must outlive three rounds after the deaf one is gone.
    await deaf.waitFor(() => deaf.closeCode !== undefined, 10_000, 'the deaf peer to be dropped');
    const droppedAfter = Date.now() - connectedAt;
    assert.ok(droppedAfter >= 1_900, `the deaf peer was dropped ${droppedAfter} ms after connecting`);
    await sleep(3000);
    assert.ok(pings >= 4, `the forgetful peer saw ${pings} pings`);
    assert.equal(forgetful.closeCode, undefined, 'the peer that missed one pong at a time was dropped');
    assert.equal((await forgetful.request('eth_chainId')).result, '0x7a69');
    assert.equal(healthy.closeCode, undefined);
    assert.equal((await healthy.request('eth_chainId')).result, '0x7a69');
    forgetful.close();
    healthy.close();
  });

  it('disconnects a subscriber whose unsent backlog exceeds ws_max_buffered_bytes', async () => {
    // Its own server without pings: the paused peer must go for its backlog, not for a missed pong.
    const h = await startHarness({ options: { wsPingIntervalMs: 0, wsMaxBufferedBytes: 256 * 1024 } });
    const slow = await WsClient.connect(h.wsUrl);
    const fast = await WsClient.connect(h.wsUrl);
    const slowSub = (await slow.request('eth_subscribe', ['newHeads'])).result as string;
    const fastSub = (await fast.request('eth_subscribe', ['newHeads'])).result as string;
    assert.equal(h.server.wsConnections, 2);
    // Stop reading on the slow client: its TCP window fills, then the server's send buffer grows.
    (slow.ws as unknown as { _socket: Socket })._socket.pause();
    const template = h.chain.blocks[0]!;
    const bigExtra = `0x${'ab'.repeat(64 * 1024)}` as Hex;
    let published = 0;
    while (h.server.wsConnections === 2 && published < 2000) {
      const block: EthBlock = { ...template, number: BigInt(published + 1), extraData: bigExtra };
      h.bus.publish({ kind: 'EthNewHead', block, logs: [] });
      published++;
      // The fast client reads each head before the next one goes out.
      await fast.waitFor(
        () => fast.notificationsFor(fastSub).length === published,
        5_000,
        `head ${published}`,
      );
    }
    assert.equal(h.server.wsConnections, 1, `slow subscriber still connected after ${published} heads`);
    assert.equal(fast.closeCode, undefined, 'the client that keeps up stays connected');
    assert.ok(slow.notificationsFor(slowSub).length < published);
    fast.close();
    slow.close();
    await h.close();
  });

  it('refuses WebSocket upgrades from origins outside cors_allowed_origins', async () => {
    await assert.rejects(WsClient.connect(h.wsUrl, { origin: 'https://evil.example' }), /403/);
    const good = await WsClient.connect(h.wsUrl, { origin: 'https://app.example' });
    assert.equal((await good.request('eth_chainId')).result, '0x7a69');
    good.close();
  });

  it('close() drops connected peers and stops listening', async () => {
    const h2 = await startHarness();
    const peer = await WsClient.connect(h2.wsUrl);
    const sub = (await peer.request('eth_subscribe', ['newHeads'])).result as string;
    assert.equal(typeof sub, 'string');
    await h2.close();
    await peer.waitFor(() => peer.closeCode !== undefined, 2000, 'close');
    await assert.rejects(WsClient.connect(h2.wsUrl));
    await assert.rejects(fetch(h2.url, { method: 'POST', body: '{}' }));
    h2.bus.publish({ kind: 'EthNewHead', block: h2.chain.blocks[0]!, logs: [] });
    assert.equal(h2.bus.size, 0, 'the server left the event bus');
  });
});
