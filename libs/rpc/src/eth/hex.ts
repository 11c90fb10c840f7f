// Hex encodings as geth writes them: quantities without leading zeros, data as even-length lowercase.
import { keccak256 } from '@noded/crypto';
import type { Hex } from '@noded/types';

/** A hex quantity: "0x0", "0x1a" (never leading zeros). */
export function quantity(n: bigint | number): Hex {
  return `0x${n.toString(16)}`;
}

/** A hex quantity from a 0x byte string (signature r/s values are quantities in geth's output). */
export function quantityFromHex(h: Hex): Hex {
  const digits = h.slice(2).replace(/^0+/, '');
  return `0x${digits === '' ? '0' : digits.toLowerCase()}`;
}

export function bytesToHex(b: Uint8Array): Hex {
  return `0x${Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex')}`;
}

/** Decodes a 0x hex string already validated as even-length hex. */
export function hexToBytes(h: string): Uint8Array {
  const body = h.startsWith('0x') || h.startsWith('0X') ? h.slice(2) : h;
  return new Uint8Array(Buffer.from(body, 'hex'));
}

/** Minimal big-endian bytes of a non-negative integer (empty for zero), as RLP wants them. */
export function bigintToBytes(n: bigint): Uint8Array {
  if (n === 0n) return new Uint8Array();
  let s = n.toString(16);
  if (s.length % 2 === 1) s = `0${s}`;
  return new Uint8Array(Buffer.from(s, 'hex'));
}

export function bytesToBigint(b: Uint8Array): bigint {
  return b.length === 0 ? 0n : BigInt(bytesToHex(b));
}

/** EIP-55 mixed-case checksum form of a 20-byte address (geth's common.Address.Hex()). */
export function checksumAddress(address: string): Hex {
  const lower = address.slice(2).toLowerCase();
  const hash = Buffer.from(keccak256(Buffer.from(lower, 'ascii'))).toString('hex');
  let out = '0x';
  for (let i = 0; i < lower.length; i++) {
    const c = lower[i]!;
    out += Number.parseInt(hash[i]!, 16) >= 8 ? c.toUpperCase() : c;
  }
  return out as Hex;
}

/** Formats base units of BTC with two decimals, as geth prints ether amounts in fee-cap errors. */
export function formatBtc(baseUnits: bigint): string {
  const cents = (baseUnits + 5n * 10n ** 15n) / 10n ** 16n;
  const whole = cents / 100n;
  const frac = (cents % 100n).toString().padStart(2, '0');
  return `${whole}.${frac}`;
}
