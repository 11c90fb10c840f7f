// The RFC 6962 Merkle tree CometBFT uses (crypto/merkle): leaf = sha256(0x00 || item),
// inner = sha256(0x01 || left || right), split at the largest power of two below the size,
// empty tree = sha256(""). Behind the header's data_hash and the RPC's transaction proofs.
import { sha256 } from './hash.js';

function leafHash(item: Uint8Array): Uint8Array {
  const buf = new Uint8Array(item.length + 1);
  buf.set(item, 1);
  return sha256(buf);
}

function innerHash(left: Uint8Array, right: Uint8Array): Uint8Array {
  const buf = new Uint8Array(1 + left.length + right.length);
  buf[0] = 1;
  buf.set(left, 1);
  buf.set(right, 1 + left.length);
  return sha256(buf);
}

/** Largest power of two strictly below n (n >= 2). */
function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

export function merkleRoot(items: Uint8Array[]): Uint8Array {
  if (items.length === 0) return sha256(new Uint8Array(0));
  if (items.length === 1) return leafHash(items[0]!);
  const k = splitPoint(items.length);
  return innerHash(merkleRoot(items.slice(0, k)), merkleRoot(items.slice(k)));
}

/**
 * The proof that item `index` is in merkleRoot(items) (items.length >= 1): the root, the leaf hash
 * and the aunts from the leaf's sibling up to the root's child, as CometBFT's merkle.Proof.
 */
export function merkleProof(
  items: Uint8Array[],
  index: number,
): { root: Uint8Array; leaf: Uint8Array; aunts: Uint8Array[] } {
  if (items.length === 1) {
    const leaf = leafHash(items[0]!);
    return { root: leaf, leaf, aunts: [] };
  }
  const k = splitPoint(items.length);
  if (index < k) {
    const left = merkleProof(items.slice(0, k), index);
    const right = merkleRoot(items.slice(k));
    return { root: innerHash(left.root, right), leaf: left.leaf, aunts: [...left.aunts, right] };
  }
  const right = merkleProof(items.slice(k), index - k);
  const left = merkleRoot(items.slice(0, k));
  return { root: innerHash(left, right.root), leaf: right.leaf, aunts: [...right.aunts, left] };
}

/** The aunts of every item of merkleRoot(items) at once (items.length >= 1), in O(n log n). */
export function merkleAuntsAll(items: Uint8Array[]): { root: Uint8Array; aunts: Uint8Array[][] } {
  if (items.length === 1) return { root: leafHash(items[0]!), aunts: [[]] };
  const k = splitPoint(items.length);
  const left = merkleAuntsAll(items.slice(0, k));
  const right = merkleAuntsAll(items.slice(k));
  return {
    root: innerHash(left.root, right.root),
    aunts: [...left.aunts.map((a) => [...a, right.root]), ...right.aunts.map((a) => [...a, left.root])],
  };
}

/** The root implied by `item` at `index` of `total` items with these aunts (CometBFT's proof check). */
export function merkleRootFromProof(
  item: Uint8Array,
  index: number,
  total: number,
  aunts: Uint8Array[],
): Uint8Array | undefined {
  const fromAunts = (leaf: Uint8Array, i: number, n: number, rest: Uint8Array[]): Uint8Array | undefined => {
    if (i < 0 || i >= n) return undefined;
    if (n === 1) return rest.length === 0 ? leaf : undefined;
    if (rest.length === 0) return undefined;
    const k = splitPoint(n);
    const last = rest[rest.length - 1]!;
    const inner = rest.slice(0, -1);
    if (i < k) {
      const l = fromAunts(leaf, i, k, inner);
      return l && innerHash(l, last);
    }
    const r = fromAunts(leaf, i - k, n - k, inner);
    return r && innerHash(last, r);
  };
  return fromAunts(leafHash(item), index, total, aunts);
}
