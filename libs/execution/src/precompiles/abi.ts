// The little of the Solidity ABI the chain's precompiles speak: 4-byte selectors, 32-byte words in
// and out, Error(string) revert data and log topics. A decode failure throws AbiError with a
// message naming the argument and the rule, which the precompile turns into its revert reason.
import { keccak256 } from '@noded/crypto';
import { bigIntToFixed, bytesToBigInt, concat } from '../bytes.js';

const UINT256_MAX = (1n << 256n) - 1n;

/** Calldata a precompile refuses: the message is its revert reason. */
export class AbiError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AbiError';
  }
}

/** The 4-byte selector of a function signature such as `transfer(address,uint256)`, as 8 hex digits. */
export function selectorOf(signature: string): string {
  return Buffer.from(keccak256(new TextEncoder().encode(signature)).subarray(0, 4)).toString('hex');
}

/** The topic of an event signature such as `Transfer(address,address,uint256)`. */
export function eventTopic(signature: string): Uint8Array {
  return keccak256(new TextEncoder().encode(signature));
}

/**
 * The arguments of one call, read word by word after the selector. `signature` names the function
 * in error messages; `minWords` is how many head words its arguments take.
 */
export class Args {
  constructor(
    private readonly data: Uint8Array,
    private readonly signature: string,
    minWords: number,
  ) {
    const want = 4 + 32 * minWords;
    if (data.length < want) {
      throw new AbiError(`calldata for ${signature} is ${data.length} bytes, want at least ${want}`);
    }
  }

  word(i: number): Uint8Array {
    return this.data.subarray(4 + 32 * i, 36 + 32 * i);
  }

  uint(i: number): bigint {
    return bytesToBigInt(this.word(i));
  }

  /** A uint that must fit `bits` (uint8, uint64): higher bits set are refused, as Solidity does. */
  uintN(i: number, bits: number, name: string): bigint {
    const v = this.uint(i);
    if (v >> BigInt(bits) !== 0n) {
      throw new AbiError(`argument ${name} of ${this.signature} is ${v}, which does not fit uint${bits}`);
    }
    return v;
  }

  /** A 20-byte address: the 12 bytes above it must be zero. */
  address(i: number, name: string): Uint8Array {
    const w = this.word(i);
    for (let b = 0; b < 12; b++) {
      if (w[b] !== 0) {
        throw new AbiError(
          `argument ${name} of ${this.signature} is not an address (0x${Buffer.from(w).toString('hex')} has bits above 160)`,
        );
      }
    }
    return w.slice(12);
  }

  /** A dynamic `bytes` argument whose offset is head word `i`. */
  bytes(i: number, name: string): Uint8Array {
    const off = this.uint(i);
    const body = this.data.length - 4;
    if (off > BigInt(body) - 32n) {
      throw new AbiError(`argument ${name} of ${this.signature} points past the calldata (offset ${off})`);
    }
    const start = 4 + Number(off);
    const len = bytesToBigInt(this.data.subarray(start, start + 32));
    if (len > BigInt(this.data.length - start - 32)) {
      throw new AbiError(`argument ${name} of ${this.signature} is ${len} bytes long, past the calldata`);
    }
    return this.data.slice(start + 32, start + 32 + Number(len));
  }
}

export function uintWord(n: bigint): Uint8Array {
  if (n < 0n || n > UINT256_MAX) throw new RangeError(`${n} is not a uint256`);
  return bigIntToFixed(n, 32);
}

export function addressWord(a: Uint8Array): Uint8Array {
  const w = new Uint8Array(32);
  w.set(a, 32 - a.length);
  return w;
}

export function boolWord(b: boolean): Uint8Array {
  return uintWord(b ? 1n : 0n);
}

/** The ABI encoding of a single `string` return value. */
export function stringReturn(s: string): Uint8Array {
  const text = new TextEncoder().encode(s);
  const padded = new Uint8Array(Math.ceil(text.length / 32) * 32);
  padded.set(text);
  return concat(uintWord(32n), uintWord(BigInt(text.length)), padded);
}

/** Revert data `Error(string)`, which geth, ethers and viem decode into the reason. */
export function errorData(reason: string): Uint8Array {
  return concat(Uint8Array.of(0x08, 0xc3, 0x79, 0xa0), stringReturn(reason));
}

/** A value of `encodeValues`: a static word, or a dynamic `bytes` or `uint256[]`. */
export type AbiValue = { word: Uint8Array } | { bytes: Uint8Array } | { uints: bigint[] };

function padded(b: Uint8Array): Uint8Array {
  const out = new Uint8Array(Math.ceil(b.length / 32) * 32);
  out.set(b);
  return out;
}

/** abi.encode of a list of values (heads, then the dynamic tails in order). */
export function encodeValues(values: AbiValue[]): Uint8Array {
  const heads: Uint8Array[] = [];
  const tails: Uint8Array[] = [];
  let offset = 32 * values.length;
  for (const v of values) {
    if ('word' in v) {
      heads.push(v.word);
      continue;
    }
    const tail =
      'bytes' in v
        ? concat(uintWord(BigInt(v.bytes.length)), padded(v.bytes))
        : concat(uintWord(BigInt(v.uints.length)), ...v.uints.map(uintWord));
    heads.push(uintWord(BigInt(offset)));
    tails.push(tail);
    offset += tail.length;
  }
  return concat(...heads, ...tails);
}
