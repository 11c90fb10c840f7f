// The mempool's own rules (libs/execution/src/mempool.ts), on real signed and decoded
// transactions: admission limits at their boundaries, replacement, eviction from a full pool,
// pending and queued runs, the update after a block, and the order of a proposal. The executor's
// CheckTx path over the same pool is in mempool.test.ts; here each rule is pinned on its own, with
// the exact error and the pool left as it was after a refusal.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chainCommon } from '@noded/execution/src/evm/common.js';
import {
  cmpPrice,
  defaultMempoolOptions,
  Mempool,
  type MempoolOptions,
  protoTxSize,
  type SenderState,
} from '@noded/execution/src/mempool.js';
import { type DecodedTx, decodeTx, TxCode, TxRejectedError } from '@noded/execution/src/txs.js';
import { addr, CHAIN_ID, GWEI, key, signTx, type TxFields } from './helpers.js';

const common = chainCommon(CHAIN_ID);
const [A, B, C, D, E] = [key(11), key(12), key(13), key(14), key(15)];
const to = addr(key(99));
const senderOf = (k: Uint8Array) => addr(k).slice(2);

function tx(k: Uint8Array, nonce: bigint, f: Partial<TxFields> = {}): DecodedTx {
  return decodeTx(signTx(k, { to, ...f, nonce }), common, CHAIN_ID);
}
const pool = (o: Partial<MempoolOptions> = {}) => new Mempool({ ...defaultMempoolOptions, ...o });
const rich: SenderState = { nonce: 0n, balance: 10n ** 24n };

function admit(p: Mempool, d: DecodedTx, st: SenderState = rich, baseFee = 0n) {
  const plan = p.plan(d, st, baseFee);
  p.apply(d, plan, st.nonce);
  return plan;
}

/** plan() refuses `d` with exactly `code` and `message`, and the pool is unchanged. */
function refused(p: Mempool, d: DecodedTx, st: SenderState, code: number, message: string, baseFee = 0n) {
  const before = { count: p.count, bytes: p.totalBytes, hashes: snapshot(p) };
  assert.throws(
    () => p.plan(d, st, baseFee),
    (e: unknown) => {
      assert.ok(e instanceof TxRejectedError, `not a TxRejectedError: ${e}`);
      assert.equal(e.message, message);
      assert.equal(e.code, code);
      return true;
    },
  );
  assert.deepEqual({ count: p.count, bytes: p.totalBytes, hashes: snapshot(p) }, before);
}

function snapshot(p: Mempool): string[] {
  const { pending, queued } = p.summary();
  return [...pending.values(), ...queued.values()].flat().map((e) => e.d.hashHex);
}
const nonces = (es: { d: DecodedTx }[] | undefined) => (es ?? []).map((e) => e.d.nonce);

describe('mempool: sizes and prices', () => {
  it("a transaction's size in a block's Data is tag + length varint + bytes", () => {
    assert.equal(protoTxSize(0), 2);
    assert.equal(protoTxSize(1), 3);
    assert.equal(protoTxSize(127), 129);
    assert.equal(protoTxSize(128), 131);
    assert.equal(protoTxSize(16_383), 16_386);
    assert.equal(protoTxSize(16_384), 16_388);
    assert.equal(protoTxSize(1_048_576), 1_048_580);
  });

  it('orders by effective tip at the base fee, then by fee cap', () => {
    const low = tx(A, 0n, { maxFee: 10n * GWEI, tip: 5n * GWEI });
    const high = tx(B, 0n, { maxFee: 20n * GWEI, tip: 5n * GWEI });
    const same = tx(C, 0n, { maxFee: 10n * GWEI, tip: 5n * GWEI });
    // Equal tips: the higher fee cap is the better price.
    assert.equal(cmpPrice(low, high, 0n), -1);
    assert.equal(cmpPrice(high, low, 0n), 1);
    assert.equal(cmpPrice(low, same, 0n), 0);
    // At a base fee of 7 gwei, low can pay only 3 gwei of its tip, high all 5.
    assert.equal(cmpPrice(low, high, 7n * GWEI), -1);
    const bigTip = tx(D, 0n, { maxFee: 10n * GWEI, tip: 9n * GWEI });
    assert.equal(cmpPrice(bigTip, high, 0n), 1, 'a higher tip wins over a higher fee cap');
    assert.equal(cmpPrice(high, bigTip, 0n), -1);
    // At 8 gwei bigTip can pay 2 gwei, high 5 gwei.
    assert.equal(cmpPrice(bigTip, high, 8n * GWEI), -1);
  });
});

describe('mempool: admission', () => {
  it('refuses a transaction it holds: already known', () => {
    const p = pool();
    const d = tx(A, 0n);
    admit(p, d);
    refused(p, d, rich, TxCode.alreadyKnown, 'already known');
  });

  it('nonce too low below the state nonce; the state nonce itself is admitted', () => {
    const p = pool();
    const st = { nonce: 3n, balance: rich.balance };
    refused(p, tx(A, 2n), st, TxCode.nonceTooLow, 'nonce too low: next nonce 3, tx nonce 2');
    admit(p, tx(A, 3n), st);
    assert.deepEqual(nonces(p.pending(senderOf(A))), [3n]);
  });

  it('queued nonces may run up to max_txs_per_sender - 1 past the end of the pending run', () => {
    const p = pool({ maxTxsPerSender: 2 });
    const st = { nonce: 5n, balance: rich.balance };
    refused(
      p,
      tx(A, 7n),
      st,
      TxCode.nonceTooHigh,
      'nonce too high: next nonce 5, tx nonce 7 (at most max_txs_per_sender=2 ahead)',
    );
    admit(p, tx(A, 6n), st);
    // 6 is queued (5 is missing): the run still ends at 5.
    refused(
      p,
      tx(A, 7n),
      st,
      TxCode.nonceTooHigh,
      'nonce too high: next nonce 5, tx nonce 7 (at most max_txs_per_sender=2 ahead)',
    );
    admit(p, tx(A, 5n), st);
    // Now 5 and 6 are pending: the run ends at 7, so 8 is the furthest nonce.
    admit(p, tx(A, 8n), st);
    refused(
      p,
      tx(A, 9n),
      st,
      TxCode.nonceTooHigh,
      'nonce too high: next nonce 7, tx nonce 9 (at most max_txs_per_sender=2 ahead)',
    );
  });

  it('a balance of exactly the cost pays; one wei less is insufficient funds', () => {
    const p = pool();
    const d = tx(A, 0n, { value: 1000n });
    assert.equal(d.cost, 1000n + 21_000n * 10n * GWEI);
    refused(
      p,
      d,
      { nonce: 0n, balance: d.cost - 1n },
      TxCode.insufficientFunds,
      `insufficient funds for gas * price + value: balance ${d.cost - 1n}, tx cost ${d.cost}, overshot 1`,
    );
    admit(p, d, { nonce: 0n, balance: d.cost });
    assert.equal(p.count, 1);
  });

  it('counts what the sender already has in the pool against its balance', () => {
    const p = pool();
    const d0 = tx(A, 0n);
    const d1 = tx(A, 1n);
    const st = { nonce: 0n, balance: 2n * d0.cost - 1n };
    admit(p, d0, st);
    refused(
      p,
      d1,
      st,
      TxCode.insufficientFunds,
      `insufficient funds for gas * price + value: balance ${st.balance}, queued cost ${d0.cost}, tx cost ${d1.cost}, overshot 1`,
    );
    admit(p, d1, { nonce: 0n, balance: 2n * d0.cost });
    assert.deepEqual(nonces(p.pending(senderOf(A))), [0n, 1n]);
  });

  it('does not count a transaction a newer block already included (before the pool hears of it)', () => {
    const p = pool();
    const [d0, d1, d2] = [tx(A, 0n, { value: 1000n }), tx(A, 1n), tx(A, 2n)];
    admit(p, d0);
    admit(p, d1);
    // A block ran nonce 0: the state nonce is 1 and the balance holds two more costs, but the
    // pool has not been updated yet. Nonce 0 is not the sender's to pay any more.
    refused(
      p,
      d2,
      { nonce: 1n, balance: d1.cost + d2.cost - 1n },
      TxCode.insufficientFunds,
      `insufficient funds for gas * price + value: balance ${d1.cost + d2.cost - 1n}, queued cost ${d1.cost}, tx cost ${d2.cost}, overshot 1`,
    );
    admit(p, d2, { nonce: 1n, balance: d1.cost + d2.cost });
    assert.deepEqual(nonces(p.pending(senderOf(A))), [1n, 2n]);
    // A second admission at that same newer state (the pool still not updated): nonce 0 is
    // still not counted, though the pool has now seen state nonce 1 once.
    const d3 = tx(A, 3n);
    admit(p, d3, { nonce: 1n, balance: d1.cost + d2.cost + d3.cost });
    assert.deepEqual(nonces(p.pending(senderOf(A))), [1n, 2n, 3n]);
  });

  it('a replacement needs fee cap and tip price_bump% higher, and the balance for the difference', () => {
    const p = pool({ priceBump: 10 });
    const first = tx(A, 0n, { maxFee: 100n * GWEI, tip: 10n * GWEI });
    const other = tx(A, 1n, { maxFee: 100n * GWEI, tip: 10n * GWEI });
    const st = { nonce: 0n, balance: first.cost + other.cost + 21_000n * 10n * GWEI };
    admit(p, first, st);
    admit(p, other, st);
    const under = (f: Partial<TxFields>) =>
      refused(p, tx(A, 0n, f), st, TxCode.replacementUnderpriced, 'replacement transaction underpriced');
    under({ maxFee: 110n * GWEI - 1n, tip: 11n * GWEI });
    under({ maxFee: 110n * GWEI, tip: 11n * GWEI - 1n });
    under({ maxFee: 100n * GWEI, tip: 20n * GWEI });
    under({ maxFee: 110n * GWEI, tip: 10n * GWEI });
    // 10 gwei more per gas than the first: the balance holds exactly that much more.
    const repl = tx(A, 0n, { maxFee: 110n * GWEI, tip: 11n * GWEI });
    const tooDear = tx(A, 0n, { maxFee: 110n * GWEI + 1n, tip: 11n * GWEI });
    refused(
      p,
      tooDear,
      st,
      TxCode.insufficientFunds,
      `insufficient funds for gas * price + value: balance ${st.balance}, queued cost ${first.cost + other.cost}, tx cost ${tooDear.cost - first.cost}, overshot 21000`,
    );
    const bytes = p.totalBytes;
    const plan = admit(p, repl, st);
    assert.equal(plan.replaces?.d.hashHex, first.hashHex);
    assert.deepEqual(plan.evict, []);
    assert.equal(p.count, 2);
    assert.equal(p.totalBytes, bytes - first.raw.length + repl.raw.length);
    assert.equal(p.get(first.hashHex), undefined);
    assert.equal(p.get(repl.hashHex)?.d, repl);
    assert.deepEqual(
      p.pending(senderOf(A)).map((e) => e.d.hashHex),
      [repl.hashHex, other.hashHex],
    );
  });

  it('with price_bump 0 a replacement still has to pay more, by any amount', () => {
    const p = pool({ priceBump: 0 });
    admit(p, tx(A, 0n, { maxFee: 10n * GWEI, tip: GWEI }));
    refused(
      p,
      tx(A, 0n, { maxFee: 10n * GWEI, tip: GWEI, value: 1n }),
      rich,
      TxCode.replacementUnderpriced,
      'replacement transaction underpriced',
    );
    refused(
      p,
      tx(A, 0n, { maxFee: 10n * GWEI + 1n, tip: GWEI }),
      rich,
      TxCode.replacementUnderpriced,
      'replacement transaction underpriced',
    );
    refused(
      p,
      tx(A, 0n, { maxFee: 10n * GWEI, tip: GWEI + 1n }),
      rich,
      TxCode.replacementUnderpriced,
      'replacement transaction underpriced',
    );
    admit(p, tx(A, 0n, { maxFee: 10n * GWEI + 1n, tip: GWEI + 1n }));
    assert.equal(p.count, 1);
  });
});

describe('mempool: a full pool', () => {
  it('holds exactly `size` transactions; the next one evicts the cheapest for a better price', () => {
    const p = pool({ size: 2 });
    const cheap = tx(A, 0n, { tip: GWEI });
    const mid = tx(B, 0n, { tip: 2n * GWEI });
    assert.deepEqual(admit(p, cheap).evict, []);
    assert.deepEqual(admit(p, mid).evict, []);
    // Same price as the cheapest: not better, refused.
    refused(p, tx(C, 0n, { tip: GWEI }), rich, TxCode.underpriced, 'transaction underpriced');
    const better = tx(C, 0n, { tip: GWEI + 1n });
    const plan = admit(p, better);
    assert.deepEqual(
      plan.evict.map((e) => e.d.hashHex),
      [cheap.hashHex],
    );
    assert.equal(p.count, 2);
    assert.equal(p.get(cheap.hashHex), undefined);
    assert.deepEqual(p.senders().sort(), [senderOf(B), senderOf(C)].sort());
  });

  it('max_txs_bytes: exactly full is admitted, one byte over evicts', () => {
    const a0 = tx(A, 0n, { tip: GWEI });
    const b0 = tx(B, 0n, { tip: 2n * GWEI });
    const c0 = tx(C, 0n, { tip: 3n * GWEI });
    const p = pool({ maxTxsBytes: a0.raw.length + b0.raw.length });
    admit(p, a0);
    assert.deepEqual(admit(p, b0).evict, []);
    assert.equal(p.totalBytes, a0.raw.length + b0.raw.length);
    assert.deepEqual(
      admit(p, c0).evict.map((e) => e.d.hashHex),
      [a0.hashHex],
    );
    assert.equal(p.totalBytes, b0.raw.length + c0.raw.length);
  });

  it('a big transaction evicts as many of the cheapest as it needs, never opening a nonce gap', () => {
    const a0 = tx(A, 0n, { tip: GWEI }); // the cheapest, but a1 depends on it
    const a1 = tx(A, 1n, { tip: 4n * GWEI });
    const b0 = tx(B, 0n, { tip: 2n * GWEI });
    const c0 = tx(C, 0n, { tip: 3n * GWEI });
    const big = tx(D, 0n, { tip: 5n * GWEI, data: `0x${'01'.repeat(200)}`, gas: 100_000n });
    const all = a0.raw.length + a1.raw.length + b0.raw.length + c0.raw.length;
    const p = pool({ maxTxsBytes: all });
    for (const d of [a0, a1, b0, c0]) admit(p, d);
    // big needs room for about 2.8 small ones: the cheapest tails go, B then C then A's nonce 1.
    assert.ok(big.raw.length > 2 * b0.raw.length && big.raw.length < 3 * b0.raw.length - 6);
    const plan = admit(p, big);
    assert.deepEqual(
      plan.evict.map((e) => e.d.hashHex),
      [b0.hashHex, c0.hashHex, a1.hashHex],
    );
    assert.deepEqual(nonces(p.pending(senderOf(A))), [0n]);
    assert.equal(p.count, 2);
  });

  it('a sender within max_txs_per_sender pushes out the newest of the senders furthest over it', () => {
    // A and C each hold three (two over a guarantee of one).
    const held = [A, C].flatMap((k) =>
      [0n, 1n, 2n].map((n) => tx(k, n, { tip: 9n * GWEI, maxFee: 90n * GWEI })),
    );
    const p = pool({ size: 10, maxTxsPerSender: 1, maxTxsBytes: held.reduce((s, d) => s + d.raw.length, 0) });
    for (const d of held) admit(p, d);
    // D pays less than anybody and needs the room of two: one from A (first of the two furthest
    // over), then one from C, now the furthest over.
    const big = tx(D, 0n, { tip: GWEI, data: `0x${'01'.repeat(80)}`, gas: 100_000n });
    assert.ok(
      big.raw.length > held[2].raw.length && big.raw.length <= held[2].raw.length + held[5].raw.length,
    );
    const plan = admit(p, big);
    assert.deepEqual(
      plan.evict.map((e) => [e.d.sender, e.d.nonce]),
      [
        [senderOf(A), 2n],
        [senderOf(C), 2n],
      ],
    );
    assert.deepEqual(nonces(p.pending(senderOf(A))), [0n, 1n]);
    assert.deepEqual(nonces(p.pending(senderOf(C))), [0n, 1n]);
  });

  it('the sender furthest over its guarantee gives up as many as it takes to stay furthest', () => {
    // A holds four, C two, over a guarantee of one: A gives up two before C is as far over.
    const held = [
      ...[0n, 1n, 2n, 3n].map((n) => tx(A, n, { tip: 9n * GWEI, maxFee: 90n * GWEI })),
      ...[0n, 1n].map((n) => tx(C, n, { tip: 9n * GWEI, maxFee: 90n * GWEI })),
    ];
    const p = pool({ size: 10, maxTxsPerSender: 1, maxTxsBytes: held.reduce((s, d) => s + d.raw.length, 0) });
    for (const d of held) admit(p, d);
    const big = tx(D, 0n, { tip: GWEI, data: `0x${'01'.repeat(80)}`, gas: 100_000n });
    const plan = admit(p, big);
    assert.deepEqual(
      plan.evict.map((e) => [e.d.sender, e.d.nonce]),
      [
        [senderOf(A), 3n],
        [senderOf(A), 2n],
      ],
    );
  });

  it('a sender at its guarantee may still take the last free place', () => {
    const p = pool({ size: 2, maxTxsPerSender: 1 });
    admit(p, tx(A, 0n));
    assert.deepEqual(admit(p, tx(A, 1n)).evict, []);
    assert.equal(p.count, 2);
  });

  it('a sender at max_txs_per_sender cannot push anybody out; below it, it can', () => {
    const p = pool({ size: 3, maxTxsPerSender: 2 });
    admit(p, tx(A, 0n, { tip: GWEI }));
    admit(p, tx(B, 0n, { tip: GWEI }));
    admit(p, tx(B, 1n, { tip: GWEI }));
    refused(
      p,
      tx(B, 2n, { tip: 9n * GWEI }),
      rich,
      TxCode.accountLimit,
      `account limit exceeded: the pool is full and sender 0x${senderOf(B)} already has 2 transactions in it (max_txs_per_sender 2)`,
    );
    // A holds 1 < 2: it may take the place of B's cheapest tail by paying more.
    const plan = admit(p, tx(A, 1n, { tip: 2n * GWEI }));
    assert.deepEqual(
      plan.evict.map((e) => [e.d.sender, e.d.nonce]),
      [[senderOf(B), 1n]],
    );
  });

  it("evicts another sender's tail even when the newcomer's own earlier transaction is cheaper", () => {
    const p = pool({ size: 2 });
    admit(p, tx(A, 0n, { tip: GWEI }));
    const b0 = tx(B, 0n, { tip: 2n * GWEI });
    admit(p, b0);
    const plan = admit(p, tx(A, 1n, { tip: 3n * GWEI }));
    assert.deepEqual(
      plan.evict.map((e) => e.d.hashHex),
      [b0.hashHex],
    );
    assert.deepEqual(nonces(p.pending(senderOf(A))), [0n, 1n]);
  });

  it("the tail is a sender's highest nonce, also after its earlier nonce was replaced", () => {
    const p = pool({ size: 3 });
    admit(p, tx(A, 0n, { tip: 5n * GWEI, maxFee: 50n * GWEI }));
    admit(p, tx(A, 1n, { tip: 5n * GWEI, maxFee: 50n * GWEI }));
    admit(p, tx(B, 0n, { tip: 9n * GWEI, maxFee: 90n * GWEI }));
    // The replacement of nonce 0 is the newest entry of A's; its highest nonce is still 1.
    admit(p, tx(A, 0n, { tip: 6n * GWEI, maxFee: 60n * GWEI }));
    const plan = admit(p, tx(C, 0n, { tip: 7n * GWEI, maxFee: 70n * GWEI }));
    assert.deepEqual(
      plan.evict.map((e) => [e.d.sender, e.d.nonce]),
      [[senderOf(A), 1n]],
    );
  });

  it('a bigger replacement in a pool full by bytes evicts from others, not from its own sender', () => {
    const a0 = tx(A, 0n, { tip: 5n * GWEI, maxFee: 50n * GWEI });
    const a1 = tx(A, 1n, { tip: 5n * GWEI, maxFee: 50n * GWEI });
    const b0 = tx(B, 0n, { tip: GWEI });
    // A holds two, over a guarantee of one; B is the cheapest.
    const p = pool({ maxTxsPerSender: 1, maxTxsBytes: a0.raw.length + a1.raw.length + b0.raw.length + 1 });
    for (const d of [a0, a1, b0]) admit(p, d);
    const bigger = tx(A, 0n, {
      tip: 6n * GWEI,
      maxFee: 60n * GWEI,
      data: `0x${'01'.repeat(40)}`,
      gas: 100_000n,
    });
    const plan = admit(p, bigger);
    assert.equal(plan.replaces?.d.hashHex, a0.hashHex);
    assert.deepEqual(
      plan.evict.map((e) => e.d.hashHex),
      [b0.hashHex],
    );
    assert.deepEqual(
      p.pending(senderOf(A)).map((e) => e.d.hashHex),
      [bigger.hashHex, a1.hashHex],
    );
  });

  it('a full pool with nobody else to evict is full', () => {
    const p = pool({ size: 1 });
    admit(p, tx(A, 0n, { tip: GWEI }));
    refused(p, tx(A, 1n, { tip: 9n * GWEI }), rich, TxCode.poolFull, 'txpool is full');
  });

  it('a replacement in a full pool takes its own place and evicts nobody', () => {
    const p = pool({ size: 2 });
    admit(p, tx(A, 0n, { tip: 5n * GWEI, maxFee: 50n * GWEI }));
    admit(p, tx(B, 0n, { tip: GWEI }));
    const plan = admit(p, tx(A, 0n, { tip: 6n * GWEI, maxFee: 60n * GWEI }));
    assert.deepEqual(plan.evict, []);
    assert.equal(p.count, 2);
  });
});

describe('mempool: pending, queued and blocks', () => {
  it('splits each sender into the run from its state nonce and the queue after a gap', () => {
    const p = pool();
    for (const n of [5n, 0n, 8n, 3n, 1n, 6n]) admit(p, tx(A, n));
    admit(p, tx(B, 2n), { nonce: 2n, balance: rich.balance });
    assert.deepEqual(nonces(p.pending(senderOf(A))), [0n, 1n]);
    assert.deepEqual(p.pending('00'.repeat(20)), []);
    const { pending, queued } = p.summary();
    assert.deepEqual(nonces(pending.get(senderOf(A))), [0n, 1n]);
    assert.deepEqual(nonces(queued.get(senderOf(A))), [3n, 5n, 6n, 8n]);
    assert.deepEqual(nonces(pending.get(senderOf(B))), [2n]);
    assert.equal(queued.has(senderOf(B)), false);
    assert.equal(p.pendingNonce(senderOf(A), 0n), 2n);
    assert.equal(p.pendingNonce(senderOf(A), 3n), 4n, 'from a newer state nonce, counting 3');
    assert.equal(p.pendingNonce(senderOf(A), 5n), 7n, 'from another newer state nonce, counting 5 and 6');
    assert.equal(p.pendingNonce(senderOf(A), 0n), 2n, 'the newer nonce is not cached as the run');
    assert.equal(p.pendingNonce(senderOf(C), 7n), 7n);
    admit(p, tx(A, 2n));
    assert.equal(p.pendingNonce(senderOf(A), 0n), 4n, 'filling the gap joins the queue to the run');
    admit(p, tx(A, 4n));
    assert.equal(p.pendingNonce(senderOf(A), 0n), 7n);
  });

  it('removing a transaction shortens its run and frees its bytes', () => {
    const p = pool();
    const ds = [0n, 1n, 2n].map((n) => tx(A, n));
    for (const d of ds) admit(p, d);
    assert.equal(p.pendingNonce(senderOf(A), 0n), 3n);
    assert.equal(
      p.totalBytes,
      ds.reduce((s, d) => s + d.raw.length, 0),
    );
    assert.equal(p.remove(ds[1].hashHex)?.d, ds[1]);
    assert.equal(p.remove(ds[1].hashHex), undefined);
    assert.equal(p.count, 2);
    assert.equal(p.totalBytes, ds[0].raw.length + ds[2].raw.length);
    assert.equal(p.pendingNonce(senderOf(A), 0n), 1n);
    // The cost of the removed one no longer counts: the balance for two is enough again.
    admit(p, tx(A, 1n), { nonce: 0n, balance: 3n * ds[0].cost });
    for (const d of [ds[0], ds[2]]) p.remove(d.hashHex);
    p.remove(tx(A, 1n).hashHex);
    assert.deepEqual(p.senders(), []);
    assert.equal(p.totalBytes, 0);
  });

  it('clear() empties the pool', () => {
    const p = pool();
    admit(p, tx(A, 0n));
    admit(p, tx(B, 0n));
    p.clear();
    assert.equal(p.count, 0);
    assert.equal(p.totalBytes, 0);
    assert.deepEqual(p.senders(), []);
    admit(p, tx(A, 0n));
    assert.equal(p.count, 1);
  });

  it('after a block drops what is below the new nonce, and with recheck what the sender cannot pay', () => {
    for (const recheck of [true, false]) {
      const p = pool();
      const [a0, a1, a2] = [0n, 1n, 2n].map((n) => tx(A, n));
      const dear = tx(A, 3n, { value: 10n ** 18n });
      const b0 = tx(B, 0n);
      for (const d of [a0, a1, a2, dear, b0]) admit(p, d);
      const states = new Map<string, SenderState>([
        [senderOf(A), { nonce: 1n, balance: a1.cost }],
        [senderOf(C), { nonce: 9n, balance: 0n }],
      ]);
      const dropped = p.update(states, recheck);
      const want = recheck ? [a0, dear] : [a0];
      assert.deepEqual(
        dropped.map((e) => e.d.hashHex),
        want.map((d) => d.hashHex),
        `recheck ${recheck}`,
      );
      // Each of a1 and a2 costs exactly the balance: each is still payable on its own.
      assert.deepEqual(nonces(p.pending(senderOf(A))), recheck ? [1n, 2n] : [1n, 2n, 3n]);
      assert.equal(p.pendingNonce(senderOf(A), 1n), recheck ? 3n : 4n);
      assert.deepEqual(nonces(p.pending(senderOf(B))), [0n]);
      assert.equal(p.count, recheck ? 3 : 4);
    }
  });

  it('a new state nonce seen at admission moves the run', () => {
    const p = pool();
    for (const n of [0n, 1n, 2n]) admit(p, tx(A, n));
    assert.equal(p.pendingNonce(senderOf(A), 0n), 3n);
    admit(p, tx(A, 4n), { nonce: 2n, balance: rich.balance });
    assert.deepEqual(nonces(p.pending(senderOf(A))), [2n]);
    assert.equal(p.pendingNonce(senderOf(A), 2n), 3n);
  });
});

describe('mempool: proposals', () => {
  const name = new Map([A, B, C, D, E].map((k, i) => [senderOf(k), 'ABCDE'[i]]));
  const names = (ds: DecodedTx[]) => ds.map((d) => `${name.get(d.sender)}${d.nonce}`);

  it('takes the best effective tip first across senders, nonce order within a sender', () => {
    const p = pool();
    const tips: Array<[Uint8Array, bigint[]]> = [
      [A, [3n, 9n]],
      [B, [7n]],
      [C, [1n, 8n, 2n]],
      [D, [5n]],
      [E, [6n, 4n]],
    ];
    for (const [k, ts] of tips) {
      for (const [i, t] of ts.entries()) admit(p, tx(k, BigInt(i), { tip: t * GWEI, maxFee: 100n * GWEI }));
    }
    admit(p, tx(B, 5n, { tip: 99n * GWEI, maxFee: 100n * GWEI })); // queued: never proposed
    admit(p, tx(key(16), 3n, { tip: 99n * GWEI, maxFee: 100n * GWEI }), { nonce: 0n, balance: rich.balance });
    assert.deepEqual(names(p.select(0n, 1 << 20)), ['B0', 'E0', 'D0', 'E1', 'A0', 'A1', 'C0', 'C1', 'C2']);
  });

  it('orders many senders by tip whatever their arrival order (the proposal heap)', () => {
    const tips = [7, 3, 11, 1, 9, 12, 5, 2, 10, 4, 8, 6, 13, 0];
    for (let rot = 0; rot < tips.length; rot += 3) {
      const p = pool();
      const order = [...tips.slice(rot), ...tips.slice(0, rot)];
      for (const t of order) admit(p, tx(key(40 + t), 0n, { tip: BigInt(t) * GWEI, maxFee: 100n * GWEI }));
      const got = p.select(0n, 1 << 20).map((d) => d.tipCap / GWEI);
      assert.deepEqual(got, [...tips].sort((x, y) => y - x).map(BigInt), `arrival order ${order}`);
    }
  });

  it('equal prices go in arrival order', () => {
    const p = pool();
    for (const k of [C, A, E, B, D]) admit(p, tx(k, 0n, { tip: GWEI }));
    assert.deepEqual(names(p.select(0n, 1 << 20)), ['C0', 'A0', 'E0', 'B0', 'D0']);
  });

  it('stops a sender at a fee cap below the base fee; a fee cap equal to it is taken', () => {
    const p = pool();
    admit(p, tx(A, 0n, { maxFee: 5n * GWEI, tip: GWEI }));
    admit(p, tx(A, 1n, { maxFee: 50n * GWEI, tip: 9n * GWEI }));
    admit(p, tx(B, 0n, { maxFee: 6n * GWEI, tip: 0n }));
    admit(p, tx(C, 0n, { maxFee: 7n * GWEI, tip: GWEI }));
    assert.deepEqual(names(p.select(6n * GWEI, 1 << 20)), ['C0', 'B0']);
    // At 5 gwei A0 and B0 both tip 0: B0's higher fee cap goes first, then A0 and A's next nonce.
    assert.deepEqual(names(p.select(5n * GWEI, 1 << 20)), ['C0', 'B0', 'A0', 'A1']);
  });

  it('fills max bytes exactly, skipping a transaction too big for what is left but not smaller ones', () => {
    const p = pool();
    const a0 = tx(A, 0n, { tip: 9n * GWEI });
    const b0 = tx(B, 0n, { tip: 8n * GWEI, data: `0x${'01'.repeat(300)}`, gas: 100_000n });
    const b1 = tx(B, 1n, { tip: 8n * GWEI });
    const c0 = tx(C, 0n, { tip: GWEI });
    for (const d of [a0, b0, b1, c0]) admit(p, d);
    const exact = protoTxSize(a0.raw.length) + protoTxSize(c0.raw.length);
    // b0 does not fit after a0, and B's nonce 1 waits behind it; c0 fills the rest exactly.
    assert.deepEqual(names(p.select(0n, exact)), ['A0', 'C0']);
    assert.deepEqual(names(p.select(0n, exact - 1)), ['A0']);
    const all = [a0, b0, b1, c0].reduce((s, d) => s + protoTxSize(d.raw.length), 0);
    assert.deepEqual(names(p.select(0n, all)), ['A0', 'B0', 'B1', 'C0']);
    assert.deepEqual(names(p.select(0n, 0)), []);
  });
});

describe('mempool: executable transactions', () => {
  it('hasExecutable: only a transaction at its sender state nonce counts, not a queued one', () => {
    const p = pool();
    assert.equal(p.hasExecutable(), false, 'an empty pool');
    admit(p, tx(A, 1n));
    assert.equal(p.hasExecutable(), false, 'A waits for nonce 0');
    admit(p, tx(B, 1n), { ...rich, nonce: 1n });
    assert.equal(p.hasExecutable(), true, "B's nonce 1 is its state nonce");
    const q = pool();
    admit(q, tx(C, 2n));
    admit(q, tx(D, 0n));
    assert.equal(q.hasExecutable(), true, 'one executable sender among queued ones');
  });
});
