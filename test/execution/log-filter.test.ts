// The in-place walk of a stored receipts record that eth_getLogs matches on: the record is the
// executor's own encoding (RLP list of [type, status, cumulativeGasUsed, gasUsed, effectiveGasPrice,
// from, to, contractAddress, logs]); logIndex counts every log of the block, receipts without logs
// included; a truncated record fails with the byte where it breaks.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bloomAdd } from '@noded/execution/src/chain/header.js';
import { bloomMayMatch, compileLogFilter, scanLogs } from '@noded/execution/src/chain/log-filter.js';
import { rlpEncode } from '@noded/execution/src/rlp.js';
import type { Hex } from '@noded/types';

const bytes = (h: string) => Uint8Array.from(Buffer.from(h.replace(/^0x/, ''), 'hex'));
const word = (n: number): Hex => `0x${n.toString(16).padStart(64, '0')}`;
const E1: Hex = `0x${'e1'.repeat(20)}`;
const E2: Hex = `0x${'e2'.repeat(20)}`;

type Log = [Hex, Hex[], Hex];

function record(receipts: Log[][]): Uint8Array {
  return rlpEncode(
    receipts.map((logs) => [
      Uint8Array.of(2),
      Uint8Array.of(1),
      bytes('5208'),
      bytes('5208'),
      bytes('3b9aca00'),
      bytes('aa'.repeat(20)),
      bytes('bb'.repeat(20)),
      new Uint8Array(0),
      logs.map(([a, t, d]) => [bytes(a), t.map(bytes), bytes(d)]),
    ]),
  );
}

/** The (receipt index, logIndex, address, topics, data) of every log `scanLogs` hands out. */
function scan(enc: Uint8Array, addresses: Hex[] | undefined, topics: Array<Hex | Hex[] | null> | undefined) {
  const out: Array<[number, number, Hex, Hex[], Hex]> = [];
  const hex = (b: Uint8Array) => `0x${Buffer.from(b).toString('hex')}` as Hex;
  scanLogs(enc, compileLogFilter(addresses, topics), (i, logIndex, l) => {
    out.push([i, logIndex, hex(l.address), l.topics.map(hex), hex(l.data)]);
    return true;
  });
  return out;
}

describe('scanLogs over a stored receipts record', () => {
  // Receipt 0: two logs; receipt 1: none; receipt 2: a log without topics, then a 3-topic log.
  const enc = record([
    [
      [E1, [word(1), word(0xa)], '0x01'],
      [E2, [word(1), word(0xb), word(0xc)], '0x'],
    ],
    [],
    [
      [E1, [], '0xffff'],
      [E2, [word(2), word(0xa), word(0xc)], `0x${'00'.repeat(100)}`],
    ],
  ]);

  it('hands out every log with its receipt index and block-wide logIndex when nothing is named', () => {
    assert.deepEqual(
      scan(enc, undefined, undefined).map(([i, k]) => [i, k]),
      [
        [0, 0],
        [0, 1],
        [2, 2],
        [2, 3],
      ],
    );
    assert.deepEqual(scan(enc, undefined, undefined)[3], [
      2,
      3,
      E2,
      [word(2), word(0xa), word(0xc)],
      `0x${'00'.repeat(100)}`,
    ]);
  });

  it('matches addresses, OR-alternatives and wildcards; a log with fewer topics than positions never matches', () => {
    assert.deepEqual(
      scan(enc, [E2], undefined).map(([, k]) => k),
      [1, 3],
    );
    assert.deepEqual(
      scan(enc, undefined, [null, word(0xa)]).map(([, k]) => k),
      [0, 3],
    );
    assert.deepEqual(
      scan(enc, undefined, [[word(2), word(1)], null, word(0xc)]).map(([, k]) => k),
      [1, 3],
    );
    assert.deepEqual(
      scan(enc, [E1, E2], [null, [], null]).map(([, k]) => k),
      [1, 3],
    );
    assert.deepEqual(
      scan(enc, [E1], [null, null]).map(([, k]) => k),
      [0],
    );
    assert.deepEqual(scan(enc, undefined, [null, null, null, null]), []);
    // A short topic is left-padded to 32 bytes, as the RPC reads it.
    assert.deepEqual(
      scan(enc, undefined, [null, '0x0b']).map(([, k]) => k),
      [1],
    );
  });

  it('topic 0 and every byte of a value decide: a value differing only in its first byte does not match', () => {
    assert.deepEqual(
      scan(enc, undefined, [word(2)]).map(([, k]) => k),
      [3],
    );
    assert.deepEqual(
      scan(enc, undefined, [[word(1)], word(0xb)]).map(([, k]) => k),
      [1],
    );
    assert.deepEqual(scan(enc, undefined, [word(9)]), []);
    const firstByte = (h: Hex): Hex => `0xff${h.slice(4)}`;
    assert.deepEqual(scan(enc, undefined, [firstByte(word(1))]), []);
    assert.deepEqual(scan(enc, undefined, [null, firstByte(word(0xa))]), []);
    assert.deepEqual(scan(enc, [firstByte(E1)], undefined), []);
  });

  it('hands out empty data, 55-byte data and a log whose list is exactly 55 bytes (RLP size boundaries)', () => {
    assert.equal(scan(enc, undefined, undefined)[1]![4], '0x');
    const d55: Hex = `0x${'5a'.repeat(55)}`;
    const d32: Hex = `0x${'33'.repeat(32)}`; // [address, [], data]: 21 + 1 + 33 = 55 bytes of payload
    const edge = record([[[E1, [], d55]], [[E2, [], d32]]]);
    assert.deepEqual(scan(edge, undefined, undefined), [
      [0, 0, E1, [], d55],
      [1, 1, E2, [], d32],
    ]);
  });

  it('a corrupt record names the byte: a string where the logs list belongs, a length past the end, an 8-byte length', () => {
    const stringLogs = rlpEncode([
      [
        Uint8Array.of(2),
        Uint8Array.of(1),
        bytes('5208'),
        bytes('5208'),
        bytes('3b9aca00'),
        bytes('aa'.repeat(20)),
        bytes('bb'.repeat(20)),
        new Uint8Array(0),
        bytes('c0c0'),
      ],
    ]);
    // The logs field (0x82 c0 c0, the record's last 3 bytes) is a string: named at its first byte.
    assert.throws(
      () => scan(stringLogs, undefined, undefined),
      new RegExp(`^Error: stored receipts record is corrupt at byte ${stringLogs.length - 3}$`),
    );
    // Outer list, one receipt whose first field announces a 2-byte length with only 1 byte left.
    assert.throws(
      () => scan(Uint8Array.of(0xc3, 0xc2, 0xb9, 0x01), undefined, undefined),
      /^Error: stored receipts record is corrupt at byte 3$/,
    );
    const at = (enc: Uint8Array, byte: number) =>
      assert.throws(
        () => scan(enc, undefined, undefined),
        new RegExp(`^Error: stored receipts record is corrupt at byte ${byte}$`),
        `${Buffer.from(enc).toString('hex')} at ${byte}`,
      );
    // A receipt with 8 of its 9 fields: the 9th is missing where the receipt ends.
    const short = rlpEncode([
      [
        Uint8Array.of(2),
        Uint8Array.of(1),
        bytes('5208'),
        bytes('5208'),
        bytes('01'),
        bytes('aa'),
        bytes('bb'),
        new Uint8Array(0),
      ],
    ]);
    at(short, short.length);
    // A 5-byte string with 2 bytes left in its receipt; a long-string length that ends the receipt.
    at(Uint8Array.of(0xc4, 0xc3, 0x85, 0x01, 0x02), 2);
    at(Uint8Array.of(0xc3, 0xc2, 0xb8, 0x05), 2);
    // A 6-byte length is read (the item fits), then the receipt ends after its first field.
    at(Uint8Array.of(0xc9, 0xc8, 0xbd, 0, 0, 0, 0, 0, 1, 0x61), 10);
    // A string with an 8-byte length (0xbf): more than the 6 length bytes any record can need.
    const eight = Uint8Array.of(0xcb, 0xca, 0xbf, 0, 0, 0, 0, 0, 0, 0, 1, 0x61);
    assert.throws(
      () => scan(eight, undefined, undefined),
      /^Error: stored receipts record is corrupt at byte 3$/,
    );
  });

  it('stops when the visitor says so', () => {
    const seen: number[] = [];
    scanLogs(enc, compileLogFilter(undefined, undefined), (_i, k) => {
      seen.push(k);
      return seen.length < 3;
    });
    assert.deepEqual(seen, [0, 1, 2]);
  });

  it('with the receipts the log index lists, visits just those, with their logIndex from the index', () => {
    const hex = (b: Uint8Array) => `0x${Buffer.from(b).toString('hex')}` as Hex;
    const only = (m: Map<number, number>, topics?: Array<Hex | Hex[] | null>) => {
      const out: Array<[number, number, Hex]> = [];
      scanLogs(
        enc,
        compileLogFilter(undefined, topics),
        (i, k, l) => {
          out.push([i, k, hex(l.address)]);
          return true;
        },
        m,
      );
      return out;
    };
    const everything = scan(enc, undefined, undefined).map(([i, k, a]) => [i, k, a]);
    // Receipt 2 alone: its logs keep their block-wide indexes 2 and 3.
    assert.deepEqual(only(new Map([[2, 2]])), everything.slice(2));
    // Both receipts with logs, in any order of the map, twice over the same (cached-offset) record.
    for (let round = 0; round < 2; round++) {
      assert.deepEqual(
        only(
          new Map([
            [2, 2],
            [0, 0],
          ]),
        ),
        everything,
      );
    }
    // The filter still decides within the listed receipts.
    assert.deepEqual(
      only(
        new Map([
          [0, 0],
          [2, 2],
        ]),
        [null, word(0xa)],
      ),
      [
        [0, 0, E1],
        [2, 3, E2],
      ],
    );
    // A receipt without logs listed by mistake yields nothing; an index past the record ends the walk.
    assert.deepEqual(only(new Map([[1, 2]])), []);
    assert.deepEqual(only(new Map([[7, 9]])), []);
    assert.deepEqual(only(new Map([[3, 4]])), [], 'the index just past the last receipt');
  });

  it('a truncated record fails with the byte where it breaks', () => {
    assert.throws(
      () => scan(enc.subarray(0, enc.length - 10), undefined, undefined),
      /^Error: stored receipts record is corrupt at byte \d+$/,
    );
  });
});

describe('compileLogFilter and bloomMayMatch (the block-level skip before any record is read)', () => {
  const T1 = word(0x1111);
  const T2 = word(0x2222);
  const T3 = word(0x3333);
  // A block whose only log is E1 emitting [T1, T2], bloomed as the executor blooms its headers.
  const bloom = new Uint8Array(256);
  for (const item of [E1, T1, T2]) bloomAdd(bloom, bytes(item));
  const may = (addresses: Hex[] | undefined, topics: Array<Hex | Hex[] | null> | undefined) =>
    bloomMayMatch(compileLogFilter(addresses, topics), bloom);

  it('compiles addresses and topics to distinct bytes; an empty alternative list is a wildcard', () => {
    const upper = `0x${'E1'.repeat(20)}` as Hex;
    const f = compileLogFilter([E1, upper], [T1, [T2, T2, '0x02'], [], null]);
    assert.deepEqual(f.addresses, [bytes(E1)]);
    assert.deepEqual(f.topics, [[bytes(T1)], [bytes(T2), bytes(word(2))], null, null]);
    assert.deepEqual(compileLogFilter([], []), { addresses: null, topics: [] });
    assert.deepEqual(compileLogFilter(undefined, undefined), { addresses: null, topics: [] });
  });

  it('a block may match only when its bloom holds a named address and a value for every named position', () => {
    assert.equal(may(undefined, undefined), true);
    assert.equal(may([E1], undefined), true);
    assert.equal(may([E2], undefined), false);
    assert.equal(may([E2, E1], undefined), true, 'any of the addresses');
    assert.equal(may(undefined, [T1]), true);
    assert.equal(may(undefined, [T3]), false);
    assert.equal(may(undefined, [[T3, T1]]), true, 'OR-alternatives in one position');
    assert.equal(may(undefined, [null, T2]), true);
    assert.equal(may(undefined, [null, T3]), false);
    assert.equal(may(undefined, [T1, [T3]]), false, 'every named position must be present');
    assert.equal(may([E1], [T1, T2]), true);
    assert.equal(may([E2], [T1, T2]), false);
    assert.equal(bloomMayMatch(compileLogFilter([E1], [T1]), new Uint8Array(256)), false, 'an empty bloom');
  });

  it('needs all three bits of a value: a bloom holding two of them does not match', () => {
    for (const item of [E2, T3]) {
      // Each of the three bits alone, and each pair, is not enough.
      const single = new Uint8Array(256);
      bloomAdd(single, bytes(item));
      const set = [...single.entries()].filter(([, b]) => b !== 0);
      const bits: Array<[number, number]> = [];
      for (const [i, b] of set) for (let k = 0; k < 8; k++) if (b & (1 << k)) bits.push([i, 1 << k]);
      assert.equal(bits.length >= 2 && bits.length <= 3, true);
      for (let drop = 0; drop < bits.length; drop++) {
        const partial = new Uint8Array(256);
        bits.forEach(([i, m], j) => {
          if (j !== drop) partial[i]! |= m;
        });
        const f = item === E2 ? compileLogFilter([E2], undefined) : compileLogFilter(undefined, [T3]);
        assert.equal(bloomMayMatch(f, partial), false, `${item} without bit ${drop}`);
        assert.equal(bloomMayMatch(f, single), true);
      }
    }
  });
});
