// Cosmos SDK gateway JSON (proto3 JSON with original field names and defaults emitted):
// 64-bit integers as strings, bytes as base64, enums by name, timestamps RFC3339.
import type { Block, BlockId, Commit, Header, TimeNs, Validator, Vote } from '@noded/types';
import type { JsonObject } from '../comet/encode.js';
import { b64, hexUpper } from '../comet/wire.js';

/** google.protobuf.Timestamp in JSON: 0, 3, 6 or 9 fractional digits, always UTC "Z". */
export function protoTimestamp(ns: TimeNs): string {
  const secs = ns / 1_000_000_000n;
  const frac = Number(ns % 1_000_000_000n);
  const base = new Date(Number(secs) * 1000).toISOString().slice(0, 19);
  if (frac === 0) return `${base}Z`;
  const digits = frac % 1_000_000 === 0 ? 3 : frac % 1000 === 0 ? 6 : 9;
  return `${base}.${String(frac).padStart(9, '0').slice(0, digits)}Z`;
}

const FLAG_NAMES = [
  'BLOCK_ID_FLAG_UNKNOWN',
  'BLOCK_ID_FLAG_ABSENT',
  'BLOCK_ID_FLAG_COMMIT',
  'BLOCK_ID_FLAG_NIL',
];

function bytes(b: Uint8Array | undefined): string {
  return b && b.length > 0 ? b64(b) : '';
}

export function protoBlockId(id: BlockId | null): JsonObject {
  if (!id) return { hash: '', part_set_header: { total: 0, hash: '' } };
  return {
    hash: bytes(id.hash),
    part_set_header: { total: id.partSetHeader.total, hash: bytes(id.partSetHeader.hash) },
  };
}

export function protoHeader(h: Header, proposer: string | null = null): JsonObject {
  return {
    version: { block: String(h.version.block), app: String(h.version.app) },
    chain_id: h.chainId,
    height: String(h.height),
    time: protoTimestamp(h.time),
    last_block_id: protoBlockId(h.lastBlockId.hash.length > 0 ? h.lastBlockId : null),
    last_commit_hash: bytes(h.lastCommitHash),
    data_hash: bytes(h.dataHash),
    validators_hash: bytes(h.validatorsHash),
    next_validators_hash: bytes(h.nextValidatorsHash),
    consensus_hash: bytes(h.consensusHash),
    app_hash: bytes(h.appHash),
    last_results_hash: bytes(h.lastResultsHash),
    evidence_hash: bytes(h.evidenceHash),
    proposer_address: proposer ?? bytes(h.proposerAddress),
  };
}

export function protoCommit(c: Commit | null): JsonObject {
  if (!c) return { height: '0', round: 0, block_id: protoBlockId(null), signatures: [] };
  return {
    height: String(c.height),
    round: c.round,
    block_id: protoBlockId(c.blockId),
    signatures: c.signatures.map((s) => ({
      block_id_flag: FLAG_NAMES[s.blockIdFlag] ?? FLAG_NAMES[0],
      validator_address: s.blockIdFlag === 1 ? '' : bytes(s.validatorAddress),
      timestamp: s.blockIdFlag === 1 ? '0001-01-01T00:00:00Z' : protoTimestamp(s.timestamp),
      signature: s.blockIdFlag === 1 ? '' : bytes(s.signature),
    })),
  };
}

export function protoVote(v: Vote): JsonObject {
  return {
    type: v.type === 1 ? 'SIGNED_MSG_TYPE_PREVOTE' : 'SIGNED_MSG_TYPE_PRECOMMIT',
    height: String(v.height),
    round: v.round,
    block_id: protoBlockId(v.blockId.hash.length > 0 ? v.blockId : null),
    timestamp: protoTimestamp(v.timestamp),
    validator_address: bytes(v.validatorAddress),
    validator_index: v.validatorIndex,
    signature: bytes(v.signature),
    extension: '',
    extension_signature: '',
  };
}

/** tendermint.types.Block; with `proposer` set, the header's proposer_address is that string (sdk_block). */
export function protoBlock(b: Block, proposer: string | null = null): JsonObject {
  return {
    header: protoHeader(b.header, proposer),
    data: { txs: b.data.txs.map(b64) },
    evidence: {
      evidence: b.evidence.map((e) => ({
        duplicate_vote_evidence: {
          vote_a: protoVote(e.voteA),
          vote_b: protoVote(e.voteB),
          total_voting_power: String(e.totalVotingPower),
          validator_power: String(e.validatorPower),
          timestamp: protoTimestamp(e.timestamp),
        },
      })),
    },
    last_commit: protoCommit(b.lastCommit),
  };
}

export function protoValidator(v: Validator, address: string): JsonObject {
  return {
    address,
    pub_key: { '@type': '/cosmos.crypto.ed25519.PubKey', key: b64(v.pubKey) },
    voting_power: String(v.votingPower),
    proposer_priority: String(v.proposerPriority),
  };
}

/** Hex for a consensus address when no bech32 prefix is configured. */
export function consensusAddressHex(address: Uint8Array): string {
  return hexUpper(address);
}

/** A decimal as Cosmos' LegacyDec prints it: 18 fractional digits. */
export function legacyDec(n: bigint): string {
  return `${n.toString()}.000000000000000000`;
}
