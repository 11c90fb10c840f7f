// The slice of the Solidity ABI the validator pool speaks: 32-byte words, addresses, uint256,
// bytes32 and strings in calldata; address[] / uint256[] / strings in return data; Error(string).
import { keccak256 } from '@noded/crypto';
import { bigIntToFixed, bytesToBigInt, concat } from '../bytes.js';

const WORD = 32;
const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The 4-byte selector of a function or the topic of an event signature. */
export function selectorOf(signature: string): string {
  return Buffer.from(keccak256(utf8.encode(signature)).subarray(0, 4)).toString('hex');
}
export function topicOf(signature: string): Uint8Array {
  return keccak256(utf8.encode(signature));
}

/** Calldata that does not decode as the function's arguments. */
export class AbiDecodeError extends Error {}

/** Reads the arguments after the selector; every read is bounds-checked. */
export class ArgReader {
  constructor(
    private readonly data: Uint8Array,
    private readonly fn: string,
  ) {}

  private word(i: number): Uint8Array {
    const start = 4 + i * WORD;
    if (this.data.length < start + WORD)
      throw new AbiDecodeError(`${this.fn}: calldata too short for argument ${i + 1}`);
    return this.data.subarray(start, start + WORD);
  }

  uint(i: number, bits = 256): bigint {
    const v = bytesToBigInt(this.word(i));
    if (bits < 256 && v >> BigInt(bits) !== 0n)
      throw new AbiDecodeError(`${this.fn}: argument ${i + 1} does not fit in a uint${bits}`);
    return v;
  }

  address(i: number): Uint8Array {
    const w = this.word(i);
    if (w.subarray(0, 12).some((b) => b !== 0))
      throw new AbiDecodeError(`${this.fn}: argument ${i + 1} is not an address (high 12 bytes not zero)`);
    return w.slice(12);
  }

  bytes32(i: number): Uint8Array {
    return this.word(i).slice();
  }

  string(i: number, maxBytes: number): string {
    const off = this.uint(i);
    const base = 4n + off;
    if (base + 32n > BigInt(this.data.length))
      throw new AbiDecodeError(`${this.fn}: argument ${i + 1} (string) points past the calldata`);
    const len = bytesToBigInt(this.data.subarray(Number(base), Number(base) + WORD));
    if (len > BigInt(maxBytes))
      throw new AbiDecodeError(`${this.fn}: argument ${i + 1} is ${len} bytes long, longer than ${maxBytes}`);
    const start = Number(base) + WORD;
    if (start + Number(len) > this.data.length)
      throw new AbiDecodeError(`${this.fn}: argument ${i + 1} (string) runs past the calldata`);
    try {
      return strictUtf8.decode(this.data.subarray(start, start + Number(len)));
    } catch {
      throw new AbiDecodeError(`${this.fn}: argument ${i + 1} is not valid UTF-8`);
    }
  }
}

/** A head/tail encoder for a tuple of return values (or event data). */
export type AbiValue =
  | { t: 'uint'; v: bigint }
  | { t: 'address'; v: Uint8Array }
  | { t: 'bytes32'; v: Uint8Array }
  | { t: 'bool'; v: boolean }
  | { t: 'string'; v: string }
  | { t: 'address[]'; v: Uint8Array[] }
  | { t: 'uint[]'; v: bigint[] };

const word = (n: bigint) => bigIntToFixed(n, WORD);
const addrWord = (a: Uint8Array) => concat(new Uint8Array(12), a);

function padded(b: Uint8Array): Uint8Array {
  const rest = b.length % WORD;
  return rest === 0 ? b : concat(b, new Uint8Array(WORD - rest));
}

export function encodeAbi(values: AbiValue[]): Uint8Array {
  const heads: Uint8Array[] = [];
  const tails: Uint8Array[] = [];
  let tailOffset = BigInt(values.length * WORD);
  for (const x of values) {
    let tail: Uint8Array | undefined;
    switch (x.t) {
      case 'uint':
        heads.push(word(x.v));
        break;
      case 'address':
        heads.push(addrWord(x.v));
        break;
      case 'bytes32':
        heads.push(x.v);
        break;
      case 'bool':
        heads.push(word(x.v ? 1n : 0n));
        break;
      case 'string': {
        const b = utf8.encode(x.v);
        tail = concat(word(BigInt(b.length)), padded(b));
        break;
      }
      case 'address[]':
        tail = concat(word(BigInt(x.v.length)), ...x.v.map(addrWord));
        break;
      case 'uint[]':
        tail = concat(word(BigInt(x.v.length)), ...x.v.map(word));
        break;
    }
    if (tail) {
      heads.push(word(tailOffset));
      tails.push(tail);
      tailOffset += BigInt(tail.length);
    }
  }
  return concat(...heads, ...tails);
}

const ERROR_SELECTOR = Uint8Array.of(0x08, 0xc3, 0x79, 0xa0);

/** Revert data Error(string), as Solidity's require(false, reason). */
export function encodeError(reason: string): Uint8Array {
  return concat(ERROR_SELECTOR, encodeAbi([{ t: 'string', v: reason }]));
}
