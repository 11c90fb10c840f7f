// Rendering of the chain's Ethereum view as geth's JSON: hex quantities, lowercase addresses, the
// per-type transaction fields of geth's RPCTransaction, and nulls where geth has them.
import type {
  AccountProof,
  EthBlock,
  EthLog,
  EthReceipt,
  EthTx,
  FeeHistory,
  Hex,
  PendingTxSummary,
} from '@noded/types';
import { checksumAddress, quantity, quantityFromHex } from './hex.js';

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type JsonObject = { [k: string]: Json };

/** Header fields (newHeads notifications, and the head of every block object). */
export function formatHeader(b: EthBlock): JsonObject {
  const h: JsonObject = {
    number: quantity(b.number),
    hash: b.hash,
    parentHash: b.parentHash,
    nonce: b.nonce,
    sha3Uncles: b.sha3Uncles,
    logsBloom: b.logsBloom,
    transactionsRoot: b.transactionsRoot,
    stateRoot: b.stateRoot,
    receiptsRoot: b.receiptsRoot,
    miner: b.miner,
    difficulty: quantity(b.difficulty),
    extraData: b.extraData,
    gasLimit: quantity(b.gasLimit),
    gasUsed: quantity(b.gasUsed),
    timestamp: quantity(b.timestamp),
    mixHash: b.mixHash,
    baseFeePerGas: quantity(b.baseFeePerGas),
  };
  if (b.withdrawalsRoot !== undefined) h['withdrawalsRoot'] = b.withdrawalsRoot;
  if (b.blobGasUsed !== undefined) h['blobGasUsed'] = quantity(b.blobGasUsed);
  if (b.excessBlobGas !== undefined) h['excessBlobGas'] = quantity(b.excessBlobGas);
  if (b.parentBeaconBlockRoot !== undefined) h['parentBeaconBlockRoot'] = b.parentBeaconBlockRoot;
  if (b.requestsHash !== undefined) h['requestsHash'] = b.requestsHash;
  return h;
}

/** A block with transaction hashes (txs undefined) or full transaction objects. */
export function formatBlock(b: EthBlock, txs?: EthTx[]): JsonObject {
  const out = formatHeader(b);
  out['totalDifficulty'] = quantity(b.totalDifficulty);
  out['size'] = quantity(b.size);
  out['transactions'] = txs === undefined ? [...b.transactions] : txs.map((t) => formatTx(t));
  out['uncles'] = [];
  if (b.withdrawalsRoot !== undefined) out['withdrawals'] = [];
  return out;
}

function formatAccessList(list: EthTx['accessList']): Json {
  return (list ?? []).map((e) => ({ address: e.address.toLowerCase(), storageKeys: [...e.storageKeys] }));
}

/** geth's RPCTransaction (gasPrice: the chain gives the effective price once mined, the fee cap before). */
export function formatTx(t: EthTx): JsonObject {
  const out: JsonObject = {
    blockHash: t.blockHash,
    blockNumber: t.blockNumber === null ? null : quantity(t.blockNumber),
    from: t.from.toLowerCase(),
    gas: quantity(t.gas),
    gasPrice: quantity(t.gasPrice),
    hash: t.hash,
    input: t.input,
    nonce: quantity(t.nonce),
    to: t.to === null ? null : t.to.toLowerCase(),
    transactionIndex: t.transactionIndex === null ? null : quantity(t.transactionIndex),
    value: quantity(t.value),
    type: quantity(t.type),
    v: quantity(t.v),
    r: quantityFromHex(t.r),
    s: quantityFromHex(t.s),
  };
  if (t.type === 0) {
    if (t.chainId !== undefined && t.chainId !== 0n) out['chainId'] = quantity(t.chainId);
    return out;
  }
  out['accessList'] = formatAccessList(t.accessList);
  out['chainId'] = quantity(t.chainId ?? 0n);
  out['yParity'] = quantity(t.yParity ?? t.v);
  if (t.type >= 2) {
    const maxFee = t.maxFeePerGas ?? t.gasPrice;
    const tip = t.maxPriorityFeePerGas ?? t.gasPrice;
    out['maxFeePerGas'] = quantity(maxFee);
    out['maxPriorityFeePerGas'] = quantity(tip);
  }
  if (t.type === 4) {
    out['authorizationList'] = (t.authorizationList ?? []).map((a) => ({
      chainId: quantity(a.chainId),
      address: a.address.toLowerCase(),
      nonce: quantity(a.nonce),
      yParity: quantity(a.yParity),
      r: quantityFromHex(a.r),
      s: quantityFromHex(a.s),
    }));
  }
  return out;
}

export function formatLog(l: EthLog): JsonObject {
  const out: JsonObject = {
    address: l.address.toLowerCase(),
    topics: [...l.topics],
    data: l.data,
    blockNumber: quantity(l.blockNumber),
    transactionHash: l.transactionHash,
    transactionIndex: quantity(l.transactionIndex),
    blockHash: l.blockHash,
    logIndex: quantity(l.logIndex),
    removed: l.removed,
  };
  if (l.blockTimestamp !== undefined) out['blockTimestamp'] = quantity(l.blockTimestamp);
  return out;
}

/**
 * A result already rendered as UTF-8 JSON, in pieces: the envelope is written around them and the
 * pieces are sent as they are, never joined into a string (eth_getLogs replies of hundreds of logs,
 * mostly views of their blocks' rendered logs; see logsJson).
 */
export class JsonBytes {
  constructor(
    readonly chunks: readonly Buffer[],
    /** Bytes in all the chunks. */
    readonly length: number,
  ) {}
}

/** Each log's JSON text, kept while the log object lives (the logs subscriptions' notifications). */
const logTexts = new WeakMap<EthLog, string>();

/** JSON.stringify(formatLog(l)), rendered once per log object. */
export function logText(l: EthLog): string {
  let t = logTexts.get(l);
  if (t === undefined) {
    t = JSON.stringify(formatLog(l));
    logTexts.set(l, t);
  }
  return t;
}

/** A block's logs rendered once: their JSON texts joined by commas, and where each one lies. */
export interface RenderedLogs {
  /** UTF-8. */
  bytes: Buffer;
  starts: Uint32Array;
  ends: Uint32Array;
}

/** Renders `logs` (a block's, in order) as RenderedLogs. */
export function renderLogs(logs: readonly EthLog[]): RenderedLogs {
  const texts = logs.map((l) => JSON.stringify(formatLog(l)));
  const bytes = Buffer.from(texts.join(','), 'utf8');
  const starts = new Uint32Array(logs.length);
  const ends = new Uint32Array(logs.length);
  let at = 0;
  for (let i = 0; i < texts.length; i++) {
    starts[i] = at;
    at += Buffer.byteLength(texts[i]!, 'utf8');
    ends[i] = at;
    at++;
  }
  return { bytes, starts, ends };
}

/**
 * The JSON of a list of logs as ranges of rendered bytes, in order: a run of logs that stand next to
 * each other in their block (every Transfer of a token in a block, say) is one range, commas included.
 */
export class LogRuns {
  readonly bytes: Buffer[] = [];
  readonly starts: number[] = [];
  readonly ends: number[] = [];
  /** Logs added. */
  count = 0;
  private last: RenderedLogs | undefined;
  private lastIndex = -1;

  /** Log `i` of the rendered block `r`, next. */
  add(r: RenderedLogs, i: number): void {
    this.count++;
    if (r === this.last && i === this.lastIndex + 1) {
      this.ends[this.ends.length - 1] = r.ends[i]!;
    } else {
      this.bytes.push(r.bytes);
      this.starts.push(r.starts[i]!);
      this.ends.push(r.ends[i]!);
      this.last = r;
    }
    this.lastIndex = i;
  }

  /** A log rendered on its own, next. */
  addText(text: string): void {
    const b = Buffer.from(text, 'utf8');
    this.count++;
    this.bytes.push(b);
    this.starts.push(0);
    this.ends.push(b.length);
    this.last = undefined;
  }
}

/** The runs a list of logs was gathered with (RecentLogs.query), for logsJson. */
const runsOfList = new WeakMap<readonly EthLog[], LogRuns>();

/** Notes that `runs` render `logs` (the same logs, in order); returns `logs`. */
export function withRuns(logs: EthLog[], runs: LogRuns): EthLog[] {
  runsOfList.set(logs, runs);
  return logs;
}

/**
 * Runs of a reply at least this long are sent as views of their block's rendered logs; shorter
 * pieces are copied together into one chunk (a chunk costs a write of its own).
 */
const SHARED_RUN_BYTES = 4096;
const OPEN = Buffer.from('[');
const CLOSE = Buffer.from(']');
const SEP = Buffer.from(',');

/**
 * The JSON array of `logs`, as UTF-8 chunks: byte for byte `[${logs.map(logText).join(',')}]`. Logs
 * gathered from rendered blocks (withRuns) are taken from them, long runs without a copy; others
 * are rendered here.
 */
export function logsJson(logs: readonly EthLog[]): JsonBytes {
  let runs = runsOfList.get(logs);
  if (runs === undefined || runs.count !== logs.length) {
    runs = new LogRuns();
    for (const l of logs) runs.addText(JSON.stringify(formatLog(l)));
  }
  // The pieces in order, each a range of a buffer: brackets, runs and the commas between them.
  const pieces: Buffer[] = [OPEN];
  const starts: number[] = [0];
  const ends: number[] = [1];
  for (let i = 0; i < runs.bytes.length; i++) {
    if (i > 0) {
      pieces.push(SEP);
      starts.push(0);
      ends.push(1);
    }
    pieces.push(runs.bytes[i]!);
    starts.push(runs.starts[i]!);
    ends.push(runs.ends[i]!);
  }
  pieces.push(CLOSE);
  starts.push(0);
  ends.push(1);
  // Long runs as views; the short pieces between them copied together.
  const chunks: Buffer[] = [];
  let length = 0;
  for (let i = 0; i < pieces.length; ) {
    if (ends[i]! - starts[i]! >= SHARED_RUN_BYTES) {
      chunks.push(pieces[i]!.subarray(starts[i], ends[i]));
      length += ends[i]! - starts[i]!;
      i++;
      continue;
    }
    let j = i;
    let n = 0;
    for (; j < pieces.length && ends[j]! - starts[j]! < SHARED_RUN_BYTES; j++) n += ends[j]! - starts[j]!;
    if (j === i + 1) chunks.push(pieces[i]!.subarray(starts[i], ends[i]));
    else {
      const out = Buffer.allocUnsafe(n);
      let at = 0;
      for (let k = i; k < j; k++) at += pieces[k]!.copy(out, at, starts[k], ends[k]);
      chunks.push(out);
    }
    length += n;
    i = j;
  }
  return new JsonBytes(chunks, length);
}

/** geth's MarshalReceipt. */
export function formatReceipt(r: EthReceipt): JsonObject {
  return {
    blockHash: r.blockHash,
    blockNumber: quantity(r.blockNumber),
    transactionHash: r.transactionHash,
    transactionIndex: quantity(r.transactionIndex),
    from: r.from.toLowerCase(),
    to: r.to === null ? null : r.to.toLowerCase(),
    gasUsed: quantity(r.gasUsed),
    cumulativeGasUsed: quantity(r.cumulativeGasUsed),
    contractAddress: r.contractAddress === null ? null : r.contractAddress.toLowerCase(),
    logs: r.logs.map(formatLog),
    logsBloom: r.logsBloom,
    type: quantity(r.type),
    effectiveGasPrice: quantity(r.effectiveGasPrice),
    status: quantity(r.status),
  };
}

export function formatProof(p: AccountProof): JsonObject {
  return {
    address: p.address.toLowerCase(),
    accountProof: [...p.accountProof],
    balance: quantity(p.balance),
    codeHash: p.codeHash,
    nonce: quantity(p.nonce),
    storageHash: p.storageHash,
    storageProof: p.storageProof.map((s) => ({ key: s.key, value: quantity(s.value), proof: [...s.proof] })),
  };
}

export function formatFeeHistory(f: FeeHistory): JsonObject {
  const out: JsonObject = {
    oldestBlock: quantity(f.oldestBlock),
    baseFeePerGas: f.baseFeePerGas.map(quantity),
    gasUsedRatio: [...f.gasUsedRatio],
  };
  if (f.reward !== undefined) out['reward'] = f.reward.map((r) => r.map(quantity));
  return out;
}

type PoolSide = PendingTxSummary['pending'];

function sortedNonces(txs: Map<bigint, EthTx>): Array<[bigint, EthTx]> {
  return [...txs.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

function poolSide(side: PoolSide, render: (t: EthTx) => Json): JsonObject {
  const out: JsonObject = {};
  for (const [sender, txs] of side) {
    const byNonce: JsonObject = {};
    for (const [nonce, tx] of sortedNonces(txs)) byNonce[nonce.toString()] = render(tx);
    out[checksumAddress(sender)] = byNonce;
  }
  return out;
}

/** txpool_content: sender (checksummed, as geth's account.Hex()) -> decimal nonce -> tx. */
export function formatPoolContent(pool: PendingTxSummary): JsonObject {
  return {
    pending: poolSide(pool.pending, (t) => formatTx(t)),
    queued: poolSide(pool.queued, (t) => formatTx(t)),
  };
}

/** txpool_contentFrom for one sender. */
export function formatPoolContentFrom(pool: PendingTxSummary, sender: Hex): JsonObject {
  const pick = (side: PoolSide): JsonObject => {
    const out: JsonObject = {};
    for (const [s, txs] of side) {
      if (s.toLowerCase() !== sender) continue;
      for (const [nonce, tx] of sortedNonces(txs)) out[nonce.toString()] = formatTx(tx);
    }
    return out;
  };
  return { pending: pick(pool.pending), queued: pick(pool.queued) };
}

function inspectLine(t: EthTx): string {
  const price = t.type >= 2 ? (t.maxFeePerGas ?? t.gasPrice) : t.gasPrice;
  const head = t.to === null ? 'contract creation' : checksumAddress(t.to);
  return `${head}: ${t.value} wei + ${t.gas} gas × ${price} wei`;
}

/** txpool_inspect: one summary line per transaction, geth's wording. */
export function formatPoolInspect(pool: PendingTxSummary): JsonObject {
  return { pending: poolSide(pool.pending, inspectLine), queued: poolSide(pool.queued, inspectLine) };
}

export function formatPoolStatus(pool: PendingTxSummary): JsonObject {
  let pending = 0;
  let queued = 0;
  for (const txs of pool.pending.values()) pending += txs.size;
  for (const txs of pool.queued.values()) queued += txs.size;
  return { pending: quantity(pending), queued: quantity(queued) };
}
