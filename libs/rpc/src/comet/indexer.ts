// The CometBFT "kv" transaction and block indexer (data/tx_index.db): indexes each committed
// block's transaction results and events so /tx, /tx_search and /block_search can answer.
//
// Keys (bytewise ordered, integers big-endian so ranges iterate numerically):
//   T <hash 32>                                   -> the transaction record (JSON)
//   A <keccak256(tx) 32>                          -> hash (lookup by the Ethereum hash)
//   H <height 8><index 4>                         -> hash (tx.height)
//   E <tag> 0x00 <value> 0x00 <height 8><index 4> -> hash (indexed attribute type.key of a tx event)
//   B <height 8>                                  -> "" (block.height)
//   F <tag> 0x00 <value> 0x00 <height 8>          -> "" (indexed attribute of a FinalizeBlock event)
//   M last                                        -> height 8 (highest block indexed)
//
// Two attributes of every EVM transaction are not written as E keys: ethereum_tx.txHash (the
// upper-case hex of the T key's hash) and ethereum_tx.ethereumTxHash (0x and the lower-case hex of
// the A key's hash). They were random over the key space, two of the thirteen keys a transfer wrote,
// and made compaction rewrite overlapping files; queries on them are answered from the T, A and H
// keys and checked against the stored events (see DERIVED_TAGS). A value in any other form is still
// written as an E key, and databases written before keep theirs (answers are deduplicated).
import { keccak256 } from '@noded/crypto';
import type { BatchOp, KVStore } from '@noded/storage';
import type {
  AbciEvent,
  Block,
  EventBus,
  ExecTxResult,
  FinalizeBlockResponse,
  Logger,
  NodeReader,
} from '@noded/types';
import { txHash } from './encode.js';
import { parseNumberValue, Query } from './query.js';
import { b64, bytesEqual, fromB64 } from './wire.js';

export const TX_HASH_KEY = 'tx.hash';
export const TX_HEIGHT_KEY = 'tx.height';
export const BLOCK_HEIGHT_KEY = 'block.height';
/** ethereum_tx.txHash: the CometBFT hash, upper-case hex (libs/execution's blockrun). */
export const ETH_TX_TM_HASH_KEY = 'ethereum_tx.txHash';
/** ethereum_tx.ethereumTxHash: the Ethereum hash, 0x and lower-case hex. */
export const ETH_TX_ETH_HASH_KEY = 'ethereum_tx.ethereumTxHash';

/**
 * The attributes whose value is a transaction's own hash, in the form the node writes: not stored as
 * E keys (the T and A keys already map them), answered from those keys instead.
 */
const DERIVED_TAGS: ReadonlySet<string> = new Set([ETH_TX_TM_HASH_KEY, ETH_TX_ETH_HASH_KEY]);
const TM_HASH_FORM = /^[0-9A-F]{64}$/;
const ETH_HASH_FORM = /^0x[0-9a-f]{64}$/;

function hexLower(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
}

function hexUpper(b: Uint8Array): string {
  return hexLower(b).toUpperCase();
}

/** One indexed transaction (abci.TxResult). */
export interface IndexedTx {
  /** CometBFT hash: sha256 of the raw bytes. */
  hash: Uint8Array;
  height: number;
  index: number;
  tx: Uint8Array;
  result: ExecTxResult;
}

/** A query the indexer refuses (e.g. a malformed tx.hash). */
export class IndexerQueryError extends Error {
  readonly code = 'INDEXER_QUERY';
  constructor(message: string) {
    super(message);
    this.name = 'IndexerQueryError';
  }
}

const enc = new TextEncoder();
const dec = new TextDecoder();
const SEP = 0x00;

function u64(n: number): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt(n));
  return out;
}

function u32(n: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, n);
  return out;
}

function readU64(b: Uint8Array, at: number): number {
  return Number(new DataView(b.buffer, b.byteOffset, b.byteLength).getBigUint64(at));
}

/**
 * The concatenation of `parts` (strings as UTF-8, numbers as one byte) in one allocation. Indexing a
 * block builds about a dozen keys per transaction; TextEncoder and a copy per part made this the
 * indexer thread's largest cost after RocksDB itself.
 */
function cat(...parts: Array<Uint8Array | string | number>): Buffer {
  let length = 0;
  for (const p of parts)
    length += typeof p === 'string' ? Buffer.byteLength(p, 'utf8') : typeof p === 'number' ? 1 : p.length;
  const out = Buffer.allocUnsafeSlow(length);
  let at = 0;
  for (const p of parts) {
    if (typeof p === 'string') at += out.write(p, at, 'utf8');
    else if (typeof p === 'number') out[at++] = p;
    else {
      out.set(p, at);
      at += p.length;
    }
  }
  return out;
}

/** The smallest key greater than every key starting with `prefix`. */
function prefixEnd(prefix: Uint8Array): Uint8Array {
  const out = new Uint8Array(prefix); // a copy: a Buffer's slice() is a view
  for (let i = out.length - 1; i >= 0; i--) {
    if (out[i] < 0xff) {
      out[i]++;
      return out.subarray(0, i + 1);
    }
  }
  return Uint8Array.of(0xff, 0xff, 0xff, 0xff);
}

const LAST_KEY = enc.encode('Mlast');

interface StoredTx {
  h: number;
  i: number;
  tx: string;
  r: {
    code: number;
    data: string;
    log: string;
    info: string;
    gw: string;
    gu: string;
    cs: string;
    ev: AbciEvent[];
  };
}

function encodeRecord(t: IndexedTx): Uint8Array {
  const r = t.result;
  const stored: StoredTx = {
    h: t.height,
    i: t.index,
    tx: b64(t.tx),
    r: {
      code: r.code,
      data: b64(r.data),
      log: r.log,
      info: r.info,
      gw: r.gasWanted.toString(),
      gu: r.gasUsed.toString(),
      cs: r.codespace,
      ev: r.events,
    },
  };
  return Buffer.from(JSON.stringify(stored), 'utf8');
}

function decodeRecord(hash: Uint8Array, raw: Uint8Array): IndexedTx {
  const s = JSON.parse(dec.decode(raw)) as StoredTx;
  return {
    hash,
    height: s.h,
    index: s.i,
    tx: fromB64(s.tx),
    result: {
      code: s.r.code,
      data: fromB64(s.r.data),
      log: s.r.log,
      info: s.r.info,
      gasWanted: BigInt(s.r.gw),
      gasUsed: BigInt(s.r.gu),
      codespace: s.r.cs,
      events: s.r.ev,
    },
  };
}

/** What the indexer keeps of a committed block: its transactions, their results, its events. */
export interface IndexedBlock {
  height: number;
  txs: Uint8Array[];
  txResults: ExecTxResult[];
  /** FinalizeBlock events (block_search). */
  events: AbciEvent[];
}

/**
 * Where the index lives: a TxIndexStore over a KVStore in this thread, or one behind a message
 * channel on a thread of its own (services/noded's indexer thread). Every method is answered in
 * the order it was called.
 */
export interface TxIndexBackend {
  index(block: IndexedBlock): Promise<void>;
  get(hash: Uint8Array): Promise<IndexedTx | undefined>;
  search(query: Query): Promise<IndexedTx[]>;
  searchBlocks(query: Query): Promise<number[]>;
  indexedHeight(): Promise<number>;
  /** Deletes everything indexed above `height` (the dev chain's evm_revert). */
  rollbackTo(height: number): Promise<void>;
  /** Releases what the backend holds (a thread); a TxIndexStore leaves its KVStore to its owner. */
  close?(): Promise<void>;
}

export type TxIndexerDeps = {
  bus: EventBus;
  logger: Logger;
} & (
  | { kv: KVStore }
  | { backend: TxIndexBackend }
  /** tx_index.indexer = "null": nothing is indexed and the queries say indexing is off. */
  | { disabled: true }
);

/**
 * Indexes committed blocks from the EventBus (NewBlock) through its backend and answers tx/tx_search/
 * block_search. It subscribes on construction; writes are serialized in block order.
 */
export class TxIndexer {
  private readonly backend: TxIndexBackend | undefined;
  private readonly logger: Logger;
  private readonly unsubscribe: () => void;
  private queue: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(deps: TxIndexerDeps) {
    this.backend = 'kv' in deps ? new TxIndexStore(deps.kv) : 'backend' in deps ? deps.backend : undefined;
    this.logger = deps.logger.child({ module: 'txindex' });
    this.unsubscribe =
      this.backend === undefined
        ? () => {}
        : deps.bus.subscribe((event) => {
            if (event.kind === 'NewBlock') this.enqueue(event.block, event.result);
          });
  }

  /** False for tx_index.indexer = "null". */
  get enabled(): boolean {
    return this.backend !== undefined;
  }

  private use(what: 'transaction' | 'block'): TxIndexBackend {
    // CometBFT's words when its indexer is the null one.
    if (!this.backend) throw new Error(`${what} indexing is disabled`);
    return this.backend;
  }

  private enqueue(block: Block, result: FinalizeBlockResponse): void {
    if (this.closed) return;
    this.queue = this.queue
      .then(() => this.index(block, result))
      .catch((err: Error) => {
        this.logger.error({ err: err.message, height: block.header.height }, 'failed to index block');
      });
  }

  /** Resolves when every block received so far is written. */
  async idle(): Promise<void> {
    let seen: Promise<void>;
    do {
      seen = this.queue;
      await seen;
    } while (seen !== this.queue);
  }

  /**
   * Stops listening, waits for pending writes and closes the backend (a thread stops). A KVStore
   * passed in stays open: its owner closes it.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe();
    await this.idle();
    await this.backend?.close?.();
  }

  /** Highest indexed height (0 when nothing was indexed or indexing is off). */
  async indexedHeight(): Promise<number> {
    return this.backend ? this.backend.indexedHeight() : 0;
  }

  /**
   * Deletes what is indexed above `height` (the dev chain's evm_revert), after the writes already
   * queued. Nothing to do when indexing is off.
   */
  async rollbackTo(height: number): Promise<void> {
    await this.idle();
    await this.backend?.rollbackTo(height);
  }

  /**
   * Indexes the blocks the node stored but this index has not seen (after a restart or when the
   * index was deleted). Returns how many blocks were indexed.
   */
  async catchUp(node: NodeReader): Promise<number> {
    if (!this.backend) return 0;
    const top = node.blockStoreHeight();
    let from = Math.max((await this.indexedHeight()) + 1, node.blockStoreBase());
    let count = 0;
    for (; from <= top; from++) {
      const [block, results] = await Promise.all([node.loadBlock(from), node.loadBlockResults(from)]);
      if (!block || !results) continue;
      await this.backend.index({
        height: from,
        txs: block.data.txs,
        txResults: results.txResults,
        events: results.finalizeBlockEvents,
      });
      count++;
    }
    return count;
  }

  /** Indexes one block's transactions and FinalizeBlock events in one atomic write. */
  async index(block: Block, result: FinalizeBlockResponse): Promise<void> {
    await this.use('transaction').index({
      height: block.header.height,
      txs: block.data.txs,
      txResults: result.txResults,
      events: result.events,
    });
  }

  /** Looks a transaction up by its CometBFT hash (sha256) or its Ethereum hash (keccak256). */
  async get(hash: Uint8Array): Promise<IndexedTx | undefined> {
    return this.use('transaction').get(hash);
  }

  /**
   * Transactions matching the query, ordered by (height, index). A tx.hash condition answers
   * directly (other conditions are then ignored, as CometBFT does).
   */
  async search(query: Query | string): Promise<IndexedTx[]> {
    const backend = this.use('transaction');
    return backend.search(typeof query === 'string' ? Query.parse(query) : query);
  }

  /** Heights of the blocks matching the query (block.height and FinalizeBlock event attributes), ascending. */
  async searchBlocks(query: Query | string): Promise<number[]> {
    const backend = this.use('block');
    return backend.searchBlocks(typeof query === 'string' ? Query.parse(query) : query);
  }
}

/** The kv index itself over one KVStore: the keys listed at the top of this file. */
export class TxIndexStore implements TxIndexBackend {
  constructor(private readonly kv: KVStore) {}

  async indexedHeight(): Promise<number> {
    const raw = await this.kv.get(LAST_KEY);
    return raw ? readU64(raw, 0) : 0;
  }

  async index(block: IndexedBlock): Promise<void> {
    const { height, txs } = block;
    const ops: Array<{ type: 'put'; key: Uint8Array; value: Uint8Array }> = [];
    const put = (key: Uint8Array, value: Uint8Array) => ops.push({ type: 'put', key, value });
    const empty = new Uint8Array(0);
    const h8 = u64(height);

    put(cat('B', h8), empty);
    for (const e of block.events) {
      if (e.type === '') continue;
      for (const a of e.attributes) {
        if (a.key === '' || !a.index) continue;
        put(cat('F', `${e.type}.${a.key}`, SEP, a.value, SEP, h8), empty);
      }
    }

    const hashes = txs.map(txHash);
    const previous = await this.kv.getMany(hashes.map((h) => cat('T', h)));
    for (let i = 0; i < txs.length; i++) {
      const r = block.txResults[i];
      if (!r) continue;
      const hash = hashes[i];
      // As CometBFT: a failed re-execution never hides an earlier successful one.
      const prev = previous[i];
      if (r.code !== 0 && prev && decodeRecord(hash, prev).result.code === 0) continue;
      const pos = cat(h8, u32(i));
      const ethHash = keccak256(txs[i]);
      for (const e of r.events) {
        if (e.type === '') continue;
        for (const a of e.attributes) {
          if (a.key === '' || !a.index) continue;
          const tag = `${e.type}.${a.key}`;
          if (tag === TX_HASH_KEY || tag === TX_HEIGHT_KEY) continue; // reserved keys
          // The transaction's own hashes: the T and A keys answer for them.
          if (tag === ETH_TX_TM_HASH_KEY && a.value === hexUpper(hash)) continue;
          if (tag === ETH_TX_ETH_HASH_KEY && a.value === `0x${hexLower(ethHash)}`) continue;
          put(cat('E', tag, SEP, a.value, SEP, pos), hash);
        }
      }
      put(cat('H', pos), hash);
      put(cat('A', ethHash), hash);
      put(cat('T', hash), encodeRecord({ hash, height, index: i, tx: txs[i], result: r }));
    }
    const last = await this.indexedHeight();
    if (height > last) put(LAST_KEY, h8);
    await this.kv.write(ops);
  }

  /**
   * Deletes every entry of the blocks above `height` in one batch: their transactions (records,
   * Ethereum-hash aliases, positions, event attributes), block heights and FinalizeBlock event
   * attributes; the last indexed height becomes at most `height`. Idempotent.
   */
  async rollbackTo(height: number): Promise<void> {
    const ops: BatchOp[] = [];
    const del = (key: Uint8Array) => ops.push({ type: 'del', key });
    const from = u64(height + 1);
    for await (const [key, hash] of this.kv.iterate({
      gte: cat('H', from),
      lt: prefixEnd(enc.encode('H')),
    })) {
      del(key.slice());
      const raw = await this.kv.get(cat('T', hash));
      if (!raw) continue;
      const rec = decodeRecord(hash, raw);
      // A record kept from an earlier block (a failed re-execution does not replace it) stays.
      if (rec.height <= height) continue;
      del(cat('T', hash));
      del(cat('A', keccak256(rec.tx)));
      const pos = cat(u64(rec.height), u32(rec.index));
      for (const e of rec.result.events) {
        if (e.type === '') continue;
        for (const a of e.attributes) {
          if (a.key === '' || !a.index) continue;
          del(cat('E', `${e.type}.${a.key}`, SEP, a.value, SEP, pos));
        }
      }
    }
    for await (const [key] of this.kv.iterate({ gte: cat('B', from), lt: prefixEnd(enc.encode('B')) }))
      del(key.slice());
    for await (const [key] of this.kv.iterate({ gte: enc.encode('F'), lt: prefixEnd(enc.encode('F')) })) {
      if (readU64(key, key.length - 8) > height) del(key.slice());
    }
    if ((await this.indexedHeight()) > height) ops.push({ type: 'put', key: LAST_KEY, value: u64(height) });
    await this.kv.write(ops, { sync: true });
  }

  /** Looks a transaction up by its CometBFT hash (sha256) or its Ethereum hash (keccak256). */
  async get(hash: Uint8Array): Promise<IndexedTx | undefined> {
    if (hash.length !== 32) return undefined;
    const raw = await this.kv.get(cat('T', hash));
    if (raw) return decodeRecord(hash, raw);
    const alias = await this.kv.get(cat('A', hash));
    if (!alias) return undefined;
    const viaAlias = await this.kv.get(cat('T', alias));
    return viaAlias ? decodeRecord(alias, viaAlias) : undefined;
  }

  /**
   * Transactions matching the query, ordered by (height, index). A tx.hash condition answers
   * directly (other conditions are then ignored, as CometBFT does).
   */
  async search(q: Query): Promise<IndexedTx[]> {
    const hashCond = q.conditions.find((c) => c.tag === TX_HASH_KEY);
    if (hashCond) {
      let hash: Uint8Array;
      try {
        const text = hashCond.arg?.text ?? '';
        if (!/^(0x)?([0-9a-fA-F]{2})*$/.test(text))
          throw new Error(`invalid hex string ${JSON.stringify(text)}`);
        hash = new Uint8Array(Buffer.from(text.replace(/^0x/, ''), 'hex'));
      } catch (err) {
        throw new IndexerQueryError(
          `error during searching for a hash in the query: ${(err as Error).message}`,
        );
      }
      const found = await this.get(hash);
      return found ? [found] : [];
    }

    let positions: Map<string, Uint8Array> | undefined;
    /** Conditions on DERIVED_TAGS: their candidates are checked against each record's events. */
    const derived: number[] = [];
    for (let i = 0; i < q.conditions.length; i++) {
      const cond = q.conditions[i];
      const found = new Map<string, Uint8Array>();
      if (cond.tag === TX_HEIGHT_KEY) {
        const range = heightRange(cond.op, cond.arg);
        if (range.max !== undefined && range.max < range.min) return [];
        const start = cat('H', u64(range.min));
        const end = range.max === undefined ? prefixEnd(enc.encode('H')) : cat('H', u64(range.max + 1));
        for await (const [key, hash] of this.kv.iterate({ gte: start, lt: end })) {
          const height = readU64(key, 1);
          if (!q.matchesValue(i, String(height))) continue;
          found.set(Buffer.from(key.subarray(1)).toString('hex'), hash);
        }
      } else {
        for await (const [key, value, hash] of this.scanTag(
          'E',
          cond.tag,
          cond.op === '=' && cond.arg?.type === 'string' ? cond.arg.text : undefined,
          12,
        )) {
          if (!q.matchesValue(i, value)) continue;
          found.set(Buffer.from(key.subarray(key.length - 12)).toString('hex'), hash);
        }
        if (DERIVED_TAGS.has(cond.tag)) {
          derived.push(i);
          await this.derivedCandidates(q, i, found);
        }
      }
      positions = positions ? intersect(positions, found) : found;
      if (positions.size === 0) return [];
    }
    if (!positions) return [];

    const ordered = [...positions.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const uniqueHashes: Uint8Array[] = [];
    const seen = new Set<string>();
    for (const [, hash] of ordered) {
      const id = Buffer.from(hash).toString('hex');
      if (!seen.has(id)) {
        seen.add(id);
        uniqueHashes.push(hash);
      }
    }
    const records = await this.kv.getMany(uniqueHashes.map((h) => cat('T', h)));
    const out: IndexedTx[] = [];
    records.forEach((raw, k) => {
      if (!raw) return;
      const rec = decodeRecord(uniqueHashes[k], raw);
      if (derived.every((i) => hasMatchingAttribute(q, i, rec))) out.push(rec);
    });
    return out.sort((a, b) => a.height - b.height || a.index - b.index);
  }

  /**
   * Adds to `found` (position -> hash) the transactions that may match condition `i` on a DERIVED_TAGS
   * attribute, from the keys that hold its value: `=` looks the hash up (T for txHash, A for
   * ethereumTxHash); any other operator walks H (txHash, whose value is the hash itself) or A
   * (ethereumTxHash) and keeps the values it accepts. The caller checks each record's events.
   */
  private async derivedCandidates(q: Query, i: number, found: Map<string, Uint8Array>): Promise<void> {
    const cond = q.conditions[i];
    const tm = cond.tag === ETH_TX_TM_HASH_KEY;
    let hashes: Uint8Array[] = [];
    if (cond.op === '=' && cond.arg?.type === 'string') {
      const text = cond.arg.text;
      if (tm && TM_HASH_FORM.test(text)) hashes = [new Uint8Array(Buffer.from(text, 'hex'))];
      else if (!tm && ETH_HASH_FORM.test(text)) {
        const alias = await this.kv.get(cat('A', Buffer.from(text.slice(2), 'hex')));
        if (alias) hashes = [alias];
      }
    } else if (tm) {
      for await (const [key, hash] of this.kv.iterate({
        gte: enc.encode('H'),
        lt: prefixEnd(enc.encode('H')),
      })) {
        if (q.matchesValue(i, hexUpper(hash))) found.set(Buffer.from(key.subarray(1)).toString('hex'), hash);
      }
      return;
    } else {
      for await (const [key, hash] of this.kv.iterate({
        gte: enc.encode('A'),
        lt: prefixEnd(enc.encode('A')),
      })) {
        if (q.matchesValue(i, `0x${hexLower(key.subarray(1))}`)) hashes.push(hash);
      }
    }
    const records = await this.kv.getMany(hashes.map((h) => cat('T', h)));
    records.forEach((raw, k) => {
      if (!raw) return;
      const rec = decodeRecord(hashes[k], raw);
      found.set(Buffer.from(cat(u64(rec.height), u32(rec.index))).toString('hex'), rec.hash);
    });
  }

  /** Heights of the blocks matching the query (block.height and FinalizeBlock event attributes), ascending. */
  async searchBlocks(q: Query): Promise<number[]> {
    let heights: Set<number> | undefined;
    for (let i = 0; i < q.conditions.length; i++) {
      const cond = q.conditions[i];
      const found = new Set<number>();
      if (cond.tag === BLOCK_HEIGHT_KEY) {
        const range = heightRange(cond.op, cond.arg);
        if (range.max !== undefined && range.max < range.min) return [];
        const start = cat('B', u64(range.min));
        const end = range.max === undefined ? prefixEnd(enc.encode('B')) : cat('B', u64(range.max + 1));
        for await (const [key] of this.kv.iterate({ gte: start, lt: end })) {
          const height = readU64(key, 1);
          if (q.matchesValue(i, String(height))) found.add(height);
        }
      } else {
        for await (const [key, value] of this.scanTag(
          'F',
          cond.tag,
          cond.op === '=' && cond.arg?.type === 'string' ? cond.arg.text : undefined,
          8,
        )) {
          if (q.matchesValue(i, value)) found.add(readU64(key, key.length - 8));
        }
      }
      heights = heights ? new Set([...heights].filter((h) => found.has(h))) : found;
      if (heights.size === 0) return [];
    }
    return [...(heights ?? [])].sort((a, b) => a - b);
  }

  /** Iterates `<kind><tag>\0<value>\0<suffix>` keys of one tag (one value when `exact` is given). */
  private async *scanTag(
    kind: 'E' | 'F',
    tag: string,
    exact: string | undefined,
    suffixLen: number,
  ): AsyncIterable<[Uint8Array, string, Uint8Array]> {
    const prefix = exact === undefined ? cat(kind, tag, SEP) : cat(kind, tag, SEP, exact, SEP);
    const tagLen = cat(kind, tag, SEP).length;
    for await (const [key, hash] of this.kv.iterate({ gte: prefix, lt: prefixEnd(prefix) })) {
      if (key.length < tagLen + suffixLen + 1 || key[key.length - suffixLen - 1] !== SEP) continue;
      const value = dec.decode(key.subarray(tagLen, key.length - suffixLen - 1));
      yield [key, value, hash];
    }
  }
}

/** Whether an indexed attribute of `rec`'s events with condition `i`'s tag has a value it accepts. */
function hasMatchingAttribute(q: Query, i: number, rec: IndexedTx): boolean {
  const tag = q.conditions[i].tag;
  for (const e of rec.result.events) {
    if (e.type === '') continue;
    for (const a of e.attributes) {
      if (a.key !== '' && a.index && `${e.type}.${a.key}` === tag && q.matchesValue(i, a.value)) return true;
    }
  }
  return false;
}

function intersect(a: Map<string, Uint8Array>, b: Map<string, Uint8Array>): Map<string, Uint8Array> {
  const out = new Map<string, Uint8Array>();
  for (const [k, v] of a) {
    const w = b.get(k);
    if (w && bytesEqual(v, w)) out.set(k, v);
  }
  return out;
}

/** Height bounds worth scanning for a numeric condition; other conditions scan everything. */
function heightRange(
  op: string,
  arg: { type: string; text: string } | undefined,
): { min: number; max?: number } {
  if (arg?.type !== 'number') return { min: 0 };
  const n = parseNumberValue(arg.text);
  if (!n) return { min: 0 };
  const whole = n.int > 2n ** 52n ? 2 ** 52 : Number(n.int); // beyond any real height
  const exact = n.frac === '';
  switch (op) {
    case '=':
      return exact ? { min: whole, max: whole } : { min: 1, max: 0 };
    case '<':
      return { min: 0, max: exact ? whole - 1 : whole };
    case '<=':
      return { min: 0, max: whole };
    case '>':
      return { min: exact ? whole + 1 : whole + 1 };
    case '>=':
      return { min: exact ? whole : whole + 1 };
    default:
      return { min: 0 };
  }
}
