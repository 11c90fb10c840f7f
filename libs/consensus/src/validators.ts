// Validator sets and proposer selection: CometBFT's weighted round-robin with proposer priorities.
// Each increment adds every validator's power to its priority and charges the total power to the
// one with the highest priority (ties: lowest address), who proposes. Before incrementing, priorities
// are scaled so max-min stays within 2 * total power and centred on their average. New validators
// start at -1.125 * total power. The set is ordered by power (descending), then address (ascending);
// that order defines validator indexes and validators_hash.
import { ed25519Address } from '@noded/crypto';
import type { Validator } from '@noded/types';
import { toTaggedJson } from './codec/json.js';
import { ConsensusError } from './errors.js';
import { bytesEqual, hex, validatorsHash } from './hash.js';

/** Largest allowed total voting power (int64 max / 8, as CometBFT). */
export const MAX_TOTAL_VOTING_POWER = (2n ** 63n - 1n) / 8n;
/** Priorities are kept within PRIORITY_WINDOW_SIZE_FACTOR * total power of each other. */
export const PRIORITY_WINDOW_SIZE_FACTOR = 2n;

const utf8 = new TextEncoder();
const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);
const clip = (v: bigint): bigint => (v > INT64_MAX ? INT64_MAX : v < INT64_MIN ? INT64_MIN : v);

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

/** Canonical order: voting power descending, then address ascending. */
function byPowerThenAddress(a: Validator, b: Validator): number {
  if (a.votingPower !== b.votingPower) return a.votingPower > b.votingPower ? -1 : 1;
  return compareBytes(a.address, b.address);
}

/**
 * The tagged JSON of a set's stored form with what it was computed from: the members' key objects
 * and their power and priority, and the proposer's address. The validators are plain objects that
 * the set changes in place (priorities at every increment), so the text is used only while all of
 * these still match, whoever changed them.
 */
interface StoredJson {
  text: string;
  /** The text in UTF-8, made at its first use. */
  bytes: Uint8Array | null;
  keys: Uint8Array[];
  powers: bigint[];
  priorities: bigint[];
  proposer: string | null;
}

/** A change to the set: power 0 removes the validator. */
export interface ValidatorChange {
  pubKey: Uint8Array;
  votingPower: bigint;
}

export class ValidatorSet {
  readonly validators: Validator[];
  private proposerAddr: Uint8Array | null;
  private total = 0n;
  private index = new Map<string, number>();
  private cachedHash: Uint8Array | null = null;
  private cachedJson: StoredJson | null = null;

  private constructor(validators: Validator[], proposer: Uint8Array | null) {
    this.validators = validators;
    this.proposerAddr = proposer;
    this.reindex();
  }

  /** NewValidatorSet of CometBFT: the given validators, priorities reset, incremented once. */
  static create(changes: ValidatorChange[]): ValidatorSet {
    const set = new ValidatorSet([], null);
    set.applyChanges(changes, false);
    if (set.validators.length > 0) set.incrementProposerPriority(1);
    return set;
  }

  /** Rebuilds a set persisted with its priorities and current proposer. */
  static restore(validators: Validator[], proposerAddress: Uint8Array | null): ValidatorSet {
    return new ValidatorSet(
      validators.map((v) => ({ ...v })),
      proposerAddress ? proposerAddress.slice() : null,
    );
  }

  static empty(): ValidatorSet {
    return new ValidatorSet([], null);
  }

  private reindex(): void {
    this.cachedHash = null;
    this.index.clear();
    let total = 0n;
    this.validators.forEach((v, i) => {
      this.index.set(hex(v.address), i);
      total += v.votingPower;
    });
    if (total > MAX_TOTAL_VOTING_POWER) {
      throw new ConsensusError(
        'INVALID_VALIDATOR_SET',
        `total voting power ${total} exceeds the maximum ${MAX_TOTAL_VOTING_POWER}`,
      );
    }
    this.total = total;
  }

  copy(): ValidatorSet {
    const c = ValidatorSet.restore(this.validators, this.proposerAddr);
    // The copy's members are equal field by field (their key arrays the same objects): it may start
    // from this set's text, which it checks against its own members at every use as this set does.
    c.cachedJson = this.cachedJson;
    return c;
  }

  /**
   * Tagged JSON of `{validators, proposer}` (chainstate's StoredValidatorSet, what the state store
   * writes at every block), computed again only when a member's power or priority, the members or the
   * proposer changed since it was last computed, for this set or the one it was copied from.
   */
  storedJson(): string {
    return this.stored().text;
  }

  /** storedJson() in UTF-8, shared by every use until the set changes: not to be written into. */
  storedJsonBytes(): Uint8Array {
    const c = this.stored();
    if (!c.bytes) c.bytes = utf8.encode(c.text);
    return c.bytes;
  }

  private stored(): StoredJson {
    const c = this.cachedJson;
    const proposer = this.proposerAddr ? hex(this.proposerAddr) : null;
    if (c && c.proposer === proposer && c.powers.length === this.validators.length) {
      let same = true;
      for (let i = 0; i < this.validators.length && same; i++) {
        const v = this.validators[i]!;
        same =
          c.keys[2 * i] === v.address &&
          c.keys[2 * i + 1] === v.pubKey &&
          c.powers[i] === v.votingPower &&
          c.priorities[i] === v.proposerPriority;
      }
      if (same) return c;
    }
    this.cachedJson = {
      text: toTaggedJson({ validators: this.validators, proposer: this.proposerAddr }),
      bytes: null,
      keys: this.validators.flatMap((v) => [v.address, v.pubKey]),
      powers: this.validators.map((v) => v.votingPower),
      priorities: this.validators.map((v) => v.proposerPriority),
      proposer,
    };
    return this.cachedJson;
  }

  get size(): number {
    return this.validators.length;
  }

  get totalVotingPower(): bigint {
    return this.total;
  }

  indexOf(address: Uint8Array): number {
    return this.index.get(hex(address)) ?? -1;
  }

  getByIndex(i: number): Validator | undefined {
    return this.validators[i];
  }

  /** validators_hash (priorities do not enter it, so it is cached until the members change). */
  hash(): Uint8Array {
    if (!this.cachedHash) this.cachedHash = validatorsHash(this.validators);
    return this.cachedHash;
  }

  /** The proposer chosen by the last increment (round 0 of the height this set is for). */
  get proposer(): Validator {
    if (this.validators.length === 0)
      throw new ConsensusError('INVALID_VALIDATOR_SET', 'empty validator set has no proposer');
    if (this.proposerAddr) {
      const i = this.indexOf(this.proposerAddr);
      if (i >= 0) return this.validators[i]!;
    }
    return this.withMostPriority();
  }

  get proposerAddress(): Uint8Array | null {
    return this.proposerAddr;
  }

  private withMostPriority(): Validator {
    let best: Validator | undefined;
    for (const v of this.validators) {
      if (
        !best ||
        v.proposerPriority > best.proposerPriority ||
        (v.proposerPriority === best.proposerPriority && compareBytes(v.address, best.address) < 0)
      ) {
        best = v;
      }
    }
    return best!;
  }

  /** Scales priorities so that max - min <= diffMax (integer division by ceil(diff/diffMax)). */
  private rescalePriorities(diffMax: bigint): void {
    if (diffMax <= 0n || this.validators.length === 0) return;
    let max = INT64_MIN;
    let min = INT64_MAX;
    for (const v of this.validators) {
      if (v.proposerPriority > max) max = v.proposerPriority;
      if (v.proposerPriority < min) min = v.proposerPriority;
    }
    let diff = max - min;
    if (diff < 0n) diff = -diff;
    const ratio = (diff + diffMax - 1n) / diffMax;
    if (diff > diffMax) {
      for (const v of this.validators) v.proposerPriority = v.proposerPriority / ratio; // truncates, as Go
    }
  }

  /** Centres priorities on their average (Euclidean division, as Go's big.Int). */
  private shiftByAverage(): void {
    const n = BigInt(this.validators.length);
    if (n === 0n) return;
    let sum = 0n;
    for (const v of this.validators) sum += v.proposerPriority;
    let avg = sum / n;
    if (sum < 0n && avg * n !== sum) avg -= 1n;
    for (const v of this.validators) v.proposerPriority = clip(v.proposerPriority - avg);
  }

  incrementProposerPriority(times: number): void {
    if (this.validators.length === 0)
      throw new ConsensusError('INVALID_VALIDATOR_SET', 'empty validator set');
    if (times <= 0)
      throw new ConsensusError('INVALID_VALIDATOR_SET', `increment times must be positive, got ${times}`);
    this.rescalePriorities(PRIORITY_WINDOW_SIZE_FACTOR * this.total);
    this.shiftByAverage();
    let proposer: Validator | undefined;
    for (let i = 0; i < times; i++) {
      for (const v of this.validators) v.proposerPriority = clip(v.proposerPriority + v.votingPower);
      proposer = this.withMostPriority();
      proposer.proposerPriority = clip(proposer.proposerPriority - this.total);
    }
    this.proposerAddr = proposer!.address;
  }

  copyIncrement(times: number): ValidatorSet {
    const c = this.copy();
    if (times > 0) c.incrementProposerPriority(times);
    return c;
  }

  /**
   * Applies validator changes (UpdateWithChangeSet): new validators start at -1.125 * total power
   * (computed before removals), updated ones keep their priority, power 0 removes; then priorities are
   * rescaled and centred and the set re-sorted. The set is unchanged if the changes are invalid.
   */
  applyChanges(changes: ValidatorChange[], allowDeletes = true): void {
    if (changes.length === 0) return;
    const seen = new Set<string>();
    const updates: Validator[] = [];
    const removals: Uint8Array[] = [];
    for (const c of changes) {
      if (c.pubKey.length !== 32)
        throw new ConsensusError(
          'INVALID_VALIDATOR_SET',
          `validator pub_key must be 32 bytes of ed25519, got ${c.pubKey.length}`,
        );
      const address = ed25519Address(c.pubKey);
      const key = hex(address);
      if (seen.has(key))
        throw new ConsensusError(
          'INVALID_VALIDATOR_SET',
          `duplicate validator ${key.toUpperCase()} in one update`,
        );
      seen.add(key);
      if (c.votingPower < 0n)
        throw new ConsensusError(
          'INVALID_VALIDATOR_SET',
          `voting power of ${key.toUpperCase()} can't be negative: ${c.votingPower}`,
        );
      if (c.votingPower > MAX_TOTAL_VOTING_POWER)
        throw new ConsensusError(
          'INVALID_VALIDATOR_SET',
          `voting power of ${key.toUpperCase()} exceeds ${MAX_TOTAL_VOTING_POWER}`,
        );
      if (c.votingPower === 0n) removals.push(address);
      else
        updates.push({ address, pubKey: c.pubKey.slice(), votingPower: c.votingPower, proposerPriority: 0n });
    }
    if (!allowDeletes && removals.length > 0)
      throw new ConsensusError(
        'INVALID_VALIDATOR_SET',
        'validators with voting power 0 are not allowed here',
      );
    let removedPower = 0n;
    for (const a of removals) {
      const i = this.indexOf(a);
      if (i < 0)
        throw new ConsensusError(
          'INVALID_VALIDATOR_SET',
          `cannot remove ${hex(a).toUpperCase()}: not a validator`,
        );
      removedPower += this.validators[i]!.votingPower;
    }
    const newCount = updates.filter((u) => this.indexOf(u.address) < 0).length;
    if (newCount === 0 && removals.length === this.validators.length)
      throw new ConsensusError(
        'INVALID_VALIDATOR_SET',
        'applying the validator changes would leave an empty set',
      );
    let tvpAfterUpdatesBeforeRemovals = this.total;
    for (const u of updates) {
      const i = this.indexOf(u.address);
      tvpAfterUpdatesBeforeRemovals += u.votingPower - (i >= 0 ? this.validators[i]!.votingPower : 0n);
    }
    if (tvpAfterUpdatesBeforeRemovals - removedPower > MAX_TOTAL_VOTING_POWER)
      throw new ConsensusError(
        'INVALID_VALIDATOR_SET',
        `total voting power would exceed ${MAX_TOTAL_VOTING_POWER}`,
      );
    for (const u of updates) {
      const i = this.indexOf(u.address);
      u.proposerPriority =
        i >= 0
          ? this.validators[i]!.proposerPriority
          : -(tvpAfterUpdatesBeforeRemovals + (tvpAfterUpdatesBeforeRemovals >> 3n));
    }
    const byAddr = new Map<string, Validator>();
    for (const v of this.validators) byAddr.set(hex(v.address), v);
    for (const u of updates) byAddr.set(hex(u.address), u);
    for (const a of removals) byAddr.delete(hex(a));
    const next = [...byAddr.values()];
    this.validators.length = 0;
    this.validators.push(...next);
    this.reindex();
    this.rescalePriorities(PRIORITY_WINDOW_SIZE_FACTOR * this.total);
    this.shiftByAverage();
    this.validators.sort(byPowerThenAddress);
    this.reindex();
    if (this.proposerAddr && this.indexOf(this.proposerAddr) < 0) this.proposerAddr = null;
  }

  /** The proposer of `round` for the height this set is for (round 0 = the set's proposer). */
  proposerForRound(round: number): Validator {
    if (round === 0) return this.proposer;
    return this.copyIncrement(round).proposer;
  }

  equals(other: ValidatorSet): boolean {
    if (other.size !== this.size) return false;
    return this.validators.every(
      (v, i) =>
        bytesEqual(v.address, other.validators[i]!.address) &&
        v.votingPower === other.validators[i]!.votingPower,
    );
  }
}
