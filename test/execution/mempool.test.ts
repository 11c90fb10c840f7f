import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultGasOptions, defaultMempoolOptions } from '@noded/execution';
import { MemoryKV } from '@noded/storage';
import { ChainError, type Hex } from '@noded/types';
import {
  addr,
  ETH,
  GWEI,
  key,
  produceBlock,
  rawEip1559,
  signTx,
  startNode,
  type TestNode,
  type TxFields,
} from './helpers.js';

const a = key(1);
const b = key(2);
const c = key(3);
const d = key(4);
const rich = (ks: Uint8Array[], bal = 100n * ETH) => ks.map((k) => ({ address: addr(k), balance: bal }));
const hashOf = (raw: Uint8Array) => `0x${Buffer.from(raw).toString('hex')}`;

async function check(n: TestNode, k: Uint8Array, f: TxFields) {
  return n.ex.checkTx(signTx(k, f), 'new');
}

async function rejects(n: TestNode, k: Uint8Array, f: TxFields, message: string | RegExp) {
  const r = await check(n, k, f);
  assert.notEqual(r.code, 0, `expected a rejection (${message})`);
  assert.equal(r.codespace, 'evm');
  if (typeof message === 'string') assert.equal(r.log, message);
  else assert.match(r.log, message);
}

describe('mempool admission (CheckTx) with geth messages', () => {
  it('nonce too low', async () => {
    const n = await startNode(rich([a]));
    assert.equal((await check(n, a, { nonce: 0n, to: addr(b) })).code, 0);
    await produceBlock(n);
    await rejects(n, a, { nonce: 0n, to: addr(b), value: 1n }, 'nonce too low: next nonce 1, tx nonce 0');
  });

  it('insufficient funds for gas * price + value, single and cumulative', async () => {
    const n = await startNode(rich([a], ETH));
    await rejects(
      n,
      a,
      { nonce: 0n, to: addr(b), value: ETH },
      `insufficient funds for gas * price + value: balance ${ETH}, tx cost ${ETH + 21_000n * 10n * GWEI}, overshot ${21_000n * 10n * GWEI}`,
    );
    assert.equal((await check(n, a, { nonce: 0n, to: addr(b), value: ETH / 2n })).code, 0);
    await rejects(
      n,
      a,
      { nonce: 1n, to: addr(b), value: ETH / 2n },
      /^insufficient funds for gas \* price \+ value: balance \d+, queued cost \d+, tx cost \d+, overshot \d+$/,
    );
  });

  it('replacement needs both fee caps price_bump% higher', async () => {
    const n = await startNode(rich([a]));
    const first = signTx(a, { nonce: 0n, to: addr(b), maxFee: 10n * GWEI, tip: GWEI });
    assert.equal((await n.ex.checkTx(first, 'new')).code, 0);
    await rejects(
      n,
      a,
      { nonce: 0n, to: addr(b), maxFee: 10n * GWEI + 1n, tip: 2n * GWEI },
      'replacement transaction underpriced',
    );
    await rejects(
      n,
      a,
      { nonce: 0n, to: addr(b), maxFee: 11n * GWEI, tip: GWEI + GWEI / 20n },
      'replacement transaction underpriced',
    );
    const repl = signTx(a, { nonce: 0n, to: addr(b), maxFee: 11n * GWEI, tip: (11n * GWEI) / 10n });
    assert.equal((await n.ex.checkTx(repl, 'new')).code, 0);
    const pool = await n.ex.txPool();
    assert.equal(pool.pending.get(addr(a))?.get(0n)?.maxFeePerGas, 11n * GWEI);
    assert.equal(await n.ex.getTransaction(hashOf(first) as Hex), undefined);
  });

  it('transaction underpriced (below min_gas_price) and max fee below the block base fee', async () => {
    const n = await startNode(rich([a]), { gas: { ...defaultGasOptions, baseFee: 5n * GWEI } });
    await rejects(
      n,
      a,
      { nonce: 0n, to: addr(b), maxFee: GWEI - 1n, tip: 0n },
      `transaction underpriced: gas fee cap ${GWEI - 1n}, minimum needed ${GWEI}`,
    );
    await rejects(
      n,
      a,
      { nonce: 0n, to: addr(b), maxFee: 2n * GWEI, tip: 0n },
      `max fee per gas less than block base fee: address ${addr(a)}, maxFeePerGas: ${2n * GWEI}, baseFee: ${5n * GWEI}`,
    );
  });

  it('intrinsic gas too low, exceeds block gas limit, gas price above max_gas_price, tip above fee cap', async () => {
    const n = await startNode(rich([a]));
    await rejects(
      n,
      a,
      { nonce: 0n, to: addr(b), gas: 20_000n },
      'intrinsic gas too low: gas 20000, minimum needed 21000',
    );
    await rejects(
      n,
      a,
      { nonce: 0n, to: addr(b), data: '0x0102', gas: 21_000n },
      /^intrinsic gas too low: gas 21000, minimum needed 210\d\d$/,
    );
    const n2 = await startNode(rich([a]), { gas: { ...defaultGasOptions, blockGasLimit: 1_000_000n } });
    await rejects(n2, a, { nonce: 0n, to: addr(b), gas: 1_000_001n }, 'exceeds block gas limit');
    await rejects(
      n,
      a,
      { nonce: 0n, to: addr(b), maxFee: 1001n * GWEI, tip: GWEI },
      `gas price above max_gas_price: gas fee cap ${1001n * GWEI}, max_gas_price ${1000n * GWEI}`,
    );
    const r = await n.ex.checkTx(
      rawEip1559(a, { nonce: 0n, to: addr(b), maxFee: 2n * GWEI, tip: 3n * GWEI }),
      'new',
    );
    assert.equal(r.log, 'max priority fee per gas higher than max fee per gas');
  });

  it('invalid chain id, unprotected legacy over RPC, blob transactions, oversized data, already known', async () => {
    const n = await startNode(rich([a]), { mempool: { ...defaultMempoolOptions, maxTxBytes: 1000 } });
    await rejects(
      n,
      a,
      { nonce: 0n, to: addr(b), chainId: 1n },
      'invalid chain id for signer: have 1 want 31337',
    );
    const unprotected = signTx(a, { type: 0, nonce: 0n, to: addr(b), unprotected: true });
    await assert.rejects(
      n.ex.sendRawTransaction(unprotected),
      (e: unknown) =>
        e instanceof ChainError &&
        e.code === -32000 &&
        e.message === 'only replay-protected (EIP-155) transactions allowed over RPC',
    );
    // CometBFT's broadcast_tx path (CheckTx) has no such RPC rule, as in geth's p2p path.
    assert.equal((await n.ex.checkTx(unprotected, 'new')).code, 0);
    const blob = Uint8Array.of(3, 0xc0);
    const r = await n.ex.checkTx(blob, 'new');
    assert.match(r.log, /^transaction type not supported: blob \(EIP-4844\) transactions are not accepted/);
    const big = signTx(a, { nonce: 1n, to: addr(b), data: `0x${'11'.repeat(1200)}`, gas: 100_000n });
    await assert.rejects(
      n.ex.sendRawTransaction(big),
      new ChainError(-32000, `oversized data: transaction size ${big.length}, limit 1000`),
    );
    assert.equal((await n.ex.checkTx(unprotected, 'new')).log, 'already known');
    const allow = await startNode(rich([a]), { allowUnprotectedTxs: true });
    assert.equal(
      await allow.ex.sendRawTransaction(unprotected),
      hashOf(await import('@noded/crypto').then((m) => m.keccak256(unprotected))),
    );
  });

  it("the RPC fee cap uses geth's wording", async () => {
    const n = await startNode(rich([a], 10_000n * ETH), { txFeeCap: ETH });
    const raw = signTx(a, { nonce: 0n, to: addr(b), gas: 3_000_000n, maxFee: 1000n * GWEI, tip: GWEI });
    await assert.rejects(
      n.ex.sendRawTransaction(raw),
      new ChainError(-32000, 'tx fee (3.00 ether) exceeds the configured cap (1.00 ether)'),
    );
    assert.equal((await n.ex.checkTx(raw, 'new')).code, 0, 'the cap is an RPC rule only');
  });

  it('a sender may go past max_txs_per_sender while the pool has room (geth account slots)', async () => {
    const n = await startNode(rich([a]), {
      mempool: { ...defaultMempoolOptions, maxTxsPerSender: 3, size: 10 },
    });
    for (let i = 0n; i < 8n; i++) assert.equal((await check(n, a, { nonce: i, to: addr(b) })).code, 0);
    assert.equal(await n.ex.getNonce(addr(a), 'pending'), 8n);
    const res = await produceBlock(n);
    assert.equal(res.txResults.length, 8, 'all of them are proposed');
  });

  it('a full pool drops the newest transactions of the sender furthest over its slots first', async () => {
    const opts = { mempool: { ...defaultMempoolOptions, maxTxsPerSender: 3, size: 6 } };
    const n = await startNode(rich([a, b, c]), opts);
    for (let i = 0n; i < 5n; i++) {
      assert.equal(
        (await check(n, a, { nonce: i, to: addr(c), tip: 5n * GWEI, maxFee: 50n * GWEI })).code,
        0,
      );
    }
    assert.equal((await check(n, c, { nonce: 0n, to: addr(a), tip: 5n * GWEI, maxFee: 50n * GWEI })).code, 0);
    // b is within its 3 slots: it gets in although it pays less, and a loses its newest nonce.
    assert.equal((await check(n, b, { nonce: 0n, to: addr(c), tip: GWEI })).code, 0);
    const pool = await n.ex.txPool();
    assert.deepEqual([...(pool.pending.get(addr(a))?.keys() ?? [])], [0n, 1n, 2n, 3n]);
    assert.deepEqual([...(pool.pending.get(addr(b))?.keys() ?? [])], [0n]);
    assert.equal(n.ex.unconfirmedTxs(10).total, 6);
    // a is over its slots and the pool is full: a cannot push anybody out.
    await rejects(
      n,
      a,
      { nonce: 4n, to: addr(c), tip: 9n * GWEI, maxFee: 90n * GWEI },
      `account limit exceeded: the pool is full and sender ${addr(a)} already has 4 transactions in it (max_txs_per_sender 3)`,
    );
    assert.equal(n.ex.unconfirmedTxs(10).total, 6, 'a refused transaction changes nothing');
  });

  it('queued transactions may run at most max_txs_per_sender nonces past the pending run', async () => {
    const opts = { mempool: { ...defaultMempoolOptions, maxTxsPerSender: 3 } };
    const m = await startNode(rich([a]), opts);
    await rejects(
      m,
      a,
      { nonce: 3n, to: addr(b) },
      'nonce too high: next nonce 0, tx nonce 3 (at most max_txs_per_sender=3 ahead)',
    );
    for (let i = 0n; i < 5n; i++) assert.equal((await check(m, a, { nonce: i, to: addr(b) })).code, 0);
    assert.equal((await check(m, a, { nonce: 7n, to: addr(b) })).code, 0, 'queued after a gap');
    await rejects(
      m,
      a,
      { nonce: 8n, to: addr(b) },
      'nonce too high: next nonce 5, tx nonce 8 (at most max_txs_per_sender=3 ahead)',
    );
    const pool = await m.ex.txPool();
    assert.deepEqual([...(pool.queued.get(addr(a))?.keys() ?? [])], [7n]);
  });

  it('a full pool evicts its cheapest transaction for a better one and refuses a cheaper one', async () => {
    const n = await startNode(rich([a, b, c, d, key(5)]), { mempool: { ...defaultMempoolOptions, size: 3 } });
    const cheap = signTx(a, { nonce: 0n, to: addr(d), tip: GWEI, maxFee: 10n * GWEI });
    assert.equal((await n.ex.checkTx(cheap, 'new')).code, 0);
    assert.equal((await check(n, b, { nonce: 0n, to: addr(d), tip: 2n * GWEI })).code, 0);
    assert.equal((await check(n, c, { nonce: 0n, to: addr(d), tip: 3n * GWEI })).code, 0);
    assert.equal((await check(n, d, { nonce: 0n, to: addr(a), tip: 4n * GWEI })).code, 0);
    assert.equal(
      await n.ex.getTransaction(hashOf(await import('@noded/crypto').then((m) => m.keccak256(cheap))) as Hex),
      undefined,
    );
    assert.equal(n.ex.unconfirmedTxs(10).total, 3);
    await rejects(n, key(5), { nonce: 0n, to: addr(a), tip: 2n * GWEI }, 'transaction underpriced');
  });

  it('keeps pending and queued apart, reports the pending nonce, and re-checks after each block', async () => {
    const n = await startNode(rich([a]));
    for (const nonce of [0n, 1n, 3n]) assert.equal((await check(n, a, { nonce, to: addr(b) })).code, 0);
    let pool = await n.ex.txPool();
    assert.deepEqual([...(pool.pending.get(addr(a))?.keys() ?? [])], [0n, 1n]);
    assert.deepEqual([...(pool.queued.get(addr(a))?.keys() ?? [])], [3n]);
    assert.equal(await n.ex.getNonce(addr(a), 'pending'), 2n);
    assert.equal(await n.ex.getNonce(addr(a), n.ex.latestHeight()), 0n);
    const res = await produceBlock(n);
    assert.equal(res.txResults.length, 2, 'only pending transactions are proposed');
    pool = await n.ex.txPool();
    assert.equal(pool.pending.size, 0);
    assert.deepEqual([...(pool.queued.get(addr(a))?.keys() ?? [])], [3n]);
    assert.equal((await check(n, a, { nonce: 2n, to: addr(b) })).code, 0);
    assert.deepEqual([...((await n.ex.txPool()).pending.get(addr(a))?.keys() ?? [])], [2n, 3n]);
  });

  it('drops transactions the sender can no longer pay after a block (recheck)', async () => {
    const n = await startNode(rich([a], 2n * ETH));
    const pooled = signTx(a, { nonce: 1n, to: addr(b), value: ETH });
    const spend = signTx(a, { nonce: 0n, to: addr(b), value: ETH / 2n });
    assert.equal((await n.ex.checkTx(spend, 'new')).code, 0);
    assert.equal((await n.ex.checkTx(pooled, 'new')).code, 0);
    // A block (built elsewhere) spends most of the balance with a replacement nonce-0 transaction.
    const drain = signTx(a, {
      nonce: 0n,
      to: addr(b),
      value: (3n * ETH) / 2n,
      maxFee: 20n * GWEI,
      tip: 2n * GWEI,
    });
    await produceBlock(n, [drain]);
    assert.equal(n.ex.unconfirmedTxs(10).total, 0);
  });

  it('orders a proposal by effective tip with nonce order per sender, within max bytes', async () => {
    const n = await startNode(rich([a, b]));
    const a0 = signTx(a, { nonce: 0n, to: addr(c), tip: 5n * GWEI });
    const a1 = signTx(a, { nonce: 1n, to: addr(c), tip: GWEI });
    const b0 = signTx(b, { nonce: 0n, to: addr(c), tip: 3n * GWEI });
    for (const raw of [a1, b0, a0]) assert.equal((await n.ex.checkTx(raw, 'new')).code, 0);
    const all = await n.ex.prepareProposal({
      height: 1,
      time: 0n,
      proposerAddress: new Uint8Array(20),
      maxTxBytes: 1_000_000,
    });
    assert.deepEqual(all.map(hashOf), [a0, b0, a1].map(hashOf));
    const room = a0.length + 3 + b0.length + 3;
    const some = await n.ex.prepareProposal({
      height: 1,
      time: 0n,
      proposerAddress: new Uint8Array(20),
      maxTxBytes: room,
    });
    assert.deepEqual(some.map(hashOf), [a0, b0].map(hashOf));
  });

  it("'recheck' validates without admitting; a pooled transaction re-checks against the new state", async () => {
    const n = await startNode(rich([a]));
    const raw = signTx(a, { nonce: 0n, to: addr(b) });
    assert.equal((await n.ex.checkTx(raw, 'recheck')).code, 0);
    assert.equal(n.ex.unconfirmedTxs(10).total, 0, 'recheck never admits');
    assert.equal((await n.ex.checkTx(raw, 'new')).code, 0);
    assert.equal((await n.ex.checkTx(raw, 'recheck')).code, 0, 'a pooled transaction is still valid');
    await produceBlock(n, [raw]);
    assert.equal((await n.ex.checkTx(raw, 'recheck')).log, 'nonce too low: next nonce 1, tx nonce 0');
  });

  it('publishes EthPendingTx on admission', async () => {
    const n = await startNode(rich([a]));
    const raw = signTx(a, { nonce: 0n, to: addr(b) });
    const hash = await n.ex.sendRawTransaction(raw);
    assert.ok(n.events.some((e) => e.kind === 'EthPendingTx' && e.hash === hash));
    const tx = await n.ex.getTransaction(hash);
    assert.equal(tx?.blockHash, null);
    assert.equal(tx?.from, addr(a));
  });

  it('a pooled transaction has no receipt without a read of the tx-hash index; once mined, it has one, also before the pool is updated', async () => {
    const kv = new MemoryKV();
    const txIndexReads: string[] = [];
    const get = kv.get.bind(kv);
    kv.get = (k: Uint8Array) => {
      if (k[0] === 0x43) txIndexReads.push(Buffer.from(k.subarray(1)).toString('hex'));
      return get(k);
    };
    const n = await startNode(rich([a]), {}, kv);
    const hash = (await n.ex.sendRawTransaction(signTx(a, { nonce: 0n, to: addr(b), value: 5n }))) as Hex;
    assert.equal(await n.ex.getReceipt(hash), undefined);
    assert.equal(await n.ex.getReceipt(hash.toUpperCase().replace('0X', '0x') as Hex), undefined);
    assert.equal((await n.ex.getTransaction(hash))?.blockHash, null);
    assert.deepEqual(txIndexReads, [], 'a pooled, unmined transaction is not looked up in the index');

    // The block's head is published after its write and before the pool drops the transaction:
    // a receipt asked at that moment (as a client that saw the head does) is the mined one.
    const atHead: Array<Promise<unknown>> = [];
    const unsubscribe = n.bus.subscribe((e) => {
      if (e.kind === 'EthNewHead') atHead.push(n.ex.getReceipt(hash), n.ex.getTransaction(hash));
    });
    await produceBlock(n);
    unsubscribe();
    assert.equal(atHead.length, 2);
    const [receiptAtHead, txAtHead] = (await Promise.all(atHead)) as [
      { blockNumber: bigint; status: number } | undefined,
      { blockNumber: bigint | null } | undefined,
    ];
    assert.equal(receiptAtHead?.blockNumber, 1n);
    assert.equal(receiptAtHead?.status, 1);
    assert.equal(txAtHead?.blockNumber, 1n);
    assert.equal(n.ex.unconfirmedTxs(10).total, 0, 'the mined transaction left the pool');
    assert.equal((await n.ex.getReceipt(hash))?.blockNumber, 1n);
    assert.equal((await n.ex.getTransaction(hash))?.blockNumber, 1n);
    assert.deepEqual(txIndexReads, [], "a recent block's transaction is found without the index");

    // Once its block is older than the few kept in memory, the index answers, with the same receipt.
    for (let i = 0; i < 5; i++) await produceBlock(n);
    assert.deepEqual(await n.ex.getReceipt(hash), receiptAtHead);
    assert.deepEqual(txIndexReads, [hash.slice(2)]);
    const unknown = `0x${'11'.repeat(32)}` as Hex;
    assert.equal(await n.ex.getReceipt(unknown), undefined);
    assert.equal(txIndexReads.length, 2, 'a hash neither pooled nor recent is looked up');
  });
});
