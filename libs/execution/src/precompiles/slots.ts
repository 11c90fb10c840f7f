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

/** Most slot names one precompile's slot function remembers (then it starts over). */
const SLOT_CACHE_MAX = 8192;

/**
 * The slot function of the precompile whose slot names start with `prefix` (e.g. "noded.staking/").
 * Names are remembered (keyed names too: the block's liveness pass asks for each validator's
 * records by the same keys every block, and a keccak per slot was most of its cost), under a key
 * that spells out the name and each key with its length, so that no two argument lists share one.
 */
export function namedSlots(prefix: string): (name: string, ...keys: Array<Uint8Array | bigint>) => string {
  const head = utf8.encode(prefix);
  const cache = new Map<string, string>();
  return (name, ...keys) => {
    let id = `${name.length}:${name}`;
    for (const k of keys)
      id +=
        typeof k === 'bigint'
          ? `n${k.toString(16)};`
          : `b${k.length}:${Buffer.from(k.buffer, k.byteOffset, k.length).toString('latin1')}`;
    const hit = cache.get(id);
    if (hit !== undefined) return hit;
    const parts = keys.map((k) => (typeof k === 'bigint' ? bigIntTo32(k) : k));
    const s = toKey(keccak256(concat(head, utf8.encode(name), ...parts)));
    if (cache.size >= SLOT_CACHE_MAX) cache.clear();
    cache.set(id, s);
    return s;
  };
}
