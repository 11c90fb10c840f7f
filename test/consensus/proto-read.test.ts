// readFields (libs/consensus/src/codec/proto.ts) reads keys, lengths and short varints with numbers
// and only long varints with bigints. Every input, well formed or not, must read to the same fields
// or fail with the same message as the reader that used bigints throughout (kept below as the
// reference), since peers' bytes go through it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConsensusError } from '@noded/consensus';
import { type ProtoValue, readFields } from '@noded/consensus/src/codec/proto.js';
import { prng } from './helpers.js';

function reference(bytes: Uint8Array): Map<number, ProtoValue[]> {
  const out = new Map<number, ProtoValue[]>();
  let pos = 0;
  const fail = (why: string): never => {
    throw new ConsensusError('INVALID_ENCODING', `protobuf: ${why} at byte ${pos} of ${bytes.length}`);
  };
  const readVarint = (): bigint => {
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
  while (pos < bytes.length) {
    const key = readVarint();
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    let value: ProtoValue;
    if (wire === 0) value = readVarint();
    else if (wire === 1) {
      if (pos + 8 > bytes.length) fail('truncated fixed64');
      let v = 0n;
      for (let i = 7; i >= 0; i--) v = (v << 8n) | BigInt(bytes[pos + i]!);
      pos += 8;
      value = v;
    } else if (wire === 2) {
      const len = Number(readVarint());
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

const outcome = (read: (b: Uint8Array) => Map<number, ProtoValue[]>, b: Uint8Array) => {
  try {
    return {
      fields: [...read(b)].map(([k, vs]) => [k, vs.map((v) => (typeof v === 'bigint' ? v : [...v]))]),
    };
  } catch (err) {
    return { error: (err as Error).message };
  }
};

/** A varint of `v`, optionally padded with redundant continuation bytes up to `len` bytes. */
function varint(v: bigint, len = 0): number[] {
  const out: number[] = [];
  do {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  } while (v > 0n);
  while (out.length < len) out.push(0x80);
  out[out.length - 1]! &= 0x7f;
  return out;
}

describe('protobuf reader', () => {
  it('reads every varint width the same as the bigint reader: 1 to 10 bytes, at each byte boundary, padded', () => {
    const values = [0n, 1n, 127n, 128n, 2n ** 14n - 1n, 2n ** 14n, 2n ** 21n, 2n ** 28n - 1n, 2n ** 28n];
    for (let k = 29; k < 64; k++) values.push(2n ** BigInt(k) - 1n, 2n ** BigInt(k));
    for (const v of values) {
      for (const pad of [0, 3, 4, 5, 10, 11]) {
        const msg = new Uint8Array([...varint(8n + 0n, 0), ...varint(v, pad)]); // field 1, varint
        assert.deepEqual(outcome(readFields, msg), outcome(reference, msg), `value ${v} padded to ${pad}`);
        const key = new Uint8Array([...varint((v << 3n) | 2n, pad), 0]); // field v, length 0
        assert.deepEqual(outcome(readFields, key), outcome(reference, key), `field ${v} padded to ${pad}`);
        const len = new Uint8Array([0x0a, ...varint(v, pad), 1, 2, 3]); // field 1, length v
        assert.deepEqual(outcome(readFields, len), outcome(reference, len), `length ${v} padded to ${pad}`);
      }
    }
  });

  it('reads random bytes and random well-formed messages to the same fields or the same error', () => {
    const rand = prng(21);
    const byte = () => Math.floor(rand() * 256);
    for (let n = 0; n < 20_000; n++) {
      let b: number[];
      if (n % 2 === 0) {
        b = Array.from({ length: Math.floor(rand() * 24) }, byte);
      } else {
        b = [];
        const fields = 1 + Math.floor(rand() * 6);
        for (let i = 0; i < fields; i++) {
          const wire = [0, 1, 2, 5][Math.floor(rand() * 4)]!;
          b.push(
            ...varint((BigInt(1 + Math.floor(rand() * 40)) << 3n) | BigInt(wire), Math.floor(rand() * 3)),
          );
          if (wire === 0)
            b.push(...varint(BigInt(Math.floor(rand() * 2 ** 31)) ** BigInt(1 + Math.floor(rand() * 2))));
          else if (wire === 1) b.push(...Array.from({ length: 8 }, byte));
          else if (wire === 5) b.push(...Array.from({ length: 4 }, byte));
          else {
            const len = Math.floor(rand() * 6);
            b.push(...varint(BigInt(len)), ...Array.from({ length: len }, byte));
          }
        }
        // Sometimes cut short or with a stray byte, to hit every failure.
        if (rand() < 0.3) b = b.slice(0, Math.floor(rand() * b.length));
        else if (rand() < 0.1) b.push(byte());
      }
      const bytes = new Uint8Array(b);
      assert.deepEqual(
        outcome(readFields, bytes),
        outcome(reference, bytes),
        `input ${Buffer.from(bytes).toString('hex')}`,
      );
    }
  });
});
