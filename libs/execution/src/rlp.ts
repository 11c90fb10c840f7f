// A small RLP encoder that can embed already-encoded items (trie nodes reference small children
// inline), plus the decoder from @ethereumjs/rlp for everything else.
import { RLP } from '@ethereumjs/rlp';

export type RlpInput = Uint8Array | RlpInput[];
export type RlpDecoded = Uint8Array | RlpDecoded[];

function lengthPrefix(len: number, offset: number): Uint8Array {
  if (len < 56) return Uint8Array.of(offset + len);
  let hex = len.toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  const lenBytes = Buffer.from(hex, 'hex');
  const out = new Uint8Array(1 + lenBytes.length);
  out[0] = offset + 55 + lenBytes.length;
  out.set(lenBytes, 1);
  return out;
}

/** RLP string encoding of raw bytes. */
export function encodeBytes(b: Uint8Array): Uint8Array {
  if (b.length === 1 && b[0] < 0x80) return b;
  const prefix = lengthPrefix(b.length, 0x80);
  const out = new Uint8Array(prefix.length + b.length);
  out.set(prefix);
  out.set(b, prefix.length);
  return out;
}

/** RLP list of items that are already RLP-encoded. */
export function encodeListOfEncoded(items: Uint8Array[]): Uint8Array {
  let len = 0;
  for (const it of items) len += it.length;
  const prefix = lengthPrefix(len, 0xc0);
  const out = new Uint8Array(prefix.length + len);
  out.set(prefix);
  let o = prefix.length;
  for (const it of items) {
    out.set(it, o);
    o += it.length;
  }
  return out;
}

export function rlpEncode(input: RlpInput): Uint8Array {
  if (input instanceof Uint8Array) return encodeBytes(input);
  return encodeListOfEncoded(input.map(rlpEncode));
}

export function rlpDecode(data: Uint8Array): RlpDecoded {
  return RLP.decode(data) as RlpDecoded;
}

export function asList(d: RlpDecoded, what: string): RlpDecoded[] {
  if (!Array.isArray(d)) throw new Error(`${what}: expected an RLP list`);
  return d;
}

export function asBytes(d: RlpDecoded, what: string): Uint8Array {
  if (Array.isArray(d)) throw new Error(`${what}: expected RLP bytes`);
  return d;
}
