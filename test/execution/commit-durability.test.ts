// Application.commit's durability option (block sync asks for `durable: false` while catching up):
// the executor's one atomic write per block is fsynced by default and only then skipped; the
// committed state is the same either way.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keccak256 } from '@noded/crypto';
import { type BatchOp, MemoryKV } from '@noded/storage';
import { addr, ETH, key, startNode } from './helpers.js';

/** Remembers the sync flag of every write. */
class RecordingKV extends MemoryKV {
  readonly syncs: boolean[] = [];
  override async write(ops: BatchOp[], options?: { sync?: boolean }): Promise<void> {
    this.syncs.push(options?.sync === true);
    await super.write(ops);
  }
}

describe('Executor.commit durability', () => {
  it('fsyncs the block write unless asked durable: false, and commits the same state', async () => {
    const a = addr(key(1));
    const hashes: string[] = [];
    for (const durable of [undefined, false] as const) {
      const kv = new RecordingKV();
      const n = await startNode([{ address: a, balance: ETH }], {}, kv);
      await n.ex.finalizeBlock({
        height: 1,
        time: n.time + 1_000_000_000n,
        proposerAddress: new Uint8Array(20),
        hash: keccak256(new TextEncoder().encode('block-1')),
        txs: [],
        misbehavior: [],
        decidedLastCommit: { round: 0, votes: [] },
      });
      const before = kv.syncs.length;
      const res = await n.ex.commit(durable === undefined ? undefined : { durable });
      assert.ok(res.retainHeight >= 0);
      assert.deepEqual(kv.syncs.slice(before), [durable === undefined], `commit(${String(durable)})`);
      const info = await n.ex.info();
      assert.equal(info.lastBlockHeight, 1);
      hashes.push(Buffer.from(info.lastBlockAppHash).toString('hex'));
    }
    assert.equal(hashes[0], hashes[1]);
  });
});
