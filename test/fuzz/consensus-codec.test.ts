// Fuzzing the consensus codecs (CometBFT v0.38 protobuf: block, vote, proposal, commit, evidence) and
// the consensus channel's envelope: round trips of valid values, and bytes from a hostile peer
// (random, or valid encodings damaged) failing only with ConsensusError.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ConsensusError,
  decodeBlock,
  decodeCommit,
  decodeConsensusMessage,
  decodeProposal,
  decodeVote,
  encodeBlock,
  encodeCommit,
  encodeConsensusMessage,
  encodeProposal,
  encodeVote,
} from '@noded/consensus';
import { decodeEvidence, encodeEvidence } from '@noded/consensus/src/codec/types.js';
import fc from 'fast-check';
import { block, commit, consensusMessage, evidence, proposal, vote } from './consensus-arbitraries.js';
import { check, hostileBytes, onlyThrows } from './fuzz.js';

const codecs = {
  vote: { arb: vote, encode: encodeVote, decode: decodeVote, weight: 1 },
  proposal: { arb: proposal, encode: encodeProposal, decode: decodeProposal, weight: 1 },
  commit: { arb: commit, encode: encodeCommit, decode: decodeCommit, weight: 1 },
  evidence: { arb: evidence, encode: encodeEvidence, decode: decodeEvidence, weight: 1 },
  block: { arb: block, encode: encodeBlock, decode: decodeBlock, weight: 2 },
  'consensus message': {
    arb: consensusMessage,
    encode: encodeConsensusMessage,
    decode: decodeConsensusMessage,
    weight: 2,
  },
} as const;

describe('fuzz: consensus codecs', () => {
  for (const [name, c] of Object.entries(codecs)) {
    const { encode, decode } = c as unknown as {
      encode: (x: unknown) => Uint8Array;
      decode: (b: Uint8Array) => unknown;
    };
    const arb = c.arb as fc.Arbitrary<unknown>;

    it(`${name}: decode(encode(x)) = x, and the encoding is canonical`, () => {
      check(
        fc.property(arb, (x) => {
          const bytes = encode(x);
          const back = decode(bytes);
          assert.deepStrictEqual(back, x);
          assert.deepStrictEqual(encode(back), bytes);
        }),
        c.weight,
      );
    });

    it(`${name}: hostile bytes fail only with ConsensusError('INVALID_ENCODING')`, () => {
      check(
        fc.property(hostileBytes(arb.map(encode)), (bytes) => {
          const r = onlyThrows(() => decode(bytes), ConsensusError);
          if (!r.ok) assert.equal((r.error as ConsensusError).code, 'INVALID_ENCODING');
        }),
        c.weight,
      );
    });
  }

  it('consensus message: whatever decodes re-encodes to a message that decodes the same', () => {
    check(
      fc.property(hostileBytes(consensusMessage.map(encodeConsensusMessage)), (bytes) => {
        const r = onlyThrows(() => decodeConsensusMessage(bytes), ConsensusError);
        if (r.ok) assert.deepStrictEqual(decodeConsensusMessage(encodeConsensusMessage(r.value)), r.value);
      }),
      2,
    );
  });
});
