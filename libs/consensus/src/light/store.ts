// The light client's store: verified signed headers and validator sets, nothing else.
// Keys (heights as 8-byte big-endian):
//   "ls:meta"       {base, latest}: lowest and highest verified heights (tagged JSON)
//   "ls:s:" h       signed header of h: header + commit (protobuf SignedHeader)
//   "ls:v:" h       validator set of h (protobuf ValidatorSet); also stored for latest + 1 when
//                   the next set was received and matched the latest header's next_validators_hash
//   "ls:h:" hash    height of the header with this hash (8 bytes)
// Verified heights may have gaps (skipping verification); every read of a missing height is undefined.
import type { BatchOp, KVStore } from '@noded/storage';
import type { Validator } from '@noded/types';
import { decodeTagged, encodeTagged } from '../codec/json.js';
import { headerHash } from '../hash.js';
import { decodeSignedHeader, decodeValidatorSet, encodeSignedHeader, encodeValidatorSet } from './codec.js';
import type { LightBlock, SignedHeader } from './verify.js';

const enc = new TextEncoder();

function key(prefix: string, height?: number): Uint8Array {
  const p = enc.encode(prefix);
  if (height === undefined) return p;
  const out = new Uint8Array(p.length + 8);
  out.set(p);
  new DataView(out.buffer).setBigUint64(p.length, BigInt(height));
  return out;
}

function hashKey(hash: Uint8Array): Uint8Array {
  const p = enc.encode('ls:h:');
  const out = new Uint8Array(p.length + hash.length);
  out.set(p);
  out.set(hash, p.length);
  return out;
}

export class LightStore {
  private latestLb: LightBlock | undefined;
  private earliestLb: LightBlock | undefined;

  private constructor(
    private readonly kv: KVStore,
    private baseHeight: number,
    private latestHeight: number,
  ) {}

  static async open(kv: KVStore): Promise<LightStore> {
    const meta = await kv.get(key('ls:meta'));
    const m = meta ? decodeTagged<{ base: number; latest: number }>(meta) : { base: 0, latest: 0 };
    const store = new LightStore(kv, m.base, m.latest);
    if (m.latest > 0) {
      store.latestLb = await store.lightBlock(m.latest);
      store.earliestLb = await store.lightBlock(m.base);
    }
    return store;
  }

  /** Lowest verified height (0 when nothing is stored). */
  get base(): number {
    return this.baseHeight;
  }

  /** Highest verified height (0 when nothing is stored). */
  get latest(): number {
    return this.latestHeight;
  }

  latestBlock(): LightBlock | undefined {
    return this.latestLb;
  }

  earliestBlock(): LightBlock | undefined {
    return this.earliestLb;
  }

  /**
   * Stores verified light blocks (any heights) in one synced batch, with the validator set of the
   * height after the highest of them when it is known (`next`, already checked against that
   * header's next_validators_hash).
   */
  async save(blocks: LightBlock[], next?: { height: number; validators: Validator[] }): Promise<void> {
    if (blocks.length === 0 && !next) return;
    const ops: BatchOp[] = [];
    let base = this.baseHeight;
    let latest = this.latestHeight;
    let latestLb = this.latestLb;
    let earliestLb = this.earliestLb;
    for (const lb of blocks) {
      const h = lb.header.height;
      const heightBytes = new Uint8Array(8);
      new DataView(heightBytes.buffer).setBigUint64(0, BigInt(h));
      ops.push(
        { type: 'put', key: key('ls:s:', h), value: encodeSignedHeader(lb) },
        { type: 'put', key: key('ls:v:', h), value: encodeValidatorSet(lb.validators) },
        { type: 'put', key: hashKey(headerHash(lb.header)), value: heightBytes },
      );
      if (base === 0 || h < base) {
        base = h;
        earliestLb = lb;
      }
      if (h > latest) {
        latest = h;
        latestLb = lb;
      }
    }
    if (next)
      ops.push({ type: 'put', key: key('ls:v:', next.height), value: encodeValidatorSet(next.validators) });
    ops.push({ type: 'put', key: key('ls:meta'), value: encodeTagged({ base, latest }) });
    await this.kv.write(ops, { sync: true });
    this.baseHeight = base;
    this.latestHeight = latest;
    this.latestLb = latestLb;
    this.earliestLb = earliestLb;
  }

  async signedHeader(height: number): Promise<SignedHeader | undefined> {
    if (height < this.baseHeight || height > this.latestHeight || this.latestHeight === 0) return undefined;
    const b = await this.kv.get(key('ls:s:', height));
    return b ? decodeSignedHeader(b) : undefined;
  }

  async validators(height: number): Promise<Validator[] | undefined> {
    const b = await this.kv.get(key('ls:v:', height));
    return b ? decodeValidatorSet(b) : undefined;
  }

  async lightBlock(height: number): Promise<LightBlock | undefined> {
    const [sh, vals] = await Promise.all([this.signedHeader(height), this.validators(height)]);
    return sh && vals ? { ...sh, validators: vals } : undefined;
  }

  async heightOfHash(hash: Uint8Array): Promise<number | undefined> {
    const v = await this.kv.get(hashKey(hash));
    return v ? Number(new DataView(v.buffer, v.byteOffset, 8).getBigUint64(0)) : undefined;
  }
}
