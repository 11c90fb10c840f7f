// app_state.rewards.upgrade_height through the executor on RocksDB: the fee split replaces "fees to
// the proposer" at exactly that height. A node that ran the first blocks without the setting (an
// existing chain's node before its operator added it) and was restarted with it agrees with a node
// that had it from the start, app hash for app hash; a node without it diverges at that height.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Executor, type ExecutorOptions } from '@noded/execution';
import { type KVStore, MemoryKV, RocksKV } from '@noded/storage';
import { EventBus, type FinalizeBlockResponse, type Hex } from '@noded/types';
import { addr, ETH, executorOptions, key, PROPOSER, produceBlock, signTx, type TestNode } from './helpers.js';
import { POOL, poolAbi, REWARD, stakeAbi, startStakingNet, view, viewOne } from './staking-net.js';

const UPGRADE = 5;
const ops = [key(1), key(2)];
const payer = key(7);
const proposer = `0x${Buffer.from(PROPOSER).toString('hex')}` as Hex;
const upgrade = { height: UPGRADE, validatorShare: 5n * 10n ** 17n, blockReward: 0n };

/** One fee-paying transfer per height, the same bytes for every node. */
const txs = Array.from({ length: 7 }, (_, i) =>
  signTx(payer, { nonce: BigInt(i), to: addr(key(9)), value: 1n, gas: 21_000n, tip: 2_000_000_000n }),
);

async function open(kv: KVStore, over: Partial<ExecutorOptions>): Promise<Executor> {
  return Executor.open(executorOptions(kv, new EventBus(), over));
}

/** A node of two genesis validators whose app_state.rewards names the upgrade height. */
function start(kv: KVStore, over: Partial<ExecutorOptions> = {}): Promise<TestNode> {
  return startStakingNet({
    operators: ops,
    accounts: [...ops, payer],
    balance: 1000n * ETH,
    appState: { rewards: { upgrade_height: String(UPGRADE), params: { validator_share: '0.5' } } },
    kv,
    executor: over,
  });
}

async function run(n: TestNode, to: number): Promise<FinalizeBlockResponse[]> {
  const out: FinalizeBlockResponse[] = [];
  while (n.height < to) {
    const res = await produceBlock(n, [txs[n.height]!]);
    assert.equal(res.txResults[0]!.code, 0, res.txResults[0]!.log);
    out.push(res);
  }
  return out;
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('rewards: app_state.rewards.upgrade_height', () => {
  it('pays the proposer before the height and splits from it; a node that learns the setting at a restart agrees', async () => {
    const dirA = mkdtempSync(join(tmpdir(), 'noded-upgrade-a-'));
    const dirB = mkdtempSync(join(tmpdir(), 'noded-upgrade-b-'));
    const kvA = await RocksKV.open(dirA);
    let kvB = await RocksKV.open(dirB);
    const a = await start(kvA, { rewardsUpgrade: upgrade });
    let b = await start(kvB);
    const c = await start(new MemoryKV());
    try {
      const hashesA: string[] = [];
      const hashesB: string[] = [];
      // Heights 1..3: B runs without the setting (like an existing chain's node).
      for (const r of await run(a, 3)) hashesA.push(hex(r.appHash));
      for (const r of await run(b, 3)) hashesB.push(hex(r.appHash));
      await b.ex.close();
      await kvB.close();
      kvB = await RocksKV.open(dirB);
      const eb = await open(kvB, { rewardsUpgrade: upgrade });
      b = { ...b, ex: eb };
      let prevProposer = await a.ex.getBalance(proposer, BigInt(a.height));
      for (let h = 4; h <= 6; h++) {
        const ra = (await run(a, h))[0]!;
        const rb = (await run(b, h))[0]!;
        hashesA.push(hex(ra.appHash));
        hashesB.push(hex(rb.appHash));
        const [rc] = await a.ex.getBlockReceipts(BigInt(h));
        const fees = BigInt(rc!.gasUsed) * BigInt(rc!.effectiveGasPrice);
        const proposerNow = await a.ex.getBalance(proposer, BigInt(h));
        const code = await a.ex.getCode(REWARD, BigInt(h));
        if (h < UPGRADE) {
          assert.equal(proposerNow - prevProposer, fees, `height ${h}: the proposer keeps the fees`);
          assert.equal(code, '0x', `height ${h}: no reward account yet`);
          assert.equal(ra.events.filter((e) => e.type === 'rewards').length, 0);
        } else {
          assert.equal(proposerNow, prevProposer, `height ${h}: the proposer keeps nothing`);
          assert.equal(code, '0x60006000fd', 'the reward account exists, with the marker code');
          const ev = ra.events.find((e) => e.type === 'rewards')!;
          assert.equal(ev.attributes.find((x) => x.key === 'fees')!.value, fees.toString());
        }
        prevProposer = proposerNow;
      }
      assert.deepEqual(hashesB, hashesA, 'the node restarted with the setting agrees at every height');
      assert.deepEqual((await view(a, REWARD, stakeAbi, 'params', [], 6)).toArray(), [5n * 10n ** 17n, 0n]);
      assert.ok(
        (await viewOne(a, POOL, poolAbi, 'pendingRewards', [addr(ops[0]!), addr(ops[0]!)], 6)) > 0n,
        'the validators earn from the upgrade height on',
      );

      // A node without the setting agrees up to the height before and diverges at it.
      const hashesC = (await run(c, 6)).map((x) => hex(x.appHash));
      assert.deepEqual(hashesC.slice(0, UPGRADE - 1), hashesA.slice(0, UPGRADE - 1));
      assert.notEqual(hashesC[UPGRADE - 1], hashesA[UPGRADE - 1]);
    } finally {
      await a.ex.close();
      await b.ex.close();
      await c.ex.close();
      await kvA.close();
      await kvB.close();
      rmSync(dirA, { recursive: true, force: true });
      rmSync(dirB, { recursive: true, force: true });
    }
  });
});
