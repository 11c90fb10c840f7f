// The Ethereum view of committed blocks: block records, raw transactions with their senders,
// receipts with logs, the tx-hash index and the log indexes (by address and by topic, per block).
// Written in the same batch as the block's state; read by the JSON-RPC.

import { keccak256 } from '@noded/crypto';
import type { BatchOp, KVStore } from '@noded/storage';
import { be64, bigIntToBytes, bytesToBigInt, concat, readBe64, toKey } from '../bytes.js';
import {
  asBytes,
  asList,
  encodeBytes,
  encodeListOfEncoded,
  type RlpDecoded,
  rlpDecode,
  rlpEncode,
} from '../rlp.js';
import { heightKey, P } from '../store/keys.js';
import { decodeHeader, type EthHeader, encodeHeader } from './header.js';

export interface StoredLog {
  address: Uint8Array;
  topics: Uint8Array[];
  data: Uint8Array;
}

export interface StoredReceipt {
  type: number;
  status: 0 | 1;
  cumulativeGasUsed: bigint;
  gasUsed: bigint;
  effectiveGasPrice: bigint;
  from: Uint8Array;
  to: Uint8Array | null;
  contractAddress: Uint8Array | null;
  logs: StoredLog[];
  /**
   * The logs bloom execution computed for it (read-only), kept so that rendering the receipts of a
   * block still in memory does not hash every log again; absent on a receipt read back from the store.
   */
  bloom?: Uint8Array;
}

export interface StoredBlock {
  number: bigint;
  hash: Uint8Array;
  header: EthHeader;
  headerEnc: Uint8Array;
  txHashes: Uint8Array[];
  size: bigint;
}

export interface StoredTx {
  raw: Uint8Array;
  sender: Uint8Array;
}

/** Receipt as Ethereum hashes it into receiptsRoot (EIP-2718 envelope for typed transactions). */
export function encodeConsensusReceipt(r: StoredReceipt, bloom: Uint8Array): Uint8Array {
  const body = rlpEncode([
    r.status === 1 ? Uint8Array.of(1) : new Uint8Array(0),
    bigIntToBytes(r.cumulativeGasUsed),
    bloom,
    r.logs.map((l) => [l.address, l.topics, l.data]),
  ]);
  return r.type === 0 ? body : concat(Uint8Array.of(r.type), body);
}

/** The stored form of a block: its header encoded and hashed, its size as geth reports it. */
export function sealBlock(header: EthHeader, txHashes: Uint8Array[], raws: Uint8Array[]): StoredBlock {
  const headerEnc = encodeHeader(header);
  return {
    number: header.number,
    hash: keccak256(headerEnc),
    header,
    headerEnc,
    txHashes,
    size: blockSize(headerEnc, raws),
  };
}

/** RLP size of the whole block as geth reports it (header, transactions, no uncles, no withdrawals). */
export function blockSize(headerEnc: Uint8Array, raws: Uint8Array[]): bigint {
  const txs = encodeListOfEncoded(raws.map((r) => (r[0] >= 0xc0 ? r : encodeBytes(r))));
  return BigInt(encodeListOfEncoded([headerEnc, txs, Uint8Array.of(0xc0), Uint8Array.of(0xc0)]).length);
}

function encodeReceipts(rs: StoredReceipt[]): Uint8Array {
  return rlpEncode(
    rs.map((r) => [
      bigIntToBytes(BigInt(r.type)),
      bigIntToBytes(BigInt(r.status)),
      bigIntToBytes(r.cumulativeGasUsed),
      bigIntToBytes(r.gasUsed),
      bigIntToBytes(r.effectiveGasPrice),
      r.from,
      r.to ?? new Uint8Array(0),
      r.contractAddress ?? new Uint8Array(0),
      r.logs.map((l) => [l.address, l.topics, l.data]),
    ]),
  );
}

function decodeReceipts(b: Uint8Array): StoredReceipt[] {
  return asList(rlpDecode(b), 'receipts').map((x) => {
    const f = asList(x, 'receipt');
    const bytes = (i: number) => asBytes(f[i], `receipt field ${i}`);
    const to = bytes(6);
    const ca = bytes(7);
    return {
      type: Number(bytesToBigInt(bytes(0))),
      status: Number(bytesToBigInt(bytes(1))) as 0 | 1,
      cumulativeGasUsed: bytesToBigInt(bytes(2)),
      gasUsed: bytesToBigInt(bytes(3)),
      effectiveGasPrice: bytesToBigInt(bytes(4)),
      from: bytes(5),
      to: to.length ? to : null,
      contractAddress: ca.length ? ca : null,
      logs: asList(f[8], 'logs').map((lg: RlpDecoded) => {
        const l = asList(lg, 'log');
        return {
          address: asBytes(l[0], 'log address'),
          topics: asList(l[1], 'topics').map((t) => asBytes(t, 'topic')),
          data: asBytes(l[2], 'log data'),
        };
      }),
    };
  });
}

class Lru<K, V> {
  private m = new Map<K, V>();
  constructor(private readonly limit: number) {}
  get(k: K): V | undefined {
    const v = this.m.get(k);
    if (v !== undefined) {
      this.m.delete(k);
      this.m.set(k, v);
    }
    return v;
  }
  clear(): void {
    this.m.clear();
  }
  set(k: K, v: V): void {
    this.m.delete(k);
    this.m.set(k, v);
    if (this.m.size > this.limit) this.m.delete(this.m.keys().next().value as K);
  }
}

/**
 * The stored receipts records of recent blocks, as bytes, up to a total size: eth_getLogs walks them
 * in place, and a history view asks the same recent blocks again and again. Reading a record from
 * RocksDB copies it into a new buffer each time (tens of kB for a busy block), which under many
 * concurrent queries is mostly garbage for the collector.
 */
class RecordCache {
  private readonly m = new Map<bigint, Uint8Array>();
  private bytes = 0;
  constructor(private readonly maxBytes: number) {}
  get(n: bigint): Uint8Array | undefined {
    const v = this.m.get(n);
    if (v !== undefined) {
      this.m.delete(n);
      this.m.set(n, v);
    }
    return v;
  }
  set(n: bigint, v: Uint8Array): void {
    if (v.length > this.maxBytes / 8) return;
    const old = this.m.get(n);
    if (old !== undefined) {
      this.bytes -= old.length;
      this.m.delete(n);
    }
    this.m.set(n, v);
    this.bytes += v.length;
    for (const [k, x] of this.m) {
      if (this.bytes <= this.maxBytes) break;
      this.m.delete(k);
      this.bytes -= x.length;
    }
  }
  clear(): void {
    this.m.clear();
    this.bytes = 0;
  }
  /** Forgets the records of blocks below `n` (memory comes back once a load is over). */
  dropBelow(n: bigint): void {
    for (const [k, x] of this.m) {
      if (k >= n) continue;
      this.m.delete(k);
      this.bytes -= x.length;
    }
  }
}

/** Bytes of receipts records kept in memory (RecordCache). */
const RECEIPT_RECORDS_CACHE_BYTES = 32 * 1024 * 1024;
/** Only the records of the newest this many blocks are kept (RecordCache). */
const RECEIPT_RECORDS_CACHE_BLOCKS = 128n;

/**
 * A block named by the log index, and which of its receipts hold the value: the entry's value as
 * stored (logIndexValue: sorted by receipt index), or null where the entry does not say.
 */
export interface IndexedBlock {
  number: bigint;
  receipts: Uint8Array | null;
}

/** A log index entry's value: per receipt holding the value, u32 receipt index, u32 first logIndex. */
function logIndexValue(pairs: number[]): Uint8Array {
  const out = new Uint8Array(pairs.length * 4);
  const v = new DataView(out.buffer);
  for (let j = 0; j < pairs.length; j++) v.setUint32(j * 4, pairs[j]!);
  return out;
}

/** An entry's receipts as stored, or null for an empty value (written before entries listed them) or a malformed one. */
function receiptsOfEntry(value: Uint8Array): Uint8Array | null {
  return value.length === 0 || value.length % 8 !== 0 ? null : value;
}

/** Every (receipt index -> first logIndex) of a log index entry's value. */
export function logIndexPairs(value: Uint8Array): Map<number, number> {
  const v = new DataView(value.buffer, value.byteOffset, value.byteLength);
  const out = new Map<number, number>();
  for (let at = 0; at < value.length; at += 8) out.set(v.getUint32(at), v.getUint32(at + 4));
  return out;
}

/** Whether a log index entry's value lists receipt `i` (binary search: the value is sorted). */
export function logIndexHas(value: Uint8Array, i: number): boolean {
  const v = new DataView(value.buffer, value.byteOffset, value.byteLength);
  let lo = 0;
  let hi = value.length / 8 - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const at = v.getUint32(mid * 8);
    if (at === i) return true;
    if (at < i) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}

export class ChainStore {
  private readonly blocks = new Lru<bigint, StoredBlock>(256);
  private readonly receiptCache = new Lru<bigint, StoredReceipt[]>(64);
  private readonly receiptRecords = new RecordCache(RECEIPT_RECORDS_CACHE_BYTES);
  /** The newest block written (receipts records older than RECEIPT_RECORDS_CACHE_BLOCKS below it are not kept). */
  private newest = -1n;
  private readonly txCache = new Lru<bigint, StoredTx[]>(64);

  constructor(private readonly kv: KVStore) {}

  /** Batch operations writing one block's Ethereum view and indexes. */
  blockOps(block: StoredBlock, txs: StoredTx[], receipts: StoredReceipt[]): BatchOp[] {
    const n = block.number;
    const ops: BatchOp[] = [
      {
        type: 'put',
        key: heightKey(P.block, n),
        value: rlpEncode([block.headerEnc, block.txHashes, bigIntToBytes(block.size)]),
      },
      { type: 'put', key: concat(Uint8Array.of(P.blockHash), block.hash), value: be64(n) },
    ];
    if (txs.length > 0) {
      ops.push({
        type: 'put',
        key: heightKey(P.blockTxs, n),
        value: rlpEncode(txs.map((t) => [t.raw, t.sender])),
      });
      const record = encodeReceipts(receipts);
      ops.push({ type: 'put', key: heightKey(P.receipts, n), value: record });
      this.receiptRecords.set(n, record);
    }
    if (n > this.newest) {
      this.newest = n;
      this.receiptRecords.dropBelow(n - RECEIPT_RECORDS_CACHE_BLOCKS);
    }
    block.txHashes.forEach((h, i) => {
      const loc = new Uint8Array(12);
      loc.set(be64(n));
      new DataView(loc.buffer).setUint32(8, i);
      ops.push({ type: 'put', key: concat(Uint8Array.of(P.txIndex), h), value: loc });
    });
    // Log index: an entry per emitter and per topic value (whatever its position) of the block,
    // whose value lists the receipts holding it, each with the block-wide logIndex of its first
    // log, so that eth_getLogs parses only those receipts (logIndexValue).
    const addrs = new Map<string, number[]>();
    const topics = new Map<string, number[]>();
    const note = (m: Map<string, number[]>, k: string, i: number, first: number) => {
      const at = m.get(k);
      if (at === undefined) m.set(k, [i, first]);
      else if (at[at.length - 2] !== i) at.push(i, first);
    };
    let logIndex = 0;
    receipts.forEach((r, i) => {
      const first = logIndex;
      for (const l of r.logs) {
        note(addrs, toKey(l.address), i, first);
        for (const t of l.topics) note(topics, toKey(t), i, first);
        logIndex++;
      }
    });
    for (const [a, at] of addrs) {
      ops.push({
        type: 'put',
        key: concat(Uint8Array.of(P.logAddress), Buffer.from(a, 'hex'), be64(n)),
        value: logIndexValue(at),
      });
    }
    for (const [t, at] of topics) {
      ops.push({
        type: 'put',
        key: concat(Uint8Array.of(P.logTopic), Buffer.from(t, 'hex'), be64(n)),
        value: logIndexValue(at),
      });
    }
    this.blocks.set(n, block);
    this.txCache.set(n, txs);
    this.receiptCache.set(n, receipts);
    return ops;
  }

  /**
   * Batch operations deleting block `n`'s Ethereum view: its record, hash, transactions, receipts,
   * tx-hash entries and log index entries (dev chain rollback). Nothing when it is not stored.
   */
  async dropOps(n: bigint): Promise<BatchOp[]> {
    const b = await this.block(n);
    if (!b) return [];
    const ops: BatchOp[] = [
      { type: 'del', key: heightKey(P.block, n) },
      { type: 'del', key: concat(Uint8Array.of(P.blockHash), b.hash) },
      { type: 'del', key: heightKey(P.blockTxs, n) },
      { type: 'del', key: heightKey(P.receipts, n) },
    ];
    for (const h of b.txHashes) ops.push({ type: 'del', key: concat(Uint8Array.of(P.txIndex), h) });
    const keys = new Set<string>();
    for (const r of await this.receipts(n)) {
      for (const l of r.logs) {
        keys.add(`${P.logAddress.toString(16)}${toKey(l.address)}`);
        for (const t of l.topics) keys.add(`${P.logTopic.toString(16)}${toKey(t)}`);
      }
    }
    for (const k of keys) ops.push({ type: 'del', key: concat(Buffer.from(k, 'hex'), be64(n)) });
    return ops;
  }

  /** Forgets the cached blocks, transactions and receipts (after a rollback). */
  clearCaches(): void {
    this.blocks.clear();
    this.receiptCache.clear();
    this.receiptRecords.clear();
    this.newest = -1n;
    this.txCache.clear();
  }

  async block(n: bigint): Promise<StoredBlock | undefined> {
    if (n < 0n) return undefined;
    const c = this.blocks.get(n);
    if (c) return c;
    const v = await this.kv.get(heightKey(P.block, n));
    if (!v) return undefined;
    const l = asList(rlpDecode(v), 'block record');
    const headerEnc = asBytes(l[0], 'header');
    const b: StoredBlock = {
      number: n,
      hash: keccak256(headerEnc),
      header: decodeHeader(headerEnc),
      headerEnc,
      txHashes: asList(l[1], 'tx hashes').map((h) => asBytes(h, 'tx hash')),
      size: bytesToBigInt(asBytes(l[2], 'size')),
    };
    this.blocks.set(n, b);
    return b;
  }

  async numberByHash(hash: Uint8Array): Promise<bigint | undefined> {
    const v = await this.kv.get(concat(Uint8Array.of(P.blockHash), hash));
    return v ? BigInt(readBe64(v)) : undefined;
  }

  async txs(n: bigint): Promise<StoredTx[]> {
    const c = this.txCache.get(n);
    if (c) return c;
    const v = await this.kv.get(heightKey(P.blockTxs, n));
    const out = v
      ? asList(rlpDecode(v), 'block txs').map((x) => {
          const p = asList(x, 'tx');
          return { raw: asBytes(p[0], 'raw tx'), sender: asBytes(p[1], 'sender') };
        })
      : [];
    this.txCache.set(n, out);
    return out;
  }

  async receipts(n: bigint): Promise<StoredReceipt[]> {
    const c = this.receiptCache.get(n);
    if (c) return c;
    const v = await this.kv.get(heightKey(P.receipts, n));
    const out = v ? decodeReceipts(v) : [];
    this.receiptCache.set(n, out);
    return out;
  }

  /** The receipts records of blocks `ns` as stored (RLP), read at once, for scanning their logs without decoding them. */
  async receiptsEncoded(ns: bigint[]): Promise<Array<Uint8Array | undefined>> {
    const out: Array<Uint8Array | undefined> = ns.map((n) => this.receiptRecords.get(n));
    const missing: number[] = [];
    out.forEach((r, j) => {
      if (r === undefined) missing.push(j);
    });
    if (missing.length === 0) return out;
    const read = await this.kv.getMany(missing.map((j) => heightKey(P.receipts, ns[j]!)));
    missing.forEach((j, k) => {
      const r = read[k];
      out[j] = r;
      if (r !== undefined && ns[j]! + RECEIPT_RECORDS_CACHE_BLOCKS > this.newest)
        this.receiptRecords.set(ns[j]!, r);
    });
    return out;
  }

  async txLocation(hash: Uint8Array): Promise<{ number: bigint; index: number } | undefined> {
    const v = await this.kv.get(concat(Uint8Array.of(P.txIndex), hash));
    if (!v) return undefined;
    return {
      number: BigInt(readBe64(v)),
      index: new DataView(v.buffer, v.byteOffset, v.byteLength).getUint32(8),
    };
  }

  /**
   * The blocks in [from, to] that have a log from `key` (an address or a topic), each with the
   * receipts that hold it (logIndexPairs, logIndexHas), or null where the entry does not say
   * (written before entries listed receipts): every receipt of that block may.
   */
  async indexedReceipts(prefix: number, key: Uint8Array, from: bigint, to: bigint): Promise<IndexedBlock[]> {
    const base = concat(Uint8Array.of(prefix), key);
    const out: IndexedBlock[] = [];
    for await (const [k, v] of this.kv.iterate({
      gte: concat(base, be64(from)),
      lte: concat(base, be64(to)),
    })) {
      out.push({ number: BigInt(readBe64(k, base.length)), receipts: receiptsOfEntry(v) });
    }
    return out;
  }
}
