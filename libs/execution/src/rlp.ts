// A small RLP encoder that can embed already-encoded items (trie nodes reference small children
// inline), plus the decoder from @ethereumjs/rlp for everything else.
import { RLP } from '@ethereumjs/rlp';

export type RlpInput = Uint8Array | RlpInput[];
export type RlpDecoded = Uint8Array | RlpDecoded[];

/** RLP string encoding of raw bytes. */
export function encodeBytes(b: Uint8Array): Uint8Array {
  if (b.length === 1 && b[0] < 0x80) return b;
  const out = new Uint8Array(rlpBytesSize(b));
  writeRlpBytes(out, 0, b);
  return out;
}

/** RLP list of items that are already RLP-encoded. */
export function encodeListOfEncoded(items: Uint8Array[]): Uint8Array {
  let len = 0;
  for (const it of items) len += it.length;
  const out = new Uint8Array(rlpHeaderSize(len) + len);
  let o = writeRlpHeader(out, 0, len, 0xc0);
  for (const it of items) {
    out.set(it, o);
    o += it.length;
  }
  return out;
}

/** Size of the header (prefix) RLP puts before a payload of `len` bytes. */
export function rlpHeaderSize(len: number): number {
  if (len < 56) return 1;
  let n = 1;
  while (len >= 256 ** n) n++;
  return 1 + n;
}

/** Size of `b` encoded as an RLP string. */
export function rlpBytesSize(b: Uint8Array): number {
  return b.length === 1 && b[0] < 0x80 ? 1 : rlpHeaderSize(b.length) + b.length;
}

/** Writes the header of a payload of `len` bytes (`offset` 0x80 for a string, 0xc0 for a list). */
export function writeRlpHeader(out: Uint8Array, pos: number, len: number, offset: number): number {
  if (len < 56) {
    out[pos] = offset + len;
    return pos + 1;
  }
  const n = rlpHeaderSize(len) - 1;
  out[pos] = offset + 55 + n;
  for (let i = n; i >= 1; i--) {
    out[pos + i] = len & 0xff;
    len = Math.floor(len / 256);
  }
  return pos + 1 + n;
}

/** Writes `b` as an RLP string at `pos`; returns the position after it. */
export function writeRlpBytes(out: Uint8Array, pos: number, b: Uint8Array): number {
  if (b.length === 1 && b[0] < 0x80) {
    out[pos] = b[0];
    return pos + 1;
  }
  pos = writeRlpHeader(out, pos, b.length, 0x80);
  out.set(b, pos);
  return pos + b.length;
}

/** Encoded size of `x`; pushes each list's payload size to `sizes`, in the order `write` visits them. */
function measure(x: RlpInput, sizes: number[]): number {
  if (x instanceof Uint8Array) return rlpBytesSize(x);
  const at = sizes.length;
  sizes.push(0);
  let payload = 0;
  for (const item of x) payload += measure(item, sizes);
  sizes[at] = payload;
  return rlpHeaderSize(payload) + payload;
}

function write(x: RlpInput, out: Uint8Array, pos: number, sizes: number[], cursor: { i: number }): number {
  if (x instanceof Uint8Array) return writeRlpBytes(out, pos, x);
  pos = writeRlpHeader(out, pos, sizes[cursor.i++], 0xc0);
  for (const item of x) pos = write(item, out, pos, sizes, cursor);
  return pos;
}

/** RLP encoding of `input`, written into one buffer (sizes first, then bytes). */
export function rlpEncode(input: RlpInput): Uint8Array {
  if (input instanceof Uint8Array) return encodeBytes(input);
  const sizes: number[] = [];
  const out = new Uint8Array(measure(input, sizes));
  write(input, out, 0, sizes, { i: 0 });
  return out;
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

/** The item bounds of an RLP list without copying it (in @noded/crypto: the RPC reads them too). */
export { rlpListBounds } from '@noded/crypto';
