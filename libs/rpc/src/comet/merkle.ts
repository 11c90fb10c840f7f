// Transaction inclusion proofs as CometBFT's types.Txs.Proof builds them: the RFC 6962 Merkle tree
// of libs/crypto over the sha256 hashes of the block's transactions.
import { merkleProof, sha256 } from '@noded/crypto';
import type { JsonObject } from './encode.js';
import { b64, hexUpper, str } from './wire.js';

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
