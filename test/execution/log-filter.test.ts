// The in-place walk of a stored receipts record that eth_getLogs matches on: the record is the
// executor's own encoding (RLP list of [type, status, cumulativeGasUsed, gasUsed, effectiveGasPrice,
// from, to, contractAddress, logs]); logIndex counts every log of the block, receipts without logs
// included; a truncated record fails with the byte where it breaks.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileLogFilter, scanLogs } from '../../libs/execution/src/chain/log-filter.js';
import { rlpEncode } from '../../libs/execution/src/rlp.js';
import type { Hex } from '../../libs/types/index.js';

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
  });

  it('a truncated record fails with the byte where it breaks', () => {
    assert.throws(
      () => scan(enc.subarray(0, enc.length - 10), undefined, undefined),
      /^Error: stored receipts record is corrupt at byte \d+$/,
    );
  });
});
