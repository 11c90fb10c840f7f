import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { type KVStore, MemoryKV, RocksKV } from '../../libs/storage/index.js';

const b = (s: string) => new TextEncoder().encode(s);
const s = (u: Uint8Array | undefined) => (u ? new TextDecoder().decode(u) : undefined);

async function exercise(kv: KVStore) {
  await kv.write([
    { type: 'put', key: b('a1'), value: b('x') },
    { type: 'put', key: b('a2'), value: b('y') },
    { type: 'put', key: b('b1'), value: b('z') },
  ]);
  assert.equal(s(await kv.get(b('a2'))), 'y');
  assert.equal(await kv.get(b('nope')), undefined);
  assert.deepEqual((await kv.getMany([b('a1'), b('zz')])).map(s), ['x', undefined]);
  const seen: string[] = [];
  for await (const [k] of kv.iterate({ gte: b('a'), lt: b('b') })) seen.push(s(k)!);
  assert.deepEqual(seen, ['a1', 'a2']);
  const rev: string[] = [];
  for await (const [k] of kv.iterate({ reverse: true, limit: 2 })) rev.push(s(k)!);
  assert.deepEqual(rev, ['b1', 'a2']);
  await kv.write([{ type: 'del', key: b('a1') }]);
  assert.equal(await kv.get(b('a1')), undefined);
}

describe('KVStore', () => {
  it('MemoryKV gets, iterates in byte order and deletes', async () => {
    await exercise(new MemoryKV());
  });

  it('RocksKV does the same on disk and keeps data across reopen; a second opener is refused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-kv-'));
    try {
      const kv = await RocksKV.open(join(dir, 'db'));
      await exercise(kv);
      await assert.rejects(RocksKV.open(join(dir, 'db')), /cannot open database/);
      await kv.write([{ type: 'put', key: b('k'), value: b('v') }], { sync: true });
      await kv.close();
      const again = await RocksKV.open(join(dir, 'db'));
      assert.equal(s(await again.get(b('k'))), 'v');
      await again.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
