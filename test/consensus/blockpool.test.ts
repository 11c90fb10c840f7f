// Block sync's scheduler (BlockPool): which height is asked of which peer, windows, ranges, timeouts,
// and what happens to a peer's heights when it is dropped.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  BlockPool,
  decodeBlockSyncMessage,
  encodeBlockSyncMessage,
  MAX_AHEAD,
  MAX_BLOCK_RANGE,
  ranges,
} from '@noded/consensus';
import type { Block, Commit } from '@noded/types';

const commit = {} as Commit;
const block = (height: number) => ({ header: { height } }) as Block;
const byPeer = (rs: Array<{ peer: string; height: number }>) => {
  const m: Record<string, number[]> = {};
  for (const r of rs) m[r.peer] = [...(m[r.peer] ?? []), r.height];
  return m;
};

describe('BlockPool', () => {
  it('spreads heights over the peers that hold them, the least loaded first, within each window', () => {
    const pool = new BlockPool(1, 2, 10_000);
    pool.setStatus('a', 1, 100);
    pool.setStatus('b', 1, 100);
    pool.setStatus('c', 1, 3);
    assert.deepEqual(byPeer(pool.schedule(0)), { a: [1, 4], b: [2, 5], c: [3] });
    // Windows full: nothing more until answers come.
    assert.deepEqual(pool.schedule(0), []);
    assert.ok(pool.addBlock({ peer: 'a', block: block(1), commit }));
    assert.deepEqual(pool.schedule(0), [{ peer: 'a', height: 6 }]);
  });

  it("asks nothing below a peer's base or above its height, and at most MAX_AHEAD past the next height", () => {
    const pool = new BlockPool(10, 1000, 10_000);
    pool.setStatus('pruned', 50, 5000);
    const rs = pool.schedule(0);
    assert.equal(rs[0]!.height, 50);
    assert.equal(rs.at(-1)!.height, 10 + MAX_AHEAD - 1);
  });

  it('ignores a block it did not ask of that peer', () => {
    const pool = new BlockPool(1, 4, 10_000);
    pool.setStatus('a', 1, 10);
    pool.setStatus('b', 1, 10);
    pool.schedule(0);
    assert.equal(pool.addBlock({ peer: 'b', block: block(1), commit }), false, 'height 1 was asked of a');
    assert.equal(
      pool.addBlock({ peer: 'a', block: block(9), commit }),
      false,
      'height 9 was asked of nobody',
    );
    assert.equal(pool.peek(), undefined);
  });

  it('drops a peer that times out and asks its heights of the others', () => {
    const pool = new BlockPool(1, 2, 1000);
    pool.setStatus('slow', 1, 10);
    pool.setStatus('fast', 1, 10);
    assert.deepEqual(byPeer(pool.schedule(0)), { slow: [1, 3], fast: [2, 4] });
    assert.ok(pool.addBlock({ peer: 'fast', block: block(2), commit }));
    assert.ok(pool.addBlock({ peer: 'fast', block: block(4), commit }));
    assert.deepEqual(pool.expire(500), [], 'not late yet');
    assert.deepEqual(pool.expire(1500), ['slow']);
    assert.equal(pool.peerCount, 1);
    assert.deepEqual(byPeer(pool.schedule(1500)), { fast: [1, 3] });
  });

  it("forgets a removed peer's unapplied blocks, so their heights are asked again", () => {
    const pool = new BlockPool(1, 4, 10_000);
    pool.setStatus('bad', 1, 4);
    pool.schedule(0);
    for (let h = 1; h <= 4; h++) assert.ok(pool.addBlock({ peer: 'bad', block: block(h), commit }));
    assert.equal(pool.peek()?.peer, 'bad');
    assert.equal(pool.removePeer('bad'), 4);
    assert.equal(pool.peek(), undefined);
    pool.setStatus('good', 1, 4);
    assert.deepEqual(byPeer(pool.schedule(0)), { good: [1, 2, 3, 4] });
  });

  it('takes a NoBlock as the peer not holding that height or above', () => {
    const pool = new BlockPool(1, 10, 10_000);
    pool.setStatus('a', 1, 5);
    pool.schedule(0);
    pool.noBlock('a', 3);
    assert.equal(pool.maxPeerHeight(), 2);
    assert.deepEqual(pool.schedule(0), []);
  });

  it('advances past heights decided elsewhere, dropping their blocks and requests', () => {
    const pool = new BlockPool(1, 2, 10_000);
    pool.setStatus('a', 1, 10);
    pool.schedule(0);
    assert.ok(pool.addBlock({ peer: 'a', block: block(1), commit }));
    pool.advance(3);
    assert.equal(pool.buffered, 0);
    assert.deepEqual(pool.schedule(0), [
      { peer: 'a', height: 3 },
      { peer: 'a', height: 4 },
    ]);
  });

  it('gives a peer that answers ranges runs of consecutive heights, half its window each, and a new run only when half is free', () => {
    const pool = new BlockPool(1, 16, 10_000);
    pool.setStatus('a', 1, 1000, 64);
    pool.setStatus('b', 1, 1000, 64);
    const first = pool.schedule(0);
    assert.deepEqual(
      ranges(first, () => 64),
      [
        { peer: 'a', height: 1, count: 8 },
        { peer: 'b', height: 9, count: 8 },
        { peer: 'a', height: 17, count: 8 },
        { peer: 'b', height: 25, count: 8 },
      ],
    );
    // One block back from a: one slot free, not a whole run; nothing is asked.
    assert.ok(pool.addBlock({ peer: 'a', block: block(1), commit }));
    assert.deepEqual(pool.schedule(0), []);
    for (let h = 2; h <= 8; h++) assert.ok(pool.addBlock({ peer: 'a', block: block(h), commit }));
    assert.deepEqual(pool.scheduleRanges(0), [{ peer: 'a', height: 33, count: 8 }]);
  });

  it('keeps runs within the range a peer answers, and one height a request for a peer without ranges', () => {
    const pool = new BlockPool(1, 16, 10_000);
    pool.setStatus('small', 1, 1000, 3);
    assert.deepEqual(pool.scheduleRanges(0), [
      { peer: 'small', height: 1, count: 3 },
      { peer: 'small', height: 4, count: 3 },
      { peer: 'small', height: 7, count: 3 },
      { peer: 'small', height: 10, count: 3 },
      { peer: 'small', height: 13, count: 3 },
    ]);
    const old = new BlockPool(1, 4, 10_000);
    old.setStatus('old', 1, 1000);
    assert.deepEqual(
      old.scheduleRanges(0).map((r) => r.count),
      [1, 1, 1, 1],
    );
  });

  it('groups requests into ranges of consecutive heights per peer, at most the maximum long', () => {
    const rs = [1, 2, 3, 4, 5].map((height) => ({ peer: 'a', height }));
    rs.splice(2, 0, { peer: 'b', height: 9 });
    assert.deepEqual(
      ranges(rs, () => 4),
      [
        { peer: 'a', height: 1, count: 4 },
        { peer: 'b', height: 9, count: 1 },
        { peer: 'a', height: 5, count: 1 },
      ],
    );
    assert.deepEqual(
      ranges(
        [
          { peer: 'a', height: 1 },
          { peer: 'a', height: 3 },
        ],
        () => 4,
      ),
      [
        { peer: 'a', height: 1, count: 1 },
        { peer: 'a', height: 3, count: 1 },
      ],
    );
  });
});

describe('block sync codec: ranges', () => {
  it('carries a request count and a status max_range, and reads bytes without them as one height', () => {
    const req = decodeBlockSyncMessage(encodeBlockSyncMessage({ kind: 'blockRequest', height: 7, count: 8 }));
    assert.deepEqual(req, { kind: 'blockRequest', height: 7, count: 8 });
    assert.deepEqual(decodeBlockSyncMessage(encodeBlockSyncMessage({ kind: 'blockRequest', height: 7 })), {
      kind: 'blockRequest',
      height: 7,
    });
    const st = { kind: 'status', base: 1, height: 99, maxRange: 64 } as const;
    assert.deepEqual(decodeBlockSyncMessage(encodeBlockSyncMessage(st)), st);
    assert.deepEqual(
      decodeBlockSyncMessage(encodeBlockSyncMessage({ kind: 'status', base: 1, height: 99 })),
      {
        kind: 'status',
        base: 1,
        height: 99,
      },
    );
    // A peer that says it answers more is taken at this node's maximum.
    const big = encodeBlockSyncMessage({ kind: 'status', base: 1, height: 99, maxRange: 1000 });
    assert.deepEqual(decodeBlockSyncMessage(big), {
      kind: 'status',
      base: 1,
      height: 99,
      maxRange: MAX_BLOCK_RANGE,
    });
  });

  it('refuses a request count of 0 or above the maximum, naming it', () => {
    // Hand-built: envelope field 3 (BlockRequest) { height 5, count N }.
    const request = (count: number) => new Uint8Array([0x1a, 4, 0x08, 5, 0x10, count]);
    assert.throws(
      () => decodeBlockSyncMessage(request(0)),
      /block sync message: request count 0 is not 1\.\.64/,
    );
    assert.throws(
      () => decodeBlockSyncMessage(request(65)),
      /block sync message: request count 65 is not 1\.\.64/,
    );
    assert.deepEqual(decodeBlockSyncMessage(request(64)), { kind: 'blockRequest', height: 5, count: 64 });
  });
});
