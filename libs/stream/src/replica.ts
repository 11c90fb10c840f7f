// A read replica's store (the state-store service): applies the executor's committed heights in
// order onto its own KVStore, idempotently by height, each in one synced write, after checking the
// chain id, that the height is the next one and that its parent hash is the block applied last. A
// height that does not chain is refused with the reason and changes nothing.
import type { CommittedRecord } from '../../execution/index.js';
import type { BatchOp, KVStore } from '../../storage/index.js';
import { decodeCommitted, encodeCommitted } from './codec.js';

const K = {
  meta: 0x01, // + name -> value
  height: 0x40, // + height(8) -> CommittedHeight bytes
  account: 0x10, // + address(20) -> account RLP
  storage: 0x11, // + address(20) + slot(32) -> value
  code: 0x12, // + code hash(32) -> code
  tx: 0x43, // + tx hash(32) -> height(8) + index(4)
} as const;

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

export type ReplicaErrorCode = 'WRONG_CHAIN' | 'GAP' | 'PARENT_MISMATCH';

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
  ) {}

  static async open(kv: KVStore, chainId: string): Promise<ReplicaStore> {
    const storedChain = await kv.get(metaKey('chainId'));
    if (storedChain && dec.decode(storedChain) !== chainId) {
      throw new ReplicaError(
        'WRONG_CHAIN',
        `this replica store holds chain ${dec.decode(storedChain)}, not ${chainId}`,
      );
    }
    const h = await kv.get(metaKey('height'));
    const hash = await kv.get(metaKey('blockHash'));
    return new ReplicaStore(
      kv,
      chainId,
      h && hash ? { height: Number(dec.decode(h)), blockHash: hash } : undefined,
    );
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
    const ops: BatchOp[] = [{ type: 'put', key: key(K.height, be64(r.height)), value: encodeCommitted(r) }];
    for (const c of r.stateChanges) {
      const k = key(c.kind === 'account' ? K.account : K.storage, c.key);
      ops.push(c.value === undefined ? { type: 'del', key: k } : { type: 'put', key: k, value: c.value });
    }
    for (const c of r.codes) ops.push({ type: 'put', key: key(K.code, c.codeHash), value: c.code });
    r.txs.forEach((t, i) => {
      const loc = new Uint8Array(12);
      loc.set(be64(r.height));
      new DataView(loc.buffer).setUint32(8, i);
      ops.push({ type: 'put', key: key(K.tx, t.hash), value: loc });
    });
    ops.push(
      { type: 'put', key: metaKey('chainId'), value: enc.encode(this.chainId) },
      { type: 'put', key: metaKey('height'), value: enc.encode(String(r.height)) },
      { type: 'put', key: metaKey('blockHash'), value: r.blockHash },
    );
    await this.kv.write(ops, { sync: true });
    this.tip = { height: r.height, blockHash: r.blockHash };
    return true;
  }

  /** The committed height's record, as applied. */
  async record(height: number): Promise<CommittedRecord | undefined> {
    const v = await this.kv.get(key(K.height, be64(height)));
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
