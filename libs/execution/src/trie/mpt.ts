// A Merkle Patricia Trie (Ethereum's hexary trie, yellow paper appendix D) built for batch use:
// updates are applied in memory and hashed once per block; nodes are persisted by their *path*
// (owner + nibble path), not by hash, so a path has exactly one live node and replaced nodes can
// be recorded in history and pruned exactly. Small nodes (< 32 bytes encoded) are embedded in
// their parent as Ethereum requires and are never stored on their own.

import { keccak256 } from '@noded/crypto';
import { EMPTY, equal } from '../bytes.js';
import {
  encodeBytes,
  type RlpDecoded,
  rlpBytesSize,
  rlpDecode,
  rlpHeaderSize,
  writeRlpBytes,
  writeRlpHeader,
} from '../rlp.js';

/** keccak256(rlp('')): the root of an empty trie. */
export const EMPTY_TRIE_ROOT = keccak256(Uint8Array.of(0x80));

type Nibbles = Uint8Array;
const UNCHANGED = Symbol('unchanged');

interface Stored {
  /** Path key (hex) this node occupies in the store, and the bytes stored there. */
  path: string;
  enc: Uint8Array;
}

interface LeafNode {
  /** keccak256 of `refEnc`, cached while the encoding is unchanged. */
  ref?: Uint8Array;
  refEnc?: Uint8Array;
  t: 0;
  key: Nibbles;
  value: Uint8Array;
  enc?: Uint8Array;
  stored?: Stored;
}
interface ExtNode {
  /** keccak256 of `refEnc`, cached while the encoding is unchanged. */
  ref?: Uint8Array;
  refEnc?: Uint8Array;
  t: 1;
  key: Nibbles;
  child: Child;
  enc?: Uint8Array;
  stored?: Stored;
}
interface BranchNode {
  /** keccak256 of `refEnc`, cached while the encoding is unchanged. */
  ref?: Uint8Array;
  refEnc?: Uint8Array;
  t: 2;
  children: Array<Child | null>;
  value: Uint8Array | null;
  enc?: Uint8Array;
  stored?: Stored;
}
/** A child that has not been loaded yet: its hash; it is stored at the child's path. */
interface HashRef {
  t: 3;
  hash: Uint8Array;
}
type TrieNode = LeafNode | ExtNode | BranchNode;
type Child = TrieNode | HashRef;

/** Reads stored nodes by path key; undefined when the path holds nothing. */
export type NodeLoader = (paths: string[]) => Promise<Array<Uint8Array | undefined>>;

export interface NodeChange {
  path: string;
  old: Uint8Array | undefined;
  value: Uint8Array | undefined;
}

export class TrieError extends Error {
  constructor(
    readonly code: 'MISSING_NODE' | 'BAD_NODE',
    message: string,
  ) {
    super(message);
    this.name = 'TrieError';
  }
}

export function keyToNibbles(key: Uint8Array): Nibbles {
  const out = new Uint8Array(key.length * 2);
  for (let i = 0; i < key.length; i++) {
    out[2 * i] = key[i] >> 4;
    out[2 * i + 1] = key[i] & 15;
  }
  return out;
}

function hexPrefix(nibbles: Nibbles, leaf: boolean): Uint8Array {
  const odd = nibbles.length % 2;
  const out = new Uint8Array(1 + (nibbles.length >> 1));
  const flag = (leaf ? 2 : 0) + odd;
  if (odd) {
    out[0] = (flag << 4) | nibbles[0];
    for (let i = 1, j = 1; i < nibbles.length; i += 2, j++) out[j] = (nibbles[i] << 4) | nibbles[i + 1];
  } else {
    out[0] = flag << 4;
    for (let i = 0, j = 1; i < nibbles.length; i += 2, j++) out[j] = (nibbles[i] << 4) | nibbles[i + 1];
  }
  return out;
}

function decodeHexPrefix(b: Uint8Array): { nibbles: Nibbles; leaf: boolean } {
  if (b.length === 0) throw new TrieError('BAD_NODE', 'empty hex-prefix path');
  const flag = b[0] >> 4;
  const odd = flag & 1;
  const all = keyToNibbles(b);
  return { nibbles: all.subarray(odd ? 1 : 2), leaf: flag >= 2 };
}

function commonPrefix(a: Nibbles, b: Nibbles, bOffset: number): number {
  const n = Math.min(a.length, b.length - bOffset);
  let i = 0;
  while (i < n && a[i] === b[bOffset + i]) i++;
  return i;
}

function concatNibbles(a: Nibbles | number[], b: Nibbles): Nibbles {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function nodeFromDecoded(d: RlpDecoded): TrieNode {
  if (!Array.isArray(d)) throw new TrieError('BAD_NODE', 'trie node is not a list');
  if (d.length === 17) {
    const children: Array<Child | null> = new Array(16);
    for (let i = 0; i < 16; i++) children[i] = childFromDecoded(d[i]);
    const v = d[16] as Uint8Array;
    return { t: 2, children, value: v.length === 0 ? null : v };
  }
  if (d.length === 2) {
    const { nibbles, leaf } = decodeHexPrefix(d[0] as Uint8Array);
    if (leaf) return { t: 0, key: nibbles.slice(), value: d[1] as Uint8Array };
    const child = childFromDecoded(d[1]);
    if (child === null) throw new TrieError('BAD_NODE', 'extension without child');
    return { t: 1, key: nibbles.slice(), child };
  }
  throw new TrieError('BAD_NODE', `trie node with ${d.length} items`);
}

function childFromDecoded(d: RlpDecoded): Child | null {
  if (Array.isArray(d)) return nodeFromDecoded(d);
  if (d.length === 0) return null;
  if (d.length === 32) return { t: 3, hash: d };
  throw new TrieError('BAD_NODE', `child reference of ${d.length} bytes`);
}

export function decodeNode(enc: Uint8Array): TrieNode {
  return nodeFromDecoded(rlpDecode(enc));
}

function pathKey(prefix: string, nibbles: Nibbles, len: number): string {
  // owner prefix + one byte length + one byte per nibble (hex)
  let s = prefix + len.toString(16).padStart(2, '0');
  for (let i = 0; i < len; i++) s += `0${nibbles[i].toString(16)}`;
  return s;
}

/**
 * One trie (the account trie or one contract's storage trie). `owner` is a hex prefix that
 * namespaces its node paths in the store.
 */
export class MerkleTrie {
  private root: Child | null;
  /** Paths whose stored node was dropped since the last commit, with the bytes stored there. */
  private removed = new Map<string, Uint8Array>();
  private readonly refs: Array<Uint8Array | null> = new Array(16).fill(null);
  private readonly embedded: boolean[] = new Array(16).fill(false);
  loadedNodes = 0;

  constructor(
    readonly owner: string,
    rootHash: Uint8Array,
    private readonly loader: NodeLoader,
  ) {
    this.root = equal(rootHash, EMPTY_TRIE_ROOT) ? null : { t: 3, hash: rootHash };
  }

  private drop(n: TrieNode): void {
    if (n.stored) {
      this.removed.set(n.stored.path, n.stored.enc);
      n.stored = undefined;
    }
  }

  private async loadPaths(
    want: Map<string, { holder: { set(c: Child): void }; hash: Uint8Array }>,
  ): Promise<void> {
    const paths = [...want.keys()];
    const values = await this.loader(paths);
    for (let i = 0; i < paths.length; i++) {
      const enc = values[i];
      const w = want.get(paths[i])!;
      if (enc === undefined) {
        throw new TrieError('MISSING_NODE', `trie node ${this.owner}/${paths[i]} is missing from the store`);
      }
      if (!equal(keccak256(enc), w.hash)) {
        throw new TrieError(
          'BAD_NODE',
          `trie node ${this.owner}/${paths[i]} does not match its parent's hash`,
        );
      }
      const node = decodeNode(enc);
      node.stored = { path: paths[i], enc };
      node.enc = enc;
      node.ref = w.hash;
      node.refEnc = enc;
      this.loadedNodes++;
      w.holder.set(node);
    }
  }

  /** Loads every node on the paths of `keys` (nibble arrays), a level per round trip. */
  async resolve(keys: Nibbles[]): Promise<void> {
    for (;;) {
      const want = new Map<string, { holder: { set(c: Child): void }; hash: Uint8Array }>();
      for (const key of keys) this.findMissing(key, want);
      if (want.size === 0) return;
      await this.loadPaths(want);
    }
  }

  private findMissing(
    key: Nibbles,
    want: Map<string, { holder: { set(c: Child): void }; hash: Uint8Array }>,
  ): void {
    if (this.root === null) return;
    if (this.root.t === 3) {
      const p = pathKey(this.owner, key, 0);
      if (!want.has(p)) want.set(p, { holder: { set: (c) => (this.root = c) }, hash: this.root.hash });
      return;
    }
    let n: TrieNode = this.root;
    let d = 0;
    for (;;) {
      let slotHolder: { set(c: Child): void };
      let child: Child | null;
      let childDepth: number;
      if (n.t === 0) return;
      if (n.t === 1) {
        if (commonPrefix(n.key, key, d) !== n.key.length) return;
        const ext: ExtNode = n;
        child = n.child;
        childDepth = d + n.key.length;
        slotHolder = { set: (c) => (ext.child = c) };
      } else {
        if (d >= key.length) return;
        const br: BranchNode = n;
        const i = key[d];
        child = n.children[i];
        childDepth = d + 1;
        slotHolder = { set: (c) => (br.children[i] = c) };
      }
      if (child === null) return;
      if (child.t === 3) {
        const p = pathKey(this.owner, key, childDepth);
        if (!want.has(p)) want.set(p, { holder: slotHolder, hash: child.hash });
        return;
      }
      n = child;
      d = childDepth;
    }
  }

  private async loadChildAt(key: Nibbles, depth: number, ref: HashRef): Promise<TrieNode> {
    let out: TrieNode | undefined;
    const want = new Map([
      [
        pathKey(this.owner, key, depth),
        { holder: { set: (c: Child) => (out = c as TrieNode) }, hash: ref.hash },
      ],
    ]);
    await this.loadPaths(want);
    return out!;
  }

  /** Reads a value, loading nodes as needed. */
  async get(keyBytes: Uint8Array): Promise<Uint8Array | undefined> {
    const key = keyToNibbles(keyBytes);
    await this.resolve([key]);
    let n = this.root;
    let d = 0;
    while (n !== null) {
      if (n.t === 3) throw new TrieError('MISSING_NODE', 'unresolved node');
      if (n.t === 0)
        return commonPrefix(n.key, key, d) === n.key.length && d + n.key.length === key.length
          ? n.value
          : undefined;
      if (n.t === 1) {
        if (commonPrefix(n.key, key, d) !== n.key.length) return undefined;
        d += n.key.length;
        n = n.child;
      } else {
        if (d === key.length) return n.value ?? undefined;
        n = n.children[key[d]];
        d++;
      }
    }
    return undefined;
  }

  /** Applies puts (value) and deletes (undefined); keys are raw bytes (already hashed if secure). */
  async update(entries: Array<[Uint8Array, Uint8Array | undefined]>): Promise<void> {
    const keys = entries.map(([k]) => keyToNibbles(k));
    await this.resolve(keys);
    for (let i = 0; i < entries.length; i++) {
      const v = entries[i][1];
      if (v !== undefined && v.length > 0) this.root = this.insert(this.root, keys[i], 0, v);
      else {
        const next = await this.remove(this.root, keys[i], 0);
        if (next !== UNCHANGED) this.root = next;
      }
    }
  }

  private insert(n: Child | null, key: Nibbles, d: number, value: Uint8Array): TrieNode {
    if (n === null) return { t: 0, key: key.slice(d), value };
    if (n.t === 3) throw new TrieError('MISSING_NODE', 'insert reached an unresolved node');
    if (n.t === 0) {
      const c = commonPrefix(n.key, key, d);
      if (c === n.key.length && d + c === key.length) {
        if (equal(n.value, value)) return n;
        n.value = value;
        n.enc = undefined;
        return n;
      }
      this.drop(n);
      const branch: BranchNode = { t: 2, children: new Array(16).fill(null), value: null };
      if (c === n.key.length) branch.value = n.value;
      else branch.children[n.key[c]] = { t: 0, key: n.key.slice(c + 1), value: n.value };
      if (d + c === key.length) branch.value = value;
      else branch.children[key[d + c]] = { t: 0, key: key.slice(d + c + 1), value };
      return c > 0 ? { t: 1, key: n.key.slice(0, c), child: branch } : branch;
    }
    if (n.t === 1) {
      const c = commonPrefix(n.key, key, d);
      if (c === n.key.length) {
        n.child = this.insert(n.child, key, d + c, value);
        n.enc = undefined;
        return n;
      }
      this.drop(n);
      const branch: BranchNode = { t: 2, children: new Array(16).fill(null), value: null };
      const rest = n.key.length - c - 1;
      branch.children[n.key[c]] = rest > 0 ? { t: 1, key: n.key.slice(c + 1), child: n.child } : n.child;
      if (d + c === key.length) branch.value = value;
      else branch.children[key[d + c]] = { t: 0, key: key.slice(d + c + 1), value };
      return c > 0 ? { t: 1, key: n.key.slice(0, c), child: branch } : branch;
    }
    if (d === key.length) {
      n.value = value;
    } else {
      const i = key[d];
      n.children[i] = this.insert(n.children[i], key, d + 1, value);
    }
    n.enc = undefined;
    return n;
  }

  /** Deletes `key` below n; returns UNCHANGED when the key was absent (nothing was touched). */
  private async remove(
    n: Child | null,
    key: Nibbles,
    d: number,
  ): Promise<TrieNode | null | typeof UNCHANGED> {
    if (n === null) return UNCHANGED;
    if (n.t === 3) throw new TrieError('MISSING_NODE', 'delete reached an unresolved node');
    if (n.t === 0) {
      if (commonPrefix(n.key, key, d) === n.key.length && d + n.key.length === key.length) {
        this.drop(n);
        return null;
      }
      return UNCHANGED;
    }
    if (n.t === 1) {
      if (commonPrefix(n.key, key, d) !== n.key.length) return UNCHANGED;
      let child = n.child;
      if (child.t === 3) child = await this.loadChildAt(key, d + n.key.length, child);
      const next = await this.remove(child, key, d + n.key.length);
      if (next === UNCHANGED) return UNCHANGED;
      if (next === null) {
        this.drop(n);
        return null;
      }
      if (next.t === 0 || next.t === 1) {
        this.drop(n);
        this.drop(next);
        return next.t === 0
          ? { t: 0, key: concatNibbles(n.key, next.key), value: next.value }
          : { t: 1, key: concatNibbles(n.key, next.key), child: next.child };
      }
      n.child = next;
      n.enc = undefined;
      return n;
    }
    if (d === key.length) {
      if (n.value === null) return UNCHANGED;
      n.value = null;
    } else {
      const i = key[d];
      let child = n.children[i];
      if (child === null) return UNCHANGED;
      if (child.t === 3) child = await this.loadChildAt(key, d + 1, child);
      const next = await this.remove(child, key, d + 1);
      if (next === UNCHANGED) return UNCHANGED;
      n.children[i] = next;
    }
    n.enc = undefined;
    let count = n.value !== null ? 1 : 0;
    let only = -1;
    for (let i = 0; i < 16; i++) {
      if (n.children[i] !== null) {
        count++;
        only = i;
      }
    }
    if (count >= 2) return n;
    this.drop(n);
    if (count === 0) return null;
    if (only === -1) return { t: 0, key: new Uint8Array(0), value: n.value! };
    let c = n.children[only]!;
    if (c.t === 3) {
      const path = key.slice(0, d + 1);
      path[d] = only;
      c = await this.loadChildAt(path, d + 1, c);
    }
    if (c.t === 0) {
      this.drop(c);
      return { t: 0, key: concatNibbles([only], c.key), value: c.value };
    }
    if (c.t === 1) {
      this.drop(c);
      return { t: 1, key: concatNibbles([only], c.key), child: c.child };
    }
    return { t: 1, key: Uint8Array.of(only), child: c };
  }

  private hashOf(n: TrieNode): Uint8Array {
    const enc = this.encode(n);
    if (n.refEnc !== enc || n.ref === undefined) {
      n.ref = keccak256(enc);
      n.refEnc = enc;
    }
    return n.ref;
  }

  /**
   * RLP of a node, written into one buffer (nodes are encoded once per change; building the
   * items as separate arrays first dominated the garbage collector).
   */
  private encode(n: TrieNode): Uint8Array {
    if (n.enc) return n.enc;
    let enc: Uint8Array;
    if (n.t === 2) {
      // Children first (recursion), so the scratch arrays below are not clobbered by it.
      for (let i = 0; i < 16; i++) {
        const c = n.children[i];
        if (c !== null && c.t !== 3 && this.encode(c).length >= 32) this.hashOf(c);
      }
      const refs = this.refs;
      let len = 0;
      for (let i = 0; i < 16; i++) {
        const c = n.children[i];
        if (c === null) {
          refs[i] = null;
          len += 1;
        } else if (c.t === 3) {
          refs[i] = c.hash;
          len += 33;
        } else {
          const e = this.encode(c);
          if (e.length < 32) {
            refs[i] = e;
            this.embedded[i] = true;
            len += e.length;
            continue;
          }
          refs[i] = this.hashOf(c);
          len += 33;
        }
        this.embedded[i] = false;
      }
      const v = n.value;
      len += v === null ? 1 : rlpBytesSize(v);
      const out = new Uint8Array(rlpHeaderSize(len) + len);
      let o = writeRlpHeader(out, 0, len, 0xc0);
      for (let i = 0; i < 16; i++) {
        const r = refs[i];
        if (r === null) out[o++] = 0x80;
        else if (this.embedded[i]) {
          out.set(r, o);
          o += r.length;
        } else {
          out[o++] = 0xa0;
          out.set(r, o);
          o += 32;
        }
        refs[i] = null;
      }
      if (v === null) out[o++] = 0x80;
      else writeRlpBytes(out, o, v);
      enc = out;
    } else {
      const hp = hexPrefix(n.key, n.t === 0);
      let second: Uint8Array;
      let secondRaw: boolean;
      if (n.t === 0) {
        second = n.value;
        secondRaw = false;
      } else if (n.child.t === 3) {
        second = n.child.hash;
        secondRaw = false;
      } else {
        const e = this.encode(n.child);
        secondRaw = e.length < 32;
        second = secondRaw ? e : this.hashOf(n.child);
      }
      const len = rlpBytesSize(hp) + (secondRaw ? second.length : rlpBytesSize(second));
      const out = new Uint8Array(rlpHeaderSize(len) + len);
      let o = writeRlpHeader(out, 0, len, 0xc0);
      o = writeRlpBytes(out, o, hp);
      if (secondRaw) out.set(second, o);
      else writeRlpBytes(out, o, second);
      enc = out;
    }
    n.enc = enc;
    return enc;
  }

  rootHash(): Uint8Array {
    if (this.root === null) return EMPTY_TRIE_ROOT;
    if (this.root.t === 3) return this.root.hash;
    return this.hashOf(this.root);
  }

  /**
   * Hashes the trie and returns the store changes since the last commit: every node whose encoding
   * changed at its path (written) and every path that no longer holds a node (deleted).
   */
  commit(): { root: Uint8Array; changes: NodeChange[] } {
    const changes: NodeChange[] = [];
    const root = this.rootHash();
    if (this.root !== null && this.root.t !== 3) {
      this.walkCommit(this.root, new Uint8Array(64 + 1), 0, true, changes);
    }
    for (const [path, old] of this.removed) changes.push({ path, old, value: undefined });
    this.removed.clear();
    // Nodes written are now held in memory too; count them toward the unload threshold.
    this.loadedNodes += changes.length;
    return { root, changes };
  }

  private walkCommit(n: TrieNode, path: Uint8Array, depth: number, isRoot: boolean, out: NodeChange[]): void {
    const enc = this.encode(n);
    const p = pathKey(this.owner, path, depth);
    const persist = isRoot || enc.length >= 32;
    const unchanged = n.stored !== undefined && n.stored.path === p && n.stored.enc === enc;
    if (unchanged) return; // clean subtree: nothing below changed either
    if (persist) {
      let old: Uint8Array | undefined;
      if (this.removed.has(p)) {
        old = this.removed.get(p);
        this.removed.delete(p);
      } else if (n.stored && n.stored.path === p) old = n.stored.enc;
      else if (n.stored) this.removed.set(n.stored.path, n.stored.enc);
      out.push({ path: p, old, value: enc });
      n.stored = { path: p, enc };
    } else if (n.stored) {
      this.removed.set(n.stored.path, n.stored.enc);
      n.stored = undefined;
    }
    if (n.t === 1) {
      if (n.child.t !== 3) {
        path.set(n.key, depth);
        this.walkCommit(n.child, path, depth + n.key.length, false, out);
      }
    } else if (n.t === 2) {
      for (let i = 0; i < 16; i++) {
        const c = n.children[i];
        if (c !== null && c.t !== 3) {
          path[depth] = i;
          this.walkCommit(c, path, depth + 1, false, out);
        }
      }
    }
  }

  /** Merkle proof for a key: the encoded nodes from the root down the key's path. */
  async prove(keyBytes: Uint8Array): Promise<Uint8Array[]> {
    const key = keyToNibbles(keyBytes);
    await this.resolve([key]);
    const proof: Uint8Array[] = [];
    let n = this.root;
    let d = 0;
    let first = true;
    while (n !== null) {
      if (n.t === 3) throw new TrieError('MISSING_NODE', 'unresolved node');
      const enc = this.encode(n);
      if (first || enc.length >= 32) proof.push(enc);
      first = false;
      if (n.t === 0) break;
      if (n.t === 1) {
        if (commonPrefix(n.key, key, d) !== n.key.length) break;
        d += n.key.length;
        n = n.child;
      } else {
        if (d === key.length) break;
        n = n.children[key[d]];
        d++;
      }
    }
    return proof;
  }

  /** Drops loaded nodes below the root (after a commit) to bound memory; they reload on demand. */
  unload(): void {
    if (this.root === null || this.root.t === 3) return;
    if (this.removed.size > 0) return;
    this.root = { t: 3, hash: this.rootHash() };
    this.loadedNodes = 0;
  }
}

/** Root of an in-memory trie over the given key/value pairs (transactions and receipts roots). */
export async function orderedTrieRoot(values: Uint8Array[]): Promise<Uint8Array> {
  if (values.length === 0) return EMPTY_TRIE_ROOT;
  const trie = new MerkleTrie('', EMPTY_TRIE_ROOT, async () => {
    throw new TrieError('MISSING_NODE', 'in-memory trie has no store');
  });
  await trie.update(values.map((v, i) => [encodeBytes(i === 0 ? EMPTY : bigintBytes(i)), v]));
  return trie.rootHash();
}

function bigintBytes(i: number): Uint8Array {
  let hex = i.toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  return new Uint8Array(Buffer.from(hex, 'hex'));
}
