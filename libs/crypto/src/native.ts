// Whether keccak256 and secp256k1 run on their packages' native bindings or on their JavaScript
// fallbacks. Both packages fall back silently when the binding cannot load (their install scripts
// are denied: they ship prebuilt binaries that node-gyp-build loads at run time), which is correct
// but many times slower; this makes the difference visible to tests and diagnostics.
import { createRequire } from 'node:module';
import { keccakIsNative } from './hash.js';

const require = createRequire(import.meta.url);

/** secp256k1's index.js exports its native bindings.js, or './elliptic' when the binding fails. */
function secp256k1IsNative(): boolean {
  try {
    return require('secp256k1') === require('secp256k1/bindings.js');
  } catch {
    return false;
  }
}

export function nativeBackends(): { keccak: boolean; secp256k1: boolean } {
  return { keccak: keccakIsNative, secp256k1: secp256k1IsNative() };
}
