// /websocket: JSON-RPC calls, subscribe/unsubscribe/unsubscribe_all with the query language,
// CometBFT's event message shapes, subscription limits, slow clients and broadcast_tx_commit.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sha256 } from '@noded/crypto';
import type { NodeEvent } from '@noded/types';
import WebSocket from 'ws';
import { type CometHarness, http, rpcPost, startComet } from './helpers.js';

const hexU = (b: Uint8Array) => Buffer.from(b).toString('hex').toUpperCase();
const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64');

// biome-ignore lint/suspicious/noExplicitAny: messages are JSON inspected field by field
type Msg = any;

class Client {
  readonly ws: WebSocket;
  private readonly inbox: Msg[] = [];
  private waiters: Array<() => void> = [];
  closed = false;
  private nextId = 1;

  constructor(url: string) {
    this.ws = new WebSocket(url);
    this.ws.on('message', (d) => {
      this.inbox.push(JSON.parse(d.toString()));
      for (const w of this.waiters.splice(0)) w();
    });
    this.ws.on('close', () => {
      this.closed = true;
      for (const w of this.waiters.splice(0)) w();
    });
    this.ws.on('error', () => {});
  }

  static async open(url: string): Promise<Client> {
    const c = new Client(url);
    await new Promise((resolve, reject) => {
      c.ws.once('open', resolve);
      c.ws.once('error', reject);
    });
    return c;
  }

  /** The next message satisfying `pred` (removed from the inbox), within `ms`. */
  async next(pred: (m: Msg) => boolean, ms = 3000): Promise<Msg> {
    const deadline = Date.now() + ms;
    for (;;) {
      const i = this.inbox.findIndex(pred);
      if (i >= 0) return this.inbox.splice(i, 1)[0];
      const left = deadline - Date.now();
      if (left <= 0 || this.closed) throw new Error(`no matching message within ${ms} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  async call(method: string, params: unknown = {}): Promise<Msg> {
    const id = this.nextId++;
    this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    return this.next(
      (m) => m.id === id && (m.result !== undefined || m.error !== undefined) && !m.result?.data,
    );
  }

  pending(): Msg[] {
    return [...this.inbox];
  }

  close(): void {
    this.ws.terminate();
  }
}

describe('CometBFT /websocket', () => {
  let h: CometHarness;
  const clients: Client[] = [];
  const open = async (url = h.wsUrl) => {
    const c = await Client.open(url);
    clients.push(c);
    return c;
  };

  before(async () => {
    h = await startComet({
      maxSubscriptionsPerClient: 3,
      maxSubscriptionClients: 3,
      timeoutBroadcastTxCommitMs: 400,
    });
  });
  after(async () => {
    for (const c of clients) c.close();
    await h.close();
  });

  it('answers ordinary calls, parse errors and bad params like CometBFT', async () => {
    const c = await open();
    const status = await c.call('status');
    assert.equal(status.result.sync_info.latest_block_height, '5');
    c.ws.send('{oops');
    const parse = await c.next((m) => m.error?.code === -32700);
    assert.equal('id' in parse, false);
    const bad = await c.call('block', { height: 5 });
    assert.equal(bad.error.code, -32603, 'CometBFT reports bad params over WebSocket as -32603');
    assert.match(
      bad.error.data,
      /^error converting json params to arguments: invalid 64-bit integer encoding/,
    );
    const unknown = await c.call('nope');
    assert.equal(unknown.error.code, -32601);
  });

  it('NewBlock, NewBlockHeader and NewBlockEvents arrive in CometBFT message shape', async () => {
    const c = await open();
    const q = "tm.event='NewBlock'";
    assert.deepEqual((await c.call('subscribe', { query: q })).result, {});
    await c.call('subscribe', { query: "tm.event = 'NewBlockHeader' AND block.height >= 6" });
    await c.call('subscribe', { query: "tm.event='NewBlockEvents' AND block_reward.amount > 60" });
    const tx = await h.chain.signTransfer(0, 77n);
    const stored = h.chain.commitBlock([tx]);

    const nb = await c.next((m) => m.result?.data?.type === 'tendermint/event/NewBlock');
    assert.equal(nb.id, 1);
    assert.equal(nb.result.query, q);
    assert.deepEqual(Object.keys(nb.result), ['query', 'data', 'events']);
    const v = nb.result.data.value;
    assert.deepEqual(Object.keys(v), ['block', 'block_id', 'result_finalize_block']);
    assert.equal(v.block.header.height, '6');
    assert.deepEqual(v.block.data.txs, [b64(tx)]);
    assert.equal(v.block_id.hash, hexU(stored.blockId.hash));
    assert.equal(v.result_finalize_block.tx_results[0].gas_used, '21000');
    assert.deepEqual(v.result_finalize_block.events[0].attributes[1], {
      key: 'amount',
      value: '60abtc',
      index: true,
    });
    assert.equal(v.result_finalize_block.validator_updates, null);
    assert.equal(v.result_finalize_block.app_hash, b64(stored.result.appHash));
    assert.deepEqual(nb.result.events['tm.event'], ['NewBlock']);
    assert.deepEqual(nb.result.events['block_reward.amount'], ['60abtc']);

    const hdr = await c.next((m) => m.result?.data?.type === 'tendermint/event/NewBlockHeader');
    assert.equal(hdr.result.data.value.header.height, '6');
    // 60abtc is not > 60: no NewBlockEvents for height 6; height 7 pays 70abtc.
    h.chain.commitBlock([]);
    const nbe = await c.next((m) => m.result?.data?.type === 'tendermint/event/NewBlockEvents');
    assert.deepEqual(nbe.result.data.value, {
      height: '7',
      events: [
        {
          type: 'block_reward',
          attributes: [
            {
              key: 'proposer',
              value: hexU(h.chain.blocks.get(7)!.block.header.proposerAddress),
              index: true,
            },
            { key: 'amount', value: '70abtc', index: true },
          ],
        },
      ],
      num_txs: '0',
    });
    assert.equal(c.pending().filter((m) => m.result?.data?.value?.height === '6').length, 0);
    await c.call('unsubscribe_all');
  });

  it('Tx events carry TxResult, tx.hash (sha256) and tx.height; queries select them', async () => {
    const c = await open();
    const txs = [await h.chain.signTransfer(0, 1n), await h.chain.signTransfer(0, 2000n)];
    await c.call('subscribe', { query: "tm.event='Tx' AND transfer.amount >= 1000" });
    const next = h.chain.height() + 1;
    h.chain.commitBlock(txs);
    const ev = await c.next((m) => m.result?.data?.type === 'tendermint/event/Tx');
    const r = ev.result.data.value.TxResult;
    assert.equal(r.height, String(next));
    assert.equal(r.index, 1);
    assert.equal(r.tx, b64(txs[1]));
    assert.equal(r.result.events[1].attributes[2].value, '2000abtc');
    assert.deepEqual(ev.result.events['tx.hash'], [hexU(sha256(txs[1]))]);
    assert.deepEqual(ev.result.events['tx.height'], [String(next)]);
    assert.deepEqual(ev.result.events['tm.event'], ['Tx']);
    await new Promise((r2) => setTimeout(r2, 50));
    assert.equal(c.pending().length, 0, 'the 1 abtc transfer did not match');
    // Index 0 is omitted from TxResult (omitempty), as CometBFT prints it.
    await c.call('subscribe', { query: `tm.event='Tx' AND tx.hash='${hexU(sha256(txs[0]))}'` });
    h.chain.bus.publish({
      kind: 'Tx',
      height: next,
      index: 0,
      tx: txs[0],
      result: h.chain.blocks.get(next)!.result.txResults[0],
    });
    const first = await c.next((m) => m.result?.data?.type === 'tendermint/event/Tx');
    assert.equal('index' in first.result.data.value.TxResult, false);
    await c.call('unsubscribe_all');
  });

  it('consensus events: NewRound, NewRoundStep, CompleteProposal, Vote, ValidatorSetUpdates', async () => {
    const c = await open();
    await c.call('subscribe', { query: "tm.event='NewRound'" });
    await c.call('subscribe', { query: "tm.event='NewRoundStep'" });
    await c.call('subscribe', { query: "tm.event='Vote'" });
    const v0 = h.chain.validatorSet[0];
    const blockId = h.chain.blocks.get(2)!.blockId;
    const events: NodeEvent[] = [
      { kind: 'NewRound', height: 9, round: 1, proposerAddress: v0.address, proposerIndex: 0 },
      { kind: 'NewRoundStep', height: 9, round: 1, step: 'Prevote' },
      {
        kind: 'Vote',
        vote: {
          type: 1,
          height: 9,
          round: 1,
          blockId,
          timestamp: 1_700_000_009_000_000_000n,
          validatorAddress: v0.address,
          validatorIndex: 0,
          signature: new Uint8Array(64).fill(3),
        },
      },
    ];
    for (const e of events) h.chain.bus.publish(e);
    const round = await c.next((m) => m.result?.data?.type === 'tendermint/event/NewRound');
    assert.deepEqual(round.result.data.value, {
      height: '9',
      round: 1,
      step: 'RoundStepNewRound',
      proposer: { address: hexU(v0.address), index: 0 },
    });
    const step = await c.next((m) => m.result?.data?.type === 'tendermint/event/RoundState');
    assert.deepEqual(step.result.data.value, { height: '9', round: 1, step: 'RoundStepPrevote' });
    assert.deepEqual(step.result.events, { 'tm.event': ['NewRoundStep'] });
    const vote = await c.next((m) => m.result?.data?.type === 'tendermint/event/Vote');
    assert.deepEqual(vote.result.data.value.Vote, {
      type: 1,
      height: '9',
      round: 1,
      block_id: { hash: hexU(blockId.hash), parts: { total: 1, hash: hexU(blockId.partSetHeader.hash) } },
      timestamp: '2023-11-14T22:13:29Z',
      validator_address: hexU(v0.address),
      validator_index: 0,
      signature: b64(new Uint8Array(64).fill(3)),
      extension: null,
      extension_signature: null,
    });
    await c.call('unsubscribe_all');
    await c.call('subscribe', { query: "tm.event='CompleteProposal'" });
    await c.call('subscribe', { query: "tm.event='ValidatorSetUpdates'" });
    h.chain.bus.publish({
      kind: 'CompleteProposal',
      height: 9,
      round: 1,
      blockId,
      proposal: { height: 9, round: 1, polRound: -1, blockId, timestamp: 0n, signature: new Uint8Array(64) },
    });
    h.chain.bus.publish({ kind: 'ValidatorSetUpdates', updates: [{ pubKey: v0.pubKey, power: 0n }] });
    const prop = await c.next((m) => m.result?.data?.type === 'tendermint/event/CompleteProposal');
    assert.deepEqual(prop.result.data.value, {
      height: '9',
      round: 1,
      step: 'RoundStepPropose',
      block_id: { hash: hexU(blockId.hash), parts: { total: 1, hash: hexU(blockId.partSetHeader.hash) } },
    });
    const vsu = await c.next((m) => m.result?.data?.type === 'tendermint/event/ValidatorSetUpdates');
    assert.deepEqual(vsu.result.data.value.validator_updates, [
      {
        address: hexU(v0.address),
        pub_key: { type: 'tendermint/PubKeyEd25519', value: b64(v0.pubKey) },
        voting_power: '0',
        proposer_priority: '0',
      },
    ]);
    await c.call('unsubscribe_all');
  });

  it('subscribe / unsubscribe / unsubscribe_all errors and effects', async () => {
    const c = await open();
    const q = "tm.event='NewBlock'";
    await c.call('subscribe', { query: q });
    const again = await c.call('subscribe', { query: "tm.event = 'NewBlock'" });
    assert.deepEqual(again.error, { code: -32603, message: 'Internal error', data: 'already subscribed' });
    const bad = await c.call('subscribe', { query: 'tm.event=' });
    assert.match(bad.error.data, /^failed to parse query: offset \d+: EOF/);
    const long = await c.call('subscribe', { query: `a.b='${'x'.repeat(600)}'` });
    assert.equal(long.error.data, 'maximum query length exceeded');
    await c.call('subscribe', { query: "tm.event='Tx'" });
    await c.call('subscribe', { query: "tm.event='Vote'" });
    const fourth = await c.call('subscribe', { query: "tm.event='NewRound'" });
    assert.equal(fourth.error.data, 'max_subscriptions_per_client 3 reached');
    assert.deepEqual((await c.call('unsubscribe', { query: "tm.event='Vote'" })).result, {});
    const missing = await c.call('unsubscribe', { query: "tm.event='Vote'" });
    assert.equal(missing.error.data, 'subscription not found');
    await c.call('unsubscribe', { query: q });
    h.chain.commitBlock([]);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(c.pending().length, 0, 'no NewBlock after unsubscribe');
    assert.deepEqual((await c.call('unsubscribe_all')).result, {});
    const none = await c.call('unsubscribe_all');
    assert.equal(none.error.data, 'subscription not found');
  });

  it('max_subscription_clients counts distinct clients; a disconnect frees its slot', async () => {
    const cs = [await open(), await open(), await open()];
    for (const c of cs)
      assert.deepEqual((await c.call('subscribe', { query: "tm.event='NewBlock'" })).result, {});
    const extra = await open();
    const refused = await extra.call('subscribe', { query: "tm.event='NewBlock'" });
    assert.equal(refused.error.data, 'max_subscription_clients 3 reached');
    cs[0].close();
    const deadline = Date.now() + 2000;
    let ok: Msg;
    do {
      await new Promise((r) => setTimeout(r, 20));
      ok = await extra.call('subscribe', { query: "tm.event='NewBlock'" });
    } while (ok.error && Date.now() < deadline);
    assert.deepEqual(ok.result, {});
    for (const c of [cs[1], cs[2], extra]) await c.call('unsubscribe_all');
  });

  it('broadcast_tx_commit waits for the Tx event, times out, or returns a failed check', async () => {
    const tx = await h.chain.signTransfer(0, 31n);
    const pending = rpcPost(h.url, {
      jsonrpc: '2.0',
      id: 1,
      method: 'broadcast_tx_commit',
      params: { tx: b64(tx) },
    });
    const deadline = Date.now() + 2000;
    while (h.chain.mempool.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    const stored = h.chain.commitBlock([tx]);
    const res = await pending;
    assert.equal(res.json.result.height, String(stored.block.header.height));
    assert.equal(res.json.result.hash, hexU(sha256(tx)));
    assert.equal(res.json.result.check_tx.code, 0);
    assert.equal(res.json.result.tx_result.gas_used, '21000');

    const lonely = await h.chain.signTransfer(0, 32n);
    const timeout = await http(`${h.url}/broadcast_tx_commit?tx=0x${Buffer.from(lonely).toString('hex')}`);
    assert.equal(timeout.json.error.data, 'timed out waiting for tx to be included in a block');
    h.chain.flushMempool();

    const invalid = await http(`${h.url}/broadcast_tx_commit?tx=0x0102`);
    assert.equal(invalid.json.result.check_tx.code, 1);
    assert.equal(invalid.json.result.height, '0');
    assert.deepEqual(invalid.json.result.tx_result, {
      code: 0,
      data: null,
      log: '',
      info: '',
      gas_wanted: '0',
      gas_used: '0',
      events: [],
      codespace: '',
    });
  });
});

/** A NewBlock event whose block carries `size` bytes of transaction data. */
function bigBlockEvent(h: CometHarness, height: number, size: number): NodeEvent {
  const base = h.chain.blocks.get(1)!;
  return {
    kind: 'NewBlock',
    block: {
      ...base.block,
      header: { ...base.block.header, height },
      data: { txs: [new Uint8Array(size).fill(height % 251)] },
    },
    blockId: base.blockId,
    result: { ...base.result, txResults: [] },
  };
}

async function stalledSubscriber(h: CometHarness): Promise<Client> {
  const c = await Client.open(h.wsUrl);
  await c.call('subscribe', { query: "tm.event='NewBlock'" });
  // Stop reading: the node's writes pile up in the kernel and then in its own queue.
  (c.ws as unknown as { _socket: { pause(): void } })._socket.pause();
  return c;
}

describe('slow WebSocket clients', () => {
  it('a client that keeps reading survives a burst far larger than the buffer', async () => {
    const h = await startComet({ experimentalSubscriptionBufferSize: 4 });
    const c = await Client.open(h.wsUrl);
    try {
      await c.call('subscribe', { query: "tm.event='NewRoundStep'" });
      for (let round = 0; round < 300; round++)
        h.chain.bus.publish({ kind: 'NewRoundStep', height: 9, round, step: 'Propose' });
      const last = await c.next((m) => m.result?.data?.value?.round === 299, 10_000);
      assert.equal(last.id, 1);
      assert.equal(c.pending().filter((m) => m.error).length, 0);
      assert.equal(c.pending().length, 299, 'every event arrived');
    } finally {
      c.close();
      await h.close();
    }
  });

  it('a subscription that falls buffer_size events behind is cancelled with CometBFT error', async () => {
    const h = await startComet({ experimentalSubscriptionBufferSize: 4 });
    const c = await stalledSubscriber(h);
    try {
      // Spaced out, so only a client that stopped reading falls behind.
      for (let i = 0; i < 80; i++) {
        h.chain.bus.publish(bigBlockEvent(h, 100 + i, 256 * 1024));
        await new Promise((r) => setTimeout(r, 2));
      }
      (c.ws as unknown as { _socket: { resume(): void } })._socket.resume();
      const cancelled = await c.next((m) => m.error !== undefined, 20_000);
      assert.deepEqual(cancelled, {
        jsonrpc: '2.0',
        id: 1,
        error: {
          code: -32000,
          message: 'Server error',
          data: 'subscription was canceled (reason: internal subscription event buffer is out of capacity)',
        },
      });
      assert.equal(c.closed, false, 'the connection stays open');
      const again = await c.call('subscribe', { query: "tm.event='NewBlock'" });
      assert.deepEqual(again.result, {}, 'the cancelled subscription is gone and can be made again');
    } finally {
      c.close();
      await h.close();
    }
  });

  it('with experimental_close_on_slow_client the connection is closed', async () => {
    const h = await startComet({
      experimentalSubscriptionBufferSize: 4,
      experimentalCloseOnSlowClient: true,
    });
    const c = await stalledSubscriber(h);
    try {
      // Spaced out, so only a client that stopped reading falls behind.
      for (let i = 0; i < 80; i++) {
        h.chain.bus.publish(bigBlockEvent(h, 100 + i, 256 * 1024));
        await new Promise((r) => setTimeout(r, 2));
      }
      (c.ws as unknown as { _socket: { resume(): void } })._socket.resume();
      const deadline = Date.now() + 20_000;
      while (!c.closed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      assert.equal(c.closed, true);
    } finally {
      c.close();
      await h.close();
    }
  });
});
