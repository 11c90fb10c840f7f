// The one EthereumJS Common of the chain: our EVM chain id, hardfork Osaka, native keccak and
// secp256k1 through `customCrypto`.
//
// EthereumJS copies its Common for every transaction, block header and EVM it builds, and re-merges
// parameter tables on each copy (measured here: 13% of transaction time). The chain never changes
// hardfork at runtime, so a single shared instance is safe: copy() returns itself and a parameter
// table is merged once.
import { Common, type CustomCrypto, Hardfork, Mainnet } from '@ethereumjs/common';
import { keccak256, secp256k1Recover, sha256 } from '@noded/crypto';

/** The hardfork this chain runs (EthereumJS 10 supports Osaka; solc 0.8.37 targets it by default). */
export const HARDFORK = Hardfork.Osaka;

class SharedCommon extends Common {
  private readonly merged = new WeakSet<object>();

  constructor(opts: ConstructorParameters<typeof Common>[0]) {
    super(opts);
    // Every EVM subscribes to 'hardforkChanged' on its Common; on a shared, fixed-hardfork instance
    // those listeners would only accumulate (one per VM built), so subscriptions are dropped.
    const events = this.events;
    events.on = () => events;
    events.once = () => events;
    this.eipSet = new Set(this._activatedEIPsCache);
  }

  private eipSet: Set<number> | undefined;

  // The interpreter asks this on nearly every opcode; the base class scans an array.
  override isActivatedEIP(eip: number): boolean {
    return this.eipSet ? this.eipSet.has(eip) : super.isActivatedEIP(eip);
  }

  override copy(): this {
    return this;
  }

  override updateParams(params: Parameters<Common['updateParams']>[0]): void {
    if (this.merged.has(params)) return;
    this.merged.add(params);
    super.updateParams(params);
    this.paramCache?.clear();
  }

  private paramCache: Map<string, bigint> | undefined;

  // Gas costs are read through here on every opcode; the base class converts to BigInt each time.
  override param(name: string): bigint {
    this.paramCache ??= new Map();
    let v = this.paramCache.get(name);
    if (v === undefined) {
      v = super.param(name);
      this.paramCache.set(name, v);
    }
    return v;
  }

  override setHardfork(hardfork: string): void {
    // The shared instance must never move; EthereumJS only calls this with the same value.
    if (this.merged !== undefined && hardfork !== HARDFORK) {
      throw new Error(
        `the chain runs hardfork ${HARDFORK}; refusing to switch the shared Common to ${hardfork}`,
      );
    }
    super.setHardfork(hardfork);
  }
}

function pad32(b: Uint8Array): Uint8Array {
  if (b.length === 32) return b;
  if (b.length > 32) throw new Error('signature component longer than 32 bytes');
  const out = new Uint8Array(32);
  out.set(b, 32 - b.length);
  return out;
}

/** v -> recovery id as EthereumJS' util/signature does (typed: 0/1; legacy: 27/28 or EIP-155). */
function recoveryId(v: bigint, chainId?: bigint): number {
  if (v === 0n || v === 1n) return Number(v);
  if (chainId === undefined) return Number(v - 27n);
  return Number(v - (chainId * 2n + 35n));
}

/** EthereumJS' ecrecover (64-byte public key) on the native secp256k1 binding. */
export function nativeEcrecover(
  msgHash: Uint8Array,
  v: bigint,
  r: Uint8Array,
  s: Uint8Array,
  chainId?: bigint,
): Uint8Array {
  const rec = recoveryId(v, chainId);
  if (rec !== 0 && rec !== 1) throw new Error('invalid signature v value');
  const sig = new Uint8Array(64);
  sig.set(pad32(r), 0);
  sig.set(pad32(s), 32);
  return secp256k1Recover(msgHash, sig, rec);
}

export const nativeCrypto: CustomCrypto = {
  keccak256: (msg: Uint8Array) => keccak256(msg),
  sha256: (msg: Uint8Array) => sha256(msg),
  ecrecover: nativeEcrecover,
};

const commons = new Map<bigint, Common>();

/** The shared Common for an EVM chain id (one instance per id per process). */
export function chainCommon(evmChainId: bigint): Common {
  let c = commons.get(evmChainId);
  if (!c) {
    c = new SharedCommon({
      chain: { ...Mainnet, name: `noded-${evmChainId}`, chainId: evmChainId.toString() },
      hardfork: HARDFORK,
      customCrypto: nativeCrypto,
    });
    commons.set(evmChainId, c);
  }
  return c;
}
