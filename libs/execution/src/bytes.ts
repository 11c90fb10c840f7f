// Byte and hex helpers used across execution. Buffer-backed for speed; results are plain
// Uint8Array views or copies so callers never depend on Buffer.
import { ChainError, type Hex } from '@noded/types';

export const EMPTY = new Uint8Array(0);

export function toHex(b: Uint8Array): Hex {
  return `0x${Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex')}`;
}

/** Lowercase hex without the 0x prefix (map keys). */
export function toKey(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
}

export function fromHex(h: string): Uint8Array {
  const s = h.startsWith('0x') || h.startsWith('0X') ? h.slice(2) : h;
  const even = s.length % 2 === 1 ? `0${s}` : s;
  if (!/^[0-9a-fA-F]*$/.test(even)) throw new Error(`invalid hex string ${JSON.stringify(h)}`);
  return new Uint8Array(Buffer.from(even, 'hex'));
}

export function bytesToBigInt(b: Uint8Array): bigint {
  if (b.length === 0) return 0n;
  // Up to six bytes fit a double exactly: no hex string to build and parse (nonces, gas, chain ids).
  if (b.length <= 6) {
    let n = 0;
    for (let i = 0; i < b.length; i++) n = n * 256 + b[i];
    return BigInt(n);
  }
  return BigInt(`0x${toKey(b)}`);
}

/** Minimal big-endian bytes (0 -> empty), as RLP wants integers. */
export function bigIntToBytes(n: bigint): Uint8Array {
  if (n < 0n) throw new Error(`negative integer ${n} cannot be encoded`);
  if (n === 0n) return EMPTY;
  let s = n.toString(16);
  if (s.length % 2 === 1) s = `0${s}`;
  return new Uint8Array(Buffer.from(s, 'hex'));
}

/** Fixed-width big-endian bytes. */
export function bigIntToFixed(n: bigint, width: number): Uint8Array {
  const s = n.toString(16).padStart(width * 2, '0');
  if (s.length > width * 2) throw new Error(`integer ${n} does not fit in ${width} bytes`);
  return new Uint8Array(Buffer.from(s, 'hex'));
}

export function be64(n: number | bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt(n));
  return out;
}

export function readBe64(b: Uint8Array, offset = 0): number {
  return Number(new DataView(b.buffer, b.byteOffset, b.byteLength).getBigUint64(offset));
}

export function concat(...parts: Uint8Array[]): Uint8Array {
  let len = 0;
  for (const p of parts) len += p.length;
  const out = new Uint8Array(len);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

export function equal(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Strips leading zero bytes (storage values are kept minimal). */
export function stripZeros(b: Uint8Array): Uint8Array {
  let i = 0;
  while (i < b.length && b[i] === 0) i++;
  return i === 0 ? b : b.subarray(i);
}

export function padLeft(b: Uint8Array, width: number): Uint8Array {
  if (b.length >= width) return b;
  const out = new Uint8Array(width);
  out.set(b, width - b.length);
  return out;
}

/** Quantity as 0x hex without leading zeros (geth's hexutil.Big). */
export function quantity(n: bigint | number): Hex {
  return `0x${n.toString(16)}`;
}

export function addressHex(b: Uint8Array): Hex {
  return toHex(b);
}

/** Validates and normalises a 0x address to lowercase. */
export function normAddress(a: string): Hex {
  if (!/^0x[0-9a-fA-F]{40}$/.test(a)) {
    throw new ChainError(-32602, `invalid address ${JSON.stringify(a)}: want 0x followed by 40 hex digits`);
  }
  return a.toLowerCase() as Hex;
}

export function minBig(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

export function maxBig(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}
