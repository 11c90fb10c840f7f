// The validator pool's distribution side through the executor on RocksDB: claimAllRewards() (one
// call for every validator a delegator has rewards from, with its events, its gas bound and the
// 32-validator cap), the per-delegator list of validators behind it (delegatorValidators), and the
// validators' outstanding rewards (outstandingRewards), checked against the pending views that the
// fee split's own tests check to the wei.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ed25519 } from '@noble/curves/ed25519.js';
import { Interface } from 'ethers';
import { DEFAULT_STAKING_PARAMS } from '../../libs/config/index.js';
import { Executor } from '../../libs/execution/index.js';
import { RocksKV } from '../../libs/storage/index.js';
import { EventBus, type FinalizeBlockResponse, type Hex, type Validator } from '../../libs/types/index.js';
import {
  addr,
  ETH,
  executorOptions,
  GENESIS_TIME,
  genesisState,
  key,
  produceBlock,
  signTx,
  TEST_CONSENSUS_PARAMS,
  type TestNode,
} from './helpers.js';

const POOL = '0x7b7c000000000000000000000000000000000011' as Hex;
const REWARD = '0x7b7c000000000000000000000000000000000016' as Hex;

export const poolAbi = new Interface([
  'function createValidator(bytes32 consensusPubKey, string moniker, uint16 commissionBps) payable',
  'function delegate(address validator) payable',
  'function undelegate(address validator, uint256 amount) returns (uint256)',
  'function claimRewards(address operator) returns (uint256)',
  'function claimAllRewards() returns (uint256)',
  'function delegatorValidators(address delegator) view returns (address[])',
  'function outstandingRewards(address operator) view returns (uint256)',
  'function pendingRewards(address delegator, address operator) view returns (uint256)',
  'function pendingCommission(address operator) view returns (uint256)',
  'function delegation(address delegator, address operator) view returns (uint256)',
  'event RewardsClaimed(address indexed delegator, address indexed operator, uint256 reward, uint256 commission)',
  'event AllRewardsClaimed(address indexed delegator, uint256 validators, uint256 amount)',
]);
const opts = { gasCap: 50_000_000n, timeoutMs: 5000 };

const consensusKey = (i: number) => ed25519.getPublicKey(new Uint8Array(32).fill(i + 1));
const ops = [key(1), key(2), key(3)];
const POWERS = [10n, 20n, 30n];
const COMMISSION = [0n, 500n, 1000n];
const [alice, bob, dave] = [key(4), key(5), key(6)];
/** Accounts that create the extra validators of the cap test. */
const extra = Array.from({ length: 30 }, (_, i) => key(100 + i));
const BALANCE = 1000n * ETH;

interface Net extends TestNode {
  nonces: Map<Uint8Array, bigint>;
  dir: string;
}

async function start(): Promise<Net> {
  const dir = mkdtempSync(join(tmpdir(), 'noded-distribution-'));
  const kv = await RocksKV.open(dir);
  const ex = await Executor.open(executorOptions(kv, new EventBus()));
  const validators: Validator[] = ops.map((_, i) => ({
    address: new Uint8Array(20),
    pubKey: consensusKey(i),
    votingPower: POWERS[i]!,
    proposerPriority: 0n,
  }));
  await ex.initChain({
    chainId: 'chain-local',
    time: GENESIS_TIME,
    initialHeight: 1,
    validators,
    consensusParams: TEST_CONSENSUS_PARAMS,
    appState: {
      ...genesisState(
        [...ops, alice, bob, dave, ...extra].map((k) => ({ address: addr(k), balance: BALANCE })),
      ),
      staking: {
        params: DEFAULT_STAKING_PARAMS,
        validators: ops.map((k, i) => ({
          operator: addr(k),
          pub_key: Buffer.from(consensusKey(i)).toString('base64'),
          self_bond: (POWERS[i]! * ETH).toString(),
          commission_bps: COMMISSION[i]!.toString(),
        })),
      },
      // A block reward makes every block pay, so the rewards do not depend on the fees alone.
      rewards: { params: { validator_share: '0.5', block_reward: '1000000000000000007' } },
    },
  });
  return { ex, kv, bus: new EventBus(), events: [], height: 0, time: GENESIS_TIME, nonces: new Map(), dir };
}

async function stop(n: Net): Promise<void> {
  await n.ex.close();
  await n.kv.close();
  rmSync(n.dir, { recursive: true, force: true });
}

async function view(n: Net, fn: string, args: unknown[] = [], height = n.height) {
  const r = await n.ex.call(
    { to: POOL, data: poolAbi.encodeFunctionData(fn, args) as Hex },
    BigInt(height),
    undefined,
    opts,
  );
  assert.equal(r.reverted, undefined, `${fn} reverted: ${r.returnData}`);
  return poolAbi.decodeFunctionResult(fn, r.returnData);
}
const one = async (n: Net, fn: string, args: unknown[] = [], height = n.height) =>
  (await view(n, fn, args, height))[0] as bigint;
const listOf = async (n: Net, who: Uint8Array) =>
  ((await view(n, 'delegatorValidators', [addr(who)]))[0] as string[]).map((a) => a.toLowerCase());

async function refusal(n: Net, from: Uint8Array, fn: string, args: unknown[] = [], value = 0n) {
  const r = await n.ex.call(
    { from: addr(from), to: POOL, data: poolAbi.encodeFunctionData(fn, args) as Hex, value },
    BigInt(n.height),
    undefined,
    opts,
  );
  assert.ok(r.reverted, `${fn} was expected to revert`);
  return new Interface(['function Error(string)']).decodeFunctionData('Error', r.returnData)[0] as string;
}

function tx(n: Net, k: Uint8Array, fn: string, args: unknown[] = [], value = 0n, gas = 300_000n) {
  const nonce = n.nonces.get(k) ?? 0n;
  n.nonces.set(k, nonce + 1n);
  return signTx(k, { nonce, to: POOL, value, data: poolAbi.encodeFunctionData(fn, args) as Hex, gas });
}

async function block(n: Net, txs: Uint8Array[] = []): Promise<FinalizeBlockResponse> {
  const res = await produceBlock(n, txs);
  for (const r of res.txResults) assert.equal(r.code, 0, r.log);
  return res;
}

function intrinsicGas(data: string): bigint {
  let g = 21_000n;
  for (const x of Buffer.from(data.slice(2), 'hex')) g += x === 0 ? 4n : 16n;
  return g;
}

/** Σ pendingRewards over `delegators` + pendingCommission: what the validator's people can claim. */
async function claimable(n: Net, op: Uint8Array, delegators: Uint8Array[], height = n.height) {
  let s = await one(n, 'pendingCommission', [addr(op)], height);
  for (const d of delegators) s += await one(n, 'pendingRewards', [addr(d), addr(op)], height);
  return s;
}

describe('validator pool: claimAllRewards and outstanding rewards', () => {
  it('claims every validator of the delegator in one call, with one event each and the total, at 60,000 + 15,000 gas per validator', async () => {
    const n = await start();
    try {
      await block(n);
      assert.deepEqual(await listOf(n, ops[1]!), [addr(ops[1]!)], 'genesis lists the self-bond');
      assert.deepEqual(await listOf(n, alice), []);
      assert.equal(
        await refusal(n, alice, 'claimAllRewards'),
        `${addr(alice)} has no reward to claim from any of its 0 validators`,
      );
      assert.equal(
        await refusal(n, alice, 'claimAllRewards', [], 1n),
        'claimAllRewards is not payable (sent 1 base units)',
      );
      await block(n, [
        tx(n, alice, 'delegate', [addr(ops[2]!)], 3n * ETH),
        tx(n, alice, 'delegate', [addr(ops[0]!)], 2n * ETH),
        tx(n, alice, 'delegate', [addr(ops[1]!)], ETH),
        tx(n, bob, 'delegate', [addr(ops[1]!)], 5n * ETH),
      ]);
      assert.deepEqual(await listOf(n, alice), [addr(ops[2]!), addr(ops[0]!), addr(ops[1]!)]);
      assert.deepEqual(await listOf(n, bob), [addr(ops[1]!)]);
      for (let i = 0; i < 4; i++) await block(n);

      // Outstanding: at least what everyone of the validator can claim, by less than a unit per
      // delegation booking (two delegations and the commission here).
      for (const [i, op] of ops.entries()) {
        const people = i === 1 ? [op, alice, bob] : [op, alice];
        const out = await one(n, 'outstandingRewards', [addr(op)]);
        const owed = await claimable(n, op, people);
        assert.ok(owed > 0n);
        assert.ok(out >= owed && out - owed < 4n, `validator ${i}: outstanding ${out}, claimable ${owed}`);
      }

      // The claim runs before its own block's split: it pays what the views answer at the height before.
      const h = n.height;
      const want = await Promise.all(ops.map((op) => one(n, 'pendingRewards', [addr(alice), addr(op)])));
      const outBefore = await Promise.all(ops.map((op) => one(n, 'outstandingRewards', [addr(op)])));
      const balBefore = await n.ex.getBalance(addr(alice), BigInt(h));
      const rewardBefore = await n.ex.getBalance(REWARD, BigInt(h));
      await block(n, [tx(n, alice, 'claimAllRewards', [], 0n, 200_000n)]);
      const [rc] = await n.ex.getBlockReceipts(BigInt(n.height));
      assert.equal(rc!.status, 1);
      assert.equal(
        BigInt(rc!.gasUsed),
        intrinsicGas(poolAbi.encodeFunctionData('claimAllRewards')) + 60_000n + 3n * 15_000n,
      );
      const logs = rc!.logs.map((l) => poolAbi.parseLog({ topics: l.topics, data: l.data })!);
      assert.deepEqual(
        logs.map((l) => [
          l.name,
          ...l.args.map((a: unknown) => (typeof a === 'string' ? a.toLowerCase() : a)),
        ]),
        [
          ['RewardsClaimed', addr(alice), addr(ops[2]!), want[2], 0n],
          ['RewardsClaimed', addr(alice), addr(ops[0]!), want[0], 0n],
          ['RewardsClaimed', addr(alice), addr(ops[1]!), want[1], 0n],
          ['AllRewardsClaimed', addr(alice), 3n, want[0]! + want[1]! + want[2]!],
        ],
      );
      const total = want[0]! + want[1]! + want[2]!;
      const fee = BigInt(rc!.gasUsed) * BigInt(rc!.effectiveGasPrice);
      assert.equal(await n.ex.getBalance(addr(alice), BigInt(n.height)), balBefore + total - fee);
      // The reward account paid the total and received this block's split (fees + block reward).
      assert.equal(
        await n.ex.getBalance(REWARD, BigInt(n.height)),
        rewardBefore - total + fee + 1000000000000000007n,
      );
      // Each validator's outstanding dropped by what alice took and grew by this block's split; it
      // still covers what everyone of it can claim.
      for (const [i, op] of ops.entries()) {
        const grown = (await one(n, 'outstandingRewards', [addr(op)])) - (outBefore[i]! - want[i]!);
        const people = i === 1 ? [op, alice, bob] : [op, alice];
        const owed = await claimable(n, op, people);
        assert.ok(grown > 0n, 'the new block adds to the outstanding rewards');
        const out = await one(n, 'outstandingRewards', [addr(op)]);
        assert.ok(out >= owed && out - owed < 4n, `after the claim, validator ${i}: ${out} vs ${owed}`);
      }
      assert.deepEqual(await listOf(n, alice), [addr(ops[2]!), addr(ops[0]!), addr(ops[1]!)]);

      // An operator's claim-all takes its self-delegation's rewards and its commission.
      const op2 = ops[1]!;
      const self = await one(n, 'pendingRewards', [addr(op2), addr(op2)]);
      const comm = await one(n, 'pendingCommission', [addr(op2)]);
      assert.ok(comm > 0n);
      await block(n, [tx(n, op2, 'claimAllRewards')]);
      const [rc2] = await n.ex.getBlockReceipts(BigInt(n.height));
      const l2 = rc2!.logs.map((l) => poolAbi.parseLog({ topics: l.topics, data: l.data })!);
      assert.deepEqual(
        l2.map((l) => [
          l.name,
          ...l.args.toArray().map((a) => (typeof a === 'string' ? a.toLowerCase() : a)),
        ]),
        [
          ['RewardsClaimed', addr(op2), addr(op2), self, comm],
          ['AllRewardsClaimed', addr(op2), 1n, self + comm],
        ],
      );

      // Undelegating everything keeps the validator listed while it still owes rewards; the claim
      // that takes them drops it.
      const all = await one(n, 'delegation', [addr(alice), addr(ops[0]!)]);
      await block(n, [tx(n, alice, 'undelegate', [addr(ops[0]!), all])]);
      assert.ok((await one(n, 'pendingRewards', [addr(alice), addr(ops[0]!)])) > 0n);
      assert.deepEqual(await listOf(n, alice), [addr(ops[2]!), addr(ops[0]!), addr(ops[1]!)]);
      await block(n, [tx(n, alice, 'claimAllRewards')]);
      assert.deepEqual(
        await listOf(n, alice),
        [addr(ops[2]!), addr(ops[1]!)],
        'the last one moved into the gap',
      );
      assert.equal(await one(n, 'pendingRewards', [addr(alice), addr(ops[0]!)]), 0n);
    } finally {
      await stop(n);
    }
  });

  it('refuses a delegation to a 33rd validator with the rule, and claims 32 within 540,000 gas', async () => {
    const n = await start();
    try {
      await block(n);
      await block(
        n,
        extra.map((k, i) =>
          signTx(k, {
            nonce: 0n,
            to: POOL,
            value: ETH,
            gas: 300_000n,
            data: poolAbi.encodeFunctionData('createValidator', [consensusKey(10 + i), `v${i}`, 100]) as Hex,
          }),
        ),
      );
      const targets = [...ops, ...extra].map((k) => addr(k));
      assert.equal(targets.length, 33);
      await block(
        n,
        targets.slice(0, 32).map((op) => tx(n, dave, 'delegate', [op], ETH)),
      );
      assert.equal((await listOf(n, dave)).length, 32);
      const before = await n.ex.getBalance(addr(dave), BigInt(n.height));
      assert.equal(
        await refusal(n, dave, 'delegate', [targets[32]], ETH),
        `${addr(dave)} already delegates to (or has unclaimed rewards from) 32 validators, the most one delegator may; undelegate fully from one and claim its rewards first`,
      );
      assert.equal(
        await n.ex.getBalance(addr(dave), BigInt(n.height)),
        before,
        'the refusal changed nothing',
      );
      await block(n);
      await block(n, [tx(n, dave, 'claimAllRewards', [], 0n, 600_000n)]);
      const [rc] = await n.ex.getBlockReceipts(BigInt(n.height));
      assert.equal(rc!.status, 1);
      assert.equal(
        BigInt(rc!.gasUsed),
        intrinsicGas(poolAbi.encodeFunctionData('claimAllRewards')) + 60_000n + 32n * 15_000n,
      );
      const last = poolAbi.parseLog(rc!.logs.at(-1)!)!;
      assert.equal(last.name, 'AllRewardsClaimed');

      // A genesis operator's own validator counts (genesis writes no list; it is shown last): it
      // may delegate to 31 others.
      const op = ops[0]!;
      const others = targets.filter((t) => t !== addr(op));
      await block(
        n,
        others.slice(0, 31).map((t) => tx(n, op, 'delegate', [t], ETH)),
      );
      const listed = await listOf(n, op);
      assert.equal(listed.length, 32);
      assert.equal(listed.at(-1), addr(op));
      assert.match(
        await refusal(n, op, 'delegate', [others[31]], ETH),
        /already delegates to .* 32 validators/,
      );
      await block(n);
      await block(n, [tx(n, op, 'claimAllRewards', [], 0n, 600_000n)]);
      const [rc2] = await n.ex.getBlockReceipts(BigInt(n.height));
      assert.equal(
        BigInt(rc2!.gasUsed),
        intrinsicGas(poolAbi.encodeFunctionData('claimAllRewards')) + 60_000n + 32n * 15_000n,
      );
    } finally {
      await stop(n);
    }
  });
});
