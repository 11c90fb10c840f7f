// The executor's rollback for the dev chain's evm_revert (Executor.rollbackPoint / rollbackTo) on a
// real RocksDB: after blocks with transfers, a deployment, storage writes and logs are undone,
// application.db holds exactly the key/value pairs it held at the point (code stays: it is stored
// by hash), the same transactions re-executed give the same app hashes, a second rollback to the
// same point changes nothing, and bad targets are refused without a change.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { AppRollbackPoint } from '@noded/execution';
import { type KVStore, RocksKV } from '@noded/storage';
import type { Hex } from '@noded/types';
import { Interface } from 'ethers';
import { compile, TOKEN_SOURCE } from '../e2e/contracts.js';
import { addr, ETH, GWEI, key, produceBlock, signTx, startNode, type TestNode } from './helpers.js';

const CODE_PREFIX = 0x12;

async function dump(kv: KVStore): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for await (const [k, v] of kv.iterate({}))
    out.set(Buffer.from(k).toString('hex'), Buffer.from(v).toString('hex'));
  return out;
}

describe('executor rollback (dev chain evm_revert)', () => {
  const dirs: string[] = [];
  const open: RocksKV[] = [];
  after(async () => {
    for (const kv of open) await kv.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  async function node(mode: 'full' | 'archive', devControls = true): Promise<TestNode> {
    const dir = mkdtempSync(join(tmpdir(), 'noded-rollback-'));
    dirs.push(dir);
    const kv = await RocksKV.open(dir);
    open.push(kv);
    const k = key(1);
    return startNode([{ address: addr(k), balance: 100n * ETH }], { mode, devControls }, kv);
  }

  const token = compile(TOKEN_SOURCE).TestToken!;
  const iface = new Interface(token.abi as never);
  const k = key(1);
  const to = addr(key(2));
  const transfer = (nonce: bigint, value: bigint) =>
    signTx(k, { nonce, to, value, gas: 21000n, maxFee: 10n * GWEI, tip: GWEI });
  const deploy = (nonce: bigint) =>
    signTx(k, {
      nonce,
      to: null,
      data: `${token.bytecode}${iface.encodeDeploy(['T', 'T', 1000n]).slice(2)}` as Hex,
      gas: 3_000_000n,
      maxFee: 10n * GWEI,
      tip: GWEI,
    });

  for (const mode of ['archive', 'full'] as const) {
    it(`${mode}: undoes transfers, a deployment, storage and logs to the byte`, async () => {
      const n = await node(mode);
      await produceBlock(n, [transfer(0n, ETH)]);
      await produceBlock(n, [transfer(1n, 2n * ETH)]);
      const point: AppRollbackPoint = await n.ex.rollbackPoint();
      assert.equal(point.height, 2);
      const at = await dump(n.kv);
      const info = await n.ex.info();
      const heightBefore = n.height;
      const timeBefore = n.time;

      const later: Array<Uint8Array[]> = [[deploy(2n)], [transfer(3n, 5n)], [transfer(4n, 6n)]];
      const hashesLater: Uint8Array[] = [];
      for (const txs of later) hashesLater.push((await produceBlock(n, txs)).appHash);
      const deployHash = (await n.ex.getBlockByNumber(3n))!.transactions[0]!;
      const receipt = await n.ex.getReceipt(deployHash);
      assert.ok(receipt?.contractAddress, 'the deployment is there before the rollback');
      assert.equal((await n.ex.getLogs({ fromBlock: 3n, toBlock: 5n })).length, 1);

      await n.ex.rollbackTo(point);
      const back = await dump(n.kv);
      for (const [key, value] of at) assert.equal(back.get(key), value, `key ${key} back`);
      for (const key of back.keys())
        assert.ok(at.has(key) || key.startsWith(CODE_PREFIX.toString(16)), `key ${key} of a removed block`);
      assert.deepEqual(await n.ex.info(), info);
      assert.equal(n.ex.latestHeight(), 2n);
      assert.equal(await n.ex.getBlockByNumber(3n), undefined);
      assert.equal(await n.ex.getReceipt(receipt.transactionHash), undefined);
      assert.equal(await n.ex.getTransaction(receipt.transactionHash), undefined);
      assert.equal(await n.ex.getCode(receipt.contractAddress, 2n), '0x');
      assert.equal(await n.ex.getNonce(addr(k), 2n), 2n);
      assert.deepEqual(await n.ex.getLogs({ fromBlock: 0n, toBlock: 2n }), []);

      // The same point again: nothing changes.
      await n.ex.rollbackTo(point);
      assert.deepEqual(await dump(n.kv), back);

      // The same blocks again give the same app hashes: the state is the one they were built on.
      n.height = heightBefore;
      n.time = timeBefore;
      for (let i = 0; i < later.length; i++)
        assert.deepEqual((await produceBlock(n, later[i])).appHash, hashesLater[i], `block ${3 + i}`);
    });
  }

  it('refuses a target above the chain and a node without dev controls, changing nothing', async () => {
    const n = await node('archive');
    await produceBlock(n, [transfer(0n, ETH)]);
    const point = await n.ex.rollbackPoint();
    const before = await dump(n.kv);
    await assert.rejects(
      n.ex.rollbackTo({ ...point, height: 7 }),
      /rollback target 7 is not a committed height \(latest 1\)/,
    );
    assert.deepEqual(await dump(n.kv), before);
    const plain = await node('archive', false);
    await assert.rejects(plain.ex.rollbackPoint(), /needs the dev controls/);
    await assert.rejects(plain.ex.rollbackTo(point), /rollback needs the dev controls/);
  });
});
