// Deterministic hashes of blocks and their parts, following CometBFT v0.38 (documented in
// docs/consensus.md): RFC 6962 merkle trees over sha256 (libs/crypto), header hash over the protobuf encoding of
// each header field, block parts of 64 KiB.
import { merkleRoot, sha256 } from '@noded/crypto';
import type {
  Block,
  BlockId,
  Commit,
  ConsensusParams,
  DuplicateVoteEvidence,
  ExecTxResult,
  Header,
  PartSetHeader,
  Validator,
} from '@noded/types';
import { ProtoWriter } from './codec/proto.js';
import {
  encodeBlock,
  encodeBlockId,
  encodeCommitSig,
  encodeDuplicateVoteEvidence,
  encodeTimestamp,
  encodeVersion,
} from './codec/types.js';

/** Size of one block part (CometBFT's BlockPartSizeBytes). */
export const BLOCK_PART_SIZE = 65536;

// cdcEncode of CometBFT: the value wrapped in a gogoproto StringValue/Int64Value/BytesValue (field 1).
function cdcString(s: string): Uint8Array {
  const w = new ProtoWriter(s.length + 4);
  w.string(1, s);
  return w.finish();
}
function cdcInt64(n: number): Uint8Array {
  const w = new ProtoWriter(12);
  w.varint(1, n);
  return w.finish();
}
function cdcBytes(b: Uint8Array): Uint8Array {
  const w = new ProtoWriter(b.length + 4);
  w.bytes(1, b);
  return w.finish();
}

/** Header hash: merkle root over the 14 header fields, each encoded as CometBFT's Header.Hash does. */
export function headerHash(h: Header): Uint8Array {
  return merkleRoot([
    encodeVersion(h.version),
    cdcString(h.chainId),
    cdcInt64(h.height),
    encodeTimestamp(h.time),
    encodeBlockId(h.lastBlockId),
    cdcBytes(h.lastCommitHash),
    cdcBytes(h.dataHash),
    cdcBytes(h.validatorsHash),
    cdcBytes(h.nextValidatorsHash),
    cdcBytes(h.consensusHash),
    cdcBytes(h.appHash),
    cdcBytes(h.lastResultsHash),
    cdcBytes(h.evidenceHash),
    cdcBytes(h.proposerAddress),
  ]);
}

/** data_hash: merkle root of sha256(tx) for each transaction. */
export function txsHash(txs: Uint8Array[]): Uint8Array {
  return merkleRoot(txs.map((tx) => sha256(tx)));
}

/** last_commit_hash: merkle root of the CommitSig encodings; empty bytes when there is no last commit. */
export function commitHash(commit: Commit | null): Uint8Array {
  if (!commit) return new Uint8Array(0);
  return merkleRoot(commit.signatures.map(encodeCommitSig));
}

/** SimpleValidator {pub_key: PublicKey{ed25519}, voting_power}: the leaf of validators_hash. */
export function simpleValidatorBytes(v: Validator): Uint8Array {
  const pk = new ProtoWriter(40);
  pk.bytes(1, v.pubKey);
  const w = new ProtoWriter(56);
  w.message(1, pk.finish());
  w.varint(2, v.votingPower);
  return w.finish();
}

/** validators_hash / next_validators_hash, over the set in its canonical order. */
export function validatorsHash(validators: readonly Validator[]): Uint8Array {
  return merkleRoot(validators.map(simpleValidatorBytes));
}

/** consensus_hash: sha256 of HashedParams {block_max_bytes, block_max_gas}. */
export function consensusParamsHash(params: ConsensusParams): Uint8Array {
  const w = new ProtoWriter(24);
  w.varint(1, params.block.maxBytes);
  w.varint(2, params.block.maxGas);
  return sha256(w.finish());
}

/** The deterministic part of an ExecTxResult (code, data, gas_wanted, gas_used). */
export function deterministicTxResultBytes(r: ExecTxResult): Uint8Array {
  const w = new ProtoWriter(64 + r.data.length);
  w.varint(1, r.code);
  w.bytes(2, r.data);
  w.varint(5, r.gasWanted);
  w.varint(6, r.gasUsed);
  return w.finish();
}

/** last_results_hash: merkle root of the deterministic tx results of the previous block. */
export function txResultsHash(results: ExecTxResult[]): Uint8Array {
  return merkleRoot(results.map(deterministicTxResultBytes));
}

/** Hash of one piece of evidence: sha256 of its DuplicateVoteEvidence encoding. */
export function evidenceHash(e: DuplicateVoteEvidence): Uint8Array {
  return sha256(encodeDuplicateVoteEvidence(e));
}

/** evidence_hash: merkle root of the evidence encodings. */
export function evidenceListHash(list: DuplicateVoteEvidence[]): Uint8Array {
  return merkleRoot(list.map(encodeDuplicateVoteEvidence));
}

/** Part set header of encoded block bytes: 64 KiB parts, merkle root of the parts. */
export function partSetHeaderOf(blockBytes: Uint8Array): PartSetHeader {
  const parts: Uint8Array[] = [];
  for (let o = 0; o < blockBytes.length || parts.length === 0; o += BLOCK_PART_SIZE) {
    parts.push(blockBytes.subarray(o, o + BLOCK_PART_SIZE));
  }
  return { total: parts.length, hash: merkleRoot(parts) };
}

interface BlockDigest {
  size: number;
  bytes: Uint8Array;
  /** Computed at the first blockIdOf: a block only served to peers never needs it. */
  blockId?: BlockId;
}

// Blocks are treated as immutable once built; their encoding and id are computed once per object.
const digests = new WeakMap<Block, BlockDigest>();

function digestOf(block: Block, bytes: Uint8Array): BlockDigest {
  const d: BlockDigest = { bytes, size: bytes.length };
  digests.set(block, d);
  return d;
}

function digest(block: Block): BlockDigest {
  return digests.get(block) ?? digestOf(block, encodeBlock(block));
}

/**
 * Takes `bytes`, which `block` was just decoded from, as its encoding instead of encoding it again
 * (a block received from a peer, or read back from the block store; the bytes must not change
 * afterwards). The part set header is computed from these bytes, so bytes that are not the
 * canonical encoding give a block id that no commit signed, and the block is refused where its id is
 * checked against its commit, as when it was encoded again; its size and stored bytes are then
 * never used. Stored bytes are always canonical: they were either encoded here or received and
 * checked against a commit that way.
 */
export function adoptBlockBytes(block: Block, bytes: Uint8Array): void {
  if (!digests.has(block)) digestOf(block, bytes);
}

/** The block id (header hash and part set header) of a block. */
export function blockIdOf(block: Block): BlockId {
  const d = digest(block);
  if (d.blockId === undefined)
    d.blockId = { hash: headerHash(block.header), partSetHeader: partSetHeaderOf(d.bytes) };
  return d.blockId;
}

/** Encoded size of a block in bytes (what max_bytes limits). */
export function blockSize(block: Block): number {
  return digest(block).size;
}

export function blockBytes(block: Block): Uint8Array {
  return digest(block).bytes;
}

export const hex = (b: Uint8Array): string =>
  Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
export const hexUpper = (b: Uint8Array): string => hex(b).toUpperCase();

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Map key of a block id ("" for nil). */
export function blockIdKey(id: BlockId): string {
  if (id.hash.length === 0 && id.partSetHeader.total === 0) return '';
  return `${hex(id.hash)}:${id.partSetHeader.total}:${hex(id.partSetHeader.hash)}`;
}

export function blockIdEqual(a: BlockId, b: BlockId): boolean {
  return (
    bytesEqual(a.hash, b.hash) &&
    a.partSetHeader.total === b.partSetHeader.total &&
    bytesEqual(a.partSetHeader.hash, b.partSetHeader.hash)
  );
}
