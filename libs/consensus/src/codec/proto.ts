// Minimal protobuf (proto3) wire codec: just enough to produce CometBFT's canonical encodings
// (sign bytes, header field encodings, block parts) and to read stored blocks back.
// Zero scalars are omitted as proto3 does; messages marked non-nullable in CometBFT's gogoproto
// definitions are always written (tag + length, even when empty).
import { ConsensusError } from '../errors.js';

const MASK64 = (1n << 64n) - 1n;

export class ProtoWriter {
  private buf: Uint8Array;
  private pos = 0;

  constructor(initial = 64) {
    this.buf = new Uint8Array(initial);
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
  }

  /** Unsigned varint; negative values are written as 64-bit two's complement (10 bytes), as int64. */
  rawVarint(value: number | bigint): void {
    if (typeof value === 'number' && value >= 0 && value <= 0x7fffffff) {
      this.ensure(5);
      let v = value;
      while (v > 0x7f) {
        this.buf[this.pos++] = (v & 0x7f) | 0x80;
        v >>>= 7;
      }
      this.buf[this.pos++] = v;
      return;
    }
    let v = BigInt(value) & MASK64;
    this.ensure(10);
    while (v > 0x7fn) {
      this.buf[this.pos++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.buf[this.pos++] = Number(v);
  }

  rawBytes(bytes: Uint8Array): void {
    this.ensure(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  private tag(field: number, wireType: number): void {
    this.rawVarint(field * 8 + wireType);
  }

  /** int32/int64/uint32/uint64/enum field; omitted when zero. */
  varint(field: number, value: number | bigint): void {
    if (value === 0 || value === 0n) return;
    this.tag(field, 0);
    this.rawVarint(value);
  }

  /** sfixed64 field (little-endian two's complement); omitted when zero. */
  sfixed64(field: number, value: number | bigint): void {
    if (value === 0 || value === 0n) return;
    this.tag(field, 1);
    this.ensure(8);
    let v = BigInt(value) & MASK64;
    for (let i = 0; i < 8; i++) {
      this.buf[this.pos++] = Number(v & 0xffn);
      v >>= 8n;
    }
  }

  /** bytes field; omitted when empty unless `always` (repeated elements are always written). */
  bytes(field: number, value: Uint8Array, always = false): void {
    if (value.length === 0 && !always) return;
    this.tag(field, 2);
    this.rawVarint(value.length);
    this.rawBytes(value);
  }

  string(field: number, value: string): void {
    if (value.length === 0) return;
    this.bytes(field, new TextEncoder().encode(value));
  }

  /** Embedded message, already encoded; always written (non-nullable or present pointer). */
  message(field: number, encoded: Uint8Array): void {
    this.bytes(field, encoded, true);
  }

  finish(): Uint8Array {
    return this.buf.slice(0, this.pos);
  }
}

/** Prefixes `bytes` with its uvarint length (protoio.MarshalDelimited). */
export function lengthDelimited(bytes: Uint8Array): Uint8Array {
  const w = new ProtoWriter(bytes.length + 5);
  w.rawVarint(bytes.length);
  w.rawBytes(bytes);
  return w.finish();
}

export type ProtoValue = bigint | Uint8Array;

/**
 * Parses one message level into field number -> values (varints and fixed64 as bigint). Keys,
 * lengths and varints of up to four bytes (below 2^28) are read with numbers; a longer varint is
 * read again from its first byte as a bigint, so every input reads (or fails) as with bigints only.
 */
export function readFields(bytes: Uint8Array): Map<number, ProtoValue[]> {
  const out = new Map<number, ProtoValue[]>();
  let pos = 0;
  const fail = (why: string): never => {
    throw new ConsensusError('INVALID_ENCODING', `protobuf: ${why} at byte ${pos} of ${bytes.length}`);
  };
  const readBigVarint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (pos >= bytes.length) fail('truncated varint');
      const b = bytes[pos++]!;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) break;
      shift += 7n;
      if (shift > 63n) fail('varint longer than 10 bytes');
    }
    return result;
  };
  /** A varint below 2^28 as a number; anything longer (or truncated) through readBigVarint. */
  const readVarint = (): number | bigint => {
    const start = pos;
    let result = 0;
    for (let i = 0; i < 4 && pos < bytes.length; i++) {
      const b = bytes[pos++]!;
      result |= (b & 0x7f) << (7 * i);
      if ((b & 0x80) === 0) return result;
    }
    pos = start;
    return readBigVarint();
  };
  while (pos < bytes.length) {
    const key = readVarint();
    const field = typeof key === 'number' ? key >>> 3 : Number(key >> 3n);
    const wire = typeof key === 'number' ? key & 7 : Number(key & 7n);
    let value: ProtoValue;
    if (wire === 0) {
      const v = readVarint();
      value = typeof v === 'number' ? BigInt(v) : v;
    } else if (wire === 1) {
      if (pos + 8 > bytes.length) fail('truncated fixed64');
      let v = 0n;
      for (let i = 7; i >= 0; i--) v = (v << 8n) | BigInt(bytes[pos + i]!);
      pos += 8;
      value = v;
    } else if (wire === 2) {
      const l = readVarint();
      const len = typeof l === 'number' ? l : Number(l);
      if (pos + len > bytes.length) fail(`length ${len} past the end`);
      value = bytes.subarray(pos, pos + len);
      pos += len;
    } else if (wire === 5) {
      if (pos + 4 > bytes.length) fail('truncated fixed32');
      value =
        BigInt(bytes[pos]! | (bytes[pos + 1]! << 8) | (bytes[pos + 2]! << 16)) +
        (BigInt(bytes[pos + 3]!) << 24n);
      pos += 4;
    } else {
      return fail(`unsupported wire type ${wire}`);
    }
    const list = out.get(field);
    if (list) list.push(value);
    else out.set(field, [value]);
  }
  return out;
}

/** Reads a varint field as a signed 64-bit integer. */
export function int64Of(fields: Map<number, ProtoValue[]>, field: number): bigint {
  const v = fields.get(field)?.at(-1);
  if (v === undefined) return 0n;
  if (typeof v !== 'bigint')
    throw new ConsensusError('INVALID_ENCODING', `field ${field}: expected a varint`);
  return BigInt.asIntN(64, v);
}

export function numberOf(fields: Map<number, ProtoValue[]>, field: number): number {
  return Number(int64Of(fields, field));
}

export function bytesOf(fields: Map<number, ProtoValue[]>, field: number): Uint8Array {
  const v = fields.get(field)?.at(-1);
  if (v === undefined) return new Uint8Array(0);
  if (!(v instanceof Uint8Array))
    throw new ConsensusError('INVALID_ENCODING', `field ${field}: expected length-delimited bytes`);
  return v.slice();
}

export function repeatedBytesOf(fields: Map<number, ProtoValue[]>, field: number): Uint8Array[] {
  return (fields.get(field) ?? []).map((v) => {
    if (!(v instanceof Uint8Array))
      throw new ConsensusError('INVALID_ENCODING', `field ${field}: expected length-delimited bytes`);
    return v.slice();
  });
}
