// EthereumJS analyses a contract's bytecode (valid JUMPDESTs, PUSH immediates, the opcode entry at
// every offset) each time a call frame starts running it: for an eth_call of a token's balanceOf
// that analysis was 7% of the node's CPU, and a block of 1000 ERC-20 transfers analysed the same
// token 1000 times. The result depends only on the code bytes and on the EVM's opcode table, so it
// is cached per EVM instance, keyed by the code array itself: the state layer hands out one
// Uint8Array per code hash (StateDb's code cache), so the same contract hits the same entry, and
// a fresh array (init code, a state override) simply misses. Nothing in the analysis result is
// written to by the interpreter (read-only lookups), so sharing it between frames is safe.
//
// The Interpreter class is internal to @ethereumjs/evm (not exported), so its module is loaded by
// file URL next to the package entry: the same module instance the EVM itself uses.

interface Analysis {
  jumps: Uint8Array;
  pushes: Record<number, bigint>;
  opcodesCached: unknown[];
}
interface InterpreterProto {
  _getValidJumpDestinations(this: { _evm: object }, code: Uint8Array): Analysis;
  __nodedJumpCache?: true;
}

const byEvm = new WeakMap<object, WeakMap<Uint8Array, Analysis>>();

async function install(): Promise<boolean> {
  let mod: { Interpreter?: { prototype: InterpreterProto } };
  try {
    mod = await import(new URL('./interpreter.js', import.meta.resolve('@ethereumjs/evm')).href);
  } catch {
    return false; // another layout of the package: run uncached, as before
  }
  const proto = mod.Interpreter?.prototype;
  if (!proto || typeof proto._getValidJumpDestinations !== 'function') return false;
  if (proto.__nodedJumpCache) return true;
  const analyse = proto._getValidJumpDestinations;
  proto._getValidJumpDestinations = function cachedJumpDestinations(code) {
    let perEvm = byEvm.get(this._evm);
    if (!perEvm) {
      perEvm = new WeakMap();
      byEvm.set(this._evm, perEvm);
    }
    let hit = perEvm.get(code);
    if (!hit) {
      hit = analyse.call(this, code);
      perEvm.set(code, hit);
    }
    return hit;
  };
  proto.__nodedJumpCache = true;
  return true;
}

/** True when the cache is active (false only if @ethereumjs/evm changed its internal layout). */
export const jumpDestinationCache: boolean = await install();
