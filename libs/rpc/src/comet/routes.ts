// The routes of CometBFT v0.38's RPC (rpc/core/routes.go) over the NodeReader port, with its
// argument names, defaults, limits and error messages.
import type { TraceParent } from '@noded/telemetry';
import type { DuplicateVoteEvidence, Logger, NodeIdentity, NodeReader, Vote } from '@noded/types';
import {
  BLOCK_PROTOCOL,
  blockIdJson,
  blockJson,
  blockMetaJson,
  checkTxJson,
  commitJson,
  consensusParamsJson,
  EMPTY_BLOCK_ID,
  EMPTY_EXEC_TX_RESULT,
  eventJson,
  execTxResultJson,
  headerJson,
  type Json,
  type JsonObject,
  P2P_PROTOCOL,
  pubKeyJson,
  txHash,
  validatorJson,
  validatorUpdateJson,
} from './encode.js';
import { type CometEvent, type EventHub, roundStepNumber, type SubscriptionSink } from './events.js';
import type { IndexedTx, TxIndexer } from './indexer.js';
import { txProofJson } from './merkle.js';
import type { CometRpcOptions } from './options.js';
import type { ArgValue, ParamSpec } from './params.js';
import { Query } from './query.js';
import { b64, b64OrNull, fromHex, hexUpper, parseRfc3339, rfc3339Nano, str } from './wire.js';

/** A JSON-RPC id: string or integer; null for URI calls is represented by -1 as CometBFT does. */
export type JsonRpcId = string | number;

/** What a route knows about its caller. */
export interface CallContext {
  /** "ip:port" of the client; subscriptions are keyed by it. */
  remoteAddr: string;
  /** Id of the JSON-RPC request (subscriptions deliver events under it). */
  id: JsonRpcId;
  /** Set when the call came over /websocket. */
  ws?: WsSubscriber;
  /** Aborted when the client goes away. */
  signal?: AbortSignal;
  /** The client's W3C trace context (an HTTP request's `traceparent`), when tracing is on. */
  traceParent?: TraceParent;
}

/** The WebSocket side of a subscription: the server implements it per connection. */
export interface WsSubscriber {
  sinkFor(id: JsonRpcId, query: Query): SubscriptionSink;
}

export interface RouteDef {
  params: ParamSpec[];
  handler: (env: RpcEnvironment, ctx: CallContext, args: ArgValue[]) => Promise<Json>;
  /** Only over /websocket (subscribe, unsubscribe, unsubscribe_all). */
  ws?: boolean;
  /** Only with [rpc] unsafe = true. */
  unsafe?: boolean;
  /** Answers may carry "Cache-Control: public, max-age=86400"; names args whose absence prevents it. */
  cacheable?: string[];
}

const DEFAULT_PER_PAGE = 30;
const MAX_PER_PAGE = 100;
const MAX_QUERY_LENGTH = 512;
const GENESIS_CHUNK_SIZE = 16 * 1024 * 1024;

/** The state a route reads: the node, the indexer, the subscriptions and the options. */
export class RpcEnvironment {
  private genesisChunks: string[] | undefined;
  private genesisDoc: Json | undefined;

  constructor(
    readonly node: NodeReader,
    readonly indexer: TxIndexer,
    readonly hub: EventHub,
    readonly options: CometRpcOptions,
    readonly logger: Logger,
  ) {}

  genesis(): { doc: Json; chunks: string[] } {
    if (!this.genesisChunks || this.genesisDoc === undefined) {
      const doc = JSON.parse(this.node.genesisJson()) as Json;
      const bytes = Buffer.from(JSON.stringify(doc), 'utf8');
      const chunks: string[] = [];
      for (let i = 0; i < bytes.length; i += GENESIS_CHUNK_SIZE) {
        chunks.push(bytes.subarray(i, i + GENESIS_CHUNK_SIZE).toString('base64'));
      }
      this.genesisDoc = doc;
      this.genesisChunks = chunks;
    }
    return { doc: this.genesisDoc, chunks: this.genesisChunks };
  }

  /** env.getHeight: a requested height checked against [base, latest]; latest when absent. */
  height(latest: number, requested: number | undefined): number {
    if (requested === undefined) return latest;
    if (requested <= 0) throw new Error(`height must be greater than 0, but got ${requested}`);
    if (requested > latest) {
      throw new Error(
        `height ${requested} must be less than or equal to the current blockchain height ${latest}`,
      );
    }
    const base = this.node.blockStoreBase();
    if (requested < base) throw new Error(`height ${requested} is not available, lowest height is ${base}`);
    return requested;
  }

  /** Height the consensus is deciding now (validators/consensus_params default to it). */
  latestUncommittedHeight(): number {
    const h = this.node.blockStoreHeight();
    return this.node.syncInfo().catchingUp ? h : h + 1;
  }
}

function perPageOf(v: ArgValue): number {
  const n = v as number | undefined;
  if (n === undefined || n < 1) return DEFAULT_PER_PAGE;
  return Math.min(n, MAX_PER_PAGE);
}

function pageOf(v: ArgValue, perPage: number, total: number): number {
  const page = v as number | undefined;
  if (page === undefined) return 1;
  const pages = Math.max(1, Math.floor((total - 1) / perPage) + 1);
  if (page <= 0 || page > pages) throw new Error(`page should be within [1, ${pages}] range, given ${page}`);
  return page;
}

function nodeInfoJson(node: NodeReader, appVersion: string): JsonObject {
  const id = node.identity();
  return {
    protocol_version: { p2p: str(P2P_PROTOCOL), block: str(BLOCK_PROTOCOL), app: appVersion },
    id: id.nodeId,
    listen_addr: id.listenAddr,
    network: id.network,
    version: id.version,
    channels: id.channels.toUpperCase(),
    moniker: id.moniker,
    // noded adds the node's mode (full, archive, light) when the reader reports one (`noded status`).
    other: { tx_index: id.txIndex, rpc_address: id.rpcAddress, ...modeOf(id) },
  };
}

function modeOf(id: NodeIdentity): { mode?: string } {
  const mode = (id as NodeIdentity & { other?: { mode?: unknown } }).other?.mode;
  return typeof mode === 'string' ? { mode } : {};
}

function resultTxJson(t: IndexedTx, hash: Uint8Array, proof: JsonObject | undefined): JsonObject {
  const out: JsonObject = {
    hash: hexUpper(hash),
    height: str(t.height),
    index: t.index,
    tx_result: execTxResultJson(t.result),
    tx: b64(t.tx),
  };
  if (proof) out.proof = proof;
  return out;
}

async function txProof(env: RpcEnvironment, t: IndexedTx): Promise<JsonObject | undefined> {
  const block = await env.node.loadBlock(t.height);
  return block && t.index < block.data.txs.length ? txProofJson(block.data.txs, t.index) : undefined;
}

function orderBy(v: ArgValue, dflt: 'asc' | 'desc'): 'asc' | 'desc' {
  const s = v as string;
  if (s === '') return dflt;
  if (s === 'asc' || s === 'desc') return s;
  throw new Error('expected order_by to be either `asc` or `desc` or empty');
}

function parseQueryArg(text: string): Query {
  if (text.length > MAX_QUERY_LENGTH) throw new Error('maximum query length exceeded');
  return Query.parse(text);
}

// ---- evidence -------------------------------------------------------------------------------

function asObject(v: unknown, what: string): Record<string, unknown> {
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error(`${what} must be an object`);
  return v as Record<string, unknown>;
}

function int64Field(o: Record<string, unknown>, key: string): bigint {
  const v = o[key];
  if (typeof v !== 'string' || !/^-?\d+$/.test(v))
    throw new Error(`${key}: invalid 64-bit integer encoding, expected string`);
  return BigInt(v);
}

function timeField(o: Record<string, unknown>, key: string): bigint {
  const v = o[key];
  const t = typeof v === 'string' ? parseRfc3339(v) : undefined;
  if (t === undefined) throw new Error(`${key}: JSON time must be an RFC3339 string`);
  return t;
}

function voteFromJson(raw: unknown, what: string): Vote {
  const o = asObject(raw, what);
  const bid = asObject(o.block_id ?? {}, `${what}.block_id`);
  const parts = asObject(bid.parts ?? {}, `${what}.block_id.parts`);
  const type = o.type;
  if (type !== 1 && type !== 2) throw new Error(`${what}.type must be 1 (prevote) or 2 (precommit)`);
  return {
    type,
    height: Number(int64Field(o, 'height')),
    round: Number(o.round ?? 0),
    blockId: {
      hash: fromHex(String(bid.hash ?? '')),
      partSetHeader: { total: Number(parts.total ?? 0), hash: fromHex(String(parts.hash ?? '')) },
    },
    timestamp: timeField(o, 'timestamp'),
    validatorAddress: fromHex(String(o.validator_address ?? '')),
    validatorIndex: Number(o.validator_index ?? 0),
    signature: new Uint8Array(Buffer.from(String(o.signature ?? ''), 'base64')),
  };
}

/** types.Evidence as cmtjson: {"type":"tendermint/DuplicateVoteEvidence","value":{...}}. */
export function evidenceFromJson(raw: unknown): DuplicateVoteEvidence {
  const wrapper = asObject(raw, 'evidence');
  if (wrapper.type === undefined) {
    throw new Error('evidence has no "type" (want "tendermint/DuplicateVoteEvidence" with its "value")');
  }
  if (wrapper.type !== 'tendermint/DuplicateVoteEvidence') {
    throw new Error(
      `evidence type ${JSON.stringify(wrapper.type)} is not supported (want tendermint/DuplicateVoteEvidence)`,
    );
  }
  const v = asObject(wrapper.value, 'evidence.value');
  return {
    voteA: voteFromJson(v.vote_a, 'vote_a'),
    voteB: voteFromJson(v.vote_b, 'vote_b'),
    totalVotingPower: v.TotalVotingPower === undefined ? 0n : int64Field(v, 'TotalVotingPower'),
    validatorPower: v.ValidatorPower === undefined ? 0n : int64Field(v, 'ValidatorPower'),
    timestamp: v.Timestamp === undefined ? 0n : timeField(v, 'Timestamp'),
  };
}

// ---- routes ---------------------------------------------------------------------------------

const h = (name: string): ParamSpec => ({ name, kind: 'int64ptr' });

export const ROUTES: Record<string, RouteDef> = {
  subscribe: {
    ws: true,
    params: [{ name: 'query', kind: 'string' }],
    handler: async (env, ctx, [queryText]) => {
      const { hub, options } = env;
      const text = queryText as string;
      if (hub.numClients() >= options.maxSubscriptionClients) {
        throw new Error(`max_subscription_clients ${options.maxSubscriptionClients} reached`);
      }
      if (hub.numClientSubscriptions(ctx.remoteAddr) >= options.maxSubscriptionsPerClient) {
        throw new Error(`max_subscriptions_per_client ${options.maxSubscriptionsPerClient} reached`);
      }
      if (text.length > MAX_QUERY_LENGTH) throw new Error('maximum query length exceeded');
      let q: Query;
      try {
        q = Query.parse(text);
      } catch (err) {
        throw new Error(`failed to parse query: ${(err as Error).message}`);
      }
      if (!ctx.ws) throw new Error('subscribe is only available over /websocket');
      env.logger.info({ remote: ctx.remoteAddr, query: text }, 'Subscribe to query');
      hub.subscribe(ctx.remoteAddr, q, ctx.ws.sinkFor(ctx.id, q));
      return {};
    },
  },
  unsubscribe: {
    ws: true,
    params: [{ name: 'query', kind: 'string' }],
    handler: async (env, ctx, [queryText]) => {
      let q: Query;
      try {
        q = Query.parse(queryText as string);
      } catch (err) {
        throw new Error(`failed to parse query: ${(err as Error).message}`);
      }
      env.hub.unsubscribe(ctx.remoteAddr, q);
      return {};
    },
  },
  unsubscribe_all: {
    ws: true,
    params: [],
    handler: async (env, ctx) => {
      env.hub.unsubscribeAll(ctx.remoteAddr);
      return {};
    },
  },

  health: { params: [], handler: async () => ({}) },

  status: {
    params: [],
    handler: async (env) => {
      const { node } = env;
      const sync = node.syncInfo();
      const val = node.validatorInfo();
      const latest =
        sync.latestBlockHeight > 0 ? await node.loadBlockMeta(sync.latestBlockHeight) : undefined;
      const appVersion = latest ? str(latest.header.version.app) : '0';
      return {
        node_info: nodeInfoJson(node, appVersion),
        sync_info: {
          latest_block_hash: hexUpper(sync.latestBlockHash),
          latest_app_hash: hexUpper(sync.latestAppHash),
          latest_block_height: str(sync.latestBlockHeight),
          latest_block_time: rfc3339Nano(sync.latestBlockTime),
          earliest_block_hash: hexUpper(sync.earliestBlockHash),
          earliest_app_hash: hexUpper(sync.earliestAppHash),
          earliest_block_height: str(sync.earliestBlockHeight),
          earliest_block_time: rfc3339Nano(sync.earliestBlockTime),
          catching_up: sync.catchingUp,
        },
        validator_info: {
          address: hexUpper(val.address),
          pub_key: pubKeyJson(val.pubKey),
          voting_power: str(val.votingPower),
        },
      };
    },
  },

  net_info: {
    params: [],
    handler: async (env) => {
      const id = env.node.identity();
      const peers = env.node.peers();
      return {
        listening: true,
        listeners: [`Listener(@${id.listenAddr})`],
        n_peers: str(peers.length),
        peers: peers.map((p) => ({
          node_info: {
            protocol_version: { p2p: str(P2P_PROTOCOL), block: str(BLOCK_PROTOCOL), app: '0' },
            id: p.nodeId,
            listen_addr: p.listenAddr,
            network: p.network,
            version: p.version,
            channels: id.channels.toUpperCase(),
            moniker: p.moniker,
            other: { tx_index: '', rpc_address: '' },
          },
          is_outbound: p.isOutbound,
          connection_status: connectionStatusJson(id.channels),
          remote_ip: p.remoteIp,
        })),
      };
    },
  },

  blockchain: {
    params: [
      { name: 'minHeight', kind: 'int64' },
      { name: 'maxHeight', kind: 'int64' },
    ],
    cacheable: [],
    handler: async (env, _ctx, [minArg, maxArg]) => {
      const limit = 20;
      let min = minArg as number;
      let max = maxArg as number;
      const base = env.node.blockStoreBase();
      const height = env.node.blockStoreHeight();
      if (min < 0 || max < 0) throw new Error('heights must be non-negative');
      if (min === 0) min = 1;
      if (max === 0) max = height;
      max = Math.min(height, max);
      min = Math.max(base, min);
      min = Math.max(min, max - limit + 1);
      if (min > max) throw new Error(`min height ${min} can't be greater than max height ${max}`);
      const metas: Json[] = [];
      for (let hgt = max; hgt >= min; hgt--) {
        const meta = await env.node.loadBlockMeta(hgt);
        metas.push(meta ? blockMetaJson(meta) : null);
      }
      return { last_height: str(height), block_metas: metas };
    },
  },

  genesis: {
    params: [],
    cacheable: [],
    handler: async (env) => {
      const g = env.genesis();
      if (g.chunks.length > 1)
        throw new Error('genesis response is large, please use the genesis_chunked API instead');
      return { genesis: g.doc };
    },
  },

  genesis_chunked: {
    params: [{ name: 'chunk', kind: 'uint' }],
    cacheable: [],
    handler: async (env, _ctx, [chunk]) => {
      const { chunks } = env.genesis();
      if (chunks.length === 0) throw new Error('service configuration error, there are no chunks');
      const id = chunk as number;
      if (id > chunks.length - 1) throw new Error(`there are ${chunks.length - 1} chunks, ${id} is invalid`);
      return { chunk: str(id), total: str(chunks.length), data: chunks[id] };
    },
  },

  block: {
    params: [h('height')],
    cacheable: ['height'],
    handler: async (env, _ctx, [heightArg]) => {
      const height = env.height(env.node.blockStoreHeight(), heightArg as number | undefined);
      const [block, meta] = await Promise.all([env.node.loadBlock(height), env.node.loadBlockMeta(height)]);
      return {
        block_id: meta ? blockIdJson(meta.blockId) : EMPTY_BLOCK_ID,
        block: block ? blockJson(block) : null,
      };
    },
  },

  block_by_hash: {
    params: [{ name: 'hash', kind: 'bytes' }],
    cacheable: [],
    handler: async (env, _ctx, [hash]) => {
      const found = await env.node.loadBlockByHash(hash as Uint8Array);
      if (!found) return { block_id: EMPTY_BLOCK_ID, block: null };
      return { block_id: blockIdJson(found.blockId), block: blockJson(found.block) };
    },
  },

  block_results: {
    params: [h('height')],
    cacheable: ['height'],
    handler: async (env, _ctx, [heightArg]) => {
      const height = env.height(env.node.blockStoreHeight(), heightArg as number | undefined);
      const r = await env.node.loadBlockResults(height);
      if (!r) throw new Error(`could not find results for height #${height}`);
      return {
        height: str(height),
        txs_results: r.txResults.length > 0 ? r.txResults.map(execTxResultJson) : null,
        finalize_block_events: r.finalizeBlockEvents.length > 0 ? r.finalizeBlockEvents.map(eventJson) : null,
        validator_updates: r.validatorUpdates.length > 0 ? r.validatorUpdates.map(validatorUpdateJson) : null,
        consensus_param_updates: r.consensusParamUpdates
          ? consensusParamsJson(r.consensusParamUpdates)
          : null,
        app_hash: b64OrNull(r.appHash),
      };
    },
  },

  commit: {
    params: [h('height')],
    cacheable: ['height'],
    handler: async (env, _ctx, [heightArg]) => {
      const height = env.height(env.node.blockStoreHeight(), heightArg as number | undefined);
      const meta = await env.node.loadBlockMeta(height);
      if (!meta) return null;
      const c = await env.node.loadCommit(height);
      return {
        signed_header: { header: headerJson(meta.header), commit: c ? commitJson(c.commit) : null },
        canonical: c ? c.canonical : false,
      };
    },
  },

  header: {
    params: [h('height')],
    cacheable: ['height'],
    handler: async (env, _ctx, [heightArg]) => {
      const height = env.height(env.node.blockStoreHeight(), heightArg as number | undefined);
      const meta = await env.node.loadBlockMeta(height);
      return { header: meta ? headerJson(meta.header) : null };
    },
  },

  header_by_hash: {
    params: [{ name: 'hash', kind: 'hexbytes' }],
    cacheable: [],
    handler: async (env, _ctx, [hash]) => {
      const found = await env.node.loadBlockByHash(hash as Uint8Array);
      return { header: found ? headerJson(found.block.header) : null };
    },
  },

  check_tx: {
    params: [{ name: 'tx', kind: 'bytes' }],
    handler: async (env, _ctx, [tx]) => checkTxJson(await env.node.checkTx(tx as Uint8Array)),
  },

  tx: {
    params: [
      { name: 'hash', kind: 'bytes' },
      { name: 'prove', kind: 'bool' },
    ],
    cacheable: [],
    handler: async (env, _ctx, [hashArg, prove]) => {
      const hash = hashArg as Uint8Array;
      const found = await env.indexer.get(hash);
      if (!found) throw new Error(`tx (${hexUpper(hash)}) not found`);
      return resultTxJson(found, hash, prove ? await txProof(env, found) : undefined);
    },
  },

  tx_search: {
    params: [
      { name: 'query', kind: 'string' },
      { name: 'prove', kind: 'bool' },
      { name: 'page', kind: 'intptr' },
      { name: 'per_page', kind: 'intptr' },
      { name: 'order_by', kind: 'string' },
    ],
    handler: async (env, _ctx, [queryText, prove, pageArg, perPageArg, orderArg]) => {
      const q = parseQueryArg(queryText as string);
      const results = await env.indexer.search(q);
      if (orderBy(orderArg, 'asc') === 'desc') results.reverse();
      const perPage = perPageOf(perPageArg);
      const page = pageOf(pageArg, perPage, results.length);
      const slice = results.slice((page - 1) * perPage, page * perPage);
      const txs: Json[] = [];
      for (const t of slice) txs.push(resultTxJson(t, t.hash, prove ? await txProof(env, t) : undefined));
      return { txs, total_count: str(results.length) };
    },
  },

  block_search: {
    params: [
      { name: 'query', kind: 'string' },
      { name: 'page', kind: 'intptr' },
      { name: 'per_page', kind: 'intptr' },
      { name: 'order_by', kind: 'string' },
    ],
    handler: async (env, _ctx, [queryText, pageArg, perPageArg, orderArg]) => {
      const q = Query.parse(queryText as string);
      const heights = await env.indexer.searchBlocks(q);
      if (orderBy(orderArg, 'desc') === 'desc') heights.reverse();
      const perPage = perPageOf(perPageArg);
      const page = pageOf(pageArg, perPage, heights.length);
      const blocks: Json[] = [];
      for (const height of heights.slice((page - 1) * perPage, page * perPage)) {
        const [block, meta] = await Promise.all([env.node.loadBlock(height), env.node.loadBlockMeta(height)]);
        if (block && meta) blocks.push({ block_id: blockIdJson(meta.blockId), block: blockJson(block) });
      }
      return { blocks, total_count: str(heights.length) };
    },
  },

  validators: {
    params: [h('height'), { name: 'page', kind: 'intptr' }, { name: 'per_page', kind: 'intptr' }],
    cacheable: ['height'],
    handler: async (env, _ctx, [heightArg, pageArg, perPageArg]) => {
      const height = env.height(env.latestUncommittedHeight(), heightArg as number | undefined);
      const vals = await env.node.validators(height);
      if (!vals) throw new Error(`could not find validator set for height #${height}`);
      const perPage = perPageOf(perPageArg);
      const page = pageOf(pageArg, perPage, vals.length);
      const slice = vals.slice((page - 1) * perPage, page * perPage);
      return {
        block_height: str(height),
        validators: slice.map(validatorJson),
        count: str(slice.length),
        total: str(vals.length),
      };
    },
  },

  dump_consensus_state: {
    params: [],
    handler: async (env) => {
      const rs = env.node.roundState();
      return {
        round_state: (rs.raw ?? {}) as Json,
        peers: env.node.peers().map((p) => ({
          node_address: `${p.nodeId}@${p.remoteIp}`,
          peer_state: null,
        })),
      };
    },
  },

  consensus_state: {
    params: [],
    handler: async (env) => {
      const rs = env.node.roundState();
      const raw = (rs.raw && typeof rs.raw === 'object' ? rs.raw : {}) as Record<string, unknown>;
      const hashOf = (k: string) => (typeof raw[k] === 'string' ? (raw[k] as string) : '');
      let proposerIndex = -1;
      if (rs.proposerAddress) {
        const vals = await env.node.validators(rs.height).catch(() => undefined);
        const want = hexUpper(rs.proposerAddress);
        proposerIndex = vals?.findIndex((v) => hexUpper(v.address) === want) ?? -1;
      }
      return {
        round_state: {
          'height/round/step': `${rs.height}/${rs.round}/${roundStepNumber(rs.step)}`,
          start_time: rfc3339Nano(rs.startTime),
          proposal_block_hash: hashOf('proposal_block_hash'),
          locked_block_hash: hashOf('locked_block_hash'),
          valid_block_hash: hashOf('valid_block_hash'),
          height_vote_set: rs.votes.map((v) => ({
            round: v.round,
            prevotes: v.prevotes,
            prevotes_bit_array: v.prevotesBitArray,
            precommits: v.precommits,
            precommits_bit_array: v.precommitsBitArray,
          })),
          proposer: { address: hexUpper(rs.proposerAddress), index: proposerIndex },
        },
      };
    },
  },

  consensus_params: {
    params: [h('height')],
    cacheable: ['height'],
    handler: async (env, _ctx, [heightArg]) => {
      const height = env.height(env.latestUncommittedHeight(), heightArg as number | undefined);
      const params = await env.node.consensusParams(height);
      if (!params) throw new Error(`could not find consensus params for height #${height}`);
      return { block_height: str(height), consensus_params: consensusParamsJson(params) };
    },
  },

  unconfirmed_txs: {
    params: [{ name: 'limit', kind: 'intptr' }],
    handler: async (env, _ctx, [limitArg]) => {
      const r = await env.node.unconfirmedTxs(perPageOf(limitArg));
      return {
        n_txs: str(r.txs.length),
        total: str(r.total),
        total_bytes: str(r.totalBytes),
        txs: r.txs.length > 0 ? r.txs.map(b64) : [],
      };
    },
  },

  num_unconfirmed_txs: {
    params: [],
    handler: async (env) => {
      const r = await env.node.unconfirmedTxs(0);
      return { n_txs: str(r.total), total: str(r.total), total_bytes: str(r.totalBytes), txs: null };
    },
  },

  broadcast_tx_commit: {
    params: [{ name: 'tx', kind: 'bytes' }],
    handler: (env, ctx, [tx]) => broadcastTxCommit(env, ctx, tx as Uint8Array),
  },

  broadcast_tx_sync: {
    params: [{ name: 'tx', kind: 'bytes' }],
    handler: async (env, _ctx, [txArg]) => {
      const tx = txArg as Uint8Array;
      const r = await env.node.broadcastTx(tx);
      return { code: r.code, data: '', log: r.log, codespace: r.codespace, hash: hexUpper(txHash(tx)) };
    },
  },

  broadcast_tx_async: {
    params: [{ name: 'tx', kind: 'bytes' }],
    handler: async (env, _ctx, [txArg]) => {
      const tx = txArg as Uint8Array;
      env.node.broadcastTx(tx).catch((err: Error) => {
        env.logger.debug({ err: err.message }, 'broadcast_tx_async: transaction refused');
      });
      return { code: 0, data: '', log: '', codespace: '', hash: hexUpper(txHash(tx)) };
    },
  },

  abci_query: {
    params: [
      { name: 'path', kind: 'string' },
      { name: 'data', kind: 'hexbytes' },
      { name: 'height', kind: 'int64' },
      { name: 'prove', kind: 'bool' },
    ],
    handler: async (env, _ctx, [path, data, height, prove]) => {
      const r = await env.node.abciQuery(
        path as string,
        data as Uint8Array,
        height as number,
        prove as boolean,
      );
      return {
        response: {
          code: r.code,
          log: r.log,
          info: '',
          index: '0',
          key: b64OrNull(r.key),
          value: b64OrNull(r.value),
          proofOps: null,
          height: str(r.height),
          codespace: '',
        },
      };
    },
  },

  abci_info: {
    params: [],
    cacheable: [],
    handler: async (env) => {
      const info = env.node.abciInfo
        ? await env.node.abciInfo()
        : {
            data: env.node.identity().moniker,
            version: env.node.identity().version,
            appVersion: 0n,
            lastBlockHeight: env.node.syncInfo().latestBlockHeight,
            lastBlockAppHash: env.node.syncInfo().latestAppHash,
          };
      // abci.ResponseInfo through cmtjson: omitempty drops zero fields.
      const response: JsonObject = {};
      if (info.data !== '') response.data = info.data;
      if (info.version !== '') response.version = info.version;
      if (info.appVersion !== 0n) response.app_version = str(info.appVersion);
      if (info.lastBlockHeight !== 0) response.last_block_height = str(info.lastBlockHeight);
      if (info.lastBlockAppHash.length > 0) response.last_block_app_hash = b64(info.lastBlockAppHash);
      return { response };
    },
  },

  broadcast_evidence: {
    params: [{ name: 'evidence', kind: 'evidence' }],
    handler: async (env, _ctx, [raw]) => {
      if (raw === null || raw === undefined) throw new Error('no evidence was provided');
      let evidence: DuplicateVoteEvidence;
      try {
        evidence = evidenceFromJson(raw);
      } catch (err) {
        throw new Error(`evidence.ValidateBasic failed: ${(err as Error).message}`);
      }
      let hash: Uint8Array;
      try {
        hash = await env.node.submitEvidence(evidence);
      } catch (err) {
        throw new Error(`failed to add evidence: ${(err as Error).message}`);
      }
      return { hash: b64(hash) };
    },
  },

  dial_seeds: {
    unsafe: true,
    params: [{ name: 'seeds', kind: 'strings' }],
    handler: async (env, _ctx, [seedsArg]) => {
      const seeds = seedsArg as string[];
      if (seeds.length === 0) throw new Error('no seeds provided');
      if (!env.node.dialSeeds) throw new Error('dialing seeds is not supported by this node');
      env.logger.info({ seeds }, 'DialSeeds');
      await env.node.dialSeeds(seeds);
      return { log: 'Dialing seeds in progress. See /net_info for details' };
    },
  },

  dial_peers: {
    unsafe: true,
    params: [
      { name: 'peers', kind: 'strings' },
      { name: 'persistent', kind: 'bool' },
      { name: 'unconditional', kind: 'bool' },
      { name: 'private', kind: 'bool' },
    ],
    handler: async (env, _ctx, [peersArg, persistent, unconditional, priv]) => {
      const peers = peersArg as string[];
      if (peers.length === 0) throw new Error('no peers provided');
      for (const p of peers) {
        if (p.split('@').length !== 2) throw new Error(`address (${p}) does not contain ID`);
      }
      if (!env.node.dialPeers) throw new Error('dialing peers is not supported by this node');
      env.logger.info({ peers, persistent, unconditional, private: priv }, 'DialPeers');
      await env.node.dialPeers(peers, {
        persistent: persistent as boolean,
        unconditional: unconditional as boolean,
        private: priv as boolean,
      });
      return { log: 'Dialing peers in progress. See /net_info for details' };
    },
  },

  unsafe_flush_mempool: {
    unsafe: true,
    params: [],
    handler: async (env) => {
      await env.node.flushMempool();
      return {};
    },
  },
};

function connectionStatusJson(channels: string): JsonObject {
  const monitor = {
    Start: '0001-01-01T00:00:00Z',
    Bytes: '0',
    Samples: '0',
    InstRate: '0',
    CurRate: '0',
    AvgRate: '0',
    PeakRate: '0',
    BytesRem: '0',
    Duration: '0',
    Idle: '0',
    TimeRem: '0',
    Progress: 0,
    Active: false,
  };
  const ids = Buffer.from(channels, 'hex');
  return {
    Duration: '0',
    SendMonitor: monitor,
    RecvMonitor: monitor,
    Channels: [...ids].map((id) => ({
      ID: id,
      SendQueueCapacity: '1',
      SendQueueSize: '0',
      Priority: '1',
      RecentlySent: '0',
    })),
  };
}

async function broadcastTxCommit(env: RpcEnvironment, ctx: CallContext, tx: Uint8Array): Promise<Json> {
  const { hub, options } = env;
  if (hub.numClients() >= options.maxSubscriptionClients) {
    throw new Error(`max_subscription_clients ${options.maxSubscriptionClients} reached`);
  }
  if (hub.numClientSubscriptions(ctx.remoteAddr) >= options.maxSubscriptionsPerClient) {
    throw new Error(`max_subscriptions_per_client ${options.maxSubscriptionsPerClient} reached`);
  }
  const hash = txHash(tx);
  const q = Query.parse(`tm.event='Tx' AND tx.hash='${hexUpper(hash)}'`);
  let resolveTx!: (ev: CometEvent) => void;
  const included = new Promise<CometEvent>((resolve) => {
    resolveTx = resolve;
  });
  try {
    hub.subscribe(ctx.remoteAddr, q, { deliver: (ev) => resolveTx(ev) });
  } catch (err) {
    throw new Error(`failed to subscribe to tx: ${(err as Error).message}`);
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    let check: Awaited<ReturnType<NodeReader['broadcastTx']>>;
    try {
      check = await env.node.broadcastTx(tx);
    } catch (err) {
      throw new Error(`error on broadcastTxCommit: ${(err as Error).message}`);
    }
    const hashHex = hexUpper(hash);
    if (check.code !== 0) {
      return { check_tx: checkTxJson(check), tx_result: EMPTY_EXEC_TX_RESULT, hash: hashHex, height: '0' };
    }
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), options.timeoutBroadcastTxCommitMs);
    });
    const aborted = new Promise<'aborted'>((resolve) => {
      ctx.signal?.addEventListener('abort', () => resolve('aborted'), { once: true });
    });
    const outcome = await Promise.race([included, timeout, aborted]);
    if (outcome === 'timeout') throw new Error('timed out waiting for tx to be included in a block');
    if (outcome === 'aborted') throw new Error('broadcast confirmation not received: context canceled');
    const ev = outcome.source;
    if (ev.kind !== 'Tx') throw new Error('unexpected event while waiting for the transaction');
    return {
      check_tx: checkTxJson(check),
      tx_result: execTxResultJson(ev.result),
      hash: hashHex,
      height: str(ev.height),
    };
  } finally {
    clearTimeout(timer);
    try {
      hub.unsubscribe(ctx.remoteAddr, q);
    } catch {
      // already gone (client disconnected and unsubscribe_all ran)
    }
  }
}
