// The validator pool precompile at 0x7b7c…0011 (issue 25): bonding BTC to validators from any
// Ethereum wallet. The ABI is contracts/IValidatorPool.sol; the state is staking-state.ts.
//
// EthereumJS hands a precompile only its calldata and gas, not the frame's caller, value or static
// flag; call-frame.ts tells it (trackCallFrames on every VM). A delegatecall or callcode into the
// pool is refused: it would run the pool's logic with another account's balance.

import { EVMError, type ExecResult, type PrecompileInput } from '@ethereumjs/evm';
import { Address } from '@ethereumjs/util';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bigIntToFixed, concat, equal, toHex, toKey } from '../bytes.js';
import type { JournaledState } from '../state/journaled.js';
import { type CallFrame, currentFrame } from './call-frame.js';
import { REWARD_KEY, RewardStore } from './reward-state.js';
import {
  AbiDecodeError,
  type AbiValue,
  ArgReader,
  encodeAbi,
  encodeError,
  selectorOf,
  topicOf,
} from './staking-abi.js';
import {
  consensusAddressOf,
  MAX_DELEGATOR_VALIDATORS,
  MAX_UNBONDING_ENTRIES,
  PARAM_NAMES,
  type RedelegationEntry,
  STAKING_ADDRESS,
  StakingStore,
  type UnbondingEntry,
} from './staking-state.js';

export { STAKING_ADDRESS, STAKING_ADDRESS_HEX } from './staking-state.js';

const MAX_MONIKER_BYTES = 70;
const MAX_COMMISSION_BPS = 10_000n;

/** Gas of each function: flat, above the cost of the slots it touches in EVM terms. */
const GAS = {
  write: 60_000n,
  create: 120_000n,
  view: 4_000n,
  perItem: 2_500n,
  /** claimAllRewards: per validator of the caller's list (a booking reads ~10 slots, writes ~6). */
  perClaim: 15_000n,
} as const;

type Ctx = {
  store: StakingStore;
  state: JournaledState;
  frame: CallFrame;
  args: ArgReader;
  /** The block time in seconds (read lazily: a run ahead of the proposal does not know it yet). */
  now: () => bigint;
  /** The block height. */
  blockNumber: () => bigint;
  logs: Array<[Uint8Array, Uint8Array[], Uint8Array]>;
};
type Handler = (c: Ctx) => Promise<{ out: Uint8Array; gas: bigint }>;

/** A refusal with a reason: the frame reverts with Error(reason). */
class Refusal extends Error {}

const addrHex = (a: Uint8Array) => toHex(a);
const word = (n: bigint) => bigIntToFixed(n, 32);
const addrTopic = (a: Uint8Array) => concat(new Uint8Array(12), a);

const EVENTS = {
  created: topicOf('ValidatorCreated(address,bytes32,string,uint16,uint256)'),
  edited: topicOf('ValidatorEdited(address,string,uint16)'),
  delegated: topicOf('Delegated(address,address,uint256)'),
  undelegated: topicOf('Undelegated(address,address,uint256,uint256)'),
  withdrawn: topicOf('Withdrawn(address,uint256)'),
  unjailed: topicOf('Unjailed(address)'),
  rewardsClaimed: topicOf('RewardsClaimed(address,address,uint256,uint256)'),
  allRewardsClaimed: topicOf('AllRewardsClaimed(address,uint256,uint256)'),
  redelegated: topicOf('Redelegated(address,address,address,uint256,uint256)'),
};

/**
 * Books the rewards a delegation (and its validator) earned so far (reward-state.ts) before its
 * shares change: the reward per share is only right for shares that did not change since.
 */
async function settleRewards(c: Ctx, delegator: Uint8Array, op: Uint8Array): Promise<void> {
  const rewards = new RewardStore(c.state);
  if (!(await rewards.enabled())) return;
  await rewards.settleDelegation(c.store, delegator, op);
}

/**
 * Keeps the delegator's list of validators right after its shares of `op` changed: listed while it
 * has shares or unclaimed rewards there (a delegation from before the list existed joins it here),
 * dropped otherwise.
 */
async function keepListed(c: Ctx, who: Uint8Array, op: Uint8Array): Promise<void> {
  if ((await c.store.delegationShares(who, op)) > 0n) {
    await c.store.addDelegatorValidator(who, op);
    return;
  }
  const rewards = new RewardStore(c.state);
  const pending = (await rewards.enabled()) ? await rewards.delegationPending(c.store, who, op) : 0n;
  if (pending > 0n) await c.store.addDelegatorValidator(who, op);
  else await c.store.removeDelegatorValidator(who, op);
}

/**
 * Shares to burn for taking `amount` out of a validator with `tokens` and `total` shares, rounded
 * up so that what leaves is never worth more than the shares were (the rounding stays with the
 * other shares); the last shares take every token left, the dust included.
 */
function sharesToBurn(amount: bigint, tokens: bigint, total: bigint): { burned: bigint; paid: bigint } {
  const burned = (amount * total + tokens - 1n) / tokens;
  return { burned, paid: burned === total ? tokens : amount };
}

function requireWrite(c: Ctx, fn: string, payable: boolean): void {
  if (c.frame.isStatic) throw new Refusal(`${fn} changes state and cannot run in a static call`);
  if (!payable && c.frame.value !== 0n)
    throw new Refusal(`${fn} is not payable (sent ${c.frame.value} base units)`);
}

function isEd25519Key(key: Uint8Array): boolean {
  try {
    ed25519.Point.fromBytes(key);
    return true;
  } catch {
    return false;
  }
}

async function moveFromPool(state: JournaledState, to: Uint8Array, amount: bigint): Promise<void> {
  await state.addBalance(toKey(STAKING_ADDRESS), -amount);
  await state.addBalance(toKey(to), amount);
}

const HANDLERS: Record<string, { name: string; run: Handler }> = {};
function fn(signature: string, run: Handler): void {
  HANDLERS[selectorOf(signature)] = { name: signature, run };
}

fn('createValidator(bytes32,string,uint16)', async (c) => {
  requireWrite(c, 'createValidator', true);
  const pubKey = c.args.bytes32(0);
  const moniker = c.args.string(1, MAX_MONIKER_BYTES);
  const commission = c.args.uint(2, 16);
  const op = c.frame.caller.bytes;
  const p = await c.store.params();
  if (commission > MAX_COMMISSION_BPS) throw new Refusal(`commissionBps ${commission} is over 10000 (100%)`);
  if (await c.store.exists(op)) throw new Refusal(`${addrHex(op)} already operates a validator`);
  if (!isEd25519Key(pubKey))
    throw new Refusal(`consensusPubKey ${toHex(pubKey)} is not an ed25519 public key`);
  const other = await c.store.operatorOfKey(pubKey);
  if (other)
    throw new Refusal(`consensusPubKey ${toHex(pubKey)} is already the key of validator ${addrHex(other)}`);
  if (c.frame.value < p.minSelfBond)
    throw new Refusal(`self-bond ${c.frame.value} is below min_self_bond ${p.minSelfBond}`);
  await c.store.create(op, pubKey, moniker, Number(commission));
  c.store.setBonded(op, c.frame.value);
  c.store.setTotalShares(op, c.frame.value);
  c.store.setDelegationShares(op, op, c.frame.value);
  await c.store.addDelegatorValidator(op, op);
  c.store.markDirty();
  c.logs.push([
    STAKING_ADDRESS,
    [EVENTS.created, addrTopic(op)],
    encodeAbi([
      { t: 'bytes32', v: pubKey },
      { t: 'string', v: moniker },
      { t: 'uint', v: commission },
      { t: 'uint', v: c.frame.value },
    ]),
  ]);
  return { out: new Uint8Array(0), gas: GAS.create };
});

fn('editValidator(string,uint16)', async (c) => {
  requireWrite(c, 'editValidator', false);
  const moniker = c.args.string(0, MAX_MONIKER_BYTES);
  const commission = c.args.uint(1, 16);
  const op = c.frame.caller.bytes;
  if (!(await c.store.exists(op))) throw new Refusal(`${addrHex(op)} operates no validator`);
  if (commission > MAX_COMMISSION_BPS) throw new Refusal(`commissionBps ${commission} is over 10000 (100%)`);
  // The rewards earned at the old commission are booked at it.
  const rewards = new RewardStore(c.state);
  if (await rewards.enabled()) await rewards.settleValidator(c.store, op);
  await c.store.setDescription(op, moniker, Number(commission));
  c.logs.push([
    STAKING_ADDRESS,
    [EVENTS.edited, addrTopic(op)],
    encodeAbi([
      { t: 'string', v: moniker },
      { t: 'uint', v: commission },
    ]),
  ]);
  return { out: new Uint8Array(0), gas: GAS.write };
});

fn('delegate(address)', async (c) => {
  requireWrite(c, 'delegate', true);
  const op = c.args.address(0);
  const who = c.frame.caller.bytes;
  if (!(await c.store.exists(op))) throw new Refusal(`no validator is operated by ${addrHex(op)}`);
  if (c.frame.value === 0n) throw new Refusal('delegate needs a value (the BTC to bond)');
  if ((await c.store.jailed(op)) && (await c.store.signingInfo(op)).tombstoned)
    throw new Refusal(`validator ${addrHex(op)} is tombstoned (double-signed) and takes no delegation`);
  const tokens = await c.store.bonded(op);
  const total = await c.store.totalShares(op);
  if (tokens === 0n && total > 0n)
    throw new Refusal(
      `validator ${addrHex(op)} has shares but no tokens left (slashed to 0); it takes no delegation`,
    );
  // Shares at the current rate, rounded down: the new delegation is never worth more than it paid.
  const minted = total === 0n ? c.frame.value : (c.frame.value * total) / tokens;
  if (minted === 0n)
    throw new Refusal(`delegation of ${c.frame.value} base units buys less than one share of ${addrHex(op)}`);
  if ((await c.store.addDelegatorValidator(who, op)) === 'full')
    throw new Refusal(
      `${addrHex(who)} already delegates to (or has unclaimed rewards from) ${MAX_DELEGATOR_VALIDATORS} validators, the most one delegator may; undelegate fully from one and claim its rewards first`,
    );
  await settleRewards(c, who, op);
  c.store.setDelegationShares(who, op, (await c.store.delegationShares(who, op)) + minted);
  c.store.setTotalShares(op, total + minted);
  c.store.setBonded(op, tokens + c.frame.value);
  c.store.markDirty();
  c.logs.push([STAKING_ADDRESS, [EVENTS.delegated, addrTopic(who), addrTopic(op)], word(c.frame.value)]);
  return { out: new Uint8Array(0), gas: GAS.write };
});

fn('undelegate(address,uint256)', async (c) => {
  requireWrite(c, 'undelegate', false);
  const op = c.args.address(0);
  const amount = c.args.uint(1);
  const who = c.frame.caller.bytes;
  if (amount === 0n) throw new Refusal('undelegate amount must be > 0');
  const have = await c.store.delegation(who, op);
  if (amount > have)
    throw new Refusal(
      `undelegate amount ${amount} is more than the delegation of ${addrHex(who)} to ${addrHex(op)} (${have})`,
    );
  const tokens = await c.store.bonded(op);
  const total = await c.store.totalShares(op);
  const owned = await c.store.delegationShares(who, op);
  // Shares burned are rounded up, so the amount paid out is never worth more than they were: the
  // remainder of the rounding stays with the validator's other shares. amount <= have keeps this
  // at most the shares owned (have = floor(owned × tokens / total)).
  const { burned, paid } = sharesToBurn(amount, tokens, total);
  const entries = await c.store.unbondings(who);
  if (entries.length >= MAX_UNBONDING_ENTRIES)
    throw new Refusal(
      `${addrHex(who)} already has ${MAX_UNBONDING_ENTRIES} unbonding entries; withdrawUnbonded() the matured ones first`,
    );
  const p = await c.store.params();
  const completion = c.now() + p.unbondingTime;
  await settleRewards(c, who, op);
  c.store.setDelegationShares(who, op, owned - burned);
  await keepListed(c, who, op);
  c.store.setTotalShares(op, total - burned);
  c.store.setBonded(op, tokens - paid);
  entries.push({ operator: op, amount: paid, completionTime: completion, height: c.blockNumber() });
  await c.store.setUnbondings(who, entries);
  await c.store.noteUnbondingDelegator(op, who);
  await c.store.enqueueMaturity('ubd', who, op, completion);
  c.store.markDirty();
  c.logs.push([
    STAKING_ADDRESS,
    [EVENTS.undelegated, addrTopic(who), addrTopic(op)],
    concat(word(paid), word(completion)),
  ]);
  return { out: word(completion), gas: GAS.write };
});

fn('withdrawUnbonded()', async (c) => {
  requireWrite(c, 'withdrawUnbonded', false);
  const who = c.frame.caller.bytes;
  const entries = await c.store.unbondings(who);
  const keep: UnbondingEntry[] = [];
  let total = 0n;
  const now = c.now();
  for (const e of entries) {
    if (e.completionTime <= now) total += e.amount;
    else keep.push(e);
  }
  if (total === 0n) {
    const next = keep.reduce<bigint | undefined>(
      (m, e) => (m === undefined || e.completionTime < m ? e.completionTime : m),
      undefined,
    );
    throw new Refusal(
      next === undefined
        ? `${addrHex(who)} has nothing unbonding`
        : `no unbonding entry of ${addrHex(who)} has matured yet (block time ${now}, the next completes at ${next})`,
    );
  }
  await c.store.setUnbondings(who, keep);
  await moveFromPool(c.state, who, total);
  c.logs.push([STAKING_ADDRESS, [EVENTS.withdrawn, addrTopic(who)], word(total)]);
  return { out: word(total), gas: GAS.write + GAS.perItem * BigInt(entries.length) };
});

/**
 * The Cosmos SDK's bond status of a validator at block time `now`: bonded while in the set handed
 * to consensus; unbonding from the end of the block that took it out (of time T) until
 * T + unbonding_time (`end`); unbonded after that, or when it never was in the set. A validator
 * that left the set before the unbonding end was recorded (a pool written by an earlier version)
 * and that signed blocks is unbonding with an unknown end (0).
 */
async function bondStatus(
  store: StakingStore,
  op: Uint8Array,
  now: bigint,
): Promise<{ status: 'bonded' | 'unbonding' | 'unbonded'; end: bigint }> {
  if ((await store.lastPower(op)) > 0n) return { status: 'bonded', end: 0n };
  const end = await store.unbondingEnd(op);
  if (end > now) return { status: 'unbonding', end };
  if (end === 0n && (await store.signingInfo(op)).seen) return { status: 'unbonding', end: 0n };
  return { status: 'unbonded', end };
}

/** The SDK's BondStatus numbers (validatorStatus). */
const BOND_STATUS = { unbonded: 1n, unbonding: 2n, bonded: 3n } as const;

/**
 * When a redelegation away from `src` matures (the Cosmos SDK's getBeginInfo): from a bonded
 * validator at block time + unbonding_time; from an unbonding one at the end of its own unbonding
 * (block time + unbonding_time when that end is unknown); from an unbonded one at once, with no
 * entry: its stake signs nothing a slash could still reach.
 */
async function redelegationBegin(
  c: Ctx,
  src: Uint8Array,
  now: bigint,
): Promise<{ completion: bigint; now: boolean }> {
  const s = await bondStatus(c.store, src, now);
  if (s.status === 'unbonded') return { completion: now, now: true };
  if (s.status === 'unbonding' && s.end > 0n) return { completion: s.end, now: false };
  return { completion: now + (await c.store.params()).unbondingTime, now: false };
}

fn('redelegate(address,address,uint256)', async (c) => {
  requireWrite(c, 'redelegate', false);
  const src = c.args.address(0);
  const dst = c.args.address(1);
  const amount = c.args.uint(2);
  const who = c.frame.caller.bytes;
  if (amount === 0n) throw new Refusal('redelegate amount must be > 0');
  if (equal(src, dst)) throw new Refusal(`cannot redelegate from ${addrHex(src)} to itself`);
  if (!(await c.store.exists(src))) throw new Refusal(`no validator is operated by ${addrHex(src)}`);
  if (!(await c.store.exists(dst))) throw new Refusal(`no validator is operated by ${addrHex(dst)}`);
  if ((await c.store.jailed(dst)) && (await c.store.signingInfo(dst)).tombstoned)
    throw new Refusal(`validator ${addrHex(dst)} is tombstoned (double-signed) and takes no delegation`);
  const have = await c.store.delegation(who, src);
  if (amount > have)
    throw new Refusal(
      `redelegate amount ${amount} is more than the delegation of ${addrHex(who)} to ${addrHex(src)} (${have})`,
    );
  const now = c.now();
  const begin = await redelegationBegin(c, src, now);
  // Only entries still maturing exist; the matured ones are dropped at this write.
  const entries = (await c.store.redelegations(who)).filter((e) => e.completionTime > now);
  // No transitive redelegation: stake that arrived at src by a redelegation still maturing must
  // stay until it matures, or a slash of its first validator could no longer find it.
  const incoming = entries.find((e) => equal(e.dst, src));
  if (incoming)
    throw new Refusal(
      `${addrHex(who)} has a redelegation to ${addrHex(src)} maturing at ${incoming.completionTime} (block time ${now}); no redelegation from ${addrHex(src)} before then`,
    );
  if (!begin.now && entries.length >= MAX_UNBONDING_ENTRIES) {
    let first = entries[0]!.completionTime;
    for (const e of entries) if (e.completionTime < first) first = e.completionTime;
    throw new Refusal(
      `${addrHex(who)} already has ${MAX_UNBONDING_ENTRIES} redelegations maturing; wait for the first (at ${first})`,
    );
  }
  const srcTokens = await c.store.bonded(src);
  const srcTotal = await c.store.totalShares(src);
  const owned = await c.store.delegationShares(who, src);
  const { burned, paid } = sharesToBurn(amount, srcTokens, srcTotal);
  const dstTokens = await c.store.bonded(dst);
  const dstTotal = await c.store.totalShares(dst);
  if (dstTokens === 0n && dstTotal > 0n)
    throw new Refusal(
      `validator ${addrHex(dst)} has shares but no tokens left (slashed to 0); it takes no delegation`,
    );
  const minted = dstTotal === 0n ? paid : (paid * dstTotal) / dstTokens;
  if (minted === 0n)
    throw new Refusal(`redelegation of ${paid} base units buys less than one share of ${addrHex(dst)}`);
  if ((await c.store.addDelegatorValidator(who, dst)) === 'full')
    throw new Refusal(
      `${addrHex(who)} already delegates to (or has unclaimed rewards from) ${MAX_DELEGATOR_VALIDATORS} validators, the most one delegator may; undelegate fully from one and claim its rewards first`,
    );
  const completion = begin.completion;
  // Both delegations are booked at their old shares before they change.
  await settleRewards(c, who, src);
  await settleRewards(c, who, dst);
  c.store.setDelegationShares(who, src, owned - burned);
  c.store.setTotalShares(src, srcTotal - burned);
  c.store.setBonded(src, srcTokens - paid);
  await keepListed(c, who, src);
  c.store.setDelegationShares(who, dst, (await c.store.delegationShares(who, dst)) + minted);
  c.store.setTotalShares(dst, dstTotal + minted);
  c.store.setBonded(dst, dstTokens + paid);
  if (!begin.now) {
    const entry: RedelegationEntry = {
      src,
      dst,
      initialBalance: paid,
      sharesDst: minted,
      completionTime: completion,
      height: c.blockNumber(),
    };
    await c.store.setRedelegations(who, [...entries, entry]);
    await c.store.noteRedelegatingDelegator(src, who);
    await c.store.enqueueMaturity('red', who, src, completion);
  }
  c.store.markDirty();
  c.logs.push([
    STAKING_ADDRESS,
    [EVENTS.redelegated, addrTopic(who), addrTopic(src), addrTopic(dst)],
    concat(word(paid), word(completion)),
  ]);
  return { out: word(completion), gas: GAS.write };
});

fn('redelegations(address)', async (c) => {
  const now = c.now();
  const es = (await c.store.redelegations(c.args.address(0))).filter((e) => e.completionTime > now);
  return {
    out: encodeAbi([
      { t: 'address[]', v: es.map((e) => e.src) },
      { t: 'address[]', v: es.map((e) => e.dst) },
      { t: 'uint[]', v: es.map((e) => e.initialBalance) },
      { t: 'uint[]', v: es.map((e) => e.sharesDst) },
      { t: 'uint[]', v: es.map((e) => e.completionTime) },
      { t: 'uint[]', v: es.map((e) => e.height) },
    ]),
    gas: GAS.view + GAS.perItem * BigInt(es.length),
  };
});

fn('unjail()', async (c) => {
  requireWrite(c, 'unjail', false);
  const op = c.frame.caller.bytes;
  const v = await c.store.validator(op);
  if (!v) throw new Refusal(`${addrHex(op)} operates no validator`);
  if (!v.jailed) throw new Refusal(`validator ${addrHex(op)} is not jailed`);
  const info = await c.store.signingInfo(op);
  if (info.tombstoned)
    throw new Refusal(`validator ${addrHex(op)} is tombstoned (double-signed) and can never be unjailed`);
  const now = c.now();
  if (now < info.jailedUntil)
    throw new Refusal(
      `validator ${addrHex(op)} is jailed until ${info.jailedUntil} (block time ${now}, ${info.jailedUntil - now} s left)`,
    );
  const p = await c.store.params();
  const self = await c.store.delegation(op, op);
  if (self < p.minSelfBond)
    throw new Refusal(
      `validator ${addrHex(op)} self-bond ${self} is below min_self_bond ${p.minSelfBond}; delegate to it first`,
    );
  c.store.setJailed(op, false);
  // A fresh window: the blocks it missed while jailed (and the two heights before it is back in
  // the set) do not count against it.
  c.store.setSigningInfo(op, {
    ...info,
    seen: true,
    startHeight: c.blockNumber(),
    indexOffset: 0n,
    missedBlocks: 0n,
  });
  c.store.clearMissed(op, p.signedBlocksWindow);
  c.store.markDirty();
  c.logs.push([STAKING_ADDRESS, [EVENTS.unjailed, addrTopic(op)], new Uint8Array(0)]);
  return { out: new Uint8Array(0), gas: GAS.write };
});

/**
 * Pays nothing yet: books and zeroes the caller's rewards from one validator (and the commission
 * when the caller operates it), logs RewardsClaimed when there is any, and drops the validator from
 * the caller's list once it holds no shares of it. Returns the amounts.
 */
async function takeRewards(
  c: Ctx,
  rewards: RewardStore,
  who: Uint8Array,
  op: Uint8Array,
): Promise<{ reward: bigint; commission: bigint }> {
  const reward = await rewards.settleDelegation(c.store, who, op);
  const commission = equal(who, op) ? await rewards.commission(op) : 0n;
  if (reward + commission > 0n) {
    rewards.setDelegationPending(who, op, 0n);
    if (commission > 0n) rewards.setCommission(op, 0n);
    await rewards.reduceOutstanding(op, reward + commission);
    c.logs.push([
      STAKING_ADDRESS,
      [EVENTS.rewardsClaimed, addrTopic(who), addrTopic(op)],
      concat(word(reward), word(commission)),
    ]);
  }
  await keepListed(c, who, op);
  return { reward, commission };
}

async function enabledRewards(c: Ctx): Promise<RewardStore> {
  const rewards = new RewardStore(c.state);
  if (!(await rewards.enabled()))
    throw new Refusal('rewards are not enabled on this chain (its genesis has no reward account)');
  return rewards;
}

fn('claimRewards(address)', async (c) => {
  requireWrite(c, 'claimRewards', false);
  const op = c.args.address(0);
  const who = c.frame.caller.bytes;
  const rewards = await enabledRewards(c);
  if (!(await c.store.exists(op))) throw new Refusal(`no validator is operated by ${addrHex(op)}`);
  const { reward, commission } = await takeRewards(c, rewards, who, op);
  if (reward + commission === 0n)
    throw new Refusal(`${addrHex(who)} has no reward to claim from validator ${addrHex(op)}`);
  await c.state.addBalance(REWARD_KEY, -(reward + commission));
  await c.state.addBalance(toKey(who), reward + commission);
  return { out: word(reward + commission), gas: GAS.write };
});

fn('claimAllRewards()', async (c) => {
  requireWrite(c, 'claimAllRewards', false);
  const who = c.frame.caller.bytes;
  const rewards = await enabledRewards(c);
  // An operator's own validator is on it (its commission is claimed with it, even with no
  // self-delegation left).
  const list = await c.store.delegatorValidators(who);
  let total = 0n;
  let paidFrom = 0n;
  for (const op of list) {
    const { reward, commission } = await takeRewards(c, rewards, who, op);
    if (reward + commission === 0n) continue;
    total += reward + commission;
    paidFrom += 1n;
  }
  if (total === 0n)
    throw new Refusal(`${addrHex(who)} has no reward to claim from any of its ${list.length} validators`);
  await c.state.addBalance(REWARD_KEY, -total);
  await c.state.addBalance(toKey(who), total);
  c.logs.push([
    STAKING_ADDRESS,
    [EVENTS.allRewardsClaimed, addrTopic(who)],
    concat(word(paidFrom), word(total)),
  ]);
  return { out: word(total), gas: GAS.write + GAS.perClaim * BigInt(list.length) };
});

fn('delegatorValidators(address)', async (c) => {
  const ops = await c.store.delegatorValidators(c.args.address(0));
  return { out: encodeAbi([{ t: 'address[]', v: ops }]), gas: GAS.view + GAS.perItem * BigInt(ops.length) };
});

fn('outstandingRewards(address)', async (c) => {
  const op = c.args.address(0);
  if (!(await c.store.exists(op))) throw new Refusal(`no validator is operated by ${addrHex(op)}`);
  const rewards = new RewardStore(c.state);
  const v = (await rewards.enabled()) ? await rewards.outstanding(c.store, op) : 0n;
  return { out: word(v), gas: GAS.view };
});

fn('pendingRewards(address,address)', async (c) => {
  const who = c.args.address(0);
  const op = c.args.address(1);
  const rewards = new RewardStore(c.state);
  const v = (await rewards.enabled()) ? await rewards.delegationPending(c.store, who, op) : 0n;
  return { out: word(v), gas: GAS.view };
});

fn('pendingCommission(address)', async (c) => {
  const rewards = new RewardStore(c.state);
  const v = (await rewards.enabled()) ? await rewards.pendingCommission(c.store, c.args.address(0)) : 0n;
  return { out: word(v), gas: GAS.view };
});

fn('validators()', async (c) => {
  const ops = await c.store.operators();
  return { out: encodeAbi([{ t: 'address[]', v: ops }]), gas: GAS.view + GAS.perItem * BigInt(ops.length) };
});

fn('validator(address)', async (c) => {
  const op = c.args.address(0);
  const v = await c.store.validator(op);
  if (!v) throw new Refusal(`no validator is operated by ${addrHex(op)}`);
  const values: AbiValue[] = [
    { t: 'bytes32', v: v.pubKey },
    { t: 'string', v: v.moniker },
    { t: 'uint', v: v.bonded },
    { t: 'uint', v: v.lastPower },
    { t: 'bool', v: v.jailed },
    { t: 'uint', v: BigInt(v.commissionBps) },
  ];
  return { out: encodeAbi(values), gas: GAS.view };
});

fn('delegation(address,address)', async (c) => {
  const v = await c.store.delegation(c.args.address(0), c.args.address(1));
  return { out: word(v), gas: GAS.view };
});

fn('validatorStatus(address)', async (c) => {
  const op = c.args.address(0);
  if (!(await c.store.exists(op))) throw new Refusal(`no validator is operated by ${addrHex(op)}`);
  const s = await bondStatus(c.store, op, c.now());
  return {
    out: encodeAbi([
      { t: 'uint', v: BOND_STATUS[s.status] },
      { t: 'uint', v: s.end },
      { t: 'uint', v: s.status === 'bonded' ? 0n : await c.store.unbondingHeight(op) },
    ]),
    gas: GAS.view,
  };
});

fn('validatorShares(address)', async (c) => {
  const op = c.args.address(0);
  if (!(await c.store.exists(op))) throw new Refusal(`no validator is operated by ${addrHex(op)}`);
  return {
    out: encodeAbi([
      { t: 'uint', v: await c.store.bonded(op) },
      { t: 'uint', v: await c.store.totalShares(op) },
    ]),
    gas: GAS.view,
  };
});

fn('delegationShares(address,address)', async (c) => {
  const v = await c.store.delegationShares(c.args.address(0), c.args.address(1));
  return { out: word(v), gas: GAS.view };
});

fn('signingInfo(address)', async (c) => {
  const op = c.args.address(0);
  const v = await c.store.validator(op);
  if (!v) throw new Refusal(`no validator is operated by ${addrHex(op)}`);
  const i = await c.store.signingInfo(op);
  return {
    out: encodeAbi([
      { t: 'address', v: consensusAddressOf(v.pubKey) },
      { t: 'uint', v: i.startHeight },
      // Heights counted since the window started (the Cosmos SDK's index offset, for a validator
      // in the set throughout).
      { t: 'uint', v: i.seen && c.blockNumber() > i.startHeight ? c.blockNumber() - i.startHeight : 0n },
      { t: 'uint', v: i.jailedUntil },
      { t: 'bool', v: i.tombstoned },
      { t: 'uint', v: i.missedBlocks },
    ]),
    gas: GAS.view,
  };
});

fn('unbondings(address)', async (c) => {
  const es = await c.store.unbondings(c.args.address(0));
  return {
    out: encodeAbi([
      { t: 'address[]', v: es.map((e) => e.operator) },
      { t: 'uint[]', v: es.map((e) => e.amount) },
      { t: 'uint[]', v: es.map((e) => e.completionTime) },
    ]),
    gas: GAS.view + GAS.perItem * BigInt(es.length),
  };
});

fn('unbondingEntries(address)', async (c) => {
  const es = await c.store.unbondings(c.args.address(0));
  return {
    out: encodeAbi([
      { t: 'address[]', v: es.map((e) => e.operator) },
      { t: 'uint[]', v: es.map((e) => e.amount) },
      { t: 'uint[]', v: es.map((e) => e.completionTime) },
      { t: 'uint[]', v: es.map((e) => e.height) },
    ]),
    gas: GAS.view + GAS.perItem * BigInt(es.length),
  };
});

fn('params()', async (c) => {
  const p = await c.store.params();
  return { out: encodeAbi(PARAM_NAMES.map((n) => ({ t: 'uint', v: p[n] }) as AbiValue)), gas: GAS.view };
});

function revert(reason: string, gas: bigint): ExecResult {
  return {
    returnValue: encodeError(reason),
    executionGasUsed: gas,
    exceptionError: new EVMError(EVMError.errorMessages.REVERT),
  };
}

function outOfGas(gasLimit: bigint): ExecResult {
  return {
    returnValue: new Uint8Array(0),
    executionGasUsed: gasLimit,
    exceptionError: new EVMError(EVMError.errorMessages.OUT_OF_GAS),
  };
}

/** The precompile: dispatches on the selector; a refusal reverts with its reason. */
export async function stakingPrecompile(input: PrecompileInput): Promise<ExecResult> {
  const base = GAS.view;
  if (input.gasLimit < base) return outOfGas(input.gasLimit);
  const f = currentFrame(input._EVM as object);
  const frame = f && !f.delegatecall && equal(f.to.bytes, STAKING_ADDRESS) ? f : undefined;
  if (!frame) return revert('the validator pool cannot be reached by delegatecall or callcode', base);
  const state = (input._EVM as unknown as { stateManager: JournaledState }).stateManager;
  const store = new StakingStore(state);
  if (!(await store.enabled()))
    return revert('staking is not enabled on this chain (its genesis has no app_state.staking)', base);
  if (input.data.length < 4) return revert('no function selector (calldata shorter than 4 bytes)', base);
  const sel = Buffer.from(input.data.subarray(0, 4)).toString('hex');
  const h = HANDLERS[sel];
  if (!h) return revert(`unknown function selector 0x${sel}`, base);
  const header = (input._EVM as unknown as { _block?: { header: { timestamp: bigint; number: bigint } } })
    ._block?.header;
  const ctx: Ctx = {
    store,
    state,
    frame,
    args: new ArgReader(input.data, h.name),
    now: () => header?.timestamp ?? 0n,
    blockNumber: () => header?.number ?? 0n,
    logs: [],
  };
  try {
    const r = await h.run(ctx);
    if (r.gas > input.gasLimit) return outOfGas(input.gasLimit);
    return { returnValue: r.out, executionGasUsed: r.gas, logs: ctx.logs };
  } catch (err) {
    if (err instanceof Refusal || err instanceof AbiDecodeError) return revert(err.message, base);
    throw err;
  }
}

/** The signatures of the functions the pool answers (contracts/IValidatorPool.sol). */
export function stakingFunctions(): string[] {
  return Object.values(HANDLERS).map((h) => h.name);
}

/** The registration for makeVm's customPrecompiles. */
export const STAKING_PRECOMPILE = { address: new Address(STAKING_ADDRESS), function: stakingPrecompile };
