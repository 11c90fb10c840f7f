// The native packages (keccak, secp256k1, @nxtedition/rocksdb) are installed with their install
// scripts denied and load prebuilt binaries at run time. keccak and secp256k1 would silently fall
// back to JavaScript without them, and RocksDB has no fallback: this fails loudly instead.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { nativeBackends } from '@noded/crypto';
import { RocksKV } from '@noded/storage';

describe('native bindings', () => {
  it('keccak256 and secp256k1 run on their native bindings, not the JavaScript fallbacks', () => {
    const native = nativeBackends();
    assert.equal(native.keccak, true, 'keccak: native binding not loaded (prebuilds/ missing or broken?)');
    assert.equal(native.secp256k1, true, 'secp256k1: native binding not loaded, fell back to elliptic');
  });

  it('@nxtedition/rocksdb loads: RocksKV writes and reads a key on disk', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-native-'));
    try {
      const kv = await RocksKV.open(join(dir, 'db'));
      try {
        const key = new TextEncoder().encode('native');
        await kv.write([{ type: 'put', key, value: new Uint8Array([1, 2, 3]) }], { sync: true });
        assert.deepEqual([...((await kv.get(key)) ?? [])], [1, 2, 3]);
      } finally {
        await kv.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
