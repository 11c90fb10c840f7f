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
 * A result already rendered as JSON text: the envelope is written around it as it is (eth_getLogs
 * replies of hundreds of logs are joined from each log's text, not built as objects and stringified).
 */
export class JsonText {
  constructor(readonly text: string) {}
}

/** Each log's JSON text, kept while the log object lives (the edge's recent logs keep theirs). */
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
