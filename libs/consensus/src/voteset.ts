// Vote tallies by voting power. One VoteSet per (height, round, type); adding a vote is O(1)
// apart from its signature check. A second, different vote from the same validator is a conflict:
// it is not counted and is reported so duplicate-vote evidence can be formed.
import type { BlockId, Commit, CommitSig, ConsensusParams, Vote, VoteType } from '@noded/types';
import type { Verifier } from './block.js';
import { voteExtensionSignBytes, voteSignBytes } from './codec/types.js';
import { blockIdKey, bytesEqual } from './hash.js';
import type { ValidatorSet } from './validators.js';

export type AddVoteResult =
  | { status: 'added' }
  | { status: 'duplicate' }
  | { status: 'conflict'; existing: Vote }
  /**
   * `relayable`: an honest peer may pass such a vote on (it is for another round or type, or from an
   * equivocator already counted thrice); otherwise the vote is forged or malformed and its sender
   * misbehaves.
   */
  | { status: 'invalid'; reason: string; relayable?: true };

const EMPTY = new Uint8Array(0);

/**
 * Whether precommits at `height` carry vote extensions: consensus_params.abci.
 * vote_extensions_enable_height is set (> 0) and reached, as CometBFT decides it.
 */
export function voteExtensionsEnabled(params: ConsensusParams, height: number): boolean {
  const from = params.abci.voteExtensionsEnableHeight;
  return from > 0n && BigInt(height) >= from;
}

/**
 * Largest vote extension accepted, in bytes (CometBFT sets no limit of its own; this one keeps a
 * precommit small enough to gossip and 100 validators' extensions under 2 MB per proposer). The
 * bridge's deposits take about 110 bytes each.
 */
export const MAX_VOTE_EXTENSION_BYTES = 16 * 1024;

/**
 * Why the extension fields of `vote` are not acceptable, or null when they are. With extensions on
 * (at the vote's height), a non-nil precommit must carry an extension of at most
 * MAX_VOTE_EXTENSION_BYTES signed over voteExtensionSignBytes; every other vote must carry none.
 */
export function voteExtensionProblem(
  chainId: string,
  vote: Vote,
  extensionsEnabled: boolean,
  pubKey: Uint8Array,
  verify: Verifier,
): string | null {
  const ext = vote.extension ?? EMPTY;
  const sig = vote.extensionSignature ?? EMPTY;
  if (!extensionsEnabled || vote.type !== 2 || vote.blockId.hash.length === 0) {
    if (ext.length > 0 || sig.length > 0)
      return extensionsEnabled
        ? 'a prevote or nil precommit carries a vote extension'
        : `vote extensions are not enabled at height ${vote.height}, but the vote carries one`;
    return null;
  }
  if (ext.length > MAX_VOTE_EXTENSION_BYTES)
    return `vote extension is ${ext.length} bytes, over the limit of ${MAX_VOTE_EXTENSION_BYTES}`;
  if (sig.length === 0) return 'precommit without a vote extension signature';
  if (!verify(pubKey, voteExtensionSignBytes(chainId, vote), sig)) return 'invalid vote extension signature';
  return null;
}

/** Distinct blocks one validator may be counted for in one set (its first vote plus conflicts). */
const MAX_BLOCKS_PER_VALIDATOR = 3;

interface BlockTally {
  power: bigint;
  blockId: BlockId;
  votes: Map<number, Vote>;
}

/**
 * Votes of one (height, round, type). Each validator's first vote is "its" vote (sum, listing,
 * evidence); a conflicting vote is reported, and still counted towards the block it is for, so a
 * node that heard an equivocator's other vote first still sees a +2/3 that others see (CometBFT
 * reaches the same with peer-claimed majorities). Counting an equivocator for two blocks keeps
 * quorum intersection: two +2/3 quorums still share an honest validator.
 */
export class VoteSet {
  private readonly votes: Array<Vote | undefined>;
  private readonly byBlock = new Map<string, BlockTally>();
  private readonly blocksOf = new Map<number, number>();
  private sumPower = 0n;
  private maj23Key: string | null = null;
  private readonly total: bigint;

  constructor(
    readonly chainId: string,
    readonly height: number,
    readonly round: number,
    readonly type: VoteType,
    readonly validators: ValidatorSet,
    /** Precommits of this height must carry signed vote extensions (see voteExtensionProblem). */
    readonly extensionsEnabled = false,
  ) {
    this.votes = new Array(validators.size);
    this.total = validators.totalVotingPower;
  }

  /**
   * Adds a vote after checking its validator and signature (skipped when `trusted`, for the node's
   * own votes straight from its signer and votes from its own stored commits).
   */
  add(vote: Vote, verify: Verifier, trusted = false): AddVoteResult {
    if (vote.height !== this.height || vote.round !== this.round || vote.type !== this.type) {
      return {
        status: 'invalid',
        reason: `vote ${vote.height}/${vote.round}/${vote.type} does not belong to set ${this.height}/${this.round}/${this.type}`,
        relayable: true,
      };
    }
    const idx = vote.validatorIndex;
    const val = this.validators.getByIndex(idx);
    if (!val)
      return {
        status: 'invalid',
        reason: `validator index ${idx} is out of range 0..${this.validators.size - 1}`,
      };
    if (!bytesEqual(val.address, vote.validatorAddress))
      return { status: 'invalid', reason: `validator index ${idx} does not belong to the vote's address` };
    const key = blockIdKey(vote.blockId);
    const tally = this.byBlock.get(key);
    if (tally?.votes.has(idx)) return { status: 'duplicate' };
    const existing = this.votes[idx];
    if (existing && (this.blocksOf.get(idx) ?? 0) >= MAX_BLOCKS_PER_VALIDATOR) {
      return {
        status: 'invalid',
        reason: `validator ${idx} already voted for ${MAX_BLOCKS_PER_VALIDATOR} different blocks`,
        relayable: true,
      };
    }
    if (!trusted && !verify(val.pubKey, voteSignBytes(this.chainId, vote), vote.signature))
      return { status: 'invalid', reason: 'invalid signature' };
    if (!trusted) {
      const problem = voteExtensionProblem(this.chainId, vote, this.extensionsEnabled, val.pubKey, verify);
      if (problem) return { status: 'invalid', reason: problem };
    }
    this.count(idx, key, vote, val.votingPower);
    if (existing) return { status: 'conflict', existing };
    this.votes[idx] = vote;
    this.sumPower += val.votingPower;
    return { status: 'added' };
  }

  private count(idx: number, key: string, vote: Vote, power: bigint): void {
    let t = this.byBlock.get(key);
    if (!t) {
      t = { power: 0n, blockId: vote.blockId, votes: new Map() };
      this.byBlock.set(key, t);
    }
    t.votes.set(idx, vote);
    t.power += power;
    this.blocksOf.set(idx, (this.blocksOf.get(idx) ?? 0) + 1);
    if (this.maj23Key === null && t.power * 3n > this.total * 2n) this.maj23Key = key;
  }

  /** The validator's first vote. */
  get(index: number): Vote | undefined {
    return this.votes[index];
  }

  /** Every validator's first vote, in validator order. */
  list(): Vote[] {
    return this.votes.filter((v): v is Vote => v !== undefined);
  }

  /** Every vote held, conflicting ones included. */
  all(): Vote[] {
    const out: Vote[] = [];
    for (const t of this.byBlock.values()) out.push(...t.votes.values());
    return out;
  }

  /** 'x'/'_' per validator: whose vote this set holds. */
  bits(): string {
    let out = '';
    for (let i = 0; i < this.votes.length; i++) out += this.votes[i] ? 'x' : '_';
    return out;
  }

  /** All votes for the block with this key (conflicting ones included). */
  votesFor(key: string): Vote[] {
    return [...(this.byBlock.get(key)?.votes.values() ?? [])];
  }

  get sum(): bigint {
    return this.sumPower;
  }

  /** More than 2/3 of the power voted, for anything. */
  hasTwoThirdsAny(): boolean {
    return this.sumPower * 3n > this.total * 2n;
  }

  /** The block id (possibly nil) more than 2/3 of the power voted for, if any (the first to get there). */
  twoThirdsMajority(): { key: string; blockId: BlockId } | null {
    if (this.maj23Key === null) return null;
    return { key: this.maj23Key, blockId: this.byBlock.get(this.maj23Key)!.blockId };
  }

  /** Power that voted for the block with this key ("" = nil). */
  powerFor(key: string): bigint {
    return this.byBlock.get(key)?.power ?? 0n;
  }

  hasTwoThirdsFor(key: string): boolean {
    return this.powerFor(key) * 3n > this.total * 2n;
  }

  /** The commit formed by these precommits for `blockId` (flags: 2 for it, 3 nil, 1 absent/other). */
  makeCommit(blockId: BlockId): Commit {
    const key = blockIdKey(blockId);
    const forBlock = this.byBlock.get(key)?.votes ?? new Map<number, Vote>();
    const absent = (): CommitSig => ({
      blockIdFlag: 1,
      validatorAddress: new Uint8Array(0),
      timestamp: 0n,
      signature: new Uint8Array(0),
    });
    const signatures: CommitSig[] = this.validators.validators.map((v, i) => {
      const mine = forBlock.get(i);
      if (mine)
        return {
          blockIdFlag: 2,
          validatorAddress: v.address,
          timestamp: mine.timestamp,
          signature: mine.signature,
        };
      const vote = this.votes[i];
      if (vote && vote.blockId.hash.length === 0)
        return {
          blockIdFlag: 3,
          validatorAddress: v.address,
          timestamp: vote.timestamp,
          signature: vote.signature,
        };
      return absent();
    });
    return { height: this.height, round: this.round, blockId, signatures };
  }

  /**
   * makeCommit with each commit vote's extension and extension signature (CometBFT's
   * ExtendedCommit): what the next proposer hands the application, and what is stored for it.
   */
  makeExtendedCommit(blockId: BlockId): Commit {
    const c = this.makeCommit(blockId);
    const forBlock = this.byBlock.get(blockIdKey(blockId))?.votes;
    c.signatures = c.signatures.map((sig, i) => {
      const v = sig.blockIdFlag === 2 ? forBlock?.get(i) : undefined;
      if (!v?.extensionSignature || v.extensionSignature.length === 0) return sig;
      return { ...sig, extension: v.extension ?? EMPTY, extensionSignature: v.extensionSignature };
    });
    return c;
  }

  /** "BA{4:xx_x} 30/40 = 0.75", as CometBFT's round state dump shows vote bit arrays. */
  bitArrayString(): string {
    const bits = this.validators.validators.map((_, i) => (this.votes[i] ? 'x' : '_')).join('');
    const ratio = this.total === 0n ? 0 : Number((this.sumPower * 10000n) / this.total) / 10000;
    return `BA{${this.validators.size}:${bits}} ${this.sumPower}/${this.total} = ${ratio.toFixed(2)}`;
  }
}

/** Prevotes and precommits of every round of one height, plus per-round "any vote" power for round skips. */
export class HeightVoteSet {
  private readonly rounds = new Map<
    number,
    { prevotes: VoteSet; precommits: VoteSet; anyVoters: Set<number>; anyPower: bigint }
  >();

  constructor(
    readonly chainId: string,
    readonly height: number,
    readonly validators: ValidatorSet,
    readonly extensionsEnabled = false,
  ) {}

  private round(r: number) {
    let entry = this.rounds.get(r);
    if (!entry) {
      entry = {
        prevotes: new VoteSet(this.chainId, this.height, r, 1, this.validators),
        precommits: new VoteSet(this.chainId, this.height, r, 2, this.validators, this.extensionsEnabled),
        anyVoters: new Set(),
        anyPower: 0n,
      };
      this.rounds.set(r, entry);
    }
    return entry;
  }

  prevotes(r: number): VoteSet {
    return this.round(r).prevotes;
  }

  precommits(r: number): VoteSet {
    return this.round(r).precommits;
  }

  add(vote: Vote, verify: Verifier, trusted = false): AddVoteResult {
    const entry = this.round(vote.round);
    const set = vote.type === 1 ? entry.prevotes : entry.precommits;
    const res = set.add(vote, verify, trusted);
    if (res.status === 'added' && !entry.anyVoters.has(vote.validatorIndex)) {
      entry.anyVoters.add(vote.validatorIndex);
      entry.anyPower += this.validators.getByIndex(vote.validatorIndex)!.votingPower;
    }
    return res;
  }

  /** More than 1/3 of the power sent some vote in round r. */
  hasOneThirdAny(r: number): boolean {
    const e = this.rounds.get(r);
    return !!e && e.anyPower * 3n > this.validators.totalVotingPower;
  }

  /** Rounds with any votes, ascending. */
  roundNumbers(): number[] {
    return [...this.rounds.keys()].sort((a, b) => a - b);
  }
}
