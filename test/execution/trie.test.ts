import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createMPT, verifyMPTWithMerkleProof } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { EMPTY_TRIE_ROOT, MerkleTrie, orderedTrieRoot } from '@noded/execution/src/trie/mpt.js';
import { prng } from '../prng.js';

/** Deterministic PRNG (mulberry32). */
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

function randomBytes(r: () => number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(r() * 256);
  return out;
}

describe('MerkleTrie', () => {
  it('matches @ethereumjs/mpt roots and proofs over random batches, and persists exactly the live nodes', async () => {
    const r = prng(7);
    const store = new Map<string, Uint8Array>();
    const loader = async (paths: string[]) => paths.map((p) => store.get(p));
    let trie = new MerkleTrie('00', EMPTY_TRIE_ROOT, loader);
    const ref = await createMPT();
    const live = new Map<string, Uint8Array>();
    // A small key space (with shared prefixes) makes overwrites, splits and merges frequent.
    const space = Array.from({ length: 300 }, (_, i) => {
      const k = randomBytes(r, 32);
      if (i % 3 === 0) k.set(randomBytes(r, 1), 31);
      if (i % 5 === 0) k[0] = 0x11;
      return k;
    });
    for (let round = 0; round < 40; round++) {
      const batch: Array<[Uint8Array, Uint8Array | undefined]> = [];
      const n = 1 + Math.floor(r() * 40);
      for (let i = 0; i < n; i++) {
        const k = space[Math.floor(r() * space.length)];
        const del = live.size > 0 && r() < 0.35;
        const v = del ? undefined : randomBytes(r, 1 + Math.floor(r() * 40));
        batch.push([k, v]);
      }
      await trie.update(batch);
      for (const [k, v] of batch) {
        if (v) {
          live.set(hex(k), v);
          await ref.put(k, v);
        } else {
          live.delete(hex(k));
          await ref.del(k);
        }
      }
      const { root, changes } = trie.commit();
      assert.equal(hex(root), hex(ref.root()), `root differs in round ${round}`);
      for (const c of changes) {
        const before = store.get(c.path);
        assert.equal(
          before === undefined ? undefined : hex(before),
          c.old === undefined ? undefined : hex(c.old),
          `old value of ${c.path}`,
        );
        if (c.value) store.set(c.path, c.value);
        else store.delete(c.path);
      }
      // A fresh trie over the store reads every live value and proves it.
      if (round % 8 === 7) {
        trie = new MerkleTrie('00', root, loader);
        for (const [k, v] of [...live].slice(0, 30)) {
          const key = Buffer.from(k, 'hex');
          assert.equal(hex((await trie.get(key))!), hex(v));
          const proof = await trie.prove(key);
          const proven = await verifyMPTWithMerkleProof(await createMPT(), root, key, proof);
          assert.equal(hex(proven!), hex(v));
        }
        const absent = randomBytes(r, 32);
        const proof = await trie.prove(absent);
        assert.equal(await verifyMPTWithMerkleProof(await createMPT(), root, absent, proof), null);
      }
    }
    // Deleting everything leaves the store empty: no node was leaked.
    await trie.update([...live.keys()].map((k) => [Buffer.from(k, 'hex'), undefined]));
    const { root, changes } = trie.commit();
    for (const c of changes) {
      if (c.value) store.set(c.path, c.value);
      else store.delete(c.path);
    }
    assert.equal(hex(root), hex(EMPTY_TRIE_ROOT));
    assert.equal(store.size, 0);
  });

  it('orderedTrieRoot matches the reference trie keyed by rlp(index)', async () => {
    for (const count of [0, 1, 2, 16, 130, 300]) {
      const r = prng(count + 1);
      const values = Array.from({ length: count }, () => randomBytes(r, 1 + Math.floor(r() * 120)));
      const ref = await createMPT();
      for (let i = 0; i < count; i++) await ref.put(RLP.encode(i), values[i]);
      assert.equal(hex(await orderedTrieRoot(values)), hex(ref.root()), `count ${count}`);
    }
  });
});
