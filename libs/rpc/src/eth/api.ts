// The method table of the Ethereum JSON-RPC (eth_, net_, web3_, txpool_, debug_, personal_sign):
// each method decodes its params with geth's rules, resolves block parameters, calls the EthChain
// port and renders the answer as geth does.
import { keccak256 } from '@noded/crypto';
import type { TraceParent } from '@noded/telemetry';
import type {
  CallOptions,
  CallRequest,
  CallResult,
  EthBlock,
  EthChain,
  EthDevControl,
  EthTx,
  Hex,
  Logger,
  StateOverrides,
  TracerConfig,
} from '@noded/types';
import { BridgeReadError, BridgeReader } from '../bridge.js';
import { CallCache, callKey } from './call-cache.js';
import type { DevAccounts } from './dev-accounts.js';
import { registerDevMining } from './dev-mining.js';
import { type DevChainInfo, DevState } from './dev-state.js';
import { TypedDataError } from './eip712.js';
import { invalidParams, RpcError, RpcErrorCode, revertError, serverError } from './errors.js';
import { type FilterManager, type LogFilterSpec, newRpcId } from './filters.js';
import {
  formatBlock,
  formatFeeHistory,
  formatHeader,
  formatLog,
  formatPoolContent,
  formatPoolContentFrom,
  formatPoolInspect,
  formatPoolStatus,
  formatProof,
  formatReceipt,
  formatTx,
  type Json,
  JsonBytes,
  logsJson,
} from './format.js';
import { bytesToHex, formatBtc, hexToBytes, quantity } from './hex.js';
import type { EthRpcOptions } from './options.js';
import {
  type ArgSpec,
  type ArgsOf,
  address,
  arrayOf,
  type BlockNumberParam,
  type BlockRef,
  blockNumber,
  blockRef,
  bool,
  bytes,
  type Decoder,
  decodeArgs,
  type FilterCriteria,
  filterCriteria,
  float,
  hash,
  hexOrDecimal64,
  opt,
  raw,
  req,
  rpcId,
  stateOverride,
  string,
  type TraceConfigArg,
  type TransactionArgs,
  traceConfig,
  transactionArgs,
  uint,
  unsupported,
} from './params.js';
import type { Subscription, SubscriptionKind, WsSession } from './subscriptions.js';
import { summarizeRawTransaction, type UnsignedTx } from './tx-codec.js';

/** Sync progress as the node reports it (false when in sync). */
export type SyncStatus = false | { startingBlock: bigint; currentBlock: bigint; highestBlock: bigint };

/** Where a call came from; subscriptions need the WebSocket session. */
export interface CallContext {
  transport: 'http' | 'ws';
  session?: WsSession;
  /** Run after the reply carrying this call was sent (starts subscription delivery). */
  afterReply: Array<() => void>;
  /** With tracing on: the trace context the HTTP request carried (its `traceparent` header). */
  traceParent?: TraceParent;
}

export interface EthApiDeps {
  chain: EthChain;
  options: EthRpcOptions;
  devAccounts: DevAccounts | null;
  /** Set only on the single validator of chain-local: serves the dev-chain methods (dev-state.ts). */
  devChain?: DevChainInfo | undefined;
  /** Mining and time controls (single-validator chain-local); null answers them with a refusal. */
  devControl?: EthDevControl | null;
  /** The refusal of dev methods after the method's name (EthRpcServerDeps.devRefusal). */
  devRefusal?: string;
  filters: FilterManager;
  clientVersion: string;
  peerCount: () => number;
  syncing: () => SyncStatus;
  logger: Logger;
}

type Handler = (params: unknown, ctx: CallContext) => Promise<unknown>;

const ZERO_ADDRESS: Hex = '0x0000000000000000000000000000000000000000';
const MAX_TOPICS = 4;
/** eth_protocolVersion: eth/65, as Ethermint-family nodes answer. */
const PROTOCOL_VERSION = '0x41';

/** Go's time.ParseDuration for the tracer "timeout" option, in milliseconds. */
export function parseGoDuration(s: string): number {
  const units: Record<string, number> = {
    ns: 1e-6,
    us: 1e-3,
    µs: 1e-3,
    ms: 1,
    s: 1_000,
    m: 60_000,
    h: 3_600_000,
  };
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/y;
  if (s === '0') return 0;
  let total = 0;
  let pos = 0;
  while (pos < s.length) {
    re.lastIndex = pos;
    const m = re.exec(s);
    if (m === null) throw serverError(`time: invalid duration "${s}"`);
    total += Number(m[1]) * units[m[2]!]!;
    pos = re.lastIndex;
  }
  if (pos === 0) throw serverError(`time: invalid duration "${s}"`);
  return total;
}

/** Trace results come from the chain as plain data; bigints (if any) become hex quantities. */
function jsonSafe(v: unknown): unknown {
  if (typeof v === 'bigint') return quantity(v);
  if (Array.isArray(v)) return v.map(jsonSafe);
  if (v !== null && typeof v === 'object' && !(v instanceof Uint8Array)) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = jsonSafe(x);
    return out;
  }
  if (v instanceof Uint8Array) return bytesToHex(v);
  return v;
}

/** tracers.TraceCallConfig: a TraceConfig; state and block overrides are refused, not ignored. */
const traceCallConfig: Decoder<TraceConfigArg> = (v) => {
  const cfg = traceConfig(v);
  const o = v as Record<string, unknown>;
  if (o['stateOverrides'] != null || o['blockOverrides'] != null) {
    throw serverError('debug_traceCall: stateOverrides and blockOverrides are not supported by this node');
  }
  return cfg;
};

/** geth's decodeHash for storage keys: 0x optional, odd length padded, at most 32 bytes. */
function storageKey(s: string): Hex {
  let body = s.startsWith('0x') || s.startsWith('0X') ? s.slice(2) : s;
  if (body.length % 2 === 1) body = `0${body}`;
  if (body.length > 64)
    throw serverError('unable to decode storage key: storage key too long (want at most 32 bytes)');
  if (!/^[0-9a-fA-F]*$/.test(body))
    throw serverError('unable to decode storage key: invalid hex in storage key');
  return `0x${body.toLowerCase().padStart(64, '0')}`;
}

export class EthApi {
  readonly methods = new Map<string, Handler>();
  private readonly chain: EthChain;
  private readonly options: EthRpcOptions;
  private readonly dev: DevAccounts | null;
  private readonly filters: FilterManager;
  private readonly devState: DevState;
  /** eth_call results at the newest height, for identical calls (call-cache.ts). */
  private readonly calls = new CallCache<CallResult>((r) => r.returnData.length);

  constructor(private readonly deps: EthApiDeps) {
    this.chain = deps.chain;
    this.options = deps.options;
    this.dev = deps.devAccounts;
    this.filters = deps.filters;
    this.devState = new DevState({
      chain: deps.chain,
      devChain: deps.devChain,
      clientVersion: deps.clientVersion,
      ...(deps.devRefusal !== undefined ? { refusal: deps.devRefusal } : {}),
    });
    this.registerEth();
    this.registerSigning();
    this.registerFilters();
    this.registerSubscriptions();
    this.registerOthers();
    this.registerBridge();
    this.devState.register(this.methods);
    registerDevMining(
      (name, specs, fn) => this.def(name, specs, fn),
      deps.devControl ?? null,
      deps.devRefusal,
    );
  }

  /** The dev chain reverted (evm_revert): cached eth_call results of the removed heights go. */
  onRewound(): void {
    this.calls.reset();
  }

  private def<const S extends readonly ArgSpec<unknown>[]>(
    name: string,
    specs: S,
    fn: (args: ArgsOf<S>, ctx: CallContext) => unknown,
  ): void {
    this.methods.set(name, async (params, ctx) => fn(decodeArgs(params, specs), ctx));
  }

  private get callOptions(): CallOptions {
    return { gasCap: this.options.gasCap, timeoutMs: this.options.evmTimeoutMs };
  }

  // ---- block parameters ----------------------------------------------------------------------

  /** A block number for block queries: tags are the latest committed (final) block, earliest 0. */
  private numberOf(p: BlockNumberParam): bigint {
    if ('number' in p) return p.number;
    return p.tag === 'earliest' ? 0n : this.chain.latestHeight();
  }

  /** The height whose state a query reads; refuses future and pruned heights like geth. */
  private async stateHeight(ref: BlockRef | undefined): Promise<bigint> {
    let h: bigint;
    if (ref === undefined) h = this.chain.latestHeight();
    else if ('none' in ref) throw serverError('invalid arguments; neither block nor hash specified');
    else if ('hash' in ref) {
      const b = await this.chain.getBlockByHash(ref.hash);
      if (b === undefined) throw serverError('header for hash not found');
      h = b.number;
    } else {
      h = this.numberOf(ref);
      if (h > this.chain.latestHeight()) throw serverError('header not found');
    }
    const oldest = this.chain.oldestStateHeight();
    if (h < oldest) {
      throw serverError(
        `historical state at block ${h} is not available: pruned (oldest kept: ${oldest}); query an archive node`,
      );
    }
    return h;
  }

  /** The block a block query names, or undefined (answered as null). */
  private async blockOf(ref: BlockRef): Promise<EthBlock | undefined> {
    if ('none' in ref) throw serverError('invalid arguments; neither block nor hash specified');
    if ('hash' in ref) return this.chain.getBlockByHash(ref.hash);
    const n = this.numberOf(ref);
    if (n > this.chain.latestHeight()) return undefined;
    return this.chain.getBlockByNumber(n);
  }

  private async blockByNumber(p: BlockNumberParam): Promise<EthBlock | undefined> {
    const n = this.numberOf(p);
    if (n > this.chain.latestHeight()) return undefined;
    return this.chain.getBlockByNumber(n);
  }

  private async renderBlock(b: EthBlock | undefined, full: boolean): Promise<Json> {
    if (b === undefined) return null;
    return formatBlock(b, full ? await this.chain.getBlockTransactions(b.number) : undefined);
  }

  private async txAt(b: EthBlock | undefined, index: bigint): Promise<Json> {
    if (b === undefined || index >= BigInt(b.transactions.length)) return null;
    const txs = await this.chain.getBlockTransactions(b.number);
    const tx = txs[Number(index)];
    return tx === undefined ? null : formatTx(tx);
  }

  // ---- transactions --------------------------------------------------------------------------

  /** TransactionArgs -> CallRequest with geth's consistency checks. */
  private callRequest(a: TransactionArgs): CallRequest {
    if (a.data !== undefined && a.input !== undefined && a.data !== a.input) {
      throw serverError(
        'both "data" and "input" are set and not equal. Please use "input" to pass transaction call data',
      );
    }
    if (a.gasPrice !== undefined && (a.maxFeePerGas !== undefined || a.maxPriorityFeePerGas !== undefined)) {
      throw serverError('both gasPrice and (maxFeePerGas or maxPriorityFeePerGas) specified');
    }
    if (
      a.maxFeePerGas !== undefined &&
      a.maxPriorityFeePerGas !== undefined &&
      a.maxFeePerGas < a.maxPriorityFeePerGas
    ) {
      throw serverError(
        `maxFeePerGas (${a.maxFeePerGas}) < maxPriorityFeePerGas (${a.maxPriorityFeePerGas})`,
      );
    }
    const r: CallRequest = {};
    if (a.from !== undefined) r.from = a.from;
    if (a.to !== undefined) r.to = a.to;
    if (a.gas !== undefined) r.gas = a.gas;
    if (a.gasPrice !== undefined) r.gasPrice = a.gasPrice;
    if (a.maxFeePerGas !== undefined) r.maxFeePerGas = a.maxFeePerGas;
    if (a.maxPriorityFeePerGas !== undefined) r.maxPriorityFeePerGas = a.maxPriorityFeePerGas;
    if (a.value !== undefined) r.value = a.value;
    const data = a.input ?? a.data;
    if (data !== undefined) r.data = data;
    if (a.nonce !== undefined) r.nonce = a.nonce;
    if (a.accessList !== undefined) r.accessList = a.accessList;
    if (a.type !== undefined) r.type = Number(a.type);
    return r;
  }

  private overrides(
    o: Record<Hex, { state?: unknown; stateDiff?: unknown }> | undefined,
  ): StateOverrides | undefined {
    if (o === undefined) return undefined;
    for (const [addr, acc] of Object.entries(o)) {
      if (acc.state !== undefined && acc.stateDiff !== undefined) {
        throw serverError(`account ${addr} has both 'state' and 'stateDiff'`);
      }
    }
    return o as StateOverrides;
  }

  /** geth's checkTxFee against [evm.rpc] txfee_cap. */
  private checkTxFee(gas: bigint, price: bigint): void {
    const cap = this.options.txFeeCap;
    if (cap === 0n) return;
    const fee = gas * price;
    if (fee > cap) {
      throw serverError(`tx fee (${formatBtc(fee)} BTC) exceeds the configured cap (${formatBtc(cap)} BTC)`);
    }
  }

  private async submitRaw(raw: Uint8Array): Promise<Hex> {
    let summary: ReturnType<typeof summarizeRawTransaction> | undefined;
    try {
      summary = summarizeRawTransaction(raw);
    } catch {
      // Not decodable here: the chain's decoder gives the precise rejection.
    }
    if (summary !== undefined) {
      if (!summary.replayProtected && this.options.allowUnprotectedTxs !== true) {
        throw serverError('only replay-protected (EIP-155) transactions allowed over RPC');
      }
      this.checkTxFee(summary.gas, summary.feeCap);
    }
    return this.chain.sendRawTransaction(raw);
  }

  private requireAccount(addr: Hex | undefined): DevAccounts {
    if (this.dev === null) {
      throw serverError(
        'unknown account: this node holds no unlocked accounts (only chain-local unlocks its dev accounts); sign locally and use eth_sendRawTransaction',
      );
    }
    if (addr === undefined || !this.dev.has(addr)) throw serverError('unknown account');
    return this.dev;
  }

  private async sendTransaction(a: TransactionArgs): Promise<Hex> {
    const from = a.from ?? ZERO_ADDRESS;
    // An impersonated sender (anvil_impersonateAccount) has no key: its transaction is queued
    // with a placeholder signature (dev-state.ts). A dev account's own key signs as before.
    const impersonated = !(this.dev?.has(from) ?? false) && (await this.devState.isImpersonated(from));
    const dev = impersonated ? undefined : this.requireAccount(from);
    const chainId = this.chain.chainId();
    if (a.chainId !== undefined && a.chainId !== chainId) {
      throw serverError(`chainId does not match node's (have=${a.chainId}, want=${chainId})`);
    }
    const call = this.callRequest(a);
    let type: 0 | 1 | 2;
    if (a.type !== undefined) {
      if (a.type !== 0n && a.type !== 1n && a.type !== 2n) {
        throw serverError(
          `transaction type ${a.type} is not supported by eth_sendTransaction (use 0, 1 or 2)`,
        );
      }
      type = Number(a.type) as 0 | 1 | 2;
    } else if (a.gasPrice !== undefined) type = a.accessList !== undefined ? 1 : 0;
    else type = 2;
    const data = call.data ?? '0x';
    const to = a.to ?? null;
    if (to === null && data === '0x') throw serverError('contract creation without any data provided');
    const tip = a.maxPriorityFeePerGas ?? a.gasPrice ?? this.chain.suggestedTip();
    const maxFee = a.maxFeePerGas ?? a.gasPrice ?? 2n * this.chain.nextBaseFee() + tip;
    if (maxFee < tip) throw serverError(`maxFeePerGas (${maxFee}) < maxPriorityFeePerGas (${tip})`);
    const gasPrice = a.gasPrice ?? this.chain.nextBaseFee() + this.chain.suggestedTip();
    const nonce = a.nonce ?? (await this.chain.getNonce(from, 'pending'));
    const feeFields: CallRequest =
      type === 2 ? { maxFeePerGas: maxFee, maxPriorityFeePerGas: tip } : { gasPrice };
    const gas =
      a.gas ??
      (await this.chain.estimateGas(
        { ...call, ...feeFields, from, nonce, type },
        this.chain.latestHeight(),
        undefined,
        this.callOptions,
      ));
    this.checkTxFee(gas, type === 2 ? maxFee : gasPrice);
    const unsigned: UnsignedTx = {
      type,
      chainId,
      nonce,
      gas,
      to,
      value: a.value ?? 0n,
      data,
      accessList: a.accessList ?? [],
      ...(type === 2 ? { maxFeePerGas: maxFee, maxPriorityFeePerGas: tip } : { gasPrice }),
    };
    if (dev === undefined) return this.devState.sendImpersonated(from, unsigned);
    return this.chain.sendRawTransaction(dev.signTransaction(from, unsigned).raw);
  }

  // ---- logs ----------------------------------------------------------------------------------

  /** Resolves criteria to a concrete range, applying block_range_cap; null when nothing can match. */
  private async logRange(c: FilterCriteria): Promise<{ from: bigint; to: bigint } | null> {
    if (c.topics.length > MAX_TOPICS) throw serverError('exceed max topics');
    if (c.blockHash !== undefined) {
      const b = await this.chain.getBlockByHash(c.blockHash);
      if (b === undefined) throw serverError('unknown block');
      return { from: b.number, to: b.number };
    }
    const latest = this.chain.latestHeight();
    const from = c.fromBlock === undefined ? latest : this.numberOf(c.fromBlock);
    let to = c.toBlock === undefined ? latest : this.numberOf(c.toBlock);
    if (from > to) throw invalidParams('invalid block range params');
    if (from > latest) return null;
    if (to > latest) to = latest;
    const cap = BigInt(this.options.blockRangeCap);
    if (cap > 0n && to - from > cap) throw invalidParams(`exceed maximum block range ${cap}`);
    return { from, to };
  }

  private async queryLogs(c: FilterCriteria): Promise<JsonBytes> {
    const range = await this.logRange(c);
    if (range === null) return logsJson([]);
    const cap = this.options.logsCap;
    const logs = await this.chain.getLogs({
      fromBlock: range.from,
      toBlock: range.to,
      addresses: c.addresses,
      topics: c.topics,
      ...(cap > 0 ? { limit: cap + 1 } : {}),
    });
    if (cap > 0 && logs.length > cap) {
      throw new RpcError(RpcErrorCode.limitExceeded, `query returned more than ${cap} results`);
    }
    // Copied from the blocks' rendered logs the edge keeps, so a repeated query renders nothing.
    return logsJson(logs);
  }

  // ---- registration --------------------------------------------------------------------------

  private registerEth(): void {
    const c = this.chain;
    this.def('eth_chainId', [], () => quantity(c.chainId()));
    this.def('eth_blockNumber', [], () => quantity(c.latestHeight()));
    this.def('eth_syncing', [], () => {
      const s = this.deps.syncing();
      if (s === false) return false;
      return {
        startingBlock: quantity(s.startingBlock),
        currentBlock: quantity(s.currentBlock),
        highestBlock: quantity(s.highestBlock),
      };
    });
    this.def('eth_protocolVersion', [], () => PROTOCOL_VERSION);
    this.def('eth_coinbase', [], async () => {
      const b = await c.getBlockByNumber(c.latestHeight());
      return (b?.miner ?? ZERO_ADDRESS).toLowerCase();
    });
    this.def('eth_mining', [], () => false);
    this.def('eth_hashrate', [], () => '0x0');
    this.def('eth_gasPrice', [], () => quantity(c.nextBaseFee() + c.suggestedTip()));
    this.def('eth_maxPriorityFeePerGas', [], () => quantity(c.suggestedTip()));
    this.def(
      'eth_feeHistory',
      [req(hexOrDecimal64), req(blockNumber), opt(arrayOf(float, '[]float64'))],
      async ([count, newestParam, percentiles]) => {
        percentiles?.forEach((p, i) => {
          if (p < 0 || p > 100) throw serverError(`invalid reward percentile: ${p.toFixed(6)}`);
          if (i > 0 && p <= percentiles[i - 1]!) {
            throw serverError(
              `invalid reward percentile: #${i - 1}:${percentiles[i - 1]!.toFixed(6)} >= #${i}:${p.toFixed(6)}`,
            );
          }
        });
        const latest = c.latestHeight();
        const newest = this.numberOf(newestParam);
        if (newest > latest)
          throw serverError(`request beyond head block: requested ${newest}, head ${latest}`);
        let n = count;
        if (n > BigInt(this.options.feeHistoryCap)) n = BigInt(this.options.feeHistoryCap);
        if (n > newest + 1n) n = newest + 1n;
        if (n === 0n) return { oldestBlock: '0x0', baseFeePerGas: [], gasUsedRatio: [] };
        return formatFeeHistory(await c.feeHistory(Number(n), newest, percentiles));
      },
    );
    this.def('eth_getBalance', [req(address), req(blockRef)], async ([addr, ref]) =>
      quantity(await c.getBalance(addr, await this.stateHeight(ref))),
    );
    this.def('eth_getTransactionCount', [req(address), req(blockRef)], async ([addr, ref]) => {
      if ('tag' in ref && ref.tag === 'pending') return quantity(await c.getNonce(addr, 'pending'));
      return quantity(await c.getNonce(addr, await this.stateHeight(ref)));
    });
    this.def('eth_getCode', [req(address), req(blockRef)], async ([addr, ref]) =>
      c.getCode(addr, await this.stateHeight(ref)),
    );
    this.def('eth_getStorageAt', [req(address), req(string), req(blockRef)], async ([addr, key, ref]) => {
      const slot = storageKey(key);
      const value = await c.getStorageAt(addr, slot, await this.stateHeight(ref));
      return `0x${value.slice(2).padStart(64, '0')}`;
    });
    this.def(
      'eth_getProof',
      [req(address), req(arrayOf(string, '[]string')), req(blockRef)],
      async ([addr, keys, ref]) => {
        const slots = keys.map(storageKey);
        return formatProof(await c.getProof(addr, slots, await this.stateHeight(ref)));
      },
    );
    this.def(
      'eth_call',
      [req(transactionArgs), opt(blockRef), opt(stateOverride), opt(unsupported('block overrides'))],
      async ([args, ref, over]) => {
        const height = await this.stateHeight(ref);
        const request = this.callRequest(args);
        const overrides = this.overrides(over);
        const result =
          overrides === undefined
            ? await this.calls.get(height, callKey(request), () =>
                c.call(request, height, undefined, this.callOptions),
              )
            : await c.call(request, height, overrides, this.callOptions);
        if (result.reverted) throw revertError(result.returnData);
        if (result.error !== undefined) throw serverError(result.error);
        return result.returnData;
      },
    );
    this.def(
      'eth_estimateGas',
      [req(transactionArgs), opt(blockRef), opt(stateOverride), opt(unsupported('block overrides'))],
      async ([args, ref, over]) => {
        const height = await this.stateHeight(ref);
        return quantity(
          await c.estimateGas(this.callRequest(args), height, this.overrides(over), this.callOptions),
        );
      },
    );
    this.def('eth_createAccessList', [req(transactionArgs), opt(blockRef)], async ([args, ref]) => {
      const height = await this.stateHeight(ref);
      const r = await c.createAccessList(this.callRequest(args), height, this.callOptions);
      const out: Record<string, Json> = {
        accessList: r.accessList.map((e) => ({
          address: e.address.toLowerCase(),
          storageKeys: [...e.storageKeys],
        })),
        gasUsed: quantity(r.gasUsed),
      };
      if (r.error !== undefined) out['error'] = r.error;
      return out;
    });
    this.def('eth_sendRawTransaction', [req(bytes)], async ([rawTx]) => this.submitRaw(hexToBytes(rawTx)));
    this.def('eth_getBlockByNumber', [req(blockNumber), req(bool)], async ([p, full]) =>
      this.renderBlock(await this.blockByNumber(p), full),
    );
    this.def('eth_getBlockByHash', [req(hash), req(bool)], async ([h, full]) =>
      this.renderBlock(await c.getBlockByHash(h), full),
    );
    this.def('eth_getHeaderByNumber', [req(blockNumber)], async ([p]) => {
      const b = await this.blockByNumber(p);
      return b === undefined ? null : formatHeader(b);
    });
    this.def('eth_getHeaderByHash', [req(hash)], async ([h]) => {
      const b = await c.getBlockByHash(h);
      return b === undefined ? null : formatHeader(b);
    });
    this.def('eth_getBlockReceipts', [req(blockRef)], async ([ref]) => {
      const b = await this.blockOf(ref);
      if (b === undefined) return null;
      return (await c.getBlockReceipts(b.number)).map(formatReceipt);
    });
    this.def('eth_getBlockTransactionCountByNumber', [req(blockNumber)], async ([p]) => {
      const b = await this.blockByNumber(p);
      return b === undefined ? null : quantity(b.transactions.length);
    });
    this.def('eth_getBlockTransactionCountByHash', [req(hash)], async ([h]) => {
      const b = await c.getBlockByHash(h);
      return b === undefined ? null : quantity(b.transactions.length);
    });
    this.def('eth_getTransactionByHash', [req(hash)], async ([h]) => {
      const tx = await c.getTransaction(h);
      return tx === undefined ? null : formatTx(tx);
    });
    this.def('eth_getTransactionByBlockHashAndIndex', [req(hash), req(uint)], async ([h, i]) =>
      this.txAt(await c.getBlockByHash(h), i),
    );
    this.def('eth_getTransactionByBlockNumberAndIndex', [req(blockNumber), req(uint)], async ([p, i]) =>
      this.txAt(await this.blockByNumber(p), i),
    );
    this.def('eth_getTransactionReceipt', [req(hash)], async ([h]) => {
      const r = await c.getReceipt(h);
      return r === undefined ? null : formatReceipt(r);
    });
    // BFT blocks have no uncles: counts are 0 for known blocks, null otherwise.
    this.def('eth_getUncleByBlockHashAndIndex', [req(hash), req(uint)], () => null);
    this.def('eth_getUncleByBlockNumberAndIndex', [req(blockNumber), req(uint)], () => null);
    this.def('eth_getUncleCountByBlockHash', [req(hash)], async ([h]) =>
      (await c.getBlockByHash(h)) === undefined ? null : '0x0',
    );
    this.def('eth_getUncleCountByBlockNumber', [req(blockNumber)], async ([p]) =>
      (await this.blockByNumber(p)) === undefined ? null : '0x0',
    );
    this.def('eth_getLogs', [req(filterCriteria)], async ([crit]) => this.queryLogs(crit));
  }

  private registerSigning(): void {
    // As anvil: impersonated accounts are listed after the unlocked ones.
    this.def('eth_accounts', [], async () => {
      const own = this.dev?.accounts() ?? [];
      const extra = (await this.devState.impersonatedAccounts()).filter((a) => !own.includes(a));
      return [...own, ...extra];
    });
    this.def('eth_sendTransaction', [req(transactionArgs)], async ([args]) => this.sendTransaction(args));
    this.def('eth_sign', [req(address), req(bytes)], ([addr, data]) =>
      this.requireAccount(addr).signMessage(addr, hexToBytes(data)),
    );
    // personal_sign(data, address[, password]); the password is ignored (dev accounts are unlocked).
    this.def('personal_sign', [req(bytes), req(address), opt(string)], ([data, addr]) =>
      this.requireAccount(addr).signMessage(addr, hexToBytes(data)),
    );
    this.def('eth_signTypedData_v4', [req(address), req(raw)], ([addr, typed]) => {
      const dev = this.requireAccount(addr);
      try {
        return dev.signTypedData(addr, typed);
      } catch (e) {
        if (e instanceof TypedDataError) throw invalidParams(e.message);
        throw e;
      }
    });
  }

  private logFilterSpec(c: FilterCriteria): LogFilterSpec {
    if (c.topics.length > MAX_TOPICS) throw serverError('exceed max topics');
    const bound = (p: BlockNumberParam | undefined) =>
      p !== undefined && 'number' in p ? p.number : undefined;
    const from = bound(c.fromBlock);
    const to = bound(c.toBlock);
    if (from !== undefined && to !== undefined && from > to)
      throw invalidParams('invalid block range params');
    const spec: LogFilterSpec = { addresses: c.addresses, topics: c.topics, criteria: c };
    if (from !== undefined) spec.fromBlock = from;
    if (to !== undefined) spec.toBlock = to;
    return spec;
  }

  private registerFilters(): void {
    const f = this.filters;
    this.def('eth_newFilter', [req(filterCriteria)], ([crit]) => {
      if (crit.blockHash !== undefined) {
        throw invalidParams("can't specify fromBlock/toBlock with blockHash");
      }
      return f.install({
        kind: 'logs',
        spec: this.logFilterSpec(crit),
        fromHeight: this.chain.latestHeight(),
      });
    });
    this.def('eth_newBlockFilter', [], () =>
      f.install({ kind: 'blocks', fromHeight: this.chain.latestHeight() }),
    );
    this.def('eth_newPendingTransactionFilter', [opt(bool)], ([full]) =>
      f.install({ kind: 'pendingTxs', fullTx: full === true }),
    );
    this.def('eth_uninstallFilter', [req(rpcId)], ([id]) => f.uninstall(id));
    this.def('eth_getFilterChanges', [req(rpcId)], async ([id]) => {
      const changes = f.takeChanges(id);
      if (changes.kind === 'logs') return changes.items.map(formatLog);
      if (changes.kind === 'pendingTxs' && changes.fullTx) return this.pendingTxObjects(changes.items);
      return changes.items;
    });
    this.def('eth_getFilterLogs', [req(rpcId)], async ([id]) => {
      const filter = f.get(id);
      if (filter.kind !== 'logs') throw serverError('filter not found');
      return this.queryLogs(filter.spec.criteria as FilterCriteria);
    });
  }

  /** Full objects of pending transactions that are still known (mined or dropped ones may vanish). */
  async pendingTxObjects(hashes: Hex[]): Promise<Json[]> {
    const txs = await Promise.all(hashes.map((h) => this.chain.getTransaction(h)));
    return txs.filter((t): t is EthTx => t !== undefined).map(formatTx);
  }

  private registerSubscriptions(): void {
    this.methods.set('eth_subscribe', async (params, ctx) => this.subscribe(params, ctx));
    this.def('eth_unsubscribe', [req(rpcId)], ([id], ctx) => {
      if (ctx.session === undefined || !ctx.session.subs.delete(id))
        throw serverError('subscription not found');
      return true;
    });
  }

  private subscribe(params: unknown, ctx: CallContext): string {
    const session = ctx.session;
    if (session === undefined) throw new RpcError(RpcErrorCode.methodNotFound, 'notifications not supported');
    if (!Array.isArray(params)) throw invalidParams('non-array args');
    const name = params[0];
    if (typeof name !== 'string') throw invalidParams('expected subscription name as first argument');
    let sub: Subscription;
    const id = newRpcId();
    switch (name as SubscriptionKind) {
      case 'newHeads':
        decodeArgs(params, [req(string)] as const);
        sub = { id, kind: 'newHeads', fromHeight: this.chain.latestHeight(), backlog: [] };
        break;
      case 'logs': {
        const [, crit] = decodeArgs(params, [req(string), req(filterCriteria)] as const);
        if (crit.topics.length > MAX_TOPICS) throw serverError('exceed max topics');
        sub = {
          id,
          kind: 'logs',
          match: { addresses: crit.addresses, topics: crit.topics },
          fromHeight: this.chain.latestHeight(),
          backlog: [],
        };
        break;
      }
      case 'newPendingTransactions': {
        const [, full] = decodeArgs(params, [req(string), opt(bool)] as const);
        sub = { id, kind: 'newPendingTransactions', fullTx: full === true, backlog: [] };
        break;
      }
      case 'syncing': {
        decodeArgs(params, [req(string)] as const);
        sub = { id, kind: 'syncing', backlog: [] };
        const status = this.syncingNotification();
        sub.lastSyncing = status;
        // geth tells a new subscriber at once when the node is already in sync.
        if (status === 'false') session.notify(sub, status);
        break;
      }
      default:
        throw new RpcError(
          RpcErrorCode.methodNotFound,
          `no ${JSON.stringify(name)} subscription in eth namespace`,
        );
    }
    const max = this.options.maxSubscriptionsPerConnection;
    if (max > 0 && session.subs.size >= max) {
      throw new RpcError(
        RpcErrorCode.limitExceeded,
        `too many subscriptions on this connection: max_subscriptions_per_connection is ${max}`,
      );
    }
    session.subs.set(id, sub);
    ctx.afterReply.push(() => session.activate(id));
    return id;
  }

  /** The syncing subscription's payload: false, or geth's {syncing: true, status: {...}}. */
  syncingNotification(): string {
    const s = this.deps.syncing();
    if (s === false) return 'false';
    return JSON.stringify({
      syncing: true,
      status: {
        startingBlock: quantity(s.startingBlock),
        currentBlock: quantity(s.currentBlock),
        highestBlock: quantity(s.highestBlock),
      },
    });
  }

  private tracer(c: TraceConfigArg | undefined): TracerConfig {
    const out: TracerConfig = {};
    if (c === undefined) return out;
    if (c.tracer !== undefined && c.tracer !== '') {
      if (c.tracer !== 'callTracer') {
        throw serverError(
          `tracer "${c.tracer}" is not supported: use the default struct logger (no tracer) or "callTracer"`,
        );
      }
      out.tracer = 'callTracer';
      const tc = c.tracerConfig ?? {};
      const cfg: NonNullable<TracerConfig['tracerConfig']> = {};
      if (tc['onlyTopCall'] === true) cfg.onlyTopCall = true;
      if (tc['withLog'] === true) cfg.withLog = true;
      out.tracerConfig = cfg;
    }
    if (c.disableStorage !== undefined) out.disableStorage = c.disableStorage;
    if (c.disableStack !== undefined) out.disableStack = c.disableStack;
    if (c.enableMemory !== undefined) out.enableMemory = c.enableMemory;
    if (c.enableReturnData !== undefined) out.enableReturnData = c.enableReturnData;
    if (c.timeout !== undefined) out.timeoutMs = parseGoDuration(c.timeout);
    return out;
  }

  private async traceBlock(
    b: EthBlock | undefined,
    label: string,
    cfg: TraceConfigArg | undefined,
  ): Promise<Json> {
    if (b === undefined) throw serverError(`block ${label} not found`);
    const results = await this.chain.traceBlock(b.number, this.tracer(cfg));
    return results.map((r) => ({ txHash: r.txHash, result: jsonSafe(r.result) as Json }));
  }

  /** The bridge-out precompile's outbound entries and parameters (docs/bridge.md). */
  private registerBridge(): void {
    // An answer that is not the precompile's (a state without it) is a -32000 naming what came back.
    const read = async <T>(fn: (r: BridgeReader) => Promise<T>): Promise<T> => {
      try {
        return await fn(new BridgeReader(this.chain, this.callOptions));
      } catch (err) {
        if (err instanceof BridgeReadError) throw serverError(err.message);
        throw err;
      }
    };
    this.def('bridge_getOutbound', [req(hexOrDecimal64), opt(blockRef)], async ([seq, ref]) => {
      const h = await this.stateHeight(ref);
      return (await read((r) => r.outbound(seq, h))) ?? null;
    });
    this.def('bridge_getOutboundByRecipient', [req(bytes), opt(blockRef)], async ([recipient, ref]) => {
      const b = hexToBytes(recipient);
      if (b.length === 0 || b.length > 64) {
        throw invalidParams(
          `recipient must be 1 to 64 bytes (its bytes on the destination chain), got ${b.length}`,
        );
      }
      const h = await this.stateHeight(ref);
      return read((r) => r.outboundByRecipient(b, h));
    });
    this.def('bridge_params', [opt(blockRef)], async ([ref]) => {
      const h = await this.stateHeight(ref);
      return read((r) => r.params(h));
    });
  }

  private registerOthers(): void {
    const c = this.chain;
    this.def('rpc_modules', [], () => {
      const out: Record<string, string> = {};
      for (const ns of this.options.apis) out[ns] = '1.0';
      return out;
    });
    this.def('net_version', [], () => c.chainId().toString());
    this.def('net_listening', [], () => true);
    this.def('net_peerCount', [], () => quantity(this.deps.peerCount()));
    this.def('web3_clientVersion', [], () => this.deps.clientVersion);
    this.def('web3_sha3', [req(bytes)], ([data]) => bytesToHex(keccak256(hexToBytes(data))));
    this.def('txpool_content', [], async () => formatPoolContent(await c.txPool()));
    this.def('txpool_contentFrom', [req(address)], async ([addr]) =>
      formatPoolContentFrom(await c.txPool(), addr),
    );
    this.def('txpool_inspect', [], async () => formatPoolInspect(await c.txPool()));
    this.def('txpool_status', [], async () => formatPoolStatus(await c.txPool()));
    this.def('debug_traceTransaction', [req(hash), opt(traceConfig)], async ([h, cfg]) =>
      jsonSafe(await c.traceTransaction(h, this.tracer(cfg))),
    );
    this.def(
      'debug_traceCall',
      [req(transactionArgs), req(blockRef), opt(traceCallConfig)],
      async ([args, ref, cfg]) => {
        const height = await this.stateHeight(ref);
        return jsonSafe(await c.traceCall(this.callRequest(args), height, this.tracer(cfg)));
      },
    );
    this.def('debug_traceBlockByNumber', [req(blockNumber), opt(traceConfig)], async ([p, cfg]) =>
      this.traceBlock(await this.blockByNumber(p), `#${this.numberOf(p)}`, cfg),
    );
    this.def('debug_traceBlockByHash', [req(hash), opt(traceConfig)], async ([h, cfg]) =>
      this.traceBlock(await c.getBlockByHash(h), h, cfg),
    );
  }
}
