// Block execution gives the event loop a turn every few milliseconds, so that CheckTx of arriving
// transactions and reads of the committed state are answered while a large block executes, as
// CometBFT runs CheckTx beside FinalizeBlock. The reads see the committed state, never the block
// being built.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addr, ETH, GWEI, key, PROPOSER, signTx, startNode } from './helpers.js';

describe('block execution in slices', () => {
  it('answers reads and admits transactions while a large block executes', async () => {
    const senders = Array.from({ length: 20 }, (_, i) => key(100 + i));
    const late = key(200);
    const n = await startNode([...senders, late].map((k) => ({ address: addr(k), balance: 100n * ETH })));
    const to = addr(key(300));
    const txs: Uint8Array[] = [];
    for (let nonce = 0n; nonce < 60n; nonce++) {
      for (const k of senders) txs.push(signTx(k, { nonce, to, value: 1n, maxFee: 10n * GWEI, tip: GWEI }));
    }
    const before = await n.ex.getBalance(to, n.ex.latestHeight());

    let blockDone = false;
    const block = n.ex
      .finalizeBlock({
        height: 1,
        time: n.time + 1_000_000_000n,
        proposerAddress: PROPOSER,
        hash: new Uint8Array(32).fill(1),
        txs,
        misbehavior: [],
        decidedLastCommit: { round: 0, votes: [] },
      })
      .then((res) => {
        blockDone = true;
        return res;
      });
    // Issued once the block's transaction loop is under way (a timer only fires when the loop
    // yields): each must be answered before the block's 1200 transactions are done.
    const started = new Promise<void>((resolve) => setTimeout(resolve, 20));
    const read = started
      .then(() => n.ex.getBalance(to, n.ex.latestHeight()))
      .then((v) => ({ v, during: !blockDone }));
    const admit = started
      .then(() =>
        n.ex.checkTx(signTx(late, { nonce: 0n, to, value: 5n, maxFee: 10n * GWEI, tip: GWEI }), 'new'),
      )
      .then((r) => ({ code: r.code, during: !blockDone }));

    const [r, a, res] = await Promise.all([read, admit, block]);
    assert.equal(r.during, true, 'the read waited for the whole block');
    assert.equal(r.v, before, 'the read saw the committed state, not the block being built');
    assert.equal(a.during, true, 'CheckTx waited for the whole block');
    assert.equal(a.code, 0);
    assert.equal(res.txResults.length, 1200);
    assert.ok(res.txResults.every((t) => t.code === 0));
    await n.ex.commit();
    assert.equal(await n.ex.getBalance(to, n.ex.latestHeight()), before + 1200n);
  });
});
