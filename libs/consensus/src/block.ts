// Building and checking blocks against the chain state: header fields, last commit, BFT time,
// size limits. Pure functions; evidence that needs history (validator sets of past heights, committed
// evidence) is checked by the runtime (see evidence.ts).
import type {
  Block,
  BlockId,
  Commit,
  CommitInfo,
  ConsensusParams,
  DuplicateVoteEvidence,
  TimeNs,
  Vote,
} from '@noded/types';
import { BLOCK_PROTOCOL, type ChainState } from './chainstate.js';
import { encodeEvidence, isNilBlockId, voteSignBytes } from './codec/types.js';
import { ConsensusError } from './errors.js';
import {
  blockIdEqual,
  blockIdOf,
  blockSize,
  bytesEqual,
  commitHash,
  consensusParamsHash,
  evidenceListHash,
  hex,
  txsHash,
} from './hash.js';
import type { ValidatorSet } from './validators.js';
import { voteExtensionProblem } from './voteset.js';

/** Signature check used by the engine; pure (a cache in front of it is allowed). */
export type Verifier = (pubKey: Uint8Array, message: Uint8Array, signature: Uint8Array) => boolean;

// Size bounds of CometBFT (types/block.go, types/params.go).
export const MAX_HEADER_BYTES = 626;
export const MAX_OVERHEAD_FOR_BLOCK = 11;
export const MAX_COMMIT_OVERHEAD_BYTES = 94;
export const MAX_COMMIT_SIG_BYTES = 109;
/** Hard cap used when block.max_bytes is -1. */
export const MAX_BLOCK_SIZE_BYTES = 104857600;
/** Minimum spacing of block times (CometBFT's timeIota). */
export const TIME_IOTA_NS = 1_000_000n;

export function maxBlockBytes(params: ConsensusParams): number {
  const m = params.block.maxBytes;
  return m === -1n ? MAX_BLOCK_SIZE_BYTES : Number(m);
}

/** Bytes left for transactions once header, last commit and evidence are accounted (MaxDataBytes). */
export function maxDataBytes(params: ConsensusParams, evidenceBytes: number, validatorCount: number): number {
  const commitBytes = MAX_COMMIT_OVERHEAD_BYTES + (MAX_COMMIT_SIG_BYTES + 2) * validatorCount;
  const n = maxBlockBytes(params) - MAX_OVERHEAD_FOR_BLOCK - MAX_HEADER_BYTES - commitBytes - evidenceBytes;
  if (n < 0) {
    throw new ConsensusError(
      'INVALID_BLOCK',
      `block.max_bytes ${params.block.maxBytes} is too small for the header, last commit and evidence (${-(n - maxBlockBytes(params))} bytes)`,
    );
  }
  return n;
}

export function evidenceBytes(evidence: DuplicateVoteEvidence[]): number {
  let n = 0;
  for (const e of evidence) n += encodeEvidence(e).length;
  return n;
}

/**
 * BFT time: the median of the commit-flag precommit timestamps of `commit`, weighted by voting power.
 * Byzantine power below 1/3 cannot move it outside the honest timestamps, which are all later than
 * the committed block's time, so block times strictly increase.
 */
export function medianTime(commit: Commit, validators: ValidatorSet): TimeNs {
  const weighted: Array<{ t: TimeNs; w: bigint }> = [];
  let total = 0n;
  commit.signatures.forEach((s, i) => {
    if (s.blockIdFlag !== 2) return;
    const v = validators.getByIndex(i);
    if (!v) return;
    weighted.push({ t: s.timestamp, w: v.votingPower });
    total += v.votingPower;
  });
  weighted.sort((a, b) => (a.t < b.t ? -1 : a.t > b.t ? 1 : 0));
  let median = total / 2n;
  for (const x of weighted) {
    if (median <= x.w) return x.t;
    median -= x.w;
  }
  return weighted.at(-1)?.t ?? 0n;
}

/** The precommit a commit signature stands for. */
export function commitSigVote(commit: Commit, index: number): Vote {
  const s = commit.signatures[index]!;
  return {
    type: 2,
    height: commit.height,
    round: commit.round,
    blockId:
      s.blockIdFlag === 2
        ? commit.blockId
        : { hash: new Uint8Array(0), partSetHeader: { total: 0, hash: new Uint8Array(0) } },
    timestamp: s.timestamp,
    validatorAddress: s.validatorAddress,
    validatorIndex: index,
    signature: s.signature,
    ...(s.extensionSignature
      ? { extension: s.extension ?? new Uint8Array(0), extensionSignature: s.extensionSignature }
      : {}),
  };
}

/**
 * FinalizeBlock's decided_last_commit: each validator of the last height's set (who signed
 * `block.lastCommit`) with its power and whether its precommit for that block is in the commit.
 * Empty at the first height, which has no last commit.
 */
export function lastCommitInfo(block: Block, lastValidators: ValidatorSet): CommitInfo {
  const c = block.lastCommit;
  if (!c) return { round: 0, votes: [] };
  return {
    round: c.round,
    votes: lastValidators.validators.map((v, i) => ({
      validatorAddress: v.address,
      power: v.votingPower,
      signed: c.signatures[i]?.blockIdFlag === 2,
    })),
  };
}

/**
 * Checks that `commit` is +2/3 of `validators` precommitting `blockId` at `height`, and that every
 * present signature is valid (CometBFT's VerifyCommit).
 */
export function verifyCommit(
  chainId: string,
  validators: ValidatorSet,
  blockId: BlockId,
  height: number,
  commit: Commit,
  verify: Verifier,
): void {
  const fail = (why: string): never => {
    throw new ConsensusError('INVALID_COMMIT', `commit for height ${height}: ${why}`);
  };
  if (commit.height !== height) fail(`height ${commit.height} does not match`);
  if (!blockIdEqual(commit.blockId, blockId))
    fail(`block id ${hex(commit.blockId.hash)} does not match ${hex(blockId.hash)}`);
  if (commit.signatures.length !== validators.size)
    fail(`has ${commit.signatures.length} signatures for ${validators.size} validators`);
  let power = 0n;
  commit.signatures.forEach((s, i) => {
    if (s.blockIdFlag === 1) return;
    const v = validators.getByIndex(i)!;
    if (!bytesEqual(v.address, s.validatorAddress))
      fail(`signature ${i} is from ${hex(s.validatorAddress)}, expected ${hex(v.address)}`);
    const vote = commitSigVote(commit, i);
    if (!verify(v.pubKey, voteSignBytes(chainId, vote), s.signature)) fail(`signature ${i} is invalid`);
    if (s.blockIdFlag === 2) power += v.votingPower;
  });
  if (power * 3n <= validators.totalVotingPower * 2n)
    fail(`signed power ${power} is not more than 2/3 of ${validators.totalVotingPower}`);
}

/**
 * Checks the vote extensions of an extended commit (one verifyCommit accepted): every precommit for
 * the block carries an extension of at most MAX_VOTE_EXTENSION_BYTES with a valid extension
 * signature, and no other entry carries one (CometBFT's EnsureExtensions, plus the signatures, which
 * a block sync peer could otherwise forge: the next proposer would hand them to the application).
 */
export function verifyCommitExtensions(
  chainId: string,
  validators: ValidatorSet,
  commit: Commit,
  verify: Verifier,
): void {
  commit.signatures.forEach((_s, i) => {
    const v = validators.getByIndex(i);
    if (!v) return;
    const problem = voteExtensionProblem(chainId, commitSigVote(commit, i), true, v.pubKey, verify);
    if (problem)
      throw new ConsensusError(
        'INVALID_COMMIT',
        `extended commit for height ${commit.height}: signature ${i} (validator ${hex(v.address)}): ${problem}`,
      );
  });
}

export interface BlockDraft {
  height: number;
  time: TimeNs;
  txs: Uint8Array[];
  evidence: DuplicateVoteEvidence[];
  lastCommit: Commit | null;
  proposerAddress: Uint8Array;
}

/** Assembles a block for the next height of `chain` (CreateProposalBlock). */
export function makeBlock(chain: ChainState, d: BlockDraft): Block {
  return {
    header: {
      version: { block: BLOCK_PROTOCOL, app: Number(chain.consensusParams.version.app) },
      chainId: chain.chainId,
      height: d.height,
      time: d.time,
      lastBlockId: chain.lastBlockId,
      lastCommitHash: commitHash(d.lastCommit),
      dataHash: txsHash(d.txs),
      validatorsHash: chain.validators.hash(),
      nextValidatorsHash: chain.nextValidators.hash(),
      consensusHash: consensusParamsHash(chain.consensusParams),
      appHash: chain.appHash,
      lastResultsHash: chain.lastResultsHash,
      evidenceHash: evidenceListHash(d.evidence),
      proposerAddress: d.proposerAddress,
    },
    data: { txs: d.txs },
    evidence: d.evidence,
    lastCommit: d.lastCommit,
  };
}

/**
 * Whether the proposer picks the next block's time (after the last block's) instead of the BFT
 * median: when one validator signed the last commit and is the whole current set. Its precommit
 * timestamp alone is the median, so it already chose that time; letting it choose at proposal time
 * gives it no power it lacks, and lets a dev chain set block times (docs/consensus.md, Block time).
 */
export function proposerPicksTime(chain: ChainState): boolean {
  const last = chain.lastValidators.validators;
  const cur = chain.validators.validators;
  return (
    chain.lastBlockHeight >= chain.initialHeight &&
    last.length === 1 &&
    cur.length === 1 &&
    bytesEqual(last[0]!.address, cur[0]!.address)
  );
}

/** Time of the block following `chain`: genesis time first, then the BFT median of the last commit. */
export function nextBlockTime(chain: ChainState, lastCommit: Commit | null): TimeNs {
  if (chain.lastBlockHeight < chain.initialHeight || !lastCommit) return chain.lastBlockTime;
  return medianTime(lastCommit, chain.lastValidators);
}

/**
 * Validates a block for the next height of `chain` from consensus' point of view (ValidateBlock):
 * every header field, the last commit and its signatures, BFT time, size and evidence limits.
 * Returns the reason it is invalid, or null. Evidence contents are checked by the runtime.
 */
export function checkBlock(chain: ChainState, block: Block, verify: Verifier): string | null {
  const h = block.header;
  const height = chain.lastBlockHeight + 1;
  try {
    if (h.version.block !== BLOCK_PROTOCOL)
      return `header.version.block ${h.version.block} is not ${BLOCK_PROTOCOL}`;
    if (BigInt(h.version.app) !== chain.consensusParams.version.app)
      return `header.version.app ${h.version.app} is not ${chain.consensusParams.version.app}`;
    if (h.chainId !== chain.chainId) return `header.chain_id "${h.chainId}" is not "${chain.chainId}"`;
    if (h.height !== height) return `header.height ${h.height} is not ${height}`;
    if (!blockIdEqual(h.lastBlockId, chain.lastBlockId))
      return 'header.last_block_id does not match the last block';
    if (!bytesEqual(h.validatorsHash, chain.validators.hash()))
      return 'header.validators_hash does not match';
    if (!bytesEqual(h.nextValidatorsHash, chain.nextValidators.hash()))
      return 'header.next_validators_hash does not match';
    if (!bytesEqual(h.consensusHash, consensusParamsHash(chain.consensusParams)))
      return 'header.consensus_hash does not match';
    if (!bytesEqual(h.appHash, chain.appHash))
      return `header.app_hash ${hex(h.appHash)} is not ${hex(chain.appHash)}`;
    if (!bytesEqual(h.lastResultsHash, chain.lastResultsHash))
      return 'header.last_results_hash does not match';
    if (chain.validators.indexOf(h.proposerAddress) < 0)
      return `proposer ${hex(h.proposerAddress)} is not a validator`;
    if (!bytesEqual(h.dataHash, txsHash(block.data.txs)))
      return 'header.data_hash does not match the transactions';
    if (!bytesEqual(h.evidenceHash, evidenceListHash(block.evidence)))
      return 'header.evidence_hash does not match the evidence';
    if (height === chain.initialHeight) {
      if (block.lastCommit && block.lastCommit.signatures.length > 0)
        return 'the first block must not carry a last commit';
      if (h.lastCommitHash.length !== 0) return 'the first block must have an empty last_commit_hash';
      if (h.time !== chain.lastBlockTime)
        return `the first block's time ${h.time} is not the genesis time ${chain.lastBlockTime}`;
    } else {
      if (!block.lastCommit) return 'last_commit is missing';
      if (!bytesEqual(h.lastCommitHash, commitHash(block.lastCommit)))
        return 'header.last_commit_hash does not match';
      verifyCommit(
        chain.chainId,
        chain.lastValidators,
        chain.lastBlockId,
        chain.lastBlockHeight,
        block.lastCommit,
        verify,
      );
      const expected = medianTime(block.lastCommit, chain.lastValidators);
      if (h.time !== expected && !proposerPicksTime(chain))
        return `header.time ${h.time} is not the median time ${expected} of the last commit`;
      if (h.time <= chain.lastBlockTime)
        return `header.time ${h.time} is not after the last block time ${chain.lastBlockTime}`;
    }
    const size = blockSize(block);
    const max = maxBlockBytes(chain.consensusParams);
    if (size > max) return `block size ${size} exceeds consensus_params.block.max_bytes ${max}`;
    const evBytes = evidenceBytes(block.evidence);
    if (BigInt(evBytes) > chain.consensusParams.evidence.maxBytes)
      return `evidence size ${evBytes} exceeds consensus_params.evidence.max_bytes ${chain.consensusParams.evidence.maxBytes}`;
    if (isNilBlockId(blockIdOf(block))) return 'block id is nil';
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}
