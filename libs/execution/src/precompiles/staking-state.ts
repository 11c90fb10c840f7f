// The validator pool's state (issue 25): EVM storage of the pool account 0x7b7c…0011, so every
// change is journaled with the call frame that makes it (a revert undoes it), is part of the state
// root, and is served by the same state reads as any contract's storage. The bonded and unbonding
// BTC is the pool account's balance: it leaves the delegator's balance and is not destroyed, so the
// coin supply invariant holds without a special case (docs/staking.md).
//
// Slots are keccak256("noded.staking/<name>" ++ key bytes): no two names or keys collide.

import { sha256 } from '@noded/crypto';
import type { ValidatorUpdate } from '@noded/types';
import { bigIntToBytes, bytesToBigInt, concat, equal, fromHex, toKey } from '../bytes.js';
import { bigIntTo32, namedSlots } from './slots.js';

/** The pool's address: the validator pool precompile. */
export const STAKING_ADDRESS_HEX = '0x7b7c000000000000000000000000000000000011';
export const STAKING_ADDRESS = fromHex(STAKING_ADDRESS_HEX);
export const STAKING_KEY = toKey(STAKING_ADDRESS);

/** CometBFT's cap on the total voting power of a validator set (int64 max / 8). */
const MAX_TOTAL_VOTING_POWER = 9223372036854775807n / 8n;

/** The most unbonding entries a delegator holds at once (the Cosmos SDK's max_entries is 7). */
export const MAX_UNBONDING_ENTRIES = 16;

/**
 * The most validators one delegator's list holds (delegations and unclaimed rewards): the bound
 * of claimAllRewards(), which visits each of them (docs/staking.md "Claiming").
 */
export const MAX_DELEGATOR_VALIDATORS = 32;

/**
 * The most matured unbonding and redelegation entries the end of a block takes off the maturity
 * queue (the rest wait for the next block): the bound of that walk's cost in one block.
 */
export const MAX_MATURED_PER_BLOCK = 64;

/** Order of the parameters in storage and in params(). */
export const PARAM_NAMES = [
  'minSelfBond',
  'unbondingTime',
  'maxValidators',
  'powerReduction',
  'slashFractionDoubleSign',
  'slashFractionDowntime',
  'signedBlocksWindow',
  'minSignedPerWindow',
  'downtimeJailDuration',
] as const;
export type StakingParamValues = Record<(typeof PARAM_NAMES)[number], bigint>;

/** What the pool needs of a state: JournaledState for blocks and calls, a map at genesis. */
export interface SlotStore {
  readSlot(addr: string, slot: string): Promise<Uint8Array>;
  writeSlot(addr: string, slot: string, value: Uint8Array): void;
}

const utf8 = new TextEncoder();
/** The storage slot (hex key) of a named value and its key bytes. */
const slot = namedSlots('noded.staking/');

/** Validator fields, each one slot of "val" ++ operator ++ field. */
const F = {
  pubKey: 0n,
  bonded: 1n,
  commission: 2n,
  jailed: 3n,
  monikerLen: 4n,
  lastPower: 5n,
  listIndex: 6n, // index + 1, 0 when there is no validator
  shares: 7n, // total delegator shares; 0 with bonded > 0: a record from before shares (1:1)
  moniker0: 8n, // and up: 32-byte chunks
} as const;

const UBD = { operator: 0n, amount: 1n, completion: 2n, height: 3n } as const;
const RED = { src: 0n, dst: 1n, initial: 2n, sharesDst: 3n, completion: 4n, height: 5n } as const;

/**
 * A signing info is packed in one slot of "si" ++ operator (the liveness pass reads and writes it
 * for every validator in every block): bits 0-63 start height, 64-127 index offset, 128-191 jail
 * end (seconds), 192-223 missed blocks (the window is at most 100000), bit 224 seen, 225 tombstoned.
 */
const U64 = (1n << 64n) - 1n;

/** Fractions (slash fractions, min_signed_per_window) are parts per 10^18. */
export const FRACTION_ONE = 10n ** 18n;

/** CometBFT's validator address: the first 20 bytes of sha256 of the ed25519 public key. */
export function consensusAddressOf(pubKey: Uint8Array): Uint8Array {
  return sha256(pubKey).slice(0, 20);
}

export interface ValidatorRecord {
  operator: Uint8Array;
  pubKey: Uint8Array;
  moniker: string;
  bonded: bigint;
  commissionBps: number;
  jailed: boolean;
  /** The power last handed to consensus (0: not in the active set). */
  lastPower: bigint;
}

export interface UnbondingEntry {
  operator: Uint8Array;
  amount: bigint;
  completionTime: bigint;
  /** The block height of the undelegate (0 for entries made before heights were kept). */
  height: bigint;
}

/** A redelegation still maturing (the Cosmos SDK's RedelegationEntry, with its two validators). */
export interface RedelegationEntry {
  src: Uint8Array;
  dst: Uint8Array;
  /** Base units moved from src to dst. */
  initialBalance: bigint;
  /** Shares of dst the move bought: what a slash of src for an earlier infraction takes a part of. */
  sharesDst: bigint;
  /** Seconds; from then on the entry no longer exists (it is no longer slashable). */
  completionTime: bigint;
  /** The block height of the redelegate. */
  height: bigint;
}

/** An element of the maturity queue (StakingStore.enqueueMaturity). */
export interface MaturityItem {
  index: bigint;
  kind: 'ubd' | 'red';
  delegator: Uint8Array;
  operator: Uint8Array;
  completion: bigint;
}

/** A validator's liveness record (the Cosmos SDK's ValidatorSigningInfo). */
export interface SigningInfo {
  /** Whether the record exists (it starts at the first block the validator is seen in a commit). */
  seen: boolean;
  startHeight: bigint;
  /**
   * Kept for the stored layout; always 0 now (the bitmap index is the height mod window, so that a
   * clean block writes nothing). The views report heights since startHeight instead.
   */
  indexOffset: bigint;
  missedBlocks: bigint;
  /** Seconds; until then unjail() is refused. */
  jailedUntil: bigint;
  /** Double-signed: jailed for ever. */
  tombstoned: boolean;
}

/** Typed access to the pool's slots over a state. */
export class StakingStore {
  constructor(private readonly state: SlotStore) {}

  private async num(s: string): Promise<bigint> {
    return bytesToBigInt(await this.state.readSlot(STAKING_KEY, s));
  }
  private put(s: string, v: bigint | Uint8Array): void {
    this.state.writeSlot(STAKING_KEY, s, typeof v === 'bigint' ? bigIntToBytes(v) : v);
  }

  /** Whether this chain has a pool (genesis app_state.staking wrote its params). */
  async enabled(): Promise<boolean> {
    return (await this.num(slot('param', 3n))) > 0n;
  }

  async params(): Promise<StakingParamValues> {
    const out = {} as StakingParamValues;
    for (let i = 0; i < PARAM_NAMES.length; i++)
      out[PARAM_NAMES[i]!] = await this.num(slot('param', BigInt(i)));
    return out;
  }
  setParams(p: StakingParamValues): void {
    for (let i = 0; i < PARAM_NAMES.length; i++) this.put(slot('param', BigInt(i)), p[PARAM_NAMES[i]!]);
  }

  async count(): Promise<number> {
    return Number(await this.num(slot('count')));
  }
  async operatorAt(i: number): Promise<Uint8Array> {
    return bigIntTo32(await this.num(slot('list', BigInt(i)))).slice(12);
  }
  async operators(): Promise<Uint8Array[]> {
    const n = await this.count();
    const out: Uint8Array[] = [];
    for (let i = 0; i < n; i++) out.push(await this.operatorAt(i));
    return out;
  }

  async exists(operator: Uint8Array): Promise<boolean> {
    return (await this.num(slot('val', operator, F.listIndex))) > 0n;
  }
  /** The operator whose validator uses this consensus key, or undefined. */
  async operatorOfKey(pubKey: Uint8Array): Promise<Uint8Array | undefined> {
    const v = await this.num(slot('key', pubKey));
    return v === 0n ? undefined : bigIntTo32(v).slice(12);
  }

  /** Adds a validator with nothing bonded yet. */
  async create(
    operator: Uint8Array,
    pubKey: Uint8Array,
    moniker: string,
    commissionBps: number,
  ): Promise<void> {
    const n = await this.count();
    this.put(slot('list', BigInt(n)), operator);
    this.put(slot('count'), BigInt(n + 1));
    this.put(slot('val', operator, F.listIndex), BigInt(n + 1));
    this.put(slot('val', operator, F.pubKey), pubKey);
    this.put(slot('key', pubKey), operator);
    this.put(slot('caddr', consensusAddressOf(pubKey)), operator);
    await this.setDescription(operator, moniker, commissionBps);
  }

  /**
   * The operator of the validator whose consensus address this is (the address in commits and
   * evidence), or undefined. Pools written before the address index are searched key by key once,
   * and the index is filled in then (every node does the same at the same block).
   */
  async operatorOfAddress(address: Uint8Array): Promise<Uint8Array | undefined> {
    const v = await this.num(slot('caddr', address));
    if (v !== 0n) return bigIntTo32(v).slice(12);
    for (const op of await this.operators()) {
      const pubKey = bigIntTo32(await this.num(slot('val', op, F.pubKey)));
      if (equal(consensusAddressOf(pubKey), address)) {
        this.put(slot('caddr', address), op);
        return op;
      }
    }
    return undefined;
  }

  async setDescription(operator: Uint8Array, moniker: string, commissionBps: number): Promise<void> {
    const bytes = utf8.encode(moniker);
    const oldLen = Number(await this.num(slot('val', operator, F.monikerLen)));
    const chunks = Math.ceil(bytes.length / 32);
    for (let i = 0; i < Math.max(chunks, Math.ceil(oldLen / 32)); i++) {
      const part = bytes.subarray(i * 32, i * 32 + 32);
      // Chunks are stored left-aligned; a zero chunk past the new end clears the old text.
      this.put(
        slot('val', operator, F.moniker0 + BigInt(i)),
        part.length > 0 ? concat(part, new Uint8Array(32 - part.length)) : new Uint8Array(0),
      );
    }
    this.put(slot('val', operator, F.monikerLen), BigInt(bytes.length));
    this.put(slot('val', operator, F.commission), BigInt(commissionBps));
  }

  async validator(operator: Uint8Array): Promise<ValidatorRecord | undefined> {
    if (!(await this.exists(operator))) return undefined;
    const f = (x: bigint) => this.num(slot('val', operator, x));
    const len = Number(await f(F.monikerLen));
    const chunks: Uint8Array[] = [];
    for (let i = 0; i * 32 < len; i++) chunks.push(bigIntTo32(await f(F.moniker0 + BigInt(i))));
    return {
      operator,
      pubKey: bigIntTo32(await f(F.pubKey)),
      moniker: new TextDecoder().decode(concat(...chunks).subarray(0, len)),
      bonded: await f(F.bonded),
      commissionBps: Number(await f(F.commission)),
      jailed: (await f(F.jailed)) !== 0n,
      lastPower: await f(F.lastPower),
    };
  }

  async bonded(operator: Uint8Array): Promise<bigint> {
    return this.num(slot('val', operator, F.bonded));
  }
  setBonded(operator: Uint8Array, v: bigint): void {
    this.put(slot('val', operator, F.bonded), v);
  }
  setLastPower(operator: Uint8Array, v: bigint): void {
    this.put(slot('val', operator, F.lastPower), v);
  }
  async jailed(operator: Uint8Array): Promise<boolean> {
    return (await this.num(slot('val', operator, F.jailed))) !== 0n;
  }
  async commissionBps(operator: Uint8Array): Promise<bigint> {
    return this.num(slot('val', operator, F.commission));
  }
  async lastPower(operator: Uint8Array): Promise<bigint> {
    return this.num(slot('val', operator, F.lastPower));
  }
  setJailed(operator: Uint8Array, jailed: boolean): void {
    this.put(slot('val', operator, F.jailed), jailed ? 1n : 0n);
  }

  /**
   * The validator's total delegator shares. Before shares existed every delegation was recorded
   * as its amount at a rate of one share per base unit and nothing was ever slashed, so a record
   * without shares has as many shares as bonded base units.
   */
  async totalShares(operator: Uint8Array): Promise<bigint> {
    const s = await this.num(slot('val', operator, F.shares));
    return s === 0n ? this.bonded(operator) : s;
  }
  setTotalShares(operator: Uint8Array, v: bigint): void {
    this.put(slot('val', operator, F.shares), v);
  }

  /** A delegator's shares of a validator (the slot held amounts at one share per unit before). */
  async delegationShares(delegator: Uint8Array, operator: Uint8Array): Promise<bigint> {
    return this.num(slot('del', delegator, operator));
  }
  setDelegationShares(delegator: Uint8Array, operator: Uint8Array, v: bigint): void {
    this.put(slot('del', delegator, operator), v);
  }

  /** What a delegator's shares are worth now, in base units (rounded down). */
  async delegation(delegator: Uint8Array, operator: Uint8Array): Promise<bigint> {
    const shares = await this.delegationShares(delegator, operator);
    if (shares === 0n) return 0n;
    return tokensOfShares(shares, await this.bonded(operator), await this.totalShares(operator));
  }

  /**
   * Delegators with unbonding entries from a validator that have not matured: where a slash looks
   * for them. A delegator joins at its undelegate and leaves when its last entry from the validator
   * matures (completeMatured); pools written before the maturity queue keep the delegators listed then.
   */
  async unbondingDelegators(operator: Uint8Array): Promise<Uint8Array[]> {
    return this.memberList('ubdd', operator);
  }
  async noteUnbondingDelegator(operator: Uint8Array, delegator: Uint8Array): Promise<void> {
    await this.addMember('ubdd', operator, delegator);
  }
  async dropUnbondingDelegator(operator: Uint8Array, delegator: Uint8Array): Promise<void> {
    await this.removeMember('ubdd', operator, delegator);
  }

  /** The members of a per-validator list of delegators (`name`.n, `name`, `name`.has). */
  private async memberList(name: string, operator: Uint8Array): Promise<Uint8Array[]> {
    const n = await this.num(slot(`${name}.n`, operator));
    const out: Uint8Array[] = [];
    for (let i = 0n; i < n; i++) out.push(bigIntTo32(await this.num(slot(name, operator, i))).slice(12));
    return out;
  }
  /** Adds a delegator to a per-validator list; `.has` holds its index + 1. */
  private async addMember(name: string, operator: Uint8Array, delegator: Uint8Array): Promise<void> {
    if ((await this.num(slot(`${name}.has`, operator, delegator))) !== 0n) return;
    const n = await this.num(slot(`${name}.n`, operator));
    this.put(slot(name, operator, n), delegator);
    this.put(slot(`${name}.n`, operator), n + 1n);
    this.put(slot(`${name}.has`, operator, delegator), n + 1n);
  }
  /**
   * Removes a delegator from a per-validator list, moving the last member into its place and
   * clearing every slot it held (no-op when it is not listed). Lists written before `.has` held the
   * index (it held 1 for every member) are searched for the member.
   */
  private async removeMember(name: string, operator: Uint8Array, delegator: Uint8Array): Promise<void> {
    const has = await this.num(slot(`${name}.has`, operator, delegator));
    if (has === 0n) return;
    const n = await this.num(slot(`${name}.n`, operator));
    const at = async (i: bigint) => bigIntTo32(await this.num(slot(name, operator, i))).slice(12);
    let idx = has - 1n;
    if (idx >= n || !equal(await at(idx), delegator)) {
      idx = -1n;
      for (let i = 0n; i < n; i++)
        if (equal(await at(i), delegator)) {
          idx = i;
          break;
        }
      if (idx < 0n) {
        this.put(slot(`${name}.has`, operator, delegator), 0n);
        return;
      }
    }
    const last = n - 1n;
    if (idx !== last) {
      const moved = await at(last);
      this.put(slot(name, operator, idx), moved);
      this.put(slot(`${name}.has`, operator, moved), idx + 1n);
    }
    this.put(slot(name, operator, last), 0n);
    this.put(slot(`${name}.has`, operator, delegator), 0n);
    this.put(slot(`${name}.n`, operator), last);
  }

  /**
   * The validators a delegator has shares of or unclaimed rewards from (in the order they were
   * added; a removal moves the last one into the gap), and last its own validator when it operates
   * one that is not listed (a genesis validator: genesis writes no list, so a genesis state is the
   * same as before the list existed). Delegations made before the list existed join it when they
   * are next touched (delegate, undelegate, claimRewards).
   */
  async delegatorValidators(delegator: Uint8Array): Promise<Uint8Array[]> {
    const n = await this.num(slot('dv.n', delegator));
    const out: Uint8Array[] = [];
    for (let i = 0n; i < n; i++) out.push(bigIntTo32(await this.num(slot('dv', delegator, i))).slice(12));
    if (await this.ownUnlisted(delegator)) out.push(delegator);
    return out;
  }
  /** Whether the delegator operates a validator that its list does not hold. */
  private async ownUnlisted(delegator: Uint8Array): Promise<boolean> {
    return (await this.exists(delegator)) && (await this.num(slot('dv.idx', delegator, delegator))) === 0n;
  }
  /**
   * Adds a validator to the delegator's list: 'added', 'present' when it is there already, or
   * 'full' (nothing written) when the list holds MAX_DELEGATOR_VALIDATORS.
   */
  async addDelegatorValidator(
    delegator: Uint8Array,
    operator: Uint8Array,
  ): Promise<'added' | 'present' | 'full'> {
    if ((await this.num(slot('dv.idx', delegator, operator))) !== 0n) return 'present';
    const n = await this.num(slot('dv.n', delegator));
    // The delegator's own validator counts while it is shown unlisted (delegatorValidators).
    const own = !equal(operator, delegator) && (await this.ownUnlisted(delegator)) ? 1n : 0n;
    if (n + own >= BigInt(MAX_DELEGATOR_VALIDATORS)) return 'full';
    this.put(slot('dv', delegator, n), operator);
    this.put(slot('dv.idx', delegator, operator), n + 1n);
    this.put(slot('dv.n', delegator), n + 1n);
    return 'added';
  }
  /** Removes a validator from the delegator's list (no-op when it is not there). */
  async removeDelegatorValidator(delegator: Uint8Array, operator: Uint8Array): Promise<void> {
    const idx = await this.num(slot('dv.idx', delegator, operator));
    if (idx === 0n) return;
    const n = await this.num(slot('dv.n', delegator));
    const last = n - 1n;
    if (idx - 1n !== last) {
      const moved = await this.num(slot('dv', delegator, last));
      this.put(slot('dv', delegator, idx - 1n), moved);
      this.put(slot('dv.idx', delegator, bigIntTo32(moved).slice(12)), idx);
    }
    this.put(slot('dv', delegator, last), 0n);
    this.put(slot('dv.idx', delegator, operator), 0n);
    this.put(slot('dv.n', delegator), last);
  }

  /** The delegator's redelegation entries as stored (matured ones included until the next write). */
  async redelegations(delegator: Uint8Array): Promise<RedelegationEntry[]> {
    const n = await this.num(slot('red.n', delegator));
    const out: RedelegationEntry[] = [];
    for (let i = 0n; i < n; i++) {
      const f = (x: bigint) => this.num(slot('red', delegator, i, x));
      out.push({
        src: bigIntTo32(await f(RED.src)).slice(12),
        dst: bigIntTo32(await f(RED.dst)).slice(12),
        initialBalance: await f(RED.initial),
        sharesDst: await f(RED.sharesDst),
        completionTime: await f(RED.completion),
        height: await f(RED.height),
      });
    }
    return out;
  }
  async setRedelegations(delegator: Uint8Array, entries: RedelegationEntry[]): Promise<void> {
    const old = Number(await this.num(slot('red.n', delegator)));
    for (let i = 0; i < Math.max(old, entries.length); i++) {
      const e = entries[i];
      const k = BigInt(i);
      this.put(slot('red', delegator, k, RED.src), e ? e.src : new Uint8Array(0));
      this.put(slot('red', delegator, k, RED.dst), e ? e.dst : new Uint8Array(0));
      this.put(slot('red', delegator, k, RED.initial), e ? e.initialBalance : 0n);
      this.put(slot('red', delegator, k, RED.sharesDst), e ? e.sharesDst : 0n);
      this.put(slot('red', delegator, k, RED.completion), e ? e.completionTime : 0n);
      this.put(slot('red', delegator, k, RED.height), e ? e.height : 0n);
    }
    this.put(slot('red.n', delegator), BigInt(entries.length));
  }
  /**
   * Delegators with redelegations away from a validator that have not matured: where its slash
   * looks for entries. A delegator joins at its redelegate and leaves when its last entry from the
   * validator matures (completeMatured).
   */
  async redelegatingDelegators(operator: Uint8Array): Promise<Uint8Array[]> {
    return this.memberList('rdd', operator);
  }
  async noteRedelegatingDelegator(operator: Uint8Array, delegator: Uint8Array): Promise<void> {
    await this.addMember('rdd', operator, delegator);
  }
  async dropRedelegatingDelegator(operator: Uint8Array, delegator: Uint8Array): Promise<void> {
    await this.removeMember('rdd', operator, delegator);
  }

  /**
   * When the validator's unbonding ends (seconds): set at the end of the block that takes it out
   * of the active set (block time + unbonding_time), cleared when it comes back. 0: it has not
   * left the set since this record exists.
   */
  async unbondingEnd(operator: Uint8Array): Promise<bigint> {
    return this.num(slot('vub', operator));
  }
  setUnbondingEnd(operator: Uint8Array, t: bigint): void {
    this.put(slot('vub', operator), t);
  }
  /**
   * The height of the block that took the validator out of the active set (the Cosmos SDK's
   * unbonding_height), kept and cleared with the unbonding end; 0 when it has not left the set since
   * heights were kept.
   */
  async unbondingHeight(operator: Uint8Array): Promise<bigint> {
    return this.num(slot('vubh', operator));
  }
  setUnbondingHeight(operator: Uint8Array, h: bigint): void {
    this.put(slot('vubh', operator), h);
  }

  /**
   * Queues an unbonding ('ubd') or redelegation ('red') entry of `delegator` from `operator` that
   * matures at `completion`: completeMatured takes it off the per-validator list once it matured.
   * An element is two slots: delegator | completion << 160 | kind << 224, and the validator.
   */
  async enqueueMaturity(
    kind: 'ubd' | 'red',
    delegator: Uint8Array,
    operator: Uint8Array,
    completion: bigint,
  ): Promise<void> {
    const tail = await this.num(slot('mq.tail'));
    // A completion past 2^64 − 1 s (unbonding_time may be that large) is kept as 2^64 − 1: later,
    // never earlier, than the entry's own.
    const at = completion > U64 ? U64 : completion;
    const packed = bytesToBigInt(delegator) | (at << 160n) | ((kind === 'red' ? 1n : 0n) << 224n);
    this.put(slot('mq', tail, 0n), packed);
    this.put(slot('mq', tail, 1n), operator);
    this.put(slot('mq.tail'), tail + 1n);
  }
  /** The queue's elements from its head, at most `max` (what completeMatured walks). */
  async maturityQueue(max = Number.MAX_SAFE_INTEGER): Promise<MaturityItem[]> {
    const head = await this.num(slot('mq.head'));
    const tail = await this.num(slot('mq.tail'));
    const out: MaturityItem[] = [];
    for (let i = head; i < tail && out.length < max; i++) {
      const w = await this.num(slot('mq', i, 0n));
      out.push({
        index: i,
        kind: ((w >> 224n) & 1n) === 1n ? 'red' : 'ubd',
        delegator: bigIntTo32(w & ((1n << 160n) - 1n)).slice(12),
        completion: (w >> 160n) & U64,
        operator: bigIntTo32(await this.num(slot('mq', i, 1n))).slice(12),
      });
    }
    return out;
  }
  /** Takes the first `count` elements off the queue, clearing their slots (and the pointers when empty). */
  async dequeueMaturity(count: number): Promise<void> {
    if (count === 0) return;
    const head = await this.num(slot('mq.head'));
    const tail = await this.num(slot('mq.tail'));
    const next = head + BigInt(count);
    for (let i = head; i < next; i++) {
      this.put(slot('mq', i, 0n), 0n);
      this.put(slot('mq', i, 1n), 0n);
    }
    if (next >= tail) {
      this.put(slot('mq.head'), 0n);
      this.put(slot('mq.tail'), 0n);
    } else this.put(slot('mq.head'), next);
  }

  async signingInfo(operator: Uint8Array): Promise<SigningInfo> {
    const w = await this.num(slot('si', operator));
    return {
      startHeight: w & U64,
      indexOffset: (w >> 64n) & U64,
      jailedUntil: (w >> 128n) & U64,
      missedBlocks: (w >> 192n) & 0xffffffffn,
      seen: ((w >> 224n) & 1n) === 1n,
      tombstoned: ((w >> 225n) & 1n) === 1n,
    };
  }
  /** Writes the signing info, unless it equals `prev` (what was read). */
  setSigningInfo(operator: Uint8Array, i: SigningInfo, prev?: SigningInfo): void {
    if (
      prev &&
      prev.seen === i.seen &&
      prev.startHeight === i.startHeight &&
      prev.indexOffset === i.indexOffset &&
      prev.missedBlocks === i.missedBlocks &&
      prev.jailedUntil === i.jailedUntil &&
      prev.tombstoned === i.tombstoned
    )
      return;
    const w =
      (i.startHeight & U64) |
      ((i.indexOffset & U64) << 64n) |
      ((i.jailedUntil & U64) << 128n) |
      ((i.missedBlocks & 0xffffffffn) << 192n) |
      ((i.seen ? 1n : 0n) << 224n) |
      ((i.tombstoned ? 1n : 0n) << 225n);
    this.put(slot('si', operator), w);
  }

  /** Bit `index` of the validator's missed-blocks bitmap (256 bits a slot). */
  async missedBit(operator: Uint8Array, index: bigint): Promise<boolean> {
    const chunk = await this.num(slot('miss', operator, index / 256n));
    return ((chunk >> (index % 256n)) & 1n) === 1n;
  }
  async setMissedBit(operator: Uint8Array, index: bigint, missed: boolean): Promise<void> {
    const s = slot('miss', operator, index / 256n);
    const chunk = await this.num(s);
    const bit = 1n << (index % 256n);
    this.put(s, missed ? chunk | bit : chunk & ~bit);
  }
  /** Clears the bitmap of a window of `window` blocks. */
  clearMissed(operator: Uint8Array, window: bigint): void {
    for (let c = 0n; c * 256n < window; c++) this.put(slot('miss', operator, c), 0n);
  }

  /** Marks that some validator's power may have changed: the end of the block recomputes the set. */
  markDirty(): void {
    this.put(slot('dirty'), 1n);
  }
  async takeDirty(): Promise<boolean> {
    const d = (await this.num(slot('dirty'))) !== 0n;
    if (d) this.put(slot('dirty'), 0n);
    return d;
  }

  async unbondings(delegator: Uint8Array): Promise<UnbondingEntry[]> {
    const n = Number(await this.num(slot('ubd.n', delegator)));
    const out: UnbondingEntry[] = [];
    for (let i = 0n; i < BigInt(n); i++) {
      out.push({
        operator: bigIntTo32(await this.num(slot('ubd', delegator, i, UBD.operator))).slice(12),
        amount: await this.num(slot('ubd', delegator, i, UBD.amount)),
        completionTime: await this.num(slot('ubd', delegator, i, UBD.completion)),
        height: await this.num(slot('ubd', delegator, i, UBD.height)),
      });
    }
    return out;
  }
  async setUnbondings(delegator: Uint8Array, entries: UnbondingEntry[]): Promise<void> {
    const old = Number(await this.num(slot('ubd.n', delegator)));
    for (let i = 0; i < Math.max(old, entries.length); i++) {
      const e = entries[i];
      const k = BigInt(i);
      this.put(slot('ubd', delegator, k, UBD.operator), e ? e.operator : new Uint8Array(0));
      this.put(slot('ubd', delegator, k, UBD.amount), e ? e.amount : 0n);
      this.put(slot('ubd', delegator, k, UBD.completion), e ? e.completionTime : 0n);
      this.put(slot('ubd', delegator, k, UBD.height), e ? e.height : 0n);
    }
    this.put(slot('ubd.n', delegator), BigInt(entries.length));
  }
}

/**
 * The active set from bonded stake: power = bonded / power_reduction for a validator that is not
 * jailed and whose operator's self-bond is at least min_self_bond; the top max_validators by power
 * (ties: the lower operator address first). Returns the changes against the power last handed to
 * consensus and records the new powers; none when nothing was marked dirty, and none (the set is
 * kept) when the new set would be empty or over CometBFT's total power cap, which consensus cannot
 * run with.
 */
export async function endBlockValidatorUpdates(
  state: SlotStore,
  /** The block time in seconds: a validator that leaves the set unbonds until it + unbonding_time. */
  time: bigint,
  /** Called before a validator's recorded power changes (the fee split books its rewards). */
  beforePowerChange?: (operator: Uint8Array, from: bigint, to: bigint) => Promise<void>,
  /** The block height: a validator that leaves the set records it as its unbonding height. */
  height?: bigint,
): Promise<ValidatorUpdate[]> {
  const store = new StakingStore(state);
  if (!(await store.enabled()) || !(await store.takeDirty())) return [];
  const p = await store.params();
  const all: Array<ValidatorRecord & { power: bigint; hex: string }> = [];
  for (const op of await store.operators()) {
    const v = (await store.validator(op))!;
    const self = await store.delegation(op, op);
    const power = v.jailed || self < p.minSelfBond ? 0n : v.bonded / p.powerReduction;
    all.push({ ...v, power, hex: toKey(op) });
  }
  const ranked = all
    .filter((v) => v.power > 0n)
    .sort((a, b) => (a.power === b.power ? (a.hex < b.hex ? -1 : 1) : a.power > b.power ? -1 : 1))
    .slice(0, Number(p.maxValidators));
  if (ranked.length === 0) return [];
  // CometBFT's cap on a set's total power: a set over it would halt consensus, so it is not handed
  // over (a genesis with a tiny power_reduction and huge balances could reach it).
  if (ranked.reduce((t, v) => t + v.power, 0n) > MAX_TOTAL_VOTING_POWER) return [];
  const active = new Map(ranked.map((v) => [v.hex, v.power]));
  const updates: ValidatorUpdate[] = [];
  for (const v of all) {
    const next = active.get(v.hex) ?? 0n;
    if (next === v.lastPower) continue;
    if (beforePowerChange) await beforePowerChange(v.operator, v.lastPower, next);
    store.setLastPower(v.operator, next);
    // The Cosmos SDK's bonded -> unbonding -> unbonded: a redelegation away from a validator that
    // left the set matures when its unbonding does, and at once after that (staking.ts redelegate).
    if (next === 0n) {
      store.setUnbondingEnd(v.operator, time + p.unbondingTime);
      if (height !== undefined) store.setUnbondingHeight(v.operator, height);
    } else if (v.lastPower === 0n) {
      store.setUnbondingEnd(v.operator, 0n);
      store.setUnbondingHeight(v.operator, 0n);
    }
    updates.push({ pubKey: v.pubKey, power: next });
  }
  return updates;
}

/**
 * The end of the block's pruning (docs/staking.md "Pruning"): takes the entries that matured by
 * `time` off the maturity queue, at most MAX_MATURED_PER_BLOCK, in the order they were queued. A
 * matured redelegation entry is deleted (it is no longer slashable and holds no BTC); a delegator
 * whose last entry from a validator matured leaves that validator's list of unbonding (or
 * redelegating) delegators. Matured unbonding entries stay until withdrawUnbonded() pays them
 * (they hold the delegator's BTC; at most 16 per delegator). Reads two slots and writes nothing
 * when nothing matured. Returns the number of queue elements taken.
 */
export async function completeMatured(state: SlotStore, time: bigint): Promise<number> {
  const store = new StakingStore(state);
  const items = await store.maturityQueue(MAX_MATURED_PER_BLOCK);
  let taken = 0;
  for (const it of items) {
    // In queue order: an element queued after a later completion waits for it (a redelegation
    // from an unbonding validator matures before one made earlier from a bonded one).
    if (it.completion > time) break;
    taken++;
    if (it.kind === 'red') {
      const entries = await store.redelegations(it.delegator);
      const live = entries.filter((e) => e.completionTime > time);
      if (live.length !== entries.length) await store.setRedelegations(it.delegator, live);
      if (!live.some((e) => equal(e.src, it.operator)))
        await store.dropRedelegatingDelegator(it.operator, it.delegator);
    } else {
      const entries = await store.unbondings(it.delegator);
      if (!entries.some((e) => equal(e.operator, it.operator) && e.completionTime > time))
        await store.dropUnbondingDelegator(it.operator, it.delegator);
    }
  }
  await store.dequeueMaturity(taken);
  return taken;
}

/** Base units that `shares` of a validator with `tokens` and `totalShares` are worth (rounded down). */
export function tokensOfShares(shares: bigint, tokens: bigint, totalShares: bigint): bigint {
  return totalShares === 0n ? 0n : (shares * tokens) / totalShares;
}

/** A map-backed SlotStore: the genesis storage of the pool account. */
export class SlotMap implements SlotStore {
  readonly slots = new Map<string, Uint8Array>();
  async readSlot(_addr: string, s: string): Promise<Uint8Array> {
    return this.slots.get(s) ?? new Uint8Array(0);
  }
  writeSlot(_addr: string, s: string, value: Uint8Array): void {
    let i = 0;
    while (i < value.length && value[i] === 0) i++;
    this.slots.set(s, value.slice(i));
  }
}

export interface GenesisBond {
  operator: Uint8Array;
  pubKey: Uint8Array;
  selfBond: bigint;
  moniker: string;
  commissionBps: number;
}

/**
 * The pool account's genesis storage: the params, and each genesis validator created and bonded by
 * its operator with the power consensus starts with. Returns the slots and the pool's balance.
 */
export async function genesisPoolStorage(
  params: StakingParamValues,
  bonds: GenesisBond[],
): Promise<{ slots: Map<string, Uint8Array>; balance: bigint }> {
  const m = new SlotMap();
  const store = new StakingStore(m);
  store.setParams(params);
  let balance = 0n;
  for (const b of bonds) {
    await store.create(b.operator, b.pubKey, b.moniker, b.commissionBps);
    store.setBonded(b.operator, b.selfBond);
    store.setTotalShares(b.operator, b.selfBond);
    store.setDelegationShares(b.operator, b.operator, b.selfBond);
    store.setLastPower(b.operator, b.selfBond / params.powerReduction);
    balance += b.selfBond;
  }
  for (const [k, v] of m.slots) if (v.length === 0) m.slots.delete(k);
  return { slots: m.slots, balance };
}
