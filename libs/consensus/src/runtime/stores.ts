// The block store and the consensus state store, over the KVStore interface.
// Block store keys (heights as 8-byte big-endian):
//   "bs:meta"            {base, height}                         (tagged JSON)
//   "bs:b:" h            block (protobuf encoding of tendermint.types.Block)
//   "bs:c:" h            seen commit of block h (protobuf Commit)
//   "bs:ec:" h           extended commit of block h (protobuf ExtendedCommit), only where vote
//                        extensions are on: the next proposer's input (the top one), and what
//                        block sync sends with each block so that a node catching up has it too
//   "bs:m:" h            block meta {blockId, blockSize, header, numTxs} (tagged JSON)
//   "bs:h:" hash         height (8 bytes)
// State store keys:
//   "st:state"           chain state (tagged JSON)
//   "st:v:" h            validator set of height h;  "st:p:" h  consensus params of height h
//   "st:r:" h            FinalizeBlockResponse of height h (block results)
//   "st:ev:p:" hash      pending evidence;  "st:ev:c:" hash  height it was committed at
import type { BatchOp, KVStore } from '@noded/storage';
import type {
  Block,
  BlockId,
  BlockMeta,
  Commit,
  ConsensusParams,
  DuplicateVoteEvidence,
  FinalizeBlockResponse,
} from '@noded/types';
import {
  type ChainState,
  encodeChainStateRecords,
  loadChainState,
  loadValidatorSet,
  type StoredChainState,
  type StoredValidatorSet,
} from '../chainstate.js';
import { decodeTagged, encodeTagged } from '../codec/json.js';
import {
  decodeBlock,
  decodeCommit,
  decodeExtendedCommit,
  encodeCommit,
  encodeExtendedCommit,
} from '../codec/types.js';
import { adoptBlockBytes, blockBytes, blockSize } from '../hash.js';
import type { ValidatorSet } from '../validators.js';

const enc = new TextEncoder();

/** The few key prefixes in bytes, encoded once (keys are built for every record of every block). */
const prefixes = new Map<string, Uint8Array>();
function prefixBytes(prefix: string): Uint8Array {
  let p = prefixes.get(prefix);
  if (!p) {
    p = enc.encode(prefix);
    prefixes.set(prefix, p);
  }
  return p;
}

function key(prefix: string, height?: number): Uint8Array {
  const p = prefixBytes(prefix);
  if (height === undefined) return p.slice();
  const out = new Uint8Array(p.length + 8);
  out.set(p);
  new DataView(out.buffer).setBigUint64(p.length, BigInt(height));
  return out;
}

function keyBytes(prefix: string, suffix: Uint8Array): Uint8Array {
  const p = prefixBytes(prefix);
  const out = new Uint8Array(p.length + suffix.length);
  out.set(p);
  out.set(suffix, p.length);
  return out;
}

export class BlockStore {
  /** A block was saved without fsync since the last synced write (block sync's batched durability). */
  private unsynced = false;

  private constructor(
    private readonly kv: KVStore,
    public base: number,
    public height: number,
  ) {}

  static async open(kv: KVStore): Promise<BlockStore> {
    const meta = await kv.get(key('bs:meta'));
    const m = meta ? decodeTagged<{ base: number; height: number }>(meta) : { base: 0, height: 0 };
    return new BlockStore(kv, m.base, m.height);
  }

  /**
   * Stores block, seen commit, meta and hash index in one batch, synced unless `sync` is false
   * (block sync while catching up: a later synced write, or sync(), makes it durable; RocksDB's
   * WAL fsync covers every write before it); with `extendedCommit` also that, kept for every
   * height (block sync serves it with the block, as CometBFT does).
   */
  async saveBlock(
    block: Block,
    blockId: BlockId,
    seenCommit: Commit,
    extendedCommit: Commit | null = null,
    sync = true,
  ): Promise<void> {
    const h = block.header.height;
    const meta: BlockMeta = {
      blockId,
      blockSize: blockSize(block),
      header: block.header,
      numTxs: block.data.txs.length,
    };
    const base = this.base === 0 ? h : this.base;
    const heightBytes = new Uint8Array(8);
    new DataView(heightBytes.buffer).setBigUint64(0, BigInt(h));
    const ops: BatchOp[] = [
      { type: 'put', key: key('bs:b:', h), value: blockBytes(block) },
      { type: 'put', key: key('bs:c:', h), value: encodeCommit(seenCommit) },
      { type: 'put', key: key('bs:m:', h), value: encodeTagged(meta) },
      { type: 'put', key: keyBytes('bs:h:', blockId.hash), value: heightBytes },
      { type: 'put', key: key('bs:meta'), value: encodeTagged({ base, height: Math.max(h, this.height) }) },
    ];
    if (extendedCommit) {
      ops.push({ type: 'put', key: key('bs:ec:', h), value: encodeExtendedCommit(extendedCommit) });
    }
    await this.kv.write(ops, { sync });
    this.unsynced = !sync;
    this.base = base;
    this.height = Math.max(h, this.height);
  }

  /** Makes the blocks saved without fsync durable (one synced write of the meta record); a no-op when none are. */
  async sync(): Promise<void> {
    if (!this.unsynced) return;
    const meta = encodeTagged({ base: this.base, height: this.height });
    await this.kv.write([{ type: 'put', key: key('bs:meta'), value: meta }], { sync: true });
    this.unsynced = false;
  }

  /**
   * Deletes every block above `height` (block, seen commit, meta, hash index) and moves the top to
   * `height`, in one synced batch (the dev chain's evm_revert). Idempotent.
   */
  async rollbackTo(height: number): Promise<void> {
    const ops: BatchOp[] = [];
    for (let h = height + 1; h <= this.height; h++) {
      const m = await this.loadBlockMeta(h);
      if (m) ops.push({ type: 'del', key: keyBytes('bs:h:', m.blockId.hash) });
      for (const p of ['bs:b:', 'bs:c:', 'bs:ec:', 'bs:m:']) ops.push({ type: 'del', key: key(p, h) });
    }
    const base = height < this.base || height === 0 ? 0 : this.base;
    ops.push({ type: 'put', key: key('bs:meta'), value: encodeTagged({ base, height }) });
    await this.kv.write(ops, { sync: true });
    this.unsynced = false;
    this.base = base;
    this.height = height;
  }

  async loadBlock(height: number): Promise<Block | undefined> {
    const b = await this.kv.get(key('bs:b:', height));
    if (!b) return undefined;
    // The stored bytes are the block's encoding: a block served to a peer is sent as read.
    const block = decodeBlock(b);
    adoptBlockBytes(block, b);
    return block;
  }

  async heightOfHash(hash: Uint8Array): Promise<number | undefined> {
    const v = await this.kv.get(keyBytes('bs:h:', hash));
    return v ? Number(new DataView(v.buffer, v.byteOffset, 8).getBigUint64(0)) : undefined;
  }

  async loadBlockMeta(height: number): Promise<BlockMeta | undefined> {
    const m = await this.kv.get(key('bs:m:', height));
    return m ? decodeTagged<BlockMeta>(m) : undefined;
  }

  /** The extended commit of `height` (stored only where extensions are on). */
  async loadExtendedCommit(height: number): Promise<Commit | undefined> {
    const c = await this.kv.get(key('bs:ec:', height));
    return c ? decodeExtendedCommit(c) : undefined;
  }

  async loadSeenCommit(height: number): Promise<Commit | undefined> {
    const c = await this.kv.get(key('bs:c:', height));
    return c ? decodeCommit(c) : undefined;
  }

  /** The canonical commit (next block's last_commit) when stored, else the seen commit. */
  async loadCommit(height: number): Promise<{ commit: Commit; canonical: boolean } | undefined> {
    if (height < this.base || height > this.height) return undefined;
    if (height < this.height) {
      const next = await this.loadBlock(height + 1);
      if (next?.lastCommit) return { commit: next.lastCommit, canonical: true };
    }
    const seen = await this.loadSeenCommit(height);
    return seen ? { commit: seen, canonical: false } : undefined;
  }
}

/**
 * The puts that store `s`: the state, the validator sets of its next two heights (and of its own
 * height once past the initial one) and the params of the next height, each value encoded once.
 */
function stateRecords(s: ChainState): BatchOp[] {
  const h = s.lastBlockHeight;
  const r = encodeChainStateRecords(s);
  const ops: BatchOp[] = [
    { type: 'put', key: key('st:state'), value: r.state },
    { type: 'put', key: key('st:v:', h + 1), value: r.validators },
    { type: 'put', key: key('st:v:', h + 2), value: r.nextValidators },
    { type: 'put', key: key('st:p:', h + 1), value: r.consensusParams },
  ];
  if (h >= s.initialHeight) ops.push({ type: 'put', key: key('st:v:', h), value: r.lastValidators });
  return ops;
}

export class StateStore {
  constructor(private readonly kv: KVStore) {}

  async loadState(): Promise<ChainState | undefined> {
    const s = await this.kv.get(key('st:state'));
    return s ? loadChainState(decodeTagged<StoredChainState>(s)) : undefined;
  }

  /**
   * Saves the state with the validator sets and params it determines, synced unless `sync` is
   * false (block sync: a lost state is rebuilt from the synced block results at the next start).
   */
  async saveState(s: ChainState, sync = true): Promise<void> {
    await this.kv.write(stateRecords(s), { sync });
  }

  /**
   * Makes `s` (a state saved at its height earlier) the current state again: block results above
   * its height and the validator sets and params past what it determines are deleted, in the same
   * synced batch as the state (the dev chain's evm_revert). Idempotent.
   */
  async rollbackTo(s: ChainState): Promise<void> {
    const h = s.lastBlockHeight;
    const ops: BatchOp[] = [];
    const above = async (prefix: string, from: number) => {
      for await (const [k] of this.kv.iterate({
        gte: key(prefix, from),
        lt: enc.encode(`${prefix.slice(0, -1)};`),
      }))
        ops.push({ type: 'del', key: k.slice() });
    };
    await above('st:r:', h + 1);
    await above('st:v:', h + 3);
    await above('st:p:', h + 2);
    ops.push(...stateRecords(s));
    await this.kv.write(ops, { sync: true });
  }

  async loadValidators(height: number): Promise<ValidatorSet | undefined> {
    const v = await this.kv.get(key('st:v:', height));
    return v ? loadValidatorSet(decodeTagged<StoredValidatorSet>(v)) : undefined;
  }

  async loadParams(height: number): Promise<ConsensusParams | undefined> {
    const v = await this.kv.get(key('st:p:', height));
    return v ? decodeTagged<ConsensusParams>(v) : undefined;
  }

  /** Saves a block's FinalizeBlock results, synced unless `sync` is false (block sync while catching up). */
  async saveResults(height: number, res: FinalizeBlockResponse, sync = true): Promise<void> {
    await this.kv.write([{ type: 'put', key: key('st:r:', height), value: encodeTagged(res) }], { sync });
  }

  async loadResults(height: number): Promise<FinalizeBlockResponse | undefined> {
    const v = await this.kv.get(key('st:r:', height));
    return v ? decodeTagged<FinalizeBlockResponse>(v) : undefined;
  }

  async savePendingEvidence(hash: Uint8Array, e: DuplicateVoteEvidence): Promise<void> {
    await this.kv.write([{ type: 'put', key: keyBytes('st:ev:p:', hash), value: encodeTagged(e) }], {
      sync: true,
    });
  }

  async listPendingEvidence(): Promise<DuplicateVoteEvidence[]> {
    const out: DuplicateVoteEvidence[] = [];
    for await (const [, v] of this.kv.iterate({ gte: enc.encode('st:ev:p:'), lt: enc.encode('st:ev:p;') })) {
      out.push(decodeTagged<DuplicateVoteEvidence>(v));
    }
    return out;
  }

  /** Marks evidence committed at `height` and drops it from the pending set, in one batch. */
  async commitEvidence(hashes: Uint8Array[], height: number, expired: Uint8Array[]): Promise<void> {
    if (hashes.length === 0 && expired.length === 0) return;
    const h = new Uint8Array(8);
    new DataView(h.buffer).setBigUint64(0, BigInt(height));
    await this.kv.write(
      [
        ...hashes.flatMap((x) => [
          { type: 'del' as const, key: keyBytes('st:ev:p:', x) },
          { type: 'put' as const, key: keyBytes('st:ev:c:', x), value: h },
        ]),
        ...expired.map((x) => ({ type: 'del' as const, key: keyBytes('st:ev:p:', x) })),
      ],
      { sync: true },
    );
  }

  async isEvidenceCommitted(hash: Uint8Array): Promise<boolean> {
    return (await this.kv.get(keyBytes('st:ev:c:', hash))) !== undefined;
  }
}
