import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { createMPT, verifyMPTWithMerkleProof } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { keccak256 } from '@noded/crypto';
import {
  ArchiveOnPrunedStoreError,
  Executor,
  PrunedStateError,
  SupplyInvariantError,
} from '@noded/execution';
import { JournaledState } from '@noded/execution/src/state/journaled.js';
import { type KVStore, MemoryKV, RocksKV } from '@noded/storage';
import { EventBus, type Hex } from '@noded/types';
import { LAB_SOL } from './contracts.js';
import {
  addr,
  compile,
  ETH,
  executorOptions,
  key,
  produceBlock,
  signTx,
  startNode,
  type TestNode,
} from './helpers.js';
import { labSelectors } from './selectors.js';
import { workloadBlocks, workloadGenesis } from './workload.js';

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'noded-exec-state-'));
  dirs.push(d);
  return d;
}
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function workload(count: number) {
  const c = compile({ 'Lab.sol': LAB_SOL });
  return workloadBlocks(
    count,
    42,
    { lab: c.Lab.bytecode, burn: c.BurnOnCreate.bytecode },
    labSelectors(c.Lab.abi),
  );
}

async function runChain(blocks: Uint8Array[][], kv: KVStore = new MemoryKV(), stopAt = blocks.length) {
  const n = await startNode(workloadGenesis(), {}, kv);
  const hashes: Hex[] = [];
  for (const txs of blocks.slice(0, stopAt)) {
    const res = await produceBlock(n, txs);
    hashes.push(`0x${Buffer.from(res.appHash).toString('hex')}`);
  }
  return { n, hashes };
}

describe('determinism and persistence', () => {
  it('replaying the same blocks twice gives the same app hash and state root at every height', async () => {
    const blocks = workload(25);
    const one = await runChain(blocks);
    const two = await runChain(blocks);
    assert.deepEqual(one.hashes, two.hashes);
    for (let h = 0n; h <= 25n; h++) {
      assert.equal(
        (await one.n.ex.getBlockByNumber(h))?.stateRoot,
        (await two.n.ex.getBlockByNumber(h))?.stateRoot,
      );
    }
    // The workload really exercised the EVM: successes, reverts and a supply burn.
    let ok = 0;
    let failed = 0;
    for (let h = 1n; h <= 25n; h++) {
      for (const r of await one.n.ex.getBlockReceipts(h)) r.status === 1 ? ok++ : failed++;
    }
    assert.ok(ok > 60 && failed > 5, `ok ${ok} failed ${failed}`);
    assert.ok(one.n.ex.totalSupply() < 8000n * ETH);
    // The app hash commits to the state the next block starts from: state root and next base fee.
    const top = (await one.n.ex.getBlockByNumber(25n))!;
    const fee = Buffer.from(one.n.ex.nextBaseFee().toString(16).padStart(64, '0'), 'hex');
    const expected = keccak256(Buffer.concat([Buffer.from(top.stateRoot.slice(2), 'hex'), fee]));
    assert.equal(one.hashes[24], `0x${Buffer.from(expected).toString('hex')}`);
  });

  it('a node restarted on RocksDB mid-chain continues to the same hashes, and serves the same data', async () => {
    const blocks = workload(20);
    const ref = await runChain(blocks);
    const dir = tempDir();
    const kv = await RocksKV.open(join(dir, 'application.db'));
    const first = await runChain(blocks, kv, 12);
    await first.n.ex.close();
    await kv.close();

    const kv2 = await RocksKV.open(join(dir, 'application.db'));
    const bus = new EventBus();
    const ex = await Executor.open(executorOptions(kv2, bus));
    const info = await ex.info();
    assert.equal(info.lastBlockHeight, 12);
    assert.equal(`0x${Buffer.from(info.lastBlockAppHash).toString('hex')}`, ref.hashes[11]);
    const n: TestNode = { ex, kv: kv2, bus, events: [], height: 12, time: first.n.time };
    for (const txs of blocks.slice(12)) await produceBlock(n, txs);
    assert.equal((await ex.getBlockByNumber(20n))?.hash, (await ref.n.ex.getBlockByNumber(20n))?.hash);
    assert.equal(`0x${Buffer.from((await ex.info()).lastBlockAppHash).toString('hex')}`, ref.hashes[19]);
    for (const h of [3n, 12n, 17n]) {
      assert.deepEqual(await ex.getBlockReceipts(h), await ref.n.ex.getBlockReceipts(h));
      assert.equal(await ex.getBalance(addr(key(101)), h), await ref.n.ex.getBalance(addr(key(101)), h));
    }
    await ex.close();
    await kv2.close();
  });
});

describe('reads racing commits', () => {
  it('a read at height h returns the state of h even while h+1 and later blocks commit', async () => {
    const dir = tempDir();
    const kv = await RocksKV.open(join(dir, 'application.db'));
    const a = key(1);
    const to = addr(key(2));
    const n = await startNode([{ address: addr(a), balance: 1000n * ETH }], { keepRecent: 50 }, kv);
    const checks: Array<Promise<void>> = [];
    let wrong = 0;
    for (let i = 0n; i < 30n; i++) {
      const block = produceBlock(n, [signTx(a, { nonce: i, to, value: ETH })]);
      // Heights i (latest while block i+1 commits) and a few older ones, read mid-commit.
      for (const h of [i, i > 3n ? i - 3n : 0n]) {
        checks.push(
          n.ex.getBalance(to, h).then((v) => {
            if (v !== h * ETH) wrong++;
          }),
        );
      }
      await block;
    }
    await Promise.all(checks);
    assert.equal(wrong, 0);
    await n.ex.close();
    await kv.close();
  });
});

describe('total supply invariant', () => {
  it('halts a block whose balances change by more than the accounted burns, committing nothing', async () => {
    const a = key(1);
    const n = await startNode([{ address: addr(a), balance: 100n * ETH }]);
    await produceBlock(n, [signTx(a, { nonce: 0n, to: addr(key(2)), value: ETH })]);
    const supply = n.ex.totalSupply();
    const root = (await n.ex.getBlockByNumber(1n))!.stateRoot;
    // Inject a bug: the fee credit to the proposer mints one extra base unit.
    const proto = JournaledState.prototype;
    const orig = proto.addBalance;
    proto.addBalance = function (this: JournaledState, who: string, amount: bigint) {
      return orig.call(this, who, amount + 1n);
    };
    try {
      n.height++;
      await assert.rejects(
        n.ex.finalizeBlock({
          height: 2,
          time: n.time + 1_000_000_000n,
          proposerAddress: new Uint8Array(20).fill(0xaa),
          hash: new Uint8Array(32),
          txs: [signTx(a, { nonce: 1n, to: addr(key(2)), value: ETH })],
          misbehavior: [],
          decidedLastCommit: { round: 0, votes: [] },
        }),
        (e: unknown) => {
          assert.ok(e instanceof SupplyInvariantError);
          assert.equal(e.code, 'SUPPLY_MISMATCH');
          assert.equal(e.actualDelta - e.expectedDelta, 1n);
          assert.match(
            e.message,
            /^total supply invariant violated at height 2: balances changed by 1 base units but the accounted change is 0/,
          );
          return true;
        },
      );
    } finally {
      proto.addBalance = orig;
    }
    await assert.rejects(n.ex.commit(), /commit without a finalized block/);
    assert.equal(n.ex.latestHeight(), 1n);
    assert.equal(n.ex.totalSupply(), supply);
    assert.equal((await n.ex.getBlockByNumber(1n))!.stateRoot, root);
    // The same block without the bug goes through: nothing of the failed attempt leaked.
    n.height--;
    await produceBlock(n, [signTx(a, { nonce: 1n, to: addr(key(2)), value: ETH })]);
    assert.equal(await n.ex.getBalance(addr(key(2)), 2n), 2n * ETH);
    assert.equal(n.ex.totalSupply(), supply);
  });
});

describe('full and archive nodes', () => {
  it('a full node answers within the kept window and refuses older state with the documented error', async () => {
    const a = key(1);
    const n = await startNode([{ address: addr(a), balance: 100n * ETH }], { keepRecent: 3 });
    for (let i = 0n; i < 10n; i++)
      await produceBlock(n, [signTx(a, { nonce: i, to: addr(key(2)), value: ETH })]);
    assert.equal(n.ex.latestHeight(), 10n);
    assert.equal(n.ex.oldestStateHeight(), 8n);
    assert.equal(await n.ex.getBalance(addr(key(2)), 8n), 8n * ETH);
    assert.equal(await n.ex.getBalance(addr(key(2)), 10n), 10n * ETH);
    await assert.rejects(n.ex.getBalance(addr(key(2)), 7n), (e: unknown) => {
      assert.ok(e instanceof PrunedStateError);
      assert.equal(e.code, -32000);
      assert.equal(
        e.message,
        'historical state at height 7 is pruned (this full node keeps the last 3 heights); use an archive node',
      );
      return true;
    });
    await assert.rejects(
      n.ex.call({ to: addr(key(2)) }, 2n, undefined, { gasCap: 0n, timeoutMs: 0 }),
      PrunedStateError,
    );
    await assert.rejects(n.ex.getProof(addr(key(2)), [], 5n), PrunedStateError);
    // Blocks and receipts are not state: they stay.
    assert.equal((await n.ex.getBlockReceipts(2n)).length, 1);
  });

  it('pruning deletes the history it no longer needs; archive keeps every height', async () => {
    const a = key(1);
    const run = async (mode: 'full' | 'archive') => {
      const kv = new MemoryKV();
      const n = await startNode([{ address: addr(a), balance: 100n * ETH }], { keepRecent: 3, mode }, kv);
      for (let i = 0n; i < 30n; i++)
        await produceBlock(n, [signTx(a, { nonce: i, to: addr(key(2)), value: ETH })]);
      return { n, kv };
    };
    const full = await run('full');
    const archive = await run('archive');
    let histFull = 0;
    let histArchive = 0;
    for await (const _ of full.kv.iterate({ gte: Uint8Array.of(0x20), lt: Uint8Array.of(0x24) })) histFull++;
    for await (const _ of archive.kv.iterate({ gte: Uint8Array.of(0x20), lt: Uint8Array.of(0x24) }))
      histArchive++;
    assert.ok(histFull * 5 < histArchive, `history entries: full ${histFull}, archive ${histArchive}`);
    assert.equal(archive.n.ex.oldestStateHeight(), 0n);
    for (let h = 0n; h <= 30n; h++) assert.equal(await archive.n.ex.getBalance(addr(key(2)), h), h * ETH);
    for (let h = 28n; h <= 30n; h++) {
      assert.equal(await full.n.ex.getBalance(addr(key(2)), h), h * ETH);
      assert.equal(await full.n.ex.getNonce(addr(a), h), h);
    }
  });

  it('refuses to open a pruned store as an archive node, with an explanation', async () => {
    const dir = tempDir();
    const kv = await RocksKV.open(join(dir, 'application.db'));
    const a = key(1);
    const n = await startNode([{ address: addr(a), balance: 100n * ETH }], { keepRecent: 2 }, kv);
    for (let i = 0n; i < 5n; i++)
      await produceBlock(n, [signTx(a, { nonce: i, to: addr(key(2)), value: 1n })]);
    await n.ex.close();
    await assert.rejects(
      Executor.open(
        executorOptions(kv, new EventBus(), { mode: 'archive', location: `${dir}/application.db` }),
      ),
      (e: unknown) => {
        assert.ok(e instanceof ArchiveOnPrunedStoreError);
        assert.equal(e.code, 'ARCHIVE_ON_PRUNED_STORE');
        assert.match(
          e.message,
          /cannot run as an archive node on .*application\.db: it was run as a full node and its state before height 4 is already pruned/,
        );
        return true;
      },
    );
    await assert.rejects(Executor.assertArchiveCompatible(kv, 'x'), ArchiveOnPrunedStoreError);
    // A young full node that pruned nothing may become an archive node.
    const kv2 = new MemoryKV();
    const young = await startNode([{ address: addr(a), balance: ETH }], { keepRecent: 100 }, kv2);
    await produceBlock(young, []);
    await Executor.assertArchiveCompatible(kv2, 'y');
    await (await Executor.open(executorOptions(kv2, new EventBus(), { mode: 'archive' }))).close();
    await kv.close();
  });
});

describe('eth_getProof', () => {
  it('proves accounts and storage against the block state root, now and at an older height', async () => {
    const c = compile({ 'Lab.sol': LAB_SOL });
    const a = key(1);
    const n = await startNode([{ address: addr(a), balance: 100n * ETH }], { mode: 'archive' });
    await produceBlock(n, [signTx(a, { nonce: 0n, to: null, data: c.Lab.bytecode, gas: 3_000_000n })]);
    const lab = (await n.ex.getBlockReceipts(1n))[0].contractAddress!;
    const bump = labSelectors(c.Lab.abi).bump;
    for (let i = 1n; i <= 3n; i++)
      await produceBlock(n, [signTx(a, { nonce: i, to: lab, data: `0x${bump}`, gas: 200_000n })]);
    const slot0 = `0x${'0'.repeat(64)}` as Hex;
    for (const h of [2n, 4n]) {
      const root = Buffer.from((await n.ex.getBlockByNumber(h))!.stateRoot.slice(2), 'hex');
      const p = await n.ex.getProof(lab, [slot0, '0x05'], h);
      const leaf = await verifyMPTWithMerkleProof(
        await createMPT(),
        root,
        keccak256(Buffer.from(lab.slice(2), 'hex')),
        p.accountProof.map((x) => Buffer.from(x.slice(2), 'hex')),
      );
      const [nonce, balance, storageRoot, codeHash] = RLP.decode(leaf!) as Uint8Array[];
      assert.equal(BigInt(`0x${Buffer.from(nonce).toString('hex') || '0'}`), p.nonce);
      assert.equal(BigInt(`0x${Buffer.from(balance).toString('hex') || '0'}`), p.balance);
      assert.equal(`0x${Buffer.from(storageRoot).toString('hex')}`, p.storageHash);
      assert.equal(`0x${Buffer.from(codeHash).toString('hex')}`, p.codeHash);
      assert.equal(p.storageProof[0].value, h - 1n, 'counter after h-1 bumps');
      const v = await verifyMPTWithMerkleProof(
        await createMPT(),
        Buffer.from(p.storageHash.slice(2), 'hex'),
        keccak256(Buffer.alloc(32)),
        p.storageProof[0].proof.map((x) => Buffer.from(x.slice(2), 'hex')),
      );
      assert.equal(BigInt(`0x${Buffer.from(RLP.decode(v!) as Uint8Array).toString('hex')}`), h - 1n);
      assert.equal(p.storageProof[1].value, 0n);
      const absent = await verifyMPTWithMerkleProof(
        await createMPT(),
        Buffer.from(p.storageHash.slice(2), 'hex'),
        keccak256(Buffer.from('05'.padStart(64, '0'), 'hex')),
        p.storageProof[1].proof.map((x) => Buffer.from(x.slice(2), 'hex')),
      );
      assert.equal(absent, null);
    }
    // A proof of an account that does not exist proves its absence.
    const nobody = addr(key(77));
    const p = await n.ex.getProof(nobody, [], 4n);
    assert.equal(p.balance, 0n);
    const root = Buffer.from((await n.ex.getBlockByNumber(4n))!.stateRoot.slice(2), 'hex');
    assert.equal(
      await verifyMPTWithMerkleProof(
        await createMPT(),
        root,
        keccak256(Buffer.from(nobody.slice(2), 'hex')),
        p.accountProof.map((x) => Buffer.from(x.slice(2), 'hex')),
      ),
      null,
    );
  });
});
