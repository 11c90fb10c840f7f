// Plain value transfers are applied without the EVM (BlockRun.plainTransfer). Every scenario runs on
// two executors, one with that path and one that sends every transaction through EthereumJS' runTx;
// both must answer FinalizeBlock alike and end with the same blocks, receipts and app hash, and the
// first must have taken the path for exactly the transfers it covers.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Hex } from '@noded/types';
import { addr, ETH, GWEI, key, PROPOSER, produceBlock, signTx, startNode, type TestNode } from './helpers.js';

const s = Array.from({ length: 10 }, (_, i) => key(700 + i));
const fresh = (i: number) => `0x${(0xf00000 + i).toString(16).padStart(40, '0')}` as Hex;
// PUSH1 0 SLOAD PUSH1 1 ADD PUSH1 0 SSTORE STOP: a counter in slot 0.
const COUNTER = '0x00000000000000000000000000000000000c1003' as Hex;
const IDENTITY = '0x0000000000000000000000000000000000000004' as Hex;
const BTC_TOKEN = '0x7b7c000000000000000000000000000000000000' as Hex;
const FUNDED = '0x00000000000000000000000000000000000f0001' as Hex;
// JUMPDEST PUSH1 0 JUMP: spends all the gas it is given.
const BURNER = '0x00000000000000000000000000000000000b0e00' as Hex;
const coinbase = `0x${Buffer.from(PROPOSER).toString('hex')}` as Hex;

type Nodes = { on: TestNode; off: TestNode };

async function twoNodes(): Promise<Nodes> {
  const accounts = [
    ...s.map((k) => ({ address: addr(k), balance: 100n * ETH })),
    { address: COUNTER, balance: 0n, code: '0x600054600101600055' as Hex },
    { address: FUNDED, balance: 3n },
    { address: BURNER, balance: 0n, code: '0x5b600056' as Hex },
  ];
  return { on: await startNode(accounts), off: await startNode(accounts, { plainTransfers: false }) };
}

async function both<T>(nodes: Nodes, f: (n: TestNode) => Promise<T>): Promise<{ on: T; off: T }> {
  return { on: await f(nodes.on), off: await f(nodes.off) };
}

async function sameChain(nodes: Nodes, res: { on: unknown; off: unknown }): Promise<void> {
  assert.deepEqual(res.on, res.off, 'FinalizeBlock answered differently without the EVM');
  const h = nodes.on.ex.latestHeight();
  assert.equal(h, nodes.off.ex.latestHeight());
  assert.deepEqual(await nodes.on.ex.getBlockByNumber(h), await nodes.off.ex.getBlockByNumber(h));
  assert.deepEqual(await nodes.on.ex.getBlockReceipts(h), await nodes.off.ex.getBlockReceipts(h));
}

const pay = (k: Uint8Array, nonce: bigint, to: Hex, value: bigint, over: Record<string, unknown> = {}) =>
  signTx(k, { nonce, to, value, maxFee: 10n * GWEI, tip: GWEI, ...over });

describe('plain value transfers without the EVM', () => {
  it('gives the state, results and receipts runTx gives, and leaves everything else to runTx', async () => {
    const nodes = await twoNodes();
    // The first block pays the coinbase a tip through runTx on both nodes: from then on it holds coins.
    await sameChain(
      nodes,
      await both(nodes, (n) => produceBlock(n, [pay(s[9], 0n, fresh(99), 1n, { data: '0x01' })])),
    );
    const block = [
      // Taken without the EVM:
      pay(s[0], 0n, fresh(1), ETH), // to an account that does not exist yet
      pay(s[0], 1n, addr(s[1]), 5n, { gas: 50_000n }), // unused gas refunded
      signTx(s[1], { type: 0, nonce: 0n, to: fresh(2), value: 7n, gasPrice: 3n * GWEI }), // legacy
      signTx(s[2], { type: 1, nonce: 0n, to: fresh(3), value: 9n, gasPrice: 2n * GWEI }), // EIP-2930, no list
      pay(s[3], 0n, FUNDED, 0n), // no value, to an account that holds some
      pay(s[3], 1n, fresh(4), 11n, { tip: 0n }), // no tip for the coinbase
      pay(s[3], 2n, fresh(5), 13n, { maxFee: GWEI + 1n, tip: GWEI }), // tip capped by the fee cap
      // Left to runTx:
      signTx(s[2], {
        type: 1,
        nonce: 1n,
        to: fresh(6),
        value: 1n,
        gas: 30_000n,
        gasPrice: 2n * GWEI,
        accessList: [{ address: COUNTER, storageKeys: [] }],
      }),
      pay(s[4], 0n, fresh(7), 0n), // no value to an empty account: EIP-161 deletes what runTx touched
      pay(s[4], 1n, IDENTITY, 1n, { gas: 30_000n }), // a precompile
      pay(s[4], 2n, BTC_TOKEN, 1n, { gas: 100_000n }), // the chain's own precompile
      pay(s[5], 0n, COUNTER, 0n, { gas: 60_000n }), // code
      pay(s[5], 1n, addr(s[5]), 1n), // to itself
      pay(s[6], 0n, coinbase, 1n), // to the coinbase
      pay(s[6], 1n, fresh(8), 1n, { data: '0xff', gas: 30_000n }), // calldata
      // Refused on both (before either path): nonce too high, then more value than the balance.
      pay(s[7], 5n, fresh(9), 1n),
      pay(s[8], 0n, fresh(10), 200n * ETH),
    ];
    const res = await both(nodes, (n) => produceBlock(n, block));
    await sameChain(nodes, res);
    assert.equal(nodes.on.ex.lastPlainTransfers(), 7);
    assert.equal(nodes.off.ex.lastPlainTransfers(), 0);
    assert.deepEqual(
      res.on.txResults.map((r) => r.code),
      [...Array(15).fill(0), 30, 30],
    );
    // A value transfer to the BTC token's precompile runs it, and it refuses calldata without a selector.
    assert.match(res.on.txResults[10]!.log, /^execution reverted: BTC: calldata of 0 bytes/);
    assert.equal(res.on.txResults.filter((r) => r.log === '').length, 14);
    const h = nodes.on.ex.latestHeight();
    for (const a of [fresh(1), fresh(4), fresh(7), addr(s[0]), coinbase]) {
      assert.equal(await nodes.on.ex.getBalance(a, h), await nodes.off.ex.getBalance(a, h), a);
    }
    assert.equal(await nodes.on.ex.getBalance(fresh(1), h), ETH);
    assert.equal(await nodes.on.ex.getNonce(addr(s[0]), h), 2n);
  });

  it('includes a transfer whose gas limit passes what the header has left, as runTx does (no block gas cap: max_gas = -1)', async () => {
    const nodes = await twoNodes();
    const head = await nodes.on.ex.getBlockByNumber(nodes.on.ex.latestHeight());
    assert.ok(head);
    const blockGas = head.gasLimit;
    const burnt = 16_000_000n;
    const over = blockGas - burnt + 1_000_000n; // EIP-7825 caps one transaction at 2^24 gas
    assert.ok(over <= 1n << 24n && over < blockGas, `block gas limit ${blockGas}`);
    const block = [
      pay(s[0], 0n, BURNER, 0n, { gas: burnt }), // runTx: spends all of its 16,000,000
      pay(s[1], 0n, fresh(31), 1n, { gas: over }), // with the first, past the header's gas limit
      pay(s[2], 0n, fresh(32), 1n), // still fits
    ];
    const res = await both(nodes, (n) => produceBlock(n, block));
    await sameChain(nodes, res);
    assert.deepEqual(
      res.on.txResults.map((r) => r.code),
      [0, 0, 0],
    );
    assert.equal(nodes.on.ex.lastPlainTransfers(), 2);
  });

  it('is cut back like any transaction run ahead when the proposal differs', async () => {
    const nodes = await twoNodes();
    await sameChain(
      nodes,
      await both(nodes, (n) => produceBlock(n, [pay(s[9], 0n, fresh(99), 1n, { data: '0x01' })])),
    );
    // A second block by the same proposer: from then on the run ahead has a coinbase.
    await sameChain(nodes, await both(nodes, (n) => produceBlock(n, [])));
    const a = s.slice(0, 6).map((k, i) => pay(k, 0n, fresh(20 + i), 1000n + BigInt(i)));
    const b = s.slice(0, 6).map((k, i) => pay(k, 1n, fresh(20 + i), 7n));
    await both(nodes, async (n) => {
      for (const tx of [...a, ...b]) assert.equal((await n.ex.checkTx(tx, 'new')).code, 0);
    });
    for (let i = 0; i < 500 && (nodes.on.ex.aheadStatus()?.ran ?? 0) < 12; i++)
      await new Promise((r) => setTimeout(r, 2));
    assert.equal(nodes.on.ex.aheadStatus()?.ran, 12, 'every admitted transfer ran ahead');
    const proposal = [...a.slice(0, 3), a[5], a[4], a[3]];
    await sameChain(nodes, await both(nodes, (n) => produceBlock(n, proposal)));
    assert.deepEqual(nodes.on.ex.lastExecution(), { txs: 6, ranAhead: 3 });
    assert.equal(nodes.on.ex.lastPlainTransfers(), 6);
    await sameChain(nodes, await both(nodes, (n) => produceBlock(n, undefined)));
    assert.equal(nodes.on.ex.lastPlainTransfers(), 6);
  });
});
