// Named storage slots of a precompile's account: keccak256(prefix ‖ name ‖ keys), each key a byte
// string or a number as a 32-byte word. Slots without keys are cached.
import { keccak256 } from '@noded/crypto';
import { bigIntToBytes, concat, toKey } from '../bytes.js';

const utf8 = new TextEncoder();

/** A number as a 32-byte big-endian word. */
export function bigIntTo32(n: bigint): Uint8Array {
  const b = bigIntToBytes(n);
  return concat(new Uint8Array(32 - b.length), b);
}

/** The slot function of the precompile whose slot names start with `prefix` (e.g. "noded.staking/"). */
export function namedSlots(prefix: string): (name: string, ...keys: Array<Uint8Array | bigint>) => string {
  const head = utf8.encode(prefix);
  const cache = new Map<string, string>();
  return (name, ...keys) => {
    if (keys.length === 0) {
      const hit = cache.get(name);
      if (hit) return hit;
    }
    const parts = keys.map((k) => (typeof k === 'bigint' ? bigIntTo32(k) : k));
    const s = toKey(keccak256(concat(head, utf8.encode(name), ...parts)));
    if (keys.length === 0) cache.set(name, s);
    return s;
  };
}
