import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { hasSyncReads, type KVStore, MemoryKV, RocksKV } from '@noded/storage';

const b = (s: string) => new TextEncoder().encode(s);

async function sameAsAsync(kv: KVStore) {
  await kv.write([
    { type: 'put', key: b('k1'), value: b('v1') },
    { type: 'put', key: b('k2'), value: b('v2') },
  ]);
  assert.ok(hasSyncReads(kv));
  const keys = [b('k1'), b('nope'), b('k2')];
  const sync = kv.getManySync(keys).map((v) => (v ? Buffer.from(v).toString() : undefined));
  const async_ = (await kv.getMany(keys)).map((v) => (v ? Buffer.from(v).toString() : undefined));
  assert.deepEqual(sync, ['v1', undefined, 'v2']);
  assert.deepEqual(sync, async_);
  assert.deepEqual(kv.getManySync([]), []);
}

describe('synchronous point reads (execution uses them for cold single keys)', () => {
  it('MemoryKV.getManySync answers as getMany', async () => {
    await sameAsAsync(new MemoryKV());
  });

  it('RocksKV.getManySync answers as getMany', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-kv-sync-'));
    try {
      const kv = await RocksKV.open(join(dir, 'db'));
      await sameAsAsync(kv);
      await kv.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
