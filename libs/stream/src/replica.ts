// A read replica's store (the state-store service): applies the executor's committed heights in
// order onto its own KVStore, idempotently by height, each in one synced write, after checking the
// chain id, that the height is the next one, that its parent hash is the block applied last and
// (with a CommitChecker, commit.ts) that more than 2/3 of its validator set signed it. A height that
// does not chain is refused with the reason and changes nothing.
//
// The write is the executor's own write batch of the height (CommittedRecord.kvOps), so the store
// holds the same keys as the executor's application.db (docs/execution.md "Storage layout") and an
// Executor opened on it answers every read as the executor would. The replica adds its own meta
// names (replicaHeight, replicaBlockHash, layout) and the records themselves under 0x60, a prefix
// application.db does not use.
import type { CommittedRecord } from '@noded/execution';
import type { BatchOp, KVStore } from '@noded/storage';
import { decodeCommitted, encodeCommitted } from './codec.js';
import type { CommitChecker } from './commit.js';

const K = {
  meta: 0x01, // + name -> value (application.db's meta table; the replica's names below)
  account: 0x10, // + address(20) -> account RLP (application.db's)
  storage: 0x11, // + address(20) + slot(32) -> value (application.db's)
  code: 0x12, // + code hash(32) -> code (application.db's)
  tx: 0x43, // + tx hash(32) -> height(8) + index(4) (application.db's)
  record: 0x60, // + height(8) -> CommittedHeight bytes (the replica's own)
} as const;
/** The replica's meta names; none is one of application.db's (libs/execution META). */
const M = {
  chainId: 'replicaChainId',
  height: 'replicaHeight',
  blockHash: 'replicaBlockHash',
  layout: 'replicaLayout',
};
/** 2: the executor's own keys (kvOps). 1 (no marker) was flat state and records under 0x40. */
const LAYOUT = '2';

const enc = new TextEncoder();
const dec = new TextDecoder();
const metaKey = (name: string) => Uint8Array.from([K.meta, ...enc.encode(name)]);
const be64 = (n: number) => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(n));
  return b;
};
const key = (prefix: number, ...parts: Uint8Array[]) => {
  const out = new Uint8Array(1 + parts.reduce((n, p) => n + p.length, 0));
  out[0] = prefix;
  let at = 1;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};
const hex = (b: Uint8Array) => `0x${Buffer.from(b).toString('hex')}`;

export type ReplicaErrorCode =
  | 'WRONG_CHAIN'
  | 'GAP'
  | 'PARENT_MISMATCH'
  | 'NO_KV_OPS'
  | 'BAD_KV_OPS'
  | 'OLD_LAYOUT';

export class ReplicaError extends Error {
  constructor(
    readonly code: ReplicaErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ReplicaError';
  }
}

export class ReplicaStore {
  private constructor(
    private readonly kv: KVStore,
    readonly chainId: string,
    private tip: { height: number; blockHash: Uint8Array } | undefined,
    private readonly commits: CommitChecker | undefined,
    /** The record applied last (the commit check chains each height from its light block and app hash). */
    private last: CommittedRecord | undefined,
  ) {}

  /**
   * `commits`: check the commit of every height after the genesis record (the state-store always
   * does; without it only the chain id, height and parent hash are checked).
   */
  static async open(kv: KVStore, chainId: string, commits?: CommitChecker): Promise<ReplicaStore> {
    const layout = await kv.get(metaKey(M.layout));
    if ((await kv.get(metaKey('blockHash'))) !== undefined || (layout && dec.decode(layout) !== LAYOUT)) {
      throw new ReplicaError(
        'OLD_LAYOUT',
        `this replica store was written in an older layout (${layout ? `layout ${dec.decode(layout)}` : 'flat state'}); delete it and the replica rebuilds it from the stream`,
      );
    }
    const storedChain = await kv.get(metaKey(M.chainId));
    if (storedChain && dec.decode(storedChain) !== chainId) {
      throw new ReplicaError(
        'WRONG_CHAIN',
        `this replica store holds chain ${dec.decode(storedChain)}, not ${chainId}`,
      );
    }
    const h = await kv.get(metaKey(M.height));
    const hash = await kv.get(metaKey(M.blockHash));
    const tip = h && hash ? { height: Number(dec.decode(h)), blockHash: hash } : undefined;
    const lastBytes = tip ? await kv.get(key(K.record, be64(tip.height))) : undefined;
    return new ReplicaStore(kv, chainId, tip, commits, lastBytes ? decodeCommitted(lastBytes) : undefined);
  }

  /** The last applied height (-1 before the first; the first is the genesis height). */
  get height(): number {
    return this.tip?.height ?? -1;
  }

  get blockHash(): Uint8Array | undefined {
    return this.tip?.blockHash;
  }

  /**
   * Applies one height. A height at or below the tip is skipped (false): the stream may deliver
   * it again. The first applied must be the genesis record (no transactions); each later one must
   * follow the tip and name it as its parent.
   */
  async apply(r: CommittedRecord): Promise<boolean> {
    if (r.chainId !== this.chainId) {
      throw new ReplicaError(
        'WRONG_CHAIN',
        `height ${r.height} is for chain ${r.chainId}, this replica follows ${this.chainId}`,
      );
    }
    const tip = this.tip;
    if (tip && r.height <= tip.height) return false;
    if (tip && r.height !== tip.height + 1) {
      throw new ReplicaError('GAP', `height ${r.height} does not follow the replica's height ${tip.height}`);
    }
    if (!tip && (r.txs.length > 0 || r.parentHash.some((b) => b !== 0))) {
      throw new ReplicaError(
        'GAP',
        `height ${r.height} is not a genesis record: a replica starts from the stream's first record, the genesis state`,
      );
    }
    if (tip && Buffer.compare(r.parentHash, tip.blockHash) !== 0) {
      throw new ReplicaError(
        'PARENT_MISMATCH',
        `height ${r.height} names parent ${hex(r.parentHash)}, but the block applied at ${tip.height} is ${hex(tip.blockHash)}`,
      );
    }
    // The commit: more than 2/3 of the height's validator set signed the block this record carries
    // (a CommitCheckError names what is wrong; nothing is written).
    if (tip && this.commits) {
      if (!this.last)
        throw new ReplicaError('GAP', `the record of height ${tip.height} is missing from this replica`);
      this.commits.check(r, this.last);
    }
    if (r.kvOps.length === 0) {
      throw new ReplicaError(
        'NO_KV_OPS',
        `height ${r.height} carries no kv_ops: it comes from an executor older than the state-store, whose reads need the executor's write batch`,
      );
    }
    const ops: BatchOp[] = r.kvOps.map((o) =>
      o.value === undefined ? { type: 'del', key: o.key } : { type: 'put', key: o.key, value: o.value },
    );
    for (const o of ops) {
      if (
        o.key[0] === K.record ||
        (o.key[0] === K.meta && dec.decode(o.key.subarray(1)).startsWith('replica'))
      ) {
        throw new ReplicaError(
          'BAD_KV_OPS',
          `height ${r.height}: kv_ops writes ${hex(o.key)}, a key of the replica's own, not of application.db`,
        );
      }
    }
    ops.push(
      { type: 'put', key: key(K.record, be64(r.height)), value: encodeCommitted(r) },
      { type: 'put', key: metaKey(M.layout), value: enc.encode(LAYOUT) },
      { type: 'put', key: metaKey(M.chainId), value: enc.encode(this.chainId) },
      { type: 'put', key: metaKey(M.height), value: enc.encode(String(r.height)) },
      { type: 'put', key: metaKey(M.blockHash), value: r.blockHash },
    );
    await this.kv.write(ops, { sync: true });
    this.tip = { height: r.height, blockHash: r.blockHash };
    this.last = r;
    return true;
  }

  /** The committed height's record, as applied. */
  async record(height: number): Promise<CommittedRecord | undefined> {
    const v = await this.kv.get(key(K.record, be64(height)));
    return v ? decodeCommitted(v) : undefined;
  }

  /** The account RLP of `address` (20 bytes) at the tip, undefined when it does not exist. */
  account(address: Uint8Array): Promise<Uint8Array | undefined> {
    return this.kv.get(key(K.account, address));
  }

  storage(address: Uint8Array, slot: Uint8Array): Promise<Uint8Array | undefined> {
    return this.kv.get(key(K.storage, address, slot));
  }

  code(codeHash: Uint8Array): Promise<Uint8Array | undefined> {
    return this.kv.get(key(K.code, codeHash));
  }

  /** Where a transaction is: its height and index in the block. */
  async txLocation(hash: Uint8Array): Promise<{ height: number; index: number } | undefined> {
    const v = await this.kv.get(key(K.tx, hash));
    if (!v) return undefined;
    const view = new DataView(v.buffer, v.byteOffset, v.byteLength);
    return { height: Number(view.getBigUint64(0)), index: view.getUint32(8) };
  }
}
