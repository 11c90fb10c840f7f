// The reward stake precompile at 0x7b7c…0016 (issue 25): vote-escrowed BTC that earns the
// lockers' part of every block's fees. The ABI is contracts/IRewardStake.sol; the state and the
// fee split are reward-state.ts. Same conventions as the validator pool (staking.ts): refusals
// revert with Error(string) naming the value and the rule, value sent to a function that is not
// payable is refused, a static call cannot change anything, DELEGATECALL and CALLCODE are refused.
import { EVMError, type ExecResult, type PrecompileInput } from '@ethereumjs/evm';
import { Address } from '@ethereumjs/util';
import { bigIntToFixed, concat, equal, toHex, toKey } from '../bytes.js';
import type { JournaledState } from '../state/journaled.js';
import { type CallFrame, currentFrame } from './call-frame.js';
import { MAX_LOCK, REWARD_ADDRESS, REWARD_KEY, RewardStore, WEEK, weekFloor } from './reward-state.js';
import { AbiDecodeError, ArgReader, encodeAbi, encodeError, selectorOf, topicOf } from './staking-abi.js';

export { REWARD_ADDRESS, REWARD_ADDRESS_HEX } from './reward-state.js';

/** Gas of each function: flat, above the slots it touches (a change walks at most a few weeks). */
const GAS = { write: 60_000n, view: 4_000n } as const;

interface Ctx {
  store: RewardStore;
  state: JournaledState;
  frame: CallFrame;
  args: ArgReader;
  now: () => bigint;
  logs: Array<[Uint8Array, Uint8Array[], Uint8Array]>;
}
type Handler = (c: Ctx) => Promise<Uint8Array>;

class Refusal extends Error {}

const word = (n: bigint) => bigIntToFixed(n, 32);
const addrTopic = (a: Uint8Array) => concat(new Uint8Array(12), a);

const EVENTS = {
  locked: topicOf('Locked(address,uint256,uint256)'),
  increased: topicOf('LockIncreased(address,uint256,uint256)'),
  extended: topicOf('LockExtended(address,uint256)'),
  withdrawn: topicOf('Withdrawn(address,uint256)'),
  claimed: topicOf('RewardsClaimed(address,uint256)'),
};

const HANDLERS: Record<string, { name: string; writes: boolean; payable: boolean; run: Handler }> = {};
function fn(signature: string, o: { writes: boolean; payable?: boolean }, run: Handler): void {
  HANDLERS[selectorOf(signature)] = { name: signature, writes: o.writes, payable: o.payable ?? false, run };
}

/** The unlock time rounded down to a week, checked against one week .. four years after `now`. */
function lockEnd(unlockTime: bigint, now: bigint): bigint {
  const end = weekFloor(unlockTime);
  if (end < now + WEEK)
    throw new Refusal(
      `unlockTime ${unlockTime} (rounded down to the week: ${end}) is less than one week (${WEEK} s) after the block time ${now}`,
    );
  if (end > now + MAX_LOCK)
    throw new Refusal(
      `unlockTime ${unlockTime} (rounded down to the week: ${end}) is more than four years (${MAX_LOCK} s) after the block time ${now}`,
    );
  return end;
}

async function open(c: Ctx): Promise<{ who: Uint8Array; now: bigint }> {
  const now = c.now();
  // Every change first walks the week boundaries up to now: the totals drop the ended locks.
  await c.store.totalsAt(now, true);
  return { who: c.frame.caller.bytes, now };
}

fn('lock(uint256)', { writes: true, payable: true }, async (c) => {
  const unlockTime = c.args.uint(0);
  const { who, now } = await open(c);
  const cur = await c.store.lock(who);
  if (cur.amount > 0n)
    throw new Refusal(
      cur.end > now
        ? `${toHex(who)} already has a lock (${cur.amount} until ${cur.end}); use increaseAmount or extendLock`
        : `${toHex(who)} has an ended lock of ${cur.amount}; withdraw() it first`,
    );
  if (c.frame.value === 0n) throw new Refusal('lock needs a value (the BTC to lock)');
  const end = lockEnd(unlockTime, now);
  // Rewards of an earlier, withdrawn lock stay booked; the new lock earns from now on.
  await c.store.startLocker(who);
  c.store.setLock(who, { amount: c.frame.value, end });
  await c.store.addToTotals(c.frame.value, end);
  await c.store.addLocked(c.frame.value);
  c.logs.push([REWARD_ADDRESS, [EVENTS.locked, addrTopic(who)], concat(word(c.frame.value), word(end))]);
  return word(end);
});

fn('increaseAmount()', { writes: true, payable: true }, async (c) => {
  const { who, now } = await open(c);
  const cur = await c.store.lock(who);
  if (cur.amount === 0n) throw new Refusal(`${toHex(who)} has no lock; lock(unlockTime) first`);
  if (cur.end <= now)
    throw new Refusal(
      `the lock of ${toHex(who)} ended at ${cur.end} (block time ${now}); withdraw() it first`,
    );
  if (c.frame.value === 0n) throw new Refusal('increaseAmount needs a value (the BTC to add)');
  await c.store.settleLocker(who, now);
  const amount = cur.amount + c.frame.value;
  c.store.setLock(who, { amount, end: cur.end });
  await c.store.addToTotals(c.frame.value, cur.end);
  await c.store.addLocked(c.frame.value);
  c.logs.push([
    REWARD_ADDRESS,
    [EVENTS.increased, addrTopic(who)],
    concat(word(c.frame.value), word(amount)),
  ]);
  return word(amount);
});

fn('extendLock(uint256)', { writes: true }, async (c) => {
  const unlockTime = c.args.uint(0);
  const { who, now } = await open(c);
  const cur = await c.store.lock(who);
  if (cur.amount === 0n) throw new Refusal(`${toHex(who)} has no lock; lock(unlockTime) first`);
  if (cur.end <= now)
    throw new Refusal(
      `the lock of ${toHex(who)} ended at ${cur.end} (block time ${now}); withdraw() it first`,
    );
  const end = lockEnd(unlockTime, now);
  if (end <= cur.end)
    throw new Refusal(
      `unlockTime ${unlockTime} (rounded down to the week: ${end}) does not extend the lock, which ends at ${cur.end}`,
    );
  await c.store.settleLocker(who, now);
  c.store.setLock(who, { amount: cur.amount, end });
  await c.store.addToTotals(-cur.amount, cur.end);
  await c.store.addToTotals(cur.amount, end);
  c.logs.push([REWARD_ADDRESS, [EVENTS.extended, addrTopic(who)], word(end)]);
  return word(end);
});

fn('withdraw()', { writes: true }, async (c) => {
  const { who, now } = await open(c);
  const cur = await c.store.lock(who);
  if (cur.amount === 0n) throw new Refusal(`${toHex(who)} has no lock to withdraw`);
  if (cur.end > now)
    throw new Refusal(
      `the lock of ${toHex(who)} ends at ${cur.end}: withdraw is refused before it (block time ${now}, ${cur.end - now} s left)`,
    );
  // Its rewards up to the end stay booked for claim(); the totals dropped it at the boundary.
  await c.store.settleLocker(who, now);
  c.store.setLock(who, { amount: 0n, end: 0n });
  await c.store.addLocked(-cur.amount);
  await pay(c.state, who, cur.amount);
  c.logs.push([REWARD_ADDRESS, [EVENTS.withdrawn, addrTopic(who)], word(cur.amount)]);
  return word(cur.amount);
});

fn('claim()', { writes: true }, async (c) => {
  const { who, now } = await open(c);
  const pending = await c.store.settleLocker(who, now);
  if (pending === 0n) throw new Refusal(`${toHex(who)} has no reward to claim`);
  c.store.setLockerPending(who, 0n);
  await pay(c.state, who, pending);
  c.logs.push([REWARD_ADDRESS, [EVENTS.claimed, addrTopic(who)], word(pending)]);
  return word(pending);
});

fn('weightOf(address)', { writes: false }, async (c) => {
  const who = c.args.address(0);
  const now = c.now();
  const l = await c.store.lock(who);
  return word(l.end > now ? (l.amount * (l.end - now)) / MAX_LOCK : 0n);
});

fn('totalWeight()', { writes: false }, async (c) =>
  word((await c.store.rawTotalWeight(c.now(), false)) / MAX_LOCK),
);

fn('pendingRewards(address)', { writes: false }, async (c) => {
  const who = c.args.address(0);
  return word((await c.store.lockerPending(who, c.now())).pending);
});

fn('lockOf(address)', { writes: false }, async (c) => {
  const l = await c.store.lock(c.args.address(0));
  return encodeAbi([
    { t: 'uint', v: l.amount },
    { t: 'uint', v: l.end },
  ]);
});

fn('totalLocked()', { writes: false }, async (c) => word(await c.store.totalLocked()));

fn('undistributed()', { writes: false }, async (c) => word(await c.store.carry()));

fn('params()', { writes: false }, async (c) => {
  const p = await c.store.params();
  return encodeAbi([
    { t: 'uint', v: p.validatorShare },
    { t: 'uint', v: p.blockReward },
  ]);
});

async function pay(state: JournaledState, to: Uint8Array, amount: bigint): Promise<void> {
  await state.addBalance(REWARD_KEY, -amount);
  await state.addBalance(toKey(to), amount);
}

function revert(reason: string, gas: bigint): ExecResult {
  return {
    returnValue: encodeError(reason),
    executionGasUsed: gas,
    exceptionError: new EVMError(EVMError.errorMessages.REVERT),
  };
}

/** The precompile: dispatches on the selector; a refusal reverts with its reason. */
export async function rewardPrecompile(input: PrecompileInput): Promise<ExecResult> {
  const base = GAS.view;
  if (input.gasLimit < base)
    return {
      returnValue: new Uint8Array(0),
      executionGasUsed: input.gasLimit,
      exceptionError: new EVMError(EVMError.errorMessages.OUT_OF_GAS),
    };
  const f = currentFrame(input._EVM as object);
  const frame = f && !f.delegatecall && equal(f.to.bytes, REWARD_ADDRESS) ? f : undefined;
  if (!frame) return revert('the reward stake cannot be reached by delegatecall or callcode', base);
  const state = (input._EVM as unknown as { stateManager: JournaledState }).stateManager;
  const store = new RewardStore(state);
  if (!(await store.enabled()))
    return revert(
      'the reward stake is not enabled on this chain (its genesis has no app_state.staking)',
      base,
    );
  if (input.data.length < 4) return revert('no function selector (calldata shorter than 4 bytes)', base);
  const sel = Buffer.from(input.data.subarray(0, 4)).toString('hex');
  const h = HANDLERS[sel];
  if (!h) return revert(`unknown function selector 0x${sel}`, base);
  const gas = h.writes ? GAS.write : GAS.view;
  if (input.gasLimit < gas)
    return {
      returnValue: new Uint8Array(0),
      executionGasUsed: input.gasLimit,
      exceptionError: new EVMError(EVMError.errorMessages.OUT_OF_GAS),
    };
  const fnName = h.name.slice(0, h.name.indexOf('('));
  if (!h.payable && frame.value !== 0n)
    return revert(`${fnName} is not payable (sent ${frame.value} base units)`, gas);
  if (h.writes && frame.isStatic)
    return revert(`${fnName} changes state and cannot run in a static call`, gas);
  const header = (input._EVM as unknown as { _block?: { header: { timestamp: bigint } } })._block?.header;
  const ctx: Ctx = {
    store,
    state,
    frame,
    args: new ArgReader(input.data, h.name),
    now: () => header?.timestamp ?? 0n,
    logs: [],
  };
  try {
    const out = await h.run(ctx);
    return { returnValue: out, executionGasUsed: gas, logs: ctx.logs };
  } catch (err) {
    if (err instanceof Refusal || err instanceof AbiDecodeError) return revert(err.message, gas);
    throw err;
  }
}

/** The signatures of the functions the reward stake answers (contracts/IRewardStake.sol). */
export function rewardFunctions(): string[] {
  return Object.values(HANDLERS).map((h) => h.name);
}

/** The registration for makeVm's customPrecompiles. */
export const REWARD_PRECOMPILE = { address: new Address(REWARD_ADDRESS), function: rewardPrecompile };
