// Execution ahead of the proposal: admitted transactions run on the next block's state before the
// block is proposed, and FinalizeBlock keeps what the proposed block shares with them. Every
// scenario runs on two executors, one with it and one without, which must produce the same
// responses, blocks and state; the one with it must also have used what it ran ahead.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Hex } from '@noded/types';
import { LAB_SOL } from './contracts.js';
import { addr, compile, ETH, GWEI, key, produceBlock, signTx, startNode, type TestNode } from './helpers.js';
import { labSelectors } from './selectors.js';
import { workloadBlocks, workloadGenesis } from './workload.js';

const senders = Array.from({ length: 6 }, (_, i) => key(400 + i));
const to = addr(key(450));
// TIMESTAMP PUSH1 0 SSTORE STOP: stores the block's timestamp in slot 0.
const CLOCK = '0x00000000000000000000000000000000000c1001' as Hex;
// PREVRANDAO PUSH1 0 SSTORE STOP
const RANDAO = '0x00000000000000000000000000000000000c1002' as Hex;
// PUSH1 0 SLOAD PUSH1 1 ADD PUSH1 0 SSTORE STOP: a counter in slot 0.
const COUNTER = '0x00000000000000000000000000000000000c1003' as Hex;
// PUSH1 0 DUP1 REVERT
const REVERTS = '0x00000000000000000000000000000000000c1004' as Hex;
const OTHER_PROPOSER = Uint8Array.from(Buffer.from('bb'.repeat(20), 'hex'));

async function twoNodes(): Promise<{ on: TestNode; off: TestNode }> {
  const accounts = [
    ...senders.map((k) => ({ address: addr(k), balance: 100n * ETH })),
    { address: CLOCK, balance: 0n, code: '0x4260005500' as Hex },
    { address: RANDAO, balance: 0n, code: '0x4460005500' as Hex },
    { address: COUNTER, balance: 0n, code: '0x600054600101600055' as Hex },
    { address: REVERTS, balance: 0n, code: '0x600080fd' as Hex },
  ];
  const on = await startNode(accounts);
  const off = await startNode(accounts, { runAhead: false });
  // Two blocks by the same proposer: from then on the run ahead has a coinbase.
  for (let i = 0; i < 2; i++) await both({ on, off }, (n) => produceBlock(n, []));
  return { on, off };
}

async function both<T>(
  nodes: { on: TestNode; off: TestNode },
  f: (n: TestNode) => Promise<T>,
): Promise<{ on: T; off: T }> {
  return { on: await f(nodes.on), off: await f(nodes.off) };
}

/** Admits `txs` with CheckTx; each must be accepted. */
async function admit(n: TestNode, txs: Uint8Array[]): Promise<void> {
  for (const tx of txs) {
    const r = await n.ex.checkTx(tx, 'new');
    assert.equal(r.code, 0, r.log);
  }
}

/** Waits (bounded) until the run ahead has nothing left to run. */
async function settled(n: TestNode): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const s = n.ex.aheadStatus();
    if (!s || s.waiting === 0 || !s.open) {
      await new Promise((r) => setImmediate(r));
      const again = n.ex.aheadStatus();
      if (!again || again.waiting === 0 || !again.open) return;
    }
    await new Promise((r) => setTimeout(r, 2));
  }
  assert.fail('the run ahead did not settle');
}

async function sameChain(nodes: { on: TestNode; off: TestNode }, res: { on: unknown; off: unknown }) {
  assert.deepEqual(res.on, res.off, 'FinalizeBlock answered differently with the run ahead');
  const h = nodes.on.ex.latestHeight();
  assert.equal(h, nodes.off.ex.latestHeight());
  assert.deepEqual(await nodes.on.ex.getBlockByNumber(h), await nodes.off.ex.getBlockByNumber(h));
  assert.deepEqual(await nodes.on.ex.getBlockReceipts(h), await nodes.off.ex.getBlockReceipts(h));
}

const transfer = (
  k: Uint8Array,
  nonce: bigint,
  over: { tip?: bigint; maxFee?: bigint; value?: bigint } = {},
) =>
  signTx(k, { nonce, to, value: over.value ?? 1n, maxFee: over.maxFee ?? 10n * GWEI, tip: over.tip ?? GWEI });
const callTo = (k: Uint8Array, nonce: bigint, target: Hex) =>
  signTx(k, { nonce, to: target, gas: 60_000n, maxFee: 10n * GWEI, tip: GWEI });

describe('execution ahead of the proposal', () => {
  it('runs admitted transactions before the proposal, and the block reuses all of them', async () => {
    const nodes = await twoNodes();
    const txs: Uint8Array[] = [];
    for (let nonce = 0n; nonce < 5n; nonce++) {
      for (const [i, k] of senders.entries()) {
        txs.push(
          i % 3 === 0
            ? callTo(k, nonce, COUNTER)
            : i % 3 === 1
              ? callTo(k, nonce, REVERTS)
              : transfer(k, nonce),
        );
      }
    }
    await both(nodes, (n) => admit(n, txs));
    await settled(nodes.on);
    assert.equal(nodes.on.ex.aheadStatus()?.ran, 30, 'every admitted transaction ran ahead');
    assert.equal(nodes.off.ex.aheadStatus(), undefined);
    const res = await both(nodes, (n) => produceBlock(n, undefined));
    assert.deepEqual(nodes.on.ex.lastExecution(), { txs: 30, ranAhead: 30 });
    assert.deepEqual(nodes.off.ex.lastExecution(), { txs: 30, ranAhead: 0 });
    assert.ok(res.on.txResults.some((r) => r.log.startsWith('execution reverted')));
    await sameChain(nodes, res);
    const counter = await nodes.on.ex.getStorageAt(COUNTER, '0x0', nodes.on.ex.latestHeight());
    assert.equal(BigInt(counter), 10n);
  });

  it('keeps the shared prefix when the proposal differs, and executes the rest', async () => {
    const nodes = await twoNodes();
    const a = senders.map((k) => transfer(k, 0n));
    const b = senders.map((k) => transfer(k, 1n, { value: 7n }));
    await both(nodes, (n) => admit(n, [...a, ...b]));
    await settled(nodes.on);
    // A proposal that shares the first three, then takes the senders in another order and leaves
    // the second round out.
    const proposal = [...a.slice(0, 3), a[5], a[4], a[3]];
    const res = await both(nodes, (n) => produceBlock(n, proposal));
    assert.deepEqual(nodes.on.ex.lastExecution(), { txs: 6, ranAhead: 3 });
    await sameChain(nodes, res);
    // The next block starts its own run ahead from what the mempool still holds.
    await settled(nodes.on);
    assert.equal(nodes.on.ex.aheadStatus()?.ran, 6);
    const next = await both(nodes, (n) => produceBlock(n, undefined));
    assert.deepEqual(nodes.on.ex.lastExecution(), { txs: 6, ranAhead: 6 });
    await sameChain(nodes, next);
  });

  it('stops at a transaction that reads TIMESTAMP or PREVRANDAO, which it cannot know yet', async () => {
    for (const reader of [CLOCK, RANDAO]) {
      const nodes = await twoNodes();
      const txs = [transfer(senders[0], 0n), callTo(senders[1], 0n, reader), transfer(senders[2], 0n)];
      await both(nodes, (n) => admit(n, txs));
      await settled(nodes.on);
      assert.deepEqual(
        { ran: nodes.on.ex.aheadStatus()?.ran, open: nodes.on.ex.aheadStatus()?.open },
        { ran: 1, open: false },
      );
      const res = await both(nodes, (n) => produceBlock(n, undefined));
      assert.deepEqual(nodes.on.ex.lastExecution(), { txs: 3, ranAhead: 1 });
      await sameChain(nodes, res);
      const stored = BigInt(await nodes.on.ex.getStorageAt(reader, '0x0', nodes.on.ex.latestHeight()));
      assert.notEqual(stored, 0n, 'the block context was the real one');
      if (reader === CLOCK) assert.equal(stored, nodes.on.time / 1_000_000_000n);
    }
  });

  it('runs nothing ahead for a proposer it did not expect, and the block is the same', async () => {
    const nodes = await twoNodes();
    const txs = senders.map((k) => transfer(k, 0n));
    await both(nodes, (n) => admit(n, txs));
    await settled(nodes.on);
    assert.equal(nodes.on.ex.aheadStatus()?.ran, 6);
    const res = await both(nodes, (n) => produceBlock(n, undefined, OTHER_PROPOSER));
    assert.deepEqual(nodes.on.ex.lastExecution(), { txs: 6, ranAhead: 0 });
    await sameChain(nodes, res);
    // The proposer changed: no run ahead until one proposer has made two blocks in a row.
    await both(nodes, (n) => admit(n, [transfer(senders[0], 1n)]));
    assert.equal(nodes.on.ex.aheadStatus(), undefined);
  });

  it('drops what a replacement made stale', async () => {
    const nodes = await twoNodes();
    const first = transfer(senders[0], 0n, { tip: GWEI });
    const second = transfer(senders[1], 0n);
    await both(nodes, (n) => admit(n, [first, second]));
    await settled(nodes.on);
    const replacement = transfer(senders[0], 0n, { tip: 2n * GWEI, maxFee: 20n * GWEI, value: 3n });
    await both(nodes, (n) => admit(n, [replacement]));
    await settled(nodes.on);
    const res = await both(nodes, (n) => produceBlock(n, undefined));
    const proposed = nodes.on.ex.lastExecution();
    assert.equal(proposed.txs, 2);
    // The proposal puts the replacement (the higher tip) first: nothing it shares with the run.
    assert.equal(proposed.ranAhead, 0);
    await sameChain(nodes, res);
    assert.equal(await nodes.on.ex.getBalance(to, nodes.on.ex.latestHeight()), 4n);
  });

  it('runs one price level: cheaper transactions are left for the block, a dearer one ends the run', async () => {
    const status = (n: TestNode) => ({ ran: n.ex.aheadStatus()?.ran, open: n.ex.aheadStatus()?.open });
    const cases: Array<{ txs: Uint8Array[]; status: { ran: number; open: boolean }; ranAhead: number }> = [
      // Cheaper last: the proposal takes the two dearer ones first, in arrival order.
      {
        txs: [
          transfer(senders[0], 0n, { tip: 3n * GWEI }),
          transfer(senders[1], 0n, { tip: 3n * GWEI }),
          transfer(senders[2], 0n),
        ],
        status: { ran: 2, open: true },
        ranAhead: 2,
      },
      // Cheaper in the middle: left out, with its sender's next nonce (dearer, but behind it).
      {
        txs: [
          transfer(senders[0], 0n, { tip: 3n * GWEI }),
          transfer(senders[1], 0n),
          transfer(senders[2], 0n, { tip: 3n * GWEI }),
          transfer(senders[1], 1n, { tip: 3n * GWEI }),
        ],
        status: { ran: 2, open: true },
        ranAhead: 2,
      },
      // Dearer last: the proposal puts it first, and nothing that ran is reused.
      {
        txs: [
          transfer(senders[0], 0n),
          transfer(senders[1], 0n),
          transfer(senders[2], 0n, { tip: 3n * GWEI }),
        ],
        status: { ran: 2, open: false },
        ranAhead: 0,
      },
    ];
    for (const [i, c] of cases.entries()) {
      const nodes = await twoNodes();
      await both(nodes, (n) => admit(n, c.txs));
      await settled(nodes.on);
      assert.deepEqual(status(nodes.on), c.status, `case ${i}`);
      const res = await both(nodes, (n) => produceBlock(n, undefined));
      assert.deepEqual(nodes.on.ex.lastExecution(), { txs: c.txs.length, ranAhead: c.ranAhead }, `case ${i}`);
      await sameChain(nodes, res);
    }
  });

  it('gives the same app hash and results as execution at proposal over a 20-block contract workload', async () => {
    const c = compile({ 'Lab.sol': LAB_SOL });
    const blocks = workloadBlocks(
      20,
      7,
      { lab: c.Lab.bytecode, burn: c.BurnOnCreate.bytecode },
      labSelectors(c.Lab.abi),
    );
    const nodes = {
      on: await startNode(workloadGenesis()),
      off: await startNode(workloadGenesis(), { runAhead: false }),
    };
    for (let i = 0; i < 2; i++) await both(nodes, (n) => produceBlock(n, []));
    let ranAhead = 0;
    let total = 0;
    for (const txs of blocks) {
      // Admission as a node sees it, then the block as proposed.
      await both(nodes, async (n) => {
        for (const tx of txs) await n.ex.checkTx(tx, 'new');
      });
      await settled(nodes.on);
      const res = await both(nodes, (n) => produceBlock(n, txs));
      await sameChain(nodes, res);
      ranAhead += nodes.on.ex.lastExecution().ranAhead;
      total += txs.length;
    }
    // Every transaction pays the same price and none reads the block's time: all of it ran ahead.
    assert.deepEqual({ ranAhead, total }, { ranAhead: 141, total: 141 });
  });

  it('answers eth_call and balances from the committed state, not from the run ahead', async () => {
    const nodes = await twoNodes();
    const before = await nodes.on.ex.getBalance(to, nodes.on.ex.latestHeight());
    await admit(nodes.on, [...senders.map((k) => transfer(k, 0n)), callTo(senders[0], 1n, COUNTER)]);
    await settled(nodes.on);
    assert.equal(nodes.on.ex.aheadStatus()?.ran, 7);
    assert.equal(await nodes.on.ex.getBalance(to, nodes.on.ex.latestHeight()), before);
    const counter = await nodes.on.ex.getStorageAt(COUNTER, '0x0', nodes.on.ex.latestHeight());
    assert.equal(BigInt(counter), 0n);
  });
});
