import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultGasOptions, effectiveTip, nextBaseFee } from '@noded/execution';
import { addr, ETH, GWEI, key, produceBlock, signTx, startNode } from './helpers.js';

/** EIP-1559's formula written out independently (elasticity 2, denominator 8), then clamped. */
function reference(base: bigint, used: bigint, target: bigint, min: bigint, max: bigint): bigint {
  let next = base;
  if (used > target) {
    const d = (base * (used - target)) / target / 8n;
    next = base + (d < 1n ? 1n : d);
  } else if (used < target) {
    next = base - (base * (target - used)) / target / 8n;
  }
  return next < min ? min : next > max ? max : next;
}

describe('fee market', () => {
  const T = 15_000_000n;
  const MIN = GWEI;
  const MAX = 1000n * GWEI;
  // [parent base fee, parent gas used, expected next base fee]
  const table: Array<[bigint, bigint, bigint, string]> = [
    [GWEI, T, GWEI, 'at target: unchanged'],
    [8n * GWEI, 2n * T, 9n * GWEI, 'full (2x target): +12.5%'],
    [8n * GWEI, 0n, 7n * GWEI, 'empty: -12.5%'],
    [8n * GWEI, T + T / 2n, 8_500_000_000n, '1.5x target: +6.25%'],
    [8n * GWEI, T / 2n, 7_500_000_000n, '0.5x target: -6.25%'],
    [GWEI, 0n, GWEI, 'empty at the floor: clamped to min_gas_price'],
    [GWEI + 100n, 0n, GWEI, 'a decrease below the floor clamps to it'],
    [MAX, 2n * T, MAX, 'full at the ceiling: clamped to max_gas_price'],
    [990n * GWEI, 2n * T, MAX, 'an increase past the ceiling clamps to it'],
    [10n * GWEI, T + 1n, 10n * GWEI + 83n, 'one gas above target rounds to the formula'],
    [GWEI * 2n, T + 1n, GWEI * 2n + 16n, 'small excess: formula value'],
    [8n * GWEI, 4n * T, 11n * GWEI, 'no block gas cap (max_gas -1): 4x target gives +37.5%'],
  ];
  for (const [base, used, want, why] of table) {
    it(`${why}: ${base} @ ${used} -> ${want}`, () => {
      const got = nextBaseFee(base, used, { gasTarget: T, minGasPrice: MIN, maxGasPrice: MAX });
      assert.equal(got, want);
      assert.equal(got, reference(base, used, T, MIN, MAX));
    });
  }

  it('raises the delta to at least 1 wei above target', () => {
    assert.equal(nextBaseFee(100n, T + 1n, { gasTarget: T, minGasPrice: 1n, maxGasPrice: MAX }), 101n);
  });

  it('keeps the fee for a gas target of 0 (app.toml requires >= 1; the library must not divide by it)', () => {
    const p = { gasTarget: 0n, minGasPrice: 1n, maxGasPrice: MAX };
    assert.equal(nextBaseFee(8n * GWEI, 0n, p), 8n * GWEI);
    assert.equal(nextBaseFee(8n * GWEI, 2n * T, p), 8n * GWEI);
  });

  it('computes the effective tip as min(tip cap, fee cap - base fee)', () => {
    assert.equal(effectiveTip(10n, 3n, 5n), 3n);
    assert.equal(effectiveTip(10n, 8n, 5n), 5n);
    assert.equal(effectiveTip(5n, 2n, 5n), 0n);
  });

  it('moves each block base fee by the formula from the parent gas used, starting at base_fee', async () => {
    const gasTarget = 50_000n;
    const gas = { ...defaultGasOptions, baseFee: 8n * GWEI, gasTarget };
    const senders = [key(1), key(2), key(3), key(4)];
    const n = await startNode(
      senders.map((k) => ({ address: addr(k), balance: 10n * ETH })),
      { gas },
    );
    assert.equal((await n.ex.getBlockByNumber(0n))?.baseFeePerGas, 8n * GWEI);
    const usage = [4, 0, 1, 3, 2, 0, 0];
    const nonces = senders.map(() => 0n);
    let expected = 8n * GWEI;
    for (const count of usage) {
      assert.equal(n.ex.nextBaseFee(), expected);
      const txs = senders
        .slice(0, count)
        .map((k, i) => signTx(k, { nonce: nonces[i]++, to: addr(key(9)), maxFee: 50n * GWEI, tip: GWEI }));
      await produceBlock(n, txs);
      const blk = (await n.ex.getBlockByNumber(n.ex.latestHeight()))!;
      assert.equal(blk.baseFeePerGas, expected);
      assert.equal(blk.gasUsed, BigInt(count) * 21_000n);
      expected = reference(expected, blk.gasUsed, gasTarget, gas.minGasPrice, gas.maxGasPrice);
    }
    const hist = await n.ex.feeHistory(3, n.ex.latestHeight(), [50]);
    assert.equal(hist.oldestBlock, n.ex.latestHeight() - 2n);
    assert.equal(hist.baseFeePerGas.length, 4);
    assert.equal(hist.baseFeePerGas[3], n.ex.nextBaseFee());
    assert.deepEqual(hist.reward, [[GWEI], [0n], [0n]]);
  });

  it('reports fee history rewards as the effective tips at the percentiles', async () => {
    const n = await startNode([key(1), key(2)].map((k) => ({ address: addr(k), balance: 10n * ETH })));
    await produceBlock(n, [
      signTx(key(1), { nonce: 0n, to: addr(key(9)), maxFee: 50n * GWEI, tip: GWEI }),
      signTx(key(2), { nonce: 0n, to: addr(key(9)), maxFee: 50n * GWEI, tip: 3n * GWEI }),
    ]);
    const h = await n.ex.feeHistory(1, 1n, [10, 90]);
    assert.deepEqual(h.reward, [[GWEI, 3n * GWEI]]);
    assert.equal(h.gasUsedRatio[0], 42_000 / 30_000_000);
    assert.equal(n.ex.suggestedTip(), GWEI);
  });
});
