import * as nodeCrypto from 'node:crypto';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { nativeKeccak256, nativeSha256 } from '@noded/native';

const require = createRequire(import.meta.url);

/**
 * node:crypto's one-shot digest (Node 20.12 and later; package.json allows 20.11): without a Hash
 * object per call it takes about 60% of createHash's time on the 32- to 100-byte inputs of the
 * Merkle trees that hash every header, commit and result set (7.0 against 11.7 µs a digest
 * measured on a loaded 2-core machine).
 */
const oneShot = (nodeCrypto as { hash?: (alg: string, data: Uint8Array, enc: 'buffer') => Buffer }).hash;

const SHA256_OF_NOTHING = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

type Digest = (data: Uint8Array) => Uint8Array;

/**
 * One of libs/native's one-call digests, when its add-on is built and gives the digest of nothing
 * right (`ofNothing`, hex); undefined otherwise, so the caller falls back.
 */
function checkedAddon(digest: Digest | undefined, ofNothing: string): Digest | undefined {
  try {
    if (digest === undefined) return undefined;
    return Buffer.from(digest(new Uint8Array(0))).toString('hex') === ofNothing ? digest : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The add-on's SHA-256: no Buffer and no OpenSSL context per digest (1.6-2.2 against 2.5-3.5 us for
 * node:crypto's one-shot on the 33- to 110-byte inputs of Merkle nodes and transactions, measured on a
 * loaded 2-core machine).
 */
const sha256Call = checkedAddon(nativeSha256, SHA256_OF_NOTHING);
/** Which implementation sha256 runs on (the add-on's one call, or node:crypto). */
export const sha256Backend: 'addon' | 'node:crypto' = sha256Call !== undefined ? 'addon' : 'node:crypto';

/** SHA-256 of `data`: a fresh 32-byte array. */
export function sha256(data: Uint8Array): Uint8Array {
  if (sha256Call !== undefined) return sha256Call(data);
  if (oneShot) return new Uint8Array(oneShot('sha256', data, 'buffer'));
  return new Uint8Array(createHash('sha256').update(data).digest());
}

const asBuffer = (data: Uint8Array): Buffer =>
  Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);

/** The sponge of the `keccak` package's native binding. */
interface KeccakState {
  initialize(rate: number, capacity: number): void;
  absorb(data: Buffer): void;
  absorbLastFewBits(bits: number): void;
  squeeze(length: number): Buffer;
}

const KECCAK256_RATE = 1088;
const KECCAK256_CAPACITY = 512;
const KECCAK_PADDING = 0x01;
const KECCAK256_OF_NOTHING = 'c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470';

/**
 * One native sponge, reused for every digest of this thread (JavaScript runs one digest at a
 * time; each worker thread loads its own). The package's public API builds a Node stream per
 * digest, which costs twice the hashing itself on the 20- to 200-byte inputs of addresses,
 * storage slots, trie nodes and transactions. Undefined when the binding is missing or wrong.
 */
function nativeSponge(): KeccakState | undefined {
  try {
    const gypBuild = require('node-gyp-build') as (dir: string) => new () => KeccakState;
    const State = gypBuild(dirname(require.resolve('keccak/package.json')));
    const s = new State();
    s.initialize(KECCAK256_RATE, KECCAK256_CAPACITY);
    s.absorb(Buffer.alloc(0));
    s.absorbLastFewBits(KECCAK_PADDING);
    return s.squeeze(32).toString('hex') === KECCAK256_OF_NOTHING ? s : undefined;
  } catch {
    return undefined;
  }
}

/** The add-on's Keccak-256: one call and no Buffer per digest, against the sponge's four calls and a Buffer. */
const oneCall = checkedAddon(nativeKeccak256, KECCAK256_OF_NOTHING);
const sponge = nativeSponge();
/** True when keccak256 runs on a native binding, false on the package's JavaScript fallback. */
export const keccakIsNative = oneCall !== undefined || sponge !== undefined;
/** Which implementation keccak256 runs on (the add-on's one call, the package's sponge, or its JS). */
export const keccakBackend: 'addon' | 'sponge' | 'js' =
  oneCall !== undefined ? 'addon' : sponge !== undefined ? 'sponge' : 'js';
// The package's API, which falls back to its JavaScript implementation without the binding.
const createKeccak = require('keccak') as (alg: 'keccak256') => {
  update(data: Buffer): { digest(): Buffer };
};

/** keccak256 of `data`: a fresh 32-byte array. */
export function keccak256(data: Uint8Array): Uint8Array {
  if (oneCall !== undefined) return oneCall(data);
  if (sponge === undefined) return new Uint8Array(createKeccak('keccak256').update(asBuffer(data)).digest());
  sponge.initialize(KECCAK256_RATE, KECCAK256_CAPACITY);
  sponge.absorb(asBuffer(data));
  sponge.absorbLastFewBits(KECCAK_PADDING);
  const out = sponge.squeeze(32);
  return new Uint8Array(out.buffer, out.byteOffset, 32);
}
