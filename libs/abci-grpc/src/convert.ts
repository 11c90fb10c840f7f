// Conversions between the generated noded.abci.v1 messages and libs/types' Application types: the
// only place that knows both. `toProto` builds wire messages; `fromProto` reads them and checks every
// rule a field has (proto/noded/abci/v1/abci.proto), throwing AbciFieldError naming the field, so a
// malformed message stops at the boundary (the server answers INVALID_ARGUMENT, the client reports an
// invalid response) and never reaches the application or the consensus runtime.

import type { Duration } from '@noded/proto/src/gen/google/protobuf/duration.js';
import type { Timestamp } from '@noded/proto/src/gen/google/protobuf/timestamp.js';
import * as pb from '@noded/proto/src/gen/noded/abci/v1/abci.js';
import type {
  AbciEvent,
  AppInfo,
  AppQueryRequest,
  AppQueryResult,
  CheckTxResult,
  CommitInfo,
  ConsensusParams,
  ExecTxResult,
  ExtendedCommitInfo,
  ExtendVoteRequest,
  FinalizeBlockRequest,
  FinalizeBlockResponse,
  InitChainRequest,
  InitChainResponse,
  Misbehavior,
  PrepareProposalRequest,
  ProcessProposalRequest,
  TimeNs,
  Validator,
  ValidatorUpdate,
  VerifyVoteExtensionRequest,
} from '@noded/types';

/** A field of a received message breaks its rule; `field` is its path, as in the .proto file. */
export class AbciFieldError extends Error {
  readonly code = 'INVALID_FIELD';
  constructor(
    readonly field: string,
    readonly rule: string,
  ) {
    super(`${field}: ${rule}`);
    this.name = 'AbciFieldError';
  }
}

export type CheckTxKind = 'new' | 'recheck';

const NS_PER_S = 1_000_000_000n;
const ADDRESS_BYTES = 20;
const PUBKEY_BYTES = 32;
const HASH_BYTES = 32;
const SIGNATURE_BYTES = 64;
/** MAX_VOTE_EXTENSION_BYTES of libs/consensus (this lib does not import consensus). */
const MAX_EXTENSION_BYTES = 16 * 1024;
const enc = new TextEncoder();
const dec = new TextDecoder('utf-8', { fatal: true });

// ---------------------------------------------------------------------------------------------
// Field rules

/** A plain Uint8Array copy, so nothing downstream holds a view of the gRPC receive buffer. */
function bytes(b: Uint8Array): Uint8Array {
  return new Uint8Array(b);
}

function fixedBytes(b: Uint8Array, field: string, length: number): Uint8Array {
  if (b.length !== length) throw new AbciFieldError(field, `must be ${length} bytes, got ${b.length}`);
  return bytes(b);
}

/** An int64 that the node keeps as a JS number: at least `min`, at most 2^53 - 1. */
function safeInt(v: bigint, field: string, min: number): number {
  if (v < BigInt(min)) throw new AbciFieldError(field, `must be at least ${min}, got ${v}`);
  if (v > BigInt(Number.MAX_SAFE_INTEGER))
    throw new AbciFieldError(field, `must be at most ${Number.MAX_SAFE_INTEGER}, got ${v}`);
  return Number(v);
}

function nonNegative(v: bigint, field: string): bigint {
  if (v < 0n) throw new AbciFieldError(field, `must be at least 0, got ${v}`);
  return v;
}

function required<T>(v: T | undefined, field: string): T {
  if (v === undefined) throw new AbciFieldError(field, 'is required');
  return v;
}

function timeToProto(t: TimeNs): Timestamp {
  // Floor division: nanos stay in [0, 1e9) for times before 1970 too, as Timestamp requires.
  let seconds = t / NS_PER_S;
  let nanos = t % NS_PER_S;
  if (nanos < 0n) {
    seconds -= 1n;
    nanos += NS_PER_S;
  }
  return { seconds, nanos: Number(nanos) };
}

function timeFromProto(t: Timestamp | undefined, field: string): TimeNs {
  const ts = required(t, field);
  if (!Number.isInteger(ts.nanos) || ts.nanos < 0 || ts.nanos > 999_999_999)
    throw new AbciFieldError(`${field}.nanos`, `must be in [0, 999999999], got ${ts.nanos}`);
  return ts.seconds * NS_PER_S + BigInt(ts.nanos);
}

function durationToProto(d: bigint): Duration {
  // Truncation: seconds and nanos carry the same sign, as Duration requires.
  return { seconds: d / NS_PER_S, nanos: Number(d % NS_PER_S) };
}

function durationFromProto(d: Duration | undefined, field: string): bigint {
  const v = required(d, field);
  if (!Number.isInteger(v.nanos) || v.nanos < -999_999_999 || v.nanos > 999_999_999)
    throw new AbciFieldError(`${field}.nanos`, `must be in [-999999999, 999999999], got ${v.nanos}`);
  if ((v.seconds > 0n && v.nanos < 0) || (v.seconds < 0n && v.nanos > 0))
    throw new AbciFieldError(field, `seconds (${v.seconds}) and nanos (${v.nanos}) must have the same sign`);
  return v.seconds * NS_PER_S + BigInt(v.nanos);
}

function txsFromProto(txs: Uint8Array[]): Uint8Array[] {
  return txs.map(bytes);
}

// ---------------------------------------------------------------------------------------------
// Shared types

function eventToProto(e: AbciEvent): pb.Event {
  return { type: e.type, attributes: e.attributes.map((a) => ({ ...a })) };
}

function eventFromProto(e: pb.Event): AbciEvent {
  return {
    type: e.type,
    attributes: e.attributes.map((a) => ({ key: a.key, value: a.value, index: a.index })),
  };
}

function execTxResultToProto(r: ExecTxResult): pb.ExecTxResult {
  return { ...r, events: r.events.map(eventToProto) };
}

function execTxResultFromProto(r: pb.ExecTxResult): ExecTxResult {
  return {
    code: r.code,
    data: bytes(r.data),
    log: r.log,
    info: r.info,
    gasWanted: r.gasWanted,
    gasUsed: r.gasUsed,
    events: r.events.map(eventFromProto),
    codespace: r.codespace,
  };
}

function validatorFromProto(v: pb.Validator, field: string): Validator {
  return {
    address: fixedBytes(v.address, `${field}.address`, ADDRESS_BYTES),
    pubKey: fixedBytes(v.pubKey, `${field}.pub_key`, PUBKEY_BYTES),
    votingPower: nonNegative(v.power, `${field}.power`),
    proposerPriority: v.proposerPriority,
  };
}

function maxBytes(b: Uint8Array, field: string, max: number): Uint8Array {
  if (b.length > max) throw new AbciFieldError(field, `must be at most ${max} bytes, got ${b.length}`);
  return bytes(b);
}

function roundFromProto(r: number, field: string): number {
  if (!Number.isInteger(r) || r < 0) throw new AbciFieldError(field, `must be at least 0, got ${r}`);
  return r;
}

function extendedCommitInfoToProto(c: ExtendedCommitInfo): pb.ExtendedCommitInfo {
  return {
    round: c.round,
    votes: c.votes.map((v) => ({
      validator: {
        address: v.validator.address,
        pubKey: new Uint8Array(0),
        power: v.validator.power,
        proposerPriority: 0n,
      },
      voteExtension: v.voteExtension,
      extensionSignature: v.extensionSignature,
      blockIdFlag: v.blockIdFlag as number as pb.BlockIDFlag,
    })),
  };
}

function extendedCommitInfoFromProto(c: pb.ExtendedCommitInfo, field: string): ExtendedCommitInfo {
  return {
    round: roundFromProto(c.round, `${field}.round`),
    votes: c.votes.map((v, i) => {
      const f = `${field}.votes[${i}]`;
      const val = required(v.validator, `${f}.validator`);
      const flag = v.blockIdFlag as number;
      if (flag !== 1 && flag !== 2 && flag !== 3)
        throw new AbciFieldError(
          `${f}.block_id_flag`,
          `must be ABSENT (1), COMMIT (2) or NIL (3), got ${flag}`,
        );
      if (flag !== 2 && (v.voteExtension.length > 0 || v.extensionSignature.length > 0))
        throw new AbciFieldError(`${f}.vote_extension`, 'must be empty unless block_id_flag is COMMIT');
      if (v.extensionSignature.length !== 0 && v.extensionSignature.length !== SIGNATURE_BYTES)
        throw new AbciFieldError(
          `${f}.extension_signature`,
          `must be empty or ${SIGNATURE_BYTES} bytes, got ${v.extensionSignature.length}`,
        );
      return {
        validator: {
          address: fixedBytes(val.address, `${f}.validator.address`, ADDRESS_BYTES),
          power: nonNegative(val.power, `${f}.validator.power`),
        },
        blockIdFlag: flag,
        voteExtension: maxBytes(v.voteExtension, `${f}.vote_extension`, MAX_EXTENSION_BYTES),
        extensionSignature: bytes(v.extensionSignature),
      };
    }),
  };
}

function validatorUpdateFromProto(v: pb.ValidatorUpdate, field: string): ValidatorUpdate {
  return {
    pubKey: fixedBytes(v.pubKey, `${field}.pub_key`, PUBKEY_BYTES),
    power: nonNegative(v.power, `${field}.power`),
  };
}

function commitInfoToProto(c: CommitInfo): pb.CommitInfo {
  return {
    round: c.round,
    votes: c.votes.map((v) => ({ validatorAddress: v.validatorAddress, power: v.power, signed: v.signed })),
  };
}

function commitInfoFromProto(c: pb.CommitInfo | undefined, field: string): CommitInfo {
  const m = required(c, field);
  if (!Number.isInteger(m.round) || m.round < 0)
    throw new AbciFieldError(`${field}.round`, `must be at least 0, got ${m.round}`);
  return {
    round: m.round,
    votes: m.votes.map((v, i) => ({
      validatorAddress: fixedBytes(
        v.validatorAddress,
        `${field}.votes[${i}].validator_address`,
        ADDRESS_BYTES,
      ),
      power: BigInt(safeInt(v.power, `${field}.votes[${i}].power`, 1)),
      signed: v.signed,
    })),
  };
}

function misbehaviorToProto(m: Misbehavior): pb.Misbehavior {
  return {
    type: pb.MisbehaviorType.MISBEHAVIOR_TYPE_DUPLICATE_VOTE,
    validatorAddress: m.validatorAddress,
    height: BigInt(m.height),
    time: timeToProto(m.time),
    totalVotingPower: m.totalVotingPower,
  };
}

function misbehaviorFromProto(m: pb.Misbehavior, field: string): Misbehavior {
  if (m.type !== pb.MisbehaviorType.MISBEHAVIOR_TYPE_DUPLICATE_VOTE)
    throw new AbciFieldError(`${field}.type`, `must be MISBEHAVIOR_TYPE_DUPLICATE_VOTE (1), got ${m.type}`);
  return {
    type: 'duplicate_vote',
    validatorAddress: fixedBytes(m.validatorAddress, `${field}.validator_address`, ADDRESS_BYTES),
    height: safeInt(m.height, `${field}.height`, 1),
    time: timeFromProto(m.time, `${field}.time`),
    totalVotingPower: nonNegative(m.totalVotingPower, `${field}.total_voting_power`),
  };
}

function consensusParamsToProto(p: ConsensusParams): pb.ConsensusParams {
  return {
    block: { maxBytes: p.block.maxBytes, maxGas: p.block.maxGas },
    evidence: {
      maxAgeNumBlocks: p.evidence.maxAgeNumBlocks,
      maxAgeDuration: durationToProto(p.evidence.maxAgeDuration),
      maxBytes: p.evidence.maxBytes,
    },
    validator: { pubKeyTypes: [...p.validator.pubKeyTypes] },
    version: { app: p.version.app },
    abci: { voteExtensionsEnableHeight: p.abci.voteExtensionsEnableHeight },
  };
}

function consensusParamsFromProto(p: pb.ConsensusParams | undefined, field: string): ConsensusParams {
  const c = required(p, field);
  const block = required(c.block, `${field}.block`);
  const evidence = required(c.evidence, `${field}.evidence`);
  const validator = required(c.validator, `${field}.validator`);
  const version = required(c.version, `${field}.version`);
  const abci = required(c.abci, `${field}.abci`);
  return {
    block: { maxBytes: block.maxBytes, maxGas: block.maxGas },
    evidence: {
      maxAgeNumBlocks: evidence.maxAgeNumBlocks,
      maxAgeDuration: durationFromProto(evidence.maxAgeDuration, `${field}.evidence.max_age_duration`),
      maxBytes: evidence.maxBytes,
    },
    validator: { pubKeyTypes: [...validator.pubKeyTypes] },
    version: { app: version.app },
    abci: { voteExtensionsEnableHeight: abci.voteExtensionsEnableHeight },
  };
}

// ---------------------------------------------------------------------------------------------
// Requests and responses, one pair per call

/** libs/types -> wire. */
export const toProto = {
  infoRequest(): pb.InfoRequest {
    return {};
  },
  infoResponse(r: AppInfo): pb.InfoResponse {
    return {
      data: r.data,
      version: r.version,
      appVersion: r.appVersion,
      lastBlockHeight: BigInt(r.lastBlockHeight),
      lastBlockAppHash: r.lastBlockAppHash,
    };
  },
  initChainRequest(r: InitChainRequest): pb.InitChainRequest {
    return {
      time: timeToProto(r.time),
      chainId: r.chainId,
      consensusParams: consensusParamsToProto(r.consensusParams),
      validators: r.validators.map((v) => ({
        address: v.address,
        pubKey: v.pubKey,
        power: v.votingPower,
        proposerPriority: v.proposerPriority,
      })),
      appStateBytes: r.appState === undefined ? new Uint8Array(0) : enc.encode(JSON.stringify(r.appState)),
      initialHeight: BigInt(r.initialHeight),
    };
  },
  initChainResponse(r: InitChainResponse): pb.InitChainResponse {
    return { appHash: r.appHash };
  },
  checkTxRequest(tx: Uint8Array, kind: CheckTxKind): pb.CheckTxRequest {
    return {
      tx,
      type: kind === 'recheck' ? pb.CheckTxType.CHECK_TX_TYPE_RECHECK : pb.CheckTxType.CHECK_TX_TYPE_NEW,
    };
  },
  checkTxResponse(r: CheckTxResult): pb.CheckTxResponse {
    return { code: r.code, log: r.log, gasWanted: r.gasWanted, codespace: r.codespace, hash: r.hash };
  },
  prepareProposalRequest(r: PrepareProposalRequest): pb.PrepareProposalRequest {
    return {
      maxTxBytes: BigInt(r.maxTxBytes),
      height: BigInt(r.height),
      time: timeToProto(r.time),
      proposerAddress: r.proposerAddress,
      localLastCommit: r.localLastCommit ? extendedCommitInfoToProto(r.localLastCommit) : undefined,
    };
  },
  prepareProposalResponse(txs: Uint8Array[]): pb.PrepareProposalResponse {
    return { txs };
  },
  processProposalRequest(r: ProcessProposalRequest): pb.ProcessProposalRequest {
    return {
      txs: r.txs,
      hash: r.hash,
      height: BigInt(r.height),
      time: timeToProto(r.time),
      proposerAddress: r.proposerAddress,
    };
  },
  processProposalResponse(accept: boolean): pb.ProcessProposalResponse {
    return {
      status: accept ? pb.ProposalStatus.PROPOSAL_STATUS_ACCEPT : pb.ProposalStatus.PROPOSAL_STATUS_REJECT,
    };
  },
  extendVoteRequest(r: ExtendVoteRequest): pb.ExtendVoteRequest {
    return {
      hash: r.hash,
      height: BigInt(r.height),
      time: timeToProto(r.time),
      txs: r.txs,
      proposerAddress: r.proposerAddress,
      round: r.round,
    };
  },
  extendVoteResponse(ext: Uint8Array): pb.ExtendVoteResponse {
    return { voteExtension: ext };
  },
  verifyVoteExtensionRequest(r: VerifyVoteExtensionRequest): pb.VerifyVoteExtensionRequest {
    return {
      hash: r.hash,
      validatorAddress: r.validatorAddress,
      height: BigInt(r.height),
      voteExtension: r.voteExtension,
      round: r.round,
    };
  },
  verifyVoteExtensionResponse(accept: boolean): pb.VerifyVoteExtensionResponse {
    return {
      status: accept ? pb.VerifyStatus.VERIFY_STATUS_ACCEPT : pb.VerifyStatus.VERIFY_STATUS_REJECT,
    };
  },
  finalizeBlockRequest(r: FinalizeBlockRequest): pb.FinalizeBlockRequest {
    return {
      txs: r.txs,
      misbehavior: r.misbehavior.map(misbehaviorToProto),
      decidedLastCommit: commitInfoToProto(r.decidedLastCommit),
      hash: r.hash,
      height: BigInt(r.height),
      time: timeToProto(r.time),
      proposerAddress: r.proposerAddress,
      lightBlock: r.lightBlock ?? new Uint8Array(),
    };
  },
  finalizeBlockResponse(r: FinalizeBlockResponse): pb.FinalizeBlockResponse {
    return {
      events: r.events.map(eventToProto),
      txResults: r.txResults.map(execTxResultToProto),
      validatorUpdates: r.validatorUpdates.map((v) => ({ pubKey: v.pubKey, power: v.power })),
      consensusParamUpdates: r.consensusParamUpdates
        ? consensusParamsToProto(r.consensusParamUpdates)
        : undefined,
      appHash: r.appHash,
    };
  },
  commitRequest(): pb.CommitRequest {
    return {};
  },
  commitResponse(r: { retainHeight: number }): pb.CommitResponse {
    return { retainHeight: BigInt(r.retainHeight) };
  },
  queryRequest(r: AppQueryRequest): pb.QueryRequest {
    return { data: r.data, path: r.path, height: BigInt(r.height), prove: r.prove };
  },
  queryResponse(r: AppQueryResult): pb.QueryResponse {
    return { code: r.code, log: r.log, key: r.key, value: r.value, height: BigInt(r.height) };
  },
};

/** Wire -> libs/types, checking every field's rule (AbciFieldError names the first broken one). */
export const fromProto = {
  infoRequest(_m: pb.InfoRequest): void {},
  infoResponse(m: pb.InfoResponse): AppInfo {
    return {
      data: m.data,
      version: m.version,
      appVersion: m.appVersion,
      lastBlockHeight: safeInt(m.lastBlockHeight, 'InfoResponse.last_block_height', 0),
      lastBlockAppHash: bytes(m.lastBlockAppHash),
    };
  },
  initChainRequest(m: pb.InitChainRequest): InitChainRequest {
    const f = 'InitChainRequest';
    if (m.chainId === '') throw new AbciFieldError(`${f}.chain_id`, 'must not be empty');
    let appState: unknown;
    if (m.appStateBytes.length > 0) {
      try {
        appState = JSON.parse(dec.decode(m.appStateBytes));
      } catch (err) {
        throw new AbciFieldError(`${f}.app_state_bytes`, `must be UTF-8 JSON: ${(err as Error).message}`);
      }
    }
    return {
      chainId: m.chainId,
      time: timeFromProto(m.time, `${f}.time`),
      initialHeight: safeInt(m.initialHeight, `${f}.initial_height`, 1),
      validators: m.validators.map((v, i) => validatorFromProto(v, `${f}.validators[${i}]`)),
      consensusParams: consensusParamsFromProto(m.consensusParams, `${f}.consensus_params`),
      appState,
    };
  },
  initChainResponse(m: pb.InitChainResponse): InitChainResponse {
    return { appHash: bytes(m.appHash) };
  },
  checkTxRequest(m: pb.CheckTxRequest): { tx: Uint8Array; kind: CheckTxKind } {
    if (m.tx.length === 0) throw new AbciFieldError('CheckTxRequest.tx', 'must not be empty');
    let kind: CheckTxKind;
    if (m.type === pb.CheckTxType.CHECK_TX_TYPE_NEW) kind = 'new';
    else if (m.type === pb.CheckTxType.CHECK_TX_TYPE_RECHECK) kind = 'recheck';
    else
      throw new AbciFieldError(
        'CheckTxRequest.type',
        `must be CHECK_TX_TYPE_NEW (1) or CHECK_TX_TYPE_RECHECK (2), got ${m.type}`,
      );
    return { tx: bytes(m.tx), kind };
  },
  checkTxResponse(m: pb.CheckTxResponse): CheckTxResult {
    return { code: m.code, log: m.log, gasWanted: m.gasWanted, codespace: m.codespace, hash: bytes(m.hash) };
  },
  prepareProposalRequest(m: pb.PrepareProposalRequest): PrepareProposalRequest {
    const f = 'PrepareProposalRequest';
    return {
      height: safeInt(m.height, `${f}.height`, 1),
      time: timeFromProto(m.time, `${f}.time`),
      proposerAddress: fixedBytes(m.proposerAddress, `${f}.proposer_address`, ADDRESS_BYTES),
      maxTxBytes: safeInt(m.maxTxBytes, `${f}.max_tx_bytes`, 0),
      ...(m.localLastCommit
        ? { localLastCommit: extendedCommitInfoFromProto(m.localLastCommit, `${f}.local_last_commit`) }
        : {}),
    };
  },
  prepareProposalResponse(m: pb.PrepareProposalResponse): Uint8Array[] {
    return txsFromProto(m.txs);
  },
  processProposalRequest(m: pb.ProcessProposalRequest): ProcessProposalRequest {
    const f = 'ProcessProposalRequest';
    return {
      height: safeInt(m.height, `${f}.height`, 1),
      time: timeFromProto(m.time, `${f}.time`),
      proposerAddress: fixedBytes(m.proposerAddress, `${f}.proposer_address`, ADDRESS_BYTES),
      hash: fixedBytes(m.hash, `${f}.hash`, HASH_BYTES),
      txs: txsFromProto(m.txs),
    };
  },
  processProposalResponse(m: pb.ProcessProposalResponse): boolean {
    if (m.status === pb.ProposalStatus.PROPOSAL_STATUS_ACCEPT) return true;
    if (m.status === pb.ProposalStatus.PROPOSAL_STATUS_REJECT) return false;
    throw new AbciFieldError(
      'ProcessProposalResponse.status',
      `must be PROPOSAL_STATUS_ACCEPT (1) or PROPOSAL_STATUS_REJECT (2), got ${m.status}`,
    );
  },
  extendVoteRequest(m: pb.ExtendVoteRequest): ExtendVoteRequest {
    const f = 'ExtendVoteRequest';
    return {
      height: safeInt(m.height, `${f}.height`, 1),
      round: roundFromProto(m.round, `${f}.round`),
      hash: fixedBytes(m.hash, `${f}.hash`, HASH_BYTES),
      time: timeFromProto(m.time, `${f}.time`),
      txs: txsFromProto(m.txs),
      proposerAddress: fixedBytes(m.proposerAddress, `${f}.proposer_address`, ADDRESS_BYTES),
    };
  },
  extendVoteResponse(m: pb.ExtendVoteResponse): Uint8Array {
    return maxBytes(m.voteExtension, 'ExtendVoteResponse.vote_extension', MAX_EXTENSION_BYTES);
  },
  verifyVoteExtensionRequest(m: pb.VerifyVoteExtensionRequest): VerifyVoteExtensionRequest {
    const f = 'VerifyVoteExtensionRequest';
    return {
      height: safeInt(m.height, `${f}.height`, 1),
      round: roundFromProto(m.round, `${f}.round`),
      hash: fixedBytes(m.hash, `${f}.hash`, HASH_BYTES),
      validatorAddress: fixedBytes(m.validatorAddress, `${f}.validator_address`, ADDRESS_BYTES),
      voteExtension: maxBytes(m.voteExtension, `${f}.vote_extension`, MAX_EXTENSION_BYTES),
    };
  },
  verifyVoteExtensionResponse(m: pb.VerifyVoteExtensionResponse): boolean {
    if (m.status === pb.VerifyStatus.VERIFY_STATUS_ACCEPT) return true;
    if (m.status === pb.VerifyStatus.VERIFY_STATUS_REJECT) return false;
    throw new AbciFieldError(
      'VerifyVoteExtensionResponse.status',
      `must be VERIFY_STATUS_ACCEPT (1) or VERIFY_STATUS_REJECT (2), got ${m.status}`,
    );
  },
  finalizeBlockRequest(m: pb.FinalizeBlockRequest): FinalizeBlockRequest {
    const f = 'FinalizeBlockRequest';
    return {
      height: safeInt(m.height, `${f}.height`, 1),
      time: timeFromProto(m.time, `${f}.time`),
      proposerAddress: fixedBytes(m.proposerAddress, `${f}.proposer_address`, ADDRESS_BYTES),
      hash: fixedBytes(m.hash, `${f}.hash`, HASH_BYTES),
      txs: txsFromProto(m.txs),
      misbehavior: m.misbehavior.map((x, i) => misbehaviorFromProto(x, `${f}.misbehavior[${i}]`)),
      decidedLastCommit: commitInfoFromProto(m.decidedLastCommit, `${f}.decided_last_commit`),
      // Checked by the state-stores that verify it, not here: the executor only carries it.
      ...(m.lightBlock.length > 0 ? { lightBlock: m.lightBlock } : {}),
    };
  },
  finalizeBlockResponse(m: pb.FinalizeBlockResponse): FinalizeBlockResponse {
    const f = 'FinalizeBlockResponse';
    return {
      events: m.events.map(eventFromProto),
      txResults: m.txResults.map(execTxResultFromProto),
      validatorUpdates: m.validatorUpdates.map((v, i) =>
        validatorUpdateFromProto(v, `${f}.validator_updates[${i}]`),
      ),
      consensusParamUpdates:
        m.consensusParamUpdates === undefined
          ? null
          : consensusParamsFromProto(m.consensusParamUpdates, `${f}.consensus_param_updates`),
      appHash: bytes(m.appHash),
    };
  },
  commitRequest(_m: pb.CommitRequest): void {},
  commitResponse(m: pb.CommitResponse): { retainHeight: number } {
    return { retainHeight: safeInt(m.retainHeight, 'CommitResponse.retain_height', 0) };
  },
  queryRequest(m: pb.QueryRequest): AppQueryRequest {
    // 0 or less is the latest height, as the RPC passes abci_query's `height` on unchanged.
    return {
      path: m.path,
      data: bytes(m.data),
      height: safeInt(m.height, 'QueryRequest.height', -Number.MAX_SAFE_INTEGER),
      prove: m.prove,
    };
  },
  queryResponse(m: pb.QueryResponse): AppQueryResult {
    return {
      code: m.code,
      log: m.log,
      key: bytes(m.key),
      value: bytes(m.value),
      height: safeInt(m.height, 'QueryResponse.height', 0),
    };
  },
};
