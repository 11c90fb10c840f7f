// @cosmjs/tendermint-rpc (Comet38Client) against the CometBFT-compatible RPC of a real node.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Comet38Client, HttpClient, WebsocketClient } from '@cosmjs/tendermint-rpc';
import { Transaction, Wallet } from 'ethers';
import { DEV_KEYS, startLocalNode } from './harness.js';

describe('@cosmjs/tendermint-rpc against noded :26657', { timeout: 420_000 }, () => {
  let env: Awaited<ReturnType<typeof startLocalNode>>;
  let client: Comet38Client;

  before(async () => {
    env = await startLocalNode({ timeoutCommit: '300ms' });
    client = Comet38Client.create(new HttpClient(env.node.cometUrl));
  });

  after(async () => {
    client?.disconnect();
    await env?.cleanup();
  });

  it('status, block, blockchain, commit and validators have CometBFT shapes', async () => {
    const status = await client.status();
    assert.equal(status.nodeInfo.network, 'chain-local');
    assert.ok(status.syncInfo.latestBlockHeight >= 1);
    assert.equal(status.syncInfo.catchingUp, false);
    const h = status.syncInfo.latestBlockHeight;
    const block = await client.block(h);
    assert.equal(block.block.header.height, h);
    assert.equal(block.block.header.chainId, 'chain-local');
    const chain = await client.blockchain(1, h);
    assert.ok(chain.blockMetas.length >= 1);
    const commit = await client.commit(h);
    assert.equal(commit.commit.height, h);
    assert.ok(commit.commit.signatures.length >= 1);
    const vals = await client.validators({ height: h });
    assert.equal(vals.validators.length, 1);
    assert.ok(vals.validators[0].votingPower > 0n);
  });

  it('broadcastTxSync of a signed Ethereum transaction is included, found by tx search, and seen by abciQuery', async () => {
    const wallet = new Wallet(DEV_KEYS[1]);
    const nonceRes = await fetch(env.node.ethUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'eth_getTransactionCount',
        params: [wallet.address, 'pending'],
      }),
    });
    const nonce = Number(BigInt(((await nonceRes.json()) as { result: string }).result));
    const tx = Transaction.from({
      type: 2,
      chainId: 31337n,
      nonce,
      to: '0x000000000000000000000000000000000000bEEF',
      value: 5n,
      gasLimit: 21000n,
      maxFeePerGas: 10_000_000_000n,
      maxPriorityFeePerGas: 1_000_000_000n,
    });
    const signed = await wallet.signTransaction(tx);
    const raw = Buffer.from(signed.slice(2), 'hex');
    const res = await client.broadcastTxSync({ tx: raw });
    assert.equal(res.code, 0, res.log);
    const deadline = Date.now() + 30_000;
    let height = 0;
    while (height === 0 && Date.now() < deadline) {
      const search = await client.txSearch({
        query: `tx.hash='${Buffer.from(res.hash).toString('hex').toUpperCase()}'`,
      });
      if (search.totalCount === 1) height = search.txs[0]!.height;
      else await new Promise((r) => setTimeout(r, 300));
    }
    assert.ok(height > 0, 'transaction indexed within 30 s');
    // abciQuery (the application's /evm/* paths; in the cluster, the executor's Query) at the
    // transaction's height and the one before: the 5 base units arrived and the sender's nonce moved.
    const q = async (path: string, at: number) => {
      const r = await client.abciQuery({ path, data: new Uint8Array(), height: at });
      assert.equal(r.code, 0, r.log);
      assert.equal(r.height, at);
      assert.equal(Buffer.from(r.key).toString(), path);
      return BigInt(Buffer.from(r.value).toString());
    };
    const beef = '/evm/balance/0x000000000000000000000000000000000000beef';
    assert.equal((await q(beef, height)) - (await q(beef, height - 1)), 5n);
    assert.equal(await q(`/evm/nonce/${wallet.address}`, height), BigInt(nonce + 1));
    const bad = await client.abciQuery({ path: '/store/acc/key', data: new Uint8Array([1]) });
    assert.equal(bad.code, 1);
    assert.match(bad.log ?? '', /^unknown query path "\/store\/acc\/key": use \/evm\//);
  });

  it('subscribeNewBlock over /websocket delivers consecutive heights', async () => {
    // cosmjs appends /websocket itself.
    const ws = new WebsocketClient(env.node.cometUrl.replace('http', 'ws'));
    const wsClient = Comet38Client.create(ws);
    try {
      const heights: number[] = [];
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('fewer than 3 blocks in 20 s')), 20_000);
        const sub = wsClient.subscribeNewBlock().subscribe({
          next: (ev) => {
            heights.push(ev.header.height);
            if (heights.length === 3) {
              clearTimeout(timer);
              sub.unsubscribe();
              resolve();
            }
          },
          error: reject,
        });
      });
      assert.equal(heights[1], heights[0] + 1);
      assert.equal(heights[2], heights[1] + 1);
    } finally {
      wsClient.disconnect();
      // @cosmjs/socket 0.39 schedules reconnects after disconnect() forever; stop them by hand.
      const rs = (
        ws as unknown as {
          socket: { reconnectTimeout: NodeJS.Timeout | null; socket: { reconnect(): void } };
        }
      ).socket;
      rs.socket.reconnect = () => {};
      if (rs.reconnectTimeout) clearTimeout(rs.reconnectTimeout);
    }
  });
});
