// The reward stake (0x7b7c…0016) and the per-block fee split through the executor: the lock
// rules, the weights at chosen times, and after blocks of known fees every validator's,
// delegator's and locker's claimable amount against a model written here, block by block, from
// the formulas of docs/staking.md (not from the accumulators the node keeps), to the wei.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Executor } from '@noded/execution';
import { rewardFunctions } from '@noded/execution/src/precompiles/reward.js';
import { type KVStore, RocksKV } from '@noded/storage';
import { EventBus, type FinalizeBlockResponse, type Hex } from '@noded/types';
import { Interface } from 'ethers';
import { compileSolidity } from '../solc.js';
import { STAKE_EVENTS } from '../staking-abi.js';
import { addr, ETH, executorOptions, GWEI, key, PROPOSER, produceBlock, signTx } from './helpers.js';
import {
  balanceOf as balance,
  contract,
  intrinsicGas,
  nextTx,
  blockSeconds as nowOf,
  viewOne as one,
  POOL,
  poolAbi as pool,
  REWARD,
  type StakingNet,
  stakeAbi as stake,
  startStakingNet,
  view,
} from './staking-net.js';

const WEEK = 604_800n;
const MAX_LOCK = 126_144_000n;
const SCALE = 10n ** 27n;

const events = new Interface(STAKE_EVENTS);
/** The revert reason of a reward stake call made at the latest block, as a wallet shows it. */
const { refusal } = contract(REWARD, stake);

const ops = [key(1), key(2), key(3)];
const POWERS = [10n, 20n, 30n];
const COMMISSION = [0n, 500n, 1000n];
const [alice, bob, dave, payer, sink] = [key(4), key(5), key(6), key(7), key(8)];
const BALANCE = 1000n * ETH;

type Net = StakingNet;

function start(rewards: Record<string, string> | undefined, kv?: KVStore): Promise<Net> {
  return startStakingNet({
    operators: ops,
    powers: POWERS,
    commissionBps: COMMISSION,
    accounts: [...ops, alice, bob, dave, payer],
    balance: BALANCE,
    appState: rewards ? { rewards: { params: rewards } } : {},
    kv,
  });
}

const tx = (n: Net, k: Uint8Array, to: Hex, data: Hex, value = 0n, gasPrice?: bigint): Uint8Array =>
  nextTx(n, k, to, data, { value, gasPrice });

/** One block with these transactions; each must have executed successfully. */
async function block(n: Net, txs: Uint8Array[] = []): Promise<FinalizeBlockResponse> {
  const res = await produceBlock(n, txs);
  for (const r of res.txResults) assert.equal(r.code, 0, r.log);
  for (const r of await n.ex.getBlockReceipts(BigInt(n.height))) assert.equal(r.status, 1);
  return res;
}

/** The fees the block at the latest height collected (Σ gas used × effective gas price). */
async function feesOf(n: Net): Promise<bigint> {
  let f = 0n;
  for (const r of await n.ex.getBlockReceipts(BigInt(n.height)))
    f += BigInt(r.gasUsed) * BigInt(r.effectiveGasPrice);
  return f;
}

describe('reward stake: locks', () => {
  it('rounds the unlock time down to a week, refuses less than a week or more than four years, and the refusals change nothing', async () => {
    const n = await start(undefined);
    try {
      await block(n);
      const now = nowOf(n) + 1n; // the next block's time
      const wanted = now + 3n * WEEK + 12_345n;
      const end = (wanted / WEEK) * WEEK;
      assert.match(
        await refusal(n, alice, 'lock', [now + WEEK - 1n], ETH),
        /^unlockTime \d+ \(rounded down to the week: \d+\) is less than one week \(604800 s\) after the block time \d+$/,
      );
      assert.match(
        await refusal(n, alice, 'lock', [now + MAX_LOCK + WEEK], ETH),
        /is more than four years \(126144000 s\) after the block time/,
      );
      assert.equal(await refusal(n, alice, 'lock', [wanted], 0n), 'lock needs a value (the BTC to lock)');
      assert.match(
        await refusal(n, alice, 'increaseAmount', [], ETH),
        /has no lock; lock\(unlockTime\) first$/,
      );
      assert.equal(await refusal(n, alice, 'claim'), `${addr(alice)} has no reward to claim`);
      assert.equal(
        await refusal(n, alice, 'extendLock', [wanted], 1n),
        'extendLock is not payable (sent 1 base units)',
      );

      const before = await balance(n, addr(alice));
      const res = await block(n, [
        tx(n, alice, REWARD, stake.encodeFunctionData('lock', [wanted]) as Hex, 2n * ETH),
      ]);
      assert.equal(
        BigInt(`0x${Buffer.from(res.txResults[0]!.data).toString('hex')}`),
        end,
        'lock returns the end',
      );
      const [amount, unlock] = await view(n, REWARD, stake, 'lockOf', [addr(alice)]);
      assert.deepEqual([amount, unlock], [2n * ETH, end]);
      assert.equal(await one(n, REWARD, stake, 'totalLocked'), 2n * ETH);
      const receipts = await n.ex.getBlockReceipts(BigInt(n.height));
      const fee = BigInt(receipts[0]!.gasUsed) * BigInt(receipts[0]!.effectiveGasPrice);
      assert.equal(await balance(n, addr(alice)), before - 2n * ETH - fee);
      assert.equal(
        BigInt(receipts[0]!.gasUsed),
        intrinsicGas(stake.encodeFunctionData('lock', [wanted])) + 60_000n,
      );
      const log = receipts[0]!.logs[0]!;
      assert.equal(log.address.toLowerCase(), REWARD);

      assert.match(
        await refusal(n, alice, 'lock', [wanted], ETH),
        /already has a lock \(2000000000000000000 until \d+\); use increaseAmount or extendLock$/,
      );
      assert.match(
        await refusal(n, alice, 'extendLock', [end + WEEK - 1n]),
        new RegExp(
          `^unlockTime ${end + WEEK - 1n} \\(rounded down to the week: ${end}\\) does not extend the lock, which ends at ${end}$`,
        ),
      );
      const t = nowOf(n);
      assert.equal(
        await refusal(n, alice, 'withdraw'),
        `the lock of ${addr(alice)} ends at ${end}: withdraw is refused before it (block time ${t}, ${end - t} s left)`,
      );
      assert.equal(await one(n, REWARD, stake, 'totalLocked'), 2n * ETH, 'refusals changed nothing');
    } finally {
      await n.ex.close();
    }
  });
});

describe('reward stake: weights', () => {
  it('weightOf and totalWeight decay linearly and drop an ended lock at its week; extend, increase and withdraw', async () => {
    const n = await start(undefined);
    try {
      await block(n);
      const t0 = nowOf(n) + 1n;
      const ea = ((t0 + 100n * WEEK + 5n) / WEEK) * WEEK;
      const eb = ((t0 + 2n * WEEK + 999n) / WEEK) * WEEK;
      await block(n, [
        tx(n, alice, REWARD, stake.encodeFunctionData('lock', [t0 + 100n * WEEK + 5n]) as Hex, 4n * ETH),
        tx(n, bob, REWARD, stake.encodeFunctionData('lock', [t0 + 2n * WEEK + 999n]) as Hex, ETH),
      ]);
      const expect = async (locks: Array<[Uint8Array, bigint, bigint]>) => {
        const t = nowOf(n);
        let raw = 0n;
        for (const [k, a, e] of locks) {
          const w = e > t ? (a * (e - t)) / MAX_LOCK : 0n;
          assert.equal(await one(n, REWARD, stake, 'weightOf', [addr(k)]), w, `weightOf at ${t}`);
          if (e > t) raw += a * (e - t);
        }
        assert.equal(await one(n, REWARD, stake, 'totalWeight'), raw / MAX_LOCK, `totalWeight at ${t}`);
      };
      await expect([
        [alice, 4n * ETH, ea],
        [bob, ETH, eb],
      ]);
      // A week later: both a week lighter.
      n.time += WEEK * 1_000_000_000n;
      await block(n);
      await expect([
        [alice, 4n * ETH, ea],
        [bob, ETH, eb],
      ]);
      // Past bob's end: only alice weighs.
      n.time = eb * 1_000_000_000n + 10n * 1_000_000_000n;
      await block(n);
      await expect([
        [alice, 4n * ETH, ea],
        [bob, ETH, eb],
      ]);
      assert.ok((await one(n, REWARD, stake, 'weightOf', [addr(alice)])) > 0n);
      assert.equal(await one(n, REWARD, stake, 'weightOf', [addr(bob)]), 0n);
      const t = nowOf(n);
      assert.equal(
        await refusal(n, bob, 'increaseAmount', [], ETH),
        `the lock of ${addr(bob)} ended at ${eb} (block time ${t}); withdraw() it first`,
      );
      assert.match(
        await refusal(n, bob, 'lock', [t + 10n * WEEK], ETH),
        /has an ended lock of 1000000000000000000; withdraw\(\) it first$/,
      );

      // Bob withdraws exactly his lock; alice extends to the longest lock and adds 1 BTC.
      const bobBefore = await balance(n, addr(bob));
      const longest = ((t + 1n + MAX_LOCK) / WEEK) * WEEK;
      await block(n, [
        tx(n, bob, REWARD, stake.encodeFunctionData('withdraw') as Hex),
        tx(n, alice, REWARD, stake.encodeFunctionData('extendLock', [t + 1n + MAX_LOCK]) as Hex),
        tx(n, alice, REWARD, stake.encodeFunctionData('increaseAmount') as Hex, ETH),
      ]);
      const r = await n.ex.getBlockReceipts(BigInt(n.height));
      assert.equal(
        await balance(n, addr(bob)),
        bobBefore + ETH - BigInt(r[0]!.gasUsed) * BigInt(r[0]!.effectiveGasPrice),
      );
      assert.deepEqual([...(await view(n, REWARD, stake, 'lockOf', [addr(bob)]))], [0n, 0n]);
      assert.deepEqual([...(await view(n, REWARD, stake, 'lockOf', [addr(alice)]))], [5n * ETH, longest]);
      await expect([[alice, 5n * ETH, longest]]);
      assert.equal(await one(n, REWARD, stake, 'totalLocked'), 5n * ETH);
      // Event topics of the three changes.
      const logs = r.flatMap((x) => x.logs).map((l) => events.parseLog(l)!);
      assert.deepEqual(
        logs.map((l) => [
          l.name,
          ...l.args.map((v: unknown) => (typeof v === 'string' ? v.toLowerCase() : v)),
        ]),
        [
          ['Withdrawn', addr(bob), ETH],
          ['LockExtended', addr(alice), longest],
          ['LockIncreased', addr(alice), ETH, 5n * ETH],
        ],
      );
    } finally {
      await n.ex.close();
    }
  });
});

/**
 * The fee split written out block by block from docs/staking.md: each lock's share of each block
 * is a × (e − t) × r and each validator's power × g, kept as numerators over 10^27; a validator's
 * share is split into commission and per-share reward when the chain books it (before its power,
 * shares or commission change, and at a claim), a lock's and a delegation's are rounded down when
 * they are booked (a change of the position, a claim).
 */
class Model {
  carry = 0n;
  readonly locks = new Map<Hex, { a: bigint; e: bigint }>();
  readonly lockNum = new Map<Hex, bigint>();
  readonly lockBooked = new Map<Hex, bigint>();
  readonly power = new Map<Hex, bigint>();
  readonly bps = new Map<Hex, bigint>();
  /** op -> delegator -> shares */
  readonly shares = new Map<Hex, Map<Hex, bigint>>();
  /** op -> Σ power × g since the validator was last booked */
  readonly valNum = new Map<Hex, bigint>();
  readonly delNum = new Map<string, bigint>();
  readonly delBooked = new Map<string, bigint>();
  readonly commission = new Map<Hex, bigint>();

  constructor(
    readonly share: bigint,
    readonly minted: bigint,
  ) {
    ops.forEach((k, i) => {
      const op = addr(k);
      this.power.set(op, POWERS[i]!);
      this.bps.set(op, COMMISSION[i]!);
      this.shares.set(op, new Map([[op, POWERS[i]! * ETH]]));
    });
  }

  lockerPending(who: Hex): bigint {
    return (this.lockBooked.get(who) ?? 0n) + (this.lockNum.get(who) ?? 0n) / SCALE;
  }
  /** The chain books a locker's rewards (a change or a claim): round down now. */
  bookLocker(who: Hex): void {
    this.lockBooked.set(who, this.lockerPending(who));
    this.lockNum.set(who, 0n);
  }

  /** What booking the validator now gives: its commission and reward per share increase. */
  private validatorShare(op: Hex): { commission: bigint; inc: bigint; rest: bigint; ts: bigint } {
    const accrued = (this.valNum.get(op) ?? 0n) / SCALE;
    const commission = (accrued * this.bps.get(op)!) / 10_000n;
    const rest = accrued - commission;
    let ts = 0n;
    for (const v of this.shares.get(op)!.values()) ts += v;
    return { commission, rest, ts, inc: (rest * SCALE) / ts };
  }
  bookValidator(op: Hex): void {
    const { commission, inc, rest, ts } = this.validatorShare(op);
    this.valNum.set(op, 0n);
    this.commission.set(op, (this.commission.get(op) ?? 0n) + commission);
    for (const [d, v] of this.shares.get(op)!) {
      const k = `${d}|${op}`;
      this.delNum.set(k, (this.delNum.get(k) ?? 0n) + v * inc);
    }
    this.carry += rest - (inc * ts + SCALE - 1n) / SCALE;
  }
  pendingCommission(op: Hex): bigint {
    return (this.commission.get(op) ?? 0n) + this.validatorShare(op).commission;
  }
  delPending(d: Hex, op: Hex): bigint {
    const k = `${d}|${op}`;
    const unbooked = (this.shares.get(op)!.get(d) ?? 0n) * this.validatorShare(op).inc;
    return (this.delBooked.get(k) ?? 0n) + ((this.delNum.get(k) ?? 0n) + unbooked) / SCALE;
  }
  /** Before a delegation's shares change, and at its claim: the validator, then the delegation. */
  bookDelegation(d: Hex, op: Hex): void {
    this.bookValidator(op);
    const k = `${d}|${op}`;
    this.delBooked.set(k, this.delPending(d, op));
    this.delNum.set(k, 0n);
  }
  /** The end of a block changes a validator's power: booked with the old power first. */
  setPower(op: Hex, p: bigint): void {
    this.bookValidator(op);
    this.power.set(op, p);
  }

  block(t: bigint, fees: bigint): void {
    const total = fees + this.minted + this.carry;
    this.carry = 0n;
    if (total === 0n) return;
    let raw = 0n;
    for (const { a, e } of this.locks.values()) if (e > t) raw += a * (e - t);
    const forValidators = raw === 0n ? total : (total * this.share) / 10n ** 18n;
    const forLockers = total - forValidators;
    if (forLockers > 0n) {
      const r = (forLockers * SCALE) / raw;
      for (const [who, { a, e }] of this.locks)
        if (e > t) this.lockNum.set(who, (this.lockNum.get(who) ?? 0n) + a * (e - t) * r);
      this.carry += forLockers - (r * raw + SCALE - 1n) / SCALE;
    }
    let powerSum = 0n;
    for (const p of this.power.values()) powerSum += p;
    const g = (forValidators * SCALE) / powerSum;
    for (const [op, p] of this.power) this.valNum.set(op, (this.valNum.get(op) ?? 0n) + p * g);
    this.carry += forValidators - (g * powerSum + SCALE - 1n) / SCALE;
  }
}

describe('the fee split', () => {
  it('after blocks of known fees every claim matches the model to the wei; claims move exactly that; the supply holds', async () => {
    const share = 6n * 10n ** 17n;
    const minted = 10n ** 15n;
    const n = await start({ validator_share: '0.6', block_reward: minted.toString() });
    const m = new Model(share, minted);
    const genesisSupply = n.ex.totalSupply();
    const everyone = [...ops, alice, bob, dave, payer, sink].map(addr);
    const op1 = addr(ops[1]!);
    const op2 = addr(ops[2]!);
    try {
      assert.deepEqual([...(await view(n, REWARD, stake, 'params'))], [share, minted]);
      // Block 1: dave bonds 5 BTC to validator 1 (power 20 -> 25 from the next block on). No lock
      // yet: the whole block goes to the validators.
      await block(n, [tx(n, dave, POOL, pool.encodeFunctionData('delegate', [op1]) as Hex, 5n * ETH)]);
      m.bookDelegation(addr(dave), op1);
      m.shares.get(op1)!.set(addr(dave), 5n * ETH);
      m.block(nowOf(n), await feesOf(n));
      m.setPower(op1, 25n);

      // Blocks 2 and 3: alice locks 4 BTC for ~100 weeks, bob 1 BTC for ~2 weeks.
      const t2 = nowOf(n) + 1n;
      await block(n, [
        tx(n, alice, REWARD, stake.encodeFunctionData('lock', [t2 + 100n * WEEK]) as Hex, 4n * ETH),
      ]);
      m.locks.set(addr(alice), { a: 4n * ETH, e: ((t2 + 100n * WEEK) / WEEK) * WEEK });
      m.block(nowOf(n), await feesOf(n));
      const t3 = nowOf(n) + 1n;
      await block(n, [tx(n, bob, REWARD, stake.encodeFunctionData('lock', [t3 + 2n * WEEK]) as Hex, ETH)]);
      m.locks.set(addr(bob), { a: ETH, e: ((t3 + 2n * WEEK) / WEEK) * WEEK });
      m.block(nowOf(n), await feesOf(n));

      // Blocks of fee-paying transfers at different tips, then three weeks later (bob's lock has
      // ended), more.
      const transfers = async (count: number) => {
        for (let b = 0; b < count; b++) {
          const txs = [1n, 2n, 3n].map((k) => {
            const nonce = n.nonces.get(payer) ?? 0n;
            n.nonces.set(payer, nonce + 1n);
            return signTx(payer, {
              nonce,
              to: addr(sink),
              value: 1000n + BigInt(b),
              maxFee: 100n * GWEI,
              tip: k * GWEI + BigInt(b) * 7n,
            });
          });
          await block(n, txs);
          const fees = await feesOf(n);
          assert.ok(fees > 0n);
          m.block(nowOf(n), fees);
        }
      };
      await transfers(5);
      // Validator 1 raises its commission: what it earned before is booked at the old rate.
      await block(n, [tx(n, ops[1]!, POOL, pool.encodeFunctionData('editValidator', ['v1', 2000]) as Hex)]);
      m.bookValidator(op1);
      m.bps.set(op1, 2000n);
      m.block(nowOf(n), await feesOf(n));
      n.time += 3n * WEEK * 1_000_000_000n;
      await block(n);
      m.block(nowOf(n), 0n);
      assert.equal(await one(n, REWARD, stake, 'weightOf', [addr(bob)]), 0n, "bob's lock has ended");
      await transfers(4);

      const check = async (what: string) => {
        for (const who of [alice, bob].map(addr))
          assert.equal(
            await one(n, REWARD, stake, 'pendingRewards', [who]),
            m.lockerPending(who),
            `${what}: locker ${who}`,
          );
        for (const op of ops.map(addr)) {
          for (const d of m.shares.get(op)!.keys())
            assert.equal(
              await one(n, POOL, pool, 'pendingRewards', [d, op]),
              m.delPending(d, op),
              `${what}: delegation ${d} -> ${op}`,
            );
          assert.equal(
            await one(n, POOL, pool, 'pendingCommission', [op]),
            m.pendingCommission(op),
            `${what}: commission ${op}`,
          );
        }
        assert.equal(await one(n, REWARD, stake, 'undistributed'), m.carry, `${what}: carry`);
        // The reward account holds every claim: locks, rewards, commissions and the carry, plus
        // the sub-unit remainders of the rounding (never less).
        let owed = (await one(n, REWARD, stake, 'totalLocked')) + m.carry;
        for (const who of [alice, bob].map(addr)) owed += m.lockerPending(who);
        for (const op of ops.map(addr)) {
          owed += m.pendingCommission(op);
          for (const d of m.shares.get(op)!.keys()) owed += m.delPending(d, op);
        }
        const held = await balance(n, REWARD);
        assert.ok(held >= owed, `${what}: the reward account holds ${held}, owes ${owed}`);
        assert.ok(held - owed < BigInt(2 * n.height + 10), `${what}: rounding remainder ${held - owed}`);
        // The supply: genesis plus the block rewards; every balance adds up to it.
        assert.equal(n.ex.totalSupply(), genesisSupply + minted * BigInt(n.height), `${what}: supply`);
        let sum = (await balance(n, POOL)) + held + (await balance(n, `0x${'aa'.repeat(20)}` as Hex));
        for (const a of everyone) sum += await balance(n, a);
        assert.equal(sum, n.ex.totalSupply(), `${what}: balances add up to the supply`);
        assert.equal(
          await balance(n, `0x${Buffer.from(PROPOSER).toString('hex')}` as Hex),
          0n,
          'the proposer keeps nothing',
        );
      };
      await check('after 15 blocks');
      assert.ok(m.lockerPending(addr(alice)) > 0n && m.lockerPending(addr(bob)) > 0n);
      assert.ok(m.delPending(addr(dave), op1) > 0n && m.pendingCommission(op2) > 0n);

      // Claims: each pays exactly what the views showed (less the caller's own fee).
      const pays = {
        alice: m.lockerPending(addr(alice)),
        bob: m.lockerPending(addr(bob)),
        dave: m.delPending(addr(dave), op1),
        op2: m.delPending(op2, op2) + m.pendingCommission(op2),
      };
      const before = new Map<Hex, bigint>();
      for (const a of everyone) before.set(a, await balance(n, a));
      const res = await block(n, [
        tx(n, alice, REWARD, stake.encodeFunctionData('claim') as Hex),
        tx(n, bob, REWARD, stake.encodeFunctionData('withdraw') as Hex),
        tx(n, bob, REWARD, stake.encodeFunctionData('claim') as Hex),
        tx(n, dave, POOL, pool.encodeFunctionData('claimRewards', [op1]) as Hex),
        tx(n, ops[2]!, POOL, pool.encodeFunctionData('claimRewards', [op2]) as Hex),
      ]);
      const ret = res.txResults.map((r) => BigInt(`0x${Buffer.from(r.data).toString('hex') || '0'}`));
      assert.deepEqual(ret, [pays.alice, ETH, pays.bob, pays.dave, pays.op2]);
      const r = await n.ex.getBlockReceipts(BigInt(n.height));
      const fee = (i: number) => BigInt(r[i]!.gasUsed) * BigInt(r[i]!.effectiveGasPrice);
      assert.equal(await balance(n, addr(alice)), before.get(addr(alice))! + pays.alice - fee(0));
      assert.equal(await balance(n, addr(bob)), before.get(addr(bob))! + ETH + pays.bob - fee(1) - fee(2));
      assert.equal(await balance(n, addr(dave)), before.get(addr(dave))! + pays.dave - fee(3));
      assert.equal(await balance(n, op2), before.get(op2)! + pays.op2 - fee(4));
      // The model books the claims, then the claim block's own split.
      for (const who of [addr(alice), addr(bob)]) {
        m.bookLocker(who);
        m.lockBooked.set(who, 0n);
      }
      m.locks.delete(addr(bob));
      for (const [d, op] of [
        [addr(dave), op1],
        [op2, op2],
      ] as const) {
        m.bookDelegation(d, op);
        m.delBooked.set(`${d}|${op}`, 0n);
      }
      m.commission.set(op2, 0n);
      m.block(nowOf(n), await feesOf(n));
      await check('after the claims');
      assert.equal(await refusal(n, bob, 'claim'), `${addr(bob)} has no reward to claim`);
    } finally {
      await n.ex.close();
    }
  });
});

const REWARD_USER_SOL = `
// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.20;
import {IRewardStake, REWARD_STAKE} from "./IRewardStake.sol";

contract RewardUser {
    function lockFor(uint256 unlockTime) external payable returns (uint256) {
        return REWARD_STAKE.lock{value: msg.value}(unlockTime);
    }

    function myWeight() external view returns (uint256) {
        return REWARD_STAKE.weightOf(address(this));
    }

    function viaDelegatecall() external returns (bool ok, bytes memory ret) {
        (ok, ret) = address(REWARD_STAKE).delegatecall(abi.encodeCall(IRewardStake.claim, ()));
    }

    function viaStaticcall() external view returns (bool ok, bytes memory ret) {
        (ok, ret) = address(REWARD_STAKE).staticcall(abi.encodeCall(IRewardStake.claim, ()));
    }
}
`;

describe('reward stake: the Solidity interface (contracts/IRewardStake.sol) and a restart', () => {
  const iface = readFileSync(new URL('../../../contracts/IRewardStake.sol', import.meta.url), 'utf8');
  const out = compileSolidity({ 'IRewardStake.sol': iface, 'RewardUser.sol': REWARD_USER_SOL });
  const reason = (ret: string) =>
    new Interface(['function Error(string)']).decodeFunctionData('Error', ret)[0] as string;

  it('declares exactly the functions and events the precompile answers', () => {
    const abi = new Interface(out.IRewardStake!.abi as never);
    const declared: string[] = [];
    abi.forEachFunction((f) => declared.push(f.format('sighash')));
    assert.deepEqual(declared.sort(), rewardFunctions().sort());
    const evs: string[] = [];
    abi.forEachEvent((e) => evs.push(e.format('sighash')));
    const ours: string[] = [];
    events.forEachEvent((e) => ours.push(e.format('sighash')));
    assert.deepEqual(evs.sort(), ours.sort());
  });

  it('a contract locks through the interface; delegatecall and a write in a static call are refused', async () => {
    const n = await start(undefined);
    try {
      const user = new Interface(out.RewardUser!.abi as never);
      const nonce = n.nonces.get(alice) ?? 0n;
      n.nonces.set(alice, nonce + 1n);
      await block(n, [signTx(alice, { nonce, to: null, data: out.RewardUser!.bytecode, gas: 2_000_000n })]);
      const deployed = (await n.ex.getBlockReceipts(BigInt(n.height)))[0]!.contractAddress as Hex;
      const t = nowOf(n) + 1n;
      await block(n, [
        tx(n, alice, deployed, user.encodeFunctionData('lockFor', [t + 10n * WEEK]) as Hex, ETH),
      ]);
      const end = ((t + 10n * WEEK) / WEEK) * WEEK;
      assert.deepEqual([...(await view(n, REWARD, stake, 'lockOf', [deployed.toLowerCase()]))], [ETH, end]);
      assert.equal(await one(n, deployed, user, 'myWeight'), (ETH * (end - nowOf(n))) / MAX_LOCK);
      const [okD, retD] = await view(n, deployed, user, 'viaDelegatecall');
      assert.equal(okD, false);
      assert.equal(reason(retD), 'the reward stake cannot be reached by delegatecall or callcode');
      const [okS, retS] = await view(n, deployed, user, 'viaStaticcall');
      assert.equal(okS, false);
      assert.equal(reason(retS), 'claim changes state and cannot run in a static call');
    } finally {
      await n.ex.close();
    }
  });

  it('locks, accumulators and rewards survive a restart on RocksDB and keep accruing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-rewards-'));
    try {
      const kv = await RocksKV.open(dir);
      const n = await start({ block_reward: ETH.toString() }, kv);
      const t = nowOf(n) + 1n;
      await block(n, [tx(n, alice, REWARD, stake.encodeFunctionData('lock', [t + 8n * WEEK]) as Hex, ETH)]);
      await block(n);
      const pending = await one(n, REWARD, stake, 'pendingRewards', [addr(alice)]);
      assert.ok(pending > 0n);
      await n.ex.close();
      await kv.close();
      const kv2 = await RocksKV.open(dir);
      const ex = await Executor.open(executorOptions(kv2, new EventBus()));
      const m: Net = { ...n, ex };
      try {
        assert.equal(await one(m, REWARD, stake, 'pendingRewards', [addr(alice)]), pending);
        const carry = await one(m, REWARD, stake, 'undistributed');
        await block(m);
        const after = await one(m, REWARD, stake, 'pendingRewards', [addr(alice)]);
        // Alice is the only locker: the lockers' half (default validator_share 0.5) of the next
        // block's 1 BTC and the carry, less at most one unit of rounding.
        const lockers = ETH + carry - (ETH + carry) / 2n;
        assert.ok(after - pending <= lockers && after - pending >= lockers - 1n, `${after - pending}`);
      } finally {
        await ex.close();
        await kv2.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the fee split: rounding never creates BTC', () => {
  it('random locks, delegations, undelegations, claims and odd amounts: the reward account always holds every claim', async () => {
    const n = await start({ validator_share: '0.333333333333333333', block_reward: '999999999999999937' });
    let seed = 11n;
    const rnd = (m: bigint) => {
      seed = (seed * 6364136223846793005n + 1442695040888963407n) % 2n ** 64n;
      return (seed >> 11n) % m;
    };
    const people = [alice, bob, dave];
    const opsHex = ops.map(addr);
    const owedNow = async () => {
      let owed =
        (await one(n, REWARD, stake, 'totalLocked')) + (await one(n, REWARD, stake, 'undistributed'));
      for (const k of people) {
        owed += await one(n, REWARD, stake, 'pendingRewards', [addr(k)]);
        for (const op of opsHex) owed += await one(n, POOL, pool, 'pendingRewards', [addr(k), op]);
      }
      for (const op of opsHex) {
        owed += await one(n, POOL, pool, 'pendingCommission', [op]);
        owed += await one(n, POOL, pool, 'pendingRewards', [op, op]);
      }
      return owed;
    };
    try {
      const genesisSupply = n.ex.totalSupply();
      const done = new Map<string, number>();
      const did = (what: string) => done.set(what, (done.get(what) ?? 0) + 1);
      for (let b = 0; b < 40; b++) {
        if (rnd(4n) === 0n) n.time += rnd(3n * WEEK) * 1_000_000_000n;
        const txs: Uint8Array[] = [];
        for (const k of people) {
          const op = opsHex[Number(rnd(3n))]!;
          const t = nowOf(n) + 1n;
          const [amount, end] = await view(n, REWARD, stake, 'lockOf', [addr(k)]);
          switch (rnd(6n)) {
            case 0n:
              txs.push(
                tx(n, k, POOL, pool.encodeFunctionData('delegate', [op]) as Hex, rnd(10n ** 18n) + 1n),
              );
              did('delegate');
              break;
            case 1n: {
              const have = await one(n, POOL, pool, 'delegationShares', [addr(k), op]);
              if (have > 1n) {
                txs.push(
                  tx(n, k, POOL, pool.encodeFunctionData('undelegate', [op, rnd(have / 2n) + 1n]) as Hex),
                );
                did('undelegate');
              }
              break;
            }
            case 2n:
              if (amount === 0n) {
                const unlock = t + 2n * WEEK + rnd(20n * WEEK);
                txs.push(
                  tx(n, k, REWARD, stake.encodeFunctionData('lock', [unlock]) as Hex, rnd(10n ** 18n) + 1n),
                );
                did('lock');
              } else if (end > t) {
                txs.push(
                  tx(n, k, REWARD, stake.encodeFunctionData('increaseAmount') as Hex, rnd(10n ** 17n) + 1n),
                );
                did('increase');
              } else {
                txs.push(tx(n, k, REWARD, stake.encodeFunctionData('withdraw') as Hex));
                did('withdraw');
              }
              break;
            case 3n:
              if ((await one(n, REWARD, stake, 'pendingRewards', [addr(k)])) > 0n) {
                txs.push(tx(n, k, REWARD, stake.encodeFunctionData('claim') as Hex));
                did('claim');
              }
              break;
            case 4n:
              if ((await one(n, POOL, pool, 'pendingRewards', [addr(k), op])) > 0n) {
                txs.push(tx(n, k, POOL, pool.encodeFunctionData('claimRewards', [op]) as Hex));
                did('claimRewards');
              }
              break;
            default:
              break;
          }
        }
        const payerNonce = n.nonces.get(payer) ?? 0n;
        n.nonces.set(payer, payerNonce + 1n);
        txs.push(
          signTx(payer, {
            nonce: payerNonce,
            to: addr(sink),
            value: 1n,
            maxFee: 100n * GWEI,
            tip: rnd(5n * GWEI) + 1n,
          }),
        );
        await block(n, txs);
        const held = await balance(n, REWARD);
        const owed = await owedNow();
        assert.ok(held >= owed, `block ${n.height}: the reward account holds ${held}, owes ${owed}`);
        assert.ok(held - owed < 1000n, `block ${n.height}: rounding remainder ${held - owed}`);
      }
      // Everybody claims everything: what is left is the locks, the carry and the rounding remainder.
      const txs: Uint8Array[] = [];
      for (const k of [...people, ...ops]) {
        if ((await one(n, REWARD, stake, 'pendingRewards', [addr(k)])) > 0n)
          txs.push(tx(n, k, REWARD, stake.encodeFunctionData('claim') as Hex));
        for (const op of opsHex) {
          const p = await one(n, POOL, pool, 'pendingRewards', [addr(k), op]);
          const c = addr(k) === op ? await one(n, POOL, pool, 'pendingCommission', [op]) : 0n;
          if (p + c > 0n) txs.push(tx(n, k, POOL, pool.encodeFunctionData('claimRewards', [op]) as Hex));
        }
      }
      await block(n, txs);
      const held = await balance(n, REWARD);
      assert.ok(held >= (await owedNow()));
      assert.ok(held - (await owedNow()) < 1000n);
      assert.equal(n.ex.totalSupply(), genesisSupply + 999999999999999937n * BigInt(n.height));
      // The run did what it is about (the seed is fixed: these counts never change).
      for (const what of ['delegate', 'undelegate', 'lock', 'increase', 'withdraw', 'claim', 'claimRewards'])
        assert.ok((done.get(what) ?? 0) >= 1, `${what} was never tried: ${JSON.stringify([...done])}`);
    } finally {
      await n.ex.close();
    }
  });
});
