// The consensus channel's wire format: one protobuf envelope per ConsensusMessage, its kind chosen by
// the field number (a oneof), the payloads in CometBFT's own encodings (Proposal, Block, Vote,
// Commit, Evidence). Decoding is for bytes from untrusted peers: every malformed input is a
// ConsensusError('INVALID_ENCODING') naming what is wrong, never another exception.
import type { ConsensusMessage, RoundStep } from '../engine/types.js';
import { STEP_ORDER } from '../engine/types.js';
import { ConsensusError } from '../errors.js';
import { bytesOf, numberOf, ProtoWriter, readFields } from './proto.js';
import {
  decodeBlock,
  decodeCommit,
  decodeEvidence,
  decodeExtendedCommit,
  decodeProposal,
  decodeVote,
  encodeBlock,
  encodeCommit,
  encodeEvidence,
  encodeExtendedCommit,
  encodeProposal,
  encodeVote,
} from './types.js';

const FIELD = { proposal: 1, vote: 2, status: 3, commit: 4, evidence: 5 } as const;
const STEPS = Object.keys(STEP_ORDER) as RoundStep[];
/** Bit arrays of a status ('x' / '_' per validator) longer than this are refused. */
export const MAX_STATUS_BITS = 10_000;
const PREVOTES = 1;
const PRECOMMITS = 2;
const HAS_PROPOSAL = 4;
const PROPOSAL_IS_SET = 8;

const fail = (why: string): never => {
  throw new ConsensusError('INVALID_ENCODING', `consensus message: ${why}`);
};

export function encodeConsensusMessage(m: ConsensusMessage): Uint8Array {
  const w = new ProtoWriter(256);
  switch (m.kind) {
    case 'proposal': {
      const inner = new ProtoWriter(512);
      inner.message(1, encodeProposal(m.proposal));
      inner.message(2, encodeBlock(m.block));
      w.message(FIELD.proposal, inner.finish());
      break;
    }
    case 'vote':
      w.message(FIELD.vote, encodeVote(m.vote));
      break;
    case 'status': {
      const inner = new ProtoWriter(64);
      inner.varint(1, m.height);
      inner.varint(2, m.round);
      inner.varint(3, STEP_ORDER[m.step]);
      inner.string(4, m.prevotes ?? '');
      inner.string(5, m.precommits ?? '');
      let flags = 0;
      if (m.prevotes !== undefined) flags |= PREVOTES;
      if (m.precommits !== undefined) flags |= PRECOMMITS;
      if (m.hasProposal !== undefined) flags |= PROPOSAL_IS_SET | (m.hasProposal ? HAS_PROPOSAL : 0);
      inner.varint(6, flags);
      w.message(FIELD.status, inner.finish());
      break;
    }
    case 'commit': {
      const inner = new ProtoWriter(512);
      inner.message(1, encodeBlock(m.block));
      inner.message(2, encodeCommit(m.commit));
      if (m.extendedCommit) inner.message(3, encodeExtendedCommit(m.extendedCommit));
      w.message(FIELD.commit, inner.finish());
      break;
    }
    case 'evidence':
      w.message(FIELD.evidence, encodeEvidence(m.evidence));
      break;
  }
  return w.finish();
}

function nonNegative(what: string, n: number): number {
  if (!Number.isSafeInteger(n) || n < 0) fail(`${what} ${n} is not a non-negative integer`);
  return n;
}

function bits(what: string, text: string): string {
  if (text.length > MAX_STATUS_BITS) fail(`${what} has ${text.length} bits, over ${MAX_STATUS_BITS}`);
  if (!/^[x_]*$/.test(text)) fail(`${what} holds characters other than 'x' and '_'`);
  return text;
}

export function decodeConsensusMessage(bytes: Uint8Array): ConsensusMessage {
  const f = readFields(bytes);
  if (f.size !== 1) fail(`expected exactly one message kind, got ${f.size} fields`);
  const [field] = f.keys();
  const body = bytesOf(f, field!);
  switch (field) {
    case FIELD.proposal: {
      const g = readFields(body);
      if (!g.has(1) || !g.has(2)) fail('proposal without its proposal or its block');
      const proposal = decodeProposal(bytesOf(g, 1));
      nonNegative('proposal height', proposal.height);
      nonNegative('proposal round', proposal.round);
      if (proposal.polRound < -1 || proposal.polRound >= proposal.round)
        fail(`proposal pol_round ${proposal.polRound} is not in [-1, round)`);
      return { kind: 'proposal', proposal, block: decodeBlock(bytesOf(g, 2)) };
    }
    case FIELD.vote: {
      const vote = decodeVote(body);
      nonNegative('vote height', vote.height);
      nonNegative('vote round', vote.round);
      nonNegative('vote validator index', vote.validatorIndex);
      return { kind: 'vote', vote };
    }
    case FIELD.status: {
      const g = readFields(body);
      const stepNo = numberOf(g, 3);
      const step = STEPS.find((s) => STEP_ORDER[s] === stepNo);
      if (!step) fail(`status step ${stepNo} is unknown`);
      const flags = numberOf(g, 6);
      const text = (n: number) => new TextDecoder('utf-8', { fatal: false }).decode(bytesOf(g, n));
      const m: ConsensusMessage = {
        kind: 'status',
        height: nonNegative('status height', numberOf(g, 1)),
        round: nonNegative('status round', numberOf(g, 2)),
        step: step!,
      };
      if (flags & PREVOTES) m.prevotes = bits('status prevotes', text(4));
      if (flags & PRECOMMITS) m.precommits = bits('status precommits', text(5));
      if (flags & PROPOSAL_IS_SET) m.hasProposal = (flags & HAS_PROPOSAL) !== 0;
      return m;
    }
    case FIELD.commit: {
      const g = readFields(body);
      if (!g.has(1) || !g.has(2)) fail('commit without its block or its commit');
      const m: ConsensusMessage = {
        kind: 'commit',
        block: decodeBlock(bytesOf(g, 1)),
        commit: decodeCommit(bytesOf(g, 2)),
      };
      if (g.has(3)) m.extendedCommit = decodeExtendedCommit(bytesOf(g, 3));
      return m;
    }
    case FIELD.evidence:
      return { kind: 'evidence', evidence: decodeEvidence(body) };
    default:
      return fail(`unknown message field ${field}`);
  }
}
