// Balances and nonces at the latest height answered on the JSON-RPC thread (libs/rpc/src/eth/edge.ts,
// HeadAccounts): the real executor behind an EthEdgeHost, the edge on the other end of a
// MessageChannel, so every head, with the accounts its block changed, is structured-cloned as
// between the node's two threads. Every answer must be the executor's own at that height, and the
// host is asked only for what the edge cannot know.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MessageChannel } from 'node:worker_threads';
import { EthEdgeClient, EthEdgeHost } from '@noded/rpc/src/eth/index.js';
import type { Hex, NodeEvent } from '@noded/types';
import {
  addr,
  ETH,
  GWEI,
  key,
  PROPOSER,
  produceBlock,
  signTx,
  startNode,
  type TestNode,
} from '../execution/helpers.js';
import { sleep } from './helpers.js';

const senders = Array.from({ length: 3 }, (_, i) => key(900 + i));
const fresh = (i: number) => `0x${(0xe00000 + i).toString(16).padStart(40, '0')}` as Hex;
const IDLE = '0x00000000000000000000000000000000000e1d1e' as Hex;
// CALLVALUE PUSH1 0 PUSH1 0 PUSH1 0 PUSH1 0 DUP5 PUSH20 <fresh(50)> GAS CALL STOP: forwards what it is paid.
const FORWARDER = '0x00000000000000000000000000000000000f0a4d' as Hex;
const FORWARD_CODE = `0x34600060006000600084${'73'}${fresh(50).slice(2)}5af100` as Hex;
const coinbase = `0x${Buffer.from(PROPOSER).toString('hex')}` as Hex;

describe('JSON-RPC edge: balances and nonces at the latest height', () => {
  let n: TestNode;
  let host: EthEdgeHost;
  let edge: EthEdgeClient;
  let channel: MessageChannel;
  const asked: string[] = [];

  before(async () => {
    n = await startNode([
      ...senders.map((k) => ({ address: addr(k), balance: 100n * ETH })),
      { address: IDLE, balance: 77n },
      { address: FORWARDER, balance: 0n, code: FORWARD_CODE },
    ]);
    const getBalance = n.ex.getBalance.bind(n.ex);
    const getNonce = n.ex.getNonce.bind(n.ex);
    n.ex.getBalance = (a: Hex, h: bigint) => {
      asked.push(`balance ${a.toLowerCase()} ${h}`);
      return getBalance(a, h);
    };
    n.ex.getNonce = (a: Hex, h: bigint | 'pending') => {
      asked.push(`nonce ${a.toLowerCase()} ${h}`);
      return getNonce(a, h);
    };
    channel = new MessageChannel();
    host = new EthEdgeHost({
      channel: channel.port1,
      chain: n.ex,
      bus: n.bus,
      logger: silent,
      headLogs: true,
    });
    edge = new EthEdgeClient(channel.port2, host.init());
  });

  after(() => {
    host.abort(new Error('test over'));
    channel.port1.close();
    channel.port2.close();
  });

  /** Waits until the edge shows the executor's latest height and has had its head. */
  async function caughtUp(): Promise<bigint> {
    const h = n.ex.latestHeight();
    for (let i = 0; i < 200 && edge.chain.latestHeight() !== h; i++) await sleep(5);
    assert.equal(edge.chain.latestHeight(), h, 'the edge did not reach the latest height');
    await sleep(20); // the head follows the snapshot in the same or the next batch
    return h;
  }

  /** The edge's balance and nonce of `a` at the latest height, and whether the host was asked. */
  async function read(a: Hex): Promise<{ balance: bigint; nonce: bigint; asked: boolean }> {
    const before = asked.length;
    const h = edge.chain.latestHeight();
    const balance = await edge.chain.getBalance(a, h);
    const nonce = await edge.chain.getNonce(a, h);
    return { balance, nonce, asked: asked.length > before };
  }

  async function truth(a: Hex, h: bigint): Promise<{ balance: bigint; nonce: bigint }> {
    const before = asked.length;
    const r = { balance: await n.ex.getBalance(a, h), nonce: await n.ex.getNonce(a, h) };
    asked.splice(before);
    return r;
  }

  const pay = (k: Uint8Array, nonce: bigint, to: Hex, value: bigint, over: Record<string, unknown> = {}) =>
    signTx(k, { nonce, to, value, maxFee: 10n * GWEI, tip: GWEI, ...over });

  it("answers every account a block changed from the block's head, as the executor does", async () => {
    await produceBlock(n, [
      pay(senders[0], 0n, fresh(1), ETH),
      pay(senders[1], 0n, addr(senders[2]), 5n),
      // Through the EVM: the forwarder pays fresh(50) what it got, a change no transaction names.
      pay(senders[2], 0n, FORWARDER, 9n, { gas: 100_000n }),
    ]);
    const h = await caughtUp();
    for (const a of [addr(senders[0]), addr(senders[1]), addr(senders[2]), fresh(1), fresh(50), coinbase]) {
      const got = await read(a);
      assert.equal(got.asked, false, `${a} was asked of the host`);
      assert.deepEqual({ balance: got.balance, nonce: got.nonce }, await truth(a, h), a);
    }
    assert.equal((await read(fresh(50))).balance, 9n);
  });

  it('asks the host once for an account no head named, keeps it, and follows it through later blocks', async () => {
    const first = await read(IDLE);
    assert.equal(first.asked, true);
    assert.equal(first.balance, 77n);
    const again = await read(IDLE);
    assert.equal(again.asked, false, 'kept after the first answer');
    // A block that does not touch it: still right, still not asked.
    await produceBlock(n, [pay(senders[0], 1n, fresh(2), 1n)]);
    let h = await caughtUp();
    const kept = await read(IDLE);
    assert.equal(kept.asked, false);
    assert.deepEqual({ balance: kept.balance, nonce: kept.nonce }, await truth(IDLE, h));
    // A block that pays it: the new value comes with the head.
    await produceBlock(n, [pay(senders[1], 1n, IDLE, 1000n)]);
    h = await caughtUp();
    const paid = await read(IDLE);
    assert.equal(paid.asked, false);
    assert.equal(paid.balance, 1077n);
    assert.deepEqual({ balance: paid.balance, nonce: paid.nonce }, await truth(IDLE, h));
  });

  it('asks the host for an older height, for "pending" nonces, and after a rewind or a head without accounts', async () => {
    const h = await caughtUp();
    const before = asked.length;
    assert.equal(await edge.chain.getBalance(IDLE, h - 1n), 77n);
    await edge.chain.getNonce(addr(senders[0]), 'pending');
    assert.equal(asked.length - before, 2);
    // A rewind empties what the edge holds.
    n.bus.publish({ kind: 'ChainRewound', height: Number(h) });
    await sleep(30);
    assert.equal((await read(IDLE)).asked, true, 'asked again after a rewind');
    assert.equal((await read(IDLE)).asked, true, 'nothing kept until the next head');
    // A head that carries no accounts (a light node's, or another publisher's) leaves nothing usable.
    const head = await n.ex.getBlockByNumber(h);
    assert.ok(head);
    n.bus.publish({ kind: 'EthNewHead', block: head, logs: [] });
    await sleep(30);
    assert.equal((await read(IDLE)).asked, true, 'asked again after a head without accounts');
    // A gap: the next head follows no head the edge held, so only its own accounts are known.
    await produceBlock(n, [pay(senders[2], 1n, fresh(3), 1n)]);
    const h2 = await caughtUp();
    const gap = await read(fresh(3));
    assert.equal(gap.asked, false);
    assert.deepEqual({ balance: gap.balance, nonce: gap.nonce }, await truth(fresh(3), h2));
    assert.equal((await read(IDLE)).asked, true, 'IDLE from before the gap is not trusted');
  });
});

describe("the executor's heads carry the accounts only while a JSON-RPC host listens", () => {
  // EthNewHead.accounts is built from a block's state changes; the cluster's executor has no
  // JSON-RPC thread on its bus, and builds them for nobody unless a host asks for them.
  const heads = (n: TestNode) =>
    n.events.filter((e): e is Extract<NodeEvent, { kind: 'EthNewHead' }> => e.kind === 'EthNewHead');
  const pay = (k: Uint8Array, nonce: bigint, to: Hex, value: bigint) =>
    signTx(k, { nonce, to, value, maxFee: 10n * GWEI, tip: GWEI });

  it('publishes heads without accounts, with them while an EthEdgeHost is subscribed, and without after it closes', async () => {
    const k = key(950);
    const n = await startNode([{ address: addr(k), balance: 100n * ETH }]);
    assert.equal(n.bus.wantsHeadAccounts, false);

    await produceBlock(n, [pay(k, 0n, fresh(10), 5n)]);
    const bare = heads(n).at(-1);
    assert.ok(bare);
    assert.equal(bare.block.number, 1n);
    assert.equal(bare.accounts, undefined, 'no reader of the accounts: none built');
    assert.equal(bare.block.transactions.length, 1, 'the head itself is whole');

    const channel = new MessageChannel();
    const host = new EthEdgeHost({ channel: channel.port1, chain: n.ex, bus: n.bus, logger: silent });
    try {
      assert.equal(n.bus.wantsHeadAccounts, true);
      await produceBlock(n, [pay(k, 1n, fresh(11), 7n)]);
      const full = heads(n).at(-1);
      assert.ok(full?.accounts, 'a host listens: the accounts are built');
      const byAddr = new Map(full.accounts.map((a) => [a.address, a]));
      for (const a of [addr(k).toLowerCase() as Hex, fresh(11), coinbase]) {
        const got = byAddr.get(a);
        assert.ok(got, `${a} is in the head's accounts`);
        assert.equal(got.balance, await n.ex.getBalance(a, 2n), `${a} balance`);
        assert.equal(got.nonce, await n.ex.getNonce(a, 2n), `${a} nonce`);
      }
      assert.equal(byAddr.get(fresh(11))?.balance, 7n);
    } finally {
      host.abort(new Error('test over'));
      channel.port1.close();
      channel.port2.close();
    }

    assert.equal(n.bus.wantsHeadAccounts, false, 'the closed host no longer asks');
    await produceBlock(n, [pay(k, 2n, fresh(12), 9n)]);
    const after3 = heads(n).at(-1);
    assert.equal(after3?.block.number, 3n);
    assert.equal(after3?.accounts, undefined);
  });
});

const silent = {
  trace: () => {},
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  child: () => silent,
};
