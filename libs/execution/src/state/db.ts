// The persistent world state: flat latest tables (one get per account or slot), history of every
// change by height (for queries at older heights, and for pruning), and the Merkle Patricia tries
// whose nodes are stored by path. Hot entries stay in memory caches; the tries are hashed once per
// block.
//
// Reading a value "at height h": the first recorded change after h holds the value before that
// change, i.e. the value at h; with no later change the latest value is current. Blocks being
// committed (and the last few committed) keep their changes in memory (`diffs`), so reads that race
// a commit still see a consistent height.

import { keccak256 } from '@noded/crypto';
import { type BatchOp, hasSyncReads, type KVStore, type SyncReader } from '@noded/storage';
import { ChainError } from '@noded/types';
import { be64, concat, equal, fromHex, toKey } from '../bytes.js';
import { rlpEncode } from '../rlp.js';
import { HIST_PREFIX, heightKey, LATEST_PREFIX, latestKey, P, type Table } from '../store/keys.js';
import { EMPTY_TRIE_ROOT, MerkleTrie, type NodeChange } from '../trie/mpt.js';
import { type AccountData, decodeAccount, EMPTY_CODE_HASH, encodeAccount } from './account.js';

export const ACCOUNT_TRIE_OWNER = `00${'0'.repeat(40)}`;
export const storageOwner = (addr: string): string => `01${addr}`;

/** What one block changed, as the EVM state manager accumulated it. */
export interface BlockOverlay {
  /** address (40 hex) -> final account, null when deleted. */
  accounts: Map<string, AccountData | null>;
  /** address -> slot (64 hex) -> value (minimal bytes; empty means zero). */
  storage: Map<string, Map<string, Uint8Array>>;
  /** Addresses whose committed storage is wiped (deleted or re-created accounts). */
  cleared: Set<string>;
  /** codeHash (64 hex) -> code deployed in the block. */
  code: Map<string, Uint8Array>;
}

export interface StateChange {
  table: Table;
  k: string;
  old: Uint8Array | undefined;
  value: Uint8Array | undefined;
}

export interface BuiltState {
  height: number;
  stateRoot: Uint8Array;
  changes: StateChange[];
  code: Array<[string, Uint8Array]>;
  /** Sum over changed accounts of (new balance - old balance). */
  balanceDelta: bigint;
}

interface RecentDiff {
  height: number;
  /** latest key hex -> value before this block. */
  old: Map<string, Uint8Array | undefined>;
}

export class PrunedStateError extends ChainError {
  constructor(
    readonly height: number,
    readonly keepRecent: number,
  ) {
    super(
      -32000,
      `historical state at height ${height} is pruned (this full node keeps the last ${keepRecent} heights); use an archive node`,
    );
    this.name = 'PrunedStateError';
  }
}

export interface StateDbOptions {
  mode: 'full' | 'archive';
  keepRecent: number;
  /** Entries kept in the account and slot caches. */
  cacheEntries?: number;
  /**
   * Also journal each block's history keys in archive mode (full mode always does, for pruning):
   * the dev chain's evm_revert undoes blocks from the journals (rollbackOps).
   */
  journal?: boolean;
}

const RECENT_DIFFS = 8;
const PRUNE_JOURNALS_PER_COMMIT = 8;

function encodeHist(v: Uint8Array | undefined): Uint8Array {
  if (v === undefined) return Uint8Array.of(0);
  const out = new Uint8Array(v.length + 1);
  out[0] = 1;
  out.set(v, 1);
  return out;
}

function decodeHist(b: Uint8Array): Uint8Array | undefined {
  return b[0] === 0 ? undefined : b.slice(1);
}

/** The latest-value prefix of a history prefix. */
function latestPrefixOf(histPrefix: number): number {
  for (const t of ['account', 'storage', 'node'] as const)
    if (HIST_PREFIX[t] === histPrefix) return LATEST_PREFIX[t];
  throw new ChainError(-32000, `state rollback: ${histPrefix} is not a history table prefix`);
}

function sameBytes(a: Uint8Array | undefined, b: Uint8Array | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return equal(a, b);
}

export class StateDb {
  /** Height of the committed state (-1 before genesis). */
  latest = -1;
  /** Lowest height whose state can be read. */
  oldest = 0;
  stateRoot: Uint8Array = EMPTY_TRIE_ROOT;
  private pendingOldest = 0;
  private epoch = 0;
  private readonly acctCache = new Map<string, AccountData | null>();
  private readonly slotCache = new Map<string, Uint8Array>();
  private readonly codeCache = new Map<string, Uint8Array>();
  private diffs: RecentDiff[] = [];
  private accountTrie: MerkleTrie;
  private storageTries = new Map<string, MerkleTrie>();
  private readonly cacheEntries: number;
  /** Synchronous point reads when the engine has them (about 10x faster for one cold key). */
  private readonly sync: SyncReader | undefined;

  constructor(
    readonly kv: KVStore,
    readonly opts: StateDbOptions,
  ) {
    this.cacheEntries = opts.cacheEntries ?? 300_000;
    this.sync = hasSyncReads(kv) ? kv : undefined;
    this.accountTrie = this.latestTrie(ACCOUNT_TRIE_OWNER, EMPTY_TRIE_ROOT);
  }

  /** Sets the committed position (from the meta table at startup). */
  init(latest: number, oldest: number, stateRoot: Uint8Array): void {
    this.latest = latest;
    this.oldest = oldest;
    this.pendingOldest = oldest;
    this.stateRoot = stateRoot;
    this.resetTries();
  }

  /** Rebuilds the in-memory tries from the committed root (after a failed block). */
  resetTries(): void {
    this.accountTrie = this.latestTrie(ACCOUNT_TRIE_OWNER, this.stateRoot);
    this.storageTries.clear();
  }

  private getMany(keys: Uint8Array[]): Promise<Array<Uint8Array | undefined>> {
    return this.sync ? Promise.resolve(this.sync.getManySync(keys)) : this.kv.getMany(keys);
  }

  private latestTrie(owner: string, root: Uint8Array): MerkleTrie {
    return new MerkleTrie(owner, root, (paths) => this.getMany(paths.map((p) => latestKey('node', p))));
  }

  /** A read-only trie at height h (proofs). */
  trieAt(owner: string, root: Uint8Array, h: number): MerkleTrie {
    return new MerkleTrie(owner, root, (paths) => Promise.all(paths.map((p) => this.readRaw('node', p, h))));
  }

  // ---------------------------------------------------------------- reads

  checkReadable(h: number): void {
    if (h < Math.max(this.oldest, this.pendingOldest)) throw new PrunedStateError(h, this.opts.keepRecent);
    if (h > this.latest)
      throw new ChainError(-32000, `state at height ${h} is not available yet (latest ${this.latest})`);
  }

  private firstDiffAfter(key: string, h: number): { found: boolean; value: Uint8Array | undefined } {
    for (const d of this.diffs) {
      if (d.height <= h) continue;
      if (d.old.has(key)) return { found: true, value: d.old.get(key) };
    }
    return { found: false, value: undefined };
  }

  private hasDiffAfter(h: number): boolean {
    return this.diffs.length > 0 && this.diffs[this.diffs.length - 1].height > h;
  }

  private async seekHistory(
    table: Table,
    k: string,
    h: number,
  ): Promise<{ found: boolean; value?: Uint8Array }> {
    const prefix = fromHex(HIST_PREFIX[table].toString(16) + k);
    const gt = concat(prefix, be64(h));
    const lt = concat(prefix, Uint8Array.from([255, 255, 255, 255, 255, 255, 255, 255, 255]));
    for await (const [, v] of this.kv.iterate({ gt, lt, limit: 1 }))
      return { found: true, value: decodeHist(v) };
    return { found: false };
  }

  /** Raw value of a versioned key at height h. */
  async readRaw(table: Table, k: string, h: number): Promise<Uint8Array | undefined> {
    this.checkReadable(h);
    const key = LATEST_PREFIX[table].toString(16) + k;
    const minDiff = this.diffs.length > 0 ? this.diffs[0].height : Number.POSITIVE_INFINITY;
    if (h + 1 < minDiff && h < this.latest) {
      const r = await this.seekHistory(table, k, h);
      if (r.found) {
        this.checkReadable(h);
        return r.value;
      }
    }
    let d = this.firstDiffAfter(key, h);
    if (d.found) return d.value;
    const v = this.sync ? this.sync.getManySync([fromHex(key)])[0] : await this.kv.get(fromHex(key));
    d = this.firstDiffAfter(key, h);
    if (d.found) return d.value;
    this.checkReadable(h);
    return v;
  }

  async account(addr: string, h: number): Promise<AccountData | undefined> {
    if (h === this.latest && !this.hasDiffAfter(h)) {
      const c = this.acctCache.get(addr);
      if (c !== undefined) return c ?? undefined;
      const epoch = this.epoch;
      const raw = await this.readRaw('account', addr, h);
      const data = raw ? decodeAccount(raw) : null;
      if (epoch === this.epoch && h === this.latest) this.cachePut(this.acctCache, addr, data);
      return data ?? undefined;
    }
    const raw = await this.readRaw('account', addr, h);
    return raw ? decodeAccount(raw) : undefined;
  }

  async storage(addr: string, slot: string, h: number): Promise<Uint8Array> {
    const k = addr + slot;
    if (h === this.latest && !this.hasDiffAfter(h)) {
      const c = this.slotCache.get(k);
      if (c !== undefined) return c;
      const epoch = this.epoch;
      const raw = (await this.readRaw('storage', k, h)) ?? new Uint8Array(0);
      if (epoch === this.epoch && h === this.latest) this.cachePut(this.slotCache, k, raw);
      return raw;
    }
    return (await this.readRaw('storage', k, h)) ?? new Uint8Array(0);
  }

  async code(codeHash: Uint8Array): Promise<Uint8Array> {
    if (equal(codeHash, EMPTY_CODE_HASH)) return new Uint8Array(0);
    const k = toKey(codeHash);
    const c = this.codeCache.get(k);
    if (c) return c;
    const ck = concat(Uint8Array.of(P.code), codeHash);
    const v = this.sync ? this.sync.getManySync([ck])[0] : await this.kv.get(ck);
    if (!v) throw new ChainError(-32000, `code with hash 0x${k} is missing from the store`);
    const copy = v.slice();
    this.cachePut(this.codeCache, k, copy, 20_000);
    return copy;
  }

  /** Loads the latest values of many accounts into the cache with one batched read. */
  async prefetchAccounts(addrs: Iterable<string>): Promise<void> {
    if (this.hasDiffAfter(this.latest)) return;
    const missing = [...new Set(addrs)].filter((a) => !this.acctCache.has(a));
    if (missing.length === 0) return;
    const epoch = this.epoch;
    const values = await this.getMany(missing.map((a) => latestKey('account', a)));
    if (epoch !== this.epoch) return;
    for (let i = 0; i < missing.length; i++) {
      const v = values[i];
      this.cachePut(this.acctCache, missing[i], v ? decodeAccount(v) : null);
    }
  }

  async prefetchSlots(keys: Iterable<string>): Promise<void> {
    if (this.hasDiffAfter(this.latest)) return;
    const missing = [...new Set(keys)].filter((k) => !this.slotCache.has(k));
    if (missing.length === 0) return;
    const epoch = this.epoch;
    const values = await this.getMany(missing.map((k) => latestKey('storage', k)));
    if (epoch !== this.epoch) return;
    for (let i = 0; i < missing.length; i++)
      this.cachePut(this.slotCache, missing[i], values[i]?.slice() ?? new Uint8Array(0));
  }

  private cachePut<V>(map: Map<string, V>, k: string, v: V, limit = this.cacheEntries): void {
    if (map.size >= limit) {
      let n = Math.ceil(limit / 10);
      for (const key of map.keys()) {
        map.delete(key);
        if (--n <= 0) break;
      }
    }
    map.set(k, v);
  }

  // ---------------------------------------------------------------- block building

  private async storageTrie(addr: string, root: Uint8Array): Promise<MerkleTrie> {
    let t = this.storageTries.get(addr);
    if (t && equal(t.rootHash(), root)) return t;
    t = this.latestTrie(storageOwner(addr), root);
    if (this.storageTries.size >= 4096) this.storageTries.clear();
    this.storageTries.set(addr, t);
    return t;
  }

  private async scanPrefix(prefix: Uint8Array): Promise<Array<[Uint8Array, Uint8Array]>> {
    const out: Array<[Uint8Array, Uint8Array]> = [];
    const lt = concat(prefix, new Uint8Array(64).fill(255));
    for await (const [k, v] of this.kv.iterate({ gte: prefix, lt })) out.push([k.slice(), v.slice()]);
    return out;
  }

  /**
   * Computes the state of block `height` = latest + 1 from the block's overlay: new storage roots,
   * the account trie root and every table change. The in-memory tries move to the new state; call
   * resetTries() if the block is abandoned.
   */
  async build(overlay: BlockOverlay): Promise<BuiltState> {
    const height = this.latest + 1;
    const changes = new Map<string, StateChange>();
    const set = (
      table: Table,
      k: string,
      old: Uint8Array | undefined,
      value: Uint8Array | undefined,
    ): void => {
      const key = LATEST_PREFIX[table].toString(16) + k;
      const prev = changes.get(key);
      if (prev) prev.value = value;
      else changes.set(key, { table, k, old, value });
    };
    const addrs = [
      ...new Set([...overlay.accounts.keys(), ...overlay.storage.keys(), ...overlay.cleared]),
    ].sort();
    await this.prefetchAccounts(addrs);
    const slotKeys: string[] = [];
    for (const [addr, slots] of overlay.storage) for (const s of slots.keys()) slotKeys.push(addr + s);
    await this.prefetchSlots(slotKeys);

    let balanceDelta = 0n;
    const accountEntries: Array<[Uint8Array, Uint8Array | undefined]> = [];
    for (const addr of addrs) {
      const old = await this.account(addr, this.latest);
      const next = overlay.accounts.has(addr) ? overlay.accounts.get(addr)! : (old ?? null);
      balanceDelta += (next?.balance ?? 0n) - (old?.balance ?? 0n);
      const wipe = overlay.cleared.has(addr) || next === null;
      let storageRoot = old?.storageRoot ?? EMPTY_TRIE_ROOT;
      let trie: MerkleTrie | undefined;
      const wiped = new Map<string, Uint8Array>();
      if (wipe && old && !equal(old.storageRoot, EMPTY_TRIE_ROOT)) {
        const addrBytes = fromHex(addr);
        for (const [k, v] of await this.scanPrefix(concat(Uint8Array.of(P.storage), addrBytes))) {
          const slot = toKey(k.subarray(21));
          wiped.set(slot, v);
          set('storage', addr + slot, v, undefined);
        }
        for (const [k, v] of await this.scanPrefix(fromHex(P.node.toString(16) + storageOwner(addr)))) {
          set('node', toKey(k.subarray(1)), v, undefined);
        }
        this.storageTries.delete(addr);
        storageRoot = EMPTY_TRIE_ROOT;
      }
      const slots = overlay.storage.get(addr);
      if (next !== null && slots && slots.size > 0) {
        trie = wipe
          ? this.latestTrie(storageOwner(addr), EMPTY_TRIE_ROOT)
          : await this.storageTrie(addr, storageRoot);
        const entries: Array<[Uint8Array, Uint8Array | undefined]> = [];
        for (const [slot, v] of [...slots].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
          const oldV = wipe ? wiped.get(slot) : await this.storage(addr, slot, this.latest);
          const oldDefined = oldV !== undefined && oldV.length > 0 ? oldV : undefined;
          const newDefined = v.length > 0 ? v : undefined;
          if (!wipe && sameBytes(oldDefined, newDefined)) continue;
          set('storage', addr + slot, oldDefined, newDefined);
          entries.push([keccak256(fromHex(slot)), newDefined ? rlpEncode(newDefined) : undefined]);
        }
        if (entries.length > 0) {
          await trie.update(entries);
          const res = trie.commit();
          for (const c of res.changes) set('node', c.path, c.old, c.value);
          storageRoot = res.root;
          if (wipe) this.storageTries.set(addr, trie);
        }
      }
      const addrHash = keccak256(fromHex(addr));
      if (next === null) {
        if (old) {
          set('account', addr, encodeAccount(old), undefined);
          accountEntries.push([addrHash, undefined]);
        }
        continue;
      }
      // Object.assign, not { ...next, storageRoot }: see scripts/patch-deps.mjs on V8 and spreads.
      const rec: AccountData = Object.assign({}, next, { storageRoot });
      const enc = encodeAccount(rec);
      const oldEnc = old ? encodeAccount(old) : undefined;
      if (oldEnc && equal(oldEnc, enc)) continue;
      set('account', addr, oldEnc, enc);
      accountEntries.push([addrHash, enc]);
    }
    await this.accountTrie.update(accountEntries);
    const res = this.accountTrie.commit();
    for (const c of res.changes as NodeChange[]) set('node', c.path, c.old, c.value);

    const referenced = new Set<string>();
    for (const a of overlay.accounts.values()) if (a) referenced.add(toKey(a.codeHash));
    const code: Array<[string, Uint8Array]> = [];
    for (const [hash, c] of overlay.code) if (referenced.has(hash)) code.push([hash, c]);

    const list = [...changes.values()].filter((c) => !sameBytes(c.old, c.value));
    return { height, stateRoot: res.root, changes: list, code, balanceDelta };
  }

  // ---------------------------------------------------------------- commit

  /**
   * The batch operations for a built block: latest values, history records, the prune journal,
   * code, and (full mode) deletion of history older than the kept window. Reads the old journals.
   */
  async commitOps(built: BuiltState): Promise<{ ops: BatchOp[]; newOldest: number }> {
    const ops: BatchOp[] = [];
    const full = this.opts.mode === 'full' || this.opts.journal === true;
    const journal: Uint8Array[] = [];
    let journalBytes = 0;
    const height = BigInt(built.height);
    for (const c of built.changes) {
      const lk = latestKey(c.table, c.k);
      if (c.value === undefined) ops.push({ type: 'del', key: lk });
      else ops.push({ type: 'put', key: lk, value: c.value });
      // History key: the latest key with the history prefix, then the height (one allocation).
      const hk = new Uint8Array(lk.length + 8);
      hk.set(lk);
      hk[0] = HIST_PREFIX[c.table];
      new DataView(hk.buffer).setBigUint64(lk.length, height);
      ops.push({ type: 'put', key: hk, value: encodeHist(c.old) });
      if (full) {
        journal.push(hk);
        journalBytes += 1 + hk.length;
      }
    }
    if (journal.length > 0) {
      const list = new Uint8Array(journalBytes);
      let o = 0;
      for (const hk of journal) {
        list[o] = hk.length;
        list.set(hk, o + 1);
        o += 1 + hk.length;
      }
      ops.push({ type: 'put', key: heightKey(P.pruneJournal, built.height), value: list });
    }
    for (const [hash, c] of built.code)
      ops.push({ type: 'put', key: fromHex(P.code.toString(16) + hash), value: c });

    let newOldest = this.oldest;
    if (this.opts.mode === 'full') {
      const target = built.height - this.opts.keepRecent + 1;
      let n = 0;
      while (newOldest < target && n < PRUNE_JOURNALS_PER_COMMIT) {
        const j = newOldest + 1;
        const jk = heightKey(P.pruneJournal, j);
        const list = await this.kv.get(jk);
        if (list) {
          for (let o = 0; o < list.length; ) {
            const len = list[o];
            ops.push({ type: 'del', key: list.slice(o + 1, o + 1 + len) });
            o += 1 + len;
          }
          ops.push({ type: 'del', key: jk });
        }
        newOldest = j;
        n++;
      }
    }
    return { ops, newOldest };
  }

  /** Marks a commit as started: readers of older heights now consult its diff. */
  beginCommit(built: BuiltState, newOldest: number): void {
    const old = new Map<string, Uint8Array | undefined>();
    for (const c of built.changes) old.set(LATEST_PREFIX[c.table].toString(16) + c.k, c.old);
    this.diffs.push({ height: built.height, old });
    this.pendingOldest = newOldest;
    this.epoch++;
  }

  /** After the batch is on disk: move caches and the height forward. */
  finishCommit(built: BuiltState, newOldest: number): void {
    for (const c of built.changes) {
      if (c.table === 'account') this.cachePut(this.acctCache, c.k, c.value ? decodeAccount(c.value) : null);
      else if (c.table === 'storage') this.cachePut(this.slotCache, c.k, c.value ?? new Uint8Array(0));
    }
    for (const [hash, c] of built.code) this.cachePut(this.codeCache, hash, c, 20_000);
    this.latest = built.height;
    this.stateRoot = built.stateRoot;
    this.oldest = newOldest;
    this.epoch++;
    while (this.diffs.length > RECENT_DIFFS) this.diffs.shift();
    if (this.accountTrie.loadedNodes > 500_000) this.accountTrie.unload();
    for (const [addr, t] of this.storageTries) if (t.loadedNodes > 50_000) this.storageTries.delete(addr);
  }

  // ---------------------------------------------------------------- rollback (dev chain)

  /**
   * The batch operations that bring the versioned tables back to their values at `height` (below
   * latest): every history record of a later block, newest first, gives the latest key its value
   * from before that block, and is deleted with its journal. Needs the journals (full mode, or the
   * `journal` option) of every block above `height`; a block without one changed nothing.
   */
  async rollbackOps(height: number): Promise<BatchOp[]> {
    if (this.opts.mode !== 'full' && this.opts.journal !== true)
      throw new ChainError(
        -32000,
        'state rollback needs the change journals (full mode or the journal option)',
      );
    if (height < this.oldest) throw new PrunedStateError(height, this.opts.keepRecent);
    const ops: BatchOp[] = [];
    for (let h = this.latest; h > height; h--) {
      const jk = heightKey(P.pruneJournal, h);
      const list = await this.kv.get(jk);
      if (!list) continue;
      const hks: Uint8Array[] = [];
      for (let o = 0; o < list.length; ) {
        const len = list[o];
        hks.push(list.slice(o + 1, o + 1 + len));
        o += 1 + len;
      }
      const olds = await this.kv.getMany(hks);
      hks.forEach((hk, i) => {
        const raw = olds[i];
        if (raw === undefined)
          throw new ChainError(-32000, `state rollback: history record of block ${h} is missing`);
        const lk = hk.slice(0, hk.length - 8);
        lk[0] = latestPrefixOf(hk[0]);
        const old = decodeHist(raw);
        if (old === undefined) ops.push({ type: 'del', key: lk });
        else ops.push({ type: 'put', key: lk, value: old });
        ops.push({ type: 'del', key: hk });
      });
      ops.push({ type: 'del', key: jk });
    }
    return ops;
  }

  /** After a rollback's batch is on disk: forgets every cache, diff and trie, then init(). */
  reset(latest: number, oldest: number, stateRoot: Uint8Array): void {
    this.acctCache.clear();
    this.slotCache.clear();
    this.codeCache.clear();
    this.diffs = [];
    this.epoch++;
    this.init(latest, oldest, stateRoot);
  }

  /** Genesis: writes the initial state directly (no history before it). */
  async buildGenesis(
    accounts: Array<{ addr: string; data: AccountData; code?: Uint8Array; storage: Map<string, Uint8Array> }>,
    height: number,
  ): Promise<{ ops: BatchOp[]; stateRoot: Uint8Array; supply: bigint }> {
    const ops: BatchOp[] = [];
    const trie = this.latestTrie(ACCOUNT_TRIE_OWNER, EMPTY_TRIE_ROOT);
    const entries: Array<[Uint8Array, Uint8Array | undefined]> = [];
    let supply = 0n;
    for (const a of accounts) {
      supply += a.data.balance;
      let storageRoot = EMPTY_TRIE_ROOT;
      if (a.storage.size > 0) {
        const st = this.latestTrie(storageOwner(a.addr), EMPTY_TRIE_ROOT);
        const sEntries: Array<[Uint8Array, Uint8Array | undefined]> = [];
        for (const [slot, v] of a.storage) {
          if (v.length === 0) continue;
          ops.push({ type: 'put', key: latestKey('storage', a.addr + slot), value: v });
          sEntries.push([keccak256(fromHex(slot)), rlpEncode(v)]);
        }
        await st.update(sEntries);
        const r = st.commit();
        for (const c of r.changes)
          if (c.value) ops.push({ type: 'put', key: latestKey('node', c.path), value: c.value });
        storageRoot = r.root;
      }
      if (a.code && a.code.length > 0) {
        ops.push({ type: 'put', key: concat(Uint8Array.of(P.code), a.data.codeHash), value: a.code });
      }
      const enc = encodeAccount(Object.assign({}, a.data, { storageRoot }));
      ops.push({ type: 'put', key: latestKey('account', a.addr), value: enc });
      entries.push([keccak256(fromHex(a.addr)), enc]);
    }
    await trie.update(entries);
    const r = trie.commit();
    for (const c of r.changes)
      if (c.value) ops.push({ type: 'put', key: latestKey('node', c.path), value: c.value });
    void height;
    return { ops, stateRoot: r.root, supply };
  }
}
