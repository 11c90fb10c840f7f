// The kv tx/block indexer over a real RocksDB (data/tx_index.db): indexing from the bus, search,
// persistence across restart and catch-up, in this thread and on the node's indexer thread; and
// tx_index.indexer = "null".
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { keccak256, sha256 } from '@noded/crypto';
import { IndexerQueryError, TxIndexer } from '@noded/rpc/src/comet/index.js';
import { IndexerThread } from '@noded/service-consensus/src/indexer-thread/thread.js';
import { INDEXER_NICE, MemoryKV, RocksKV } from '@noded/storage';
import { silentLogger } from '@noded/types';
import { processThreads } from '../threads.js';
import { FakeChain } from './fake-node.js';

const heightsOf = (txs: Array<{ height: number; index: number }>) => txs.map((t) => `${t.height}/${t.index}`);

describe('TxIndexer', () => {
  it('indexes blocks published on the bus and survives a restart (RocksDB)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-txindex-'));
    try {
      const chain = await FakeChain.create({ txsPerBlock: [] });
      let kv = await RocksKV.open(join(dir, 'tx_index.db'));
      let indexer = new TxIndexer({ kv, bus: chain.bus, logger: silentLogger });
      const a = await chain.signTransfer(0, 1500n);
      const b = await chain.signTransfer(0, 20n);
      chain.commitBlock([]);
      chain.commitBlock([a, b]);
      await indexer.idle();
      assert.equal(await indexer.indexedHeight(), 2);
      const got = await indexer.get(sha256(b));
      assert.equal(got?.height, 2);
      assert.equal(got?.index, 1);
      assert.deepEqual(got?.tx, b);
      assert.equal(got?.result.gasUsed, 21000n);
      assert.equal((await indexer.get(keccak256(a)))?.index, 0, 'found by its Ethereum hash too');
      assert.equal(await indexer.get(new Uint8Array(32)), undefined);
      await indexer.close();
      await kv.close();

      // A block committed while the indexer was down is picked up by catchUp.
      const c = await chain.signTransfer(1, 3000n);
      chain.commitBlock([c]);
      kv = await RocksKV.open(join(dir, 'tx_index.db'));
      indexer = new TxIndexer({ kv, bus: chain.bus, logger: silentLogger });
      assert.equal(await indexer.indexedHeight(), 2);
      assert.equal(await indexer.catchUp(chain), 1);
      assert.equal(await indexer.indexedHeight(), 3);
      assert.deepEqual(heightsOf(await indexer.search('transfer.amount >= 1000')), ['2/0', '3/0']);
      assert.deepEqual(
        heightsOf(await indexer.search(`transfer.sender = '${chain.wallets[1].address.toLowerCase()}'`)),
        ['3/0'],
      );
      assert.deepEqual(await indexer.searchBlocks('block.height >= 2'), [2, 3]);
      await indexer.close();
      await kv.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('tx.hash answers directly; tx.height ranges; conditions intersect', async () => {
    const chain = await FakeChain.create({ txsPerBlock: [2, 0, 3, 1] });
    const indexer = new TxIndexer({ kv: new MemoryKV(), bus: chain.bus, logger: silentLogger });
    await indexer.catchUp(chain);
    const raw = chain.blocks.get(3)!.block.data.txs[2];
    const hex = Buffer.from(sha256(raw)).toString('hex').toUpperCase();
    assert.deepEqual(heightsOf(await indexer.search(`tx.hash='${hex}'`)), ['3/2']);
    assert.deepEqual(heightsOf(await indexer.search(`tx.hash='0x${hex.toLowerCase()}' AND tx.height=1`)), [
      '3/2',
    ]);
    await assert.rejects(indexer.search("tx.hash='zz'"), IndexerQueryError);
    assert.deepEqual(heightsOf(await indexer.search('tx.height=3')), ['3/0', '3/1', '3/2']);
    assert.deepEqual(heightsOf(await indexer.search('tx.height>1 AND tx.height<=3')), ['3/0', '3/1', '3/2']);
    assert.deepEqual(heightsOf(await indexer.search('tx.height<2')), ['1/0', '1/1']);
    assert.deepEqual(heightsOf(await indexer.search('tx.height>=4')), ['4/0']);
    assert.deepEqual(heightsOf(await indexer.search('tx.height<0.5')), []);
    assert.deepEqual(heightsOf(await indexer.search('ethereum_tx.txIndex=2')), ['3/2']);
    assert.deepEqual(heightsOf(await indexer.search('ethereum_tx.txIndex=0 AND tx.height>=3')), [
      '3/0',
      '4/0',
    ]);
    assert.deepEqual(heightsOf(await indexer.search("transfer.amount CONTAINS '1002'")), ['3/2']);
    assert.deepEqual(heightsOf(await indexer.search('transfer.recipient EXISTS AND tx.height=4')), ['4/0']);
    assert.deepEqual(
      heightsOf(await indexer.search("tm.event='Tx'")),
      [],
      'tm.event is not indexed (as CometBFT)',
    );
    assert.deepEqual(await indexer.searchBlocks('block_reward.amount >= 30'), [3, 4]);
    assert.deepEqual(await indexer.searchBlocks('block.height = 2 AND block_reward.amount EXISTS'), [2]);
    await indexer.close();
  });

  it('a failed re-execution never hides an earlier successful one', async () => {
    const chain = await FakeChain.create({ txsPerBlock: [] });
    const indexer = new TxIndexer({ kv: new MemoryKV(), bus: chain.bus, logger: silentLogger });
    const tx = await chain.signTransfer(0, 5n);
    const ok = chain.commitBlock([tx]);
    const failed = chain.commitBlock([], { publish: false });
    await indexer.index(
      { ...failed.block, data: { txs: [tx] } },
      { ...failed.result, txResults: [{ ...FakeChain.txResult(tx, 0), code: 5, log: 'nonce too low' }] },
    );
    await indexer.idle();
    const got = await indexer.get(sha256(tx));
    assert.equal(got?.height, ok.block.header.height);
    assert.equal(got?.result.code, 0);
    await indexer.close();
  });

  it("on its own thread at nice 10, which lowers nothing else but RocksDB's compaction threads", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-txindex-nice-'));
    const before = new Set(processThreads().map((t) => t.tid));
    const thread = await IndexerThread.open({
      path: join(dir, 'tx_index.db'),
      onFatal: (err) => assert.fail(err),
    });
    try {
      const all = processThreads();
      const lowered = all.filter((t) => t.nice !== 0 && t.comm !== 'rocksdb:low');
      assert.equal(lowered.length, 1, JSON.stringify(all));
      assert.equal(lowered[0]!.nice, INDEXER_NICE);
      assert.ok(!before.has(lowered[0]!.tid), 'the lowered thread is the one just started');
      assert.equal(getPriority(process.pid), 0);
    } finally {
      await thread.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('on its own thread: the same answers, errors carried back, persisted across a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-txindex-thread-'));
    const path = join(dir, 'tx_index.db');
    const fatal: Error[] = [];
    const onFatal = (err: Error) => fatal.push(err);
    let indexer: TxIndexer | undefined;
    try {
      const chain = await FakeChain.create({ txsPerBlock: [2, 0, 3] });
      const thread = await IndexerThread.open({ path, onFatal });
      indexer = new TxIndexer({ backend: thread, bus: chain.bus, logger: silentLogger });
      assert.equal(await indexer.catchUp(chain), 3);
      // The node's quiet moment flushes tx_index.db in its own thread (native-reclaim.ts).
      const held = (await thread.memoryUsage()).memtables;
      assert.equal(await thread.flushMemtables(held + 1), false, 'under minBytes: not flushed');
      assert.equal(await thread.flushMemtables(1), true);
      let left = held;
      for (let i = 0; i < 100 && left >= held; i++) {
        await new Promise((r) => setTimeout(r, 20));
        left = (await thread.memoryUsage()).memtables;
      }
      assert.ok(left < held, `memtables ${held} -> ${left} bytes`);
      assert.deepEqual(
        await indexer.searchBlocks('block.height >= 1'),
        [1, 2, 3],
        'the same answers after the flush',
      );
      // ...and empties its block cache there, which those reads filled from the new table file.
      const cached = (await thread.memoryUsage()).blockCache;
      assert.ok(cached > 0, 'the reads went through the block cache');
      assert.equal(await thread.evictBlockCache(cached + 1), 0, 'under minBytes: left alone');
      const freed = await thread.evictBlockCache(1);
      assert.ok(freed > 0 && freed <= cached, `evicted ${freed} of ${cached} bytes`);
      assert.ok((await thread.memoryUsage()).blockCache < cached);
      assert.deepEqual(await indexer.searchBlocks('block.height >= 1'), [1, 2, 3], 'and after the eviction');
      const tx = await chain.signTransfer(1, 987654n);
      chain.commitBlock([tx]);
      await indexer.idle();
      assert.equal(await indexer.indexedHeight(), 4);
      const got = await indexer.get(sha256(tx));
      assert.equal(got?.height, 4);
      assert.deepEqual(got?.tx, tx, 'bytes survive the trip');
      assert.equal(got?.result.gasUsed, 21000n, 'bigints survive the trip');
      assert.equal((await indexer.get(keccak256(tx)))?.height, 4, 'found by its Ethereum hash too');
      assert.equal(await indexer.get(new Uint8Array(32)), undefined);
      assert.deepEqual(heightsOf(await indexer.search('tx.height>1 AND tx.height<=3')), [
        '3/0',
        '3/1',
        '3/2',
      ]);
      assert.deepEqual(heightsOf(await indexer.search("transfer.amount CONTAINS '987654'")), ['4/0']);
      assert.deepEqual(await indexer.searchBlocks('block.height >= 3'), [3, 4]);
      await assert.rejects(indexer.search("tx.hash='zz'"), (err: Error) => {
        assert.ok(err instanceof IndexerQueryError, `an IndexerQueryError, got ${err.name}`);
        assert.match(err.message, /invalid hex string "zz"/);
        return true;
      });
      await indexer.close();

      // While another handle holds the database the thread cannot start, and says which file.
      const holder = await RocksKV.open(path);
      await assert.rejects(IndexerThread.open({ path, onFatal }), (err: Error) => {
        assert.match(err.message, /tx_index\.db .*could not start/);
        return true;
      });
      await holder.close();

      const later = await chain.signTransfer(0, 7n);
      chain.commitBlock([later]);
      indexer = new TxIndexer({
        backend: await IndexerThread.open({ path, onFatal }),
        bus: chain.bus,
        logger: silentLogger,
      });
      assert.equal(await indexer.indexedHeight(), 4, 'kept across the restart');
      assert.equal(await indexer.catchUp(chain), 1);
      assert.equal((await indexer.get(sha256(later)))?.height, 5);
      await indexer.close();
      await indexer.close(); // a second close is harmless
      assert.deepEqual(fatal, [], 'a requested stop is not a failure');
    } finally {
      await indexer?.close(); // stops the thread when an assertion failed first
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('ethereum_tx.txHash and ethereumTxHash: not written as attribute keys, answered from T/A (RocksDB)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-txindex-hashes-'));
    const TM = 'ethereum_tx.txHash';
    const ETH = 'ethereum_tx.ethereumTxHash';
    try {
      const chain = await FakeChain.create({ txsPerBlock: [2, 0, 3, 1] });
      const kv = await RocksKV.open(join(dir, 'tx_index.db'));
      const indexer = new TxIndexer({ kv, bus: chain.bus, logger: silentLogger });
      assert.equal(await indexer.catchUp(chain), 4);
      // Every transaction with its position and the two values its events carry.
      const all: Array<{ pos: string; tm: string; eth: string; h: number; i: number }> = [];
      for (let h = 1; h <= 4; h++)
        chain.blocks.get(h)!.block.data.txs.forEach((raw, i) => {
          all.push({
            pos: `${h}/${i}`,
            tm: Buffer.from(sha256(raw)).toString('hex').toUpperCase(),
            eth: `0x${Buffer.from(keccak256(raw)).toString('hex')}`,
            h,
            i,
          });
        });
      assert.equal(all.length, 6);

      const attributeKeys = async (tag: string) => {
        const prefix = Buffer.from(`E${tag}\0`);
        const end = Buffer.from(prefix);
        end[end.length - 1] = 1;
        let n = 0;
        for await (const _ of kv.iterate({ gte: prefix, lt: end })) n++;
        return n;
      };
      assert.equal(await attributeKeys(TM), 0, `no ${TM} keys are written`);
      assert.equal(await attributeKeys(ETH), 0, `no ${ETH} keys are written`);
      assert.equal(await attributeKeys('ethereum_tx.txIndex'), 6, 'the other attributes are');

      const t = all[3]; // 3/1
      const check = async (label: string) => {
        const got = await indexer.search(`${TM}='${t.tm}'`);
        assert.deepEqual(heightsOf(got), [t.pos], `${label}: ${TM} =`);
        const attrs = got[0].result.events[0].attributes;
        assert.deepEqual(
          attrs.filter((a) => a.key === 'txHash' || a.key === 'ethereumTxHash').map((a) => a.value),
          [t.eth, t.tm],
          `${label}: the events shown are unchanged`,
        );
        assert.deepEqual(heightsOf(await indexer.search(`${ETH}='${t.eth}'`)), [t.pos], `${label}: ${ETH} =`);
        assert.deepEqual(
          heightsOf(await indexer.search(`${TM}='${t.tm.toLowerCase()}'`)),
          [],
          'exact strings',
        );
        assert.deepEqual(heightsOf(await indexer.search(`${ETH}='${t.eth.slice(2)}'`)), [], 'exact strings');
        assert.deepEqual(heightsOf(await indexer.search(`${TM}='${'AB'.repeat(32)}'`)), []);
        assert.deepEqual(heightsOf(await indexer.search(`${ETH}='0x${'ab'.repeat(32)}'`)), []);
        const every = all.map((x) => x.pos);
        assert.deepEqual(heightsOf(await indexer.search(`${TM} EXISTS`)), every, `${label}: EXISTS`);
        assert.deepEqual(heightsOf(await indexer.search(`${ETH} EXISTS`)), every, `${label}: EXISTS`);
        const part = t.tm.slice(10, 18);
        assert.deepEqual(
          heightsOf(await indexer.search(`${TM} CONTAINS '${part}'`)),
          all.filter((x) => x.tm.includes(part)).map((x) => x.pos),
          `${label}: CONTAINS`,
        );
        const epart = t.eth.slice(20, 28);
        assert.deepEqual(
          heightsOf(await indexer.search(`${ETH} CONTAINS '${epart}'`)),
          all.filter((x) => x.eth.includes(epart)).map((x) => x.pos),
          `${label}: CONTAINS`,
        );
        assert.deepEqual(heightsOf(await indexer.search(`${TM} EXISTS AND tx.height>=3`)), [
          '3/0',
          '3/1',
          '3/2',
          '4/0',
        ]);
        assert.deepEqual(heightsOf(await indexer.search(`${ETH} EXISTS AND ethereum_tx.txIndex=0`)), [
          '1/0',
          '3/0',
          '4/0',
        ]);
        assert.deepEqual(heightsOf(await indexer.search(`${ETH}='${t.eth}' AND tx.height=3`)), [t.pos]);
        assert.deepEqual(heightsOf(await indexer.search(`${ETH}='${t.eth}' AND tx.height=4`)), []);
        assert.deepEqual(heightsOf(await indexer.search(`${TM}='${t.tm}' AND ${ETH}='${t.eth}'`)), [t.pos]);
        assert.deepEqual(heightsOf(await indexer.search(`${TM}='${t.tm}' AND ${ETH}='${all[0].eth}'`)), []);
        assert.deepEqual(heightsOf(await indexer.search(`${TM}='${t.tm}' AND ethereum_tx.txIndex=0`)), []);
      };
      await check('new database');

      // A database written before the change holds the attribute keys too: the same answers, none twice.
      const u32 = (n: number) => Buffer.from([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]);
      const old = all.flatMap((x) => {
        const pos = Buffer.concat([u32(0), u32(x.h), u32(x.i)]);
        const hash = Buffer.from(x.tm, 'hex');
        return [
          { type: 'put' as const, key: Buffer.concat([Buffer.from(`E${TM}\0${x.tm}\0`), pos]), value: hash },
          {
            type: 'put' as const,
            key: Buffer.concat([Buffer.from(`E${ETH}\0${x.eth}\0`), pos]),
            value: hash,
          },
        ];
      });
      await kv.write(old);
      assert.equal(await attributeKeys(TM), 6);
      await check('database written before');
      await indexer.close();
      await kv.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('tx_index.indexer = "null": nothing is indexed and the queries say so (as CometBFT)', async () => {
    const chain = await FakeChain.create({ txsPerBlock: [1, 2] });
    const indexer = new TxIndexer({ disabled: true, bus: chain.bus, logger: silentLogger });
    assert.equal(indexer.enabled, false);
    assert.equal(await indexer.catchUp(chain), 0);
    chain.commitBlock([await chain.signTransfer(0, 1n)]);
    await indexer.idle();
    assert.equal(await indexer.indexedHeight(), 0);
    const raw = chain.blocks.get(2)!.block.data.txs[0];
    await assert.rejects(indexer.get(sha256(raw)), /^Error: transaction indexing is disabled$/);
    await assert.rejects(indexer.search('tx.height=2'), /^Error: transaction indexing is disabled$/);
    await assert.rejects(indexer.searchBlocks('block.height=2'), /^Error: block indexing is disabled$/);
    await indexer.close();
  });
});

describe('TxIndexer.rollbackTo (the dev chain evm_revert)', () => {
  async function dump(path: string): Promise<Map<string, string>> {
    const kv = await RocksKV.open(path);
    const out = new Map<string, string>();
    for await (const [k, v] of kv.iterate({}))
      out.set(Buffer.from(k).toString('hex'), Buffer.from(v).toString('hex'));
    await kv.close();
    return out;
  }

  it('on the indexer thread: tx_index.db holds exactly what it held at the height', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-txindex-rollback-'));
    const path = join(dir, 'tx_index.db');
    const open = async (bus: FakeChain['bus']) =>
      new TxIndexer({
        backend: await IndexerThread.open({ path, onFatal: (err) => assert.fail(err) }),
        bus,
        logger: silentLogger,
      });
    try {
      const chain = await FakeChain.create({ txsPerBlock: [] });
      let indexer = await open(chain.bus);
      const a = await chain.signTransfer(0, 1500n);
      chain.commitBlock([a]);
      await indexer.idle();
      await indexer.close();
      const at1 = await dump(path);
      indexer = await open(chain.bus);
      const b = await chain.signTransfer(0, 20n);
      const c = await chain.signTransfer(1, 30n);
      chain.commitBlock([b, c]);
      chain.commitBlock([await chain.signTransfer(0, 40n)]);
      await indexer.idle();
      assert.deepEqual(heightsOf(await indexer.search('transfer.amount >= 1')), ['1/0', '2/0', '2/1', '3/0']);
      await indexer.rollbackTo(1);
      assert.equal(await indexer.indexedHeight(), 1);
      assert.equal(await indexer.get(sha256(b)), undefined);
      assert.equal(await indexer.get(keccak256(c)), undefined, 'the Ethereum-hash alias too');
      assert.deepEqual(heightsOf(await indexer.search('transfer.amount >= 1')), ['1/0']);
      assert.deepEqual(await indexer.searchBlocks('block.height >= 1'), [1]);
      await indexer.rollbackTo(1); // idempotent
      await indexer.close();
      assert.deepEqual(await dump(path), at1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
