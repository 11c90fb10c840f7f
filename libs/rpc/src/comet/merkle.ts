// Transaction inclusion proofs as CometBFT's types.Txs.Proof builds them: an RFC 6962 Merkle tree
// (leaf = sha256(0x00 || item), inner = sha256(0x01 || left || right), split at the largest power
// of two below the size) over the sha256 hashes of the block's transactions.
import { sha256 } from '../../../crypto/index.js';
import type { JsonObject } from './encode.js';
import { b64, hexUpper, str } from './wire.js';

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

function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

export function merkleRoot(items: Uint8Array[]): Uint8Array {
  if (items.length === 0) return sha256(new Uint8Array(0));
  if (items.length === 1) return leafHash(items[0]);
  const k = splitPoint(items.length);
  return innerHash(merkleRoot(items.slice(0, k)), merkleRoot(items.slice(k)));
}

/** Root, leaf hash and aunts (from the leaf's sibling up to the root's child) for item `index`. */
export function merkleProof(
  items: Uint8Array[],
  index: number,
): { root: Uint8Array; leaf: Uint8Array; aunts: Uint8Array[] } {
  if (items.length === 1) {
    const leaf = leafHash(items[0]);
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

/** types.TxProof JSON for transaction `index` of a block. */
export function txProofJson(txs: Uint8Array[], index: number): JsonObject {
  const proof = merkleProof(txs.map(sha256), index);
  return {
    root_hash: hexUpper(proof.root),
    data: b64(txs[index]),
    proof: {
      total: str(txs.length),
      index: str(index),
      leaf_hash: b64(proof.leaf),
      aunts: proof.aunts.map(b64),
    },
  };
}
