// The state-store's follower on a real nats-server: the executor (RocksDB, outbox) publishes, the
// follower applies every height from the genesis record into its own RocksDB in order; a restart
// resumes from its own height; the same height twice is skipped; and a message that does not chain
// (wrong parent hash), published by something else on the subject, stops it with the reason and
// changes nothing.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { RLP } from '@ethereumjs/rlp';
import { Executor } from '@noded/execution';
import { BlockPublisher } from '@noded/service-executor/src/publisher.js';
import { StreamFollower } from '@noded/service-state-store/src/follower.js';
import { MemoryKV, RocksKV } from '@noded/storage';
import { blocksSubject, encodeCommitted, ReplicaError, ReplicaStore } from '@noded/stream';
import { EventBus, silentLogger } from '@noded/types';
import { connect } from 'nats';
import { validatorsOf } from '../consensus/helpers.js';
import {
  addr,
  ETH,
  executorOptions,
  GENESIS_TIME,
  GWEI,
  genesisState,
  key,
  signTx,
  TEST_CONSENSUS_PARAMS,
} from '../execution/helpers.js';
import { Chain, VALIDATOR_KEY } from './helpers.js';
import { startNatsServer } from './nats.js';
import { until } from './processes.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const balanceOf = (accountRlp: Uint8Array | undefined) => {
  if (!accountRlp) return undefined;
  const [, balance] = RLP.decode(accountRlp) as Uint8Array[];
  return BigInt(`0x${Buffer.from(balance!).toString('hex') || '0'}`);
};
const bytes = (hex: string) => Uint8Array.from(Buffer.from(hex.slice(2), 'hex'));

describe('state-store: following the stream into its own RocksDB', () => {
  it('applies every height from genesis in order, resumes from its own height, refuses a height that does not chain', async () => {
    const nats = await startNatsServer();
    cleanups.push(() => nats.stop());
    const dir = mkdtempSync(join(tmpdir(), 'noded-replica-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const kv = await RocksKV.open(join(dir, 'application.db'));
    cleanups.push(() => kv.close());
    const bus = new EventBus();
    const executor = await Executor.open(executorOptions(kv, bus, { outbox: { encode: encodeCommitted } }));
    cleanups.push(() => executor.close());
    const publisher = new BlockPublisher({
      executor,
      bus,
      chainId: 'chain-local',
      servers: [nats.url],
      logger: silentLogger,
      retryMs: 200,
    });
    cleanups.push(() => publisher.close());

    const sender = key(1);
    const idle = key(4);
    const to = addr(key(2));
    const chain = new Chain(executor, {
      chainId: 'chain-local',
      genesis: {
        time: GENESIS_TIME,
        initialHeight: 1,
        validators: validatorsOf([VALIDATOR_KEY]),
        consensusParams: TEST_CONSENSUS_PARAMS,
        appState: genesisState([
          { address: addr(sender), balance: 10n * ETH },
          { address: addr(idle), balance: 5n * ETH },
        ]),
      },
    });
    cleanups.push(() => chain.remove());
    await chain.runTo(1);
    const checked = await executor.checkTx(
      signTx(sender, { nonce: 0n, to, value: 3n * ETH, maxFee: 20n * GWEI, tip: 7n * GWEI }),
      'new',
    );
    assert.equal(checked.code, 0, checked.log);
    await chain.runTo(Number(executor.latestHeight()) + 2);

    const replicaKv = await RocksKV.open(join(dir, 'state-store.db'));
    cleanups.push(() => replicaKv.close());
    let replica = await ReplicaStore.open(replicaKv, 'chain-local');
    assert.equal(replica.height, -1);
    const fatal: Error[] = [];
    let follower = new StreamFollower({
      replica,
      servers: [nats.url],
      logger: silentLogger,
      onFatal: (e) => fatal.push(e),
      retryMs: 200,
    });
    cleanups.push(() => follower.close());
    follower.start();
    const top = Number(executor.latestHeight());
    await Promise.race([
      follower.waitForHeight(top),
      new Promise((_, rej) =>
        setTimeout(() => rej(new Error('replica did not reach the executor height')), 30_000),
      ),
    ]);

    // the replica's state equals the executor's: the transfer's two accounts and an untouched genesis one
    const at = executor.latestHeight();
    assert.equal(balanceOf(await replica.account(bytes(to))), await executor.getBalance(to, at));
    assert.equal(balanceOf(await replica.account(bytes(to))), 3n * ETH);
    assert.equal(
      balanceOf(await replica.account(bytes(addr(sender)))),
      await executor.getBalance(addr(sender), at),
    );
    assert.equal(
      balanceOf(await replica.account(bytes(addr(idle)))),
      5n * ETH,
      'genesis accounts come from the genesis record',
    );
    const loc = await replica.txLocation(checked.hash);
    assert.ok(loc, 'the transfer is indexed');
    assert.equal((await replica.record(loc.height))?.receipts[loc.index]?.status, 1);
    for (let h = 1; h <= top; h++) {
      const r = await replica.record(h);
      assert.deepEqual(r?.parentHash, (await replica.record(h - 1))?.blockHash, `height ${h} chains`);
    }
    // the same height again is skipped
    assert.equal(await replica.apply((await replica.record(top))!), false);

    // restart: resumes from its own height
    await follower.close();
    await chain.runTo(top + 3);
    const top2 = Number(executor.latestHeight());
    replica = await ReplicaStore.open(replicaKv, 'chain-local');
    assert.equal(replica.height, top, 'the replica kept its height across the restart');
    follower = new StreamFollower({
      replica,
      servers: [nats.url],
      logger: silentLogger,
      onFatal: (e) => fatal.push(e),
      retryMs: 200,
    });
    follower.start();
    await Promise.race([
      follower.waitForHeight(top2),
      new Promise((_, rej) => setTimeout(() => rej(new Error('replica did not resume')), 30_000)),
    ]);
    assert.equal(replica.height, top2);
    await until('the publisher caught up', 20_000, async () =>
      publisher.publishedHeight >= top2 ? true : undefined,
    );

    // The replica's database is the executor's application.db key for key (the outbox, 0x50, and
    // the replica's own records, 0x60, and meta names aside), since it applies the executor's writes.
    const dump = async (db: RocksKV) => {
      const out = new Map<string, string>();
      for await (const [k, v] of db.iterate({})) {
        const name = Buffer.from(k).toString('hex');
        if (k[0] === 0x50 || k[0] === 0x60) continue;
        if (k[0] === 0x01 && Buffer.from(k.subarray(1)).toString().startsWith('replica')) continue;
        out.set(name, Buffer.from(v).toString('hex'));
      }
      return out;
    };
    const mine = await dump(kv);
    const theirs = await dump(replicaKv);
    assert.ok(mine.size > 50, `application.db has ${mine.size} keys`);
    assert.deepEqual(theirs, mine, "the replica's keys are application.db's");

    // An Executor opened on the replica answers reads as the executor does, at every height.
    const view = await Executor.open(executorOptions(replicaKv, new EventBus()));
    cleanups.push(() => view.close());
    await view.reloadCommitted();
    assert.equal(view.latestHeight(), executor.latestHeight());
    assert.equal(view.nextBaseFee(), executor.nextBaseFee());
    assert.equal(view.suggestedTip(), executor.suggestedTip(), 'the recent tips are looked back for');
    assert.equal(view.suggestedTip(), 7n * GWEI, "the transfer's tip");
    assert.equal(view.oldestStateHeight(), executor.oldestStateHeight());
    for (let h = 0n; h <= BigInt(top2); h++) {
      assert.deepEqual(await view.getBlockByNumber(h), await executor.getBlockByNumber(h), `block ${h}`);
      assert.equal(await view.getBalance(addr(sender), h), await executor.getBalance(addr(sender), h));
    }
    const txHash = `0x${Buffer.from(checked.hash).toString('hex')}` as const;
    assert.deepEqual(await view.getReceipt(txHash), await executor.getReceipt(txHash));
    assert.deepEqual(
      await view.getProof(to, [], BigInt(top2)),
      await executor.getProof(to, [], BigInt(top2)),
    );
    const transferCall = { from: addr(sender), to, value: 1n };
    assert.equal(
      await view.estimateGas(transferCall, BigInt(top2), undefined, { gasCap: 0n, timeoutMs: 5_000 }),
      await executor.estimateGas(transferCall, BigInt(top2), undefined, { gasCap: 0n, timeoutMs: 5_000 }),
    );

    // A height that names another parent, published by something else, stops it; nothing changes.
    const forged = {
      ...(await replica.record(top2))!,
      height: top2 + 1,
      parentHash: new Uint8Array(32).fill(7),
      blockHash: new Uint8Array(32).fill(8),
    };
    const nc = await connect({ servers: nats.url });
    await nc
      .jetstream()
      .publish(blocksSubject('chain-local'), encodeCommitted(forged), { msgID: `forged-${top2 + 1}` });
    await nc.close();
    await until('the follower stops on the forged height', 20_000, async () =>
      fatal.length > 0 ? true : undefined,
    );
    assert.match(
      fatal[0]!.message,
      new RegExp(`height ${top2 + 1} names parent 0x(07){32}, but the block applied at ${top2} is 0x`),
    );
    assert.equal(replica.height, top2, 'nothing of the forged height is applied');
    assert.equal(await replica.record(top2 + 1), undefined);
    await assert.rejects(
      replica.apply(forged),
      (err: unknown) => err instanceof ReplicaError && err.code === 'PARENT_MISMATCH',
    );
    // A height without the executor's write batch (an older executor) is refused, naming why.
    const bare = {
      ...(await replica.record(top2))!,
      height: top2 + 1,
      parentHash: replica.blockHash!,
      kvOps: [],
    };
    await assert.rejects(replica.apply(bare), (err: unknown) => {
      assert.ok(err instanceof ReplicaError && err.code === 'NO_KV_OPS');
      assert.match(err.message, new RegExp(`height ${top2 + 1} carries no kv_ops`));
      return true;
    });
    // ...and one whose batch writes the replica's own keys.
    const sneaky = {
      ...bare,
      kvOps: [{ key: Uint8Array.of(0x60, 0, 0, 0, 0, 0, 0, 0, 1), value: Uint8Array.of(1) }],
    };
    await assert.rejects(
      replica.apply(sneaky),
      (err: unknown) => err instanceof ReplicaError && err.code === 'BAD_KV_OPS',
    );
    assert.equal(replica.height, top2);
    await follower.close();
  });

  it('refuses a store written in the older flat layout, naming what to do', async () => {
    const kv = new MemoryKV();
    await kv.write([
      { type: 'put', key: Uint8Array.from([0x01, ...Buffer.from('blockHash')]), value: new Uint8Array(32) },
      { type: 'put', key: Uint8Array.from([0x01, ...Buffer.from('height')]), value: Buffer.from('7') },
    ]);
    await assert.rejects(ReplicaStore.open(kv, 'chain-local'), (err: unknown) => {
      assert.ok(err instanceof ReplicaError && err.code === 'OLD_LAYOUT');
      assert.match(
        err.message,
        /older layout \(flat state\); delete it and the replica rebuilds it from the stream/,
      );
      return true;
    });
  });
});
