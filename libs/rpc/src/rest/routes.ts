// The REST routes (:1317): Cosmos SDK gateway paths for node, blocks, validators, balances,
// accounts and transactions, plus the chain's EVM and fee-market parameters.
import { keccak256, sha256 } from '@noded/crypto';
import type {
  Block,
  BlockId,
  EthChain,
  ExecTxResult,
  Hex,
  Logger,
  NodeIdentity,
  NodeReader,
  Validator,
} from '@noded/types';
import { BRIDGE_OUT_ADDRESS, BridgeReadError, BridgeReader, BTC_TOKEN_ADDRESS } from '../bridge.js';
import type { JsonObject } from '../comet/encode.js';
import type { TxIndexer } from '../comet/indexer.js';
import { hexUpper } from '../comet/wire.js';
import { bech32Decode, bech32Encode } from './bech32.js';
import { distributionRoutes } from './distribution.js';
import {
  consensusAddressHex,
  legacyDec,
  protoBlock,
  protoBlockId,
  protoTimestamp,
  protoValidator,
} from './encode.js';
import { stakingRoutes } from './staking.js';

/** The base denomination: 1 BTC = 10^18 abtc (atto-BTC), the EVM's wei. */
export const BASE_DENOM = 'abtc';

/** Gas settings the fee-market routes report ([evm.gas] of app.toml). */
export interface FeeMarketParams {
  /** Initial base fee of [evm.gas] base_fee. */
  baseFee: bigint;
  minGasPrice: bigint;
  maxGasPrice: bigint;
  /** Gas per block the base fee steers towards; with blockGasLimit it gives the elasticity. */
  gasTarget?: bigint;
  blockGasLimit?: bigint;
  /** EIP-1559 base-fee change denominator (8 unless execution says otherwise). */
  baseFeeChangeDenominator?: number;
  allowUnprotectedTxs?: boolean;
}

/**
 * What the CometBFT-shaped routes (node_info, syncing, blocks, validator sets, a transaction's block
 * and results) read: the consensus side of a node. `noded start` reads its own stores
 * (`nodeConsensus`); an rpc-edge reads the consensus service's CometBFT RPC. An implementation whose
 * backing service does not answer throws `unavailable(...)` (503).
 */
export interface RestConsensus {
  identity(): Promise<NodeIdentity>;
  catchingUp(): Promise<boolean>;
  /** The lowest and the highest stored block heights. */
  storeRange(): Promise<{ base: number; height: number }>;
  /** The block at a stored height with its id; undefined when not stored. */
  block(height: number): Promise<{ block: Block; blockId: BlockId } | undefined>;
  /** The results of a stored block's transactions, in block order. */
  txResults(height: number): Promise<ExecTxResult[] | undefined>;
  /** The validator set that signs the block at a height; undefined when not known. */
  validators(height: number): Promise<Validator[] | undefined>;
  /** Resolves a CometBFT (sha256) transaction hash to its raw bytes; absent without a tx index. */
  txByCometHash?(hash: Uint8Array): Promise<Uint8Array | undefined>;
}

/** The RestConsensus of an all-in-one node: its NodeReader and, when on, its tx indexer. */
export function nodeConsensus(node: NodeReader, indexer?: TxIndexer): RestConsensus {
  return {
    identity: async () => node.identity(),
    catchingUp: async () => node.syncInfo().catchingUp,
    storeRange: async () => ({ base: node.blockStoreBase(), height: node.blockStoreHeight() }),
    block: async (height) => {
      const [block, meta] = await Promise.all([node.loadBlock(height), node.loadBlockMeta(height)]);
      return block && meta ? { block, blockId: meta.blockId } : undefined;
    },
    txResults: async (height) => (await node.loadBlockResults(height))?.txResults,
    validators: (height) => node.validators(height),
    txByCometHash: indexer ? async (hash) => (await indexer.get(hash))?.tx : undefined,
  };
}

export interface RestContext {
  consensus: RestConsensus;
  chain: EthChain;
  logger: Logger;
  evmChainId: bigint;
  gas: FeeMarketParams;
  /** Bech32 prefix for account addresses (valcons addresses use `<prefix>valcons`); hex only when unset. */
  bech32Prefix?: string;
  appVersion: { name: string; version: string; gitCommit: string };
}

/** A gRPC-gateway error: {code, message, details} with the matching HTTP status. */
export class GatewayError extends Error {
  constructor(
    readonly grpcCode: number,
    readonly httpStatus: number,
    message: string,
  ) {
    super(message);
    this.name = 'GatewayError';
  }
}

export const invalidArgument = (msg: string) => new GatewayError(3, 400, msg);
export const notFound = (msg: string) => new GatewayError(5, 404, msg);
/** The service a route reads from did not answer (gRPC UNAVAILABLE): 503, the reason in the message. */
export const unavailable = (msg: string) => new GatewayError(14, 503, msg);

export interface RestRequest {
  params: Record<string, string>;
  query: URLSearchParams;
  headers: Record<string, string | string[] | undefined>;
}

export interface RestRoute {
  /** Path pattern with {name} segments. */
  path: string;
  summary: string;
  handler: (ctx: RestContext, req: RestRequest) => Promise<JsonObject>;
}

// ---- addresses ------------------------------------------------------------------------------

/** An account address: 0x + 40 hex (EIP-55 checked when mixed case) or bech32 with the configured prefix. */
export function parseAddress(ctx: RestContext, text: string): Hex {
  if (/^0x[0-9a-fA-F]{40}$/.test(text)) {
    const lower = text.toLowerCase() as Hex;
    const body = text.slice(2);
    if (body !== body.toLowerCase() && body !== body.toUpperCase() && toChecksum(lower) !== text) {
      throw invalidArgument(`invalid address ${text}: EIP-55 checksum mismatch`);
    }
    return lower;
  }
  if (ctx.bech32Prefix) {
    const decoded = bech32Decode(text);
    if (decoded && decoded.hrp === ctx.bech32Prefix && decoded.bytes.length === 20) {
      return `0x${Buffer.from(decoded.bytes).toString('hex')}` as Hex;
    }
  }
  const accepted = ctx.bech32Prefix
    ? `0x-prefixed 20-byte hex or bech32 "${ctx.bech32Prefix}1..."`
    : '0x-prefixed 20-byte hex';
  throw invalidArgument(`invalid address ${JSON.stringify(text)}: expected ${accepted}`);
}

export function toChecksum(lower: Hex): string {
  const body = lower.slice(2);
  const hash = Buffer.from(keccak256(new TextEncoder().encode(body))).toString('hex');
  let out = '0x';
  for (let i = 0; i < body.length; i++)
    out += Number.parseInt(hash[i], 16) >= 8 ? body[i].toUpperCase() : body[i];
  return out;
}

/** How an address is shown back: bech32 when a prefix is configured, else EIP-55 hex. */
function displayAddress(ctx: RestContext, addr: Hex): string {
  if (ctx.bech32Prefix)
    return bech32Encode(ctx.bech32Prefix, new Uint8Array(Buffer.from(addr.slice(2), 'hex')));
  return toChecksum(addr);
}

function consensusAddress(ctx: RestContext, address: Uint8Array): string {
  return ctx.bech32Prefix
    ? bech32Encode(`${ctx.bech32Prefix}valcons`, address)
    : consensusAddressHex(address);
}

// ---- helpers --------------------------------------------------------------------------------

function parseHeight(text: string): number {
  if (!/^\d+$/.test(text) || Number(text) > Number.MAX_SAFE_INTEGER) {
    throw invalidArgument(`invalid height ${JSON.stringify(text)}: expected a positive integer`);
  }
  return Number(text);
}

/** Cosmos' x-cosmos-block-height header selects the state height for queries. */
function queryHeight(ctx: RestContext, req: RestRequest): bigint {
  const header = req.headers['x-cosmos-block-height'];
  const text = Array.isArray(header) ? header[0] : header;
  if (text === undefined || text === '' || text === '0') return ctx.chain.latestHeight();
  const h = BigInt(parseHeight(text));
  if (h > ctx.chain.latestHeight()) {
    throw invalidArgument(`invalid height ${h}: the latest height is ${ctx.chain.latestHeight()}`);
  }
  return h;
}

function pagination(req: RestRequest, total: number): { offset: number; limit: number; next: string | null } {
  const offsetText = req.query.get('pagination.offset') ?? '0';
  const limitText = req.query.get('pagination.limit') ?? '100';
  if (!/^\d+$/.test(offsetText) || !/^\d+$/.test(limitText)) {
    throw invalidArgument('pagination.offset and pagination.limit must be non-negative integers');
  }
  let offset = Number(offsetText);
  const key = req.query.get('pagination.key');
  if (key) {
    // A next_key this server handed out: the base64 of the next offset (the SDK's keys are store keys).
    if (req.query.has('pagination.offset')) {
      throw invalidArgument('invalid request, either offset or key is expected, got both');
    }
    const text = Buffer.from(key, 'base64').toString('utf8');
    if (!/^\d+$/.test(text) || Buffer.from(text).toString('base64') !== key) {
      throw invalidArgument(`pagination.key ${JSON.stringify(key)} is not a next_key this server returned`);
    }
    offset = Number(text);
  }
  const limit = Math.min(Number(limitText) || 100, 1000);
  const next = offset + limit < total ? Buffer.from(String(offset + limit)).toString('base64') : null;
  return { offset, limit, next };
}

async function blockResponse(ctx: RestContext, height: number): Promise<JsonObject> {
  const range = await ctx.consensus.storeRange();
  const top = range.height;
  if (height > top)
    throw invalidArgument(`requested block height ${height} is bigger then the chain length ${top}`);
  const found = await ctx.consensus.block(height);
  if (!found) throw notFound(`block ${height} is not available (the lowest stored height is ${range.base})`);
  const { block } = found;
  return {
    block_id: protoBlockId(found.blockId),
    block: protoBlock(block),
    sdk_block: protoBlock(block, consensusAddress(ctx, block.header.proposerAddress)),
  };
}

async function validatorSet(ctx: RestContext, req: RestRequest, height: number): Promise<JsonObject> {
  const vals = await ctx.consensus.validators(height);
  if (!vals) throw notFound(`validator set for height ${height} is not available`);
  const page = pagination(req, vals.length);
  return {
    block_height: String(height),
    validators: vals
      .slice(page.offset, page.offset + page.limit)
      .map((v) => protoValidator(v, consensusAddress(ctx, v.address))),
    pagination: { next_key: page.next, total: String(vals.length) },
  };
}

async function nodeInfo(ctx: RestContext): Promise<JsonObject> {
  const id = await ctx.consensus.identity();
  return {
    default_node_info: {
      protocol_version: { p2p: '8', block: '11', app: '0' },
      default_node_id: id.nodeId,
      listen_addr: id.listenAddr,
      network: id.network,
      version: id.version,
      channels: Buffer.from(id.channels, 'hex').toString('base64'),
      moniker: id.moniker,
      other: { tx_index: id.txIndex, rpc_address: id.rpcAddress },
    },
    application_version: {
      name: ctx.appVersion.name,
      app_name: ctx.appVersion.name,
      version: ctx.appVersion.version,
      git_commit: ctx.appVersion.gitCommit,
      build_tags: '',
      go_version: `node ${process.version}`,
      build_deps: [],
      cosmos_sdk_version: '',
    },
  };
}

/**
 * The chain's own precompiles (libs/execution/src/precompiles; the REST tests check the list
 * against the executor's constants): the BTC token and bridge-out.
 */
const STATIC_PRECOMPILES = [BTC_TOKEN_ADDRESS, BRIDGE_OUT_ADDRESS];

/**
 * Bridge reads are view calls on the precompile, bounded like a JSON-RPC eth_call; an answer that
 * is not the precompile's (a node whose state lacks it) is a 500 naming what came back.
 */
async function bridgeRead<T>(ctx: RestContext, read: (r: BridgeReader) => Promise<T>): Promise<T> {
  try {
    return await read(new BridgeReader(ctx.chain, { gasCap: 50_000_000n, timeoutMs: 5_000 }));
  } catch (err) {
    if (err instanceof BridgeReadError) throw new GatewayError(13, 500, err.message);
    throw err;
  }
}

function evmParams(ctx: RestContext): JsonObject {
  return {
    params: {
      evm_denom: BASE_DENOM,
      chain_id: ctx.evmChainId.toString(),
      allow_unprotected_txs: ctx.gas.allowUnprotectedTxs ?? false,
      extra_eips: [],
      active_static_precompiles: [...STATIC_PRECOMPILES],
      block_gas_limit: (ctx.gas.blockGasLimit ?? 0n).toString(),
    },
  };
}

function feeMarketParams(ctx: RestContext): JsonObject {
  const g = ctx.gas;
  const elasticity =
    g.gasTarget && g.blockGasLimit && g.gasTarget > 0n ? Number(g.blockGasLimit / g.gasTarget) : 2;
  return {
    params: {
      no_base_fee: false,
      base_fee_change_denominator: g.baseFeeChangeDenominator ?? 8,
      elasticity_multiplier: elasticity,
      enable_height: '0',
      base_fee: ctx.chain.nextBaseFee().toString(),
      initial_base_fee: g.baseFee.toString(),
      min_gas_price: legacyDec(g.minGasPrice),
      max_gas_price: legacyDec(g.maxGasPrice),
      gas_target: (g.gasTarget ?? 0n).toString(),
      block_gas_limit: (g.blockGasLimit ?? 0n).toString(),
    },
  };
}

function parseTxHash(text: string): Uint8Array {
  const clean = text.replace(/^0x/i, '');
  if (!/^[0-9a-fA-F]{64}$/.test(clean)) {
    throw invalidArgument(`invalid transaction hash ${JSON.stringify(text)}: expected 32 bytes of hex`);
  }
  return new Uint8Array(Buffer.from(clean, 'hex'));
}

async function txByHash(ctx: RestContext, hashText: string): Promise<JsonObject> {
  const hash = parseTxHash(hashText);
  let ethHash = `0x${Buffer.from(hash).toString('hex')}` as Hex;
  let tx = await ctx.chain.getTransaction(ethHash);
  if (!tx && ctx.consensus.txByCometHash) {
    const indexed = await ctx.consensus.txByCometHash(hash);
    if (indexed) {
      ethHash = `0x${Buffer.from(keccak256(indexed)).toString('hex')}` as Hex;
      tx = await ctx.chain.getTransaction(ethHash);
    }
  }
  if (!tx || tx.blockNumber === null || tx.transactionIndex === null)
    throw notFound(`tx not found: ${hashText}`);
  const height = Number(tx.blockNumber);
  const index = Number(tx.transactionIndex);
  const [receipt, found, results] = await Promise.all([
    ctx.chain.getReceipt(ethHash),
    ctx.consensus.block(height),
    ctx.consensus.txResults(height),
  ]);
  const block = found?.block;
  const raw = block?.data.txs[index];
  const exec = results?.[index];
  const gasUsed = receipt?.gasUsed ?? exec?.gasUsed ?? 0n;
  const price = receipt?.effectiveGasPrice ?? tx.gasPrice;
  const message: JsonObject = {
    '@type': '/noded.evm.v1.MsgEthereumTx',
    hash: tx.hash,
    from: tx.from,
    to: tx.to,
    nonce: tx.nonce.toString(),
    value: tx.value.toString(),
    gas: tx.gas.toString(),
    gas_price: tx.gasPrice.toString(),
    max_fee_per_gas: tx.maxFeePerGas?.toString() ?? null,
    max_priority_fee_per_gas: tx.maxPriorityFeePerGas?.toString() ?? null,
    input: tx.input,
    type: tx.type,
    chain_id: tx.chainId?.toString() ?? null,
    raw: raw ? Buffer.from(raw).toString('base64') : null,
  };
  const cosmosTx: JsonObject = {
    body: {
      messages: [message],
      memo: '',
      timeout_height: '0',
      extension_options: [],
      non_critical_extension_options: [],
    },
    auth_info: {
      signer_infos: [],
      fee: {
        amount: [{ denom: BASE_DENOM, amount: (gasUsed * price).toString() }],
        gas_limit: tx.gas.toString(),
        payer: '',
        granter: '',
      },
      tip: null,
    },
    signatures: [],
  };
  const code = exec?.code ?? (receipt?.status === 0 ? 1 : 0);
  return {
    tx: cosmosTx,
    tx_response: {
      height: String(height),
      txhash: raw ? hexUpper(sha256(raw)) : tx.hash.slice(2).toUpperCase(),
      codespace: exec?.codespace ?? '',
      code,
      data: exec && exec.data.length > 0 ? hexUpper(exec.data) : '',
      raw_log: exec?.log ?? '',
      logs: [],
      info: exec?.info ?? '',
      gas_wanted: (exec?.gasWanted ?? tx.gas).toString(),
      gas_used: gasUsed.toString(),
      tx: { '@type': '/cosmos.tx.v1beta1.Tx', ...cosmosTx },
      timestamp: block ? protoTimestamp(block.header.time) : '',
      events: (exec?.events ?? []).map((e) => ({
        type: e.type,
        attributes: e.attributes.map((a) => ({ key: a.key, value: a.value, index: a.index })),
      })),
    },
  };
}

// ---- the table ------------------------------------------------------------------------------

export const REST_ROUTES: RestRoute[] = [
  {
    path: '/cosmos/base/tendermint/v1beta1/node_info',
    summary: 'Node identity (CometBFT node info) and application version.',
    handler: (ctx) => nodeInfo(ctx),
  },
  {
    path: '/cosmos/base/tendermint/v1beta1/syncing',
    summary: 'Whether the node is catching up.',
    handler: async (ctx) => ({ syncing: await ctx.consensus.catchingUp() }),
  },
  {
    path: '/cosmos/base/tendermint/v1beta1/blocks/latest',
    summary: 'The latest committed block.',
    handler: async (ctx) => blockResponse(ctx, (await ctx.consensus.storeRange()).height),
  },
  {
    path: '/cosmos/base/tendermint/v1beta1/blocks/{height}',
    summary: 'The block at a height.',
    handler: async (ctx, req) => blockResponse(ctx, parseHeight(req.params.height)),
  },
  {
    path: '/cosmos/base/tendermint/v1beta1/validatorsets/latest',
    summary: 'The validator set of the latest block (pagination.offset / pagination.limit).',
    handler: async (ctx, req) => validatorSet(ctx, req, (await ctx.consensus.storeRange()).height),
  },
  {
    path: '/cosmos/base/tendermint/v1beta1/validatorsets/{height}',
    summary: 'The validator set at a height.',
    handler: async (ctx, req) => validatorSet(ctx, req, parseHeight(req.params.height)),
  },
  {
    path: '/cosmos/bank/v1beta1/balances/{address}',
    summary: 'Balances of an account in abtc (1 BTC = 10^18 abtc).',
    handler: async (ctx, req) => {
      const addr = parseAddress(ctx, req.params.address);
      const balance = await ctx.chain.getBalance(addr, queryHeight(ctx, req));
      const balances = balance > 0n ? [{ denom: BASE_DENOM, amount: balance.toString() }] : [];
      return { balances, pagination: { next_key: null, total: String(balances.length) } };
    },
  },
  {
    path: '/cosmos/bank/v1beta1/balances/{address}/by_denom',
    summary: 'Balance of an account in one denomination (?denom=abtc).',
    handler: async (ctx, req) => {
      const addr = parseAddress(ctx, req.params.address);
      const denom = req.query.get('denom') ?? '';
      if (denom === '') throw invalidArgument('invalid denom: the denom query parameter is required');
      const amount = denom === BASE_DENOM ? await ctx.chain.getBalance(addr, queryHeight(ctx, req)) : 0n;
      return { balance: { denom, amount: amount.toString() } };
    },
  },
  {
    path: '/cosmos/auth/v1beta1/accounts/{address}',
    summary: 'The account (nonce as sequence); 404 for an address the chain has never touched.',
    handler: async (ctx, req) => {
      const addr = parseAddress(ctx, req.params.address);
      const height = queryHeight(ctx, req);
      const [nonce, balance, code] = await Promise.all([
        ctx.chain.getNonce(addr, height),
        ctx.chain.getBalance(addr, height),
        ctx.chain.getCode(addr, height),
      ]);
      if (nonce === 0n && balance === 0n && (code === '0x' || code === '0x0')) {
        throw notFound(`account ${req.params.address} not found`);
      }
      return {
        account: {
          '@type': '/cosmos.auth.v1beta1.BaseAccount',
          address: displayAddress(ctx, addr),
          pub_key: null,
          account_number: '0',
          sequence: nonce.toString(),
        },
      };
    },
  },
  {
    path: '/cosmos/tx/v1beta1/txs/{hash}',
    summary: 'A committed transaction by its Ethereum hash (keccak256) or CometBFT hash (sha256).',
    handler: async (ctx, req) => txByHash(ctx, req.params.hash),
  },
  {
    path: '/noded/bridge/v1/params',
    summary: 'Bridge-out parameters from genesis, the pause switch and the current outflow window.',
    handler: async (ctx, req) => {
      const h = queryHeight(ctx, req);
      return { params: { ...(await bridgeRead(ctx, (r) => r.params(h))) } };
    },
  },
  {
    path: '/noded/bridge/v1/outbound',
    summary: 'Outbound bridge entries paid to ?recipient=0x<bytes on the destination chain>, oldest first.',
    handler: async (ctx, req) => {
      const text = req.query.get('recipient');
      if (text === null) throw invalidArgument('recipient is required: ?recipient=0x<1 to 64 bytes>');
      if (!/^0x([0-9a-fA-F]{2}){1,64}$/.test(text)) {
        throw invalidArgument(
          `invalid recipient ${JSON.stringify(text)}: expected 0x-prefixed hex of 1 to 64 bytes`,
        );
      }
      const recipient = Uint8Array.from(Buffer.from(text.slice(2), 'hex'));
      const h = queryHeight(ctx, req);
      const entries = await bridgeRead(ctx, (r) => r.outboundByRecipient(recipient, h));
      return { entries: entries.map((e) => ({ ...e })) };
    },
  },
  {
    path: '/noded/bridge/v1/outbound/{sequence}',
    summary: 'The outbound bridge entry with this sequence number (1, 2, 3, …).',
    handler: async (ctx, req) => {
      const text = req.params.sequence;
      if (!/^[1-9][0-9]{0,18}$/.test(text)) {
        throw invalidArgument(`invalid sequence ${JSON.stringify(text)}: expected a positive integer`);
      }
      const h = queryHeight(ctx, req);
      const entry = await bridgeRead(ctx, (r) => r.outbound(BigInt(text), h));
      if (!entry) throw notFound(`outbound entry ${text} not found`);
      return { entry: { ...entry } };
    },
  },
  {
    path: '/evm/v1/params',
    summary: 'EVM parameters: denomination, EVM chain id, block gas limit.',
    handler: async (ctx) => evmParams(ctx),
  },
  {
    path: '/feemarket/v1/params',
    summary: 'Fee-market (EIP-1559) parameters and gas price bounds.',
    handler: async (ctx) => feeMarketParams(ctx),
  },
  {
    path: '/feemarket/v1/base_fee',
    summary: 'Base fee per gas of the next block, in abtc.',
    handler: async (ctx) => ({ base_fee: ctx.chain.nextBaseFee().toString() }),
  },
  // The same three under Cosmos EVM's module paths, for tools written against it.
  {
    path: '/cosmos/evm/vm/v1/params',
    summary: 'Alias of /evm/v1/params.',
    handler: async (ctx) => evmParams(ctx),
  },
  {
    path: '/cosmos/evm/feemarket/v1/params',
    summary: 'Alias of /feemarket/v1/params.',
    handler: async (ctx) => feeMarketParams(ctx),
  },
  {
    path: '/cosmos/evm/feemarket/v1/base_fee',
    summary: 'Alias of /feemarket/v1/base_fee.',
    handler: async (ctx) => ({ base_fee: ctx.chain.nextBaseFee().toString() }),
  },
  // x/staking shapes over the validator pool precompile (docs/staking.md).
  ...stakingRoutes({
    parseAddress,
    displayAddress,
    consensusAddress,
    queryHeight,
    invalidArgument,
    pagination,
  }),
  ...distributionRoutes({ parseAddress, displayAddress, queryHeight }),
];

/**
 * Finds the route for a path and extracts its {parameters}. A parameter that is not valid
 * percent-encoding ("%", "%zz", a truncated UTF-8 sequence) is the client's error: GatewayError 400.
 */
export function matchRoute(
  routes: RestRoute[],
  path: string,
): { route: RestRoute; params: Record<string, string> } | undefined {
  const segments = path.split('/');
  // Literal routes first so /blocks/latest never reads as /blocks/{height}.
  const ordered = [...routes].sort((a, b) => Number(a.path.includes('{')) - Number(b.path.includes('{')));
  for (const route of ordered) {
    const pattern = route.path.split('/');
    if (pattern.length !== segments.length) continue;
    const raw: Array<[string, string]> = [];
    let ok = true;
    for (let i = 0; i < pattern.length && ok; i++) {
      const p = pattern[i];
      if (p.startsWith('{') && p.endsWith('}')) {
        if (segments[i] === '') ok = false;
        else raw.push([p.slice(1, -1), segments[i]]);
      } else if (p !== segments[i]) ok = false;
    }
    if (!ok) continue;
    const params: Record<string, string> = {};
    for (const [name, segment] of raw) {
      try {
        params[name] = decodeURIComponent(segment);
      } catch {
        throw invalidArgument(`invalid ${name} ${JSON.stringify(segment)}: malformed percent-encoding`);
      }
    }
    return { route, params };
  }
  return undefined;
}
