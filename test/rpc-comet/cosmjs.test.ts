// @cosmjs/tendermint-rpc's Comet38Client decodes every answer strictly: it passing proves the shapes.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Comet38Client, HttpClient, WebsocketClient } from '@cosmjs/tendermint-rpc';
import { sha256 } from '@noded/crypto';
import { type CometHarness, startComet } from './helpers.js';

describe('@cosmjs/tendermint-rpc Comet38Client', () => {
  let h: CometHarness;
  let client: Comet38Client;

  before(async () => {
    h = await startComet();
    client = Comet38Client.create(new HttpClient(h.url));
  });
  after(async () => {
    client.disconnect();
    await h.close();
  });

  it('status, block, blockchain, commit and validators over HTTP', async () => {
    const status = await client.status();
    assert.equal(status.nodeInfo.network, 'chain-local');
    assert.equal(status.nodeInfo.protocolVersion.block, 11);
    assert.equal(status.syncInfo.latestBlockHeight, 5);
    assert.equal(status.syncInfo.catchingUp, false);
    assert.equal(status.syncInfo.earliestBlockHeight, 1);
    assert.equal(status.validatorInfo.votingPower, 10n);
    assert.equal(status.validatorInfo.pubkey?.algorithm, 'ed25519');

    const block = await client.block(5);
    assert.equal(block.block.header.height, 5);
    assert.equal(block.block.header.chainId, 'chain-local');
    assert.equal(block.block.txs.length, 3);
    assert.deepEqual(block.block.txs[0], h.chain.blocks.get(5)!.block.data.txs[0]);
    assert.equal(block.block.header.time.toISOString(), '2023-11-14T22:13:25.123Z');
    assert.equal(block.block.lastCommit?.height, 4);
    assert.deepEqual(block.blockId.hash, h.chain.blocks.get(5)!.blockId.hash);
    const first = await client.block(1);
    assert.equal(first.block.lastCommit, null);
    assert.equal(first.block.header.lastBlockId, null);

    const chain = await client.blockchain(2, 5);
    assert.equal(chain.lastHeight, 5);
    assert.deepEqual(
      chain.blockMetas.map((m) => m.header.height),
      [5, 4, 3, 2],
    );
    assert.equal(chain.blockMetas[0].numTxs, 3);

    const commit = await client.commit(3);
    assert.equal(commit.canonical, true);
    assert.equal(commit.commit.height, 3);
    assert.equal(commit.commit.signatures.length, 2);
    assert.equal(commit.commit.signatures[1].blockIdFlag, 1);
    const tip = await client.commit();
    assert.equal(tip.canonical, false);

    const vals = await client.validators({ height: 4 });
    assert.equal(vals.blockHeight, 4);
    assert.equal(vals.total, 2);
    assert.deepEqual(
      vals.validators.map((v) => v.votingPower),
      [10n, 20n],
    );
    const all = await client.validatorsAll(4);
    assert.equal(all.validators.length, 2);

    const results = await client.blockResults(2);
    assert.equal(results.results.length, 2);
    assert.equal(results.results[0].gasUsed, 21000n);
    const params = await client.genesis();
    assert.equal(params.chainId, 'chain-local');
    assert.equal(await client.health(), null);
    const info = await client.abciInfo();
    assert.equal(info.lastBlockHeight, 5);
    const num = await client.numUnconfirmedTxs();
    assert.equal(num.total, 0);
  });

  it('txSearch, tx and blockSearch', async () => {
    const search = await client.txSearch({ query: 'tx.height=5', per_page: 2, page: 1 });
    assert.equal(search.totalCount, 3);
    assert.equal(search.txs.length, 2);
    assert.equal(search.txs[1].index, 1);
    const raw = h.chain.blocks.get(5)!.block.data.txs[1];
    assert.deepEqual(search.txs[1].hash, sha256(raw));
    const all = await client.txSearchAll({ query: "transfer.amount CONTAINS 'abtc'" });
    assert.equal(all.totalCount, 6);
    const one = await client.tx({ hash: sha256(raw), prove: true });
    assert.equal(one.height, 5);
    assert.equal(one.proof?.proof.total, 3);
    assert.deepEqual(one.proof?.rootHash, h.chain.blocks.get(5)!.block.header.dataHash);
    const blocks = await client.blockSearch({ query: 'block.height >= 4' });
    assert.equal(blocks.totalCount, 2);
    assert.deepEqual(blocks.blocks.map((b) => b.block.header.height).sort(), [4, 5]);
  });

  it('broadcastTxSync of a signed Ethereum transaction reaches the mempool', async () => {
    const raw = await h.chain.signTransfer(0, 4242n);
    const res = await client.broadcastTxSync({ tx: raw });
    assert.equal(res.code, 0);
    assert.deepEqual(res.hash, sha256(raw));
    assert.equal(h.chain.mempool.length, 1);
    const check = await client.broadcastTxSync({ tx: Uint8Array.of(1, 2, 3) });
    assert.equal(check.code, 1);
    // Committed, it is found through the index by the hash cosmjs computed.
    h.chain.commitBlock([raw]);
    await h.indexer.idle();
    const found = await client.tx({ hash: res.hash });
    assert.equal(found.height, 6);
  });

  it('subscribeNewBlock over WebSocket receives consecutive heights', async () => {
    // WebsocketClient appends /websocket to the base URL itself.
    const socket = new WebsocketClient(`ws://127.0.0.1:${h.port}`);
    const ws = Comet38Client.create(socket);
    try {
      const heights: number[] = [];
      const done = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('fewer than 3 blocks within 5 s')), 5000);
        const sub = ws.subscribeNewBlock().subscribe({
          next: (block) => {
            heights.push(block.header.height);
            if (heights.length === 3) {
              clearTimeout(timer);
              sub.unsubscribe();
              resolve();
            }
          },
          error: reject,
        });
      });
      const headers = ws.subscribeNewBlockHeader();
      const headerSeen = new Promise<number>((resolve) => {
        const sub = headers.subscribe({
          next: (hdr) => {
            sub.unsubscribe();
            resolve(hdr.height);
          },
        });
      });
      const txs = ws.subscribeTx('transfer.amount >= 1');
      const txSeen = new Promise<Uint8Array>((resolve) => {
        const sub = txs.subscribe({
          next: (ev) => {
            sub.unsubscribe();
            resolve(ev.hash);
          },
        });
      });
      // Give the subscriptions time to register, then produce blocks.
      const deadline = Date.now() + 2000;
      while (h.server && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
        if ((await ws.status()).syncInfo.latestBlockHeight >= 6) break;
      }
      await new Promise((r) => setTimeout(r, 100));
      const start = h.chain.height() + 1;
      const tx = await h.chain.signTransfer(0, 9n);
      h.chain.commitBlock([tx]);
      h.chain.commitBlock([]);
      h.chain.commitBlock([]);
      await done;
      assert.deepEqual(heights, [start, start + 1, start + 2]);
      assert.equal(await headerSeen, start);
      assert.deepEqual(await txSeen, sha256(tx));
    } finally {
      ws.disconnect();
      stopReconnecting(socket);
    }
  });
});

/**
 * @cosmjs/socket 0.39's ReconnectingSocket schedules a reconnect even after disconnect(), forever,
 * which would keep this test process alive; stop it by hand.
 */
function stopReconnecting(client: WebsocketClient): void {
  const rs = (
    client as unknown as {
      socket: { reconnectTimeout: NodeJS.Timeout | null; socket: { reconnect(): void } };
    }
  ).socket;
  rs.socket.reconnect = () => {};
  if (rs.reconnectTimeout) clearTimeout(rs.reconnectTimeout);
}
