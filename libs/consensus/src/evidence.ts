// Duplicate-vote evidence: formed from two conflicting votes, verified against the validator set of
// its height, expired only when BOTH max_age_num_blocks and max_age_duration are exceeded.
import type { ConsensusParams, DuplicateVoteEvidence, TimeNs, Vote } from '@noded/types';
import type { Verifier } from './block.js';
import { encodePartSetHeader, voteSignBytes } from './codec/types.js';
import { ConsensusError } from './errors.js';
import { blockIdEqual, bytesEqual, hex } from './hash.js';
import type { ValidatorSet } from './validators.js';

function blockIdSortKey(v: Vote): Uint8Array {
  const psh = encodePartSetHeader(v.blockId.partSetHeader);
  const out = new Uint8Array(v.blockId.hash.length + psh.length);
  out.set(v.blockId.hash);
  out.set(psh, v.blockId.hash.length);
  return out;
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

/**
 * The vote without its extension. Evidence never carries extensions: an equivocator could attach
 * different ones to the same vote for different peers, and the evidence (hashed into the block)
 * would then differ from node to node.
 */
function withoutExtension(v: Vote): Vote {
  const { extension: _e, extensionSignature: _s, ...rest } = v;
  return rest;
}

const hasExtension = (v: Vote) => (v.extension?.length ?? 0) > 0 || (v.extensionSignature?.length ?? 0) > 0;

/** NewDuplicateVoteEvidence: votes ordered by block id key; powers from the set of that height. */
export function makeDuplicateVoteEvidence(
  vote1: Vote,
  vote2: Vote,
  blockTime: TimeNs,
  validators: ValidatorSet,
): DuplicateVoteEvidence {
  const idx = validators.indexOf(vote1.validatorAddress);
  if (idx < 0)
    throw new ConsensusError(
      'INVALID_EVIDENCE',
      `validator ${hex(vote1.validatorAddress).toUpperCase()} is not in the set of height ${vote1.height}`,
    );
  const [voteA, voteB] =
    compareBytes(blockIdSortKey(vote1), blockIdSortKey(vote2)) < 0
      ? [withoutExtension(vote1), withoutExtension(vote2)]
      : [withoutExtension(vote2), withoutExtension(vote1)];
  return {
    voteA,
    voteB,
    totalVotingPower: validators.totalVotingPower,
    validatorPower: validators.getByIndex(idx)!.votingPower,
    timestamp: blockTime,
  };
}

/**
 * VerifyDuplicateVote plus the pool's checks: same height/round/type/validator, different block ids
 * in canonical order, powers matching the set of that height, the block time of that height, and
 * both signatures valid.
 */
export function verifyDuplicateVoteEvidence(
  chainId: string,
  e: DuplicateVoteEvidence,
  validators: ValidatorSet,
  blockTime: TimeNs,
  verify: Verifier,
): void {
  const fail = (why: string): never => {
    throw new ConsensusError(
      'INVALID_EVIDENCE',
      `duplicate vote evidence at height ${e.voteA.height}: ${why}`,
    );
  };
  const a = e.voteA;
  const b = e.voteB;
  if (a.height !== b.height || a.round !== b.round || a.type !== b.type)
    fail(`h/r/s do not match: ${a.height}/${a.round}/${a.type} vs ${b.height}/${b.round}/${b.type}`);
  if (!bytesEqual(a.validatorAddress, b.validatorAddress))
    fail(`validator addresses do not match: ${hex(a.validatorAddress)} vs ${hex(b.validatorAddress)}`);
  if (a.validatorIndex !== b.validatorIndex)
    fail(`validator indexes do not match: ${a.validatorIndex} vs ${b.validatorIndex}`);
  if (blockIdEqual(a.blockId, b.blockId)) fail('block ids are the same: not a duplicate vote');
  if (hasExtension(a) || hasExtension(b)) fail('votes in evidence must not carry vote extensions');
  if (compareBytes(blockIdSortKey(a), blockIdSortKey(b)) >= 0)
    fail('votes are not in canonical order (vote_a block id must sort first)');
  const idx = validators.indexOf(a.validatorAddress);
  if (idx < 0)
    fail(`address ${hex(a.validatorAddress).toUpperCase()} was not a validator at height ${a.height}`);
  if (idx !== a.validatorIndex) fail(`validator index ${a.validatorIndex} is not the address's index ${idx}`);
  const val = validators.getByIndex(idx)!;
  if (val.votingPower !== e.validatorPower)
    fail(`validator power ${e.validatorPower} does not match the set (${val.votingPower})`);
  if (validators.totalVotingPower !== e.totalVotingPower)
    fail(`total voting power ${e.totalVotingPower} does not match the set (${validators.totalVotingPower})`);
  if (e.timestamp !== blockTime)
    fail(`timestamp ${e.timestamp} is not the block time ${blockTime} of that height`);
  if (!verify(val.pubKey, voteSignBytes(chainId, a), a.signature)) fail('vote_a signature is invalid');
  if (!verify(val.pubKey, voteSignBytes(chainId, b), b.signature)) fail('vote_b signature is invalid');
}

/** Expired only when older than max_age_num_blocks AND older than max_age_duration. */
export function isEvidenceExpired(
  params: ConsensusParams,
  lastBlockHeight: number,
  lastBlockTime: TimeNs,
  evidenceHeight: number,
  evidenceTime: TimeNs,
): boolean {
  const ageNumBlocks = BigInt(lastBlockHeight - evidenceHeight);
  const ageDuration = lastBlockTime - evidenceTime;
  return ageNumBlocks > params.evidence.maxAgeNumBlocks && ageDuration > params.evidence.maxAgeDuration;
}
