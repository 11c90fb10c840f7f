// The RLP encoder (libs/execution/src/rlp.ts) against @ethereumjs/rlp: the same bytes for every
// shape blocks, receipts and trie nodes use, including the length-prefix boundaries.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RLP } from '@ethereumjs/rlp';
import { encodeBytes, encodeListOfEncoded, type RlpInput, rlpEncode } from '@noded/execution/src/rlp.js';

/** A small deterministic generator (xorshift32), so a failure names a reproducible case. */
function prng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

const SIZES = [0, 1, 2, 54, 55, 56, 57, 255, 256, 1024, 65535, 65536, 70000];

function bytes(rnd: () => number): Uint8Array {
  const r = rnd();
  const len = r < 0.3 ? 1 : r < 0.9 ? Math.floor(rnd() * 80) : SIZES[Math.floor(rnd() * SIZES.length)];
  const b = new Uint8Array(len);
  for (let i = 0; i < len; i++) b[i] = Math.floor(rnd() * 256);
  if (len === 1 && rnd() < 0.5) b[0] &= 0x7f;
  return b;
}

function item(rnd: () => number, depth: number): RlpInput {
  if (depth > 3 || rnd() < 0.55) return bytes(rnd);
  const n = rnd() < 0.1 ? Math.floor(rnd() * 3000) : Math.floor(rnd() * 8);
  return Array.from({ length: n }, () => item(rnd, depth + 1));
}

describe('rlpEncode', () => {
  it('encodes like @ethereumjs/rlp at the prefix boundaries', () => {
    for (const len of SIZES) {
      const b = new Uint8Array(len).fill(0xab);
      assert.deepEqual(rlpEncode(b), RLP.encode(b), `bytes of length ${len}`);
      assert.deepEqual(rlpEncode([b]), RLP.encode([b]), `a list holding bytes of length ${len}`);
      assert.deepEqual(encodeBytes(b), RLP.encode(b), `encodeBytes, length ${len}`);
      assert.deepEqual(
        encodeListOfEncoded([RLP.encode(b)]),
        RLP.encode([b]),
        `encodeListOfEncoded, length ${len}`,
      );
      const list = Array.from({ length: len }, () => Uint8Array.of(1));
      assert.deepEqual(rlpEncode(list), RLP.encode(list), `a list of ${len} one-byte items`);
    }
    for (const v of [0x00, 0x7f, 0x80, 0xff]) {
      assert.deepEqual(rlpEncode(Uint8Array.of(v)), RLP.encode(Uint8Array.of(v)), `the byte ${v}`);
    }
    assert.deepEqual(rlpEncode([[], [[]], [[], [[]]]]), RLP.encode([[], [[]], [[], [[]]]]));
  });

  it('encodes random nested inputs like @ethereumjs/rlp', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const input = item(prng(seed), 0);
      assert.deepEqual(rlpEncode(input), RLP.encode(input as never), `seed ${seed}`);
    }
  });
});
