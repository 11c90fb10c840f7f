// Dev operations (libs/execution/src/dev.ts): their wire form, the executor that queues them for its
// next proposal and applies them in the block, and the chains that refuse them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DevOpFormatError, decodeDevOp, encodeDevOp, isDevTx } from '@noded/execution/src/dev.js';
import { impersonatedTransaction } from '@noded/rpc/src/eth/tx-codec.js';
import { ChainError, type Hex } from '@noded/types';
import { addr, CHAIN_ID, ETH, GWEI, key, produceBlock, signTx, startNode } from './helpers.js';

const A = Uint8Array.from(Buffer.from('11'.repeat(20), 'hex'));
const hexOf = (b: Uint8Array) => `0x${Buffer.from(b).toString('hex')}` as Hex;

describe('dev operations: wire form', () => {
  it('round-trips every kind and is never taken for an Ethereum transaction', () => {
    const ops = [
      { kind: 'balance', address: A, value: (1n << 256n) - 1n },
      { kind: 'nonce', address: A, value: 42n },
      { kind: 'code', address: A, code: Uint8Array.of(0x60, 0x00) },
      { kind: 'storage', address: A, slot: new Uint8Array(32).fill(1), value: new Uint8Array(32).fill(2) },
      { kind: 'impersonated', sender: A, raw: Uint8Array.of(2, 0xc0) },
    ] as const;
    for (const op of ops) {
      const raw = encodeDevOp(op);
      assert.ok(isDevTx(raw));
      assert.ok(raw[0]! > 0x7f && raw[0]! < 0xc0, 'neither a typed nor a legacy transaction');
      assert.deepEqual(decodeDevOp(raw), op);
    }
  });

  it('refuses malformed operations naming what is wrong', () => {
    const good = encodeDevOp({ kind: 'nonce', address: A, value: 1n });
    const cases: Array<[Uint8Array, RegExp]> = [
      [Uint8Array.of(0xbd, 0x64), /missing its prefix/],
      [Uint8Array.of(...good.subarray(0, 4), 0x01), /dev operation/],
      [
        encodeDevOp({ kind: 'nonce', address: A.subarray(0, 19), value: 1n }),
        /address has 19 bytes, want 20/,
      ],
      [
        encodeDevOp({ kind: 'storage', address: A, slot: new Uint8Array(31), value: new Uint8Array(32) }),
        /slot has 31 bytes/,
      ],
      [Uint8Array.of(...good.subarray(0, 4), 0xc2, 0x09, 0x80), /unknown kind 9/],
    ];
    for (const [raw, re] of cases) {
      assert.throws(
        () => decodeDevOp(raw),
        (err: Error) => err instanceof DevOpFormatError && re.test(err.message),
      );
    }
  });
});

describe('dev operations: the executor', () => {
  it('queues a change for its next proposal, applies it first in the block and answers with the committed height', async () => {
    const k = key(1);
    const n = await startNode([{ address: addr(k), balance: ETH }], { devControls: true });
    const who = hexOf(A);
    const supply = n.ex.totalSupply();
    const pending = n.ex.devSetState({ kind: 'balance', address: who, value: 5n * ETH });
    let settled: bigint | undefined;
    void pending.then((h) => {
      settled = h;
    });
    await new Promise((r) => setImmediate(r));
    assert.equal(settled, undefined, 'not before a block carries it');
    assert.equal(await n.ex.getBalance(who, n.ex.latestHeight()), 0n);
    // A transfer proposed with it runs after it.
    await n.ex.sendRawTransaction(
      signTx(k, { nonce: 0n, to: who, value: 1n, gas: 21000n, maxFee: 10n * GWEI, tip: GWEI }),
    );
    const res = await produceBlock(n);
    assert.equal(await pending, 1n);
    assert.equal(res.txResults.length, 2);
    assert.equal(res.txResults[0]!.code, 0);
    assert.equal(res.txResults[0]!.events[0]!.type, 'dev_operation');
    assert.equal(await n.ex.getBalance(who, 1n), 5n * ETH + 1n);
    assert.equal(await n.ex.getBalance(who, 0n), 0n);
    assert.equal(n.ex.totalSupply(), supply + 5n * ETH, 'setBalance mints the difference');
    const block = await n.ex.getBlockByNumber(1n);
    assert.equal(block?.transactions.length, 1, 'the dev operation is not an Ethereum transaction');
    // The queue is empty again: the next block carries nothing.
    const next = await produceBlock(n);
    assert.equal(next.txResults.length, 0);
  });

  it('gives the same app hash and block hash to a second executor that runs the same blocks', async () => {
    const k = key(2);
    const a = await startNode([{ address: addr(k), balance: ETH }], { devControls: true });
    const b = await startNode([{ address: addr(k), balance: ETH }]);
    const who = hexOf(A);
    const changes = [
      a.ex.devSetState({ kind: 'balance', address: who, value: 7n }),
      a.ex.devSetState({ kind: 'nonce', address: who, value: 9n }),
      a.ex.devSetState({ kind: 'code', address: who, code: '0x6001600055' }),
      a.ex.devSetState({
        kind: 'storage',
        address: who,
        slot: `0x${'0'.repeat(63)}3`,
        value: `0x${'0'.repeat(62)}ff`,
      }),
    ];
    const list = await a.ex.prepareProposal({
      height: 1,
      time: a.time + 1_000_000_000n,
      proposerAddress: A,
      maxTxBytes: 1 << 20,
    });
    assert.equal(list.length, 4);
    const ra = await produceBlock(a, list);
    await Promise.all(changes);
    const rb = await produceBlock(b, list);
    assert.deepEqual(rb.appHash, ra.appHash);
    assert.equal((await b.ex.getBlockByNumber(1n))?.hash, (await a.ex.getBlockByNumber(1n))?.hash);
    assert.equal(await b.ex.getNonce(who, 1n), 9n);
    assert.equal(await b.ex.getCode(who, 1n), '0x6001600055');
    assert.equal(await b.ex.getStorageAt(who, `0x${'0'.repeat(63)}3`, 1n), `0x${'0'.repeat(62)}ff`);
  });

  it('runs an impersonated transaction as a block transaction with the given sender', async () => {
    const n = await startNode([], { devControls: true });
    const who = hexOf(A);
    const funded = n.ex.devSetState({ kind: 'balance', address: who, value: ETH });
    await produceBlock(n);
    assert.equal(await funded, 1n);
    const { raw } = impersonatedTransaction(
      {
        type: 2,
        chainId: CHAIN_ID,
        nonce: 0n,
        gas: 21000n,
        to: `0x${'22'.repeat(20)}`,
        value: 3n,
        data: '0x',
        maxFeePerGas: 10n * GWEI,
        maxPriorityFeePerGas: GWEI,
        accessList: [],
      },
      who,
    );
    // The executor owns the impersonated set: a sender not in it is refused, then accepted.
    await assert.rejects(
      n.ex.devSendImpersonated(who, raw),
      (err: Error) =>
        err instanceof ChainError &&
        err.code === -32000 &&
        err.message ===
          `${who} is not impersonated: call anvil_impersonateAccount or hardhat_impersonateAccount first`,
    );
    assert.equal(n.ex.devQueueLength(), 0, 'the refused send queued nothing');
    assert.equal(await n.ex.devImpersonate(who, true), false);
    assert.deepEqual(await n.ex.devImpersonatedAccounts(), [who]);
    const hash = await n.ex.devSendImpersonated(who, raw);
    assert.equal((await n.ex.getTransaction(hash))?.blockHash, null, 'pending while queued');
    assert.equal(await n.ex.getNonce(who, 'pending'), 1n);
    await assert.rejects(n.ex.devSendImpersonated(who, raw), /must be its next pending nonce 1/);
    await produceBlock(n);
    const receipt = await n.ex.getReceipt(hash);
    assert.equal(receipt?.status, 1);
    assert.equal(receipt?.from, who);
    assert.equal(await n.ex.getBalance(`0x${'22'.repeat(20)}`, n.ex.latestHeight()), 3n);
  });

  it('lets an impersonated contract send, its code kept (as Hardhat and anvil)', async () => {
    const n = await startNode([], { devControls: true });
    const who = hexOf(A);
    const runtime = '0x6001600055'; // SSTORE(0, 1)
    const setup = [
      n.ex.devSetState({ kind: 'balance', address: who, value: ETH }),
      n.ex.devSetState({ kind: 'code', address: who, code: runtime }),
    ];
    await produceBlock(n);
    await Promise.all(setup);
    const to = `0x${'33'.repeat(20)}` as Hex;
    const send = (nonce: bigint, gas: bigint) =>
      impersonatedTransaction(
        {
          type: 2,
          chainId: CHAIN_ID,
          nonce,
          gas,
          to,
          value: 5n,
          data: '0x',
          maxFeePerGas: 10n * GWEI,
          maxPriorityFeePerGas: GWEI,
          accessList: [],
        },
        who,
      ).raw;
    await n.ex.devImpersonate(who, true);
    const hash = await n.ex.devSendImpersonated(who, send(0n, 21000n));
    await produceBlock(n);
    assert.equal((await n.ex.getReceipt(hash))?.status, 1);
    assert.equal(await n.ex.getBalance(to, n.ex.latestHeight()), 5n);
    assert.equal(await n.ex.getCode(who, n.ex.latestHeight()), runtime, 'the sender keeps its code');
    assert.equal(await n.ex.getNonce(who, n.ex.latestHeight()), 1n);
    // A change queued ahead of it leaves too little balance: the block rejects the transaction
    // (no receipt), and the code stays.
    const drained = n.ex.devSetState({ kind: 'balance', address: who, value: 1n });
    const again = await n.ex.devSendImpersonated(who, send(1n, 21000n));
    const res = await produceBlock(n);
    await drained;
    assert.equal(res.txResults.length, 2);
    assert.equal(res.txResults[1]!.code, 30);
    assert.match(res.txResults[1]!.log, /insufficient funds/);
    assert.equal(await n.ex.getReceipt(again), undefined);
    assert.equal(await n.ex.getTransaction(again), undefined, 'dropped, as a transaction that lost a race');
    assert.equal(await n.ex.getCode(who, n.ex.latestHeight()), runtime);
  });

  it('refuses dev requests without dev controls, and a chain other than chain-local refuses dev operations in blocks', async () => {
    const plain = await startNode([]);
    await assert.rejects(
      plain.ex.devSetState({ kind: 'balance', address: hexOf(A), value: 1n }),
      (err: Error) =>
        err instanceof ChainError && err.code === -32000 && /single-validator chain-local/.test(err.message),
    );
    const testnet = await startNode([], { chainId: 'chain-testnet' });
    const raw = encodeDevOp({ kind: 'balance', address: A, value: 1n });
    assert.equal(
      await testnet.ex.processProposal({
        height: 1,
        time: 1n,
        proposerAddress: A,
        hash: new Uint8Array(32),
        txs: [raw],
      }),
      false,
    );
    const res = await produceBlock(testnet, [raw]);
    assert.equal(res.txResults[0]!.code, 2);
    assert.match(res.txResults[0]!.log, /only valid on chain-local; this chain is chain-testnet/);
    assert.equal(await testnet.ex.getBalance(hexOf(A), 1n), 0n);
    // Over the mempool the bytes are not a transaction at all.
    await assert.rejects(testnet.ex.sendRawTransaction(raw), /rlp|transaction/);
  });
});
