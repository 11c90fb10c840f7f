// The validator pool's distribution side through the executor on RocksDB: claimAllRewards() (one
// call for every validator a delegator has rewards from, with its events, its gas bound and the
// 32-validator cap), the per-delegator list of validators behind it (delegatorValidators), and the
// validators' outstanding rewards (outstandingRewards), checked against the pending views that the
// fee split's own tests check to the wei.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FinalizeBlockResponse, Hex } from '@noded/types';
import { addr, ETH, key, signTx } from './helpers.js';
import {
  consensusKey,
  contract,
  intrinsicGas,
  okBlock,
  POOL,
  poolAbi,
  REWARD,
  type StakingNet,
  startStakingNet,
  stopStakingNet as stop,
} from './staking-net.js';

const { read: view, one, refusal, tx } = contract(POOL, poolAbi);

const ops = [key(1), key(2), key(3)];
const POWERS = [10n, 20n, 30n];
const COMMISSION = [0n, 500n, 1000n];
const [alice, bob, dave] = [key(4), key(5), key(6)];
/** Accounts that create the extra validators of the cap test. */
const extra = Array.from({ length: 30 }, (_, i) => key(100 + i));
const BALANCE = 1000n * ETH;

type Net = StakingNet;

function start(): Promise<Net> {
  return startStakingNet({
    operators: ops,
    powers: POWERS,
    commissionBps: COMMISSION,
    accounts: [...ops, alice, bob, dave, ...extra],
    balance: BALANCE,
    // A block reward makes every block pay, so the rewards do not depend on the fees alone.
    appState: { rewards: { params: { validator_share: '0.5', block_reward: '1000000000000000007' } } },
    rocksDirPrefix: 'noded-distribution-',
  });
}

const listOf = async (n: Net, who: Uint8Array) =>
  ((await view(n, 'delegatorValidators', [addr(who)]))[0] as string[]).map((a) => a.toLowerCase());

const block = (n: Net, txs: Uint8Array[] = []): Promise<FinalizeBlockResponse> => okBlock(n, txs);

/**
 * claimAllRewards from `who` in its own block with a gas limit of `gas`; asserts it succeeded and
 * used the intrinsic gas plus 60,000 and 15,000 per validator claimed. Returns the receipt.
 */
async function claimAll(n: Net, who: Uint8Array, gas: bigint, validators: bigint) {
  await block(n, [tx(n, who, 'claimAllRewards', [], 0n, gas)]);
  const [rc] = await n.ex.getBlockReceipts(BigInt(n.height));
  assert.equal(rc!.status, 1);
  assert.equal(
    BigInt(rc!.gasUsed),
    intrinsicGas(poolAbi.encodeFunctionData('claimAllRewards')) + 60_000n + validators * 15_000n,
  );
  return rc!;
}

/** Σ pendingRewards over `delegators` + pendingCommission: what the validator's people can claim. */
async function claimable(n: Net, op: Uint8Array, delegators: Uint8Array[], height = n.height) {
  let s = await one(n, 'pendingCommission', [addr(op)], height);
  for (const d of delegators) s += await one(n, 'pendingRewards', [addr(d), addr(op)], height);
  return s;
}

describe('validator pool: claimAllRewards and outstanding rewards', () => {
  it('claims every validator of the delegator in one call, with one event each and the total, at 60,000 + 15,000 gas per validator', async () => {
    const n = await start();
    try {
      await block(n);
      assert.deepEqual(await listOf(n, ops[1]!), [addr(ops[1]!)], 'genesis lists the self-bond');
      assert.deepEqual(await listOf(n, alice), []);
      assert.equal(
        await refusal(n, alice, 'claimAllRewards'),
        `${addr(alice)} has no reward to claim from any of its 0 validators`,
      );
      assert.equal(
        await refusal(n, alice, 'claimAllRewards', [], 1n),
        'claimAllRewards is not payable (sent 1 base units)',
      );
      await block(n, [
        tx(n, alice, 'delegate', [addr(ops[2]!)], 3n * ETH),
        tx(n, alice, 'delegate', [addr(ops[0]!)], 2n * ETH),
        tx(n, alice, 'delegate', [addr(ops[1]!)], ETH),
        tx(n, bob, 'delegate', [addr(ops[1]!)], 5n * ETH),
      ]);
      assert.deepEqual(await listOf(n, alice), [addr(ops[2]!), addr(ops[0]!), addr(ops[1]!)]);
      assert.deepEqual(await listOf(n, bob), [addr(ops[1]!)]);
      for (let i = 0; i < 4; i++) await block(n);

      // Outstanding: at least what everyone of the validator can claim, by less than a unit per
      // delegation booking (two delegations and the commission here).
      for (const [i, op] of ops.entries()) {
        const people = i === 1 ? [op, alice, bob] : [op, alice];
        const out = await one(n, 'outstandingRewards', [addr(op)]);
        const owed = await claimable(n, op, people);
        assert.ok(owed > 0n);
        assert.ok(out >= owed && out - owed < 4n, `validator ${i}: outstanding ${out}, claimable ${owed}`);
      }

      // The claim runs before its own block's split: it pays what the views answer at the height before.
      const h = n.height;
      const want = await Promise.all(ops.map((op) => one(n, 'pendingRewards', [addr(alice), addr(op)])));
      const outBefore = await Promise.all(ops.map((op) => one(n, 'outstandingRewards', [addr(op)])));
      const balBefore = await n.ex.getBalance(addr(alice), BigInt(h));
      const rewardBefore = await n.ex.getBalance(REWARD, BigInt(h));
      const rc = await claimAll(n, alice, 200_000n, 3n);
      const logs = rc!.logs.map((l) => poolAbi.parseLog({ topics: l.topics, data: l.data })!);
      assert.deepEqual(
        logs.map((l) => [
          l.name,
          ...l.args.map((a: unknown) => (typeof a === 'string' ? a.toLowerCase() : a)),
        ]),
        [
          ['RewardsClaimed', addr(alice), addr(ops[2]!), want[2], 0n],
          ['RewardsClaimed', addr(alice), addr(ops[0]!), want[0], 0n],
          ['RewardsClaimed', addr(alice), addr(ops[1]!), want[1], 0n],
          ['AllRewardsClaimed', addr(alice), 3n, want[0]! + want[1]! + want[2]!],
        ],
      );
      const total = want[0]! + want[1]! + want[2]!;
      const fee = BigInt(rc!.gasUsed) * BigInt(rc!.effectiveGasPrice);
      assert.equal(await n.ex.getBalance(addr(alice), BigInt(n.height)), balBefore + total - fee);
      // The reward account paid the total and received this block's split (fees + block reward).
      assert.equal(
        await n.ex.getBalance(REWARD, BigInt(n.height)),
        rewardBefore - total + fee + 1000000000000000007n,
      );
      // Each validator's outstanding dropped by what alice took and grew by this block's split; it
      // still covers what everyone of it can claim.
      for (const [i, op] of ops.entries()) {
        const grown = (await one(n, 'outstandingRewards', [addr(op)])) - (outBefore[i]! - want[i]!);
        const people = i === 1 ? [op, alice, bob] : [op, alice];
        const owed = await claimable(n, op, people);
        assert.ok(grown > 0n, 'the new block adds to the outstanding rewards');
        const out = await one(n, 'outstandingRewards', [addr(op)]);
        assert.ok(out >= owed && out - owed < 4n, `after the claim, validator ${i}: ${out} vs ${owed}`);
      }
      assert.deepEqual(await listOf(n, alice), [addr(ops[2]!), addr(ops[0]!), addr(ops[1]!)]);

      // An operator's claim-all takes its self-delegation's rewards and its commission.
      const op2 = ops[1]!;
      const self = await one(n, 'pendingRewards', [addr(op2), addr(op2)]);
      const comm = await one(n, 'pendingCommission', [addr(op2)]);
      assert.ok(comm > 0n);
      await block(n, [tx(n, op2, 'claimAllRewards')]);
      const [rc2] = await n.ex.getBlockReceipts(BigInt(n.height));
      const l2 = rc2!.logs.map((l) => poolAbi.parseLog({ topics: l.topics, data: l.data })!);
      assert.deepEqual(
        l2.map((l) => [
          l.name,
          ...l.args.toArray().map((a) => (typeof a === 'string' ? a.toLowerCase() : a)),
        ]),
        [
          ['RewardsClaimed', addr(op2), addr(op2), self, comm],
          ['AllRewardsClaimed', addr(op2), 1n, self + comm],
        ],
      );

      // Undelegating everything keeps the validator listed while it still owes rewards; the claim
      // that takes them drops it.
      const all = await one(n, 'delegation', [addr(alice), addr(ops[0]!)]);
      await block(n, [tx(n, alice, 'undelegate', [addr(ops[0]!), all])]);
      assert.ok((await one(n, 'pendingRewards', [addr(alice), addr(ops[0]!)])) > 0n);
      assert.deepEqual(await listOf(n, alice), [addr(ops[2]!), addr(ops[0]!), addr(ops[1]!)]);
      await block(n, [tx(n, alice, 'claimAllRewards')]);
      assert.deepEqual(
        await listOf(n, alice),
        [addr(ops[2]!), addr(ops[1]!)],
        'the last one moved into the gap',
      );
      assert.equal(await one(n, 'pendingRewards', [addr(alice), addr(ops[0]!)]), 0n);
    } finally {
      await stop(n);
    }
  });

  it('refuses a delegation to a 33rd validator with the rule, and claims 32 within 540,000 gas', async () => {
    const n = await start();
    try {
      await block(n);
      await block(
        n,
        extra.map((k, i) =>
          signTx(k, {
            nonce: 0n,
            to: POOL,
            value: ETH,
            gas: 300_000n,
            data: poolAbi.encodeFunctionData('createValidator', [consensusKey(10 + i), `v${i}`, 100]) as Hex,
          }),
        ),
      );
      const targets = [...ops, ...extra].map((k) => addr(k));
      assert.equal(targets.length, 33);
      await block(
        n,
        targets.slice(0, 32).map((op) => tx(n, dave, 'delegate', [op], ETH)),
      );
      assert.equal((await listOf(n, dave)).length, 32);
      const before = await n.ex.getBalance(addr(dave), BigInt(n.height));
      assert.equal(
        await refusal(n, dave, 'delegate', [targets[32]], ETH),
        `${addr(dave)} already delegates to (or has unclaimed rewards from) 32 validators, the most one delegator may; undelegate fully from one and claim its rewards first`,
      );
      assert.equal(
        await n.ex.getBalance(addr(dave), BigInt(n.height)),
        before,
        'the refusal changed nothing',
      );
      await block(n);
      const rc = await claimAll(n, dave, 600_000n, 32n);
      const last = poolAbi.parseLog(rc!.logs.at(-1)!)!;
      assert.equal(last.name, 'AllRewardsClaimed');

      // A genesis operator's own validator counts (genesis writes no list; it is shown last): it
      // may delegate to 31 others.
      const op = ops[0]!;
      const others = targets.filter((t) => t !== addr(op));
      await block(
        n,
        others.slice(0, 31).map((t) => tx(n, op, 'delegate', [t], ETH)),
      );
      const listed = await listOf(n, op);
      assert.equal(listed.length, 32);
      assert.equal(listed.at(-1), addr(op));
      assert.match(
        await refusal(n, op, 'delegate', [others[31]], ETH),
        /already delegates to .* 32 validators/,
      );
      await block(n);
      await claimAll(n, op, 600_000n, 32n);
    } finally {
      await stop(n);
    }
  });
});
