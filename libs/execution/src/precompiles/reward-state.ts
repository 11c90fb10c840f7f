// The reward stake and the fee split (issue 25; docs/staking.md "Reward stake"). Everything lives
// in the storage of the reward account 0x7b7c…0016, and every base unit it owes is its balance:
// the locked BTC, the lockers' unclaimed rewards, the validators' commissions, the delegators'
// unclaimed rewards and the undistributed carry.
//
// Vote escrow. A lock of amount a ending at e (a whole week) weighs a × (e − t) / MAX_LOCK at time
// t. The pool keeps S = Σ a and B = Σ a × e over the locks that have not ended, so the total raw
// weight Σ a × (e − t) is B − t × S at any t, and each week boundary subtracts the locks that end
// there (expiring[w]); a checkpoint walks the weeks since the last one, so the total is O(1)
// amortised per block.
//
// Accumulators. A block's locker part L at time t with total raw weight W adds r = ⌊L × 10^27 / W⌋
// to A1 and t × r to A2. A lock's share of that block is a × (e − t) × r / 10^27, so over any run
// of blocks it earns a × (e × ΔA1 − ΔA2) / 10^27: two subtractions, whatever the number of blocks.
// When a week boundary is crossed (A1, A2) are kept for it: a lock that ended there earns up to
// that point and no further. The validators' part V adds g = ⌊V × 10^27 / P⌋ to a reward per unit
// of power (P: the total power handed to consensus). A validator's power only changes at the end
// of a block, and its rewards are booked just before (and before its shares or commission change,
// and when anything of it is claimed): power × Δ / 10^27, of which it keeps its commission and adds
// the rest to its reward per share (×10^27); a delegation earns shares × Δ. So a block costs O(1)
// whatever the number of validators, locks or delegations.
// Every division rounds down, and what the rounding of a block (or of a booking) leaves over goes
// to the carry, which the next block distributes: no base unit is ever owed twice, none is lost.

import type { AbciEvent } from '@noded/types';
import { bigIntToBytes, bytesToBigInt, fromHex, toKey } from '../bytes.js';
import { namedSlots } from './slots.js';
import { FRACTION_ONE, type SlotStore, type StakingStore } from './staking-state.js';

export const REWARD_ADDRESS_HEX = '0x7b7c000000000000000000000000000000000016';
export const REWARD_ADDRESS = fromHex(REWARD_ADDRESS_HEX);
export const REWARD_KEY = toKey(REWARD_ADDRESS);

/** Locks end on whole weeks (seconds since the Unix epoch, a multiple of WEEK). */
export const WEEK = 604_800n;
/** The longest lock: four years of 365 days; a lock this long weighs its amount. */
export const MAX_LOCK = 4n * 365n * 86_400n;
/** The scale of the accumulators (reward per unit of raw weight, per share). */
export const ACC_SCALE = 10n ** 27n;
const BPS = 10_000n;

/** What the fee split needs of a state besides slots. */
export interface RewardState extends SlotStore {
  addBalance(addr: string, amount: bigint): Promise<void>;
}

export interface RewardParamValues {
  /** Parts of 10^18 of each block's rewards that go to the validators. */
  validatorShare: bigint;
  /** Base units minted every block. */
  blockReward: bigint;
}

export interface LockPosition {
  amount: bigint;
  /** Seconds; 0 when there is no lock. */
  end: bigint;
}

const slot = namedSlots('noded.rewards/');

const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b;

/** The week boundary at or before `t`. */
export const weekFloor = (t: bigint) => (t / WEEK) * WEEK;

/** Typed access to the reward account's slots. */
export class RewardStore {
  constructor(readonly state: SlotStore) {}

  private async num(s: string): Promise<bigint> {
    return bytesToBigInt(await this.state.readSlot(REWARD_KEY, s));
  }
  private put(s: string, v: bigint): void {
    this.state.writeSlot(REWARD_KEY, s, bigIntToBytes(v));
  }

  /** Whether this chain splits its fees (genesis wrote the reward account's params). */
  async enabled(): Promise<boolean> {
    return (await this.num(slot('enabled'))) === 1n;
  }
  async params(): Promise<RewardParamValues> {
    return { validatorShare: await this.num(slot('share')), blockReward: await this.num(slot('mint')) };
  }
  setParams(p: RewardParamValues): void {
    this.put(slot('enabled'), 1n);
    this.put(slot('share'), p.validatorShare);
    this.put(slot('mint'), p.blockReward);
  }

  // ------------------------------------------------------------------ vote escrow

  async lock(who: Uint8Array): Promise<LockPosition> {
    return { amount: await this.num(slot('lock.amount', who)), end: await this.num(slot('lock.end', who)) };
  }
  setLock(who: Uint8Array, l: LockPosition): void {
    this.put(slot('lock.amount', who), l.amount);
    this.put(slot('lock.end', who), l.end);
  }
  /** Base units in locks not withdrawn yet (ended ones included). */
  async totalLocked(): Promise<bigint> {
    return this.num(slot('locked'));
  }
  async addLocked(d: bigint): Promise<void> {
    this.put(slot('locked'), (await this.totalLocked()) + d);
  }

  /** Adds (or with a negative amount removes) a lock's terms from the running totals. */
  async addToTotals(amount: bigint, end: bigint): Promise<void> {
    this.put(slot('sum.a'), (await this.num(slot('sum.a'))) + amount);
    this.put(slot('sum.ae'), (await this.num(slot('sum.ae'))) + amount * end);
    this.put(slot('expiring', end), (await this.num(slot('expiring', end))) + amount);
  }

  /**
   * The totals at time `now`: walks the week boundaries since the last checkpoint, dropping the
   * locks that ended on them. With `write`, records the walk (and each boundary's accumulators).
   */
  async totalsAt(now: bigint, write: boolean): Promise<{ sumA: bigint; sumAE: bigint }> {
    let sumA = await this.num(slot('sum.a'));
    let sumAE = await this.num(slot('sum.ae'));
    const last = await this.num(slot('week'));
    const target = weekFloor(now);
    if (last === 0n) {
      // The first checkpoint: no lock can exist before it (every lock checkpoints first).
      if (write) this.put(slot('week'), target);
      return { sumA, sumAE };
    }
    if (target <= last) return { sumA, sumAE };
    let a1: bigint | undefined;
    let a2: bigint | undefined;
    for (let w = last + WEEK; w <= target; w += WEEK) {
      if (sumA === 0n) break; // nothing left to expire
      const ending = await this.num(slot('expiring', w));
      if (ending === 0n) continue;
      sumA -= ending;
      sumAE -= ending * w;
      if (write) {
        a1 ??= await this.num(slot('acc1'));
        a2 ??= await this.num(slot('acc2'));
        this.put(slot('snap1', w), a1);
        this.put(slot('snap2', w), a2);
      }
    }
    if (write) {
      this.put(slot('sum.a'), sumA);
      this.put(slot('sum.ae'), sumAE);
      this.put(slot('week'), target);
    }
    return { sumA, sumAE };
  }

  /** Σ a × (e − now) over the locks that have not ended: the total weight × MAX_LOCK. */
  async rawTotalWeight(now: bigint, write: boolean): Promise<bigint> {
    const { sumA, sumAE } = await this.totalsAt(now, write);
    return sumAE - now * sumA;
  }

  /** The accumulators a lock ending at `end` earns up to, at time `now`. */
  private async accUpTo(end: bigint, now: bigint): Promise<[bigint, bigint]> {
    // Ended, and the boundary already walked: the accumulators as they were when it was crossed.
    // Ended but not walked yet (the first call of the block that crosses it): nothing has been
    // distributed since, so the current ones are the same.
    if (end <= now && (await this.num(slot('week'))) >= end)
      return [await this.num(slot('snap1', end)), await this.num(slot('snap2', end))];
    return [await this.num(slot('acc1')), await this.num(slot('acc2'))];
  }

  /** A locker's rewards not claimed yet, at time `now`. */
  async lockerPending(who: Uint8Array, now: bigint): Promise<{ pending: bigint; acc: [bigint, bigint] }> {
    const stored = await this.num(slot('lock.pending', who));
    const { amount, end } = await this.lock(who);
    if (amount === 0n) return { pending: stored, acc: [0n, 0n] };
    const acc = await this.accUpTo(end, now);
    const e1 = await this.num(slot('lock.acc1', who));
    const e2 = await this.num(slot('lock.acc2', who));
    return { pending: stored + (amount * (end * (acc[0] - e1) - (acc[1] - e2))) / ACC_SCALE, acc };
  }

  /** Books a locker's rewards so far; its lock may change after this. */
  async settleLocker(who: Uint8Array, now: bigint): Promise<bigint> {
    const { pending, acc } = await this.lockerPending(who, now);
    this.put(slot('lock.pending', who), pending);
    this.put(slot('lock.acc1', who), acc[0]);
    this.put(slot('lock.acc2', who), acc[1]);
    return pending;
  }
  /** Starts a new lock's accumulators at the current ones (it earns from now on). */
  async startLocker(who: Uint8Array): Promise<void> {
    this.put(slot('lock.acc1', who), await this.num(slot('acc1')));
    this.put(slot('lock.acc2', who), await this.num(slot('acc2')));
  }
  setLockerPending(who: Uint8Array, v: bigint): void {
    this.put(slot('lock.pending', who), v);
  }

  // ------------------------------------------------------------------ validators and delegators

  /** The total power handed to consensus (Σ of the validators' recorded power). */
  async totalPower(): Promise<bigint> {
    return this.num(slot('power.total'));
  }

  /**
   * A validator's rewards not booked yet, split as they would be booked now: its commission and
   * the increase of its reward per share. `write` books them (and the rounding goes to the carry).
   */
  private async validatorAccrual(
    staking: StakingStore,
    operator: Uint8Array,
    write: boolean,
  ): Promise<{ commission: bigint; inc: bigint; booked: bigint }> {
    const acc = await this.num(slot('vacc'));
    const acc0 = await this.num(slot('v.acc0', operator));
    if (acc === acc0) return { commission: 0n, inc: 0n, booked: 0n };
    if (write) this.put(slot('v.acc0', operator), acc);
    const accrued = ((await staking.lastPower(operator)) * (acc - acc0)) / ACC_SCALE;
    if (accrued === 0n) return { commission: 0n, inc: 0n, booked: 0n };
    let commission = (accrued * (await staking.commissionBps(operator))) / BPS;
    let rest = accrued - commission;
    const shares = await staking.totalShares(operator);
    if (shares === 0n) {
      commission += rest; // nobody else to pay (a validator with power has shares)
      rest = 0n;
    }
    const inc = (rest * ACC_SCALE) / (shares === 0n ? 1n : shares);
    const dust = rest - ceilDiv(inc * shares, ACC_SCALE);
    // What the validator's delegators and operator are owed by this booking: the outstanding rewards.
    const booked = accrued - dust;
    if (write) {
      if (commission > 0n) this.setCommission(operator, (await this.commission(operator)) + commission);
      if (inc > 0n) this.put(slot('rps', operator), (await this.num(slot('rps', operator))) + inc);
      if (dust > 0n) this.put(slot('carry'), (await this.carry()) + dust);
      if (booked > 0n) this.put(slot('outst', operator), (await this.num(slot('outst', operator))) + booked);
    }
    return { commission, inc, booked };
  }

  /**
   * The validator's outstanding rewards (the Cosmos SDK's ValidatorOutstandingRewards): everything
   * booked to it and not claimed yet, its commission included, plus what a booking now would add.
   * At least Σ its delegations' pendingRewards + pendingCommission; the difference is the per
   * delegation round-down (under a base unit per booking of each delegation).
   */
  async outstanding(staking: StakingStore, operator: Uint8Array): Promise<bigint> {
    const { booked } = await this.validatorAccrual(staking, operator, false);
    return (await this.num(slot('outst', operator))) + booked;
  }
  /**
   * Takes a claim out of the validator's outstanding rewards. Floored at 0: on a chain whose
   * rewards were booked before the record existed, the first claims may exceed it.
   */
  async reduceOutstanding(operator: Uint8Array, paid: bigint): Promise<void> {
    const have = await this.num(slot('outst', operator));
    this.put(slot('outst', operator), have > paid ? have - paid : 0n);
  }

  /** Books a validator's rewards up to now; call before its power, shares or commission change. */
  async settleValidator(staking: StakingStore, operator: Uint8Array): Promise<void> {
    await this.validatorAccrual(staking, operator, true);
  }

  /** The end of a block changes a validator's power: book what it earned with the old one. */
  async powerChange(staking: StakingStore, operator: Uint8Array, from: bigint, to: bigint): Promise<void> {
    await this.settleValidator(staking, operator);
    this.put(slot('power.total'), (await this.totalPower()) - from + to);
  }

  /** The validator's reward per share, its unbooked part included. */
  async rewardPerShare(staking: StakingStore, operator: Uint8Array): Promise<bigint> {
    const { inc } = await this.validatorAccrual(staking, operator, false);
    return (await this.num(slot('rps', operator))) + inc;
  }
  /** The validator's commission not claimed yet, its unbooked part included. */
  async pendingCommission(staking: StakingStore, operator: Uint8Array): Promise<bigint> {
    const { commission } = await this.validatorAccrual(staking, operator, false);
    return (await this.commission(operator)) + commission;
  }
  async commission(operator: Uint8Array): Promise<bigint> {
    return this.num(slot('commission', operator));
  }
  setCommission(operator: Uint8Array, v: bigint): void {
    this.put(slot('commission', operator), v);
  }

  /** A delegation's rewards not claimed yet (its shares have not changed since it was last booked). */
  async delegationPending(
    staking: StakingStore,
    delegator: Uint8Array,
    operator: Uint8Array,
  ): Promise<bigint> {
    const stored = await this.num(slot('del.pending', delegator, operator));
    const shares = await staking.delegationShares(delegator, operator);
    if (shares === 0n) return stored;
    const rps = await this.rewardPerShare(staking, operator);
    const entry = await this.num(slot('del.rps', delegator, operator));
    return stored + (shares * (rps - entry)) / ACC_SCALE;
  }
  /**
   * Books the validator's and then the delegation's rewards; call before the delegation's shares
   * change and to claim. Returns the delegation's pending rewards.
   */
  async settleDelegation(
    staking: StakingStore,
    delegator: Uint8Array,
    operator: Uint8Array,
  ): Promise<bigint> {
    await this.settleValidator(staking, operator);
    const pending = await this.delegationPending(staking, delegator, operator);
    this.put(slot('del.pending', delegator, operator), pending);
    this.put(slot('del.rps', delegator, operator), await this.num(slot('rps', operator)));
    return pending;
  }
  setDelegationPending(delegator: Uint8Array, operator: Uint8Array, v: bigint): void {
    this.put(slot('del.pending', delegator, operator), v);
  }

  /** Base units the last blocks' rounding left over: the next block distributes them. */
  async carry(): Promise<bigint> {
    return this.num(slot('carry'));
  }

  // ------------------------------------------------------------------ one block

  /**
   * Splits one block's rewards: `fees` (already in the reward account's balance) plus the
   * block reward (minted here) plus the carry. Returns the base units minted.
   */
  async distribute(
    state: RewardState,
    now: bigint,
    fees: bigint,
  ): Promise<{ minted: bigint; events: AbciEvent[] }> {
    const p = await this.params();
    const minted = p.blockReward;
    if (minted > 0n) await state.addBalance(REWARD_KEY, minted);
    const carried = await this.carry();
    const total = fees + minted + carried;
    const raw = await this.rawTotalWeight(now, true);
    if (total === 0n) return { minted, events: [] };
    let carry = 0n;
    // With no locker weight the whole block goes to the validators: they secured it.
    let forValidators = raw === 0n ? total : (total * p.validatorShare) / FRACTION_ONE;
    const forLockers = total - forValidators;
    if (forLockers > 0n) {
      const r = (forLockers * ACC_SCALE) / raw;
      if (r > 0n) {
        this.put(slot('acc1'), (await this.num(slot('acc1'))) + r);
        this.put(slot('acc2'), (await this.num(slot('acc2'))) + now * r);
      }
      // The lockers can claim at most r × raw / 10^27 of this block; the rest is carried.
      carry += forLockers - ceilDiv(r * raw, ACC_SCALE);
    }
    const power = await this.totalPower();
    if (power === 0n) {
      carry += forValidators;
      forValidators = 0n;
    } else {
      const g = (forValidators * ACC_SCALE) / power;
      if (g > 0n) this.put(slot('vacc'), (await this.num(slot('vacc'))) + g);
      carry += forValidators - ceilDiv(g * power, ACC_SCALE);
    }
    this.put(slot('carry'), carry);
    return {
      minted,
      events: [
        {
          type: 'rewards',
          attributes: [
            { key: 'fees', value: fees.toString(), index: true },
            { key: 'minted', value: minted.toString(), index: true },
            { key: 'carried_in', value: carried.toString(), index: false },
            { key: 'validators', value: forValidators.toString(), index: false },
            { key: 'lockers', value: forLockers.toString(), index: false },
            { key: 'carry', value: carry.toString(), index: false },
          ],
        },
      ],
    };
  }
}

/**
 * The reward account's genesis storage: the params and the genesis validators' total power (no
 * lock exists at genesis).
 */
export function genesisRewardStorage(p: RewardParamValues, totalPower: bigint): Map<string, Uint8Array> {
  const m = new Map<string, Uint8Array>();
  const put = (s: string, v: bigint) => {
    if (v !== 0n) m.set(s, bigIntToBytes(v));
  };
  put(slot('enabled'), 1n);
  put(slot('share'), p.validatorShare);
  put(slot('mint'), p.blockReward);
  put(slot('power.total'), totalPower);
  return m;
}
