// libs/native's add-on through its real callers: RocksKV.flushMemtables and evictBlockCache on a real
// database on disk,
// and malloc_trim in a child process whose glibc heap holds freed blocks. Fails (never skips) when
// `npm run build` did not compile the add-on.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { keccak256, keccakBackend, sha256, sha256Backend } from '@noded/crypto/src/hash.js';
import { evictBlockCache, flushMemtables, nativeKeccak256, nativeSha256, nativeStatus } from '@noded/native';
import { Closers } from '@noded/service-shared/src/bootstrap.js';
import { nativeReclaim } from '@noded/service-shared/src/native-reclaim.js';
import { RocksKV } from '@noded/storage';
import { silentLogger } from '@noded/types';
import { keccak256 as ethersKeccak } from 'ethers';

const MB = 1 << 20;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'noded-native-'));
  dirs.push(d);
  return d;
};
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** `n` puts of 1 KB values, in batches, each key `k<i>`. */
async function fill(kv: RocksKV, n: number): Promise<void> {
  for (let i = 0; i < n; i += 500) {
    const ops = [];
    for (let j = i; j < Math.min(n, i + 500); j++)
      ops.push({ type: 'put' as const, key: Buffer.from(`k${j}`), value: Buffer.alloc(1024, j % 251) });
    await kv.write(ops);
  }
}

/** Flushes `kv`'s memtables to a table file and waits until they are gone: reads then use the cache. */
async function toTableFile(kv: RocksKV): Promise<void> {
  assert.equal(kv.flushMemtables(1), true);
  assert.ok((await memtablesUnder(kv, 64 << 10)) < 64 << 10, 'flushed');
}

/** Reads k0..k<n-1> and checks each value (fill's). */
async function readAll(kv: RocksKV, n: number): Promise<void> {
  for (let i = 0; i < n; i += 500) {
    const keys = [];
    for (let j = i; j < Math.min(n, i + 500); j++) keys.push(Buffer.from(`k${j}`));
    const values = await kv.getMany(keys);
    for (const [j, v] of values.entries()) assert.equal(v?.[0], (i + j) % 251, `k${i + j}`);
  }
}

async function memtablesUnder(kv: RocksKV, bytes: number): Promise<number> {
  let m = kv.memoryUsage().memtables;
  for (let i = 0; i < 100 && m >= bytes; i++) {
    await sleep(20);
    m = kv.memoryUsage().memtables;
  }
  return m;
}

describe('@noded/native', () => {
  it('is built and loaded, and was compiled against the installed @nxtedition/rocksdb', () => {
    assert.deepEqual(nativeStatus(), { loaded: true, flush: true });
  });

  it('flushes a quiet database: its memtables go, every write is still read back, before and after a reopen', async () => {
    const dir = tempDir();
    let kv = await RocksKV.open(dir);
    try {
      await fill(kv, 6_000); // ~6 MB: under one 8 MiB write buffer, so RocksDB itself flushes nothing
      const before = kv.memoryUsage().memtables;
      assert.ok(before > 5 * MB, `memtables hold the writes: ${before}`);
      assert.equal(kv.flushMemtables(), true);
      const left = await memtablesUnder(kv, MB);
      assert.ok(left < MB, `memtables after the flush: ${left} bytes (were ${before})`);
      for (const i of [0, 2_999, 5_999]) assert.equal((await kv.get(Buffer.from(`k${i}`)))?.[0], i % 251);
      assert.equal(kv.flushMemtables(), false, 'nothing over 1 MiB left to flush');
      await kv.close();
      assert.equal(kv.flushMemtables(), false, 'a closed database is not flushed');
      kv = await RocksKV.open(dir);
      assert.ok(kv.memoryUsage().memtables < MB, 'the writes came back from the table file, not the WAL');
      assert.equal((await kv.get(Buffer.from('k4321')))?.[0], 4321 % 251);
    } finally {
      await kv.close();
    }
  });

  it('empties a block cache a load of reads filled, and every value is still read back', async () => {
    const kv = await RocksKV.open(tempDir());
    try {
      await fill(kv, 6_000);
      await toTableFile(kv);
      await readAll(kv, 6_000); // ~6 MB of data blocks, under the 8 MiB cache
      const filled = kv.memoryUsage().blockCache;
      assert.ok(filled > 5 * MB, `the reads filled the cache: ${filled}`);
      assert.equal(kv.evictBlockCache(filled + 1), 0, 'under minBytes: left alone');
      assert.equal(kv.memoryUsage().blockCache, filled);
      const freed = kv.evictBlockCache();
      const left = kv.memoryUsage().blockCache;
      assert.ok(left < 256 << 10, `cache after the eviction: ${left} bytes (was ${filled})`);
      assert.ok(freed >= filled - left - (64 << 10), `freed ${freed} of ${filled - left} bytes`);
      assert.equal(kv.evictBlockCache(), 0, 'nothing over 1 MiB left');
      await readAll(kv, 6_000);
      assert.ok(kv.memoryUsage().blockCache > 5 * MB, 'the cache fills again from the table file');
      await kv.close();
      assert.equal(kv.evictBlockCache(1), 0, 'a closed database is left alone');
    } finally {
      await kv.close();
    }
  });

  it('refuses a handle whose database is not at the location given, and flushes or evicts nothing', async () => {
    const dir = tempDir();
    const kv = await RocksKV.open(dir);
    try {
      await fill(kv, 3_000);
      const handle = (kv as unknown as { db: { handle: bigint } }).db.handle;
      assert.throws(() => flushMemtables(handle, `${dir}-other`), /the handle's database is not at .*-other/);
      assert.throws(() => flushMemtables(0n, dir), /non-zero bigint handle/);
      await sleep(200);
      assert.ok(kv.memoryUsage().memtables > 2 * MB, 'still in the memtables');
      await toTableFile(kv);
      await readAll(kv, 3_000);
      const cached = kv.memoryUsage().blockCache;
      assert.throws(
        () => evictBlockCache(handle, `${dir}-other`),
        /evictBlockCache: the handle's database is not at .*-other/,
      );
      assert.throws(
        () => evictBlockCache(0n, dir),
        /evictBlockCache: handle must be the database's non-zero bigint handle/,
      );
      assert.equal(kv.memoryUsage().blockCache, cached, 'the cache as it was');
    } finally {
      await kv.close();
    }
  });

  it('nativeReclaim flushes and empties the caches of the databases that hold enough, in this thread or another, and logs a refusal without throwing', async () => {
    const kv = await RocksKV.open(tempDir());
    const read = await RocksKV.open(tempDir());
    const small = await RocksKV.open(tempDir());
    const warnings: string[] = [];
    const log = { ...silentLogger, warn: (_o: unknown, msg?: string) => void warnings.push(String(msg)) };
    try {
      await fill(kv, 4_000);
      await fill(read, 3_000);
      await toTableFile(read);
      await readAll(read, 3_000);
      await fill(small, 100);
      await toTableFile(small);
      await readAll(small, 100);
      await fill(small, 50); // in the memtables again, under 1 MiB
      const smallCache = small.memoryUsage().blockCache;
      assert.ok(read.memoryUsage().blockCache > 2 * MB);
      assert.ok(smallCache > 0 && smallCache < MB, `small cache ${smallCache}`);
      const broken = {
        location: '/nowhere',
        flushMemtables: () => {
          throw new Error('refused');
        },
        evictBlockCache: () => {
          throw new Error('refused');
        },
      };
      const elsewhere = {
        location: kv.location,
        flushMemtables: async (min?: number) => kv.flushMemtables(min),
        evictBlockCache: async (min?: number) => kv.evictBlockCache(min),
      };
      nativeReclaim(() => [elsewhere, read, small, broken], log, { trimDelayMs: 10 })();
      assert.ok((await memtablesUnder(kv, MB)) < MB);
      assert.ok(read.memoryUsage().blockCache < 256 << 10, 'the read cache emptied');
      assert.ok(small.memoryUsage().blockCache >= smallCache, 'under minCacheBytes: left alone');
      assert.ok(small.memoryUsage().memtables > 0, 'under minMemtableBytes: left alone');
      assert.deepEqual(warnings.sort(), ['block cache eviction refused', 'memtable flush refused']);
    } finally {
      await kv.close();
      await read.close();
      await small.close();
    }
  });

  it("a cluster service's Closers hands its open databases to the quiet-time flush, and drops them once closed", async () => {
    const closers = new Closers(silentLogger);
    const kv = await RocksKV.open(tempDir());
    closers.addDatabase('x.db', kv);
    closers.add('other', () => {});
    assert.deepEqual(closers.databases(), [kv]);
    await fill(kv, 3_000);
    nativeReclaim(() => closers.databases(), silentLogger, { trimDelayMs: 10 })();
    assert.ok((await memtablesUnder(kv, MB)) < MB, 'flushed through the service registry');
    await closers.closeAll();
    assert.deepEqual(closers.databases(), []);
    assert.equal(kv.flushMemtables(1), false, 'closed by closeAll');
  });

  it('malloc_trim gives back the free pages in the middle of glibc heaps', () => {
    // A child with glibc's own trimming off (a huge MALLOC_TRIM_THRESHOLD_) and one arena: 64 MB of
    // 16 KB native blocks, every other one freed, leave the heap's free pages between live blocks,
    // which only malloc_trim returns.
    const script = `
      const { mallocTrim } = await import('@noded/native');
      const rss = () => process.memoryUsage.rss();
      let held = [];
      for (let i = 0; i < 4096; i++) held.push(Buffer.allocUnsafeSlow(16384).fill(1));
      held = held.filter((_, i) => i % 2 === 0);
      globalThis.gc(); globalThis.gc();
      await new Promise((r) => setTimeout(r, 50));
      const before = rss();
      const trimmed = mallocTrim();
      const after = rss();
      process.stdout.write(JSON.stringify({ before, after, trimmed, live: held.length }));`;
    const run = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], {
      cwd: join(import.meta.dirname, '..', '..'),
      env: { ...process.env, MALLOC_TRIM_THRESHOLD_: String(1 << 30), MALLOC_ARENA_MAX: '1' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(run.status, 0, run.stderr);
    const r = JSON.parse(run.stdout) as { before: number; after: number; trimmed: boolean; live: number };
    assert.equal(r.live, 2048);
    assert.equal(r.trimmed, true);
    assert.ok(r.before - r.after > 16 * MB, `gave back ${((r.before - r.after) / MB).toFixed(1)} MB`);
  });

  // A child as above whose event loop never goes quiet (a timer every 5 ms allocating and freeing
  // small Buffers): startBusyTrim gives the free pages back anyway, and only when mallinfo2 shows at
  // least minFreeBytes free.
  const busyChild = (minFreeBytes: number) => {
    const script = `
      const { mallocInfo } = await import('@noded/native');
      const { startBusyTrim } = await import('./services/shared/src/native-reclaim.js');
      const rss = () => process.memoryUsage.rss();
      let held = [];
      for (let i = 0; i < 4096; i++) held.push(Buffer.allocUnsafeSlow(16384).fill(1));
      held = held.filter((_, i) => i % 2 === 0);
      globalThis.gc(); globalThis.gc();
      await new Promise((r) => setTimeout(r, 50));
      const busy = setInterval(() => { for (let i = 0; i < 64; i++) Buffer.allocUnsafeSlow(512).fill(2); }, 5);
      const logged = [];
      const log = { debug: (o, msg) => logged.push({ ...o, msg }) };
      const info = mallocInfo();
      const before = rss();
      const stop = startBusyTrim(log, { everyMs: 100, minFreeBytes: ${minFreeBytes} });
      await new Promise((r) => setTimeout(r, 450));
      stop();
      clearInterval(busy);
      process.stdout.write(JSON.stringify({ info, before, after: rss(), logged, live: held.length }));`;
    const run = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], {
      cwd: join(import.meta.dirname, '..', '..'),
      env: { ...process.env, MALLOC_TRIM_THRESHOLD_: String(1 << 30), MALLOC_ARENA_MAX: '1' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(run.status, 0, run.stderr);
    return JSON.parse(run.stdout) as {
      info: { heap: number; free: number };
      before: number;
      after: number;
      logged: Array<{ msg: string; freeMB: number; ms: number }>;
      live: number;
    };
  };

  it('mallocInfo sees the free pages, and startBusyTrim gives them back while the loop is busy', () => {
    const r = busyChild(16 * MB);
    assert.equal(r.live, 2048);
    assert.ok(r.info.free > 24 * MB && r.info.free < r.info.heap, `mallinfo2: ${JSON.stringify(r.info)}`);
    assert.ok(r.before - r.after > 16 * MB, `gave back ${((r.before - r.after) / MB).toFixed(1)} MB`);
    // Every 100 ms over 450 ms: mallinfo2 still counts the given-back pages as free, so each look trims.
    assert.ok(r.logged.length >= 3, JSON.stringify(r.logged));
    assert.ok(r.logged[0]!.freeMB > 24, JSON.stringify(r.logged));
  });

  it('startBusyTrim leaves heaps with fewer free bytes than minFreeBytes alone', () => {
    const r = busyChild(1024 * MB);
    assert.deepEqual(r.logged, []);
    assert.ok(r.before - r.after < 8 * MB, `gave back ${((r.before - r.after) / MB).toFixed(1)} MB`);
  });
});

describe("the add-on's keccak256", () => {
  // An independent implementation (ethers', pure JavaScript) as the reference.
  const reference = (d: Uint8Array) => ethersKeccak(d).slice(2);
  const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

  it('is what @noded/crypto hashes with', () => {
    assert.ok(nativeKeccak256 !== undefined, 'the add-on has no keccak256 (not built?)');
    assert.equal(keccakBackend, 'addon');
  });

  it("gives the known digests and an independent implementation's on every length across three rate blocks", () => {
    const k = nativeKeccak256!;
    assert.equal(
      hex(k(new Uint8Array(0))),
      'c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470',
    );
    assert.equal(
      hex(k(new TextEncoder().encode('abc'))),
      '4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45',
    );
    let seed = 7;
    const next = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed & 0xff;
    };
    // 135, 136 and 137 bytes straddle the rate (the padding bytes meet or spill into a block).
    for (let len = 0; len <= 3 * 136 + 1; len++) {
      const d = Uint8Array.from({ length: len }, next);
      assert.equal(hex(k(d)), reference(d), `length ${len}`);
      assert.equal(hex(keccak256(d)), reference(d), `@noded/crypto, length ${len}`);
    }
    // A view inside a larger buffer hashes its own bytes only; a Buffer is a Uint8Array.
    const big = Uint8Array.from({ length: 300 }, next);
    assert.equal(hex(k(big.subarray(17, 150))), reference(big.subarray(17, 150)));
    assert.equal(hex(k(Buffer.from(big))), reference(big));
  });

  it('refuses what is not a Uint8Array (its caller never passes one)', () => {
    assert.throws(() => nativeKeccak256!(new Uint16Array(4) as unknown as Uint8Array), /Uint8Array/);
  });
});

describe("the add-on's sha256", () => {
  // node:crypto (OpenSSL) as the reference.
  const reference = (d: Uint8Array) => createHash('sha256').update(d).digest('hex');
  const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

  it('is what @noded/crypto hashes with', () => {
    assert.ok(nativeSha256 !== undefined, 'the add-on has no sha256 (not built?)');
    assert.equal(sha256Backend, 'addon');
  });

  it("gives FIPS 180-4's examples and OpenSSL's digest on every length across three blocks", () => {
    const h = nativeSha256!;
    assert.equal(
      hex(h(new Uint8Array(0))),
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    );
    assert.equal(
      hex(h(new TextEncoder().encode('abc'))),
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    );
    assert.equal(
      hex(h(new TextEncoder().encode('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq'))),
      '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
    );
    let seed = 11;
    const next = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed & 0xff;
    };
    // 55, 56 and 64 bytes: the padding and the length fit one block, spill into a second, or need one of their own.
    for (let len = 0; len <= 3 * 64 + 1; len++) {
      const d = Uint8Array.from({ length: len }, next);
      assert.equal(hex(h(d)), reference(d), `length ${len}`);
      assert.equal(hex(sha256(d)), reference(d), `@noded/crypto, length ${len}`);
    }
    // Longer inputs (a large transaction), a view inside a larger buffer, and a Buffer.
    const big = Uint8Array.from({ length: 100_003 }, next);
    assert.equal(hex(h(big)), reference(big));
    assert.equal(hex(h(big.subarray(17, 150))), reference(big.subarray(17, 150)));
    assert.equal(hex(h(Buffer.from(big.subarray(0, 999)))), reference(big.subarray(0, 999)));
  });

  it('refuses what is not a Uint8Array (its caller never passes one)', () => {
    assert.throws(
      () => nativeSha256!(new Uint16Array(4) as unknown as Uint8Array),
      /sha256\(data, out\).*Uint8Array/,
    );
  });
});
