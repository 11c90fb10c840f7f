// Structurally valid consensus values (CometBFT v0.38 shapes) for the codec and WAL fuzz tests.

import type { ConsensusMessage } from '@noded/consensus';
import type {
  Block,
  BlockId,
  Commit,
  CommitSig,
  DuplicateVoteEvidence,
  Header,
  Proposal,
  Vote,
} from '@noded/types';
import fc from 'fast-check';
import { bytesOf, int64, nonNegativeInt64, rec, text } from './fuzz.js';

export const height = fc.oneof(fc.integer({ min: 0, max: 1000 }), fc.maxSafeNat());
export const round = fc.oneof(fc.integer({ min: 0, max: 20 }), fc.nat({ max: 0x7fffffff }));
/** Nanoseconds since the epoch, anywhere in int64 (0 stands for Go's zero time). */
export const timeNs = fc.oneof(
  fc.constant(0n),
  fc.bigInt({ min: 1_600_000_000n * 10n ** 9n, max: 2n ** 62n }),
  int64,
);
const hash = fc.oneof(bytesOf(32), fc.constant(new Uint8Array(0)));
const address = bytesOf(20);
const signature = fc.oneof(bytesOf(64), fc.constant(new Uint8Array(0)));

export const blockId: fc.Arbitrary<BlockId> = rec({
  hash,
  partSetHeader: rec({ total: fc.oneof(fc.nat({ max: 100 }), fc.nat()), hash }),
});

export const header: fc.Arbitrary<Header> = rec({
  version: rec({ block: fc.nat({ max: 20 }), app: fc.nat() }),
  chainId: text(50),
  height,
  time: timeNs,
  lastBlockId: blockId,
  lastCommitHash: hash,
  dataHash: hash,
  validatorsHash: hash,
  nextValidatorsHash: hash,
  consensusHash: hash,
  appHash: fc.uint8Array({ maxLength: 40 }),
  lastResultsHash: hash,
  evidenceHash: hash,
  proposerAddress: fc.oneof(address, fc.constant(new Uint8Array(0))),
});

export const vote: fc.Arbitrary<Vote> = rec({
  type: fc.constantFrom(1 as const, 2 as const),
  height,
  round,
  blockId,
  timestamp: timeNs,
  validatorAddress: address,
  validatorIndex: fc.oneof(fc.nat({ max: 150 }), fc.nat()),
  signature,
});

const commitSig: fc.Arbitrary<CommitSig> = rec({
  blockIdFlag: fc.constantFrom(1 as const, 2 as const, 3 as const),
  validatorAddress: fc.oneof(address, fc.constant(new Uint8Array(0))),
  timestamp: timeNs,
  signature,
});

export const commit: fc.Arbitrary<Commit> = rec({
  height,
  round,
  blockId,
  signatures: fc.array(commitSig, { maxLength: 6 }),
});

export const evidence: fc.Arbitrary<DuplicateVoteEvidence> = rec({
  voteA: vote,
  voteB: vote,
  totalVotingPower: nonNegativeInt64,
  validatorPower: nonNegativeInt64,
  timestamp: timeNs,
});

export const proposal: fc.Arbitrary<Proposal> = round.chain((r) =>
  rec({
    height,
    round: fc.constant(r),
    polRound: fc.integer({ min: -1, max: r - 1 }),
    blockId,
    timestamp: timeNs,
    signature,
  }),
);

export const block: fc.Arbitrary<Block> = rec({
  header,
  data: rec({ txs: fc.array(fc.uint8Array({ maxLength: 80 }), { maxLength: 6 }) }),
  evidence: fc.array(evidence, { maxLength: 2 }),
  lastCommit: fc.option(commit, { nil: null }),
});

const bits = fc.array(fc.constantFrom('x', '_'), { maxLength: 150 }).map((a) => a.join(''));
const step = fc.constantFrom(
  'NewHeight',
  'NewRound',
  'Propose',
  'Prevote',
  'PrevoteWait',
  'Precommit',
  'PrecommitWait',
  'Commit',
) as fc.Arbitrary<'NewHeight'>;

export const consensusMessage: fc.Arbitrary<ConsensusMessage> = fc.oneof(
  rec({ kind: fc.constant('proposal' as const), proposal, block }),
  rec({ kind: fc.constant('vote' as const), vote }),
  fc.record(
    {
      kind: fc.constant('status' as const),
      height,
      round,
      step,
      prevotes: bits,
      precommits: bits,
      hasProposal: fc.boolean(),
    },
    { requiredKeys: ['kind', 'height', 'round', 'step'], noNullPrototype: true },
  ),
  rec({ kind: fc.constant('commit' as const), block, commit }),
  rec({ kind: fc.constant('evidence' as const), evidence }),
);
