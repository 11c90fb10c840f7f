// CometBFT v0.38 JSON back into the consensus types: what a client of another node's :26657 reads
// (the light node following RPC servers, an rpc-edge's REST reading the consensus service). The
// inverse of encode.ts for headers, commits, validators, blocks and transaction results. Input is untrusted: every field is checked for shape and a bad one is named
// (`CometJsonError: commit.signatures[2].signature: ...`); whether the contents can be trusted is the
// light client's business, not this decoder's.
import type {
  AbciEvent,
  Block,
  BlockId,
  BlockIdFlag,
  Commit,
  CommitSig,
  Evidence,
  ExecTxResult,
  Header,
  TimeNs,
  Validator,
  Vote,
} from '@noded/types';
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

function list(v: unknown, path: string, max = 100_000): unknown[] {
  if (v === null || v === undefined) return [];
  if (!Array.isArray(v)) throw new CometJsonError(path, 'not a list');
  if (v.length > max) throw new CometJsonError(path, `${v.length} entries, over ${max}`);
  return v;
}

function bool(v: unknown, path: string): boolean {
  if (typeof v !== 'boolean') throw new CometJsonError(path, `not a boolean (${JSON.stringify(v)})`);
  return v;
}

function voteFromJson(v: unknown, path: string): Vote {
  const o = obj(v, path);
  const type = num(o.type, `${path}.type`);
  if (type !== 1 && type !== 2) throw new CometJsonError(`${path}.type`, `${type} is not 1 or 2`);
  return {
    type,
    height: num(o.height, `${path}.height`),
    round: num(o.round, `${path}.round`),
    blockId: blockIdFromJson(o.block_id, `${path}.block_id`),
    timestamp: time(o.timestamp, `${path}.timestamp`),
    validatorAddress: hex(o.validator_address, `${path}.validator_address`),
    validatorIndex: num(o.validator_index, `${path}.validator_index`),
    signature: b64(o.signature, `${path}.signature`),
  };
}

function evidenceFromJson(v: unknown, path: string): Evidence {
  const o = obj(v, path);
  if (o.type !== 'tendermint/DuplicateVoteEvidence')
    throw new CometJsonError(
      `${path}.type`,
      `${JSON.stringify(o.type)} is not tendermint/DuplicateVoteEvidence`,
    );
  const e = obj(o.value, `${path}.value`);
  return {
    voteA: voteFromJson(e.vote_a, `${path}.value.vote_a`),
    voteB: voteFromJson(e.vote_b, `${path}.value.vote_b`),
    totalVotingPower: int(e.TotalVotingPower, `${path}.value.TotalVotingPower`),
    validatorPower: int(e.ValidatorPower, `${path}.value.ValidatorPower`),
    timestamp: time(e.Timestamp, `${path}.value.Timestamp`),
  };
}

/** A block as /block prints it; the first block's empty last_commit (height 0) is null. */
export function blockFromJson(v: unknown, path = 'block'): Block {
  const o = obj(v, path);
  const data = obj(o.data, `${path}.data`);
  const evidence = obj(o.evidence, `${path}.evidence`);
  const lastCommit = commitFromJson(o.last_commit, `${path}.last_commit`);
  return {
    header: headerFromJson(o.header, `${path}.header`),
    data: { txs: list(data.txs, `${path}.data.txs`).map((t, i) => b64(t, `${path}.data.txs[${i}]`)) },
    evidence: list(evidence.evidence, `${path}.evidence.evidence`).map((e, i) =>
      evidenceFromJson(e, `${path}.evidence.evidence[${i}]`),
    ),
    lastCommit: lastCommit.height === 0 && lastCommit.signatures.length === 0 ? null : lastCommit,
  };
}

function eventFromJson(v: unknown, path: string): AbciEvent {
  const o = obj(v, path);
  return {
    type: o.type === undefined ? '' : text(o.type, `${path}.type`),
    attributes: list(o.attributes, `${path}.attributes`).map((a, i) => {
      const at = obj(a, `${path}.attributes[${i}]`);
      return {
        key: text(at.key, `${path}.attributes[${i}].key`),
        value: text(at.value, `${path}.attributes[${i}].value`),
        index: bool(at.index ?? false, `${path}.attributes[${i}].index`),
      };
    }),
  };
}

/** One entry of /block_results txs_results (ExecTxResult in jsonpb with defaults emitted). */
export function execTxResultFromJson(v: unknown, path = 'tx_result'): ExecTxResult {
  const o = obj(v, path);
  return {
    code: num(o.code, `${path}.code`),
    data: b64(o.data ?? null, `${path}.data`),
    log: text(o.log ?? '', `${path}.log`),
    info: text(o.info ?? '', `${path}.info`),
    gasWanted: int(o.gas_wanted ?? '0', `${path}.gas_wanted`),
    gasUsed: int(o.gas_used ?? '0', `${path}.gas_used`),
    events: list(o.events, `${path}.events`).map((e, i) => eventFromJson(e, `${path}.events[${i}]`)),
    codespace: text(o.codespace ?? '', `${path}.codespace`),
  };
}
