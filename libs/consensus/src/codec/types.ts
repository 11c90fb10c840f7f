// Protobuf encodings of the consensus structures, field-for-field as CometBFT v0.38's
// proto/tendermint/types/*.proto (Block, Header, Commit, Vote, DuplicateVoteEvidence) and the
// canonical sign bytes (CanonicalVote, CanonicalProposal, length-delimited). Blocks are stored in
// this encoding, its size is what consensus_params.block.max_bytes limits, and block parts and hashes
// are computed over it. docs/consensus.md describes the choices.
import type {
  Block,
  BlockId,
  BlockIdFlag,
  Commit,
  CommitSig,
  DuplicateVoteEvidence,
  Header,
  PartSetHeader,
  Proposal,
  TimeNs,
  Vote,
  VoteType,
} from '@noded/types';
import { ConsensusError } from '../errors.js';
import {
  bytesOf,
  int64Of,
  lengthDelimited,
  numberOf,
  ProtoWriter,
  readFields,
  repeatedBytesOf,
} from './proto.js';

/** Seconds of Go's zero time (0001-01-01T00:00:00Z), which CometBFT writes for absent signatures. */
export const GO_ZERO_TIME_SECONDS = -62135596800n;
const NS = 1_000_000_000n;

/** SignedMsgType of a proposal. */
export const PROPOSAL_TYPE = 32;

export const EMPTY_BYTES = new Uint8Array(0);

export function emptyBlockId(): BlockId {
  return { hash: new Uint8Array(0), partSetHeader: { total: 0, hash: new Uint8Array(0) } };
}

export function isNilBlockId(id: BlockId): boolean {
  return id.hash.length === 0 && id.partSetHeader.total === 0 && id.partSetHeader.hash.length === 0;
}

/**
 * google.protobuf.Timestamp. TimeNs 0 stands for Go's zero time (0001-01-01), the timestamp CometBFT
 * gives absent commit signatures, so those encode byte-for-byte like CometBFT's.
 */
export function encodeTimestamp(t: TimeNs): Uint8Array {
  let seconds: bigint;
  let nanos: bigint;
  if (t === 0n) {
    seconds = GO_ZERO_TIME_SECONDS;
    nanos = 0n;
  } else {
    seconds = t / NS;
    nanos = t % NS;
    if (nanos < 0n) {
      nanos += NS;
      seconds -= 1n;
    }
  }
  const w = new ProtoWriter(16);
  w.varint(1, seconds);
  w.varint(2, nanos);
  return w.finish();
}

export function decodeTimestamp(bytes: Uint8Array): TimeNs {
  const f = readFields(bytes);
  const seconds = int64Of(f, 1);
  const nanos = int64Of(f, 2);
  if (seconds === GO_ZERO_TIME_SECONDS && nanos === 0n) return 0n;
  return seconds * NS + nanos;
}

export function encodePartSetHeader(p: PartSetHeader): Uint8Array {
  const w = new ProtoWriter(48);
  w.varint(1, p.total);
  w.bytes(2, p.hash);
  return w.finish();
}

export function encodeBlockId(id: BlockId): Uint8Array {
  const w = new ProtoWriter(80);
  w.bytes(1, id.hash);
  w.message(2, encodePartSetHeader(id.partSetHeader));
  return w.finish();
}

function decodeBlockId(bytes: Uint8Array): BlockId {
  const f = readFields(bytes);
  const p = readFields(bytesOf(f, 2));
  return { hash: bytesOf(f, 1), partSetHeader: { total: numberOf(p, 1), hash: bytesOf(p, 2) } };
}

/** tendermint.version.Consensus. */
export function encodeVersion(v: { block: number; app: number }): Uint8Array {
  const w = new ProtoWriter(16);
  w.varint(1, v.block);
  w.varint(2, v.app);
  return w.finish();
}

export function encodeHeader(h: Header): Uint8Array {
  const w = new ProtoWriter(512);
  w.message(1, encodeVersion(h.version));
  w.string(2, h.chainId);
  w.varint(3, h.height);
  w.message(4, encodeTimestamp(h.time));
  w.message(5, encodeBlockId(h.lastBlockId));
  w.bytes(6, h.lastCommitHash);
  w.bytes(7, h.dataHash);
  w.bytes(8, h.validatorsHash);
  w.bytes(9, h.nextValidatorsHash);
  w.bytes(10, h.consensusHash);
  w.bytes(11, h.appHash);
  w.bytes(12, h.lastResultsHash);
  w.bytes(13, h.evidenceHash);
  w.bytes(14, h.proposerAddress);
  return w.finish();
}

export function decodeHeader(bytes: Uint8Array): Header {
  const f = readFields(bytes);
  const v = readFields(bytesOf(f, 1));
  return {
    version: { block: numberOf(v, 1), app: numberOf(v, 2) },
    // ignoreBOM: a chain id that starts with U+FEFF keeps it (the default decoder drops it, and the
    // header would then re-encode, and hash, differently from the bytes received).
    chainId: new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytesOf(f, 2)),
    height: numberOf(f, 3),
    time: decodeTimestamp(bytesOf(f, 4)),
    lastBlockId: decodeBlockId(bytesOf(f, 5)),
    lastCommitHash: bytesOf(f, 6),
    dataHash: bytesOf(f, 7),
    validatorsHash: bytesOf(f, 8),
    nextValidatorsHash: bytesOf(f, 9),
    consensusHash: bytesOf(f, 10),
    appHash: bytesOf(f, 11),
    lastResultsHash: bytesOf(f, 12),
    evidenceHash: bytesOf(f, 13),
    proposerAddress: bytesOf(f, 14),
  };
}

export function encodeVote(v: Vote): Uint8Array {
  const w = new ProtoWriter(200);
  w.varint(1, v.type);
  w.varint(2, v.height);
  w.varint(3, v.round);
  w.message(4, encodeBlockId(v.blockId));
  w.message(5, encodeTimestamp(v.timestamp));
  w.bytes(6, v.validatorAddress);
  w.varint(7, v.validatorIndex);
  w.bytes(8, v.signature);
  if (v.extension) w.bytes(9, v.extension);
  if (v.extensionSignature) w.bytes(10, v.extensionSignature);
  return w.finish();
}

export function decodeVote(bytes: Uint8Array): Vote {
  const f = readFields(bytes);
  const type = numberOf(f, 1);
  if (type !== 1 && type !== 2)
    throw new ConsensusError('INVALID_ENCODING', `vote type ${type} is not 1 or 2`);
  return {
    type: type as VoteType,
    height: numberOf(f, 2),
    round: numberOf(f, 3),
    blockId: decodeBlockId(bytesOf(f, 4)),
    timestamp: decodeTimestamp(bytesOf(f, 5)),
    validatorAddress: bytesOf(f, 6),
    validatorIndex: numberOf(f, 7),
    signature: bytesOf(f, 8),
    ...(f.has(9) ? { extension: bytesOf(f, 9) } : {}),
    ...(f.has(10) ? { extensionSignature: bytesOf(f, 10) } : {}),
  };
}

/** CommitSig (what the commit hash covers); extension fields are left out. */
export function encodeCommitSig(s: CommitSig): Uint8Array {
  return encodeSig(s, false);
}

/** CommitSig, or with `extended` CometBFT's ExtendedCommitSig (extension 5, extension_signature 6). */
function encodeSig(s: CommitSig, extended: boolean): Uint8Array {
  const w = new ProtoWriter(128);
  w.varint(1, s.blockIdFlag);
  w.bytes(2, s.validatorAddress);
  w.message(3, encodeTimestamp(s.timestamp));
  w.bytes(4, s.signature);
  if (extended) {
    if (s.extension) w.bytes(5, s.extension);
    if (s.extensionSignature) w.bytes(6, s.extensionSignature);
  }
  return w.finish();
}

/** The Commit message; extensions are never part of it (it is hashed into the next header). */
export function encodeCommit(c: Commit): Uint8Array {
  const w = new ProtoWriter(256);
  w.varint(1, c.height);
  w.varint(2, c.round);
  w.message(3, encodeBlockId(c.blockId));
  for (const s of c.signatures) w.message(4, encodeCommitSig(s));
  return w.finish();
}

/**
 * CometBFT's ExtendedCommit (same field numbers as Commit, signatures as ExtendedCommitSig): the
 * precommits a node decided on with their vote extensions, stored so a restarted proposer still
 * has them. Never hashed.
 */
export function encodeExtendedCommit(c: Commit): Uint8Array {
  const w = new ProtoWriter(256);
  w.varint(1, c.height);
  w.varint(2, c.round);
  w.message(3, encodeBlockId(c.blockId));
  for (const s of c.signatures) w.message(4, encodeSig(s, true));
  return w.finish();
}

function decodeCommitWith(bytes: Uint8Array, extended: boolean): Commit {
  const f = readFields(bytes);
  return {
    height: numberOf(f, 1),
    round: numberOf(f, 2),
    blockId: decodeBlockId(bytesOf(f, 3)),
    signatures: repeatedBytesOf(f, 4).map((b) => {
      const s = readFields(b);
      const flag = numberOf(s, 1);
      if (flag !== 1 && flag !== 2 && flag !== 3)
        throw new ConsensusError('INVALID_ENCODING', `commit sig block_id_flag ${flag} is not 1, 2 or 3`);
      const sig: CommitSig = {
        blockIdFlag: flag as BlockIdFlag,
        validatorAddress: bytesOf(s, 2),
        timestamp: decodeTimestamp(bytesOf(s, 3)),
        signature: bytesOf(s, 4),
      };
      if (extended && s.has(5)) sig.extension = bytesOf(s, 5);
      if (extended && s.has(6)) sig.extensionSignature = bytesOf(s, 6);
      return sig;
    }),
  };
}

export function decodeCommit(bytes: Uint8Array): Commit {
  return decodeCommitWith(bytes, false);
}

export function decodeExtendedCommit(bytes: Uint8Array): Commit {
  return decodeCommitWith(bytes, true);
}

/** DuplicateVoteEvidence message bytes (what CometBFT hashes for the evidence hash). */
export function encodeDuplicateVoteEvidence(e: DuplicateVoteEvidence): Uint8Array {
  const w = new ProtoWriter(512);
  w.message(1, encodeVote(e.voteA));
  w.message(2, encodeVote(e.voteB));
  w.varint(3, e.totalVotingPower);
  w.varint(4, e.validatorPower);
  w.message(5, encodeTimestamp(e.timestamp));
  return w.finish();
}

function decodeDuplicateVoteEvidence(bytes: Uint8Array): DuplicateVoteEvidence {
  const f = readFields(bytes);
  return {
    voteA: decodeVote(bytesOf(f, 1)),
    voteB: decodeVote(bytesOf(f, 2)),
    totalVotingPower: int64Of(f, 3),
    validatorPower: int64Of(f, 4),
    timestamp: decodeTimestamp(bytesOf(f, 5)),
  };
}

/** Evidence oneof wrapper, field 1 = duplicate_vote_evidence. */
export function encodeEvidence(e: DuplicateVoteEvidence): Uint8Array {
  const w = new ProtoWriter(512);
  w.message(1, encodeDuplicateVoteEvidence(e));
  return w.finish();
}

export function decodeEvidence(bytes: Uint8Array): DuplicateVoteEvidence {
  const f = readFields(bytes);
  if (!f.has(1))
    throw new ConsensusError('INVALID_ENCODING', 'evidence: only duplicate_vote_evidence is supported');
  return decodeDuplicateVoteEvidence(bytesOf(f, 1));
}

export function encodeBlock(b: Block): Uint8Array {
  const w = new ProtoWriter(1024);
  w.message(1, encodeHeader(b.header));
  const data = new ProtoWriter(256);
  for (const tx of b.data.txs) data.bytes(1, tx, true);
  w.message(2, data.finish());
  const ev = new ProtoWriter(64);
  for (const e of b.evidence) ev.message(1, encodeEvidence(e));
  w.message(3, ev.finish());
  if (b.lastCommit) w.message(4, encodeCommit(b.lastCommit));
  return w.finish();
}

export function decodeBlock(bytes: Uint8Array): Block {
  const f = readFields(bytes);
  const data = readFields(bytesOf(f, 2));
  const ev = readFields(bytesOf(f, 3));
  return {
    header: decodeHeader(bytesOf(f, 1)),
    data: { txs: repeatedBytesOf(data, 1) },
    evidence: repeatedBytesOf(ev, 1).map(decodeEvidence),
    lastCommit: f.has(4) ? decodeCommit(bytesOf(f, 4)) : null,
  };
}

/** CanonicalBlockID; undefined for a nil block id (the field is then left out). */
function canonicalBlockId(id: BlockId): Uint8Array | undefined {
  if (isNilBlockId(id)) return undefined;
  const w = new ProtoWriter(80);
  w.bytes(1, id.hash);
  w.message(2, encodePartSetHeader(id.partSetHeader));
  return w.finish();
}

/** The bytes a validator signs for a vote: length-delimited CanonicalVote (no extension). */
export function voteSignBytes(
  chainId: string,
  v: { type: number; height: number; round: number; blockId: BlockId; timestamp: TimeNs },
): Uint8Array {
  const w = new ProtoWriter(160);
  w.varint(1, v.type);
  w.sfixed64(2, v.height);
  w.sfixed64(3, v.round);
  const bid = canonicalBlockId(v.blockId);
  if (bid) w.message(4, bid);
  w.message(5, encodeTimestamp(v.timestamp));
  w.string(6, chainId);
  return lengthDelimited(w.finish());
}

/**
 * The bytes a validator signs for its vote extension: length-delimited CanonicalVoteExtension
 * (extension 1, height 2 and round 3 as sfixed64, chain_id 4), as CometBFT v0.38. Binding the
 * height, round and chain id keeps an extension from being replayed elsewhere; the block is not
 * bound (the vote's own signature covers it, and both travel together).
 */
export function voteExtensionSignBytes(
  chainId: string,
  v: { height: number; round: number; extension?: Uint8Array },
): Uint8Array {
  const w = new ProtoWriter(64 + (v.extension?.length ?? 0));
  w.bytes(1, v.extension ?? EMPTY_BYTES);
  w.sfixed64(2, v.height);
  w.sfixed64(3, v.round);
  w.string(4, chainId);
  return lengthDelimited(w.finish());
}

/** The bytes a proposer signs: length-delimited CanonicalProposal. */
export function proposalSignBytes(
  chainId: string,
  p: { height: number; round: number; polRound: number; blockId: BlockId; timestamp: TimeNs },
): Uint8Array {
  const w = new ProtoWriter(160);
  w.varint(1, PROPOSAL_TYPE);
  w.sfixed64(2, p.height);
  w.sfixed64(3, p.round);
  w.varint(4, p.polRound);
  const bid = canonicalBlockId(p.blockId);
  if (bid) w.message(5, bid);
  w.message(6, encodeTimestamp(p.timestamp));
  w.string(7, chainId);
  return lengthDelimited(w.finish());
}

/** Proposal wire message (tendermint.types.Proposal). */
export function encodeProposal(p: Proposal): Uint8Array {
  const w = new ProtoWriter(200);
  w.varint(1, PROPOSAL_TYPE);
  w.varint(2, p.height);
  w.varint(3, p.round);
  w.varint(4, p.polRound);
  w.message(5, encodeBlockId(p.blockId));
  w.message(6, encodeTimestamp(p.timestamp));
  w.bytes(7, p.signature);
  return w.finish();
}

/** Reads a tendermint.types.Proposal wire message back (the inverse of encodeProposal). */
export function decodeProposal(bytes: Uint8Array): Proposal {
  const f = readFields(bytes);
  const type = numberOf(f, 1);
  if (type !== PROPOSAL_TYPE)
    throw new ConsensusError('INVALID_ENCODING', `proposal type ${type} is not ${PROPOSAL_TYPE}`);
  return {
    height: numberOf(f, 2),
    round: numberOf(f, 3),
    polRound: numberOf(f, 4),
    blockId: decodeBlockId(bytesOf(f, 5)),
    timestamp: decodeTimestamp(bytesOf(f, 6)),
    signature: bytesOf(f, 7),
  };
}

/** Decodes vote sign bytes (length-delimited CanonicalVote) back into the signed fields. */
export function decodeVoteSignBytes(signBytes: Uint8Array): {
  chainId: string;
  type: number;
  height: number;
  round: number;
  blockId: BlockId;
  timestamp: TimeNs;
} {
  let pos = 0;
  let len = 0;
  let shift = 0;
  for (;;) {
    const b = signBytes[pos++];
    if (b === undefined) throw new ConsensusError('INVALID_ENCODING', 'sign bytes: truncated length prefix');
    len |= (b & 0x7f) << shift;
    if ((b & 0x80) === 0) break;
    shift += 7;
  }
  const f = readFields(signBytes.subarray(pos, pos + len));
  const fixed = (n: number) => {
    const v = f.get(n)?.at(-1);
    return typeof v === 'bigint' ? Number(BigInt.asIntN(64, v)) : 0;
  };
  let blockId = emptyBlockId();
  if (f.has(4)) {
    const b = readFields(bytesOf(f, 4));
    const p = readFields(bytesOf(b, 2));
    blockId = { hash: bytesOf(b, 1), partSetHeader: { total: numberOf(p, 1), hash: bytesOf(p, 2) } };
  }
  return {
    chainId: new TextDecoder().decode(bytesOf(f, 6)),
    type: numberOf(f, 1),
    height: fixed(2),
    round: fixed(3),
    blockId,
    timestamp: decodeTimestamp(bytesOf(f, 5)),
  };
}

/**
 * Parses sign bytes back into their fields so the double-sign guard can tell whether two sign
 * requests differ only in their timestamp (CometBFT allows re-signing then, returning the old one).
 */
export function parseSignBytes(signBytes: Uint8Array): { withoutTimestamp: string; timestamp: TimeNs } {
  let pos = 0;
  let len = 0;
  let shift = 0;
  for (;;) {
    const b = signBytes[pos++];
    if (b === undefined) throw new ConsensusError('INVALID_ENCODING', 'sign bytes: truncated length prefix');
    len |= (b & 0x7f) << shift;
    if ((b & 0x80) === 0) break;
    shift += 7;
  }
  const body = signBytes.subarray(pos, pos + len);
  const f = readFields(body);
  const type = numberOf(f, 1);
  const tsField = type === PROPOSAL_TYPE ? 6 : 5;
  const timestamp = decodeTimestamp(bytesOf(f, tsField));
  f.delete(tsField);
  const parts: string[] = [];
  for (const [k, vs] of [...f.entries()].sort((a, b) => a[0] - b[0])) {
    for (const v of vs)
      parts.push(`${k}=${typeof v === 'bigint' ? v.toString() : Buffer.from(v).toString('hex')}`);
  }
  return { withoutTimestamp: parts.join(';'), timestamp };
}
