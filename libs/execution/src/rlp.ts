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

// ---- Bounds of a list's items, without copying them ----------------------------------------------

/** Set by `readHeader`: where the item's payload starts and where the item ends. */
let payloadAt = 0;
let itemEnd = 0;

/**
 * Reads the RLP header at `pos` of an item that must end by `limit`: 1 for a list, 0 for a byte
 * string, -1 where @ethereumjs/rlp's decoder throws (a single byte below 0x80 given a prefix, a long
 * form for 55 bytes or fewer, a length with leading zeros, an end past `limit`). Sets payloadAt and
 * itemEnd.
 */
function readHeader(data: Uint8Array, pos: number, limit: number): number {
  if (pos >= limit) return -1;
  const b = data[pos];
  if (b < 0x80) {
    payloadAt = pos;
    itemEnd = pos + 1;
    return 0;
  }
  if (b <= 0xb7) {
    const len = b - 0x80;
    if (len === 1 && (pos + 1 >= limit || data[pos + 1] < 0x80)) return -1;
    payloadAt = pos + 1;
    itemEnd = payloadAt + len;
    return itemEnd <= limit ? 0 : -1;
  }
  if (b >= 0xc0 && b <= 0xf7) {
    payloadAt = pos + 1;
    itemEnd = payloadAt + (b - 0xc0);
    return itemEnd <= limit ? 1 : -1;
  }
  const list = b >= 0xc0;
  const lenOfLen = b - (list ? 0xf7 : 0xb7);
  if (pos + 1 + lenOfLen > limit || data[pos + 1] === 0) return -1;
  let len = 0;
  for (let i = 1; i <= lenOfLen; i++) len = len * 256 + data[pos + i];
  if (len < 56) return -1;
  payloadAt = pos + 1 + lenOfLen;
  itemEnd = payloadAt + len;
  return itemEnd <= limit ? (list ? 1 : 0) : -1;
}

/** Whether data[start..end) is a sequence of canonical RLP items, nested lists included. */
function canonicalItems(data: Uint8Array, start: number, end: number): boolean {
  for (let p = start; p < end; ) {
    const kind = readHeader(data, p, end);
    if (kind < 0) return false;
    const next = itemEnd;
    if (kind === 1 && !canonicalItems(data, payloadAt, next)) return false;
    p = next;
  }
  return true;
}

/**
 * The items of the RLP list that is the whole of `data`, as offsets into it, nothing copied or
 * decoded: item i's encoding starts at out[3i], its payload at out[3i + 1], and it ends at
 * out[3i + 2] (a list when data[out[3i]] >= 0xc0). Undefined wherever rlpDecode would throw, at
 * any depth, so an accepted encoding is canonical: a run of its items, re-encoded, is the same
 * bytes (a signing payload can be cut from a signed transaction instead of re-encoded).
 */
export function rlpListBounds(data: Uint8Array): number[] | undefined {
  if (readHeader(data, 0, data.length) !== 1 || itemEnd !== data.length) return undefined;
  const end = itemEnd;
  const out: number[] = [];
  for (let p = payloadAt; p < end; ) {
    const kind = readHeader(data, p, end);
    if (kind < 0) return undefined;
    const start = payloadAt;
    const next = itemEnd;
    if (kind === 1 && !canonicalItems(data, start, next)) return undefined;
    out.push(p, start, next);
    p = next;
  }
  return out;
}
