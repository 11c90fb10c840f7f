// HoldingKV (libs/storage): writes held in memory read as written, iterate merged in byte order
// with the store's, reach the store only at release() as one batch, and are lost if never released.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { type BatchOp, HoldingKV, MemoryKV, RocksKV } from '@noded/storage';

const b = (s: string) => new TextEncoder().encode(s);
const s = (u: Uint8Array | undefined) => (u ? new TextDecoder().decode(u) : undefined);

/** A MemoryKV that counts the batches written to it. */
class CountingKV extends MemoryKV {
  readonly writes: Array<{ ops: number; sync: boolean }> = [];
  override async write(ops: BatchOp[], options?: { sync?: boolean }): Promise<void> {
    this.writes.push({ ops: ops.length, sync: options?.sync === true });
    await super.write(ops);
  }
}

async function keys(kv: HoldingKV | MemoryKV, range: Parameters<MemoryKV['iterate']>[0]): Promise<string[]> {
  const out: string[] = [];
  for await (const [k, v] of kv.iterate(range)) out.push(`${s(k)}=${s(v)}`);
  return out;
}

describe('HoldingKV', () => {
  it('reads held writes as written, merges them into iteration, and writes them only at release, as one batch', async () => {
    const inner = new CountingKV();
    await inner.write([
      { type: 'put', key: b('a1'), value: b('1') },
      { type: 'put', key: b('a3'), value: b('3') },
      { type: 'put', key: b('a5'), value: b('5') },
      { type: 'put', key: b('b1'), value: b('b') },
    ]);
    const kv = new HoldingKV(inner);
    kv.hold();
    const value = b('new');
    await kv.write([
      { type: 'put', key: b('a2'), value },
      { type: 'put', key: b('a3'), value: b('3b') },
      { type: 'del', key: b('a5') },
      { type: 'put', key: b('a6'), value: b('6') },
    ]);
    value.fill(0); // the caller's buffer is reused: the held write keeps its own copy
    await kv.write([{ type: 'put', key: b('a0'), value: b('0') }], { sync: true });
    assert.equal(inner.writes.length, 1, 'nothing reached the store while holding');
    assert.equal(kv.heldKeys, 5);
    assert.equal(s(await kv.get(b('a2'))), 'new');
    assert.equal(await kv.get(b('a5')), undefined, 'a held delete hides the stored value');
    assert.deepEqual((await kv.getMany([b('a1'), b('a3'), b('a5'), b('zz')])).map(s), [
      '1',
      '3b',
      undefined,
      undefined,
    ]);
    assert.deepEqual(kv.getManySync([b('a6'), b('b1')]).map(s), ['6', 'b']);
    assert.deepEqual(await keys(kv, { gte: b('a'), lt: b('b') }), [
      'a0=0',
      'a1=1',
      'a2=new',
      'a3=3b',
      'a6=6',
    ]);
    assert.deepEqual(await keys(kv, { gt: b('a1'), lte: b('a6'), limit: 2 }), ['a2=new', 'a3=3b']);
    assert.deepEqual(await keys(kv, { reverse: true, limit: 3 }), ['b1=b', 'a6=6', 'a3=3b']);
    assert.deepEqual(await keys(kv, { reverse: true, lt: b('a6'), gt: b('a0') }), [
      'a3=3b',
      'a2=new',
      'a1=1',
    ]);
    assert.deepEqual(await keys(kv, { gte: b('c') }), []);

    await kv.release({ sync: true }, [{ type: 'put', key: b('c1'), value: b('c') }]);
    assert.equal(kv.holding, false);
    assert.equal(kv.heldKeys, 0);
    assert.deepEqual(
      inner.writes[1],
      { ops: 6, sync: true },
      'the held writes and the new one, one synced batch',
    );
    assert.deepEqual(await keys(inner, {}), ['a0=0', 'a1=1', 'a2=new', 'a3=3b', 'a6=6', 'b1=b', 'c1=c']);
    // Not holding: writes go straight through.
    await kv.write([{ type: 'del', key: b('c1') }]);
    assert.equal(await inner.get(b('c1')), undefined);
    assert.equal(inner.writes.length, 3);
  });

  it('on RocksDB: held writes survive nothing but a release (a reopen without one finds the store as before)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-holding-'));
    try {
      let kv = new HoldingKV(await RocksKV.open(join(dir, 'db')));
      await kv.write([{ type: 'put', key: b('k1'), value: b('v1') }], { sync: true });
      kv.hold();
      await kv.write([{ type: 'put', key: b('k2'), value: b('v2') }]);
      assert.deepEqual(kv.getManySync([b('k1'), b('k2')]).map(s), ['v1', 'v2']);
      await kv.close(); // as a crash: never released
      kv = new HoldingKV(await RocksKV.open(join(dir, 'db')));
      assert.equal(await kv.get(b('k2')), undefined, 'the held write was lost, as it should be');
      kv.hold();
      await kv.write([{ type: 'put', key: b('k2'), value: b('v2') }]);
      await kv.release();
      await kv.close();
      kv = new HoldingKV(await RocksKV.open(join(dir, 'db')));
      assert.deepEqual((await kv.getMany([b('k1'), b('k2')])).map(s), ['v1', 'v2']);
      await kv.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
