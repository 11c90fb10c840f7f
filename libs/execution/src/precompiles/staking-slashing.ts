// Slashing and jailing of the validator pool (issue 25; docs/staking.md "Slashing and jailing").
// Runs once a block inside FinalizeBlock, after the transactions and before the end-of-block
// validator updates, on the same journaled state:
// - committed duplicate-vote evidence (FinalizeBlock misbehavior) slashes slash_fraction_double_sign
//   of the validator's bonded tokens and of its unbonding entries that started at or after the
//   infraction height, jails it and tombstones it (no unjail ever);
// - the decided last commit feeds each validator's signing info over signed_blocks_window; more than
//   window − round(window × min_signed_per_window) missed slashes slash_fraction_downtime and jails
//   it until block time + downtime_jail_duration.
// Slashed base units leave the pool account's balance and are recorded as burned, so the block's
// supply check (executor.ts) sees them as destroyed and the BTC token's totalSupply() drops with them.
import type { AbciEvent, CommitInfo, Misbehavior } from '@noded/types';
import { equal, toHex } from '../bytes.js';
import { RewardStore } from './reward-state.js';
import {
  FRACTION_ONE,
  type SigningInfo,
  type SlotStore,
  STAKING_KEY,
  StakingStore,
  tokensOfShares,
} from './staking-state.js';

/** What slashing needs of a state besides slots: the pool's balance and the burn record. */
export interface SlashState extends SlotStore {
  addBalance(addr: string, amount: bigint): Promise<void>;
  recordBurn(amount: bigint): void;
}

export interface SlashingBlock {
  height: number;
  /** Block time in seconds. */
  time: bigint;
  misbehavior: Misbehavior[];
  lastCommit: CommitInfo;
}

/** The jail end of a tombstoned validator: never (the largest uint64, as seconds). */
export const JAILED_FOREVER = 2n ** 64n - 1n;

/**
 * CometBFT applies validator updates of height H from H + 2, so a validator's stake at an
 * infraction of height H is still at risk from unbondings that started at H − 2 and later for a
 * downtime found at H (as the Cosmos SDK's distribution height).
 */
const UPDATE_DELAY = 2;

export interface SlashResult {
  /** Burned from the validator's bonded tokens (every delegator's shares lose it pro rata). */
  bonded: bigint;
  /** Burned from unbonding entries that started at or after the infraction height. */
  unbonding: bigint;
  /**
   * Burned from the destination validators of redelegations away from this one that started at or
   * after the infraction height and are still maturing.
   */
  redelegation: bigint;
}

/**
 * Burns `fraction` (parts per 10^18, rounded down) of the validator's bonded tokens, of each of
 * its unbonding entries that started at or after `infractionHeight`, and of the stake each of its
 * redelegations since then (still maturing at `now`) moved to another validator.
 */
export async function slashValidator(
  state: SlashState,
  store: StakingStore,
  operator: Uint8Array,
  fraction: bigint,
  infractionHeight: bigint,
  now: bigint,
): Promise<SlashResult> {
  const tokens = await store.bonded(operator);
  const bonded = (tokens * fraction) / FRACTION_ONE;
  if (bonded > 0n) store.setBonded(operator, tokens - bonded);
  let unbonding = 0n;
  for (const d of await store.unbondingDelegators(operator)) {
    const entries = await store.unbondings(d);
    let changed = false;
    for (const e of entries) {
      // As the Cosmos SDK's SlashUnbondingDelegation: stake that left before the infraction did not
      // take part in it, and an entry that matured is no longer at risk (it waits to be withdrawn).
      if (!equal(e.operator, operator) || e.height < infractionHeight || e.height === 0n) continue;
      if (e.completionTime <= now) continue;
      const cut = (e.amount * fraction) / FRACTION_ONE;
      if (cut === 0n) continue;
      e.amount -= cut;
      unbonding += cut;
      changed = true;
    }
    if (changed) await store.setUnbondings(d, entries);
  }
  const redelegation = await slashRedelegations(state, store, operator, fraction, infractionHeight, now);
  const total = bonded + unbonding + redelegation;
  if (total > 0n) {
    await state.addBalance(STAKING_KEY, -total);
    state.recordBurn(total);
  }
  store.markDirty();
  return { bonded, unbonding, redelegation };
}

/**
 * The Cosmos SDK's SlashRedelegation: for each redelegation away from `operator` made at or after
 * the infraction and still maturing, `fraction` of the shares of the destination it bought
 * (floor(shares_dst × fraction / 10^18), at most what the delegator still holds there) is taken
 * out of the destination and its tokens burned. Returns the base units burned (the caller takes
 * them out of the pool's balance).
 */
async function slashRedelegations(
  state: SlashState,
  store: StakingStore,
  operator: Uint8Array,
  fraction: bigint,
  infractionHeight: bigint,
  now: bigint,
): Promise<bigint> {
  let burned = 0n;
  const rewards = new RewardStore(state);
  const withRewards = await rewards.enabled();
  for (const d of await store.redelegatingDelegators(operator)) {
    for (const e of await store.redelegations(d)) {
      if (!equal(e.src, operator) || e.height < infractionHeight || e.completionTime <= now) continue;
      const held = await store.delegationShares(d, e.dst);
      let shares = (e.sharesDst * fraction) / FRACTION_ONE;
      if (held < shares) shares = held; // what is left of it at the destination
      if (shares === 0n) continue;
      const tokens = await store.bonded(e.dst);
      const total = await store.totalShares(e.dst);
      // The last shares of the destination take every token left.
      const cut = shares === total ? tokens : tokensOfShares(shares, tokens, total);
      // The delegation is booked at its old shares before they change.
      if (withRewards) await rewards.settleDelegation(store, d, e.dst);
      store.setDelegationShares(d, e.dst, held - shares);
      store.setTotalShares(e.dst, total - shares);
      store.setBonded(e.dst, tokens - cut);
      burned += cut;
    }
  }
  return burned;
}

/** The most blocks of a window a validator may miss: window − round(window × min_signed_per_window). */
export function maxMissedBlocks(window: bigint, minSignedPerWindow: bigint): bigint {
  const minSigned = (window * minSignedPerWindow + FRACTION_ONE / 2n) / FRACTION_ONE;
  return window - minSigned;
}

const attr = (key: string, value: string) => ({ key, value, index: true });

function slashEvent(
  operator: Uint8Array,
  address: Uint8Array,
  reason: 'double_sign' | 'missing_signature',
  infractionHeight: bigint,
  power: bigint,
  r: SlashResult,
): AbciEvent {
  return {
    type: 'slash',
    attributes: [
      attr('operator', toHex(operator)),
      attr('address', Buffer.from(address).toString('hex').toUpperCase()),
      attr('reason', reason),
      attr('infraction_height', infractionHeight.toString()),
      attr('power', power.toString()),
      attr('burned_bonded', r.bonded.toString()),
      attr('burned_unbonding', r.unbonding.toString()),
      attr('burned_redelegation', r.redelegation.toString()),
    ],
  };
}

function jailEvent(operator: Uint8Array, jailedUntil: bigint, tombstoned: boolean): AbciEvent {
  return {
    type: 'jail',
    attributes: [
      attr('operator', toHex(operator)),
      attr('jailed_until', jailedUntil.toString()),
      attr('tombstoned', String(tombstoned)),
    ],
  };
}

/** A downtime jail the liveness guard held back (applySlashing). */
export interface HeldBackJail {
  operator: Uint8Array;
  /** The validator's power in the last commit. */
  power: bigint;
  /** Power of the last commit's validators not jailed and signing, and their total, before it. */
  online: bigint;
  total: bigint;
}

/**
 * The liveness guard: whether jailing a validator of `power` that `signed` the last commit would
 * leave the remaining online power at or below 2/3 of the remaining total, so that the set
 * without it could not commit. Jailing a validator that did not sign never lowers the online
 * share (3·online > 2·total implies 3·online > 2·(total − power)), so it is never held back.
 */
export function wouldHalt(signed: boolean, power: bigint, online: bigint, total: bigint): boolean {
  if (!signed) return false;
  return 3n * (online - power) <= 2n * (total - power);
}

/**
 * The block's slashing: liveness from the last commit, then the committed evidence. Returns the
 * block events (slash, jail, liveness_guard) and the downtime jails the liveness guard held back.
 * Does nothing on a chain without a pool.
 */
export async function applySlashing(state: SlashState, block: SlashingBlock): Promise<AbciEvent[]> {
  return (await applySlashingWithGuard(state, block)).events;
}

export async function applySlashingWithGuard(
  state: SlashState,
  block: SlashingBlock,
): Promise<{ events: AbciEvent[]; heldBack: HeldBackJail[] }> {
  const heldBack: HeldBackJail[] = [];
  if (block.misbehavior.length === 0 && block.lastCommit.votes.length === 0) return { events: [], heldBack };
  const store = new StakingStore(state);
  if (!(await store.enabled())) return { events: [], heldBack };
  const p = await store.params();
  const events: AbciEvent[] = [];
  const height = BigInt(block.height);

  // The liveness guard's view of the set: the last commit's validators that are not jailed (a jailed
  // one's removal is already on its way to consensus), their power and how much of it signed.
  // Each downtime jail below takes its validator out of both.
  // Each vote's operator and whether it was jailed before this block are read once, for both
  // passes: the liveness pass below jails only the validator it is at (kept in `jailedHere`, should
  // an operator come up under a second address), so a later vote's answer is the same as a read.
  let total = 0n;
  let online = 0n;
  const seen: Array<{ op: Uint8Array | undefined; jailed: boolean }> = [];
  for (const vote of block.lastCommit.votes) {
    const op = await store.operatorOfAddress(vote.validatorAddress);
    const jailed = op !== undefined && (await store.jailed(op));
    seen.push({ op, jailed });
    if (jailed) continue;
    total += vote.power;
    if (vote.signed) online += vote.power;
  }

  // Liveness (the Cosmos SDK's HandleValidatorSignature, run for every validator of the last set).
  const window = p.signedBlocksWindow;
  const maxMissed = maxMissedBlocks(window, p.minSignedPerWindow);
  const jailedHere = new Set<string>();
  for (const [i, vote] of block.lastCommit.votes.entries()) {
    const { op, jailed } = seen[i]!;
    if (!op) continue;
    // A jailed validator's missed blocks are not counted (it is leaving the set, or out of it).
    if (jailed || jailedHere.has(toHex(op))) continue;
    const prev = await store.signingInfo(op);
    const info: SigningInfo = prev.seen
      ? { ...prev }
      : {
          seen: true,
          startHeight: height,
          indexOffset: 0n,
          missedBlocks: 0n,
          jailedUntil: 0n,
          tombstoned: false,
        };
    // The bitmap is indexed by height (the Cosmos SDK counts an offset up every block): a block
    // every validator signed, with no miss of `window` heights ago to clear, writes nothing, so the
    // app hash moves only when something happened (create_empty_blocks = false still idles).
    const index = height % window;
    const missed = !vote.signed;
    // No missed block in the window: every bit is clear (the common case needs no bitmap read).
    const wasMissed = info.missedBlocks > 0n && (await store.missedBit(op, index));
    if (!wasMissed && missed) {
      await store.setMissedBit(op, index, true);
      info.missedBlocks += 1n;
    } else if (wasMissed && !missed) {
      await store.setMissedBit(op, index, false);
      info.missedBlocks -= 1n;
    }
    if (height > info.startHeight + window && info.missedBlocks > maxMissed) {
      if (wouldHalt(vote.signed, vote.power, online, total)) {
        // Held back: the validator stays in the set with its misses counted, and is jailed at the
        // first block where that no longer halts the chain (or once its misses leave the window).
        heldBack.push({ operator: op, power: vote.power, online, total });
        events.push({
          type: 'liveness_guard',
          attributes: [
            attr('operator', toHex(op)),
            attr('power', vote.power.toString()),
            attr('online_power', online.toString()),
            attr('total_power', total.toString()),
            attr('missed_blocks', info.missedBlocks.toString()),
          ],
        });
        store.setSigningInfo(op, info, prev);
        continue;
      }
      total -= vote.power;
      if (vote.signed) online -= vote.power;
      const infraction = height > BigInt(UPDATE_DELAY) ? height - BigInt(UPDATE_DELAY) : 1n;
      const r = await slashValidator(state, store, op, p.slashFractionDowntime, infraction, block.time);
      store.setJailed(op, true);
      jailedHere.add(toHex(op));
      // Capped below the tombstone's "for ever" (a genesis may set a duration up to 2^64 − 1 s).
      const until = block.time + p.downtimeJailDuration;
      info.jailedUntil = until < JAILED_FOREVER ? until : JAILED_FOREVER - 1n;
      info.missedBlocks = 0n;
      info.indexOffset = 0n;
      store.clearMissed(op, window);
      events.push(
        slashEvent(op, vote.validatorAddress, 'missing_signature', infraction, await store.lastPower(op), r),
        jailEvent(op, info.jailedUntil, false),
      );
    }
    store.setSigningInfo(op, info, prev);
  }

  // Double signing (the Cosmos SDK's HandleEquivocationEvidence).
  for (const m of block.misbehavior) {
    const op = await store.operatorOfAddress(m.validatorAddress);
    if (!op) continue;
    const prev = await store.signingInfo(op);
    if (prev.tombstoned) continue; // punished once for all its double signs
    const power = await store.lastPower(op);
    const r = await slashValidator(state, store, op, p.slashFractionDoubleSign, BigInt(m.height), block.time);
    store.setJailed(op, true);
    const info: SigningInfo = {
      ...prev,
      seen: true,
      startHeight: prev.seen ? prev.startHeight : height,
      jailedUntil: JAILED_FOREVER,
      tombstoned: true,
    };
    store.setSigningInfo(op, info, prev);
    events.push(
      slashEvent(op, m.validatorAddress, 'double_sign', BigInt(m.height), power, r),
      jailEvent(op, JAILED_FOREVER, true),
    );
  }
  return { events, heldBack };
}
