import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  COMPACTION_NICE,
  type KVStore,
  lowerCompactionThreads,
  lowerThreadsNamed,
  MemoryKV,
  RocksKV,
} from '@noded/storage';
import { processThreads } from '../threads.js';

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
  it('RocksKV frees each write batch once written: none stays attached to the database, failed writes included', async () => {
    // Each write fills a native rocksdb::WriteBatch with a copy of its keys and values. abstract-level
    // keeps a batch in the database's set of open resources until it is closed; the binding's own
    // batch() never closed it, so every block's write set stayed in memory for the life of the node.
    const dir = mkdtempSync(join(tmpdir(), 'noded-kv-'));
    try {
      const kv = await RocksKV.open(join(dir, 'db'));
      const db = (kv as unknown as { db: object }).db;
      const symbol = Object.getOwnPropertySymbols(db).find((x) => x.description === 'resources');
      assert.ok(symbol, 'abstract-level keeps its open resources under Symbol(resources)');
      const resources = (db as Record<symbol, Set<unknown>>)[symbol];
      const value = new Uint8Array(4096).fill(7);
      for (let i = 0; i < 500; i++) {
        await kv.write([
          { type: 'put', key: b(`k${i % 50}`), value },
          { type: 'del', key: b(`k${(i + 25) % 50}`) },
        ]);
      }
      assert.equal(resources.size, 0, 'open batches after 500 writes');
      const bad = [{ type: 'put', key: b('x'), value: undefined }] as unknown as Parameters<
        typeof kv.write
      >[0];
      await assert.rejects(kv.write(bad), /value cannot be null or undefined/);
      assert.equal(resources.size, 0, 'open batches after a refused write');
      assert.equal(await kv.get(b('x')), undefined);
      assert.deepEqual(await kv.get(b('k49')), value);
      assert.equal(await kv.get(b('k24')), undefined);
      await kv.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('RocksKV keeps its memtables within the budget: 48 MB of writes leave a few MiB in memory, all of it readable', async () => {
    // RocksDB's defaults (64 MiB write buffers, two per database) held every write of a quiet node in
    // memory, never flushed: half a gigabyte over four databases (docs/reliability.md, Bounded memory).
    const dir = mkdtempSync(join(tmpdir(), 'noded-kv-'));
    try {
      const kv = await RocksKV.open(join(dir, 'db'), { memtableBudget: 4 << 20 });
      const idle = kv.memoryUsage();
      assert.ok(idle.memtables < 1 << 20, `an empty database's memtables: ${idle.memtables} bytes`);
      const value = new Uint8Array(1024);
      let most = 0;
      for (let i = 0; i < 48 * 1024; i += 256) {
        const ops = Array.from({ length: 256 }, (_, j) => {
          const v = value.slice();
          new DataView(v.buffer).setUint32(0, i + j);
          return { type: 'put' as const, key: b(`key-${String(i + j).padStart(8, '0')}`), value: v };
        });
        await kv.write(ops);
        most = Math.max(most, kv.memoryUsage().memtables);
      }
      // Write buffers of budget / 4 = 1 MiB; at most six exist (the seventh write waits for a flush).
      assert.ok(most > 512 << 10, `the memtables held the writes for a while (most ${most} bytes)`);
      assert.ok(most <= 7 << 20, `memtables stayed near the 4 MiB budget: most ${most} bytes`);
      for (const n of [0, 12_345, 48 * 1024 - 1]) {
        const got = await kv.get(b(`key-${String(n).padStart(8, '0')}`));
        assert.equal(got && new DataView(got.buffer, got.byteOffset).getUint32(0), n);
      }
      const usage = kv.memoryUsage();
      assert.ok(usage.blockCache <= 8 << 20, `block cache within its 8 MiB: ${usage.blockCache}`);
      await kv.close();
      assert.deepEqual(kv.memoryUsage(), { memtables: 0, blockCache: 0, tableReaders: 0 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('RocksKV opens a database written with RocksDB default options (homes from before the memtable budget) with every key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-kv-'));
    try {
      const require = createRequire(import.meta.url);
      const { RocksLevel } = require('@nxtedition/rocksdb') as {
        RocksLevel: new (
          location: string,
          options: Record<string, unknown>,
        ) => {
          open(o: { createIfMissing: boolean }): Promise<void>;
          batch(ops: Array<{ type: 'put'; key: Uint8Array; value: Uint8Array }>): Promise<void>;
          close(): Promise<void>;
        };
      };
      const old = new RocksLevel(join(dir, 'db'), { keyEncoding: 'buffer', valueEncoding: 'buffer' });
      await old.open({ createIfMissing: true });
      const value = new Uint8Array(512).fill(3);
      for (let i = 0; i < 8000; i += 500) {
        await old.batch(
          Array.from({ length: 500 }, (_, j) => ({ type: 'put' as const, key: b(`old-${i + j}`), value })),
        );
      }
      await old.close();
      const kv = await RocksKV.open(join(dir, 'db'));
      let n = 0;
      for await (const [, v] of kv.iterate({ gte: b('old-'), lt: b('old.') })) {
        assert.deepEqual(v, value);
        n++;
      }
      assert.equal(n, 8000);
      await kv.write([{ type: 'put', key: b('new'), value: b('v') }]);
      await kv.close();
      const again = await RocksKV.open(join(dir, 'db'));
      assert.equal(s(await again.get(b('new'))), 'v');
      assert.deepEqual(await again.get(b('old-7999')), value);
      await again.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("RocksKV's options as RocksDB records them: levels 0-1 raw, ZSTD below without a trained dictionary", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-kv-'));
    try {
      const kv = await RocksKV.open(join(dir, 'db'));
      await kv.close();
      // RocksDB writes the options it runs with to OPTIONS-<n>; the newest is the one in force.
      const name = readdirSync(join(dir, 'db'))
        .filter((n) => /^OPTIONS-\d+$/.test(n))
        .sort((x, y) => Number(x.slice(8)) - Number(y.slice(8)))
        .pop();
      assert.ok(name, 'an OPTIONS file');
      const text = readFileSync(join(dir, 'db', name), 'utf8');
      const option = (key: string) => new RegExp(`^\\s*${key}=(.*)$`, 'm').exec(text)?.[1];
      assert.equal(
        option('compression_per_level'),
        'kNoCompression:kNoCompression:kZSTD:kZSTD:kZSTD:kZSTD:kZSTD',
      );
      const zstd = option('compression_opts') ?? '';
      assert.match(zstd, /[{;]max_dict_bytes=0;/);
      assert.match(zstd, /[{;]zstd_max_train_bytes=0;/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("RocksKV.open lowers RocksDB's compaction threads to nice 10 and leaves the flush threads and this one alone", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-kv-'));
    try {
      const kv = await RocksKV.open(join(dir, 'db'));
      try {
        const all = processThreads();
        const compaction = all.filter((t) => t.comm === 'rocksdb:low');
        const flush = all.filter((t) => t.comm === 'rocksdb:high');
        assert.ok(compaction.length > 0, `a rocksdb:low thread among ${all.map((t) => t.comm).join(', ')}`);
        assert.ok(flush.length > 0, 'a rocksdb:high thread');
        for (const t of compaction) assert.equal(t.nice, COMPACTION_NICE, `thread ${t.tid}`);
        for (const t of flush) assert.equal(t.nice, 0, `thread ${t.tid}`);
        assert.equal(getPriority(process.pid), 0, 'the main thread');
        // Nothing is ever raised back: a second open finds them lowered and lowers nothing.
        assert.equal(lowerCompactionThreads(), 0);
        assert.equal(lowerThreadsNamed('no-such-thread', 5), 0);
      } finally {
        await kv.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('RocksKV.open refuses a memory budget that is not a whole number of bytes from 1 MiB to 4 GiB, and creates nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-kv-'));
    try {
      for (const [options, message] of [
        [
          { memtableBudget: 1000 },
          /memtableBudget must be a whole number of bytes from 1 MiB to 4 GiB, got 1000/,
        ],
        [{ blockCache: 2 ** 32 }, /blockCache must be .* got 4294967296/],
        [{ blockCache: 1.5 * 2 ** 20 + 0.5 }, /blockCache must be .* got 1572864.5/],
        [{ memtableBudget: Number.NaN }, /memtableBudget must be .* got NaN/],
      ] as const) {
        await assert.rejects(RocksKV.open(join(dir, 'db'), options), message);
      }
      assert.equal(existsSync(join(dir, 'db')), false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
