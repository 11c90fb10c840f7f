// Stored records -> the Ethereum view types of libs/types (what the JSON-RPC renders).
import type {
  AccessListEntry,
  AuthorizationEntry,
  EthBlock,
  EthLog,
  EthReceipt,
  EthTx,
  Hex,
} from '@noded/types';
import { bytesToBigInt, minBig, toHex } from '../bytes.js';
import { type RlpDecoded, rlpDecode } from '../rlp.js';
import { EMPTY_TRIE_ROOT } from '../trie/mpt.js';
import { EMPTY_REQUESTS_HASH, EMPTY_UNCLES_HASH, ZERO32 } from './header.js';
import type { StoredBlock, StoredLog, StoredReceipt } from './store.js';

export function renderBlock(b: StoredBlock): EthBlock {
  const h = b.header;
  return {
    number: b.number,
    hash: toHex(b.hash),
    parentHash: toHex(h.parentHash),
    nonce: '0x0000000000000000',
    sha3Uncles: toHex(EMPTY_UNCLES_HASH),
    logsBloom: toHex(h.logsBloom),
    transactionsRoot: toHex(h.transactionsRoot),
    stateRoot: toHex(h.stateRoot),
    receiptsRoot: toHex(h.receiptsRoot),
    miner: toHex(h.coinbase),
    difficulty: 0n,
    totalDifficulty: 0n,
    extraData: toHex(h.extraData),
    size: b.size,
    gasLimit: h.gasLimit,
    gasUsed: h.gasUsed,
    timestamp: h.timestamp,
    mixHash: toHex(h.mixHash),
    baseFeePerGas: h.baseFeePerGas,
    withdrawalsRoot: toHex(EMPTY_TRIE_ROOT),
    blobGasUsed: 0n,
    excessBlobGas: 0n,
    parentBeaconBlockRoot: toHex(ZERO32),
    requestsHash: toHex(EMPTY_REQUESTS_HASH),
    transactions: b.txHashes.map(toHex),
  };
}

function bi(d: RlpDecoded): bigint {
  return bytesToBigInt(d as Uint8Array);
}

function hx(d: RlpDecoded): Hex {
  return toHex(d as Uint8Array);
}

function word(d: RlpDecoded): Hex {
  return `0x${(d as Uint8Array).length === 0 ? '0' : bi(d).toString(16).padStart(64, '0')}`;
}

function accessList(d: RlpDecoded): AccessListEntry[] {
  return (d as RlpDecoded[]).map((e) => {
    const [a, keys] = e as RlpDecoded[];
    return { address: hx(a), storageKeys: (keys as RlpDecoded[]).map(hx) };
  });
}

function authList(d: RlpDecoded): AuthorizationEntry[] {
  return (d as RlpDecoded[]).map((e) => {
    const f = e as RlpDecoded[];
    return {
      chainId: bi(f[0]),
      address: hx(f[1]),
      nonce: bi(f[2]),
      yParity: bi(f[3]),
      r: word(f[4]),
      s: word(f[5]),
    };
  });
}

export interface TxPlacement {
  blockHash: Hex | null;
  blockNumber: bigint | null;
  transactionIndex: bigint | null;
  /** Base fee of the including block: the effective gas price of EIP-1559 transactions. */
  baseFee: bigint | null;
}

/** Renders a raw signed transaction (sender already known). */
export function renderTx(raw: Uint8Array, hash: Hex, from: Hex, at: TxPlacement): EthTx {
  const type = raw[0] >= 0xc0 ? 0 : raw[0];
  const f = rlpDecode(type === 0 ? raw : raw.subarray(1)) as RlpDecoded[];
  const base = {
    hash,
    type,
    from,
    blockHash: at.blockHash,
    blockNumber: at.blockNumber,
    transactionIndex: at.transactionIndex,
  };
  if (type === 0) {
    const v = bi(f[6]);
    return {
      ...base,
      chainId: v >= 35n ? (v - 35n) / 2n : undefined,
      nonce: bi(f[0]),
      gasPrice: bi(f[1]),
      gas: bi(f[2]),
      to: (f[3] as Uint8Array).length ? hx(f[3]) : null,
      value: bi(f[4]),
      input: hx(f[5]),
      v,
      r: word(f[7]),
      s: word(f[8]),
    };
  }
  if (type === 1) {
    return {
      ...base,
      chainId: bi(f[0]),
      nonce: bi(f[1]),
      gasPrice: bi(f[2]),
      gas: bi(f[3]),
      to: (f[4] as Uint8Array).length ? hx(f[4]) : null,
      value: bi(f[5]),
      input: hx(f[6]),
      accessList: accessList(f[7]),
      v: bi(f[8]),
      yParity: bi(f[8]),
      r: word(f[9]),
      s: word(f[10]),
    };
  }
  const maxPrio = bi(f[2]);
  const maxFee = bi(f[3]);
  const sig = type === 4 ? 10 : 9;
  const tip = at.baseFee === null ? maxPrio : minBig(maxFee - at.baseFee, maxPrio);
  return {
    ...base,
    chainId: bi(f[0]),
    nonce: bi(f[1]),
    maxPriorityFeePerGas: maxPrio,
    maxFeePerGas: maxFee,
    gasPrice: at.baseFee === null ? maxFee : at.baseFee + tip,
    gas: bi(f[4]),
    to: (f[5] as Uint8Array).length ? hx(f[5]) : null,
    value: bi(f[6]),
    input: hx(f[7]),
    accessList: accessList(f[8]),
    ...(type === 4 ? { authorizationList: authList(f[9]) } : {}),
    v: bi(f[sig]),
    yParity: bi(f[sig]),
    r: word(f[sig + 1]),
    s: word(f[sig + 2]),
  };
}

/** Logs of receipt `i`, numbered from `firstLogIndex` (the count of logs in earlier receipts). */
function renderReceiptLogs(b: StoredBlock, r: StoredReceipt, i: number, firstLogIndex: bigint): EthLog[] {
  const blockHash = toHex(b.hash);
  const transactionHash = toHex(b.txHashes[i]);
  return r.logs.map((l, k) => renderLog(b, l, i, firstLogIndex + BigInt(k), blockHash, transactionHash));
}

/**
 * One log of receipt `i` at `logIndex` (counted over the whole block); `blockHash` and
 * `transactionHash` are the hex of `b.hash` and `b.txHashes[i]`, passed in so a caller rendering
 * several logs of one block or transaction converts them once.
 */
export function renderLog(
  b: StoredBlock,
  l: StoredLog,
  i: number,
  logIndex: bigint,
  blockHash: Hex,
  transactionHash: Hex,
): EthLog {
  return {
    address: toHex(l.address),
    topics: l.topics.map(toHex),
    data: toHex(l.data),
    blockNumber: b.number,
    blockHash,
    blockTimestamp: b.header.timestamp,
    transactionHash,
    transactionIndex: BigInt(i),
    logIndex,
    removed: false,
  };
}

export function renderLogs(b: StoredBlock, receipts: StoredReceipt[]): EthLog[][] {
  let logIndex = 0n;
  return receipts.map((r, i) => {
    const logs = renderReceiptLogs(b, r, i, logIndex);
    logIndex += BigInt(r.logs.length);
    return logs;
  });
}

/**
 * Receipt `i` of a block, rendering only its own logs and bloom (eth_getTransactionReceipt must not
 * pay for every receipt of a large block).
 */
export function renderReceipt(
  b: StoredBlock,
  receipts: StoredReceipt[],
  i: number,
  bloom: Uint8Array,
): EthReceipt {
  let firstLogIndex = 0n;
  for (let k = 0; k < i; k++) firstLogIndex += BigInt(receipts[k].logs.length);
  return receiptAt(b, receipts[i], i, firstLogIndex, bloom);
}

/** The hex of an empty 256-byte logs bloom (every receipt without logs): 514 characters, made once. */
const EMPTY_BLOOM_HEX = toHex(new Uint8Array(256));

function bloomHex(bloom: Uint8Array): Hex {
  if (bloom.length !== 256) return toHex(bloom);
  for (let k = 0; k < 256; k++) if (bloom[k] !== 0) return toHex(bloom);
  return EMPTY_BLOOM_HEX;
}

function receiptAt(
  b: StoredBlock,
  r: StoredReceipt,
  i: number,
  firstLogIndex: bigint,
  bloom: Uint8Array,
  blockHash: Hex = toHex(b.hash),
): EthReceipt {
  return {
    transactionHash: toHex(b.txHashes[i]),
    transactionIndex: BigInt(i),
    blockHash,
    blockNumber: b.number,
    from: toHex(r.from),
    to: r.to ? toHex(r.to) : null,
    cumulativeGasUsed: r.cumulativeGasUsed,
    gasUsed: r.gasUsed,
    effectiveGasPrice: r.effectiveGasPrice,
    contractAddress: r.contractAddress ? toHex(r.contractAddress) : null,
    logs: renderReceiptLogs(b, r, i, firstLogIndex),
    logsBloom: bloomHex(bloom),
    status: r.status,
    type: r.type,
  };
}

export function renderReceipts(
  b: StoredBlock,
  receipts: StoredReceipt[],
  blooms: Uint8Array[],
): EthReceipt[] {
  let firstLogIndex = 0n;
  const blockHash = toHex(b.hash);
  return receipts.map((r, i) => {
    const out = receiptAt(b, r, i, firstLogIndex, blooms[i], blockHash);
    firstLogIndex += BigInt(r.logs.length);
    return out;
  });
}
