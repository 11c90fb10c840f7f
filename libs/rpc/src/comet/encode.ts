// CometBFT v0.38 JSON shapes of the consensus types, as its RPC prints them (cmtjson for Go
// structs, gogoproto jsonpb with EmitDefaults for ExecTxResult, ResponseCheckTx and ResponseQuery).
import { sha256 } from '@noded/crypto';
import type {
  AbciEvent,
  Block,
  BlockId,
  BlockMeta,
  CheckTxResult,
  Commit,
  CommitSig,
  ConsensusParams,
  Evidence,
  ExecTxResult,
  FinalizeBlockResponse,
  Header,
  Proposal,
  Validator,
  ValidatorUpdate,
  Vote,
} from '@noded/types';
import { b64, b64OrNull, GO_ZERO_TIME, hexUpper, rfc3339Nano, str } from './wire.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** CometBFT's version of the block protocol (version.BlockProtocol) and of p2p (P2PProtocol). */
export const BLOCK_PROTOCOL = 11;
export const P2P_PROTOCOL = 8;

export function pubKeyJson(pubKey: Uint8Array): JsonObject {
  return { type: 'tendermint/PubKeyEd25519', value: b64(pubKey) };
}

export const EMPTY_BLOCK_ID: JsonObject = { hash: '', parts: { total: 0, hash: '' } };

export function blockIdJson(id: BlockId | null | undefined): JsonObject {
  if (!id) return EMPTY_BLOCK_ID;
  return {
    hash: hexUpper(id.hash),
    parts: { total: id.partSetHeader.total, hash: hexUpper(id.partSetHeader.hash) },
  };
}

export function headerJson(h: Header): JsonObject {
  return {
    version: { block: str(h.version.block), app: str(h.version.app) },
    chain_id: h.chainId,
    height: str(h.height),
    time: rfc3339Nano(h.time),
    last_block_id: blockIdJson(h.lastBlockId),
    last_commit_hash: hexUpper(h.lastCommitHash),
    data_hash: hexUpper(h.dataHash),
    validators_hash: hexUpper(h.validatorsHash),
    next_validators_hash: hexUpper(h.nextValidatorsHash),
    consensus_hash: hexUpper(h.consensusHash),
    app_hash: hexUpper(h.appHash),
    last_results_hash: hexUpper(h.lastResultsHash),
    evidence_hash: hexUpper(h.evidenceHash),
    proposer_address: hexUpper(h.proposerAddress),
  };
}

export function commitSigJson(sig: CommitSig): JsonObject {
  if (sig.blockIdFlag === 1) {
    // Absent: CometBFT keeps an empty address, Go's zero time and a nil signature.
    return { block_id_flag: 1, validator_address: '', timestamp: GO_ZERO_TIME, signature: null };
  }
  return {
    block_id_flag: sig.blockIdFlag,
    validator_address: hexUpper(sig.validatorAddress),
    timestamp: rfc3339Nano(sig.timestamp),
    signature: b64OrNull(sig.signature),
  };
}

/** The last_commit of the first block: CometBFT's empty Commit. */
export const EMPTY_COMMIT: JsonObject = { height: '0', round: 0, block_id: EMPTY_BLOCK_ID, signatures: [] };

export function commitJson(c: Commit | null | undefined): JsonObject {
  if (!c) return EMPTY_COMMIT;
  return {
    height: str(c.height),
    round: c.round,
    block_id: blockIdJson(c.blockId),
    signatures: c.signatures.map(commitSigJson),
  };
}

export function voteJson(v: Vote): JsonObject {
  return {
    type: v.type,
    height: str(v.height),
    round: v.round,
    block_id: blockIdJson(v.blockId.hash.length === 0 ? null : v.blockId),
    timestamp: rfc3339Nano(v.timestamp),
    validator_address: hexUpper(v.validatorAddress),
    validator_index: v.validatorIndex,
    signature: b64OrNull(v.signature),
    extension: null,
    extension_signature: null,
  };
}

export function proposalJson(p: Proposal): JsonObject {
  return {
    type: 32,
    height: str(p.height),
    round: p.round,
    pol_round: p.polRound,
    block_id: blockIdJson(p.blockId),
    timestamp: rfc3339Nano(p.timestamp),
    signature: b64OrNull(p.signature),
  };
}

/** An Evidence interface value: cmtjson wraps registered types as {type, value}. */
export function evidenceJson(e: Evidence): JsonObject {
  return {
    type: 'tendermint/DuplicateVoteEvidence',
    value: {
      vote_a: voteJson(e.voteA),
      vote_b: voteJson(e.voteB),
      TotalVotingPower: str(e.totalVotingPower),
      ValidatorPower: str(e.validatorPower),
      Timestamp: rfc3339Nano(e.timestamp),
    },
  };
}

export function blockJson(b: Block): JsonObject {
  return {
    header: headerJson(b.header),
    data: { txs: b.data.txs.map(b64) },
    evidence: { evidence: b.evidence.map(evidenceJson) },
    last_commit: commitJson(b.lastCommit),
  };
}

export function blockMetaJson(m: BlockMeta): JsonObject {
  return {
    block_id: blockIdJson(m.blockId),
    block_size: str(m.blockSize),
    header: headerJson(m.header),
    num_txs: str(m.numTxs),
  };
}

export function validatorJson(v: Validator): JsonObject {
  return {
    address: hexUpper(v.address),
    pub_key: pubKeyJson(v.pubKey),
    voting_power: str(v.votingPower),
    proposer_priority: str(v.proposerPriority),
  };
}

/** A ValidatorUpdate as a CometBFT Validator (event ValidatorSetUpdates): address = sha256(pk)[:20]. */
export function validatorFromUpdateJson(u: ValidatorUpdate): JsonObject {
  return {
    address: hexUpper(sha256(u.pubKey).subarray(0, 20)),
    pub_key: pubKeyJson(u.pubKey),
    voting_power: str(u.power),
    proposer_priority: '0',
  };
}

/** abci.ValidatorUpdate through cmtjson: the protobuf PublicKey oneof shows as {"Sum": {...}}. */
export function validatorUpdateJson(u: ValidatorUpdate): JsonObject {
  return {
    pub_key: { Sum: { type: 'tendermint.crypto.PublicKey_Ed25519', value: { ed25519: b64(u.pubKey) } } },
    power: str(u.power),
  };
}

export function consensusParamsJson(p: ConsensusParams): JsonObject {
  return {
    block: { max_bytes: str(p.block.maxBytes), max_gas: str(p.block.maxGas) },
    evidence: {
      max_age_num_blocks: str(p.evidence.maxAgeNumBlocks),
      max_age_duration: str(p.evidence.maxAgeDuration),
      max_bytes: str(p.evidence.maxBytes),
    },
    validator: { pub_key_types: [...p.validator.pubKeyTypes] },
    version: { app: str(p.version.app) },
    abci: { vote_extensions_enable_height: str(p.abci.voteExtensionsEnableHeight) },
  };
}

/** abci.Event inside a jsonpb message (EmitDefaults): every field present. */
export function eventJsonpb(e: AbciEvent): JsonObject {
  return {
    type: e.type,
    attributes: e.attributes.map((a) => ({ key: a.key, value: a.value, index: a.index })),
  };
}

/** abci.Event at cmtjson level (omitempty on type and attributes; attributes through jsonpb). */
export function eventJson(e: AbciEvent): JsonObject {
  const out: JsonObject = {};
  if (e.type !== '') out.type = e.type;
  if (e.attributes.length > 0) {
    out.attributes = e.attributes.map((a) => ({ key: a.key, value: a.value, index: a.index }));
  }
  return out;
}

export function execTxResultJson(r: ExecTxResult): JsonObject {
  return {
    code: r.code,
    data: b64OrNull(r.data),
    log: r.log,
    info: r.info,
    gas_wanted: str(r.gasWanted),
    gas_used: str(r.gasUsed),
    events: r.events.map(eventJsonpb),
    codespace: r.codespace,
  };
}

/** An empty ExecTxResult (broadcast_tx_commit when the tx never made it into a block). */
export const EMPTY_EXEC_TX_RESULT: JsonObject = {
  code: 0,
  data: null,
  log: '',
  info: '',
  gas_wanted: '0',
  gas_used: '0',
  events: [],
  codespace: '',
};

export function checkTxJson(r: CheckTxResult): JsonObject {
  return {
    code: r.code,
    data: null,
    log: r.log,
    info: '',
    gas_wanted: str(r.gasWanted),
    gas_used: '0',
    events: [],
    codespace: r.codespace,
  };
}

/** abci.ResponseFinalizeBlock through cmtjson (omitempty everywhere except validator_updates). */
export function finalizeBlockJson(r: FinalizeBlockResponse): JsonObject {
  const out: JsonObject = {};
  if (r.events.length > 0) out.events = r.events.map(eventJson);
  if (r.txResults.length > 0) out.tx_results = r.txResults.map(execTxResultJson);
  out.validator_updates = r.validatorUpdates.length > 0 ? r.validatorUpdates.map(validatorUpdateJson) : null;
  if (r.consensusParamUpdates) out.consensus_param_updates = consensusParamsJson(r.consensusParamUpdates);
  if (r.appHash.length > 0) out.app_hash = b64(r.appHash);
  return out;
}

/** Flattens ABCI events to CometBFT's composite keys ("type.key" -> values), skipping empty names. */
export function flattenEvents(
  events: AbciEvent[],
  into: Record<string, string[]> = {},
): Record<string, string[]> {
  for (const e of events) {
    if (e.type === '') continue;
    for (const a of e.attributes) {
      if (a.key === '') continue;
      const tag = `${e.type}.${a.key}`;
      const list = into[tag];
      if (list) list.push(a.value);
      else into[tag] = [a.value];
    }
  }
  return into;
}

/** CometBFT tx hash: sha256 of the raw transaction bytes (types.Tx.Hash). */
export function txHash(tx: Uint8Array): Uint8Array {
  return sha256(tx);
}
