// ed25519 through node:crypto (about 20x faster than a pure-JS implementation here).
// Keys travel as raw bytes: 32-byte seeds (private) and 32-byte public keys, as CometBFT stores them
// (its priv_validator_key.json holds seed || pubkey, 64 bytes, base64).
import { createPrivateKey, createPublicKey, type KeyObject, randomBytes, sign, verify } from 'node:crypto';
import { sha256 } from './hash.js';

// DER prefixes of PKCS#8 (private) and SPKI (public) ed25519 keys; the raw key follows.
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export interface Ed25519KeyPair {
  seed: Uint8Array;
  publicKey: Uint8Array;
}

const privCache = new Map<string, KeyObject>();
const pubCache = new Map<string, KeyObject>();

function privateKeyObject(seed: Uint8Array): KeyObject {
  const id = Buffer.from(seed).toString('hex');
  let key = privCache.get(id);
  if (!key) {
    key = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
    privCache.set(id, key);
  }
  return key;
}

function publicKeyObject(publicKey: Uint8Array): KeyObject {
  const id = Buffer.from(publicKey).toString('hex');
  let key = pubCache.get(id);
  if (!key) {
    if (pubCache.size > 10_000) pubCache.clear();
    key = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, publicKey]), format: 'der', type: 'spki' });
    pubCache.set(id, key);
  }
  return key;
}

export function ed25519PublicKey(seed: Uint8Array): Uint8Array {
  if (seed.length !== 32) throw new Error(`ed25519 seed must be 32 bytes, got ${seed.length}`);
  const der = createPublicKey(privateKeyObject(seed)).export({ format: 'der', type: 'spki' });
  return new Uint8Array(der.subarray(SPKI_PREFIX.length));
}

export function ed25519Generate(seed: Uint8Array = randomBytes(32)): Ed25519KeyPair {
  return { seed: new Uint8Array(seed), publicKey: ed25519PublicKey(seed) };
}

export function ed25519Sign(seed: Uint8Array, message: Uint8Array): Uint8Array {
  return new Uint8Array(sign(null, message, privateKeyObject(seed)));
}

export function ed25519Verify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  if (publicKey.length !== 32 || signature.length !== 64) return false;
  try {
    return verify(null, message, publicKeyObject(publicKey), signature);
  } catch {
    return false;
  }
}

/** CometBFT address of an ed25519 key: the first 20 bytes of sha256(pubkey). */
export function ed25519Address(publicKey: Uint8Array): Uint8Array {
  return sha256(publicKey).subarray(0, 20);
}

/** CometBFT node ID: lowercase hex of the key's address. */
export function nodeIdFromPublicKey(publicKey: Uint8Array): string {
  return Buffer.from(ed25519Address(publicKey)).toString('hex');
}
