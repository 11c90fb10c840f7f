// CometBFT v0.38 JSON back into the consensus types: what a client of another node's :26657 reads
// (the light node following RPC servers). The inverse of encode.ts for headers, commits and
// validators. Input is untrusted: every field is checked for shape and a bad one is named
// (`CometJsonError: commit.signatures[2].signature: ...`); whether the contents can be trusted is the
// light client's business, not this decoder's.
import type {
  BlockId,
  BlockIdFlag,
  Commit,
  CommitSig,
  Header,
  TimeNs,
  Validator,
} from '../../../types/index.js';
import { fromB64, fromHex, GO_ZERO_TIME, parseRfc3339 } from './wire.js';

export class CometJsonError extends Error {
  constructor(path: string, why: string) {
    super(`${path}: ${why}`);
    this.name = 'CometJsonError';
  }
}

type Obj = Record<string, unknown>;

function obj(v: unknown, path: string): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new CometJsonError(path, 'not an object');
  return v as Obj;
}

function text(v: unknown, path: string): string {
  if (typeof v !== 'string')
    throw new CometJsonError(path, `not a string (${JSON.stringify(v)?.slice(0, 40)})`);
  return v;
}

/** int64 as cmtjson writes it (a decimal string); 32-bit fields may be plain numbers. */
function int(v: unknown, path: string): bigint {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
  const s = text(v, path);
  if (!/^-?\d{1,19}$/.test(s)) throw new CometJsonError(path, `not an integer (${JSON.stringify(s)})`);
  return BigInt(s);
}

function num(v: unknown, path: string, min = 0): number {
  const n = int(v, path);
  if (n < BigInt(min) || n > BigInt(Number.MAX_SAFE_INTEGER))
    throw new CometJsonError(path, `${n} is out of range`);
  return Number(n);
}

function hex(v: unknown, path: string): Uint8Array {
  try {
    return fromHex(text(v, path));
  } catch (err) {
    if (err instanceof CometJsonError) throw err;
    throw new CometJsonError(path, (err as Error).message);
  }
}

function b64(v: unknown, path: string): Uint8Array {
  if (v === null) return new Uint8Array(0);
  const s = text(v, path);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s)) throw new CometJsonError(path, 'not base64');
  return fromB64(s);
}

function time(v: unknown, path: string): TimeNs {
  const s = text(v, path);
  if (s === GO_ZERO_TIME) return 0n;
  const t = parseRfc3339(s);
  if (t === undefined) throw new CometJsonError(path, `not an RFC3339 time (${JSON.stringify(s)})`);
  return t;
}

export function blockIdFromJson(v: unknown, path = 'block_id'): BlockId {
  const o = obj(v, path);
  const parts = obj(o.parts, `${path}.parts`);
  return {
    hash: hex(o.hash, `${path}.hash`),
    partSetHeader: {
      total: num(parts.total, `${path}.parts.total`),
      hash: hex(parts.hash, `${path}.parts.hash`),
    },
  };
}

export function headerFromJson(v: unknown, path = 'header'): Header {
  const o = obj(v, path);
  const version = obj(o.version, `${path}.version`);
  return {
    version: {
      block: num(version.block, `${path}.version.block`),
      app: num(version.app ?? '0', `${path}.version.app`),
    },
    chainId: text(o.chain_id, `${path}.chain_id`),
    height: num(o.height, `${path}.height`, 1),
    time: time(o.time, `${path}.time`),
    lastBlockId: blockIdFromJson(o.last_block_id, `${path}.last_block_id`),
    lastCommitHash: hex(o.last_commit_hash, `${path}.last_commit_hash`),
    dataHash: hex(o.data_hash, `${path}.data_hash`),
    validatorsHash: hex(o.validators_hash, `${path}.validators_hash`),
    nextValidatorsHash: hex(o.next_validators_hash, `${path}.next_validators_hash`),
    consensusHash: hex(o.consensus_hash, `${path}.consensus_hash`),
    appHash: hex(o.app_hash, `${path}.app_hash`),
    lastResultsHash: hex(o.last_results_hash, `${path}.last_results_hash`),
    evidenceHash: hex(o.evidence_hash, `${path}.evidence_hash`),
    proposerAddress: hex(o.proposer_address, `${path}.proposer_address`),
  };
}

function commitSigFromJson(v: unknown, path: string): CommitSig {
  const o = obj(v, path);
  const flag = num(o.block_id_flag, `${path}.block_id_flag`);
  if (flag !== 1 && flag !== 2 && flag !== 3)
    throw new CometJsonError(`${path}.block_id_flag`, `${flag} is not 1, 2 or 3`);
  return {
    blockIdFlag: flag as BlockIdFlag,
    validatorAddress: hex(o.validator_address, `${path}.validator_address`),
    timestamp: time(o.timestamp, `${path}.timestamp`),
    signature: b64(o.signature, `${path}.signature`),
  };
}

export function commitFromJson(v: unknown, path = 'commit', maxSignatures = 10_000): Commit {
  const o = obj(v, path);
  if (!Array.isArray(o.signatures)) throw new CometJsonError(`${path}.signatures`, 'not a list');
  if (o.signatures.length > maxSignatures)
    throw new CometJsonError(
      `${path}.signatures`,
      `${o.signatures.length} signatures, over ${maxSignatures}`,
    );
  return {
    height: num(o.height, `${path}.height`),
    round: num(o.round, `${path}.round`),
    blockId: blockIdFromJson(o.block_id, `${path}.block_id`),
    signatures: o.signatures.map((s, i) => commitSigFromJson(s, `${path}.signatures[${i}]`)),
  };
}

export function validatorFromJson(v: unknown, path = 'validator'): Validator {
  const o = obj(v, path);
  const pk = obj(o.pub_key, `${path}.pub_key`);
  if (pk.type !== 'tendermint/PubKeyEd25519') {
    throw new CometJsonError(
      `${path}.pub_key.type`,
      `${JSON.stringify(pk.type)} is not tendermint/PubKeyEd25519`,
    );
  }
  return {
    address: hex(o.address, `${path}.address`),
    pubKey: b64(pk.value, `${path}.pub_key.value`),
    votingPower: int(o.voting_power, `${path}.voting_power`),
    proposerPriority: int(o.proposer_priority, `${path}.proposer_priority`),
  };
}
