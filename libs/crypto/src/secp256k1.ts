// secp256k1 through the native `secp256k1` binding (about 30x faster recovery than pure JS here).
import { createRequire } from 'node:module';
import { keccak256 } from './hash.js';

const require = createRequire(import.meta.url);
interface NativeSecp {
  ecdsaRecover(sig: Uint8Array, recid: number, msg32: Uint8Array, compressed?: boolean): Uint8Array;
  ecdsaSign(msg32: Uint8Array, privateKey: Uint8Array): { signature: Uint8Array; recid: number };
  publicKeyCreate(privateKey: Uint8Array, compressed?: boolean): Uint8Array;
  publicKeyConvert(publicKey: Uint8Array, compressed?: boolean): Uint8Array;
  privateKeyVerify(privateKey: Uint8Array): boolean;
}
const secp = require('secp256k1') as NativeSecp;

/** Uncompressed public key without the 0x04 prefix (64 bytes) from a 32-byte private key. */
export function secp256k1PublicKey(privateKey: Uint8Array): Uint8Array {
  return secp.publicKeyCreate(privateKey, false).subarray(1);
}

/** Ethereum address (20 bytes) of a 64-byte uncompressed public key. */
export function ethAddressFromPublicKey(publicKey64: Uint8Array): Uint8Array {
  return keccak256(publicKey64).subarray(12);
}

export function ethAddressFromPrivateKey(privateKey: Uint8Array): Uint8Array {
  return ethAddressFromPublicKey(secp256k1PublicKey(privateKey));
}

/** Signs a 32-byte digest; returns r || s (64 bytes) and the recovery id. */
export function secp256k1Sign(
  digest: Uint8Array,
  privateKey: Uint8Array,
): { signature: Uint8Array; recovery: number } {
  const { signature, recid } = secp.ecdsaSign(digest, privateKey);
  return { signature: new Uint8Array(signature), recovery: recid };
}

/** Recovers the 64-byte uncompressed public key from r || s and a recovery id (0 or 1). */
export function secp256k1Recover(digest: Uint8Array, signature64: Uint8Array, recovery: number): Uint8Array {
  return secp.ecdsaRecover(signature64, recovery, digest, false).subarray(1);
}

export function isValidSecp256k1PrivateKey(privateKey: Uint8Array): boolean {
  return privateKey.length === 32 && secp.privateKeyVerify(privateKey);
}
