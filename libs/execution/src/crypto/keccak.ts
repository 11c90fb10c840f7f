// keccak256 on the hot paths of execution (trie hashing, storage keys, EVM SHA3, addresses).
// The `keccak` package's API builds a Node stream per digest; driving its native state object
// directly, and reusing one, is about twice as fast per call here. Falls back to libs/crypto when
// the native add-on is unavailable. Safe to reuse: JavaScript runs one digest at a time.
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { keccak256 as portableKeccak } from '../../../crypto/index.js';

interface KeccakState {
  initialize(rate: number, capacity: number): void;
  absorb(data: Buffer): void;
  absorbLastFewBits(bits: number): void;
  squeeze(length: number): Buffer;
}

function loadNative(): KeccakState | undefined {
  try {
    const require = createRequire(import.meta.url);
    const gypBuild = require('node-gyp-build') as (dir: string) => new () => KeccakState;
    const State = gypBuild(dirname(require.resolve('keccak/package.json')));
    const s = new State();
    s.initialize(1088, 512);
    s.absorb(Buffer.alloc(0));
    s.absorbLastFewBits(0x01);
    const empty = s.squeeze(32).toString('hex');
    // keccak256("") must be c5d246...; anything else means a broken build.
    return empty === 'c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470' ? s : undefined;
  } catch {
    return undefined;
  }
}

const state = loadNative();

/** keccak256 of `data`; the result is a fresh 32-byte array (offset 0). */
export const keccak: (data: Uint8Array) => Uint8Array = state
  ? (data: Uint8Array) => {
      state.initialize(1088, 512);
      state.absorb(Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength));
      state.absorbLastFewBits(0x01);
      return state.squeeze(32);
    }
  : portableKeccak;
