// The reward stake (0x7b7c…0016) and the fee split through a real chain-local node process, with
// ethers v6 as a wallet would use them: lock BTC, send fee-paying transactions, see the rewards
// accrue, claim them (the locker from the reward stake, the validator's operator from the pool),
// and a withdraw refused before the lock ends.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { ed25519 } from '@noble/curves/ed25519.js';
import { Contract, getAddress, parseEther, Wallet } from 'ethers';
import { POOL, POOL_FRAGMENTS, REWARD, STAKE_EVENTS, STAKE_FUNCTIONS } from '../staking-abi.js';
import { DEV_ADDRESSES, DEV_KEYS } from './harness.js';
import { revertReason, useWalletNode } from './wallet.js';

const BTC = '0x7b7c000000000000000000000000000000000000';
const WEEK = 604_800n;
const STAKE_ABI = [...STAKE_FUNCTIONS, ...STAKE_EVENTS];

/** A fee-paying transfer of `value` to a fresh address with priority fee `tip`, mined: its receipt. */
async function feeTransfer(from: Wallet, value: bigint, tip: bigint) {
  const tx = await from.sendTransaction({
    to: Wallet.createRandom().address,
    value,
    maxPriorityFeePerGas: tip,
  });
  const rc = await tx.wait();
  if (!rc) throw new Error(`no receipt for ${tx.hash}`);
  return rc;
}

describe('reward stake and fee split against noded chain-local', { timeout: 420_000 }, () => {
  const chain = useWalletNode();

  /** The node's REST answer to `path` at `height`; asserts a 200. */
  const rest = async (path: string, height: number) => {
    const r = await fetch(`${chain.env.node.apiUrl}${path}`, {
      headers: { 'x-cosmos-block-height': String(height) },
      signal: AbortSignal.timeout(10_000),
    });
    assert.equal(r.status, 200, `${path}: ${r.status}`);
    return (await r.json()) as Record<string, unknown>;
  };
  const decOf = (amount: bigint) => `${amount}.000000000000000000`;

  it('lock, fee-paying transactions, claim: the locker and the validator are paid, the proposer keeps nothing', async () => {
    const { provider } = chain;
    const locker = new Wallet(DEV_KEYS[1], provider);
    const spender = new Wallet(DEV_KEYS[2], provider);
    const operator = new Wallet(DEV_KEYS[0], provider);
    const stake = new Contract(REWARD, STAKE_ABI, locker);
    const supply0 = await new Contract(
      BTC,
      ['function totalSupply() view returns (uint256)'],
      provider,
    ).totalSupply();

    const now = BigInt((await provider.getBlock('latest'))!.timestamp);
    const lockRc = await (await stake.lock(now + 4n * WEEK, { value: parseEther('3') })).wait();
    assert.equal(lockRc.status, 1);
    const [amount, end] = await stake.lockOf(locker.address);
    assert.equal(amount, parseEther('3'));
    assert.equal(end % WEEK, 0n, 'the unlock time is a whole week');
    const t = BigInt((await provider.getBlock('latest'))!.timestamp);
    assert.equal(
      await stake.weightOf(locker.address, { blockTag: 'latest' }),
      (parseEther('3') * (end - t)) / 126_144_000n,
    );

    assert.match(
      await revertReason(stake.withdraw.staticCall()),
      new RegExp(
        `^the lock of ${locker.address.toLowerCase()} ends at ${end}: withdraw is refused before it`,
      ),
    );

    // Fee-paying transfers; the block's proposer (the miner) hands every fee to the split.
    let lastBlock = 0;
    for (let i = 0; i < 4; i++) {
      const rc = await feeTransfer(spender, 1000n, 2_000_000_000n);
      assert.equal(rc.status, 1);
      lastBlock = rc.blockNumber;
    }
    const miner = (await provider.getBlock(lastBlock))!.miner;
    assert.equal(await provider.getBalance(miner), 0n, 'the proposer keeps no fee');

    // The x/distribution REST routes answer what the views answer, at the same height.
    const pool = new Contract(POOL, POOL_FRAGMENTS, operator);
    const op = DEV_ADDRESSES[0];
    const viewRewards = await pool.pendingRewards(op, op, { blockTag: lastBlock });
    const viewCommission = await pool.pendingCommission(op, { blockTag: lastBlock });
    assert.ok(viewRewards > 0n);
    assert.deepEqual(await rest(`/cosmos/distribution/v1beta1/delegators/${op}/rewards`, lastBlock), {
      rewards: [{ validator_address: op, reward: [{ denom: 'abtc', amount: decOf(viewRewards) }] }],
      total: [{ denom: 'abtc', amount: decOf(viewRewards) }],
    });
    assert.deepEqual(await rest(`/cosmos/distribution/v1beta1/delegators/${op}/rewards/${op}`, lastBlock), {
      rewards: [{ denom: 'abtc', amount: decOf(viewRewards) }],
    });
    assert.deepEqual(await rest(`/cosmos/distribution/v1beta1/validators/${op}/commission`, lastBlock), {
      commission: {
        commission: viewCommission === 0n ? [] : [{ denom: 'abtc', amount: decOf(viewCommission) }],
      },
    });
    assert.deepEqual((await rest('/cosmos/distribution/v1beta1/params', lastBlock)).params, {
      community_tax: '0.000000000000000000',
      base_proposer_reward: '0.000000000000000000',
      bonus_proposer_reward: '0.000000000000000000',
      withdraw_addr_enabled: false,
      validator_share: '0.500000000000000000',
      block_reward: '0',
    });

    const pending = await stake.pendingRewards(locker.address);
    assert.ok(pending > 0n, 'the locker earned part of the fees');
    const before = await provider.getBalance(locker.address);
    const claimRc = await (await stake.claim()).wait();
    const ev = stake.interface.parseLog(claimRc.logs[0])!;
    assert.equal(ev.name, 'RewardsClaimed');
    const paid = ev.args.amount as bigint;
    assert.ok(paid >= pending, `claimed ${paid}, pending before ${pending}`);
    assert.equal(
      await provider.getBalance(locker.address),
      before + paid - (claimRc.gasUsed as bigint) * (claimRc.gasPrice as bigint),
    );

    // The single validator (operated by dev account #0) gets the validators' half.
    const owed =
      (await pool.pendingRewards(DEV_ADDRESSES[0], DEV_ADDRESSES[0])) +
      (await pool.pendingCommission(DEV_ADDRESSES[0]));
    assert.ok(owed > 0n);
    const opBefore = await provider.getBalance(operator.address);
    const opRc = await (await pool.claimRewards(DEV_ADDRESSES[0])).wait();
    const opEv = pool.interface.parseLog(opRc.logs[0])!;
    const opPaid = (opEv.args.reward as bigint) + (opEv.args.commission as bigint);
    assert.ok(opPaid >= owed);
    assert.equal(
      await provider.getBalance(operator.address),
      opBefore + opPaid - (opRc.gasUsed as bigint) * (opRc.gasPrice as bigint),
    );

    // No block reward on chain-local: fees only move, the supply stays.
    const supply1 = await new Contract(
      BTC,
      ['function totalSupply() view returns (uint256)'],
      provider,
    ).totalSupply();
    assert.equal(supply1, supply0);
  });
  it("claimAllRewards: a delegator of two validators claims both in one call; outstanding_rewards and the delegator's validators over REST", async () => {
    const { provider } = chain;
    const second = new Wallet(DEV_KEYS[3], provider);
    const delegator = new Wallet(DEV_KEYS[1], provider);
    const spender = new Wallet(DEV_KEYS[2], provider);
    const op0 = DEV_ADDRESSES[0];
    // A second validator with power 1 against the node's 10: the chain keeps committing without it.
    const pub = `0x${Buffer.from(ed25519.getPublicKey(randomBytes(32))).toString('hex')}`;
    await (
      await new Contract(POOL, POOL_FRAGMENTS, second).createValidator(pub, 'second', 1000, {
        value: parseEther('1'),
      })
    ).wait();
    const pool = new Contract(POOL, POOL_FRAGMENTS, delegator);
    await (await pool.delegate(op0, { value: parseEther('2') })).wait();
    const rc = await (await pool.delegate(second.address, { value: parseEther('1') })).wait();
    assert.deepEqual(
      (await pool.delegatorValidators(delegator.address)).map((a: string) => a.toLowerCase()),
      [op0.toLowerCase(), second.address.toLowerCase()],
    );
    // Fee-paying transfers after both validators have power (two heights after the bonds).
    let last = rc!.blockNumber;
    while (last < rc!.blockNumber + 3) {
      last = (await feeTransfer(spender, 1n, 1_000_000_000n)).blockNumber;
    }
    for (const op of [op0, second.address]) {
      const v = await pool.outstandingRewards(op, { blockTag: last });
      const owed =
        (await pool.pendingCommission(op, { blockTag: last })) +
        (await pool.pendingRewards(delegator.address, op, { blockTag: last })) +
        (await pool.pendingRewards(op, op, { blockTag: last }));
      assert.ok(v > 0n && v >= owed && v - owed < 4n, `outstanding ${v}, claimable ${owed}`);
      assert.deepEqual(
        await rest(`/cosmos/distribution/v1beta1/validators/${op}/outstanding_rewards`, last),
        {
          rewards: { rewards: [{ denom: 'abtc', amount: decOf(v) }] },
        },
      );
    }
    assert.deepEqual(
      await rest(`/cosmos/distribution/v1beta1/delegators/${delegator.address}/validators`, last),
      {
        validators: [getAddress(op0), second.address],
      },
    );

    // The claim pays what the views answer at the block before it (it runs before its block's split).
    const tx = await pool.claimAllRewards();
    const claimRc = await tx.wait();
    const h = claimRc!.blockNumber - 1;
    const want = [
      await pool.pendingRewards(delegator.address, op0, { blockTag: h }),
      await pool.pendingRewards(delegator.address, second.address, { blockTag: h }),
    ];
    assert.ok(want[0] > 0n && want[1] > 0n);
    const logs = claimRc!.logs.map((l: { topics: string[]; data: string }) => pool.interface.parseLog(l)!);
    assert.deepEqual(
      logs.map((l: { name: string; args: { toArray(): unknown[] } }) => [l.name, ...l.args.toArray()]),
      [
        ['RewardsClaimed', delegator.address, op0, want[0], 0n],
        ['RewardsClaimed', delegator.address, second.address, want[1], 0n],
        ['AllRewardsClaimed', delegator.address, 2n, want[0] + want[1]],
      ],
    );
    const before = await provider.getBalance(delegator.address, h);
    assert.equal(
      await provider.getBalance(delegator.address, claimRc!.blockNumber),
      before + want[0] + want[1] - (claimRc!.gasUsed as bigint) * (claimRc!.gasPrice as bigint),
    );
  });
});
